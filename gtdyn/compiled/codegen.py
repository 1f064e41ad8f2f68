"""From a robot, a problem and an ordering to straight-line code: up to ten functions over one array ``ws``.

* ``factor``: forward kinematics, the eq. 5–7 rows and the elimination (multipliers and pivot rows);
* ``solve``: the elimination's row operations on a right-hand side, then back-substitution — for ``rnea``
  this *is* Algorithm 1 of paper 001: V̇ root→leaf, F leaf→root, τ = Sᵀ F;
* ``solve_t``: the same factorization transposed, Aᵀ y = z;
* ``residual``: r = b − A x with the original rows;
* ``solve_abs``: the solve's steps on magnitudes from a right-hand side of ones, Ŝ1 ≥ |A⁻¹| 1 entry by entry;
* ``solve_t_abs``: ``solve_t``'s steps on magnitudes, Ŝᵀ z ≥ |A⁻¹|ᵀ z, for Schur's bound;
* ``fast``: ``factor`` and ``solve`` only, for ``checks=False``;
* ``main``: x = A⁻¹ b, the backward error ‖b − A x‖ / (‖A‖_F ‖x‖ + ‖b‖) and the bound u = ‖D Ŝ1‖₂ ≥
  1/σ_min(A D⁻¹) ≥ the reference path's estimate κ (``gtdyn.compiled.certificate.checked_call``), the loop-closure gaps
  — and a status: 1 when the answer is certified (u ≤ ``BOUND_LIMIT``, u · backward error ≤
  ``ERROR_BOUND``, every loop closed, every input finite); where u cannot certify, ``schur`` or ``exact``:
* ``schur``: Schur's bound u_S = √(max_j (Ŝᵀ D² Ŝ1)_j) ≤ u in its place (plans whose u is loose on some states:
  deep trees); where that cannot certify either, ``exact``:
* ``exact``: one step of iterative refinement, and κ by the reference path's inverse iteration (same start
  vector, same three steps) in place of the bound; its status 0 means the caller must ask the reference path,
  which then answers, warns or raises exactly as it always does.

A plan keeps the bounds that pay at its build's sample states (``certificate_cost.cheapest_way``): ``main`` may be the
estimate alone, without ``solve_abs``, ``solve_t_abs``, ``schur`` or ``exact``.

Layout of ``ws``: inputs q, q̇, x (3n), a floating base's pose, twist and given acceleration or wrench, and the
external wrenches on the compiled frames (``gtdyn.compiled.wrench_inputs``); outputs (a
floating base's 6, n or 2n for hybrid, the contacts' forces) then status, κ and backward error, the vector
regions of the functions, then slots for values one function computes and another reads.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from gtdyn import keys
from gtdyn.arguments.query import GIVEN, POSE, TWIST
from gtdyn.compiled import base_inputs, trace
from gtdyn.compiled.certificate import ITERATION, checked_call
from gtdyn.compiled.derivatives import LANES, derivative_functions, direction_count, entry
from gtdyn.compiled.guards import unless_guarded
from gtdyn.compiled.kinematics import traced_kinematics
from gtdyn.compiled.layout import Layout, Slots, store_outputs
from gtdyn.compiled.plan import Plan, eliminate, off_pivot, traced_rows
from gtdyn.compiled.root_block import inverse_magnitudes, root_block, times
from gtdyn.compiled.validity import coupling_ok, finite, valid_inputs
from gtdyn.compiled.wrench_inputs import traced_wrenches
from gtdyn.model import base_frame
from gtdyn.model.robot import Robot
from gtdyn.problem import Problem, answer_layout

_NO_PIVOT = float("nan")  # a structurally singular column: its NaN fails the certificate, the reference path raises



@dataclass
class Program:
    """The generated functions (``trace.Function``), the layout of ``ws`` and the plan they came from."""

    functions: dict[str, trace.Function]
    layout: Layout
    plan: Plan
    outputs: list[tuple]  # per output entry: ("unknown", column) / ("input", ws index) / ("zero", 0) /
    # ("combination", [(column, coefficient), …]) — a floating base's quantity moved to its root link frame

    @property
    def rare(self) -> frozenset:
        """The functions only calls that no bound certifies run: ``exact`` and its inverse iteration
        (``native.compile_module`` compiles them quickly; the solves they call stay optimized)."""
        return frozenset({"exact", ITERATION} & set(self.functions))


def _identifier(text: str, fallback: str) -> str:
    return text if text.isidentifier() else fallback


@trace.tracing
def generate(robot: Robot, problem: Problem, order: list[int], gravity, samples: dict[str, np.ndarray],
             wrench_frames=(), wrench_axes: str = "local", derivatives: bool = False, more=None,
             at_rest: bool = False, reference_pivots: bool = False) -> Program:
    """The functions for ``problem`` (its known values being placeholders: which joints are known is what
    matters) eliminated in ``order``. ``samples``: "q", "v", "x" arrays of shape (n, K) at K states (and the
    base's, and "wrench" when external wrenches on ``wrench_frames`` are inputs). ``derivatives``: also
    ``tangents`` and the entries ``dmain``/``dfast`` (``gtdyn.compiled.derivatives``). ``more(plan, column,
    layout, slots, functions)``: more functions on the same factors (``gtdyn.compiled.operational``). ``at_rest``:
    q̇, the given x, a floating base's twist and given quantity and the external wrenches are zero constants, not
    inputs (the code of a matrix of q alone, ``gtdyn.compiled.unit_solves``, whose unit solves push the wrenches):
    the right-hand side folds away from ``factor``.
    ``reference_pivots``: pivots scored at the reference configuration too (``gtdyn.compiled.plan``)."""
    n = robot.num_dofs
    factor = trace.Function("factor", samples["q"].shape[1])
    q = [factor.load(j, samples["q"][j], _identifier(keys.pretty(keys.joint_angle_key(j + 1)), f"q{j + 1}"))
         for j in range(n)]
    v = [0.0] * n if at_rest else [
        factor.load(n + j, samples["v"][j], _identifier(keys.pretty(keys.joint_vel_key(j + 1)), f"v{j + 1}"))
        for j in range(n)]
    inputs = {}

    def given(j: int, key: int):
        if at_rest:
            return 0.0
        if j not in inputs:
            inputs[j] = factor.load(2 * n + j - 1, samples["x"][j - 1], _identifier(keys.pretty(key), f"x{j}"))
        return inputs[j]

    traced_problem = dataclasses.replace(
        problem, known_qdd={j: given(j, keys.joint_accel_key(j)) for j in problem.known_qdd},
        known_tau={j: 0.0 if _passive(robot, j) else given(j, keys.torque_key(j)) for j in problem.known_tau})
    base_rotation = base_twist = None
    if robot.floating_base:  # inputs after q, q̇, x: the base's pose (row-major), twist and given acceleration
        first = 3 * n
        base_rotation = np.array([factor.load(first + POSE + i, samples["R"][k], f"R{k // 3 + 1}{k % 3 + 1}")
                                  for k, i in enumerate(base_inputs.ROTATION)], dtype=object).reshape(3, 3)
        base_twist = np.zeros(6) if at_rest else np.array(
            [factor.load(first + TWIST + k, samples["twist"][k], f"V0_{k}") for k in range(6)], dtype=object)
        # the acceleration (inverse) or the wrench (forward, hybrid)
        given = np.zeros(6) if at_rest else np.array(
            [factor.load(first + GIVEN + k, samples["given"][k], f"base_given_{k}") for k in range(6)], dtype=object)
        traced_problem = dataclasses.replace(traced_problem, **{"base_accel" if problem.kind == "inverse" else
                                                                "base_wrench": given})
    first = 3 * n + base_inputs.input_count(robot)  # external wrenches after the base's inputs, six per frame
    wrenches = [[0.0 if at_rest else factor.load(first + 6 * m + c, samples["wrench"][6 * m + c], f"F_ext{m + 1}_{c}")
                 for c in range(6)] for m in range(len(wrench_frames))]  # at rest: pushed by unit solves alone
    coupled = coupling_ok(robot, q, v, traced_problem)
    factor.comment("forward kinematics: poses and twists, root → leaves")
    kin, closure = traced_kinematics(robot, q, v, base_rotation, base_twist)
    if wrench_frames:
        factor.comment(f"external wrenches ({wrench_axes.replace('_', '-')} axes) in their bodies' CoM frames")
    external = traced_wrenches(wrench_frames, wrench_axes, wrenches, kin)
    factor.comment("the rows of eq. 5–7 at this state")
    rows = traced_rows(robot, kin, traced_problem, gravity, external)
    plan = eliminate_with_comments(factor, rows, order, reference_pivots)
    unknowns = plan.unknowns
    column = {}
    for key in unknowns:
        for c in range(keys.dim(key)):
            column[key, c] = len(column)
    outputs = output_sources(robot, problem, column)
    layout = Layout(n, len(outputs), len(rows), len(column), base_inputs.input_count(robot), 6 * len(wrench_frames),
                    direction_count(robot) if derivatives else 0, LANES if derivatives else 0,
                    tuple(j.index - 1 for j in robot.joints if j.type == "revolute"),
                    ranges={j.index - 1: (float(j.lower), float(j.upper)) for j in robot.joints
                            if j.type == "prismatic" and np.isfinite(j.lower) and np.isfinite(j.upper)})
    slots = Slots(layout)
    functions = {"factor": factor}
    functions["solve"] = _solve(plan, column, layout, slots)
    functions["solve_t"] = solve_transposed(plan, column, layout, slots)
    functions["solve_abs"] = _solve(plan, column, layout, slots, absolute=True)
    functions["residual"] = _residual(plan, column, layout, slots)
    functions.update(checked_call(functions, plan, column, layout, slots, closure, outputs, coupled,
                                  lambda z: solve_transposed(plan, column, layout, slots, "solve_t_abs",
                                                             magnitudes_of=z)))
    functions.update(_fast(functions, plan, column, layout, slots, outputs, coupled, at_rest))
    if derivatives:
        def transposed(name: str, seeds: set[int]) -> trace.Function:
            return solve_transposed(plan, column, layout, slots, name, seeds)

        functions.update(derivative_functions(robot, problem, gravity, plan, column, layout, outputs, functions,
                                              transposed, wrench_frames, wrench_axes))
        for name, solve in (("dmain", "main"), ("dfast", "fast")):
            functions[name] = entry(name, functions[solve], functions["tangents"])
    if more is not None:
        functions.update(more(plan, column, layout, slots, functions))
    return Program(functions, layout, plan, outputs)


def eliminate_with_comments(factor: trace.Function, rows, order, reference: bool = False) -> Plan:
    factor.comment(f"Gaussian elimination in the ordering {' '.join(keys.label(k) for k in order)}")

    def step(x: int, labels: list[str]) -> None:
        equations = list(dict.fromkeys(label.split(", row ")[0] for label in labels))
        factor.comment(f"eliminate {keys.pretty(x)} from {len(labels)} rows: {'; '.join(equations)}")

    return eliminate(rows, order, step, reference)


def output_sources(robot: Robot, problem: Problem, column: dict) -> list[tuple]:
    """Where each output entry comes from, part by part of ``answer_layout``: a floating base's acceleration (when
    free) or wrench, in its root link frame; q̈ then τ, by joint; then each contact's force or wrench."""
    n = robot.num_dofs
    out = []
    for name, _ in answer_layout(n, robot.floating_base, problem):
        if name in ("base_accel", "base_wrench"):
            if name == "base_accel":
                key, M = keys.twist_accel_key(0), base_frame.twist_to_link(robot)
            elif problem.base_wrench is None:
                key, M = keys.wrench_key(0), base_frame.wrench_to_link(robot)
            else:  # both given (contacts carry the robot): the base wrench is zero
                key, M = None, None
            for r in range(6):
                out.append(("zero", 0) if key is None else
                           ("combination", [(column[key, c], float(M[r, c])) for c in range(6) if M[r, c] != 0.0]))
        elif name in ("qdd", "tau"):
            for j in range(1, n + 1):
                key = (keys.joint_accel_key if name == "qdd" else keys.torque_key)(j)
                if (key, 0) in column:
                    out.append(("unknown", column[key, 0]))
                elif name == "tau" and _passive(robot, j):
                    out.append(("zero", 0))
                else:
                    out.append(("input", 2 * n + j - 1))
        else:
            for contact in problem.contacts:
                key = keys.contact_key(contact.number, contact.dim)
                out += [("unknown", column[key, c]) for c in range(contact.dim)]
    return out


