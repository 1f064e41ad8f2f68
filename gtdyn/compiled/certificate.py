"""The checked call's certificate, as generated code. ``main`` solves and bounds the condition from above with
one pass (``solve_abs``), or with none where a bound proven at every state certifies (``uniform_bound``: plans of
substitutions, as RNEA's); where that bound cannot certify, ``exact`` refines once and computes the condition
estimate of the reference path (same start vector, same steps). Either way the status is 1 only when the answer
is certified — well conditioned, accurate, every input finite and a floating base's pose rigid, every loop
closed and every transmission kept — and 0 when the caller must ask the reference path."""

from __future__ import annotations

import numpy as np

from gtdyn.compiled import trace
from gtdyn.compiled.a_priori import substitution_backward_error
from gtdyn.compiled.certificate_cost import cheapest_way, pays
from gtdyn.compiled.guards import unless_guarded
from gtdyn.compiled.layout import Layout, Slots, store_outputs
from gtdyn.compiled.plan import Plan
from gtdyn.compiled.uniform_bound import uniform_bound, within_ranges
from gtdyn.compiled.validity import finite_sum, squared_norm, valid_inputs
from gtdyn.kinematics.loops import CLOSURE_TOLERANCE
from gtdyn.linear.elimination import INVERSE_ITERATIONS, WARN_CONDITION

# The estimate's limit: above it the reference path decides (it warns from WARN_CONDITION). The estimate here and the
# reference path's take the same steps on different factors, so they round differently: a wide margin.
CONDITION_LIMIT = WARN_CONDITION / 10
# A bound's limit: u ≥ ‖D S‖₂ ≥ the reference path's estimate, so u under WARN_CONDITION proves that the reference
# path would not warn. The factor 2 covers rounding in u and in the estimate (relative, of order κ·ε ≤ 1e-8).
BOUND_LIMIT = WARN_CONDITION / 2
ERROR_BOUND = 1e-10  # κ · backward error: an estimate of the relative error, 10× under the 1e-9 we promise
CLOSURE_LIMIT = 0.1 * CLOSURE_TOLERANCE  # loop gaps above it: the reference path checks (and names the loop)
ITERATION = "inverse_iteration"  # exact's estimate, where the bound with the refined answer cannot certify
BY_BOUND, BY_SCHUR = 1.0, 2.0  # ws["bounded"] of a call u or u_S certified (0: the estimate, or not certified)
A_PRIORI = 3.0  # ws["bounded"] of a call u certified with the substitution's a-priori backward error
# Below it, the right-hand side's products may round to subnormals, whose absolute errors the a-priori bound leaves
# out: such calls measure their backward error instead.
SMALLEST_RHS = 1e-280
REACHES = (100.0, 10.0, 1.0, 0.0)  # metres: how far past its limits a prismatic joint's ū may reach (_everywhere)


def _column_entries(plan: Plan, column: dict) -> list[list]:
    """A's entries by column (unknown k), each column's in row order."""
    entries = [[] for _ in column]
    for row in plan.rows:
        for key, block in row.coef.items():
            for k, coefficient in enumerate(block):
                entries[column[key, k]].append(coefficient)
    return entries


def _column_norm(fn: trace.Function, entries: list, slots: Slots):
    """‖A e_k‖², from column k's entries: the column scaling D_k² of the reference path's condition estimate."""
    total = 0.0
    for coefficient in entries:
        c = slots.use(fn, coefficient)
        total = total + c * c
    return total


def _sample_column_norms(entries: list[list]) -> list:
    """``_column_norm``'s values at the build's sample states (the same sums in the same order), from A's entries
    by column (``_column_entries``), without tracing them: the choice of a certificate's way needs them before
    ``main`` computes them."""
    with np.errstate(all="ignore"):
        return [sum((trace.value(c) * trace.value(c) for c in column), 0.0) for column in entries]


def _right_hand_side(fn: trace.Function, plan: Plan, layout: Layout, slots: Slots, squares: bool,
                     store: bool = True):
    """‖b‖² (``squares``) or ‖b‖₁, b read one entry at a time (and stored where the solve reads it)."""
    total = 0.0
    for i, row in enumerate(plan.rows):
        value = slots.use(fn, row.rhs)
        if store:
            fn.store(layout.start["rhs"] + i, value)
        total = total + (value * value if squares else trace.fabs(value))
    return total


