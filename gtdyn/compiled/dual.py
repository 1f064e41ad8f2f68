"""Dual numbers over traced values: forward-mode derivatives of the equations, written as code.

A ``Dual`` is a value x (a ``trace.Sym`` or a constant) with its tangents ∂x/∂θ_d along named directions d (the
inputs q_j, q̇_j, …), only the non-zero ones kept. Its arithmetic applies the chain rule through the ``trace``
functions, so the kinematics pass and eq. 4–7 run on duals unchanged and write, besides each value, the code
of its exact derivatives; directions a value does not depend on cost nothing (a link's pose has no tangent
along the joints after it).
"""

from __future__ import annotations

import numpy as np

from gtdyn.compiled import trace


class Dual:
    __slots__ = ("v", "t")

    def __init__(self, v, t: dict | None = None):
        self.v, self.t = v, t or {}

    @classmethod
    def seed(cls, v, direction) -> Dual:
        """An input: ∂x/∂x = 1 along its own direction."""
        return cls(v, {direction: 1.0})

    def __add__(self, other):
        if isinstance(other, np.ndarray):
            return NotImplemented
        a, b = self, _lift(other)
        return Dual(trace.add(a.v, b.v), _combine(a.t, b.t, 1.0))

    __radd__ = __add__

    def __sub__(self, other):
        if isinstance(other, np.ndarray):
            return NotImplemented
        b = _lift(other)
        return Dual(trace.sub(self.v, b.v), _combine(self.t, b.t, -1.0))

    def __rsub__(self, other):
        if isinstance(other, np.ndarray):
            return NotImplemented
        return _lift(other) - self

    def __mul__(self, other):
        if isinstance(other, np.ndarray):
            return NotImplemented
        if not isinstance(other, Dual):  # a constant or a plain traced value: scale the tangents
            return Dual(trace.mul(self.v, other), _scaled(self.t, other))
        t = _scaled(self.t, other.v)
        for d, tangent in other.t.items():
            t[d] = trace.add(t.get(d, 0.0), trace.mul(self.v, tangent))
        return Dual(trace.mul(self.v, other.v), _nonzero(t))

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, np.ndarray):
            return NotImplemented
        if not isinstance(other, Dual):
            return Dual(trace.div(self.v, other), {d: trace.div(t, other) for d, t in self.t.items()})
        value = trace.div(self.v, other.v)
        # (a/b)' = (a' − (a/b) b') / b
        t = _combine(self.t, _scaled(other.t, value), -1.0)
        return Dual(value, _nonzero({d: trace.div(x, other.v) for d, x in t.items()}))

    def __rtruediv__(self, other):
        if isinstance(other, np.ndarray):
            return NotImplemented
        return _lift(other) / self

    def __neg__(self):
        return Dual(trace.neg(self.v), {d: trace.neg(t) for d, t in self.t.items()})

    def __pos__(self):
        return self

    def sin(self) -> Dual:
        return Dual(trace.sin(self.v), _scaled(self.t, trace.cos(self.v)))

    def cos(self) -> Dual:
        return Dual(trace.cos(self.v), _scaled(self.t, trace.neg(trace.sin(self.v))))

    def __bool__(self):
        raise TypeError("a traced value has no truth value while the code is being written")

    def __repr__(self) -> str:
        return f"Dual({self.v!r}, {len(self.t)} tangents)"


trace.DEFER = trace.DEFER + (Dual,)


def value(x):
    """The value part of a dual, or x itself."""
    return x.v if isinstance(x, Dual) else x


def tangents(x) -> dict:
    """The non-zero tangents of a dual ({} for a constant or a plain traced value)."""
    return x.t if isinstance(x, Dual) else {}


def _lift(x) -> Dual:
    return x if isinstance(x, Dual) else Dual(x)


def _is_zero(x) -> bool:
    return not trace.is_sym(x) and float(x) == 0.0


def _nonzero(t: dict) -> dict:
    return {d: x for d, x in t.items() if not _is_zero(x)}


def _scaled(t: dict, factor) -> dict:
    return _nonzero({d: trace.mul(x, factor) for d, x in t.items()})


def _combine(a: dict, b: dict, sign: float) -> dict:
    """a + sign · b, direction by direction."""
    out = dict(a)
    for d, x in b.items():
        out[d] = trace.add(out.get(d, 0.0), x) if sign > 0 else trace.sub(out.get(d, 0.0), x)
    return _nonzero(out)


def sqrt(x):
    """√x, with its tangent t / (2√x) on a dual."""
    if not isinstance(x, Dual):
        return trace.sqrt(x)
    root = trace.sqrt(x.v)
    return Dual(root, {d: trace.div(t, trace.mul(2.0, root)) for d, t in x.t.items()})


def atan2(y, x):
    """atan2(y, x), with its tangent (x y' − y x') / (x² + y²) on duals."""
    if not isinstance(y, Dual) and not isinstance(x, Dual):
        return trace.atan2(y, x)
    y, x = _lift(y), _lift(x)
    radius2 = trace.add(trace.mul(x.v, x.v), trace.mul(y.v, y.v))
    t = _combine(_scaled(y.t, x.v), _scaled(x.t, y.v), -1.0)
    return Dual(trace.atan2(y.v, x.v), _nonzero({d: trace.div(v, radius2) for d, v in t.items()}))


def le(a, b):
    """1.0 where value(a) ≤ value(b): a comparison has no tangent."""
    return trace.le(value(a), value(b))


def select(condition, a, b):
    """``trace.select`` on duals: the chosen operand's value and tangents (a NaN tangent of the other operand, its
    0/0 where the condition excludes it, does not leak)."""
    if not isinstance(a, Dual) and not isinstance(b, Dual):
        return trace.select(condition, a, b)
    a, b = _lift(a), _lift(b)
    return Dual(trace.select(condition, a.v, b.v),
                _nonzero({d: trace.select(condition, a.t.get(d, 0.0), b.t.get(d, 0.0)) for d in {*a.t, *b.t}}))


class Cuts:
    """Where forward mode stops and reverse mode takes over.

    Forward mode carries each value's tangents along every input it depends on: a link's twist far down a chain
    carries one along each joint above it, and everything computed from it pays for all of them. ``cut``
    replaces such a value by a fresh dual whose single tangent is along its own new direction ("cut", k), and
    records what that direction stands for: the value's tangents along the earlier directions (``definitions[k]``).
    The chain rule then runs backwards over the cuts (``gtdyn.compiled.derivatives``), so a tangent crosses each
    link once instead of once per joint above it."""

    def __init__(self):
        self.definitions: list[dict] = []

    def cut(self, values) -> np.ndarray:
        """``values`` (an array of duals, traced values or constants) with each dual of more than one tangent cut."""
        out = np.array(values, dtype=object)
        for index, x in np.ndenumerate(out):
            if isinstance(x, Dual) and len(x.t) > 1:
                out[index] = Dual(x.v, {("cut", len(self.definitions)): 1.0})
                self.definitions.append(x.t)
        return out
