"""Joint-space and whole-body quantities of a robot at a state: the mass matrix, the bias and gravity forces (from
inverse dynamics, i.e. from eliminations of the dynamics graph), the centre of mass, its Jacobian, centroidal
momentum and the energies (from one forward-kinematics pass) — what Pinocchio computes with ``crba``,
``nonLinearEffects``, ``computeGeneralizedGravity``, ``centerOfMass``, ``jacobianCenterOfMass``,
``computeCentroidalMomentum``, ``computeKineticEnergy`` and ``computePotentialEnergy``.

Coordinates. A fixed-base robot has nv = n = ``robot.num_dofs`` coordinates, in ``robot.joint_names`` order. A
floating base puts six more first: its body twist [ω; v] in the root link frame (gtdyn's base tangent; Pinocchio's
free flyer orders it [v; ω]), so nv = 6 + n, and generalized forces start with the base wrench [m; f] in the root
link frame (Pinocchio's [f; m]). Velocity arguments stay as elsewhere in gtdyn: ``v`` the joint rates, ``base_twist``
the base's.

Which bodies. These are the quantities of the rigid bodies with every joint free: a transmission's coupling
(``transmissions="exact"``) is not applied, so M and the forces are those of Pinocchio's default reading of the file
(project them onto the coupling, G: Gᵀ M G, Gᵀ h, to get the coupled ones); passive joints get their generalized
force like any other. The mass matrix and the forces need every joint's acceleration to be free, which a closed
loop forbids: those three refuse robots with loops. A fixed base's own mass never moves, so it is left out of the
centre of mass, the momentum and the energies, as Pinocchio leaves out its universe body. A joint's armature
(``transmissions="approximate"``) adds to M's diagonal, as ``model.armature`` does to Pinocchio's ``crba``, but to
no body's kinetic energy: there T = ½ νᵀ M ν holds without it.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from gtdyn.arguments import covered, gravity_vector, joint_positions, joint_vector, robot_argument
from gtdyn.arguments.base import base_state
from gtdyn.arguments.query import ask
from gtdyn.dynamics.reference import solve_query
from gtdyn.equations import GRAVITY
from gtdyn.kinematics.forward import KinematicState, forward_kinematics
from gtdyn.model.robot import Link, Robot
from gtdyn.spatial import Ad

NO_GRAVITY = (0.0, 0.0, 0.0)


# -- from inverse dynamics ------------------------------------------------------------------------------------


def mass_matrix(robot: Robot, q, *, base_pose=None, ordering="rnea") -> np.ndarray:
    """M(q), the joint-space inertia matrix (nv × nv; Pinocchio's ``crba``, whose M it equals up to the floating
    base's [v; ω] → [ω; v] order).

    Column j is inverse dynamics at q̇ = 0 with no gravity and the unit acceleration e_j: M e_j. For a floating
    base the first six columns are base accelerations ``base_accel`` = e_j with q̈ = 0, and each column's first
    six rows are the base wrench; M does not depend on ``base_pose`` (world ← root link), which is accepted for
    symmetry with the other functions. Each column is one elimination of the dynamics graph in ``ordering``
    (default "rnea": back-substitution is the recursive Newton–Euler algorithm, so this is M by nv RNEA calls, the
    textbook way before CRBA); any ordering that applies to inverse dynamics gives the same M. The columns are
    separate solves, so M is symmetric to round-off, not bitwise. For all columns in one machine-code call, see
    ``gtdyn.compiled.quantities.compile_mass_matrix``."""
    free = rigid_bodies(robot)
    n = free.num_dofs
    zeros = np.zeros(n)
    base_columns = [dict(qdd=zeros, base_accel=e) for e in np.eye(6)] if free.floating_base else []
    joint_columns = [dict(qdd=e) for e in np.eye(n)]
    return np.column_stack([
        _generalized_force(free, q, zeros, gravity=NO_GRAVITY, base_pose=base_pose, ordering=ordering, **column)
        for column in base_columns + joint_columns])


def bias_forces(robot: Robot, q, v, *, gravity=GRAVITY, base_pose=None, base_twist=None,
                ordering="rnea") -> np.ndarray:
    """h(q, q̇): Coriolis, centrifugal and gravity forces (nv; Pinocchio's ``nonLinearEffects``), so that
    M q̈ + h = τ. Inverse dynamics at q̈ = 0 (and a floating base's ``base_accel`` = 0, moving with ``base_twist``
    at ``base_pose``; its rows are the base wrench), eliminated in ``ordering``."""
    free = rigid_bodies(robot)
    return _generalized_force(free, q, v, qdd=np.zeros(free.num_dofs), gravity=gravity, base_pose=base_pose,
                              base_twist=base_twist, ordering=ordering)


def gravity_torques(robot: Robot, q, *, gravity=GRAVITY, base_pose=None, ordering="rnea") -> np.ndarray:
    """g(q): the generalized forces that hold the robot still against ``gravity`` (nv; Pinocchio's
    ``computeGeneralizedGravity``). Inverse dynamics at q̇ = q̈ = 0 (a floating base at rest at ``base_pose``: its
    rows are the base wrench that holds it up), eliminated in ``ordering``."""
    free = rigid_bodies(robot)
    n = free.num_dofs
    return _generalized_force(free, q, np.zeros(n), qdd=np.zeros(n), gravity=gravity, base_pose=base_pose,
                              ordering=ordering)


def rigid_bodies(robot: Robot) -> Robot:
    """The robot with every joint free and actuated (no transmission coupling, no passive joint), whose inverse
    dynamics give a generalized force at every joint for any acceleration; ``robot`` itself when it is so already.
    ArgumentError for closed loops, whose accelerations are not free."""
    covered(robot_argument(robot), "the mass matrix, bias and gravity forces per joint", loops=False,
            advice="loops couple the joints' accelerations; the kinematic quantities cover them")
    if not robot.transmissions and all(j.actuated for j in robot.joints):
        return robot
    joints = tuple(dataclasses.replace(j, actuated=True) for j in robot.joints)
    return dataclasses.replace(robot, joints=joints, transmissions=())


def _generalized_force(robot: Robot, q, v, *, qdd, gravity, ordering, base_pose=None, base_twist=None,
                       base_accel=None) -> np.ndarray:
    """Inverse dynamics' answer as one generalized force: [base wrench; τ] for a floating base, τ otherwise."""
    query = ask(robot, "inverse", q, v, qdd=qdd, base_pose=base_pose, base_twist=base_twist, base_accel=base_accel,
                gravity=gravity)
    result = solve_query(query, ordering=ordering)
    return np.concatenate([result.base_wrench, result.tau]) if robot.floating_base else result.tau


# -- from forward kinematics ----------------------------------------------------------------------------------


def center_of_mass(robot: Robot, q, *, base_pose=None) -> np.ndarray:
    """c(q): the centre of mass of the moving bodies in the world frame (3; Pinocchio's ``centerOfMass``)."""
    robot, kin, _ = _kinematics(robot, q, base_pose=base_pose)
    mass, moment = _mass_and_moment(robot, kin)
    return moment / mass


def center_of_mass_jacobian(robot: Robot, q, *, base_pose=None) -> np.ndarray:
    """J_c(q) with ċ = J_c [base twist; q̇] (3 × nv, world frame; Pinocchio's ``jacobianCenterOfMass``).

    A coordinate whose unit rate is the world-frame twist ξ = [ω; v] (a joint's screw axis, or one of a floating
    base's six) moves its subtree rigidly, every point p at v + ω × p; summed over the subtree's bodies this is
    (m_s v + ω × Σ m_i p_i) / m, with m_s the subtree's mass and m the robot's. One kinematics pass and one
    backward pass accumulate the subtrees. A loop-closing joint moves no body of the spanning tree: its column
    is zero."""
    robot, kin, base = _kinematics(robot, q, base_pose=base_pose)
    mass, moment = _subtree_masses(robot, kin)
    axes = [(Ad(base.pose) @ e, 0) for e in np.eye(6)] if robot.floating_base else []
    axes += [(Ad(kin.wT[j.index]) @ j.screw_axis, j.index) for j in robot.tree_joints]
    columns = [mass[i] * xi[3:] + np.cross(xi[:3], moment[i]) for xi, i in axes]
    columns += [np.zeros(3)] * len(robot.loop_joints)
    total = mass[0] if robot.floating_base else sum(link.mass for link in robot.links)
    return np.column_stack(columns) / total


def centroidal_momentum(robot: Robot, q, v, *, base_pose=None, base_twist=None) -> np.ndarray:
    """h_G: the moving bodies' momentum [angular; linear] about the centre of mass, in world-aligned axes (6;
    Pinocchio's ``computeCentroidalMomentum`` returns the same as [linear; angular]). Each body's momentum
    G_i V_i (CoM frame) is turned into world axes and its angular part moved from the body's CoM to the robot's."""
    robot, kin, _ = _kinematics(robot, q, v, base_pose, base_twist)
    mass, moment = _mass_and_moment(robot, kin)
    com = moment / mass
    angular, linear = np.zeros(3), np.zeros(3)
    for body in moving_bodies(robot):
        wTi = kin.wT[body.index]
        R = wTi.rotation().matrix()
        momentum = body.G @ kin.V[body.index]
        body_linear = R @ momentum[3:]
        angular += R @ momentum[:3] + np.cross(wTi.translation() - com, body_linear)
        linear += body_linear
    return np.concatenate([angular, linear])


def kinetic_energy(robot: Robot, q, v, *, base_pose=None, base_twist=None) -> float:
    """T = Σ ½ Vᵢᵀ Gᵢ Vᵢ (J; Pinocchio's ``computeKineticEnergy``), each body's twist and spatial inertia in its CoM
    frame: ½ νᵀ M ν with ν = [base twist; q̇] (without armature)."""
    robot, kin, _ = _kinematics(robot, q, v, base_pose, base_twist)
    return kinetic_energy_of(robot, kin)


def potential_energy(robot: Robot, q, *, gravity=GRAVITY, base_pose=None) -> float:
    """U = −Σ mᵢ g · pᵢ (J; Pinocchio's ``computePotentialEnergy``, same sign and reference): zero with every
    moving body's CoM pᵢ at the world origin, growing against ``gravity`` (world frame, m/s²)."""
    gravity = gravity_vector(gravity)
    robot, kin, _ = _kinematics(robot, q, base_pose=base_pose)
    return potential_energy_of(robot, kin, gravity)


def kinetic_energy_of(robot: Robot, kin: KinematicState) -> float:
    """Σ ½ Vᵢᵀ Gᵢ Vᵢ over the moving bodies of a kinematic state (each twist and inertia in the body's CoM frame)."""
    return float(sum(0.5 * kin.V[link.index] @ link.G @ kin.V[link.index] for link in moving_bodies(robot)))


def potential_energy_of(robot: Robot, kin: KinematicState, gravity: np.ndarray) -> float:
    """−Σ mᵢ g · pᵢ over the moving bodies of a kinematic state (pᵢ each CoM in the world)."""
    return float(-sum(link.mass * np.dot(gravity, kin.wT[link.index].translation()) for link in moving_bodies(robot)))


def moving_bodies(robot: Robot) -> tuple[Link, ...]:
    """The bodies that move: the links, and a floating base."""
    return (robot.base, *robot.links) if robot.floating_base else robot.links


def _kinematics(robot: Robot, q, v=None, base_pose=None, base_twist=None) -> tuple:
    """(robot, kinematic state, base state or None) from the user's arguments, checked."""
    robot = robot_argument(robot)
    q = joint_positions(robot, "q", q)
    v = np.zeros(robot.num_dofs) if v is None else joint_vector(robot, "v", v)
    base = base_state(robot, base_pose, base_twist)
    kin = forward_kinematics(robot, q, v, *(() if base is None else (base.pose, base.twist)))
    return robot, kin, base


def _mass_and_moment(robot: Robot, kin: KinematicState) -> tuple[float, np.ndarray]:
    """(Σ mᵢ, Σ mᵢ pᵢ) over the moving bodies, pᵢ each CoM in the world."""
    bodies = moving_bodies(robot)
    return (sum(body.mass for body in bodies),
            sum(body.mass * kin.wT[body.index].translation() for body in bodies))


def _subtree_masses(robot: Robot, kin: KinematicState) -> tuple[np.ndarray, np.ndarray]:
    """Per body index i: the mass of the spanning subtree rooted at i and its first moment Σ mₖ pₖ (world), by one
    backward pass over the parent array (a parent's index is below its children's); index 0 is the whole robot."""
    mass = np.zeros(len(robot.links) + 1)
    moment = np.zeros((len(robot.links) + 1, 3))
    for body in moving_bodies(robot):
        mass[body.index] = body.mass
        moment[body.index] = body.mass * kin.wT[body.index].translation()
    for i in range(len(robot.links), 0, -1):  # backward pass
        mass[robot.parents[i]] += mass[i]
        moment[robot.parents[i]] += moment[i]
    return mass, moment

