"""Frame kinematics for users: where a named frame is, how it moves, and its Jacobian (Pinocchio's ``oMf``,
``getFrameVelocity``, ``getFrameAcceleration``, ``getFrameJacobian``, ``getFrameJacobianTimeVariation``).

The dynamics work in each body's centre-of-mass frame (``KinematicState.wT``, ``.V``); users ask about the frames
of their file: any name in ``robot.frames`` (every URDF/SDF link, those merged into a body by a fixed joint
included, and the base link). Each function here runs the one kinematics pass (``forward_kinematics``) and moves
its answer from the body's dynamics frame to the named frame, which is fixed in that body.

Conventions (as everywhere in gtdyn, angular first; Pinocchio's motions are [linear; angular]):

* a frame's twist is V_f = [ω; v]: its angular velocity and the velocity of its origin;
* ``reference="local"``: in the frame's own axes (Pinocchio's LOCAL); ``"world_aligned"``: in the world's axes,
  still at the frame's origin (LOCAL_WORLD_ALIGNED);
* velocity-sized inputs are q̇ in ``robot.joint_names`` order, after a floating base's twist [ω; v] of the root
  link in its own frame (Pinocchio's free-flyer velocity in the other order): nv = 6 + n joints, or n.
"""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.arguments import choice, finite_vector, joint_positions, joint_vector, robot_argument
from gtdyn.arguments.base import base_state, refuse_on_fixed_base
from gtdyn.equations import twist_accel_equation
from gtdyn.kinematics.forward import KinematicState, forward_kinematics
from gtdyn.model.base_frame import pose_to_link, twist_to_com
from gtdyn.model.robot import Robot
from gtdyn.spatial import Ad

REFERENCES = ("local", "world_aligned")


# -- what every function shares: the frame's body, the state, the axes ------------------------------------------

def frame_on_body(robot: Robot, frame: str) -> tuple[int, gtsam.Pose3]:
    """(i, iTf): the index of the body ``frame`` is fixed in, and the frame's pose in that body's dynamics frame
    (its CoM frame; a fixed base's is its link frame, the world)."""
    return robot_argument(robot).frame_in_body(choice("frame", frame, robot.frames))


def checked_state(robot: Robot, q, v=None, base_pose=None, base_twist=None) -> KinematicState:
    """The kinematics pass at (q, q̇) (q̇ = 0 if None), the arguments checked at the boundary first. Transmissions
    are not enforced: the kinematics of any joint values are defined (the independent reading)."""
    robot = robot_argument(robot)
    q = joint_positions(robot, "q", q)
    v = np.zeros(robot.num_dofs) if v is None else joint_vector(robot, "v", v)
    base = base_state(robot, base_pose, base_twist)
    return forward_kinematics(robot, q, v, *((None, None) if base is None else (base.pose, base.twist)))


def _axes(wTf: gtsam.Pose3, reference: str) -> np.ndarray:
    """The 6×6 map from a 6-vector in the frame's own axes to ``reference``'s axes (both at the frame's origin)."""
    if reference == "local":
        return np.eye(6)
    R = wTf.rotation().matrix()
    return np.block([[R, np.zeros((3, 3))], [np.zeros((3, 3)), R]])


def _base_accel(robot: Robot, base_accel) -> np.ndarray | None:
    """A floating base's acceleration [ω̇; v̇] in the root link frame (zero if None); refused on a fixed base."""
    refuse_on_fixed_base(robot, base_accel=base_accel)
    if not robot.floating_base:
        return None
    return np.zeros(6) if base_accel is None else finite_vector("base_accel", base_accel, 6)


