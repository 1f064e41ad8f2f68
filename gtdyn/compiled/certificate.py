"""The checked call's certificate, as generated code. ``main`` solves and bounds the condition from above with
one pass (``solve_abs``); where that bound cannot certify, ``exact`` refines once and computes the condition
estimate of the reference path (same start vector, same steps). Either way the status is 1 only when the answer
is certified — well conditioned, accurate, every input finite and a floating base's pose rigid, every loop
closed and every transmission kept — and 0 when the caller must ask the reference path."""

from __future__ import annotations

import numpy as np

from gtdyn.arguments.asked import TRANSMISSION_TOLERANCE
from gtdyn.arguments.query import POSE
from gtdyn.compiled import base_inputs, trace
from gtdyn.compiled.layout import Layout, Slots, store_outputs
from gtdyn.compiled.plan import Plan
from gtdyn.kinematics.loops import CLOSURE_TOLERANCE
from gtdyn.linear.elimination import INVERSE_ITERATIONS, WARN_CONDITION
from gtdyn.model.limits import MAX_ANGLE
from gtdyn.model.robot import Robot
from gtdyn.problem import Problem

# The estimate's limit: above it the reference path decides (it warns from WARN_CONDITION). The estimate here and the
# reference path's take the same steps on different factors, so they round differently: a wide margin.
CONDITION_LIMIT = WARN_CONDITION / 10
# A bound's limit: u ≥ ‖D S‖₂ ≥ the reference path's estimate, so u under WARN_CONDITION proves that the reference
# path would not warn. The factor 2 covers rounding in u and in the estimate (relative, of order κ·ε ≤ 1e-8).
BOUND_LIMIT = WARN_CONDITION / 2
ERROR_BOUND = 1e-10  # κ · backward error: an estimate of the relative error, 10× under the 1e-9 we promise
CLOSURE_LIMIT = 0.1 * CLOSURE_TOLERANCE  # loop gaps above it: the reference path checks (and names the loop)
BY_BOUND, BY_SCHUR = 1.0, 2.0  # ws["bounded"] of a call u or u_S certified (0: the estimate, or not certified)
A_PRIORI = 3.0  # ws["bounded"] of a call u certified with the substitution's a-priori backward error
UNIT_ROUNDOFF = 2.0 ** -53
# Below it, the right-hand side's products may round to subnormals, whose absolute errors the a-priori bound leaves
# out: such calls measure their backward error instead.
SMALLEST_RHS = 1e-280


def coupling_ok(robot: Robot, q: list, v: list, problem: Problem):
    """1.0 if the inputs keep every transmission (q, q̇, and q̈ where all of a transmission's are given) to the
    reference path's ``TRANSMISSION_TOLERANCE``, else 0.0: a state that breaks one goes to the reference path,
    which names the joint."""
    ok = 1.0
    for t in robot.transmissions:
        series = [(lambda j: q[j - 1], t.offset), (lambda j: v[j - 1], 0.0)]
        if all(j in problem.known_qdd for j in (t.dependent, *(k for k, _ in t.terms))):
            series.append((lambda j: problem.known_qdd[j], 0.0))
        for value, offset in series:
            expected = sum((ratio * value(k) for k, ratio in t.terms), 0.0) + offset
            gap = value(t.dependent) - expected
            bound = TRANSMISSION_TOLERANCE * (1.0 + trace.fabs(expected))
            ok = ok * trace.le(gap * gap, bound * bound)
    return ok


def inputs(fn: trace.Function, layout: Layout) -> list:
    """Every input, loaded: one that the equations never read (q1 of a planar arm about a vertical axis) must
    still not be NaN."""
    return [fn.load(i) for i in range(layout.start["inputs"], layout.start["inputs"] + layout.inputs)]


