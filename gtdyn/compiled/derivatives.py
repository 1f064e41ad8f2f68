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

Forward mode alone would carry each link's pose and twist tangents along every joint above it (O(n·depth)
tangents, each through the equations). The pass cuts them instead at every link (``Cuts``): a link's pose and
twist get tangents along their own entries, their definitions (∂ of them along their parent's entries and their
joint) are kept, and the contraction runs the chain rule backwards through those definitions, leaves to root —
reverse mode across the links, inside the same vector lanes. Each tangent then crosses each joint once.

Directions, in the order of the returned columns: ``dq`` over [ξ; q] (a floating base's pose perturbed as
T·Exp(ξ), ξ = [ω; v] in its root link frame; v does not enter, gravity being uniform), ``dv`` over [V_base; q̇],
``dx`` over [the base's given acceleration or wrench; x]. A driven joint (a transmission) follows its drives:
its columns are zero and its drives' columns move it too (derivatives along the couplings); a passive joint's τ
is zero by definition, so its τ column is zero too. On closed loops the code differentiates with respect to
every joint, and ``along_loops`` turns q's and q̇'s columns into the independent joints' (the chain rule through
the loops' tangent).
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from typing import NamedTuple

import numpy as np

from gtdyn import keys
from gtdyn.arguments.query import GIVEN, POSE, TWIST
from gtdyn.compiled import base_inputs, dataflow, trace
from gtdyn.compiled.dual import Cuts, Dual, tangents
from gtdyn.compiled.kinematics import traced_kinematics
from gtdyn.compiled.layout import Layout
from gtdyn.compiled.plan import Plan
from gtdyn.compiled.wrench_inputs import traced_wrenches
from gtdyn.dynamics.graph import dynamics_equations
from gtdyn.kinematics.loop_closure import manifold_tangents
from gtdyn.linear.system import Key
from gtdyn.model.robot import Robot
from gtdyn.problem import Problem
from gtdyn.spatial import skew


class Derivatives(NamedTuple):
    """A compiled solve and its sensitivities: ``value`` is the answer as one vector (the parts of
    ``solver(...)`` concatenated), ``dq``, ``dv``, ``dx`` its derivatives (rows: the answer's entries; columns:
    [ξ; q], [V_base; q̇], [base given; x], the base's six only on a floating base; on closed loops q's and q̇'s
    columns are the independent joints', ``solver.independent_joints``). In batches every array gets
    a leading axis, one entry per state. A named tuple: ``value, dq, dv, dx = solver.derivatives(...)``."""

    value: np.ndarray
    dq: np.ndarray
    dv: np.ndarray
    dx: np.ndarray


def along_loops(robot: Robot, independent: list[int], d: Derivatives, q, v) -> Derivatives:
    """``d`` (over every joint's q and q̇) taken along the loops, over the ``independent`` joints' (indices):
    the whole state moves with them as ``manifold_tangents`` says, so by the chain rule ∂/∂q_I = D_q T + D_q̇
    ∂q̇/∂q_I and ∂/∂q̇_I = D_q̇ T. x and a floating base's columns stay as they are (x is not constrained)."""
    T, dv_dq = manifold_tangents(robot, np.asarray(q, float), np.asarray(v, float), independent)
    b = robot.nv - robot.num_dofs  # a floating base's six columns come first
    return Derivatives(d.value, np.hstack([d.dq[:, :b], d.dq[:, b:] @ T + d.dv[:, b:] @ dv_dq]),
                       np.hstack([d.dv[:, :b], d.dv[:, b:] @ T]), d.dx)


def direction_count(robot: Robot) -> int:
    """Columns of ``dq``, ``dv`` and ``dx`` together: 3 nv."""
    return 3 * robot.nv


def jacobian_index(start: int, outputs: int, nv: int, output: int, direction: int) -> int:
    """Where ∂(output)/∂(direction) goes in ``ws``: ``dq``, ``dv``, ``dx`` one after the other, each a row-major
    (outputs × nv) block, so that each is one contiguous copy out."""
    part, column = divmod(direction, nv)
    return start + (part * outputs + output) * nv + column


LANES = 8  # outputs per vectorized transposed solve: one AVX-512 register, or two AVX2 ones
SHARED_WORK = 0.25  # the lane work groups may add to share their code (``_sharing``)


def derivative_functions(robot: Robot, problem: Problem, gravity, plan: Plan, column: dict, layout: Layout,
                         outputs, functions: dict, transposed, wrench_frames=(), wrench_axes: str = "local") -> dict:
    """``tangents`` and the lane functions it calls: after a solve (``main`` or ``fast``) has factored A, the
    derivative of every output along every direction, into ``ws`` (``jacobian_index``).

    Adjoint form: an output o = eₒᵀ x has ∂o/∂θ_d = eₒᵀ A⁻¹ ∂r_d = λₒᵀ ∂r_d with λₒ = A⁻ᵀ eₒ — one transposed
    solve per output (there are three times as many directions as outputs), ``LANES`` outputs at a time in
    vector registers, then a sparse contraction of the λ's with the non-zero entries of ∂r. λₒ is zero by
    structure outside the rows o depends on (a leg's q̈ on a fixed base: not the other limbs' rows), so the
    outputs are grouped to share their rows, and each group gets its own transposed solve (``transposed(name,
    seeds)``, ``gtdyn.compiled.codegen.solve_transposed``) and contraction, over its rows alone."""
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
    cuts = Cuts()
    kin, _ = traced_kinematics(robot, q, v, inputs.get("R"), inputs.get("twist"), cut=cuts.cut)
    wrench_start = 3 * n + base_inputs.input_count(robot)
    wrenches = [[fn.load(wrench_start + 6 * m + c) for c in range(6)] for m in range(len(wrench_frames))]
    external = traced_wrenches(wrench_frames, wrench_axes, wrenches, kin)
    residual_tangents = _residual_tangents(robot, kin, traced_problem, gravity, external, x, column)
    if len(residual_tangents) != len(plan.rows):
        raise AssertionError("gtdyn.compiled.derivatives: the dual equations do not match the plan's rows")
    # the partial derivatives the contractions sum, those computed at run time kept in ws
    entries = _chain_entries(residual_tangents, cuts.definitions, directions)
    computed = [k for k, (_, _, value) in enumerate(entries) if trace.is_sym(value)]
    entry_start, totals = _allocate(layout, len(computed)), _allocate(layout, len(directions))
    for slot, k in enumerate(computed):
        fn.store(entry_start + slot, entries[k][2])
        entries[k] = (*entries[k][:2], Stored(entry_start + slot))
    sums = _allocate(layout, len(directions) * w)  # the contractions' lane sums, a block of w per direction
    stride, nv = len(directions), robot.nv

    def jac(output: int, direction: int) -> int:
        return jacobian_index(start["jac"], len(outputs), nv, output, direction)

    given_at = {2 * n + j: ("x", j) for j in range(n)}  # an output passed through from input x_j
    seeds = {e: [(index, 1.0)] if source == "unknown" else index for e, (source, index) in enumerate(outputs)
             if source in ("unknown", "combination")}  # λₒ = A⁻ᵀ zₒ, zₒ's non-zero columns and values
    for e, (source, index) in enumerate(outputs):  # passed through or zero: no solve
        if e not in seeds:
            for d, direction in enumerate(directions):
                value = 1.0 if source == "input" and given_at.get(index) == direction else 0.0
                fn.store(jac(e, d), value)
    support = _row_support(seeds, functions["solve_t"], layout)
    groups = _groups(seeds, support, w)
    reached = [functools.reduce(operator.or_, (support[e] for e in group), 0) for group in groups]
    functions_out: dict = {}

    def lanes_pair(suffix: int, columns: list[int]) -> tuple[trace.Lanes, trace.Lanes]:
        scalar = transposed(f"solve_t{suffix}", set(columns))
        rows = sorted(op[1] - start["yt"] for op in scalar.ops if op[0] == "store")
        solve = trace.Lanes(f"solve_t_lanes{suffix}", scalar, w,
                            loads={start["zt"] + c: start["zt_lanes"] + c * w for c in columns},
                            stores={start["yt"] + i: start["yt_lanes"] + i * w for i in rows})
        contract = _contraction(suffix, entries, set(rows), len(plan.rows), stride, totals, sums, layout)
        functions_out.update({solve.name: solve, contract.name: contract})
        return solve, contract

    columns_of = [sorted({c for e in group for c, _ in seeds[e]}) for group in groups]
    shares = _sharing(reached)
    share_columns = [sorted({c for g in members for c in columns_of[g]}) for members in shares]
    pairs = [lanes_pair(k, columns) for k, columns in enumerate(share_columns, start=1)]
    share_of = {g: k for k, members in enumerate(shares) for g in members}
    for g, group in enumerate(groups):
        solve, contract = pairs[share_of[g]]
        fn.comment(f"λ = A⁻ᵀ e for outputs {', '.join(map(str, group))}, then ∂o/∂θ = λᵀ ∂r")
        for c in share_columns[share_of[g]]:
            # every lane of every column the solve reads: lanes and columns this group does not seed get zero
            coefficients = [dict(seeds[e]).get(c, 0.0) for e in group] + [0.0] * (w - len(group))
            for lane, coefficient in enumerate(coefficients):
                fn.store(start["zt_lanes"] + c * w + lane, coefficient)
        fn.call(solve)
        fn.call(contract)
        for lane, e in enumerate(group):
            for d in range(stride):
                fn.store(jac(e, d), fn.load(contract.stores[totals + d] + lane))
    return {**functions_out, "tangents": fn}


def _row_support(seeds: dict, solve_t: trace.Function, layout: Layout) -> dict[int, int]:
    """Per solved output, the rows its λ = A⁻ᵀ zₒ is non-zero on by structure, as a bit mask."""
    start = layout.start
    reaches = dataflow.dependence(solve_t, {start["zt"] + c: c for c in range(layout.unknowns)})
    row_masks = [reaches.get(start["yt"] + i, 0) for i in range(layout.rows)]
    support = {}
    for e, pairs in seeds.items():
        seeded = sum(1 << c for c, _ in pairs)
        support[e] = sum(1 << i for i, mask in enumerate(row_masks) if mask & seeded)
    return support


def _sharing(reached: list[int]) -> list[list[int]]:
    """Which groups share one transposed solve and contraction, over the union of their rows (``reached``: the
    rows each group's λ is non-zero on, bit masks): lists of groups, in order. A group joins the first sharing
    set where running the union's rows for every member adds at most ``SHARED_WORK`` to their own rows' work —
    writing the code once makes it compile faster, running over more rows makes each call longer. A floating
    base's groups reach every row and share; a tree's limbs keep their own."""
    shares: list[list[int]] = []
    for g, rows in enumerate(reached):
        for members in shares:
            union = functools.reduce(operator.or_, (reached[m] for m in members), rows)
            own = sum(reached[m].bit_count() for m in members) + rows.bit_count()
            if (len(members) + 1) * union.bit_count() <= (1 + SHARED_WORK) * own:
                members.append(g)
                break
        else:
            shares.append([g])
    return shares


def _groups(seeds: dict, support: dict[int, int], width: int) -> list[list[int]]:
    """The solved outputs in groups of ``width`` that share rows: each group starts from the first output left
    and takes, one by one, the output adding fewest rows to the rows λ is non-zero on (``support``; a tree's
    limbs apart)."""
    left, groups = list(seeds), []
    while left:
        group = [left.pop(0)]
        union = support[group[0]]
        while left and len(group) < width:
            best = min(left, key=lambda e: (union | support[e]).bit_count())
            left.remove(best)
            group.append(best)
            union |= support[best]
        groups.append(group)
    return groups


def _allocate(layout: Layout, size: int) -> int:
    """``size`` more doubles at the end of ``ws`` (as ``Slots`` takes its slots): their first index."""
    first = layout.size
    layout.size += size
    return first


class Stored(NamedTuple):
    """A partial derivative computed at run time, at ``ws[index]``."""

    index: int


def _chain_entries(residual_tangents: list[dict], definitions: list[dict], directions: list) -> list[tuple]:
    """The non-zero partial derivatives the contractions sum, as (node, column, value). Nodes: the plan's rows,
    then the cuts (``gtdyn.compiled.dual.Cuts``) in the order they were made; columns: the inputs (``directions``'
    order), then the cuts. Cuts no row depends on are left out."""
    rows, column = len(residual_tangents), {d: k for k, d in enumerate(directions)}
    column.update({("cut", k): len(directions) + k for k in range(len(definitions))})
    used = {d[1] for t in residual_tangents for d in t if d[0] == "cut"}
    for k in range(len(definitions) - 1, -1, -1):  # a cut's definition uses earlier cuts only
        if k in used:
            used.update(d[1] for d in definitions[k] if d[0] == "cut")
    entries = [(i, column[d], value) for i, t in enumerate(residual_tangents) for d, value in t.items()]
    entries += [(rows + k, column[d], value) for k in sorted(used) for d, value in definitions[k].items()]
    return [entry for entry in entries if not _is_zero(entry[2])]


def _contraction(group: int, entries: list, rows: set[int], row_count: int, inputs: int, totals: int, sums: int,
                 layout: Layout) -> trace.Lanes:
    """For each input direction d, ∂o/∂θ_d = Σ λ_node ∂node/∂θ_d over the entries, a lane per output o.

    λ of a plan row is the transposed solve's (``yt_lanes``; zero outside ``rows``); λ of a cut is the chain rule
    run backwards, λ_cut = Σ λ_node ∂node/∂cut over the nodes using it, the rows and the later cuts, so the cuts
    are taken last to first. The entries' values are shared by the lanes; the sums go to a lane block per
    direction."""
    w = layout.lanes
    fn = trace.Function(f"contract{group}")
    yt = layout.start["yt"]
    loaded, lam = {}, {}

    def multiplier(node: int):
        """λ of a node for this group's outputs, None where it is zero by structure."""
        if node >= row_count:
            return lam.get(node)
        if node not in rows:
            return None
        if node not in loaded:
            loaded[node] = fn.load(yt + node)
        return loaded[node]

    using: dict[int, list] = {}
    for node, column, value in entries:
        using.setdefault(column, []).append((node, value))

    def summed(column: int):
        total = None
        for node, value in using.get(column, ()):
            if (m := multiplier(node)) is not None:
                term = m * (fn.load(value.index) if isinstance(value, Stored) else value)
                total = term if total is None else total + term
        return total

    for node in range(max((node for node, _, _ in entries), default=-1), row_count - 1, -1):  # the cuts, last first
        if (total := summed(inputs + node - row_count)) is not None:
            lam[node] = total
    for d in range(inputs):
        total = summed(d)
        fn.store(totals + d, 0.0 if total is None else total)
    return trace.Lanes(f"contract_lanes{group}", fn, w,
                       loads={yt + i: layout.start["yt_lanes"] + i * w for i in loaded},
                       stores={totals + d: sums + d * w for d in range(inputs)})


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