def _solution(fn: trace.Function, layout: Layout, count: int, for_residual: bool) -> tuple[list, object]:
    """The solve's x, read one entry at a time, and ‖x‖² with x stored where the residual reads it
    (``for_residual``), or else Σ x (finite if every entry is)."""
    x, total = [], 0.0
    for k in range(count):
        x.append(fn.load(layout.start["sol"] + k))
        if for_residual:
            fn.store(layout.start["xr"] + k, x[k])
        total = total + (x[k] * x[k] if for_residual else x[k])
    return x, total


def _backward_error(residual_squared, sums: dict):
    """‖b − A x‖ / (‖A‖_F ‖x‖ + ‖b‖), from ‖b − A x‖² and ``sums``: ‖A‖_F² ("A", the sum of the squared column
    norms), ‖x‖² and ‖b‖²."""
    return trace.div(trace.sqrt(residual_squared), trace.sqrt(sums["A"]) * trace.sqrt(sums["x"])
                     + trace.sqrt(sums["b"]) + 1e-300)


def _other_checks(fn: trace.Function, layout: Layout, slots: Slots, closure: dict, coupled):
    """1.0 if the inputs are valid, every transmission kept and every loop closed, else 0.0."""
    ok = valid_inputs(fn, layout) * slots.use(fn, coupled)
    for pose_gap, twist_gap in closure.values():
        gaps = [slots.use(fn, g) for g in pose_gap + twist_gap]
        ok = ok * trace.le(squared_norm(gaps), CLOSURE_LIMIT ** 2)
    return ok