def valid_inputs(fn: trace.Function, layout: Layout):
    """1.0 if every input is finite, every revolute angle within ±``MAX_ANGLE`` and a floating base's pose input is
    a rigid transform (RᵀR = I to 1e-9 per entry, det R > 0, last row 0 0 0 1: what
    ``gtdyn.arguments.pose_argument`` accepts), else 0.0: the reference path then raises the boundary's error."""
    ok = finite(inputs(fn, layout))
    for j in layout.angles:
        ok = ok * trace.le(trace.fabs(fn.load(layout.start["inputs"] + j)), MAX_ANGLE)
    if layout.base_inputs:
        first = layout.start["inputs"] + 3 * layout.n + POSE
        R = np.array([fn.load(first + i) for i in base_inputs.ROTATION], dtype=object).reshape(3, 3)
        last_row = [fn.load(first + 12 + k) - (1.0 if k == 3 else 0.0) for k in range(4)]
        gram = R.T @ R - np.eye(3)
        det = R[0, 0] * (R[1, 1] * R[2, 2] - R[1, 2] * R[2, 1]) - R[0, 1] * (R[1, 0] * R[2, 2] - R[1, 2] * R[2, 0]) \
            + R[0, 2] * (R[1, 0] * R[2, 1] - R[1, 1] * R[2, 0])
        ok = ok * trace.le(squared_norm(list(gram.ravel())), 1e-18) * trace.le(-det, 0.0) \
            * trace.le(squared_norm(last_row), 0.0)
    return ok


def finite(values: list):
    """1.0 if every value is finite (their sum is), else 0.0."""
    return trace.le(trace.fabs(sum(values, 0.0)), float(np.finfo(float).max))


def squared_norm(values) -> object:
    return trace.dot(values, values)


def _column_norms(fn: trace.Function, plan: Plan, column: dict, slots: Slots) -> list:
    """‖A e_k‖² for each unknown k: the column scaling D² of the reference path's condition estimate."""
    squared_norms = [0.0] * len(column)
    for row in plan.rows:
        for key, block in row.coef.items():
            for k, coefficient in enumerate(block):
                c = slots.use(fn, coefficient)
                squared_norms[column[key, k]] = squared_norms[column[key, k]] + c * c
    return squared_norms


class _Calls:
    """The solve and the residual as ``fn`` calls them: values in, values out, through their ``ws`` regions."""

    def __init__(self, fn: trace.Function, functions: dict, layout: Layout, rows: int, unknowns: int):
        self.fn, self.functions, self.start, self.rows, self.unknowns = fn, functions, layout.start, rows, unknowns

    def solve(self, rhs: list) -> list:
        for i, value in enumerate(rhs):
            self.fn.store(self.start["rhs"] + i, value)
        self.fn.call(self.functions["solve"])
        return [self.fn.load(self.start["sol"] + k) for k in range(self.unknowns)]

    def residual(self, x: list) -> list:
        for k, value in enumerate(x):
            self.fn.store(self.start["xr"] + k, value)
        self.fn.call(self.functions["residual"])
        return [self.fn.load(self.start["res"] + i) for i in range(self.rows)]


def substitution_backward_error(plan: Plan) -> float | None:
    """For a plan that eliminates by substitution alone — no row operations, every row a pivot row, as RNEA's
    does — an a-priori bound on the backward error of every answer its solve computes; None for other plans.

    Back-substitution computes each unknown from its pivot row, x_c = (b_p − Σ_j a_pj x_j) / a_pc, on the rows of
    A themselves. In IEEE arithmetic without fused operations (the generated code has none), in any order of the
    sum, the computed x satisfies Σ_j a_pj (1 + θ_pj) x_j = b_p with |θ_pj| ≤ γ_k = k u / (1 − k u), k the row's
    entries and u the unit roundoff (Higham, Accuracy and Stability of Numerical Algorithms, Lemma 8.4): so
    |b − A x| ≤ γ_m |A| |x|, m the longest row, and

        ‖b − A x‖ / (‖A‖_F ‖x‖ + ‖b‖) ≤ γ_m ‖ |A| |x| ‖ / (‖A‖_F ‖x‖) ≤ γ_m.

    Underflow adds absolute errors the lemma leaves out: ``checked_call`` uses the bound only where ‖b‖₁ ≥
    ``SMALLEST_RHS``, and only where x is finite."""
    if plan.tape or len(plan.pivots) != len(plan.rows):  # a row operation changes b too, and A's rows
        return None
    longest = 0
    for _, _, p in plan.pivots:
        solved = _entries(plan.work[p])
        if [(key, k) for key, k, _ in solved] != [(key, k) for key, k, _ in _entries(plan.rows[p].coef)] or \
                any(e is not plan.rows[p].coef[key][k] for key, k, e in solved):
            return None  # the solve's row is not the residual's: the lemma says nothing of b − A x
        longest = max(longest, len(solved))
    return longest * UNIT_ROUNDOFF / (1 - longest * UNIT_ROUNDOFF)


