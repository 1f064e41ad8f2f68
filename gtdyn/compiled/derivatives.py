"""Exact derivatives of a compiled solve, by implicit differentiation of the eliminated system.

The compiled plan solves A(θ) x = b(θ), θ the inputs (q, q̇, the given x and a floating base's pose, twist and
given quantity). Along a direction θ_d, the residual r(θ, x) = b(θ) − A(θ) x stays zero, so

    A ∂x/∂θ_d = ∂r/∂θ_d   (at the solution x, with x held fixed in r)

— one more right-hand side for the factorization the plan already holds. There are three times as many
directions as outputs, so the code takes the adjoint form: an output o = eₒᵀ x has ∂o/∂θ_d = λₒᵀ ∂r/∂θ_d with
λₒ = A⁻ᵀ eₒ, one transposed solve (``solve_t``, the same factors) per output, eight outputs at a time in vector
registers, then a sparse contraction with ∂r's non-zero entries. ∂r/∂θ_d is the derivative of eq. 4–7
themselves, written by running the kinematics pass and the equations on dual numbers (``gtdyn.compiled.dual``):
exact, not finite differences, and in every ordering, since the ordering only changes how A is factored.

Directions, in the order of the returned columns: ``dq`` over [ξ; q] (a floating base's pose perturbed as
T·Exp(ξ), ξ = [ω; v] in its root link frame; v does not enter, gravity being uniform), ``dv`` over [V_base; q̇],
``dx`` over [the base's given acceleration or wrench; x]. A driven joint (a transmission) follows its drives:
its columns are zero and its drives' columns move it too (derivatives along the couplings); a passive joint's τ
is zero by definition, so its τ column is zero too.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

from gtdyn import keys
from gtdyn.arguments.query import GIVEN, POSE, TWIST
from gtdyn.compiled import base_inputs, trace
from gtdyn.compiled.dual import Dual, tangents
from gtdyn.compiled.kinematics import traced_kinematics
from gtdyn.compiled.layout import Layout
from gtdyn.compiled.plan import Plan
from gtdyn.compiled.wrench_inputs import traced_wrenches
from gtdyn.dynamics.graph import dynamics_equations
from gtdyn.linear.system import Key
from gtdyn.model.robot import Robot
from gtdyn.problem import Problem
from gtdyn.spatial import skew


class Derivatives(NamedTuple):
    """A compiled solve and its sensitivities: ``value`` is the answer as one vector (the parts of
    ``solver(...)`` concatenated), ``dq``, ``dv``, ``dx`` its derivatives (rows: the answer's entries; columns:
    [ξ; q], [V_base; q̇], [base given; x], the base's six only on a floating base). In batches every array gets
    a leading axis, one entry per state. A named tuple: ``value, dq, dv, dx = solver.derivatives(...)``."""

    value: np.ndarray
    dq: np.ndarray
    dv: np.ndarray
    dx: np.ndarray


def direction_count(robot: Robot) -> int:
    """Columns of ``dq``, ``dv`` and ``dx`` together: 3 nv."""
    return 3 * robot.nv


def split(jacobian: np.ndarray, robot: Robot) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``dq``, ``dv``, ``dx`` from the generated code's (outputs × directions) block (or a stack of them)."""
    m = robot.nv
    return jacobian[..., :m], jacobian[..., m:2 * m], jacobian[..., 2 * m:]


LANES = 8  # outputs per vectorized transposed solve: one AVX-512 register, or two AVX2 ones


def derivative_functions(robot: Robot, problem: Problem, gravity, plan: Plan, column: dict, layout: Layout,
                         outputs, functions: dict, wrench_frames=(), wrench_axes: str = "local") -> dict:
    """``tangents`` and the two lane functions it calls (``solve_t_lanes``, ``contract_lanes``): after a solve
    (``main`` or ``fast``) has factored A, the derivative of every output along every direction, into ``ws``
    from ``layout.start["jac"]`` (row-major: output by output).

    Adjoint form: an output o = eₒᵀ x has ∂o/∂θ_d = eₒᵀ A⁻¹ ∂r_d = λₒᵀ ∂r_d with λₒ = A⁻ᵀ eₒ — one transposed
    solve per output (there are three times as many directions as outputs), ``LANES`` outputs at a time in
    vector registers, then a sparse contraction of the λ's with the non-zero entries of ∂r."""
    fn = trace.Function("tangents")
    start, n, w = layout.start, robot.num_dofs, layout.lanes
    # the solution x of A x = b, all of it (the outputs hold only part), as the solve before kept it
    x = [fn.load(start["solution"] + k) for k in range(len(column))]
    fn.comment("the inputs as dual numbers: each carries its derivative along its own direction")
    inputs, directions = _dual_inputs(fn, robot, problem)
    q, v, given = inputs["q"], inputs["v"], inputs["x"]
    traced_problem = dataclasses.replace(
        problem, known_qdd={j: given[j - 1] for j in problem.known_qdd},
        known_tau={j: 0.0 if not robot.joints[j - 1].actuated else given[j - 1] for j in problem.known_tau})
    if robot.floating_base:
        traced_problem = dataclasses.replace(traced_problem, **{
            "base_accel" if problem.kind == "inverse" else "base_wrench": inputs["base_given"]})
    fn.comment("kinematics and eq. 5–7 on dual numbers: ∂r/∂θ with r = b − A x at the solution")
    kin, _ = traced_kinematics(robot, q, v, inputs.get("R"), inputs.get("twist"))
    wrench_start = 3 * n + base_inputs.input_count(robot)
    wrenches = [[fn.load(wrench_start + 6 * m + c) for c in range(6)] for m in range(len(wrench_frames))]
    external = traced_wrenches(wrench_frames, wrench_axes, wrenches, kin)
    residual_tangents = _residual_tangents(robot, kin, traced_problem, gravity, external, x, column)
    if len(residual_tangents) != len(plan.rows):
        raise AssertionError("gtdyn.compiled.derivatives: the dual equations do not match the plan's rows")
    # the non-zero entries of ∂r, kept in ws for the contraction
    entries = [(i, d, value) for d, direction in enumerate(directions) for i, t in enumerate(residual_tangents)
               if not _is_zero(value := t.get(direction, 0.0))]
    entry_start, accumulated = _allocate(layout, len(entries)), _allocate(layout, len(directions))
    for k, (_, _, value) in enumerate(entries):
        fn.store(entry_start + k, value)
    solve_t_lanes = trace.Lanes(
        "solve_t_lanes", functions["solve_t"], w,
        loads={start["zt"] + k: start["zt_lanes"] + k * w for k in range(layout.unknowns)},
        stores={start["yt"] + i: start["yt_lanes"] + i * w for i in range(layout.rows)})
    contract_lanes = _contraction(entries, len(directions), entry_start, accumulated, layout)
    given_at = {2 * n + j: ("x", j) for j in range(n)}  # an output passed through from input x_j
    solved = [e for e, (source, _) in enumerate(outputs) if source in ("unknown", "combination")]
    stride = len(directions)
    for e, (source, index) in enumerate(outputs):  # passed through or zero: no solve
        if e not in solved:
            for d, direction in enumerate(directions):
                value = 1.0 if source == "input" and given_at.get(index) == direction else 0.0
                fn.store(start["jac"] + e * stride + d, value)
    written: set[int] = set()  # entries of zt_lanes left non-zero (the workspace starts at zero)
    for first in range(0, len(solved), w):
        group = solved[first:first + w]
        fn.comment(f"λ = A⁻ᵀ e for outputs {', '.join(map(str, group))}, then ∂o/∂θ = λᵀ ∂r")
        selectors = {}
        for lane, e in enumerate(group):
            source, index = outputs[e]
            for c, coefficient in ([(index, 1.0)] if source == "unknown" else index):
                selectors[start["zt_lanes"] + c * w + lane] = coefficient
        for index in sorted(written - set(selectors)):
            fn.store(index, 0.0)
        for index, value in selectors.items():
            fn.store(index, value)
        written = set(selectors)
        fn.call(solve_t_lanes)
        fn.call(contract_lanes)
        for lane, e in enumerate(group):
            for d in range(stride):
                fn.store(start["jac"] + e * stride + d, fn.load(contract_lanes.stores[accumulated + d] + lane))
    for index in sorted(written):  # back to zero for the next call
        fn.store(index, 0.0)
    return {"solve_t_lanes": solve_t_lanes, "contract_lanes": contract_lanes, "tangents": fn}


def _allocate(layout: Layout, size: int) -> int:
    """``size`` more doubles at the end of ``ws`` (as ``Slots`` takes its slots): their first index."""
    first = layout.size
    layout.size += size
    return first


def _contraction(entries: list, directions: int, entry_start: int, accumulated: int, layout: Layout) -> trace.Lanes:
    """``contract_lanes``: for each direction d, Σᵢ λ[i] ∂r_i/∂θ_d over ∂r's non-zero entries, λ from ``yt_lanes``
    (a lane per output), the entries shared, the sums into a lane block per direction."""
    w = layout.lanes
    fn = trace.Function("contract")
    yt = layout.start["yt"]
    lam = {}
    totals: list = [0.0] * directions
    for k, (i, d, _) in sorted(enumerate(entries), key=lambda item: item[1][:2]):  # row by row: each λᵢ once
        if i not in lam:
            lam[i] = fn.load(yt + i)
        totals[d] = totals[d] + lam[i] * fn.load(entry_start + k)
    for d, total in enumerate(totals):
        fn.store(accumulated + d, total)
    block = _allocate(layout, directions * w)
    return trace.Lanes("contract_lanes", fn, w, loads={yt + i: layout.start["yt_lanes"] + i * w for i in lam},
                       stores={accumulated + d: block + d * w for d in range(directions)})


def _is_zero(x) -> bool:
    return not trace.is_sym(x) and x == 0.0


def entry(name: str, solve: trace.Function, tangents: trace.Function) -> trace.Function:
    """``dmain`` / ``dfast``: the checked or unchecked solve, then its derivatives."""
    fn = trace.Function(name)
    fn.call(solve)
    fn.call(tangents)
    return fn


def _dual_inputs(fn: trace.Function, robot: Robot, problem: Problem) -> tuple[dict, list]:
    """The inputs loaded as duals, and the directions in column order."""
    n = robot.num_dofs
    directions: list[tuple[str, int]] = []
    out: dict = {}

    def seeded(kind: str, count: int, first: int) -> list:
        values = []
        for k in range(count):
            directions.append((kind, k))
            values.append(Dual.seed(fn.load(first + k), (kind, k)))
        return values

    floating = robot.floating_base
    base = 3 * n
    if floating:  # ξ: R → R Exp(ω), ∂R/∂ω_k = R [e_k]×; ξ's linear part moves nothing the dynamics sees
        R = np.array([fn.load(base + POSE + i) for i in base_inputs.ROTATION], dtype=object).reshape(3, 3)
        derivative = [R @ skew(np.eye(3)[k]).astype(object) for k in range(3)]
        directions += [("xi", k) for k in range(6)]
        out["R"] = np.array([[Dual(R[a, b], {("xi", k): derivative[k][a, b] for k in range(3)
                                             if trace.is_sym(derivative[k][a, b]) or derivative[k][a, b] != 0})
                              for b in range(3)] for a in range(3)], dtype=object)
    out["q"] = _following(robot, seeded("q", n, 0), True)
    if floating:
        out["twist"] = np.array(seeded("twist", 6, base + TWIST), dtype=object)
    out["v"] = _following(robot, seeded("v", n, n), False)
    if floating:
        out["base_given"] = np.array(seeded("base_given", 6, base + GIVEN), dtype=object)
    x = seeded("x", n, 2 * n)
    out["x"] = _following(robot, x, False) if problem.kind == "inverse" else x
    return out, directions


def _following(robot: Robot, values: list, position: bool) -> list:
    """A driven joint's dual follows its drives: its own direction dropped, the drives' tangents taken."""
    values = list(values)
    for t in robot.transmissions:
        followed = t.follow(values, position)
        values[t.dependent - 1] = Dual(values[t.dependent - 1].v, tangents(followed))
    return values


def _residual_tangents(robot: Robot, kin, problem: Problem, gravity, external, x: list, column: dict) -> list[dict]:
    """Per row of the plan (``traced_rows`` order), the tangents of r = b − A x, x held at the solution."""
    out = []
    for eq, roles, _ in dynamics_equations(robot, kin, problem, gravity, external):
        r = np.asarray(eq.rhs, dtype=object)
        for name, coefficient in eq.coefficients.items():
            role = roles[name]
            coefficient = np.asarray(coefficient, dtype=object).reshape(len(r), -1)
            if isinstance(role, Key):
                key = int(role)
                values = np.array([x[column[key, c]] if (key, c) in column else 0.0 for c in range(keys.dim(key))],
                                  dtype=object)
            else:
                values = np.atleast_1d(np.asarray(role, dtype=object))
            r = r - coefficient @ values
        out += [dict(tangents(entry)) for entry in r]
    return out
