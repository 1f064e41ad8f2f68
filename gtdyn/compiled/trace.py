"""Tracing arithmetic into straight-line code.

A ``Sym`` is a double-precision value that will exist at run time. Arithmetic on it (``+ - * /``, ``sin``…)
does not compute: it appends one operation to the ``Function`` being written and returns the new value. Known
numbers (robot constants, structural zeros, ±1) stay Python floats, so ``0 · x``, ``1 · x`` and ``x + 0`` fold
away as the code is written: that is how the constants of a robot and the zeros of the equations disappear
from the generated code. Equal operations on equal operands are written once (common subexpressions).

Each Sym also carries its value at a few sample states (``val``), so that decisions taken while writing the
code, such as the choice of pivots, can look at typical numbers.

The same equations written for numbers (``gtdyn.equations``) run unchanged on object arrays of Syms.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import math

import numpy as np

UNARY = {"copy": np.positive, "neg": np.negative, "sin": np.sin, "cos": np.cos, "sqrt": np.sqrt, "abs": np.abs}
BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
          "le": lambda a, b: np.less_equal(a, b).astype(float), "atan2": np.arctan2}
TERNARY = {"select": lambda c, a, b: np.where(np.not_equal(c, 0.0), a, b)}
RULES = {**UNARY, **BINARY, **TERNARY}
COMMUTATIVE = {"add", "mul"}  # binary
NOT_ARITHMETIC = ("load", "store", "call", "call_unless", "#")  # operations ``Function.count`` leaves out


def _swapped(first, second) -> bool:
    """Whether operand keys (ids, constants as (c,)) are out of order (ids first, ascending): a + b is b + a."""
    return type(second) is int and (type(first) is not int or first > second)


# operands whose own arithmetic runs when a Sym meets them: numpy arrays (elementwise), and the dual numbers of
# ``gtdyn.compiled.dual`` (which add themselves here)
DEFER: tuple[type, ...] = (np.ndarray,)


class Sym:
    """A run-time double, the result of operation ``id`` of function ``fn``."""

    __slots__ = ("fn", "id", "val")

    def __init__(self, fn: Function, id: int, val):
        self.fn, self.id, self.val = fn, id, val

    def __add__(self, other):
        return NotImplemented if isinstance(other, DEFER) else add(self, other)

    def __radd__(self, other):
        return NotImplemented if isinstance(other, DEFER) else add(other, self)

    def __sub__(self, other):
        return NotImplemented if isinstance(other, DEFER) else sub(self, other)

    def __rsub__(self, other):
        return NotImplemented if isinstance(other, DEFER) else sub(other, self)

    def __mul__(self, other):
        return NotImplemented if isinstance(other, DEFER) else mul(self, other)

    def __rmul__(self, other):
        return NotImplemented if isinstance(other, DEFER) else mul(other, self)

    def __truediv__(self, other):
        return NotImplemented if isinstance(other, DEFER) else div(self, other)

    def __rtruediv__(self, other):
        return NotImplemented if isinstance(other, DEFER) else div(other, self)

    def __neg__(self):
        return neg(self)

    def __pos__(self):
        return self

    def __bool__(self):
        raise TypeError("a traced value has no truth value while the code is being written")

    def __repr__(self) -> str:
        return f"<{self.fn.name}:{self.fn.names.get(self.id, f't{self.id}')}>"


def is_sym(x) -> bool:
    return type(x) is Sym


def value(x):
    """Sample values of a traced value or a constant."""
    return x.val if type(x) is Sym else float(x)


def _operation(op: str, *args):
    fn = next(a.fn for a in args if type(a) is Sym)
    return fn.emit(op, *args)


def _negated(x):
    """y if x = −y was written, else None. A negation is carried to where it costs nothing, rather than computed:
    a + (−y) is written a − y, (−x)·y as −(x·y), x·(−c) as −(x·c) (so that x·c and x·(−c) are one product), and
    the outer negation may vanish in turn, into a subtraction, a quotient or an absolute value, or where it is
    stored, into the constant factor. Each rewrite is exact in IEEE arithmetic (rounding to nearest is
    symmetric), up to the sign of an exact zero."""
    if type(x) is Sym:
        op = x.fn.ops[x.id]
        if op[0] == "neg":
            return op[1]
    return None


def add(a, b):
    if type(a) is not Sym:
        a, b = b, a
    if type(a) is not Sym:
        return float(a) + float(b)
    x = _negated(a)
    if type(b) is not Sym:
        if b == 0:
            return a
        return _operation("sub", float(b), x) if x is not None else _operation("add", a, float(b))  # c − x
    y = _negated(b)
    if x is not None:
        return neg(add(x, y)) if y is not None else _operation("sub", b, x)
    return _operation("sub", a, y) if y is not None else _operation("add", a, b)


def sub(a, b):
    if type(b) is not Sym:
        if type(a) is not Sym:
            return float(a) - float(b)
        return a if b == 0 else add(a, -float(b))
    if type(a) is not Sym and a == 0:
        return neg(b)
    y = _negated(b)
    if y is not None:
        return add(a, y)
    x = _negated(a)
    if x is not None:  # −x − b = −(x + b)
        return neg(add(x, b))
    return _operation("sub", a if type(a) is Sym else float(a), b)


def mul(a, b):
    if type(a) is not Sym:
        a, b = b, a
    if type(b) is not Sym:
        if type(a) is not Sym:
            return float(a) * float(b)
        b = float(b)
        if b == 0:
            return 0.0
        if b == 1:
            return a
        if b == -1:
            return neg(a)
        x = _negated(a)
        if x is not None:
            a, b = x, -b
        return _operation("mul", a, b) if b > 0 else neg(_operation("mul", a, -b))  # x·(−c) = −(x·c): shared
    x, y = _negated(a), _negated(b)
    if x is None and y is None:
        return _operation("mul", a, b)
    if x is not None and y is not None:
        return mul(x, y)
    return neg(mul(a if x is None else x, b if y is None else y))


def div(a, b):
    if type(b) is not Sym:
        b = float(b)
        if type(a) is not Sym:
            return float(a) / b
        if b == 1:
            return a
        if b == -1:
            return neg(a)
        x = _negated(a)
        if x is not None:
            a, b = x, -b
        return _operation("mul", a, 1.0 / b) if abs(math.frexp(b)[0]) == 0.5 else _operation("div", a, b)
    if type(a) is not Sym and a == 0:
        return 0.0
    x, y = _negated(a), _negated(b)
    if x is None and y is None:
        return _operation("div", a if type(a) is Sym else float(a), b)
    if x is not None and y is not None:
        return div(x, y)
    if type(a) is not Sym:  # c / (−y) = (−c) / y
        return div(-float(a), y)
    return neg(div(a if x is None else x, b if y is None else y))


def neg(a):
    if type(a) is not Sym:
        return -float(a)
    op = a.fn.ops[a.id]
    if op[0] == "neg":  # −(−x) = x
        return op[1]
    if op[0] == "sub":  # −(x − y) = y − x, exactly
        return a.fn.emit("sub", op[2], op[1])
    return a.fn.emit("neg", a)


def sin(a):
    if type(a) is Sym:
        return a.fn.emit("sin", a)
    return a.sin() if isinstance(a, DEFER) else math.sin(a)


def cos(a):
    if type(a) is Sym:
        return a.fn.emit("cos", a)
    return a.cos() if isinstance(a, DEFER) else math.cos(a)


def sqrt(a):
    return math.sqrt(a) if type(a) is not Sym else a.fn.emit("sqrt", a)


def fabs(a):
    if type(a) is not Sym:
        return abs(float(a))
    x = _negated(a)
    return a.fn.emit("abs", a if x is None else x)


def atan2(y, x):
    """The angle of (x, y), as libm's atan2."""
    if type(y) is not Sym and type(x) is not Sym:
        return math.atan2(y, x)
    return _operation("atan2", y, x)