def _entries(row: dict) -> list:
    """(variable, component, coefficient) of a row's entries that are not zero by structure."""
    return [(key, k, e) for key, block in row.items() for k, e in enumerate(block) if trace.is_sym(e) or e != 0]


def _backward_error(b: list, x: list, r: list, squared_norms: list):
    """‖b − A x‖ / (‖A‖_F ‖x‖ + ‖b‖)."""
    a_norm = trace.sqrt(sum(squared_norms, 0.0))
    return trace.div(trace.sqrt(squared_norm(r)), a_norm * trace.sqrt(squared_norm(x)) + trace.sqrt(squared_norm(b))
                     + 1e-300)


def _other_checks(fn: trace.Function, layout: Layout, slots: Slots, closure: dict, coupled):
    """1.0 if the inputs are valid, every transmission kept and every loop closed, else 0.0."""
    ok = valid_inputs(fn, layout) * slots.use(fn, coupled)
    for pose_gap, twist_gap in closure.values():
        gaps = [slots.use(fn, g) for g in pose_gap + twist_gap]
        ok = ok * trace.le(squared_norm(gaps), CLOSURE_LIMIT ** 2)
    return ok


def _conclude(fn: trace.Function, layout: Layout, slots: Slots, closure: dict, coupled, outputs, x, condition,
              backward, way: float, others=None):
    """The certificate — well conditioned (``condition`` under ``BOUND_LIMIT`` for a bound, ``CONDITION_LIMIT``
    for the estimate), accurate, and ``others`` (default ``_other_checks``) — and the answer (unless ``x`` is
    None: stored already), status, κ (or the bound), backward error and, where it certifies, which way (``way``:
    0 the estimate, ``BY_BOUND`` u, ``BY_SCHUR`` u_S), stored; the status."""
    fn.comment("certificate: well conditioned, accurate, and every loop closed")
    if others is None:
        others = _other_checks(fn, layout, slots, closure, coupled)
    limit = CONDITION_LIMIT if way == 0.0 else BOUND_LIMIT
    ok = trace.le(condition, limit) * trace.le(condition * backward, ERROR_BOUND) * others
    if x is not None:
        store_outputs(fn, layout, outputs, x)
    fn.store(layout.status, ok)
    fn.store(layout.status + 1, condition)
    fn.store(layout.status + 2, backward)
    fn.store(layout.start["bounded"], ok * way)
    return ok


