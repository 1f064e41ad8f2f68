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
from gtdyn.errors import IndeterminateSystemError
from gtdyn.graph import Problem, dynamics_graph
from gtdyn.kinematics import KinematicState, forward_kinematics
from gtdyn.loops import check_closed, loop_plane_normal
from gtdyn.orderings import resolve_ordering
from gtdyn.robot import Robot
from gtdyn.spatial import Ad

GRAVITY = (0.0, 0.0, -9.81)  # m/s², world frame; Pinocchio's default too


@dataclass(frozen=True, eq=False)
class DynamicsResult:
    """The solution of one dynamics problem, with the elimination that produced it.

    Vectors are in ``robot.joint_names`` order. ``wrenches[joint]`` is the wrench [m; f] that the joint's
    parent exerts on its child, in the child's CoM frame; ``twist_accels[link]`` is V̇ in the link's CoM
    frame; ``ordering`` lists the eliminated variables' labels in elimination order.
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
                        f"{m['edges']} edges, {m['ops']:.0f} ops")

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
        raise ValueError(f"tau: joints {', '.join(passive)} are passive, so their torque is 0")
    return Problem(known_tau={j: tau[j - 1] for j in range(1, robot.num_dofs + 1)}, problem_kind="forward")


def hybrid_problem(robot: Robot, qdd: Mapping[str, float], tau: Mapping[str, float]) -> Problem:
    """q̈ given at some actuated joints, τ at the others; passive joints have τ = 0 and unknown q̈."""
    known_qdd = joint_dict(robot, "qdd", qdd)
    known_tau = joint_dict(robot, "tau", tau)
    both = [robot.joints[j - 1].name for j in known_qdd if j in known_tau]
    if both:
        raise ValueError(f"qdd, tau: joints {', '.join(both)} are given in both; give each joint's q̈ or its τ, not both")
    passive_qdd = [robot.joints[j - 1].name for j in known_qdd if not robot.joints[j - 1].actuated]
    if passive_qdd:
        raise ValueError(f"qdd: joints {', '.join(passive_qdd)} are passive (τ = 0), so their q̈ is solved for")
    passive_tau = [robot.joints[j - 1].name for j, t in known_tau.items() if not robot.joints[j - 1].actuated and t != 0]
    if passive_tau:
        raise ValueError(f"tau: joints {', '.join(passive_tau)} are passive, so their torque is 0")
    known_tau.update({j.index: 0.0 for j in robot.joints if not j.actuated})
    neither = [joint.name for joint in robot.joints if joint.index not in known_qdd and joint.index not in known_tau]
    if neither:
        raise ValueError(f"qdd, tau: joints {', '.join(neither)} are in neither; give each joint's q̈ or its τ")
    return Problem(known_qdd, known_tau)


# ----------------------------------------------------------------------------------------------------


ELIMINATIONS = ("qr", "constrained")
PIVOT_TOLERANCE = 1e-10  # |R_kk| below this fraction of the column's norm: the system is (nearly) singular
RESIDUAL_TOLERANCE = 1e-8  # ‖Ax − b‖ / ‖b‖ above this: the given data are inconsistent (closed loops)


def _solve(robot, q, v, problem: Problem, gravity, external_wrenches, ordering, elimination="qr",
           planar=None) -> DynamicsResult:
    if elimination not in ELIMINATIONS:
        raise ValueError(f"elimination: '{elimination}' is not one of {', '.join(ELIMINATIONS)}")
    q = joint_vector(robot, "q", q)
    v = joint_vector(robot, "v", v)
    gravity = finite_vector("gravity", gravity, 3)
    kin = forward_kinematics(robot, q, v)
    problem = with_loop_factors(robot, kin, problem, planar)
    wrenches_com = _external_wrenches(robot, external_wrenches)
    try:
        return _eliminate_and_solve(robot, kin, problem, gravity, wrenches_com, ordering, elimination)
    except IndeterminateSystemError as e:
        if not any(keys.kind(keys.parse_label(label)) == "torque" for label in e.free_variables):
            raise
    # More actuators than the loop's degrees of freedom: least-norm torques, by soft minimum-torque factors
    # on the hard equations (which needs GTSAM's constrained elimination).
    unknown_tau = tuple(j.index for j in robot.joints if j.index not in problem.known_tau)
    problem = dataclasses.replace(problem, minimum_torque=unknown_tau)
    return _eliminate_and_solve(robot, kin, problem, gravity, wrenches_com, ordering, "constrained")


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
            raise ValueError(f"planar: the loop {', '.join(loop)} is not planar")
        if normal is not None:
            out[joint.index] = normal
    return out


def _eliminate_and_solve(robot, kin, problem, gravity, wrenches_com, ordering, elimination) -> DynamicsResult:
    norms: dict[int, np.ndarray] = {}
    graph = dynamics_graph(robot, kin, problem, gravity, wrenches_com, constrained=elimination == "constrained",
                           column_norms=norms)
    order = resolve_ordering(ordering, robot, problem, graph)
    bayes_net = eliminate(graph, order, robot, elimination, norms)
    solution = bayes_net.optimize()
    if robot.loop_joints:  # more equations than unknowns: the data must satisfy all of them
        unit_weighted = elimination == "qr" and not problem.minimum_torque
        hard = graph if unit_weighted else dynamics_graph(robot, kin, dataclasses.replace(problem, minimum_torque=()),
                                                          gravity, wrenches_com)
        _check_consistent(hard, problem, solution)
    return _result(robot, problem, kin, graph, bayes_net, order, solution)


def _check_consistent(hard: gtsam.GaussianFactorGraph, problem: Problem, solution: gtsam.VectorValues) -> None:
    """ValueError if the unit-weighted hard equations leave a relative residual: inconsistent data."""
    zero = gtsam.VectorValues()
    for key in set(hard.keyVector()):
        zero.insert(key, np.zeros(keys.dim(key)))
    residual, scale = np.sqrt(2 * hard.error(solution)), np.sqrt(2 * hard.error(zero))
    if residual > RESIDUAL_TOLERANCE * max(scale, 1.0):
        given = "qdd" if problem.known_qdd else "the given data"
        raise ValueError(f"{given}: the equations are inconsistent (relative residual {residual / max(scale, 1.0):.3g}); "
                         "on closed loops q̈ must satisfy the loops' acceleration constraints (see gtdyn.close_loops)")


def eliminate(graph: gtsam.GaussianFactorGraph, order: gtsam.Ordering, robot: Robot | None = None,
              elimination: str = "qr", column_norms: dict | None = None) -> gtsam.GaussianBayesNet:
    """Sequential elimination into a Bayes net; an indeterminate system raises IndeterminateSystemError
    naming its free variables.

    "qr": Householder QR on unit-weighted exact equations. QR is backward stable in any column order, so
    every ordering gives the same answer to round-off; GTSAM does not flag a singular system on this path,
    so every pivot is checked against its variable's column norm (``column_norms``: squared, per key, as
    ``dynamics_graph`` collects them; computed here if not given). "constrained": GTSAM's elimination of
    hard-constraint factors (weighted Gram–Schmidt without pivoting), which raises on singular systems
    itself but can lose digits in unlucky orderings (we measured 7e-8 relative on the Panda with METIS).
    """
    try:
        if elimination == "qr":
            bayes_net = graph.eliminateSequential(order, gtsam.EliminateQR)
            _check_pivots(bayes_net, column_norms if column_norms is not None else _column_norms(graph))
            return bayes_net
        return graph.eliminateSequential(order)
    except (RuntimeError, _SmallPivot) as e:
        if not isinstance(e, _SmallPivot) and "ndeterminate" not in str(e) and "ndeterminant" not in str(e):
            raise
        free = free_variables(graph)
        named = [f"{label} ({_owner(robot, label)})" if robot else label for label in free]
        raise IndeterminateSystemError(
            "the dynamics equations do not determine "
            + (", ".join(named) if named else "every unknown")
            + " (a massless link, or a mechanism that needs more constraints)",
            free,
        ) from None


class _SmallPivot(Exception):
    pass


def _column_norms(graph: gtsam.GaussianFactorGraph) -> dict[int, np.ndarray]:
    """Squared column norms of every unknown in a linear graph."""
    norms: dict[int, np.ndarray] = {}
    for i in range(graph.size()):
        factor = gtsam.JacobianFactor(graph.at(i))
        A, _ = factor.jacobianUnweighted()
        col = 0
        for key in factor.keys():
            d = keys.dim(key)
            norms[key] = norms.get(key, 0.0) + np.sum(A[:, col:col + d] ** 2, axis=0)
            col += d
    return norms


def _check_pivots(bayes_net: gtsam.GaussianBayesNet, squared_norms: dict[int, np.ndarray]) -> None:
    """Raise _SmallPivot if some |R_kk| is tiny against the norm of its column in the original equations."""
    for i in range(bayes_net.size()):
        conditional = bayes_net.at(i)
        pivots = np.abs(np.diag(conditional.R()))
        if np.any(pivots <= PIVOT_TOLERANCE * np.sqrt(squared_norms[conditional.firstFrontalKey()])):
            raise _SmallPivot()


def _owner(robot: Robot, label: str) -> str:
    """The joint or link a variable label belongs to."""
    key = keys.parse_label(label)
    i = keys.index(key)
    if keys.kind(key) in ("twist_accel", "twist", "pose"):
        return f"link {robot.links[i - 1].name}"
    return f"joint {robot.joints[i - 1].name}"


def free_variables(graph: gtsam.GaussianFactorGraph, tol: float = 1e-9) -> list[str]:
    """Labels of the unknowns that have a component in the null space of the graph's dense Jacobian."""
    A, _ = graph.jacobian()
    ordered = _jacobian_column_keys(graph)
    _, s, Vt = np.linalg.svd(A)
    rank = int(np.sum(s > tol * max(1.0, s[0])))
    null = Vt[rank:]
    out, col = [], 0
    for key in ordered:
        d = keys.dim(key)
        if null.size and np.max(np.abs(null[:, col:col + d])) > 1e-6:
            out.append(keys.label(key))
        col += d
    return out


