"""Operational-space quantities: the inverse operational-space inertia Λ⁻¹ = J M⁻¹ Jᵀ of frames, by one
elimination that leaves only the frames' wrenches and accelerations (paper 003's C-EFPA, on the factor graph) or
by forward solves."""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn import keys
from gtdyn.arguments import choice, covered, frame_list, robot_argument
from gtdyn.arguments.query import ask
from gtdyn.arguments.wrenches import wrench_frame
from gtdyn.dynamics.graph import dynamics_equations
from gtdyn.dynamics.quantities import NO_GRAVITY
from gtdyn.dynamics.reference import kinematics_of
from gtdyn.dynamics.solve import forward_dynamics
from gtdyn.equations import LinearEquation
from gtdyn.kinematics.frames import frame_jacobian
from gtdyn.linear.system import Key, add_equation
from gtdyn.model.robot import Robot
from gtdyn.orderings import resolve_ordering
from gtdyn.problem import Contact
from gtdyn.spatial import Ad

METHODS = ("elimination", "forward solves")
# Paper 003's names for the eliminations that give Λ⁻¹: on this graph (forward dynamics at rest with the frames'
# wrenches left) the extended-force-propagator algorithm is the articulated-body ordering, and C-EFPA its
# cluster form (transmissions); "lagrange" and "projection" are the paper's baselines as for forward dynamics
EFPA_ORDERINGS = {"efpa": "aba", "cluster_efpa": "cluster_aba"}


def operational_space_inverse_inertia(robot: Robot, q, frames, *, base_pose=None, ordering=None,
                                      method: str = "elimination") -> np.ndarray:
    """Λ⁻¹ (6k × 6k) of the k ``frames`` (links, or frames merged into links, as ``Contact`` takes them): block
    (a, b) maps a wrench [m; f] applied at frame b, in b's own axes, to the spatial acceleration [ω̇; v̇] it gives
    frame a at rest, in a's own axes — J_a M⁻¹ J_bᵀ with LOCAL Jacobians (Pinocchio: ``getFrameJacobian(...,
    LOCAL)`` and ``computeMinverse``, rows [v; ω]; ``computeDelassusMatrix`` for contacts). A floating base is
    free (its pose ``base_pose``); transmissions constrain the accelerations as in forward dynamics.

    ``method="elimination"`` (paper 003's C-EFPA, as a factor graph): forward dynamics at rest (τ = 0, no gravity)
    with a wrench variable at each frame and the frame's acceleration as a variable, eliminated in ``ordering``
    except those: paper 003's "efpa" (the tree algorithm: the articulated-body ordering, "aba") and
    "cluster_efpa" (C-EFPA, clusters of coupled joints: "cluster_aba"), its baselines "lagrange" and "projection",
    or any other that applies to forward dynamics; the rows left relate them, and Λ⁻¹ is read off them.
    ``method="forward solves"``: one forward solve per unit wrench, its accelerations read through every frame's
    Jacobian — the way closed loops take (the elimination does not cover them)."""
    robot = robot_argument(robot)
    frames = _moving_frames(robot, frames)
    ordering = EFPA_ORDERINGS.get(ordering, ordering) if isinstance(ordering, str) else ordering
    zero = np.zeros(robot.num_dofs)
    if choice("method", method, METHODS) == "elimination":
        covered(robot, "operational_space_inverse_inertia(method=\"elimination\")", loops=False,
                advice='method="forward solves" covers closed loops')
        # the verdict of the dynamics themselves: M singular (a moving massless subtree) raises, ill-conditioned
        # warns, as forward dynamics at this configuration do; the partial elimination below has no verdict of its own
        forward_dynamics(robot, q, zero, zero, base_pose=base_pose, gravity=NO_GRAVITY, ordering=ordering)
        return _by_elimination(robot, q, frames, base_pose, ordering)
    jacobians = [frame_jacobian(robot, q, frame, base_pose=base_pose) for frame in frames]
    columns = []
    for frame in frames:
        for wrench in np.eye(6):
            r = forward_dynamics(robot, q, zero, zero, base_pose=base_pose, gravity=NO_GRAVITY,
                                 external_wrenches={frame: wrench}, ordering=ordering)
            accelerations = np.concatenate([r.base_accel, r.qdd]) if robot.floating_base else r.qdd
            columns.append(np.concatenate([J @ accelerations for J in jacobians]))
    return np.column_stack(columns)