def checked_call(functions, plan: Plan, column: dict, layout: Layout, slots: Slots, closure: dict, outputs,
                 coupled=1.0, transposed_abs=None) -> dict[str, trace.Function]:
    """The checked call's functions: ``main``, certified by a bound rather than an estimate, and ``exact``, the
    estimate, for calls the bound cannot certify. For S the left inverse the solve applies and D the column norms
    of A,

        κ_ref ≤ 1/σ_min(A D⁻¹) ≤ ‖D S‖₂ ≤ ‖D S‖_F ≤ ‖D |S| 1‖₂ ≤ ‖D Ŝ1‖₂ = u,

    κ_ref the reference path's estimate (inverse iteration gives a lower bound of 1/σ_min) and Ŝ1 one pass of
    ``solve_abs``. So u ≤ ``BOUND_LIMIT`` proves that the reference path would not warn, and u · backward
    error ≤ ``ERROR_BOUND`` that the answer holds its digits: the same verdicts as the estimate's, for one pass
    instead of eight.

    Where u is too loose (deep trees: |R| products grow with depth), a call u cannot certify takes a second pass
    on magnitudes, ``solve_t_abs`` (``transposed_abs``: z's sample values → the function), in ``schur``: with
    p = D Ŝ1 ≥ |D S| 1 and |D S|ᵀ p ≤ Ŝᵀ D² Ŝ1 = g, Schur's test gives

        ‖D S‖₂ ≤ √(max_j g_j) = u_S ≤ u

    (u² is the sum of the same g_j). ``_cheapest_way`` picks the estimate alone, u, or u then u_S by their cost per
    call at the build's sample states; the passes a plan does not use are dropped from ``functions``.

    A plan of substitutions alone (``substitution_backward_error``) has a backward error known a priori: ``main``
    certifies with it and no residual, and calls ``measured`` (the residual, and the verdict with it as above)
    only where that cannot certify."""
    fn = trace.Function("main")
    fn.call(functions["factor"])
    squared_norms = _column_norms(fn, plan, column, slots)
    way = _cheapest_way(functions, layout, squared_norms, transposed_abs)
    if way != "schur":
        functions.pop("solve_t_abs", None)
    if way == "estimate":
        del functions["solve_abs"]
        fn.comment("at the build's sample states no bound would pay: the estimate decides every call")
        _estimate(fn, functions, plan, column, layout, slots, closure, outputs, coupled, squared_norms)
        return {"main": fn}
    calls = _Calls(fn, functions, layout, len(plan.rows), len(column))
    fn.comment("the bound u = ‖D Ŝ1‖₂ ≥ 1/σ_min(A D⁻¹)")
    fn.call(functions["solve_abs"])
    magnitudes = [fn.load(layout.start["sol"] + k) for k in range(len(column))]
    bound = trace.sqrt(trace.dot(squared_norms, [m * m for m in magnitudes]))
    if way == "schur":
        for k, (norm, magnitude) in enumerate(zip(squared_norms, magnitudes)):
            fn.store(layout.start["zt"] + k, norm * magnitude)  # D² Ŝ1: for schur, if u cannot certify
    b = [slots.use(fn, row.rhs) for row in plan.rows]
    x = calls.solve(b)  # after the bound's pass, so that ws keeps x and its residual for exact
    others = _other_checks(fn, layout, slots, closure, coupled)
    gamma = substitution_backward_error(plan)
    measured, a_priori = fn, None
    if gamma is not None and _pays(functions, layout, squared_norms, gamma):
        fn.comment(f"substitution alone: backward error ≤ γ_m = {gamma:.3g} a priori, for a finite x and "
                   "‖b‖₁ ≥ SMALLEST_RHS (substitution_backward_error)")
        sure = others * finite(x) * trace.le(SMALLEST_RHS, sum((trace.fabs(v) for v in b), 0.0))
        a_priori = _conclude(fn, layout, slots, closure, coupled, outputs, x, bound, gamma, A_PRIORI, sure)
        measured = trace.Function("measured")
        x = [measured.load(layout.start["sol"] + k) for k in range(len(column))]
        b = [slots.use(measured, row.rhs) for row in plan.rows]  # from the factor's slots: main stores nothing more
        bound, others = slots.use(measured, bound), slots.use(measured, others)
        calls = _Calls(measured, functions, layout, len(plan.rows), len(column))
        measured.comment("where the a-priori bound cannot certify: the backward error measured")
    exact = trace.Function("exact")
    norms = [slots.use(exact, s) for s in squared_norms]  # stored by main before it may call exact, not after
    measured.comment("backward error ‖b − A x‖ / (‖A‖_F ‖x‖ + ‖b‖)")
    backward = _backward_error(b, x, calls.residual(x), [slots.use(measured, s) for s in squared_norms])
    ok = _conclude(measured, layout, slots, closure, coupled, outputs, x if a_priori is None else None, bound,
                   backward, BY_BOUND, others)
    fallback = exact
    if way == "schur":
        fallback = _schur(functions, layout, len(plan.rows), slots, closure, coupled, outputs,
                          [backward, others], exact)
        measured.comment("where u cannot certify, Schur's test; where that cannot, the reference path's estimate")
    else:
        measured.comment("where the bound cannot certify, the reference path's estimate decides")
    measured.call_unless(ok, fallback)
    if a_priori is not None:
        fn.call_unless(a_priori, measured)
    exact.comment("the estimate's certificate on the factors main left in ws (main's column norms, x and its "
                  "residual too): for calls the bounds cannot certify, and solver.condition")
    _estimate(exact, functions, plan, column, layout, slots, closure, outputs, coupled, norms, solved=True)
    return {"exact": exact, **({"schur": fallback} if way == "schur" else {}),  # callees first
            **({"measured": measured} if a_priori is not None else {}), "main": fn}