def _passive(robot: Robot, j: int) -> bool:
    return not robot.joints[j - 1].actuated


def _solve(plan: Plan, column: dict, layout: Layout, slots: Slots, absolute: bool = False) -> trace.Function:
    """x = S b, S the left inverse of A that the elimination applies: its row operations on b, then
    back-substitution. ``absolute``: "solve_abs", the same steps on magnitudes (|l|, |c|, |pivot|, sums) from
    b = 1, which give Ŝ1 ≥ |S| 1 entry by entry (each step's triangle inequality, step by step): the
    certificate's bound on the condition (``gtdyn.compiled.certificate``)."""
    fn = trace.Function("solve_abs" if absolute else "solve")
    if absolute:
        t = [1.0] * len(plan.rows)
    else:
        t = [fn.load(layout.start["rhs"] + i, name=f"rhs{i}") for i in range(len(plan.rows))]

    def coefficient_of(value):
        return trace.fabs(slots.use(fn, value)) if absolute else slots.use(fn, value)

    def minus(a, b):
        return a + b if absolute else a - b

    block = root_block(plan) if absolute else None  # a floating base's block, taken whole
    skipped = block.internal if block is not None else frozenset()
    if plan.tape:
        fn.comment("the elimination's row operations on the right-hand side")
    for step, (i, p, multiplier) in enumerate(plan.tape):
        if step not in skipped:
            t[i] = minus(t[i], coefficient_of(multiplier) * t[p])
    fn.comment("back-substitution, in the reverse of the elimination ordering")
    x: dict[tuple[int, int], object] = {}
    if block is not None:
        fn.comment("the floating base's block whole: |B⁻¹| times its rows' magnitudes (gtdyn.compiled.root_block)")
        inverse = inverse_magnitudes(plan, block, lambda value: slots.use(fn, value))
        for (key, c, _), value in zip(block.pivots, times(inverse, [t[p] for _, _, p in block.pivots])):
            x[key, c] = value
    sources: dict[int, list[str]] = {}
    for key, _, p in plan.pivots:
        base = plan.rows[p].label.split(", row ")[0]
        if base not in sources.setdefault(key, []):
            sources[key].append(base)
    current = None
    for key, c, p in reversed(plan.pivots):
        if (key, c) in x:  # the root block's, above
            continue
        if key != current:
            current = key
            fn.comment(f"{keys.pretty(key)} ← {'; '.join(sources[key])}")
        row = plan.work[p]
        total = t[p]
        for other, coefficient in off_pivot(row, key, c):
            total = minus(total, coefficient_of(coefficient) * x.get(other, _NO_PIVOT))
        value = trace.div(total, coefficient_of(row[key][c]))
        if trace.is_sym(value) and (value.id in fn.names or fn.ops[value.id][0] == "load"):
            value = fn.emit("copy", value)  # a line of its own, so the code names every unknown it solves for
        label = keys.pretty(key) + (f"_{c}" if keys.dim(key) > 1 else "")
        fn.label(value, _identifier(label, keys.label(key) + f"_{c}"))
        x[key, c] = value
    for (key, c), col in column.items():
        fn.store(layout.start["sol"] + col, x.get((key, c), _NO_PIVOT))
    return fn


