"""A bound on the certificate's u = ‖D Ŝ1‖₂ that holds at every state, proven once while the code is written, for
plans of substitutions alone (RNEA's: ``a_priori.substitution_backward_error``).

Each coefficient of A is a traced function of the inputs. Interval arithmetic on the trace (``enclosures``)
bounds it over every input whatever its value: a revolute angle reaches A only through sin and cos, which stay in
[−1, 1], so the rows of eq. 5–7 have bounded coefficients while the velocities, given accelerations and gravity
enter b alone. Back-substitution on magnitudes — ``solve_abs``'s steps on a plan without row operations,
y_c = (1 + Σ_j |a_pj| y_j) / |a_pc| — only grows with larger off-pivot magnitudes and smaller pivots. So those
steps on each row's largest Σ_j |a_pj| y_j and each pivot's smallest magnitude give ȳ ≥ Ŝ1(q) at every state;
with D̄_k² the largest of column k's sum of squares, ū = ‖D̄ ȳ‖₂ ≥ u(q). A row's terms that turn with one joint
angle (its Ad block) peak together, not each at its own angle: their sum is bounded on pieces of the angle's
period (``_AngleMaxima``), which took Talos's ū from some 90 times the largest u of random states to about twice.
A floating base's block, which ``solve_abs`` takes whole (|B⁻¹| 1, ``root_block``), is triangular in such a
plan: |B⁻¹| ≤ M(B)⁻¹ entry by entry (M the comparison matrix), which these pivot-by-pivot steps bound.

Where ū is under the certificate's limits, ``main`` certifies every call with it and leaves the bound's pass to
the calls it does not certify (``certificate.checked_call``): inverse dynamics and the mass matrix of the PUMA,
the UR5, the Panda, Solo-12 and Talos in RNEA's ordering (benchmarks/results/design_measurements.md).

Rounding: each interval is widened by four units in the last place of its largest magnitude (and the smallest
subnormal's worth), which covers both the run-time rounding of its operation (IEEE: relative to the result) and
that of the endpoints here. ū carries a relative ``MARGIN`` for the sums of the magnitude passes, whose rounding,
here and at run time, is relative and of order (operations) · 2⁻⁵³.
"""

from __future__ import annotations

import math

import numpy as np

from gtdyn.compiled import trace
from gtdyn.compiled.plan import Plan, off_pivot

UNBOUNDED = (-math.inf, math.inf)
PIECES = 64  # an angle's period in pieces, on each of which its values are enclosed (``_AngleMaxima``)
MARGIN = 1e-8  # ū's relative margin over the sums' rounding (≤ 1e5 operations · 2⁻⁵³ ≈ 1e-11)
_WIDEN = 4 * 2.0 ** -53
_TINY = 5e-324  # the smallest subnormal: an absolute rounding error where results underflow
_SEVERAL = -1  # ``_AngleMaxima.alone`` of a value that depends on several loads


EXACT = {"copy", "neg", "abs", "sin", "cos", "le", "select"}  # results exact, or within the interval as they are


def enclosures(fn: trace.Function, ranges: dict | None = None) -> list:
    """For each operation of ``fn`` (indexed as ``fn.ops``), an interval (low, high) that holds its run-time value
    for every input ``fn`` loads, whatever it is — loads are unbounded but those from an index of ``ranges``, which
    lie in its (low, high) — or None for operations without a value."""
    ranges = ranges or {}
    found: list = [None] * len(fn.ops)
    with np.errstate(all="ignore"):  # ∞ − ∞ and 0 · ∞ make unbounded intervals (``_rule``)
        for i, op in enumerate(fn.ops):
            kind = op[0]
            if kind in trace.NOT_ARITHMETIC:
                found[i] = ranges.get(op[1], UNBOUNDED) if kind == "load" else None
                continue
            low, high = _rule(kind, [found[a.id] if type(a) is trace.Sym else (float(a), float(a)) for a in op[1:]],
                              kind == "mul" and op[1] is op[2])
            found[i] = (float(low), float(high))
    return found