def _schur(functions: dict, layout: Layout, rows: int, slots: Slots, closure: dict, coupled, outputs,
           main_values: list, exact: trace.Function) -> trace.Function:
    """``schur``: u_S = √(max_j g_j), g = Ŝᵀ (D² Ŝ1) by ``solve_t_abs`` from the D² Ŝ1 main stored, and the
    certificate with it and main's backward error and other checks (``main_values``, main's values as slots);
    ``exact`` where u_S cannot certify either. u_S is NaN unless every g_j is finite (a running maximum would step
    over a NaN)."""
    fn = trace.Function("schur")
    backward, others = (slots.use(fn, value) for value in main_values)
    fn.call(functions["solve_t_abs"])
    g = [fn.load(layout.start["yt"] + i) for i in range(rows)]
    largest = g[0]
    for value in g[1:]:
        largest = trace.select(trace.le(largest, value), value, largest)
    bound = trace.sqrt(largest + 0.0 * sum(g[1:], g[0]))  # + 0 · Σ g: NaN where some g_j is not finite
    ok = _conclude(fn, layout, slots, closure, coupled, outputs, None, bound, backward, BY_SCHUR, others)
    fn.call_unless(ok, exact)
    return fn


def _sample_bound(functions: dict, layout: Layout, squared_norms: list) -> tuple[list, list, np.ndarray]:
    """At the build's sample states: the squared column norms, ``solve_abs``'s magnitudes Ŝ1 and the bound u."""
    start, count = layout.start["sol"], len(squared_norms)
    stored = {op[1] - start: op[2] for op in functions["solve_abs"].ops
              if op[0] == "store" and start <= op[1] < start + count}
    with np.errstate(all="ignore"):
        norms = [trace.value(norm) for norm in squared_norms]
        magnitudes = [trace.value(stored[k]) for k in range(count)]
        return norms, magnitudes, np.sqrt(sum((n * m ** 2 for n, m in zip(norms, magnitudes)), 0.0))


def _pays(functions: dict, layout: Layout, squared_norms: list, gamma: float) -> bool:
    """Whether the a-priori backward error certifies (u · γ_m ≤ ``ERROR_BOUND``, with ``_cheapest_way``'s margin of
    2) at half the build's sample states or more: elsewhere its checks and the branch to ``measured`` cost more
    than the residual they save (a 12-link chain's RNEA, u about 1e7, ran slower with them:
    benchmarks/results/design_measurements.md)."""
    with np.errstate(invalid="ignore"):
        return float(np.mean(_sample_bound(functions, layout, squared_norms)[2] * gamma <= ERROR_BOUND / 2)) >= 0.5


