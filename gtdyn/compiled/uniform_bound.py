"""A bound on the certificate's u = ‖D Ŝ1‖₂ that holds at every state, proven once while the code is written, for
plans of substitutions alone (RNEA's: ``certificate.substitution_backward_error``).

Each coefficient of A is a traced function of the inputs. Interval arithmetic on the trace (``enclosures``)
bounds it over every input whatever its value: a revolute angle reaches A only through sin and cos, which stay in
[−1, 1], so the rows of eq. 5–7 have bounded coefficients while the velocities, given accelerations and gravity
enter b alone. Back-substitution on magnitudes — ``solve_abs``'s steps on a plan without row operations,
y_c = (1 + Σ_j |a_pj| y_j) / |a_pc| — only grows with larger off-pivot magnitudes and smaller pivots. So those
steps on each off-pivot entry's largest magnitude and each pivot's smallest give ȳ ≥ Ŝ1(q) at every state; with
D̄_k² the sum of column k's largest squares, ū = ‖D̄ ȳ‖₂ ≥ u(q). A floating base's block, which ``solve_abs``
takes whole (|B⁻¹| 1, ``root_block``), is triangular in such a plan: |B⁻¹| ≤ M(B)⁻¹ entry by entry (M the
comparison matrix), which these pivot-by-pivot steps bound.

Where ū is under the certificate's limits, ``main`` certifies every call with it and leaves the bound's pass to
the calls it does not certify (``certificate.checked_call``): the PUMA's and the UR5's inverse dynamics, and the
mass matrix of every bundled robot in RNEA's ordering (benchmarks/results/design_measurements.md).

Rounding: each interval is widened by four units in the last place of its largest magnitude (and the smallest
subnormal's worth), which covers both the run-time rounding of its operation (IEEE: relative to the result) and
that of the endpoints here. ū carries a relative ``MARGIN`` for the sums of the magnitude passes, whose rounding,
here and at run time, is relative and of order (operations) · 2⁻⁵³.
"""

from __future__ import annotations

import math

from gtdyn.compiled import trace
from gtdyn.compiled.plan import Plan, off_pivot

UNBOUNDED = (-math.inf, math.inf)
MARGIN = 1e-8  # ū's relative margin over the sums' rounding (≤ 1e5 operations · 2⁻⁵³ ≈ 1e-11)
_WIDEN = 4 * 2.0 ** -53
_TINY = 5e-324  # the smallest subnormal: an absolute rounding error where results underflow


def _hull(*values: float) -> tuple[float, float]:
    if any(v != v for v in values):  # ∞ − ∞, 0 · ∞: the value may be anything
        return UNBOUNDED
    return min(values), max(values)


def _divided(a: tuple, b: tuple) -> tuple[float, float]:
    if b[0] <= 0.0 <= b[1]:
        return UNBOUNDED
    return _hull(*(x / y for x in a for y in b))


def _square_root(a: tuple) -> tuple[float, float]:
    return UNBOUNDED if a[0] < 0.0 else (math.sqrt(a[0]), math.sqrt(a[1]))  # NaN below zero


def _magnitude_interval(a: tuple) -> tuple[float, float]:
    low, high = abs(a[0]), abs(a[1])
    return (0.0 if a[0] <= 0.0 <= a[1] else min(low, high)), max(low, high)


RULES = {
    "copy": lambda a: a,
    "neg": lambda a: (-a[1], -a[0]),
    "abs": _magnitude_interval,
    "sin": lambda a: (-1.0, 1.0),  # libm's sin and cos never leave [−1, 1]
    "cos": lambda a: (-1.0, 1.0),
    "sqrt": _square_root,
    "add": lambda a, b: _hull(a[0] + b[0], a[1] + b[1]),
    "sub": lambda a, b: _hull(a[0] - b[1], a[1] - b[0]),
    "mul": lambda a, b: _hull(*(x * y for x in a for y in b)),
    "div": _divided,
    "le": lambda a, b: (0.0, 1.0),
    "atan2": lambda a, b: (-math.pi, math.pi),
    "select": lambda c, a, b: _hull(a[0], a[1], b[0], b[1]),
}
EXACT = {"copy", "neg", "abs", "sin", "cos", "le", "select"}  # results exact, or within the interval as they are


def enclosures(fn: trace.Function, ranges: dict | None = None) -> list:
    """For each operation of ``fn`` (indexed as ``fn.ops``), an interval (low, high) that holds its run-time value
    for every input ``fn`` loads, whatever it is — loads are unbounded but those from an index of ``ranges``, which
    lie in its (low, high) — or None for operations without a value."""
    ranges = ranges or {}
    found: list = [None] * len(fn.ops)

    def interval(a) -> tuple[float, float]:
        return found[a.id] if type(a) is trace.Sym else (float(a), float(a))

    for i, op in enumerate(fn.ops):
        kind = op[0]
        if kind in trace.NOT_ARITHMETIC:
            found[i] = ranges.get(op[1], UNBOUNDED) if kind == "load" else None
            continue
        rule = RULES.get(kind)
        if kind == "mul" and op[1] is op[2]:  # a square: never below zero (a product of two intervals would be)
            low, high = _magnitude_interval(interval(op[1]))
            low, high = low * low, high * high
        else:
            low, high = UNBOUNDED if rule is None else rule(*(interval(a) for a in op[1:]))
        if kind not in EXACT:
            slack = _WIDEN * max(abs(low), abs(high)) + _TINY
            low, high = low - slack, high + slack
        found[i] = (low, high) if low == low and high == high else UNBOUNDED
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
        return max(abs(found[value.id][0]), abs(found[value.id][1])) if value.fn is fn else math.inf

    def smallest(value) -> float:
        if type(value) is not trace.Sym:
            return abs(float(value))
        return _magnitude_interval(found[value.id])[0] if value.fn is fn else 0.0

    y: dict = {}
    for key, c, p in reversed(plan.pivots):  # solve_abs's back-substitution from a right-hand side of ones
        row = plan.work[p]
        total = 1.0 + sum((largest(coefficient) * y.get(other, math.inf)
                           for other, coefficient in off_pivot(row, key, c)), 0.0)
        pivot = smallest(row[key][c])
        y[key, c] = total / pivot if pivot > 0.0 else math.inf
    u_squared = sum((sum(largest(e) ** 2 for e in entries[k]) * y.get(kc, math.inf) ** 2
                     for kc, k in column.items()), 0.0)
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