def solve_transposed(plan: Plan, column: dict, layout: Layout, slots: Slots, name: str = "solve_t",
                     seeds: set[int] | None = None, magnitudes_of=None) -> trace.Function:
    """Aᵀ y = z: with M A = U (M the row operations), y = Mᵀ U⁻ᵀ z. With ``seeds`` (columns), the other entries
    of z are known zeros: the code is only what those right-hand sides need, and only the entries of y that are
    not zero by structure are stored (the derivatives' λ = A⁻ᵀ e, ``gtdyn.compiled.derivatives``).

    ``magnitudes_of`` (z's values at the build's sample states, z ≥ 0): the same steps on magnitudes (|l|, |c|,
    |pivot|, sums), Ŝᵀz ≥ |S|ᵀ z entry by entry for the Ŝ of ``solve_abs`` — the certificate's second pass
    (``gtdyn.compiled.certificate``)."""
    absolute = magnitudes_of is not None
    fn = trace.Function(name)
    z = {kc: fn.load(layout.start["zt"] + col, magnitudes_of[col] if absolute else None)
         if seeds is None or col in seeds else 0.0 for kc, col in column.items()}

    def coefficient_of(value):
        return trace.fabs(slots.use(fn, value)) if absolute else slots.use(fn, value)

    def minus(a, b):
        return a + b if absolute else a - b

    block = root_block(plan) if absolute else None  # a floating base's block, taken whole: |B⁻¹|ᵀ
    in_block, skipped = (block.rows, block.internal) if block is not None else (frozenset(), frozenset())
    w = [0.0] * len(plan.rows)
    earlier: dict[tuple[int, int], list[tuple[int, object]]] = {}

    def gathered(key, c):
        total = z[key, c]
        for q, coefficient in earlier.get((key, c), []):
            total = minus(total, coefficient_of(coefficient) * w[q])
        return total

    for key, c, p in plan.pivots:
        if p in in_block:
            continue
        w[p] = trace.div(gathered(key, c), coefficient_of(plan.work[p][key][c]))
        for other, coefficient in off_pivot(plan.work[p], key, c):
            earlier.setdefault(other, []).append((p, coefficient))
    if block is not None:
        inverse = inverse_magnitudes(plan, block, lambda value: slots.use(fn, value))
        for (_, _, p), value in zip(block.pivots, times(inverse.T, [gathered(key, c) for key, c, _ in block.pivots])):
            w[p] = value
    for step in range(len(plan.tape) - 1, -1, -1):
        i, p, multiplier = plan.tape[step]
        if step not in skipped:
            w[p] = minus(w[p], coefficient_of(multiplier) * w[i])
    for i, value in enumerate(w):
        if seeds is None or trace.is_sym(value):
            fn.store(layout.start["yt"] + i, value)
    return fn