def _cheapest_way(functions: dict, layout: Layout, squared_norms: list, transposed_abs) -> str:
    """"estimate", "bound" (u) or "schur" (u, then u_S where u cannot certify), whichever makes the average call
    cheapest: a bound's passes save the estimate's on the share f of calls it certifies. f is the share of the
    build's sample states where the bound is under half ``BOUND_LIMIT`` (the samples are eight: the margin
    keeps a bound that only just certifies them from counting: at a tenth of the warning threshold, u certified 7
    of Talos forward dynamics' 8 and 52 % of its random states within the joint limits; under ``BOUND_LIMIT`` it
    certifies all 8 and 96 %). Costs are operations. Long chains certify with neither bound
    (benchmarks/results/design_measurements.md)."""
    count, solve_abs = len(squared_norms), functions["solve_abs"]
    norms, magnitudes, u = _sample_bound(functions, layout, squared_norms)
    with np.errstate(all="ignore"):
        z = [np.broadcast_to(n * m, np.shape(u)) for n, m in zip(norms, magnitudes)]
    def share(bound) -> float:  # of the samples a bound certifies, with the margin
        return float(np.mean(bound <= BOUND_LIMIT / 2))

    f_u = share(u)
    if f_u == 1.0:  # u alone costs least: u_S would only add its pass
        return "bound"
    solve_t_abs = functions["solve_t_abs"] = transposed_abs(z)
    first = layout.start["yt"]
    g = np.array([np.broadcast_to(trace.value(op[2]), np.shape(u)) for op in solve_t_abs.ops
                  if op[0] == "store" and op[1] >= first])
    with np.errstate(all="ignore"):
        u_schur = np.minimum(np.sqrt(np.max(g, axis=0)), u) if g.size else u  # no rows: a robot without joints
    f_s = share(u_schur)
    solve, residual, solve_t = (functions[name].count() for name in ("solve", "residual", "solve_t"))
    uncertified = (1 + INVERSE_ITERATIONS) * solve + residual + INVERSE_ITERATIONS * solve_t  # exact, after main
    bound_pass = solve + residual + solve_abs.count()
    cost = {"estimate": (2 + INVERSE_ITERATIONS) * solve + 2 * residual + INVERSE_ITERATIONS * solve_t,
            "bound": bound_pass + (1 - f_u) * uncertified,
            "schur": bound_pass + count + (1 - f_u) * (solve_t_abs.count() + 3 * len(g)) + (1 - f_s) * uncertified}
    return min(cost, key=cost.get)


def _estimate(fn: trace.Function, functions, plan: Plan, column: dict, layout: Layout, slots: Slots, closure: dict,
              outputs, coupled, squared_norms: list, solved: bool = False) -> None:
    """The certificate with the reference path's own estimate, on the factors in ``ws``: solve, refine once, the
    backward error, and κ by the reference path's inverse iteration (same start vector, same steps). ``solved``:
    ``main`` left the solve's x and its residual in ``ws`` (the same operations, so the same bits): start from
    them."""
    calls = _Calls(fn, functions, layout, len(plan.rows), len(column))
    b = [slots.use(fn, row.rhs) for row in plan.rows]
    start, M = layout.start, len(plan.rows)
    fn.comment("solve, then one step of iterative refinement with the original rows")
    if solved:
        x = [fn.load(start["sol"] + k) for k in range(len(column))]
        residual = [fn.load(start["res"] + i) for i in range(M)]
    else:
        x = calls.solve(b)
        residual = calls.residual(x)
    x = [a + d for a, d in zip(x, calls.solve(residual))]
    fn.comment("backward error ‖b − A x‖ / (‖A‖_F ‖x‖ + ‖b‖)")
    backward = _backward_error(b, x, calls.residual(x), squared_norms)
    fn.comment("condition estimate: inverse iteration on (A D⁻¹)ᵀ(A D⁻¹) from the reference path's start vector")
    scale = [trace.sqrt(s) for s in squared_norms]
    w0 = np.random.default_rng(0).standard_normal(len(column))  # gtdyn.linear.elimination.condition_estimate
    w0 /= np.linalg.norm(w0)
    y = [trace.div(float(w), s) for w, s in zip(w0, scale)]
    growth = 1.0
    for _ in range(INVERSE_ITERATIONS):
        for k, value in enumerate(y):
            fn.store(start["zt"] + k, value)
        fn.call(functions["solve_t"])
        u = calls.solve([fn.load(start["yt"] + i) for i in range(M)])
        z = [s * value for s, value in zip(scale, u)]
        growth = trace.sqrt(squared_norm(z))
        y = [trace.div(value, growth) for value in u]
    condition = trace.sqrt(growth)
    _conclude(fn, layout, slots, closure, coupled, outputs, x, condition, backward, 0.0)
