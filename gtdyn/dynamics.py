"""Inverse, forward and hybrid dynamics: one linear factor graph, eliminated in a chosen ordering.

Each call computes the kinematics (poses, twists) from q and q̇, builds the linear dynamics graph with the
given quantities known, eliminates it into a ``gtsam.GaussianBayesNet`` and back-substitutes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

import gtsam
import networkx as nx
import numpy as np

from gtdyn import keys
from gtdyn.arguments import finite_vector, joint_dict, joint_vector
from gtdyn.elimination import METHODS, Elimination, eliminate
from gtdyn.errors import ArgumentError, IndeterminateSystemError, LoopClosureError
from gtdyn.graph import Problem, dynamics_graph
from gtdyn.kinematics import KinematicState, forward_kinematics
from gtdyn.loop_kinematics import acceleration_residuals
from gtdyn.loops import CLOSURE_TOLERANCE, check_closed, loop_plane_normal
from gtdyn.orderings import resolve_ordering
from gtdyn.robot import Robot
from gtdyn.spatial import Ad

GRAVITY = (0.0, 0.0, -9.81)  # m/s², world frame; Pinocchio's default too


@dataclass(frozen=True, eq=False)
class DynamicsResult:
    """The solution of one dynamics problem, with the elimination that produced it.

    Vectors are in ``robot.joint_names`` order. ``wrenches[joint]`` is the wrench [m; f] that the joint's
    parent exerts on its child, in the child's CoM frame; ``twist_accels[link]`` is V̇ in the link's CoM
    frame; ``ordering`` lists the eliminated variables' labels in elimination order. ``condition`` estimates
    the condition number of the (column-equilibrated) equations (see ``gtdyn.elimination``): above 1e8 the
    solve warned with ``IllConditionedWarning``.
    """

    robot: Robot
    problem: str  # "inverse", "forward" or "hybrid"
    q: np.ndarray
    v: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray
    wrenches: dict[str, np.ndarray]
    twist_accels: dict[str, np.ndarray]
    twists: dict[str, np.ndarray]
    graph: gtsam.GaussianFactorGraph
    bayes_net: gtsam.GaussianBayesNet
    elimination_ordering: gtsam.Ordering
    condition: float = float("nan")

    @property
    def ordering(self) -> list[str]:
        o = self.elimination_ordering
        return [keys.label(o.at(i)) for i in range(o.size())]

    def dag(self) -> nx.DiGraph:
        """The elimination DAG as a networkx.DiGraph with labelled nodes (see ``gtdyn.dag``)."""
        from gtdyn.dag import elimination_dag

        return elimination_dag(self.graph, self.elimination_ordering)

    def metrics(self) -> dict:
        """DAG edges, fill-in, non-zeros, operation count and clique sizes (see ``gtdyn.dag.metrics``)."""
        from gtdyn.dag import metrics

        return metrics(self.graph, self.elimination_ordering, self.bayes_net)

    def bayes_tree(self) -> nx.DiGraph:
        """The clique tree of multifrontal elimination in the same ordering (see ``gtdyn.dag.bayes_tree_dag``)."""
        from gtdyn.dag import bayes_tree_dag

        return bayes_tree_dag(self.graph.eliminateMultifrontal(self.elimination_ordering), self.elimination_ordering)

    def draw(self, path: str | None = None, title: str | None = None):
        """Draw the DAG (layered, coloured by kind) and save it to ``path`` (.png/.svg) if given."""
        from gtdyn.dag import draw_dag

        m = self.metrics()
        return draw_dag(self.dag(), path, title or f"{self.problem} dynamics of {self.robot.name}: "
                        f"{m['edges']} edges, {m['ops']:.0f} ops", robot=self.robot)

    def to_dot(self) -> str:
        """The DAG as Graphviz DOT text."""
        from gtdyn.dag import to_dot

        return to_dot(self.dag(), f"{self.robot.name} {self.problem}")

    def __repr__(self) -> str:
        rows = "\n".join(f"  {n:>12s}  q̈ = {a: .6g}  τ = {t: .6g}" for n, a, t in zip(self.robot.joint_names, self.qdd, self.tau))
        return f"DynamicsResult({self.problem} dynamics of '{self.robot.name}', ordering {self.ordering}):\n{rows}"


def inverse_dynamics(robot: Robot, q, v, qdd, *, gravity=GRAVITY, external_wrenches=None, ordering=None,
                     elimination="qr", planar=None) -> DynamicsResult:
    """Torques τ that produce joint accelerations ``qdd`` at state (q, v).

    ``external_wrenches`` maps a link (or merged frame) name to the wrench [m; f] its environment applies
    to it, expressed in that link's frame. ``ordering`` is a strategy name, a list of labels/keys or a callable.
    ``elimination`` is "qr" (Householder QR of the exact equations: accurate in every ordering) or
    "constrained" (GTSAM's elimination of Constrained factors, as GTDynamics does).

    Closed loops: q, v and qdd give every joint (loop-closing ones too) and must close every loop (see
    ``gtdyn.close_loops``); passive joints have τ = 0 and actuated ones get the τ that produce the motion —
    the least-norm τ if the loop is redundantly actuated. ``planar`` (None: detect per loop; True: require;
    False: never) adds the planar factor to planar loops.
    """
    return _solve(robot, q, v, inverse_problem(robot, qdd), gravity, external_wrenches, ordering, elimination, planar)


def forward_dynamics(robot: Robot, q, v, tau, *, gravity=GRAVITY, external_wrenches=None, ordering=None,
                     elimination="qr", planar=None) -> DynamicsResult:
    """Joint accelerations q̈ produced by torques ``tau`` at state (q, v). Arguments as ``inverse_dynamics``;
    ``tau`` is 0 at passive joints."""
    return _solve(robot, q, v, forward_problem(robot, tau), gravity, external_wrenches, ordering, elimination, planar)


def hybrid_dynamics(robot: Robot, q, v, qdd: Mapping[str, float], tau: Mapping[str, float], *, gravity=GRAVITY,
                    external_wrenches=None, ordering=None, elimination="qr", planar=None) -> DynamicsResult:
    """Given q̈ at some joints and τ at the others (dicts by joint name), solve for the rest.

    Every actuated joint must appear in exactly one of ``qdd`` and ``tau``; passive joints have τ = 0 and
    their q̈ is solved for.
    """
    return _solve(robot, q, v, hybrid_problem(robot, qdd, tau), gravity, external_wrenches, ordering, elimination,
                  planar)


def inverse_problem(robot: Robot, qdd) -> Problem:
    """Every q̈ given; passive joints' τ = 0 given; the actuated τ unknown."""
    qdd = joint_vector(robot, "qdd", qdd)
    return Problem(known_qdd={j: qdd[j - 1] for j in range(1, robot.num_dofs + 1)},
                   known_tau={j.index: 0.0 for j in robot.joints if not j.actuated}, problem_kind="inverse")


def forward_problem(robot: Robot, tau) -> Problem:
    """Every τ given (0 at passive joints); every q̈ unknown."""
    tau = joint_vector(robot, "tau", tau)
    passive = [j.name for j in robot.joints if not j.actuated and tau[j.index - 1] != 0.0]
    if passive:
        raise ArgumentError(f"tau: joints {', '.join(passive)} are passive, so their torque is 0")
    return Problem(known_tau={j: tau[j - 1] for j in range(1, robot.num_dofs + 1)}, problem_kind="forward")


def hybrid_problem(robot: Robot, qdd: Mapping[str, float], tau: Mapping[str, float]) -> Problem:
    """q̈ given at some actuated joints, τ at the others; passive joints have τ = 0 and unknown q̈."""
    known_qdd = joint_dict(robot, "qdd", qdd)
    known_tau = joint_dict(robot, "tau", tau)
    both = [robot.joints[j - 1].name for j in known_qdd if j in known_tau]
    if both:
        raise ArgumentError(f"qdd, tau: joints {', '.join(both)} are given in both; give each joint's q̈ or its τ, not both")
    passive_qdd = [robot.joints[j - 1].name for j in known_qdd if not robot.joints[j - 1].actuated]
    if passive_qdd:
        raise ArgumentError(f"qdd: joints {', '.join(passive_qdd)} are passive (τ = 0), so their q̈ is solved for")
    passive_tau = [robot.joints[j - 1].name for j, t in known_tau.items() if not robot.joints[j - 1].actuated and t != 0]
    if passive_tau:
        raise ArgumentError(f"tau: joints {', '.join(passive_tau)} are passive, so their torque is 0")
    known_tau.update({j.index: 0.0 for j in robot.joints if not j.actuated})
    neither = [joint.name for joint in robot.joints if joint.index not in known_qdd and joint.index not in known_tau]
    if neither:
        raise ArgumentError(f"qdd, tau: joints {', '.join(neither)} are in neither; give each joint's q̈ or its τ")
    return Problem(known_qdd, known_tau, problem_kind="hybrid")


# ----------------------------------------------------------------------------------------------------


# ‖Ax − b‖ / (‖A‖ ‖x‖ + ‖b‖) above this: the given data are inconsistent. A consistent system solved by QR
# leaves ~1e-15; states that close loops to close_loops' accuracy leave < 1e-10.
BACKWARD_ERROR_TOLERANCE = 1e-8


def _solve(robot, q, v, problem: Problem, gravity, external_wrenches, ordering, elimination="qr",
           planar=None) -> DynamicsResult:
    if elimination not in METHODS:
        raise ArgumentError(f"elimination: '{elimination}' is not one of {', '.join(METHODS)}")
    if planar not in (None, True, False):
        raise ArgumentError(f"planar: expected None, True or False, got {planar!r}")
    q = joint_vector(robot, "q", q)
    v = joint_vector(robot, "v", v)
    gravity = finite_vector("gravity", gravity, 3)
    wrenches_com = _external_wrenches(robot, external_wrenches)
    with np.errstate(all="ignore"):  # overflow becomes non-finite numbers, caught by name below
        kin = forward_kinematics(robot, q, v)
    problem = with_loop_factors(robot, kin, problem, planar)
    inputs = {"q": q, "v": v, "gravity": gravity, **{f"external_wrenches[{robot.links[i - 1].name}]": w
                                                      for i, w in wrenches_com.items()},
              "qdd": np.array(list(problem.known_qdd.values())), "tau": np.array(list(problem.known_tau.values()))}
    try:
        return _eliminate_and_solve(robot, kin, problem, gravity, wrenches_com, ordering, elimination, inputs)
    except IndeterminateSystemError as e:
        if not any(keys.kind(keys.parse_label(label)) == "torque" for label in e.free_variables):
            raise
    # More actuators than the loop's degrees of freedom: least-norm torques, by soft minimum-torque factors
    # on the hard equations (which needs GTSAM's constrained elimination).
    unknown_tau = tuple(j.index for j in robot.joints if j.index not in problem.known_tau)
    problem = dataclasses.replace(problem, minimum_torque=unknown_tau)
    return _eliminate_and_solve(robot, kin, problem, gravity, wrenches_com, ordering, "constrained", inputs)


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
    norms: dict[int, np.ndarray] = {}
    with np.errstate(all="ignore"):
        graph = dynamics_graph(robot, kin, problem, gravity, wrenches_com, constrained=elimination == "constrained",
                               column_norms=norms)
    _check_finite(norms, inputs)
    order = resolve_ordering(ordering, robot, problem, graph)
    eliminated = eliminate(graph, order, method=elimination, column_norms=norms, owner=lambda key: keys.owner(robot, key))
    try:
        solution = eliminated.solve(graph)
        values = solution.vector()
    except RuntimeError:  # GTSAM refuses to back-substitute non-finite numbers
        values = np.array([np.nan])
    _check_finite({0: values}, inputs)  # a determined system whose right-hand side overflowed
    hard = graph
    if elimination == "constrained" or problem.minimum_torque:  # the exact equations, unit-weighted
        hard = dynamics_graph(robot, kin, dataclasses.replace(problem, minimum_torque=()), gravity, wrenches_com)
    if _rows(hard) > sum(keys.dim(k) for k in norms):  # more equations than unknowns: the data must satisfy all
        backward_error = _backward_error(hard, norms, solution)
        if backward_error > BACKWARD_ERROR_TOLERANCE:
            raise _inconsistent(robot, kin, problem, gravity, wrenches_com, backward_error)
    return _result(robot, problem, kin, graph, eliminated, order, solution)


def _rows(graph: gtsam.GaussianFactorGraph) -> int:
    return sum(graph.at(i).rows() for i in range(graph.size()))


def _check_finite(arrays: dict, inputs: dict[str, np.ndarray]) -> None:
    """ArgumentError naming the largest input if the equations (their column norms, or the solution)
    overflowed double precision."""
    if all(np.all(np.isfinite(a)) for a in arrays.values()):
        return
    name, value = max(((n, float(np.max(np.abs(x)))) for n, x in inputs.items() if np.size(x)), key=lambda t: t[1])
    raise ArgumentError(f"{name}: the dynamics equations overflow double precision at this state (largest input "
                        f"value {value:.3g}, in {name}); are the units right?")


def _backward_error(hard: gtsam.GaussianFactorGraph, norms: dict, x: gtsam.VectorValues) -> float:
    """‖Ax − b‖ / (‖A‖_F ‖x‖ + ‖b‖) of the unit-weighted exact equations: the relative change of the data that
    would make x exact."""
    zero = gtsam.VectorValues()
    for key in norms:
        zero.insert(key, np.zeros(keys.dim(key)))
    residual, b = np.sqrt(2 * hard.error(x)), np.sqrt(2 * hard.error(zero))
    A = np.sqrt(sum(float(np.sum(n)) for n in norms.values()))
    return float(residual / max(A * np.linalg.norm(x.vector()) + b, np.finfo(float).tiny))


def _inconsistent(robot, kin, problem, gravity, wrenches_com, backward_error) -> ValueError:
    """The typed error for over-determined data: q̈ that violates a loop's acceleration constraint
    (LoopClosureError), or q̈ prescribed at passive joints that the actuated joints cannot produce
    (ArgumentError naming them, with the q̈ the dynamics give there)."""
    qdd = np.array([problem.known_qdd.get(j.index, np.nan) for j in robot.joints])
    if robot.loop_joints and not np.any(np.isnan(qdd)):
        for name, residual in acceleration_residuals(robot, kin.q, kin.v, qdd).items():
            if residual > CLOSURE_TOLERANCE * (1 + np.max(np.abs(qdd))):
                return LoopClosureError(f"qdd: the joint accelerations violate the loop closed by joint '{name}' by "
                                        f"{residual:.3g}; compute consistent ones with gtdyn.close_loops")
    prescribed = [j for j in problem.known_qdd if j in problem.known_tau]  # passive joints with q̈ given
    if prescribed:
        free = dataclasses.replace(problem, known_qdd={j: a for j, a in problem.known_qdd.items() if j not in prescribed},
                                   problem_kind="hybrid")
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
    return ArgumentError(f"qdd, tau: the given values are inconsistent with the dynamics equations (backward error "
                         f"{backward_error:.3g}); on closed loops q̈ must satisfy the loops' acceleration constraints "
                         "(see gtdyn.close_loops) and passive joints have τ = 0")


def _result(robot, problem, kin: KinematicState, graph, eliminated: Elimination, order,
            x: gtsam.VectorValues) -> DynamicsResult:
    def scalar(known: Mapping[int, float], key_fn, j: int) -> float:
        return known[j] if j in known else float(x.at(key_fn(j))[0])

    idx = range(1, robot.num_dofs + 1)
    return DynamicsResult(
        robot=robot,
        problem=problem.kind,
        q=kin.q,
        v=kin.v,
        qdd=np.array([scalar(problem.known_qdd, keys.joint_accel_key, j) for j in idx]),
        tau=np.array([scalar(problem.known_tau, keys.torque_key, j) for j in idx]),
        wrenches={joint.name: np.array(x.at(keys.wrench_key(joint.index))) for joint in robot.joints},
        twist_accels={link.name: np.array(x.at(keys.twist_accel_key(link.index))) for link in robot.links},
        twists={link.name: kin.V[link.index] for link in robot.links},
        graph=graph,
        bayes_net=eliminated.bayes_net,
        elimination_ordering=order,
        condition=eliminated.condition,
    )


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
        if robot.is_base(body):
            raise ArgumentError(f"external_wrenches: '{frame}' is fixed to the base, so a wrench on it moves no joint")
        F_f = finite_vector(f"external_wrenches['{frame}']", wrench, 6)
        link = robot.link(body)
        fTcom = bTf.inverse().compose(link.lTcom)
        out[link.index] = out.get(link.index, np.zeros(6)) + Ad(fTcom).T @ F_f
    return out