def link_accelerations(robot: Robot, kin: KinematicState, qdd: np.ndarray,
                       base_accel: np.ndarray | None = None) -> list[np.ndarray]:
    """A[i], the twist acceleration V̇ of every body in its dynamics frame (index 0 the base), root → leaves along
    the spanning tree by eq. 5 solved for V̇_c: V̇_c = Ad(cTp) V̇_p + S q̈ + [ad_Vc] S q̇. A fixed base does not
    accelerate (gravity is not in A, as in Pinocchio's ``data.a``); a floating base's ``base_accel`` is [ω̇; v̇] of
    its root link frame, the time derivative of its body twist."""
    A = [np.zeros(6)] * (len(robot.links) + 1)
    if robot.floating_base and base_accel is not None:
        A[0] = twist_to_com(robot) @ base_accel
    for joint in robot.tree_joints:  # forward pass
        j, p = joint.index, robot.link(joint.parent).index
        eq = twist_accel_equation(kin.cTp[j], joint.screw_axis, kin.V[j], kin.v[j - 1])
        A[j] = eq.rhs - eq.coefficients["A_p"] @ A[p] - eq.coefficients["a"] @ qdd[j - 1:j]
    return A


def ancestors(robot: Robot, i: int) -> list[int]:
    """The tree joints from the base to body i (tree joint j's child is body j), leaf first."""
    path = []
    while i > 0:
        path.append(i)
        i = robot.parents[i]
    return path


# -- the public functions ----------------------------------------------------------------------------------------

def frame_placement(robot: Robot, q, frame: str, *, base_pose=None) -> gtsam.Pose3:
    """wTf: the pose of ``frame`` (any name in ``robot.frames``) in the world at joint values ``q`` (n).

    Pinocchio: ``forwardKinematics`` + ``updateFramePlacements``, then ``data.oMf[frame_id]``. A floating base
    stands at ``base_pose`` (world ← root link, Pose3 or 4×4; identity if None); a fixed base's link frame is the
    world."""
    i, iTf = frame_on_body(robot, frame)
    return checked_state(robot, q, base_pose=base_pose).wT[i].compose(iTf)


def frame_velocity(robot: Robot, q, v, frame: str, *, reference: str = "local", base_pose=None,
                   base_twist=None) -> np.ndarray:
    """V_f = [ω; v] (6): the twist of ``frame`` at (q, q̇), in ``reference``'s axes at the frame's origin:
    ``Ad(fTi) V_i`` from its body's twist V_i.

    Pinocchio: ``forwardKinematics(q, v)`` + ``getFrameVelocity(frame_id, LOCAL | LOCAL_WORLD_ALIGNED)``, whose
    vector is [v; ω]. A floating base moves with ``base_twist`` ([ω; v] of the root link in its own frame)."""
    choice("reference", reference, REFERENCES)
    i, iTf = frame_on_body(robot, frame)
    kin = checked_state(robot, q, v, base_pose, base_twist)
    return _axes(kin.wT[i].compose(iTf), reference) @ Ad(iTf.inverse()) @ kin.V[i]


def frame_acceleration(robot: Robot, q, v, qdd, frame: str, *, reference: str = "local", classical: bool = False,
                       base_pose=None, base_twist=None, base_accel=None) -> np.ndarray:
    """The acceleration (6) of ``frame`` at (q, q̇, q̈), in ``reference``'s axes at the frame's origin.

    ``classical=False``: the spatial acceleration [ω̇; v̇], the time derivative of the frame's twist in its own
    axes (``Ad(fTi) V̇_i``), then rotated to ``reference``'s axes — Pinocchio's ``getFrameAcceleration``.
    ``classical=True``: [ω̇; p̈], with p̈ the acceleration of the frame's origin, v̇ + ω × v — Pinocchio's
    ``getFrameClassicalAcceleration``. Both after ``forwardKinematics(q, v, a)``; Pinocchio's order is [linear;
    angular]. Gravity is not included. A floating base accelerates with ``base_accel`` ([ω̇; v̇], the time
    derivative of ``base_twist``; zero if None)."""
    choice("reference", reference, REFERENCES)
    i, iTf = frame_on_body(robot, frame)
    kin = checked_state(robot, q, v, base_pose, base_twist)
    accel = _base_accel(robot, base_accel)
    A = link_accelerations(robot, kin, joint_vector(robot, "qdd", qdd), accel)
    return acceleration_of_frame(kin, A[i], i, iTf, reference, classical)


