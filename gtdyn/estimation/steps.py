"""Building blocks of graphs over time steps: one step's dynamics factors, the integration factors between two
steps, and a step's values from a dynamics solve."""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn import keys as K
from gtdyn.dynamics.solve import forward_dynamics, hybrid_dynamics, inverse_dynamics
from gtdyn.arguments import robot_argument
from gtdyn.errors import ArgumentError
from gtdyn.factors import integration_factors, joint_prior
from gtdyn.factors.full_graph import full_dynamics_graph
from gtdyn.kinematics.forward import forward_kinematics
from gtdyn.kinematics.loop_closure import independent_joints
from gtdyn.kinematics.loops import loop_plane_normal
from gtdyn.model.robot import Robot


def check_robot(robot) -> Robot:
    robot_argument(robot)
    if robot.floating_base:
        raise ArgumentError(f"robot: estimation covers fixed bases so far; '{robot.name}' has a floating base")
    if robot.transmissions:  # the full nonlinear graph has no transmission factors yet
        raise ArgumentError(f"robot: estimation does not cover transmissions yet; '{robot.name}' has "
                            f"{', '.join(t.name for t in robot.transmissions)} (load it with "
                            "transmissions='approximate' or 'independent')")
    return robot


def planar_normals(robot: Robot, q: np.ndarray) -> dict[int, np.ndarray]:
    """Loop joint index → plane normal, for each planar loop at configuration q (``loop_plane_normal``): the
    planar factor that fixes the loop joint's out-of-plane wrench, which the dynamics leave free. The normals
    are found once and held over a whole run, which assumes the loops' planes do not turn (true of loops
    whose joints outside the loop, if any, turn about the same normal)."""
    kin = forward_kinematics(robot, q, np.zeros(robot.num_dofs))
    out = {}
    for joint, loop in zip(robot.loop_joints, robot.loops):
        normal = loop_plane_normal(robot, kin, loop)
        if normal is not None:
            out[joint.index] = normal
    return out


def integrated_joints(robot: Robot, q: np.ndarray) -> list[int]:
    """Indices of the joints that carry integration factors: every joint of a tree; on closed loops the
    independent joints only (actuated ones first), the loops' pose, twist and acceleration factors carrying
    the others. Integrating every joint of a loop would over-determine the step: the integrators' q_{k+1} would
    have to close the loops too, which no one-step rule does exactly."""
    if not robot.loop_joints:
        return [j.index for j in robot.joints]
    return [robot.joint(name).index for name in independent_joints(robot, robot.actuated_joint_names, q)]


def step_graph(robot: Robot, k: int, gravity, planar: dict[int, np.ndarray]) -> gtsam.NonlinearFactorGraph:
    """The full dynamics graph at step k, with hard priors τ = 0 on the passive joints."""
    graph = full_dynamics_graph(robot, gravity, planar=planar, step=k)
    for joint in robot.joints:
        if not joint.actuated:
            graph.add(joint_prior(K.at_step(K.torque_key(joint.index), k), 0.0))
    return graph


def between_steps(joints: list[int], k: int, dt: float, rule: str, model=None) -> gtsam.NonlinearFactorGraph:
    """The integration factors (position and velocity level) of ``joints`` between steps k and k + 1."""
    graph = gtsam.NonlinearFactorGraph()
    for j in joints:
        for factor in integration_factors(j, k, dt, rule, model):
            graph.add(factor)
    return graph


def joint_key(kind, j: int, k: int) -> int:
    """``kind`` is a key function such as ``keys.joint_angle_key``."""
    return K.at_step(kind(j), k)


def state_values(robot: Robot, k: int, q, v, *, qdd=None, tau=None, gravity) -> gtsam.Values:
    """Every variable of step k at a state that closes the loops: inverse dynamics when ``qdd`` is given (on
    an underactuated robot, whose passive joints' q̈ the dynamics decide, hybrid dynamics with the actuated
    joints' q̈ and the passive joints' τ = 0), else forward dynamics with torques ``tau``."""
    passive = [joint.name for joint in robot.joints if not joint.actuated]
    if qdd is not None and passive and len(independent_joints(robot, robot.actuated_joint_names, q)) > \
            len(robot.actuated_joint_names):
        names = robot.joint_names
        r = hybrid_dynamics(robot, q, v, qdd={n: qdd[names.index(n)] for n in robot.actuated_joint_names},
                            tau={n: 0.0 for n in passive}, gravity=gravity)
    elif qdd is not None:
        r = inverse_dynamics(robot, q, v, qdd, gravity=gravity)
    else:
        r = forward_dynamics(robot, q, v, tau, gravity=gravity)
    kin = forward_kinematics(robot, q, v)
    values = gtsam.Values()

    def put(key: int, value) -> None:
        values.insert(K.at_step(key, k), np.asarray(value, float))

    for joint in robot.joints:
        j = joint.index
        for key, x in ((K.joint_angle_key(j), q), (K.joint_vel_key(j), v), (K.joint_accel_key(j), r.qdd),
                       (K.torque_key(j), r.tau)):
            put(key, [x[j - 1]])
        put(K.wrench_key(j), r.wrenches[joint.name])
    for link in robot.links:
        i = link.index
        values.insert(K.at_step(K.pose_key(i), k), kin.wT[i])
        put(K.twist_key(i), r.twists[link.name])
        put(K.twist_accel_key(i), r.twist_accels[link.name])
    return values


def joint_series(values: gtsam.Values, robot: Robot, kind, steps) -> np.ndarray:
    """A joint quantity (``kind``: e.g. ``keys.torque_key``) over ``steps``: rows in time, columns by joint."""
    return np.array([[values.atVector(K.at_step(kind(j.index), k))[0] for j in robot.joints] for k in steps])