def _jacobian_column_keys(graph: gtsam.GaussianFactorGraph) -> list[int]:
    """The key order of GaussianFactorGraph.jacobian()'s columns (GTSAM orders them by key)."""
    return sorted(set(graph.keyVector()))


def _result(robot, problem, kin: KinematicState, graph, bayes_net, order, x: gtsam.VectorValues) -> DynamicsResult:
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
        bayes_net=bayes_net,
        elimination_ordering=order,
    )


def _external_wrenches(robot: Robot, wrenches) -> dict[int, np.ndarray]:
    """Wrenches given in link/frame coordinates → wrenches in the moving links' CoM frames, by link index."""
    out: dict[int, np.ndarray] = {}
    for frame, wrench in (wrenches or {}).items():
        if frame not in robot.frames:
            raise ValueError(f"external_wrenches: unknown link or frame '{frame}' (links: {', '.join(robot.frames)})")
        body, bTf = robot.frames[frame]
        if robot.is_base(body):
            raise ValueError(f"external_wrenches: '{frame}' is fixed to the base, so a wrench on it moves no joint")
        F_f = finite_vector(f"external_wrenches['{frame}']", wrench, 6)
        link = robot.link(body)
        fTcom = bTf.inverse().compose(link.lTcom)
        out[link.index] = out.get(link.index, np.zeros(6)) + Ad(fTcom).T @ F_f
    return out