def select(condition, a, b):
    """``a`` where ``condition`` (a 0/1 value of ``le``) is 1, else ``b``: one of two formulas by the value, where
    the other would divide by zero (the small-angle series of a logarithm). Only the chosen one is used; both
    are computed."""
    if type(condition) is not Sym:
        return a if condition else b
    return condition.fn.emit("select", condition, a, b)


def le(a, b):
    """1.0 where a ≤ b, 0.0 otherwise (also when either is NaN)."""
    if type(a) is not Sym and type(b) is not Sym:
        return float(a <= b)
    return _operation("le", a, b)


def dot(coefficients, values):
    """Σ c_k v_k, with constant zeros skipped (a sparse row times a vector)."""
    total = 0.0
    for c, x in zip(coefficients, values):
        total = add(total, mul(c, x))
    return total


def tracing(trace_code):
    """Decorates a function that traces code: numpy's warnings are off while it runs, once for the whole trace
    rather than per operation (a fifth of the tracing time), and the garbage collector is paused (``collector_paused``).
    Sample values may divide by zero, as a singular robot's do: the code is traced, its calls there fall back."""
    @functools.wraps(trace_code)
    def quietly(*args, **kwargs):
        with np.errstate(all="ignore"), collector_paused():
            return trace_code(*args, **kwargs)
    return quietly