def acceleration_of_frame(kin: KinematicState, A_i: np.ndarray, i: int, iTf: gtsam.Pose3, reference: str,
                        classical: bool) -> np.ndarray:
    """Body i's V̇_i moved to frame f (``frame_acceleration``), with the origin's ω × v if ``classical``."""
    fTi = Ad(iTf.inverse())
    A_f = fTi @ A_i
    if classical:
        V_f = fTi @ kin.V[i]
        A_f = A_f + np.concatenate([np.zeros(3), np.cross(V_f[:3], V_f[3:])])
    return _axes(kin.wT[i].compose(iTf), reference) @ A_f


def frame_jacobian(robot: Robot, q, frame: str, *, reference: str = "local", base_pose=None) -> np.ndarray:
    """J (6 × nv): the map from velocities to ``frame``'s twist [ω; v] in ``reference``'s axes, V_f = J q̇.

    Column of joint j: its screw axis S_j (in its child's CoM frame c) moved to the frame, Ad(fTc) S_j, for the
    tree joints between the base and the frame's body; zero for the others, loop-closing joints included (the
    twist is the spanning tree's: ``gtdyn.close_loops`` gives a closed chain's consistent q̇). A floating base adds
    6 leading columns Ad(fTl), l the root link frame, for its twist [ω; v] in that frame (which is also the
    placement's derivative under base_pose · Exp(ξ)).

    Pinocchio: ``computeFrameJacobian(q, frame_id, LOCAL | LOCAL_WORLD_ALIGNED)``, rows [v; ω] and a free
    flyer's columns [v; ω]. Transmissions: one column per joint of ``robot.joint_names`` (the independent
    reading). For a coupled reading, J G is the Jacobian in the drives, with G = ∂q/∂q_drives (n × drives): the
    identity's column at each independent joint, and each transmission's ratios in its dependent joint's row."""
    choice("reference", reference, REFERENCES)
    i, iTf = frame_on_body(robot, frame)
    kin = checked_state(robot, q, base_pose=base_pose)
    wTf = kin.wT[i].compose(iTf)
    fTw = wTf.inverse()
    base = 6 if robot.floating_base else 0
    J = np.zeros((6, base + robot.num_dofs))
    if robot.floating_base:
        J[:, :6] = Ad(fTw.compose(pose_to_link(robot, kin.wT[0])))
    for j in ancestors(robot, i):
        J[:, base + j - 1] = Ad(fTw.compose(kin.wT[j])) @ robot.joints[j - 1].screw_axis
    return _axes(wTf, reference) @ J


def frame_bias_acceleration(robot: Robot, q, v, frame: str, *, reference: str = "local", base_pose=None,
                            base_twist=None) -> np.ndarray:
    """J̇ q̇ (6): the time derivative of ``frame_jacobian`` (same ``reference``) times the velocity, so that the
    frame's acceleration is J q̈ + J̇ q̇ — what operational-space control and contact constraints need.

    It is the frame's acceleration at q̈ = 0 (and a floating base's ``base_accel`` = 0): under ``"local"`` the
    spatial acceleration (``frame_acceleration``), under ``"world_aligned"`` the classical one [ω̇; p̈] in world
    axes (``frame_acceleration(..., classical=True)``), since J q̇ is then [ω; ṗ] in fixed axes.

    Pinocchio: ``computeJointJacobiansTimeVariation(q, v)`` + ``getFrameJacobianTimeVariation(frame_id, rf)``
    times v; equally ``getFrameAcceleration`` (LOCAL) or ``getFrameClassicalAcceleration``
    (LOCAL_WORLD_ALIGNED) after ``forwardKinematics(q, v, 0)``; Pinocchio's order is [linear; angular]."""
    choice("reference", reference, REFERENCES)
    i, iTf = frame_on_body(robot, frame)
    kin = checked_state(robot, q, v, base_pose, base_twist)
    A = link_accelerations(robot, kin, np.zeros(robot.num_dofs), None)
    return acceleration_of_frame(kin, A[i], i, iTf, reference, classical=reference == "world_aligned")
