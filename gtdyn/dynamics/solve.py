"""Inverse, forward and hybrid dynamics: one linear factor graph, eliminated in a chosen ordering.

Each call computes the kinematics (poses, twists) from q and q̇, builds the linear dynamics graph with the
given quantities known, eliminates it into a ``gtsam.GaussianBayesNet`` and back-substitutes.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Mapping

import gtsam
import numpy as np

from gtdyn import keys
from gtdyn.arguments import (MAX_WRENCH, finite_vector, gravity_vector, joint_vector, pose_argument,
                             robot_argument)
from gtdyn.dynamics.graph import dynamics_graph
from gtdyn.dynamics.result import DynamicsResult, assemble_result
from gtdyn.equations import GRAVITY, contact_equation, twist_accel_equation
from gtdyn.errors import ArgumentError, IndeterminateSystemError, LoopClosureError
from gtdyn.kinematics.forward import KinematicState, forward_kinematics
from gtdyn.kinematics.loop_closure import acceleration_residuals
from gtdyn.kinematics.loops import CLOSURE_TOLERANCE, check_closed, loop_plane_normal
from gtdyn.linear.elimination import METHODS, eliminate, squared_column_norms
from gtdyn.model.robot import Robot
from gtdyn.orderings import resolve_ordering, structural
from gtdyn.problem import (Problem, build_problem, forward_problem, hybrid_problem, inverse_problem, place_contacts,
                           with_base)
from gtdyn.spatial import Ad



def inverse_dynamics(robot: Robot, q, v, qdd, *, base_pose=None, base_twist=None, base_accel=None, contacts=None,
                     gravity=GRAVITY, external_wrenches=None, ordering=None, elimination="qr", planar=None) -> DynamicsResult:
    """Torques τ that produce joint accelerations ``qdd`` at state (q, v).

    ``external_wrenches`` maps a link (or merged frame) name to the wrench [m; f] its environment applies
    to it, expressed in that link's frame. ``ordering`` is a strategy name, a list of labels/keys or a callable.
    ``elimination`` is "qr" (Householder QR of the exact equations: accurate in every ordering) or
    "constrained" (GTSAM's elimination of Constrained factors, as GTDynamics does).

    Closed loops: q, v and qdd give every joint (loop-closing ones too) and must close every loop (see
    ``gtdyn.close_loops``); passive joints have τ = 0 and actuated ones get the τ that produce the motion —
    the least-norm τ if the loop is redundantly actuated. ``planar`` (None: detect per loop; True: require;
    False: never) adds the planar factor to planar loops.

    A floating base (``robot.floating_base``) is at ``base_pose`` (a gtsam.Pose3 or 4×4 matrix, world ← root
    link frame; identity if None) with twist ``base_twist`` ([ω; v] of the root link frame, in that frame) and
    accelerates by ``base_accel`` ([ω̇; v̇], the derivative of that twist; zero if None): ``r.base_wrench`` is
    the wrench [m; f] (root link frame) its environment must apply to produce the motion.

    ``contacts``: a list of ``gtdyn.Contact``; their forces are solved for (``r.contact_wrenches``) and carry
    the robot instead of a base wrench. The motion must keep every contact (else ArgumentError naming it);
    when more contacts touch than the motion determines (a quadruped on four feet) the forces are the
    least-norm ones, and ``r.least_norm`` names them.
    """
    robot = robot_argument(robot)
    return solve_problem(robot, q, v, _asked(robot, inverse_problem(robot, qdd), base_accel, contacts), gravity,
                         external_wrenches, ordering, elimination, planar, base_pose, base_twist)


def forward_dynamics(robot: Robot, q, v, tau, *, base_pose=None, base_twist=None, contacts=None, gravity=GRAVITY,
                     external_wrenches=None, ordering=None, elimination="qr", planar=None) -> DynamicsResult:
    """Joint accelerations q̈ produced by torques ``tau`` at state (q, v). Arguments as ``inverse_dynamics``;
    ``tau`` is 0 at passive joints. A floating base moves freely (no wrench on it but ``external_wrenches``):
    ``r.base_accel`` is its acceleration. With ``contacts`` this is constrained dynamics: the accelerations
    that keep every contact, and the contact forces that make them."""
    robot = robot_argument(robot)
    return solve_problem(robot, q, v, _asked(robot, forward_problem(robot, tau), None, contacts), gravity,
                         external_wrenches, ordering, elimination, planar, base_pose, base_twist)


def hybrid_dynamics(robot: Robot, q, v, qdd: Mapping[str, float], tau: Mapping[str, float], *, base_pose=None,
                    base_twist=None, base_accel=None, contacts=None, gravity=GRAVITY, external_wrenches=None,
                    ordering=None, elimination="qr", planar=None) -> DynamicsResult:
    """Given q̈ at some joints and τ at the others (dicts by joint name), solve for the rest.

    Every actuated joint must appear in exactly one of ``qdd`` and ``tau``; passive joints have τ = 0 and
    their q̈ is solved for. A floating base is free (``r.base_accel`` solved for) unless ``base_accel`` is
    given (then ``r.base_wrench`` is).
    """
    robot = robot_argument(robot)
    return solve_problem(robot, q, v, _asked(robot, hybrid_problem(robot, qdd, tau), base_accel, contacts), gravity,
                         external_wrenches, ordering, elimination, planar, base_pose, base_twist)


def solve(robot: Robot, kind: str, q, v, *, qdd=None, tau=None, base_pose=None, base_twist=None, base_accel=None,
          contacts=None, gravity=GRAVITY, external_wrenches=None, ordering=None, elimination="qr",
          planar=None) -> DynamicsResult:
    """One entry for the three problems: ``kind`` "inverse" (``qdd``: every joint), "forward" (``tau``: every
    joint) or "hybrid" (``qdd`` and ``tau``: dicts by joint name). Other arguments as ``inverse_dynamics``."""
    robot = robot_argument(robot)
    return solve_problem(robot, q, v, _asked(robot, build_problem(robot, kind, qdd, tau), base_accel, contacts),
                         gravity, external_wrenches, ordering, elimination, planar, base_pose, base_twist)


def _asked(robot: Robot, problem: Problem, base_accel, contacts) -> Problem:
    """The joints' part of a problem completed with its contacts and its base."""
    return with_base(robot, dataclasses.replace(problem, contacts=place_contacts(robot, contacts)), base_accel)


# ----------------------------------------------------------------------------------------------------


# ‖Ax − b‖ / (‖A‖ ‖x‖ + ‖b‖) above this: the given data are inconsistent. A consistent system solved by QR
# leaves ~1e-15; states that close loops to close_loops' accuracy leave < 1e-10.
BACKWARD_ERROR_TOLERANCE = 1e-8


def solve_problem(robot: Robot, q, v, problem: Problem, gravity=GRAVITY, external_wrenches=None, ordering=None,
                  elimination="qr", planar=None, base_pose=None, base_twist=None) -> DynamicsResult:
    """The common path of the three problems: check the state, build the graph of ``problem``, eliminate it in
    ``ordering``, check the verdicts (determinacy, consistency, overflow) and assemble the result."""
    robot = robot_argument(robot)
    if not isinstance(elimination, str) or elimination not in METHODS:  # (an array's `in` is elementwise)
        raise ArgumentError(f"elimination: {elimination!r} is not one of {', '.join(METHODS)}")
    if not (planar is None or isinstance(planar, (bool, np.bool_))):
        raise ArgumentError(f"planar: expected None, True or False, got {planar!r}")
    q = joint_vector(robot, "q", q)
    v = joint_vector(robot, "v", v)
    gravity = gravity_vector(gravity)
    wrenches_com = _external_wrenches(robot, external_wrenches)
    base_pose, base_twist = _base_state(robot, base_pose, base_twist)
    with np.errstate(all="ignore"):  # overflow becomes non-finite numbers, caught by name below
        kin = forward_kinematics(robot, q, v, base_pose, base_twist)
    problem = with_loop_factors(robot, kin, problem, planar)
    check_transmissions(robot, q, v, problem.known_qdd)
    inputs = {"q": q, "v": v, "gravity": gravity, "base_twist": base_twist, "base_accel": problem.base_accel,
              **{f"external_wrenches[{(robot.base if i == 0 else robot.links[i - 1]).name}]": w
                 for i, w in wrenches_com.items()},
              "qdd": np.array(list(problem.known_qdd.values())), "tau": np.array(list(problem.known_tau.values()))}
    inputs = {name: x for name, x in inputs.items() if x is not None}
    # More actuators than a loop's degrees of freedom, or more contacts than the motion determines: the
    # least-norm contact forces, then the least-norm torques, by soft minimum-norm factors on the hard
    # equations (which needs GTSAM's constrained elimination).
    while True:
        try:
            return _eliminate_and_solve(robot, kin, problem, gravity, wrenches_com, ordering, elimination, inputs)
        except IndeterminateSystemError as e:
            free = {keys.kind(keys.parse_label(label)) for label in e.free_variables}
            if free & {"contact_force", "contact_wrench"} and not problem.minimum_contact:
                problem = dataclasses.replace(problem, minimum_contact=tuple(c.number for c in problem.contacts))
            elif "torque" in free and not problem.minimum_torque:
                problem = dataclasses.replace(problem, minimum_torque=tuple(
                    j.index for j in robot.joints if j.index not in problem.known_tau))
            else:
                raise
            elimination = "constrained"


def with_loop_factors(robot: Robot, kin: KinematicState, problem: Problem, planar=None) -> Problem:
    """Check that the state closes every loop, and give planar loops their planar factor (``planar``: None
    detects, True requires, False skips). A tree's problem is returned unchanged."""
    if not robot.loop_joints:
        return problem
    check_closed(robot, kin)
    return dataclasses.replace(problem, planar=_planar_loops(robot, kin, planar))


def _planar_loops(robot: Robot, kin, planar) -> dict[int, np.ndarray]:
    if planar is False:
        return {}
    out = {}
    for joint, loop in zip(robot.loop_joints, robot.loops):
        normal = loop_plane_normal(robot, kin, loop)
        if normal is None and planar is True:
            raise ArgumentError(f"planar: the loop {', '.join(loop)} is not planar")
        if normal is not None:
            out[joint.index] = normal
    return out


def _eliminate_and_solve(robot, kin, problem, gravity, wrenches_com, ordering, elimination, inputs) -> DynamicsResult:
    with np.errstate(all="ignore"):
        graph = dynamics_graph(robot, kin, problem, gravity, wrenches_com, constrained=elimination == "constrained")
        hard = graph  # the exact equations, unit-weighted: for the column scaling and the consistency check
        if elimination == "constrained" or problem.minimum_torque or problem.minimum_contact:
            hard = dynamics_graph(robot, kin, dataclasses.replace(problem, minimum_torque=(), minimum_contact=()), gravity,
                                  wrenches_com)
    norms = squared_column_norms(hard)
    _check_finite(norms, inputs)
    order = _resolved_ordering(ordering, robot, problem, graph)
    eliminated = eliminate(graph, order, method=elimination, column_norms=norms, owner=lambda key: keys.owner(robot, key))
    try:
        solution = eliminated.solve(graph)
        values = solution.vector()
    except RuntimeError:  # GTSAM refuses to back-substitute non-finite numbers
        values = np.array([np.nan])
    _check_finite({0: values}, inputs)  # a determined system whose right-hand side overflowed
    if _rows(hard) > sum(keys.dim(k) for k in norms):  # more equations than unknowns: the data must satisfy all
        backward_error = _backward_error(hard, norms, solution)
        if backward_error > BACKWARD_ERROR_TOLERANCE:
            raise _inconsistent(robot, kin, problem, gravity, wrenches_com, backward_error)
    return assemble_result(robot, problem, kin, graph, eliminated, order, solution)


# robot -> {graph structure and strategy name: the ordered keys}; COLAMD, METIS or minimum degree cost as much as
# a tenth of a call, and their answer is the same for every state.
_ORDERINGS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _resolved_ordering(ordering, robot: Robot, problem: Problem, graph: gtsam.GaussianFactorGraph) -> gtsam.Ordering:
    """``resolve_ordering``, remembered per robot and graph structure for built-in strategies. The structure of a
    dynamics graph is fixed by which joints have q̈ and τ given, by its planar and minimum-torque factors and by
    which of a floating base's acceleration and wrench is given."""
    name = "colamd" if ordering is None else ordering
    if not structural(name):
        return resolve_ordering(ordering, robot, problem, graph)
    structure = (name, problem.kind, frozenset(problem.known_qdd), frozenset(problem.known_tau),
                 frozenset(problem.planar), problem.minimum_torque, problem.base_accel is None,
                 problem.base_wrench is None, tuple((c.body, c.dim) for c in problem.contacts), problem.minimum_contact)
    remembered = _ORDERINGS.setdefault(robot, {})
    if structure not in remembered:
        order = resolve_ordering(name, robot, problem, graph)
        remembered[structure] = [order.at(i) for i in range(order.size())]
    return gtsam.Ordering(remembered[structure])  # a fresh one: the result hands it to the user


def _rows(graph: gtsam.GaussianFactorGraph) -> int:
    return sum(graph.at(i).rows() for i in range(graph.size()))


def _check_finite(arrays: dict, inputs: dict[str, np.ndarray]) -> None:
    """ArgumentError naming the largest input if the equations (their column norms, or the solution)
    overflowed double precision."""
    if not arrays or np.all(np.isfinite(np.concatenate([np.ravel(a) for a in arrays.values()]))):
        return
    name, value = max(((n, float(np.max(np.abs(x)))) for n, x in inputs.items() if np.size(x)), key=lambda t: t[1])
    raise ArgumentError(f"{name}: the dynamics equations overflow double precision at this state (largest input "
                        f"value {value:.3g}, in {name}); are the units right?")


def _backward_error(hard: gtsam.GaussianFactorGraph, norms: dict, x: gtsam.VectorValues) -> float:
    """‖Ax − b‖ / (‖A‖_F ‖x‖ + ‖b‖) of the unit-weighted exact equations: the relative change of the data that
    would make x exact."""
    residual, b = np.sqrt(2 * hard.error(x)), np.sqrt(2 * hard.error(gtsam.VectorValues.Zero(x)))
    A = np.sqrt(sum(float(np.sum(n)) for n in norms.values()))
    return float(residual / max(A * np.linalg.norm(x.vector()) + b, np.finfo(float).tiny))


def _inconsistent(robot, kin, problem, gravity, wrenches_com, backward_error) -> ValueError:
    """The typed error for over-determined data: q̈ that violates a loop's acceleration constraint
    (LoopClosureError), or q̈ prescribed at passive joints that the actuated joints cannot produce
    (ArgumentError naming them, with the q̈ the dynamics give there)."""
    qdd = np.array([problem.known_qdd.get(j.index, np.nan) for j in robot.joints])
    if problem.contacts and not np.any(np.isnan(qdd)) and (problem.base_accel is not None or not robot.floating_base):
        for contact, residual in _contact_residuals(robot, kin, problem, qdd):
            if residual > 1e-8 * (1 + np.max(np.abs(qdd), initial=0.0)):
                return ArgumentError(f"qdd: the motion breaks contact {contact.number} ({contact.contact.kind} on "
                                     f"'{contact.contact.link}'): its acceleration constraint is off by {residual:.3g}; "
                                     "a contact must not accelerate (use forward dynamics with the contacts to find "
                                     "a motion that keeps them)")
    if robot.loop_joints and not np.any(np.isnan(qdd)):
        for name, residual in acceleration_residuals(robot, kin.q, kin.v, qdd).items():
            if residual > CLOSURE_TOLERANCE * (1 + np.max(np.abs(qdd))):
                return LoopClosureError(f"qdd: the joint accelerations violate the loop closed by joint '{name}' by "
                                        f"{residual:.3g}; compute consistent ones with gtdyn.close_loops")
    prescribed = [j for j in problem.known_qdd if j in problem.known_tau]  # passive joints with q̈ given
    if prescribed:
        free = dataclasses.replace(problem, known_qdd={j: a for j, a in problem.known_qdd.items() if j not in prescribed},
                                   kind="hybrid")
        try:
            achievable = _eliminate_and_solve(robot, kin, free, gravity, wrenches_com, None, "qr", {}).qdd
        except (IndeterminateSystemError, ValueError):
            achievable = None
        if achievable is not None:
            wrong = [j for j in prescribed if abs(achievable[j - 1] - problem.known_qdd[j]) > 1e-8 * (1 + abs(achievable[j - 1]))]
            if wrong:
                detail = ", ".join(f"{robot.joints[j - 1].name} (asked {problem.known_qdd[j]:.6g}, the dynamics give "
                                   f"{achievable[j - 1]:.6g})" for j in wrong)
                return ArgumentError(f"qdd: the actuated joints cannot produce the requested q̈ of passive joints {detail}, "
                                     "given the other joints' q̈; prescribe passive joints' q̈ only as the dynamics give it, "
                                     "or use hybrid_dynamics to solve for it")
    reasons = []  # what can make given values inconsistent, for this robot and problem
    if robot.floating_base and problem.contacts and problem.base_accel is not None:
        names = ", ".join(f"{c.contact.kind} on '{c.contact.link}'" for c in problem.contacts)
        reasons.append("the base has no joint to the world, so with its acceleration prescribed (base_accel, zero by "
                       f"default) the contact forces alone must move it, and these contacts ({names}) cannot produce "
                       "that motion (add contacts, or find a motion they support with forward dynamics)")
    if robot.loop_joints:
        reasons.append("on closed loops q̈ must satisfy the loops' acceleration constraints (see gtdyn.close_loops)")
    if robot.transmissions:
        reasons.append("q̈ must keep each transmission's coupling")
    if any(not j.actuated for j in robot.joints):
        reasons.append("passive joints have τ = 0")
    return ArgumentError(f"qdd, tau: the given values are inconsistent with the dynamics equations (backward error "
                         f"{backward_error:.3g}); {'; '.join(reasons) or 'no exact solution exists'}")


# |q_dependent − Σ ratio·q − offset| (and the same for q̇, q̈) accepted, relative to the joints' magnitude
TRANSMISSION_TOLERANCE = 1e-9


def check_transmissions(robot: Robot, q, v, known_qdd: Mapping[int, float] | None = None, names=("q", "v")) -> None:
    """ArgumentError naming the joint if (q, q̇) — or the given q̈ (by joint index), where every q̈ of a
    transmission is given — break a transmission: the dynamics are only defined on the coupled motions.
    ``names``: the arguments q and q̇ came as (``gtdyn.simulate``'s q0 and v0)."""
    for t in robot.transmissions:
        joints = [t.dependent, *(k for k, _ in t.terms)]
        ratios = np.array([ratio for _, ratio in t.terms])
        checks = [(names[0], q, t.offset), (names[1], v, 0.0)]
        if known_qdd and all(j in known_qdd for j in joints):
            checks.append(("qdd", np.array([known_qdd.get(j, 0.0) for j in range(1, robot.num_dofs + 1)]), 0.0))
        for name, x, offset in checks:
            expected = ratios @ x[[k - 1 for k, _ in t.terms]] + offset
            if abs(x[t.dependent - 1] - expected) > TRANSMISSION_TOLERANCE * (1.0 + abs(expected)):
                raise ArgumentError(
                    f"{name}: joint '{robot.joints[t.dependent - 1].name}' is coupled ({t.name}) and must be "
                    f"{expected:.9g}, got {x[t.dependent - 1]:.9g}")


def _base_state(robot: Robot, base_pose, base_twist) -> tuple:
    """A floating base's pose (Pose3) and twist (6), checked; identity and zero where not given. A fixed base
    has neither."""
    if not robot.floating_base:
        given = [name for name, value in (("base_pose", base_pose), ("base_twist", base_twist)) if value is not None]
        if given:
            raise ArgumentError(f"{', '.join(given)}: robot '{robot.name}' has a fixed base; load it with "
                                "base='floating' to give its base a state")
        return None, None
    return (gtsam.Pose3() if base_pose is None else pose_argument("base_pose", base_pose),
            np.zeros(6) if base_twist is None else finite_vector("base_twist", base_twist, 6))


def _contact_residuals(robot: Robot, kin: KinematicState, problem: Problem, qdd: np.ndarray):
    """(contact, max |residual| of its acceleration constraint) for a fully given motion: V̇ root → leaf by
    eq. 5 (V̇_c = rhs − coefficient_p V̇_p − coefficient_a q̈, as forward_kinematics does for twists), then
    each contact's equation."""
    A = [np.zeros(6)] * (len(robot.links) + 1)
    if robot.floating_base:
        A[0] = Ad(robot.base.lTcom.inverse()) @ problem.base_accel
    for joint in robot.tree_joints:
        j, p = joint.index, robot.link(joint.parent).index
        eq = twist_accel_equation(kin.cTp[j], joint.screw_axis, kin.V[j], kin.v[j - 1])
        A[j] = eq.rhs - eq.coefficients["A_p"] @ A[p] - eq.coefficients["a"] @ qdd[j - 1:j]
    for contact in problem.contacts:
        eq = contact_equation(contact.iTc, contact.dim, kin.V[contact.body])
        yield contact, float(np.max(np.abs(eq.error({"A": A[contact.body]}))))


def _external_wrenches(robot: Robot, wrenches) -> dict[int, np.ndarray]:
    """Wrenches given in link/frame coordinates → wrenches in the moving links' CoM frames, by link index."""
    if wrenches is None:
        return {}
    if not isinstance(wrenches, Mapping):
        raise ArgumentError(f"external_wrenches: expected a dict from link or frame name to a wrench [m; f], got "
                            f"{type(wrenches).__name__}")
    out: dict[int, np.ndarray] = {}
    for frame, wrench in wrenches.items():
        if frame not in robot.frames:
            raise ArgumentError(f"external_wrenches: unknown link or frame '{frame}' (links: {', '.join(robot.frames)})")
        body, bTf = robot.frames[frame]
        if robot.is_fixed(body):
            raise ArgumentError(f"external_wrenches: '{frame}' is fixed to the base, so a wrench on it moves no joint")
        F_f = finite_vector(f"external_wrenches['{frame}']", wrench, 6)
        if np.max(np.abs(F_f)) > MAX_WRENCH:
            raise ArgumentError(f"external_wrenches['{frame}']: {np.max(np.abs(F_f)):g} is beyond the ±{MAX_WRENCH:g} "
                                "N (N·m) gtdyn accepts")
        link = robot.link(body)
        fTcom = bTf.inverse().compose(link.lTcom)
        out[link.index] = out.get(link.index, np.zeros(6)) + Ad(fTcom).T @ F_f
    return out