def _conclude(fn: trace.Function, layout: Layout, slots: Slots, closure: dict, coupled, condition, backward,
              way: float, others=None):
    """The certificate — well conditioned (``condition`` under ``BOUND_LIMIT`` for a bound, ``CONDITION_LIMIT``
    for the estimate), accurate, and ``others`` (default ``_other_checks``) — with status, κ (or the bound),
    backward error and, where it certifies, which way (``way``: 0 the estimate, ``BY_BOUND`` u, ``BY_SCHUR`` u_S),
    stored (the answer is stored where it is read, before); the status."""
    fn.comment("certificate: well conditioned, accurate, and every loop closed")
    if others is None:
        others = _other_checks(fn, layout, slots, closure, coupled)
    limit = CONDITION_LIMIT if way == 0.0 else BOUND_LIMIT
    ok = trace.le(condition, limit) * trace.le(condition * backward, ERROR_BOUND) * others
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

    (u² is the sum of the same g_j). ``certificate_cost.cheapest_way`` picks the estimate alone, u, or u then u_S
    by their cost per call at the build's sample states; the passes a plan does not use are dropped from
    ``functions``.

    A plan of substitutions alone (``substitution_backward_error``) has a backward error known a priori: ``main``
    certifies with it and no residual, and calls ``measured`` (the residual, and the verdict with it as above)
    only where that cannot certify. Where, moreover, a bound ū ≥ u proven at every state (``uniform_bound``)
    certifies with γ_m, or with no error at all where b = 0 by structure (a matrix's plan at rest, whose answer is
    0), ``main`` leaves u's pass to ``measured`` as well: it certifies the same calls as with u (u ≤ ū), on the
    same answer, and stores ū as the call's bound."""
    main = trace.Function("main")
    main.call(functions["factor"])
    fn = unless_guarded(main, plan, layout, slots)
    entries = _column_entries(plan, column)
    sample_norms = _sample_column_norms(entries)
    way = cheapest_way(functions, layout, sample_norms, transposed_abs, BOUND_LIMIT)
    if way != "schur":
        functions.pop("solve_t_abs", None)
    if way == "estimate":
        del functions["solve_abs"]
        fn.comment("at the build's sample states no bound would pay: the estimate decides every call")
        _estimate(fn, functions, plan, layout, slots, closure, outputs, coupled,
                  lambda k: _column_norm(fn, entries[k], slots), len(column))
        return {**({"certify": fn} if fn is not main else {}), "main": main}
    # Values that live across a call are spilled to the stack, and many values at once too: so each vector below
    # (D², b, x, r) is read one entry at a time into its sums (u², ‖A‖_F², ‖b‖², ‖x‖², ‖r‖²), which alone go on.
    gamma = substitution_backward_error(plan)
    zero_rhs = all(not trace.is_sym(row.rhs) and row.rhs == 0.0 for row in plan.rows)  # a matrix's plan at rest
    everywhere, ranges = _everywhere(plan, entries, column, functions["factor"], gamma, layout.ranges, zero_rhs) \
        if gamma is not None else (None, {})
    pays_here = gamma is not None and pays(functions, layout, sample_norms, gamma, ERROR_BOUND)
    by_substitution = not zero_rhs and (everywhere is not None or pays_here)  # b = 0: no backward error to bound
    count = len(column)
    a_priori, measured = None, fn
    if everywhere is None:
        bound, a_squared = _bound_pass(fn, functions, entries, layout, slots, way, sums=not by_substitution)
    if not zero_rhs:
        b_sum = _right_hand_side(fn, plan, layout, slots, squares=not by_substitution)  # ‖b‖₁ or ‖b‖²
        fn.call(functions["solve"])  # after the bound's pass, so that ws keeps x and its residual for exact
        x, x_sum = _solution(fn, layout, count, for_residual=not by_substitution)  # Σ x or ‖x‖²
        store_outputs(fn, layout, outputs, x)
    others = _other_checks(fn, layout, slots, closure, coupled)
    within = 1.0 if everywhere is None else within_ranges(fn, ranges)
    if zero_rhs:
        fn.comment("b = 0 by structure: x = 0 and r = 0 exactly where the factors are finite (else u is not)")
        store_outputs(fn, layout, outputs, [0.0] * count)
        if everywhere is not None:
            fn.comment(f"u ≤ ū = {everywhere:.3g} at every state (uniform_bound)")
            a_priori = _conclude(fn, layout, slots, closure, coupled, everywhere, 0.0, A_PRIORI, others * within)
            measured = trace.Function("measured")
            measured.comment("where ū cannot certify (inputs not valid, or a prismatic joint beyond its limits)")
            bound, _ = _bound_pass(measured, functions, entries, layout, slots, way, sums=False)
            others = slots.use(measured, others)
        for first, size in (("xr", count), ("res", len(plan.rows))):  # as the solve and the residual leave them
            for k in range(size):
                measured.store(layout.start[first] + k, 0.0)
        backward = 0.0
    else:
        if by_substitution:
            fn.comment(f"substitution alone: backward error ≤ γ_m = {gamma:.3g} a priori, for a finite x and "
                       "‖b‖₁ ≥ SMALLEST_RHS (substitution_backward_error)" +
                       ("" if everywhere is None else f", and u ≤ ū = {everywhere:.3g} at every state (uniform_bound)"))
            sure = others * within * finite_sum(x_sum) * trace.le(SMALLEST_RHS, b_sum)
            a_priori = _conclude(fn, layout, slots, closure, coupled, bound if everywhere is None else everywhere,
                                 gamma, A_PRIORI, sure)
            measured = trace.Function("measured")
            measured.comment("where the a-priori bound cannot certify: the backward error measured")
            x_squared = _solution(measured, layout, count, True)[1]  # x into xr, before u's pass writes over it
            if everywhere is not None:
                bound, _ = _bound_pass(measured, functions, entries, layout, slots, way, sums=False)
            sums = {"A": _sum(measured, layout.start["norms"], count), "x": x_squared,
                    "b": _right_hand_side(measured, plan, layout, slots, squares=True, store=False)}
            bound, others = slots.use(measured, bound), slots.use(measured, others)
        else:
            sums = {"A": a_squared, "b": b_sum, "x": x_sum}
        measured.comment("backward error ‖b − A x‖ / (‖A‖_F ‖x‖ + ‖b‖)")
        measured.call(functions["residual"])
        backward = _backward_error(_sum(measured, layout.start["res"], len(plan.rows), squares=True), sums)
    ok = _conclude(measured, layout, slots, closure, coupled, bound, backward, BY_BOUND, others)
    fallback = exact = trace.Function("exact")
    if way == "schur":
        fallback = _schur(functions, layout, len(plan.rows), slots, closure, coupled, [backward, others], exact)
        measured.comment("where u cannot certify, Schur's test; where that cannot, the reference path's estimate")
    else:
        measured.comment("where the bound cannot certify, the reference path's estimate decides")
    measured.call_unless(ok, fallback)
    if a_priori is not None:
        fn.call_unless(a_priori, measured)
    exact.comment("the estimate's certificate on the factors main left in ws (main's column norms, x and its "
                  "residual too): for calls the bounds cannot certify, and solver.condition")
    iteration = _estimate(exact, functions, plan, layout, slots, closure, outputs, coupled,
                          lambda k: exact.load(layout.start["norms"] + k), len(column), solved=True,
                          after_bound=BY_SCHUR if way == "schur" else BY_BOUND)
    return {ITERATION: iteration, "exact": exact, **({"schur": fallback} if way == "schur" else {}),  # callees first
            **({"measured": measured} if a_priori is not None else {}),
            **({"certify": fn} if fn is not main else {}), "main": main}