def uniform_bound(plan: Plan, entries: list[list], column: dict, fn: trace.Function, ranges: dict) -> float:
    """ū ≥ u(q) at every state whose inputs at the indices of ``ranges`` lie in theirs (``Layout.ranges``: a
    prismatic joint's translation enters A, within its limits), for a plan of substitutions alone whose
    coefficients ``fn`` (``factor``) traced; ``entries``: A's entries by column (``certificate._column_entries``).
    ∞ where some coefficient is unbounded, a pivot may vanish, or the plan has row operations."""
    if plan.tape:
        return math.inf
    found = enclosures(fn, ranges)

    def largest(value) -> float:
        if type(value) is not trace.Sym:
            return abs(float(value))
        return float(_magnitudes(*found[value.id])[1]) if value.fn is fn else math.inf

    def smallest(value) -> float:
        if type(value) is not trace.Sym:
            return abs(float(value))
        return float(_magnitudes(*found[value.id])[0]) if value.fn is fn else 0.0

    angles = _AngleMaxima(fn, found)
    y: dict = {}
    for key, c, p in reversed(plan.pivots):  # solve_abs's back-substitution from a right-hand side of ones
        row = plan.work[p]
        terms = list(off_pivot(row, key, c))
        total = 1.0 + angles.largest_sum([coefficient for _, coefficient in terms],
                                         [y.get(other, math.inf) for other, _ in terms], largest)
        pivot = smallest(row[key][c])
        y[key, c] = total / pivot if pivot > 0.0 else math.inf
    u_squared = sum((angles.largest_sum(entries[k], [1.0] * len(entries[k]), largest, squares=True)
                     * y.get(kc, math.inf) ** 2 for kc, k in column.items()), 0.0)
    bound = math.sqrt(u_squared) * (1.0 + MARGIN)
    return bound if math.isfinite(bound) else math.inf


def within_ranges(fn: trace.Function, ranges: dict):
    """Traced in ``fn``: 1.0 if every input at an index of ``ranges`` lies in its (low, high), the ranges
    ``uniform_bound`` assumed, else 0.0 (NaN included)."""
    ok = 1.0
    for index, (low, high) in ranges.items():
        value = fn.load(index)
        ok = ok * trace.le(low, value) * trace.le(value, high)
    return ok


class _AngleMaxima:
    """Sums Σ_j |c_j| w_j of coefficients at their largest over every input, taken jointly where the coefficients
    turn with one angle: those of one joint's transform (a row's Ad block, say) peak at different angles, and the
    largest of their sum is what the magnitude pass can meet. An angle whose load only sin and cos read is
    periodic: its period is cut into ``PIECES`` and every value that depends on it alone enclosed on each piece
    (``_rule``, on arrays); the sum's largest over the pieces bounds it. Terms of different angles peak
    independently, so their largest sums add; a coefficient of several inputs, or of another, is taken at its own
    largest (``largest``)."""

    def __init__(self, fn: trace.Function, found: list):
        self.fn, self.found = fn, found
        self.alone: list = [None] * len(fn.ops)  # the one load each value depends on; _SEVERAL; None: no load
        self.by_load: dict = {}  # load → the values that depend on it alone, in order
        readers: dict = {}
        for i, op in enumerate(fn.ops):
            if op[0] == "load":
                self.alone[i] = i
            elif op[0] not in trace.NOT_ARITHMETIC:
                load = None
                for a in op[1:]:
                    if type(a) is trace.Sym:
                        readers.setdefault(a.id, set()).add(op[0])
                        theirs = self.alone[a.id]
                        if theirs is not None and theirs != load:
                            load = theirs if load is None else _SEVERAL
                self.alone[i] = load
                if load is not None and load != _SEVERAL:
                    self.by_load.setdefault(load, []).append(i)
        self.periodic = {i for i, op in enumerate(fn.ops)
                         if op[0] == "load" and readers.get(i, set()) <= {"sin", "cos"}}
        self.pieces: dict = {}

    def _on_pieces(self, load: int) -> dict:
        """Each value of ``load``'s angle alone, enclosed on each piece of its period: id → (lows, highs)."""
        if load in self.pieces:
            return self.pieces[load]
        edges = np.linspace(-math.pi, math.pi, PIECES + 1)
        found = {load: (edges[:-1], edges[1:])}
        with np.errstate(all="ignore"):
            for i in self.by_load.get(load, ()):
                op = self.fn.ops[i]
                args = [found.get(a.id, self.found[a.id]) if type(a) is trace.Sym else (float(a), float(a))
                        for a in op[1:]]
                found[i] = _rule(op[0], args, op[0] == "mul" and op[1] is op[2])
        self.pieces[load] = found
        return found

    def largest_sum(self, coefficients: list, weights: list, largest, squares: bool = False) -> float:
        """The largest of Σ_j |c_j| w_j (Σ_j c_j² w_j with ``squares``) over every input."""
        groups: dict = {}
        total = 0.0
        for c, w in zip(coefficients, weights):
            load = self.alone[c.id] if type(c) is trace.Sym and c.fn is self.fn else None
            if load in self.periodic:
                groups.setdefault(load, []).append((c, w))
            else:
                total += (largest(c) ** 2 if squares else largest(c)) * w
        for load, terms in groups.items():
            found = self._on_pieces(load)
            sums = np.zeros(PIECES)
            for c, w in terms:
                magnitude = _magnitudes(*found[c.id])[1]
                sums = sums + (magnitude * magnitude if squares else magnitude) * w
            total += float(np.max(sums))
        return total


