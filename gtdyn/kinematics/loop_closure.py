"""Loop kinematics as factor graphs: from the independent joints' values, the joint values, velocities and
accelerations that close every loop.

* Position: pose factors (forward kinematics) on every joint, tree and loop-closing alike, with the
  independent joints fixed; nonlinear, solved by Gauss–Newton with backtracking (a step is halved until the
  error falls) from an initial guess, which selects the branch (elbow up or down, …).
* Velocity: eq. 4 on every joint, linear in the link twists and the dependent q̇.
* Acceleration: eq. 5 on every joint, linear in the link accelerations and the dependent q̈.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import gtsam
import numpy as np

from gtdyn import keys
from gtdyn.arguments import check_angles, joint_dict, joint_positions, robot_argument
from gtdyn.equations import twist_accel_equation, twist_equation
from gtdyn.errors import ArgumentError, LoopClosureError
from gtdyn.factors import PoseFactor, joint_prior
from gtdyn.kinematics.forward import forward_kinematics
from gtdyn.linear.elimination import eliminate
from gtdyn.linear.system import Key, add_equation
from gtdyn.model.robot import Robot

MAX_ITERATIONS = 50
CONTINUATION_STEP = 0.2  # rad or m: how far the independent joints move between two position solves
STEP_TOLERANCE = 1e-13


@dataclass(frozen=True)
class LoopState:
    """A state that closes every loop (vectors in ``robot.joint_names`` order) and how well it does:
    the largest pose mismatch (rad or m), twist mismatch and acceleration-equation residual over the loops."""

    q: np.ndarray
    v: np.ndarray
    qdd: np.ndarray
    position_residual: float
    velocity_residual: float
    acceleration_residual: float
    iterations: int


def close_loops(robot: Robot, q: Mapping[str, float], v: Mapping[str, float] | None = None,
                qdd: Mapping[str, float] | None = None, *, guess=None) -> LoopState:
    """Joint values, velocities and accelerations that close every loop, given those of the independent
    joints (the keys of ``q``; ``v`` and ``qdd`` default to zero for them). ``guess`` (all joints) starts the
    position solve and so picks the assembly branch; default zeros (the model's rest configuration)."""
    robot = robot_argument(robot)
    given = joint_dict(robot, "q", q)
    check_angles(robot, "q", given)
    given_v = joint_dict(robot, "v", v or {})
    given_qdd = joint_dict(robot, "qdd", qdd or {})
    for name, d in (("v", given_v), ("qdd", given_qdd)):
        extra = [robot.joints[j - 1].name for j in d if j not in given]
        if extra:
            raise ArgumentError(f"{name}: joints {', '.join(extra)} are not among the independent joints given in q")
    start = np.zeros(robot.num_dofs) if guess is None else joint_positions(robot, "guess", guess)
    q_all, iterations = solve_positions(robot, given, start)
    v_all = solve_rates(robot, q_all, {j: given_v.get(j, 0.0) for j in given}, order=1)
    qdd_all = solve_rates(robot, q_all, {j: given_qdd.get(j, 0.0) for j in given}, order=2, v=v_all)
    kin = forward_kinematics(robot, q_all, v_all)
    return LoopState(q_all, v_all, qdd_all,
                     max((float(np.max(np.abs(r))) for r in kin.pose_closure.values()), default=0.0),
                     max((float(np.max(np.abs(r))) for r in kin.twist_closure.values()), default=0.0),
                     acceleration_residual(robot, q_all, v_all, qdd_all), iterations)


def project(robot: Robot, q_given: dict[int, float], v_given: dict[int, float], guess: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """Every joint's q and q̇ that close the loops with the given independent joints' (by joint index), on the
    assembly branch of ``guess``: ``close_loops`` without the accelerations, for integrators that move the
    independent coordinates and need the state on the constraint manifold."""
    q_all, _ = solve_positions(robot, q_given, guess)
    return q_all, solve_rates(robot, q_all, v_given, order=1)


def solve_positions(robot: Robot, given: dict[int, float], start: np.ndarray) -> tuple[np.ndarray, int]:
    """``_continued_positions`` toward the nearest equivalent angles: a revolute joint's given angle is reached
    the short way round (within π of ``start``; the mechanism is the same every 2π turn, and the continuation's
    steps of ``CONTINUATION_STEP`` would otherwise walk every turn), and handed back as given."""
    short = {j: start[j - 1] + math.remainder(value - start[j - 1], 2 * math.pi)
             if robot.joints[j - 1].type == "revolute" else value for j, value in given.items()}
    q, iterations = _continued_positions(robot, short, start)
    for j, value in given.items():
        q[j - 1] = value
    return q, iterations


def _continued_positions(robot: Robot, given: dict[int, float], start: np.ndarray) -> tuple[np.ndarray, int]:
    """All joint values that close the loops with the ``given`` independent ones, on the assembly branch of
    ``start``; returns them and the Gauss–Newton iterations used.

    The independent joints move from their values in ``start`` to ``given`` in steps of at most
    CONTINUATION_STEP; each solve starts from the last assembly moved along the branch's tangent (a
    predictor–corrector continuation), so that the answer stays on the starting branch (one Gauss–Newton
    solve from afar can land on another: the four-bar's crossed assembly from j1 = 0.4).
    If the path leaves the reachable region, a single solve from ``start`` is tried instead.
    """
    pose_factors = gtsam.NonlinearFactorGraph()
    for joint in robot.joints:
        p, c = robot.link(joint.parent).index, robot.link(joint.child).index
        pose_factors.add(PoseFactor(joint, None if p == 0 else keys.pose_key(p), None if c == 0 else keys.pose_key(c),
                                    keys.joint_angle_key(joint.index)))
    distance = max((abs(value - start[j - 1]) for j, value in given.items()), default=0.0)
    stages = max(1, math.ceil(distance / CONTINUATION_STEP))
    q, total = start.copy(), 0
    increment = {j: (value - start[j - 1]) / stages for j, value in given.items()}
    try:
        for k in range(1, stages + 1):
            if k > 1:  # predict along the branch's tangent (the velocity problem), then correct
                q = q + solve_rates(robot, q, increment, order=1)
            targets = {j: start[j - 1] + increment[j] * k for j in given}
            q, iterations = _gauss_newton(robot, pose_factors, targets, q)
            total += iterations
        return q, total
    except LoopClosureError:
        if stages == 1:
            raise
    q, iterations = _gauss_newton(robot, pose_factors, given, start)
    return q, total + iterations


def _gauss_newton(robot: Robot, pose_factors: gtsam.NonlinearFactorGraph, given: dict[int, float],
                  start: np.ndarray) -> tuple[np.ndarray, int]:
    """Gauss–Newton with backtracking on the pose factors with the given joints fixed, from ``start``."""
    graph = gtsam.NonlinearFactorGraph()
    graph.push_back(pose_factors)  # shares the factors (CustomFactors cannot be cloned)
    for j, value in given.items():
        graph.add(joint_prior(keys.joint_angle_key(j), value))
    values = gtsam.Values()
    start = start.copy()
    for j, value in given.items():
        start[j - 1] = value
    kin = forward_kinematics(robot, start, np.zeros(robot.num_dofs))
    for joint in robot.joints:
        values.insert(keys.joint_angle_key(joint.index), np.array([start[joint.index - 1]]))
    for link in robot.links:
        values.insert(keys.pose_key(link.index), kin.wT[link.index])
    error = _squared_error(graph, values)
    for iteration in range(1, MAX_ITERATIONS + 1):  # noqa: B007 (the count is reported after the loop)
        linear = graph.linearize(values)
        for i in range(linear.size()):  # exact equations: unit weights, so Householder QR applies
            linear.at(i).setModel(False, np.ones(linear.at(i).rows()))
        delta = eliminate(linear, gtsam.Ordering.ColamdGaussianFactorGraph(linear),
                          owner=lambda key: keys.owner(robot, key)).bayes_net.optimize()
        step = 1.0
        while True:
            trial = values.retract(delta.scale(step))
            trial_error = _squared_error(graph, trial)
            if trial_error <= error or step < 1e-6:
                break
            step /= 2
        values, error = trial, trial_error
        if step * np.max(np.abs(delta.vector()), initial=0.0) < STEP_TOLERANCE:  # (no joints: empty)
            break
    q_all = np.array([values.atVector(keys.joint_angle_key(j.index))[0] for j in robot.joints])
    residual = max((float(np.max(np.abs(graph.at(i).unwhitenedError(values)))) for i in range(graph.size())),
                   default=0.0)
    if residual > 1e-9:
        raise LoopClosureError(f"q: no assembly closes the loops from these independent joint values "
                               f"(residual {residual:.3g} after {iteration} Gauss–Newton steps); the loop may be out "
                               "of reach")
    return q_all, iteration


def _squared_error(graph: gtsam.NonlinearFactorGraph, values: gtsam.Values) -> float:
    return sum(float(np.sum(graph.at(i).unwhitenedError(values) ** 2)) for i in range(graph.size()))


def manifold_tangents(robot: Robot, q: np.ndarray, v: np.ndarray, independent: list[int]
                      ) -> tuple[np.ndarray, np.ndarray]:
    """How the whole state moves when the independent joints (indices) do, at a state (q, q̇) that closes the
    loops: T = ∂q/∂q_I = ∂q̇/∂q̇_I, and ∂q̇/∂q_I at fixed q̇_I (n × k each).

    T's column k is the velocity problem's answer with independent joint k at unit rate. For ∂q̇/∂q_I: along a
    tangent w, G(q) q̇ = 0 (eq. 4 around the loops) gives G_D ∂q̇_D = −B(q̇, w), B the symmetric bilinear form
    of ∂(G q̇)/∂q on the tangent space (symmetric: G is the Jacobian of the closure at closure). The
    acceleration problem with q̈_I = 0 answers a₀(u) = −G_D⁻¹ B(u, u), so by polarization
    ∂q̇/∂q_I w = (a₀(q̇ + w) − a₀(q̇ − w)) / 4: exact, from two acceleration solves per independent joint."""
    unit = np.eye(len(independent))
    T = np.column_stack([solve_rates(robot, q, dict(zip(independent, row)), order=1) for row in unit])
    at_rest = dict.fromkeys(independent, 0.0)

    def a0(u: np.ndarray) -> np.ndarray:
        return solve_rates(robot, q, at_rest, order=2, v=u)

    dv_dq = np.column_stack([(a0(v + w) - a0(v - w)) / 4 for w in T.T])
    return T, dv_dq


def solve_rates(robot: Robot, q: np.ndarray, given: dict[int, float], order: int,
                v: np.ndarray | None = None) -> np.ndarray:
    """The linear velocity (order 1, eq. 4) or acceleration (order 2, eq. 5) problem around every joint."""
    kin = forward_kinematics(robot, q, np.zeros(robot.num_dofs) if v is None else v)
    graph = _rate_graph(robot, kin, given, order)
    rate_key = keys.joint_vel_key if order == 1 else keys.joint_accel_key
    solution = eliminate(graph, gtsam.Ordering.ColamdGaussianFactorGraph(graph),
                         owner=lambda key: keys.owner(robot, key)).bayes_net.optimize()
    return np.array([given[j.index] if j.index in given else solution.at(rate_key(j.index))[0] for j in robot.joints])


def _rate_graph(robot: Robot, kin, given: dict[int, float], order: int) -> gtsam.GaussianFactorGraph:
    """Eq. 4 (order 1: link twists and joint rates) or eq. 5 (order 2: accelerations) around every joint, tree
    and loop-closing alike; the rates of the ``given`` joints are known, every other one is unknown."""
    graph = gtsam.GaussianFactorGraph()
    rate_key = keys.joint_vel_key if order == 1 else keys.joint_accel_key
    link_key = keys.twist_key if order == 1 else keys.twist_accel_key
    for joint in robot.joints:
        j, p, c = joint.index, robot.link(joint.parent).index, robot.link(joint.child).index
        if order == 1:
            eq, names = twist_equation(kin.cTp[j], joint.screw_axis), ("V_c", "V_p", "v")
        else:
            eq, names = twist_accel_equation(kin.cTp[j], joint.screw_axis, kin.V[c], kin.v[j - 1]), ("A_c", "A_p", "a")
        add_equation(graph, eq, {names[0]: np.zeros(6) if c == 0 else Key(link_key(c)),
                                 names[1]: np.zeros(6) if p == 0 else Key(link_key(p)),
                                 names[2]: given[j] if j in given else Key(rate_key(j))}, False)
    return graph


def acceleration_residual(robot: Robot, q: np.ndarray, v: np.ndarray, qdd: np.ndarray) -> float:
    """Largest violation of eq. 5 across the loop-closing joints by the tree's link accelerations."""
    return max(acceleration_residuals(robot, q, v, qdd).values(), default=0.0)


def acceleration_residuals(robot: Robot, q: np.ndarray, v: np.ndarray, qdd: np.ndarray) -> dict[str, float]:
    """Per loop-closing joint, the largest violation of its eq. 5 by the tree's link accelerations."""
    kin = forward_kinematics(robot, q, v)
    A = [np.zeros(6)] * (len(robot.links) + 1)
    for joint in robot.tree_joints:
        j, p = joint.index, robot.link(joint.parent).index
        eq = twist_accel_equation(kin.cTp[j], joint.screw_axis, kin.V[j], kin.v[j - 1])
        A[j] = eq.rhs - eq.coefficients["A_p"] @ A[p] - eq.coefficients["a"] @ np.array([qdd[j - 1]])
    out = {}
    for joint in robot.loop_joints:
        j, p, c = joint.index, robot.link(joint.parent).index, robot.link(joint.child).index
        eq = twist_accel_equation(kin.cTp[j], joint.screw_axis, kin.V[c], kin.v[j - 1])
        out[joint.name] = float(np.max(np.abs(eq.error({"A_c": A[c], "A_p": A[p], "a": qdd[j - 1]}))))
    return out


def independent_joints(robot: Robot, preferred: Iterable[str] = (), q=None, *, exactly: bool = False,
                       argument: str = "preferred") -> list[str]:
    """A largest set of joints whose rates the loops leave free — the mechanism's independent coordinates at
    ``q`` (default: the rest assembly) — taken greedily in the order of ``preferred``, then of
    ``robot.joint_names``. On a tree that is every joint. ``exactly``: ``preferred`` must be such a set itself
    (a user's choice of coordinates), else an ArgumentError names ``argument`` and a set that is."""
    q = np.zeros(robot.num_dofs) if q is None else joint_positions(robot, "q", q)
    preferred = list(preferred)
    unknown_names = [n for n in preferred if n not in robot.joint_names]
    chosen = [] if unknown_names else _independent(robot, preferred, q)
    if unknown_names or (exactly and sorted(chosen) != sorted(preferred)):
        raise ArgumentError(
            f"{argument}: unknown joints {', '.join(map(str, unknown_names))} (joints: {', '.join(robot.joint_names)})"
            if unknown_names else
            f"{argument}: {', '.join(preferred) or 'no joints'} are not independent coordinates of '{robot.name}', "
            f"which has {len(chosen)} (joints that each move without the others and together move all, such as "
            f"{', '.join(chosen)})")
    return chosen


def _independent(robot: Robot, preferred: list[str], q: np.ndarray) -> list[str]:
    """``independent_joints`` of known joints."""
    # every rate unknown
    graph = _rate_graph(robot, forward_kinematics(robot, q, np.zeros(robot.num_dofs)), {}, order=1)
    A, _ = graph.jacobian()
    columns = sorted(set(graph.keyVector()))  # jacobian() orders its columns by key
    offsets = np.cumsum([0] + [keys.dim(k) for k in columns])
    _, s, Vt = np.linalg.svd(A)
    rank = int(np.sum(s > 1e-9 * s[0])) if s.size else 0
    motions = Vt[rank:].T  # a basis of the rates the loops allow
    rows = {name: offsets[columns.index(keys.joint_vel_key(robot.joint(name).index))] for name in robot.joint_names}
    chosen: list[str] = []
    for name in list(dict.fromkeys([*preferred, *robot.joint_names])):
        if len(chosen) == motions.shape[1]:
            break
        trial = chosen + [name]
        if np.linalg.matrix_rank(motions[[rows[n] for n in trial]], tol=1e-9) == len(trial):
            chosen = trial
    return chosen