def _bound_pass(fn: trace.Function, functions: dict, entries: list, layout: Layout, slots: Slots, way: str,
                sums: bool):
    """u = ‖D Ŝ1‖₂ by ``solve_abs`` and the column norms (stored for exact and measured; D² Ŝ1 for schur too), and
    ‖A‖_F² where ``sums`` (else 0: measured sums the stored norms where it needs them)."""
    fn.comment("the bound u = ‖D Ŝ1‖₂ ≥ 1/σ_min(A D⁻¹)")
    fn.call(functions["solve_abs"])
    u_squared, a_squared = 0.0, 0.0
    for k, column_entries in enumerate(entries):
        norm = _column_norm(fn, column_entries, slots)
        magnitude = fn.load(layout.start["sol"] + k)
        u_squared = u_squared + norm * (magnitude * magnitude)
        if sums:
            a_squared = a_squared + norm
        fn.store(layout.start["norms"] + k, norm)  # for exact and measured
        if way == "schur":
            fn.store(layout.start["zt"] + k, norm * magnitude)  # D² Ŝ1: for schur, if u cannot certify
    return trace.sqrt(u_squared), a_squared


def _everywhere(plan: Plan, entries: list, column: dict, factor: trace.Function, gamma: float, limits: dict,
                zero_rhs: bool):
    """(ū, ranges): ū (``uniform_bound``) where it certifies every call the a-priori backward error γ_m does — under
    ``BOUND_LIMIT``, and with γ_m under ``ERROR_BOUND``, or any γ where b = 0 by structure (``zero_rhs``: a
    matrix's plan at rest, whose x = 0 is exact) — else None; and the prismatic joints' ranges ū assumes, which the
    call checks: their ``limits`` widened to ±``REACHES`` metres, the widest that certifies (a gripper's fingers
    drawn at random states beyond their few centimetres still take ū)."""
    for reach in REACHES if limits else REACHES[-1:]:
        ranges = {i: (min(low, -reach), max(high, reach)) for i, (low, high) in limits.items()}
        bound = uniform_bound(plan, entries, column, factor, ranges)
        if bound <= BOUND_LIMIT and (zero_rhs or bound * gamma <= ERROR_BOUND):
            return bound, ranges
    return None, {}


def _schur(functions: dict, layout: Layout, rows: int, slots: Slots, closure: dict, coupled, main_values: list,
           exact: trace.Function) -> trace.Function:
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
    ok = _conclude(fn, layout, slots, closure, coupled, bound, backward, BY_SCHUR, others)
    fn.call_unless(ok, exact)
    return fn