@contextlib.contextmanager
def collector_paused():
    """Python's cyclic garbage collector off for a while (on again after, if it was on): tracing and rendering
    code allocate millions of small objects and free almost none, so each collection walked them all for nothing,
    the longer the process had lived the longer (design_measurements.md). Nested pauses end with the outermost."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class Function:
    """Straight-line code over one flat array ``ws`` of doubles: loads, stores, arithmetic, calls.

    ``ops[id]`` is ``(op, *operands)``; an operand is a ``Sym`` of this function or a float. Loads and stores
    address ``ws`` by a fixed index; ``call`` runs another function on the same ``ws``.
    """

    def __init__(self, name: str, samples: int = 1):
        self.name = name
        self.ops: list[tuple] = []
        self.syms: list[Sym | None] = []
        self.names: dict[int, str] = {}
        self.samples = samples
        self._seen: dict[tuple, Sym] = {}
        self._live: tuple[int, list[bool]] = (-1, [])  # live() and count() as of how many operations: asked often
        self._count: tuple[int, int] = (-1, 0)

    def emit(self, op: str, *args) -> Sym:
        key, values = [op], []  # a value's key: its operation's id, or (constant,)
        for a in args:
            if type(a) is Sym:
                if a.fn is not self:
                    raise ValueError(f"{a} belongs to function {a.fn.name}, not {self.name}")
                key.append(a.id)
                values.append(a.val)
            else:
                key.append((a,))
                values.append(a)
        if op in COMMUTATIVE and _swapped(key[1], key[2]):  # one key for a + b and b + a
            key[1], key[2] = key[2], key[1]
        key = tuple(key)
        found = self._seen.get(key)
        if found is not None:
            return found
        sym = self.append((op, *args), RULES[op](*values))  # numpy's warnings: see ``tracing``
        self._seen[key] = sym
        return sym

    def append(self, op: tuple, val=None) -> Sym | None:
        """``op`` as it is (not folded or shared); ``val``: its sample values, None for one without a value."""
        sym = Sym(self, len(self.ops), val) if val is not None else None
        self.ops.append(op)
        self.syms.append(sym)
        return sym

    def load(self, index: int, val=None, name: str | None = None) -> Sym:
        sym = self.append(("load", int(index)), np.full(self.samples, np.nan) if val is None else val)
        return self.label(sym, name) if name else sym

    def store(self, index: int, x) -> None:
        inner = _negated(x)
        if inner is not None and self.ops[inner.id][0] == "mul" and type(self.ops[inner.id][2]) is not Sym:
            x = self.emit("mul", self.ops[inner.id][1], -self.ops[inner.id][2])  # stored: −(x·c) as x·(−c)
        self.append(("store", int(index), x if type(x) is Sym else float(x)), None)

    def call(self, other: Function) -> None:
        self.append(("call", other.name), None)
        self._seen.clear()  # nothing loaded before the call may be reused after it

    def call_unless(self, flag, other: Function) -> None:
        """Call ``other`` unless ``flag`` is 1.0 (the code's one branch: the certificate's exact path)."""
        self.append(("call_unless", flag, other.name), None)
        self._seen.clear()

    def comment(self, text: str) -> None:
        self.append(("#", text), None)

    def label(self, x, name: str):
        """Give a traced value a readable name in the rendered source (``F3_2``, ``q̈1``)."""
        if type(x) is Sym and x.id not in self.names:
            self.names[x.id] = name
        return x

    def live(self) -> list[bool]:
        """Which operations matter: stores, calls and comments, and what they use (folding leaves some values
        unused, e.g. x − y once −(x − y) became y − x)."""
        if self._live[0] == len(self.ops):
            return self._live[1]
        alive = [op[0] in ("store", "call", "call_unless", "#") for op in self.ops]
        for i in range(len(self.ops) - 1, -1, -1):
            if alive[i]:
                for a in self.ops[i][1:]:
                    if type(a) is Sym:
                        alive[a.id] = True
        self._live = (len(self.ops), alive)
        return alive

    def count(self) -> int:
        """Arithmetic operations that run (loads, stores and comments not counted)."""
        if self._count[0] != len(self.ops):
            live = zip(self.ops, self.live())
            self._count = (len(self.ops), sum(op[0] not in NOT_ARITHMETIC and keep for op, keep in live))
        return self._count[1]


class Lanes:
    """``fn`` run on ``width`` lanes at once (SIMD): each load from an index in ``loads`` reads ``width`` doubles
    at ``ws[loads[index]:][:width]`` (lane w at + w), each store to an index in ``stores`` writes ``width``;
    every other load is one double that all lanes share. ``gtdyn.compiled.native`` lowers it to vector
    instructions, ``gtdyn.compiled.render`` writes what it means as a loop over the lanes."""

    def __init__(self, name: str, fn: Function, width: int, loads: dict[int, int], stores: dict[int, int]):
        self.name, self.fn, self.width, self.loads, self.stores = name, fn, width, loads, stores

    def count(self) -> int:
        """Vector operations that run (each does ``width`` lanes' arithmetic)."""
        return self.fn.count()


def release(*functions) -> None:
    """Drops the traces of compiled ``Function``s (or ``Lanes``) now: a Sym and its Function refer to each other,
    so else only a full collection frees them, which tracing pauses (benchmarks/results/design_measurements.md)."""
    for fn in (getattr(f, "fn", f) for f in functions):  # a Lanes runs a Function
        fn.ops, fn.syms, fn._seen, fn.names, fn._live, fn._count = [], [], {}, {}, (-1, []), (-1, 0)