def _rule(kind: str, args: list, square: bool) -> tuple:
    """One operation's interval from its operands' (lows and highs: numbers, or arrays of one per piece of an
    angle), widened for rounding unless its result is exact; ``square``: x · x, never below zero. Called under
    ``np.errstate(all="ignore")``: a NaN end (∞ − ∞, 0 · ∞) makes the interval unbounded."""
    a = [(np.asarray(low, dtype=float), np.asarray(high, dtype=float)) for low, high in args]
    if kind in ("sin", "cos"):  # libm's sin and cos never leave [−1, 1]
        low, high = _trig_on_pieces(kind, *a[0])
    elif kind == "copy":
        low, high = a[0]
    elif kind == "neg":
        low, high = -a[0][1], -a[0][0]
    elif kind == "abs" or (kind == "mul" and square):
        low, high = _magnitudes(*a[0])
        if kind == "mul":
            low, high = low * low, high * high
    elif kind == "add":
        low, high = a[0][0] + a[1][0], a[0][1] + a[1][1]
    elif kind == "sub":
        low, high = a[0][0] - a[1][1], a[0][1] - a[1][0]
    elif kind in ("mul", "div"):
        products = [(x / y if kind == "div" else x * y) for x in a[0] for y in a[1]]
        low, high = np.minimum.reduce(products), np.maximum.reduce(products)
        if kind == "div":
            across = (a[1][0] <= 0) & (a[1][1] >= 0)
            low, high = np.where(across, -np.inf, low), np.where(across, np.inf, high)
    elif kind == "sqrt":  # NaN below zero
        low = np.where(a[0][0] < 0, -np.inf, np.sqrt(np.maximum(a[0][0], 0.0)))
        high = np.where(a[0][0] < 0, np.inf, np.sqrt(a[0][1]))
    elif kind == "select":
        low, high = np.minimum(a[1][0], a[2][0]), np.maximum(a[1][1], a[2][1])
    elif kind == "le":
        low, high = np.zeros(_shape(a)), np.ones(_shape(a))
    elif kind == "atan2":
        low, high = np.full(_shape(a), -math.pi), np.full(_shape(a), math.pi)
    else:
        low, high = np.full(_shape(a), -np.inf), np.full(_shape(a), np.inf)
    if kind not in EXACT:
        slack = _WIDEN * np.maximum(np.abs(low), np.abs(high)) + _TINY
        low, high = low - slack, high + slack
    bad = np.isnan(low) | np.isnan(high)  # ∞ − ∞, 0 · ∞: the value may be anything
    return np.where(bad, -np.inf, low), np.where(bad, np.inf, high)


def _shape(a: list) -> tuple:
    """The shape the operands' intervals broadcast to: a number's, or the pieces'."""
    return np.broadcast_shapes(*(np.shape(low) for low, _ in a))


def _magnitudes(low: np.ndarray, high: np.ndarray) -> tuple:
    """|x| for x in [low, high]: its smallest (0 where the interval holds 0) and its largest."""
    return (np.where((low <= 0) & (high >= 0), 0.0, np.minimum(np.abs(low), np.abs(high))),
            np.maximum(np.abs(low), np.abs(high)))


def _trig_on_pieces(kind: str, low: np.ndarray, high: np.ndarray) -> tuple:
    """sin or cos on intervals: the values at the ends, and ±1 where an extremum lies inside (at most one in an
    interval narrower than π; [−1, 1] on a wider one, sin(100 q) say)."""
    f = np.sin if kind == "sin" else np.cos
    offset = math.pi / 2 if kind == "sin" else 0.0  # sin peaks at π/2 + kπ, cos at kπ
    ends = np.stack([f(low), f(high)])
    k = np.ceil((low - offset) / math.pi)
    inside = offset + k * math.pi <= high
    peak = np.where(np.mod(k, 2) == 0, 1.0, -1.0)
    wide = ~(high - low < math.pi)  # NaN and ∞ too
    top = np.where(wide | (inside & (peak > 0)), 1.0, ends.max(axis=0) + 2 * _WIDEN)
    bottom = np.where(wide | (inside & (peak < 0)), -1.0, ends.min(axis=0) - 2 * _WIDEN)
    return np.maximum(bottom, -1.0), np.minimum(top, 1.0)