def _estimate(fn: trace.Function, functions, plan: Plan, layout: Layout, slots: Slots, closure: dict, outputs,
              coupled, norm_of, count: int, solved: bool = False, after_bound: float | None = None):
    """The certificate with the reference path's own estimate, on the factors in ``ws``: solve, refine once, the
    backward error, and κ by the reference path's inverse iteration (same start vector, same steps). ``norm_of(k)``:
    D²_k in ``fn``, for each of the ``count`` unknowns. ``solved``: ``main`` left the solve's x in ``xr`` and its
    residual in ``res`` (the same operations, so the same bits): start from them. As in ``main``, each vector is
    read one entry at a time into what goes on: only scalars live across the calls.

    ``after_bound`` (``exact``, after a bound that did not certify main's answer; the way it counts as): the
    bound, as its conclusion left it, certifies the refined answer where it can — most often a bound fails on
    accuracy alone (u · backward error), which one step of refinement shrinks — and the inverse iteration then
    runs only where it cannot, in a function of its own (``ITERATION``, returned; None without ``after_bound``)."""
    start, rows = layout.start, len(plan.rows)
    fn.comment("solve, then one step of iterative refinement with the original rows")
    b_squared = _right_hand_side(fn, plan, layout, slots, squares=True, store=not solved)
    if not solved:
        fn.call(functions["solve"])
        _solution(fn, layout, count, for_residual=True)
        fn.call(functions["residual"])
    _copy(fn, start["res"], start["rhs"], rows)  # the residual, the refinement's right-hand side
    fn.call(functions["solve"])
    x, x_squared = [], 0.0
    for k in range(count):
        x.append(fn.load(start["xr"] + k) + fn.load(start["sol"] + k))
        fn.store(start["xr"] + k, x[k])  # the refined x, for its residual
        x_squared = x_squared + x[k] * x[k]
    store_outputs(fn, layout, outputs, x)
    fn.comment("backward error ‖b − A x‖ / (‖A‖_F ‖x‖ + ‖b‖)")
    fn.call(functions["residual"])
    residual_squared = _sum(fn, start["res"], rows, squares=True)
    fn.comment("condition estimate: inverse iteration on (A D⁻¹)ᵀ(A D⁻¹) from the reference path's start vector")
    w0 = np.random.default_rng(0).standard_normal(count)  # gtdyn.linear.elimination.condition_estimate
    w0 /= np.linalg.norm(w0)
    a_squared = 0.0
    for k in range(count):
        norm = norm_of(k)
        a_squared = a_squared + norm
        scale = trace.sqrt(norm)
        fn.store(start["scale"] + k, scale)
        fn.store(start["zt"] + k, trace.div(float(w0[k]), scale))  # y
    backward = _backward_error(residual_squared, {"A": a_squared, "x": x_squared, "b": b_squared})
    iteration = None
    if after_bound is not None:
        fn.comment("the bound with the refined answer's backward error: where it certifies, no estimate is needed")
        ok = _conclude(fn, layout, slots, closure, coupled, fn.load(layout.status + 1), backward, after_bound)
        iteration = trace.Function(ITERATION)
        backward = slots.use(iteration, backward)  # stored here, before the call that reads it
        fn.call_unless(ok, iteration)
        fn = iteration
    growth = 1.0
    for _ in range(INVERSE_ITERATIONS):
        fn.call(functions["solve_t"])
        _copy(fn, start["yt"], start["rhs"], rows)
        fn.call(functions["solve"])
        z_squared = 0.0
        for k in range(count):
            z = fn.load(start["scale"] + k) * fn.load(start["sol"] + k)
            z_squared = z_squared + z * z
        growth = trace.sqrt(z_squared)
        for k in range(count):
            fn.store(start["zt"] + k, trace.div(fn.load(start["sol"] + k), growth))  # y
    condition = trace.sqrt(growth)
    _conclude(fn, layout, slots, closure, coupled, condition, backward, 0.0)
    return iteration


def _copy(fn: trace.Function, source: int, target: int, count: int) -> None:
    for i in range(count):
        fn.store(target + i, fn.load(source + i))


def _sum(fn: trace.Function, first: int, count: int, squares: bool = False):
    """Σ v_i (or Σ v_i², ``squares``) of ``count`` values of ``ws`` from ``first``, read one at a time."""
    total = 0.0
    for i in range(count):
        value = fn.load(first + i)
        total = total + (value * value if squares else value)
    return total