def _residual(plan: Plan, column: dict, layout: Layout, slots: Slots) -> trace.Function:
    fn = trace.Function("residual")
    x = {kc: fn.load(layout.start["xr"] + col) for kc, col in column.items()}
    for i, row in enumerate(plan.rows):
        total = slots.use(fn, row.rhs)
        for key, block in row.coef.items():
            for k, coefficient in enumerate(block):
                total = total - slots.use(fn, coefficient) * x[key, k]
        fn.store(layout.start["res"] + i, total)
    return fn


def _fast(functions, plan: Plan, column: dict, layout: Layout, slots: Slots, outputs, coupled=1.0,
          at_rest: bool = False) -> dict[str, trace.Function]:
    """``checks=False``: factor and solve only — Pinocchio's contract, an answer without a verdict. A non-finite
    answer, or inputs that break a transmission, still get status 0 (and so the reference path's error). At rest
    (``generate``'s ``at_rest``: a matrix of q alone, whose code solves its own columns) the answer is zero: the
    factors alone, and the inputs' verdict."""
    main = trace.Function("fast")
    start = layout.start
    main.call(functions["factor"])
    fn = unless_guarded(main, plan, layout, slots)
    x = []
    if not at_rest:
        for i, row in enumerate(plan.rows):
            fn.store(start["rhs"] + i, slots.use(fn, row.rhs))
        fn.call(functions["solve"])
        x = [fn.load(start["sol"] + k) for k in range(len(column))]
        store_outputs(fn, layout, outputs, x)
    fn.store(layout.status, finite(x) * valid_inputs(fn, layout) * slots.use(fn, coupled))
    return {**({fn.name: fn} if fn is not main else {}), "fast": main}