def operational_space_dag(robot: Robot, q, frames, *, base_pose=None, ordering=None):
    """The DAG (``gtdyn.analysis.dag.elimination_dag``) of ``operational_space_inverse_inertia``'s elimination:
    every variable but the frames' wrenches C_k in ``ordering``, then the frames' accelerations X_k, whose parents
    are the wrenches (Λ⁻¹ read off as a conditional)."""
    from gtdyn.analysis.dag import elimination_dag  # networkx: only when a DAG is asked for

    robot = robot_argument(robot)
    ordering = EFPA_ORDERINGS.get(ordering, ordering) if isinstance(ordering, str) else ordering
    graph, order, accelerations = _elimination_graph(robot, q, _moving_frames(robot, frames), base_pose, ordering)
    return elimination_dag(graph, gtsam.Ordering(order + accelerations))


def _moving_frames(robot: Robot, frames) -> list[str]:
    """``frames`` checked: links or frames of ``robot``, none welded to the world (else the check of the contacts
    or wrenches the methods build would name their own argument, not ``frames``)."""
    frames = frame_list(robot, "frames", frames)
    for frame in frames:
        wrench_frame(robot, frame, "frames")
    return frames


def _by_elimination(robot: Robot, q, frames: list[str], base_pose, ordering) -> np.ndarray:
    """Λ⁻¹ as what remains of one elimination (``_elimination_graph``): the rows left relate the frames'
    accelerations X and wrenches C, A_X X + A_C C = 0, so Λ⁻¹ = −A_X⁻¹ A_C."""
    graph, order, _ = _elimination_graph(robot, q, frames, base_pose, ordering)
    _, remaining = graph.eliminatePartialSequential(gtsam.Ordering(order), gtsam.EliminateQR)
    A, _ = remaining.jacobian()  # columns by key: the C_k ('C') before the X_k ('X'); QR leaves some rows zero
    A = A[np.any(A != 0.0, axis=1)]
    columns = 6 * len(frames)
    return -np.linalg.solve(A[:, columns:], A[:, :columns])


def _elimination_graph(robot: Robot, q, frames: list[str], base_pose, ordering) -> tuple:
    """The graph of forward dynamics at rest (τ = 0, no gravity) with a wrench variable C_k at each frame (a
    surface contact's, without its constraint rows) and the frame's acceleration X_k = Ad(kTi) V̇_i; the
    elimination order of every other variable (``ordering`` resolved on the graph without the X_k); the X_k."""
    n = robot.num_dofs
    query = ask(robot, "forward", q, np.zeros(n), tau=np.zeros(n), base_pose=base_pose, gravity=NO_GRAVITY,
                contacts=[Contact(frame, kind="surface") for frame in frames])
    kin, problem = kinematics_of(query), query.problem
    graph = gtsam.GaussianFactorGraph()
    for eq, roles, soft in dynamics_equations(robot, kin, problem, NO_GRAVITY, contact_rows=False):
        if not soft:  # the least-norm rows on contact forces: here the forces are given, not chosen
            add_equation(graph, eq, roles, False)
    wrenches = [keys.contact_key(c.number, c.dim) for c in problem.contacts]
    order = [key for key in _keys_of(resolve_ordering(ordering, robot, problem, graph)) if key not in wrenches]
    accelerations = []
    for contact in problem.contacts:  # on a moving body each: ``ask`` refuses a frame welded to the world
        X = keys.frame_accel_key(contact.number)
        add_equation(graph, LinearEquation({"X": np.eye(6), "A": -Ad(contact.iTc.inverse())}, np.zeros(6)),
                     {"X": Key(X), "A": Key(keys.twist_accel_key(contact.body))}, False)
        accelerations.append(X)
    return graph, order, accelerations


def _keys_of(ordering: gtsam.Ordering) -> list[int]:
    return [ordering.at(i) for i in range(ordering.size())]
