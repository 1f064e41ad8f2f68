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

CONDITION_LIMIT = WARN_CONDITION / 10  # above it the reference path decides (it warns from WARN_CONDITION)
ERROR_BOUND = 1e-10  # κ · backward error: an estimate of the relative error, 10× under the 1e-9 we promise
CLOSURE_LIMIT = 0.1 * CLOSURE_TOLERANCE  # loop gaps above it: the reference path checks (and names the loop)


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


def _backward_error(b: list, x: list, r: list, squared_norms: list):
    """‖b − A x‖ / (‖A‖_F ‖x‖ + ‖b‖)."""
    a_norm = trace.sqrt(sum(squared_norms, 0.0))
    return trace.div(trace.sqrt(squared_norm(r)), a_norm * trace.sqrt(squared_norm(x)) + trace.sqrt(squared_norm(b))
                     + 1e-300)


def _conclude(fn: trace.Function, layout: Layout, slots: Slots, closure: dict, coupled, outputs, x, condition,
              backward, by_bound: bool):
    """The certificate — well conditioned, accurate, valid inputs, transmissions kept, every loop closed — and
    the answer, status, κ (or the bound), backward error and whether the bound settled it, stored; the status."""
    fn.comment("certificate: well conditioned, accurate, and every loop closed")
    ok = trace.le(condition, CONDITION_LIMIT) * trace.le(condition * backward, ERROR_BOUND) \
        * valid_inputs(fn, layout) * slots.use(fn, coupled)
    for pose_gap, twist_gap in closure.values():
        gaps = [slots.use(fn, g) for g in pose_gap + twist_gap]
        ok = ok * trace.le(squared_norm(gaps), CLOSURE_LIMIT ** 2)
    store_outputs(fn, layout, outputs, x)
    fn.store(layout.status, ok)
    fn.store(layout.status + 1, condition)
    fn.store(layout.status + 2, backward)
    fn.store(layout.start["bounded"], ok if by_bound else 0.0)
    return ok


def checked_call(functions, plan: Plan, column: dict, layout: Layout, slots: Slots, closure: dict, outputs,
                 coupled=1.0) -> dict[str, trace.Function]:
    """The checked call's functions: ``main``, certified by a bound rather than an estimate, and ``exact``, the
    estimate, for calls the bound cannot certify. For S the left inverse the solve applies and D the column norms
    of A,

        κ_ref ≤ 1/σ_min(A D⁻¹) ≤ ‖D S‖₂ ≤ ‖D S‖_F ≤ ‖D |S| 1‖₂ ≤ ‖D Ŝ1‖₂ = u,

    κ_ref the reference path's estimate (inverse iteration gives a lower bound of 1/σ_min) and Ŝ1 one pass of
    ``solve_abs``. So u ≤ ``CONDITION_LIMIT`` proves that the reference path would not warn, and u · backward
    error ≤ ``ERROR_BOUND`` that the answer holds its digits: the same verdicts as the estimate's, for one pass
    instead of eight. Where trying the bound first would not make the average call cheaper
    (``_bound_is_useful``), ``main`` is the estimate's certificate alone and ``solve_abs`` is dropped from
    ``functions``."""
    fn = trace.Function("main")
    fn.call(functions["factor"])
    squared_norms = _column_norms(fn, plan, column, slots)
    if not _bound_is_useful(functions, layout, squared_norms):
        del functions["solve_abs"]
        fn.comment("at the build's sample states the bound would not certify: the estimate decides every call")
        _estimate(fn, functions, plan, column, layout, slots, closure, outputs, coupled, squared_norms)
        return {"main": fn}
    calls = _Calls(fn, functions, layout, len(plan.rows), len(column))
    fn.comment("the bound u = ‖D Ŝ1‖₂ ≥ 1/σ_min(A D⁻¹)")
    fn.call(functions["solve_abs"])
    magnitudes = [fn.load(layout.start["sol"] + k) for k in range(len(column))]
    bound = trace.sqrt(trace.dot(squared_norms, [m * m for m in magnitudes]))
    b = [slots.use(fn, row.rhs) for row in plan.rows]
    x = calls.solve(b)  # after solve_abs, so that ws keeps x and its residual for exact
    fn.comment("backward error ‖b − A x‖ / (‖A‖_F ‖x‖ + ‖b‖)")
    backward = _backward_error(b, x, calls.residual(x), squared_norms)
    ok = _conclude(fn, layout, slots, closure, coupled, outputs, x, bound, backward, by_bound=True)
    exact = trace.Function("exact")
    norms = [slots.use(exact, s) for s in squared_norms]  # stored by main before it may call exact, not after
    fn.comment("where the bound cannot certify, the reference path's estimate decides")
    fn.call_unless(ok, exact)
    exact.comment("the estimate's certificate on the factors main left in ws (main's column norms, x and its "
                  "residual too): for calls the bound cannot certify, and solver.condition")
    _estimate(exact, functions, plan, column, layout, slots, closure, outputs, coupled, norms, solved=True)
    return {"exact": exact, "main": fn}  # callees first


def _bound_is_useful(functions: dict, layout: Layout, squared_norms: list) -> bool:
    """Whether trying the bound first makes the average call cheaper: the bound's pass (a solve, a residual and
    ``solve_abs``: B operations) is paid by every call and saves the estimate's (E) on the share f of calls it
    certifies, so it pays when f · E > B. f is the share of the build's sample states where the bound is under
    ``CONDITION_LIMIT`` (the values ``solve_abs`` stores, with the column norms'); the samples are eight, and on the
    robots measured they overstate the share of random states (Talos forward: 7 of 8, against 52 % of states within
    the limits), so the bound must pay twice over: f · E > 2 B. Deep trees certify some states and not others (|R|
    products grow with depth: benchmarks/results/design_measurements.md); long chains none."""
    start, count = layout.start["sol"], len(squared_norms)
    solve_abs = functions["solve_abs"]
    magnitudes = {op[1] - start: op[2] for op in solve_abs.ops if op[0] == "store" and start <= op[1] < start + count}
    with np.errstate(all="ignore"):
        squared = sum((trace.value(norm) * trace.value(magnitudes[k]) ** 2 for k, norm in enumerate(squared_norms)),
                      0.0)
        certified = float(np.mean(np.sqrt(squared) <= CONDITION_LIMIT))
    solve, residual = functions["solve"].count(), functions["residual"].count()
    bound_pass = solve + residual + solve_abs.count()
    estimate = (2 + INVERSE_ITERATIONS) * solve + 2 * residual + INVERSE_ITERATIONS * functions["solve_t"].count()
    return certified * estimate > 2 * bound_pass


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
    _conclude(fn, layout, slots, closure, coupled, outputs, x, condition, backward, by_bound=False)
