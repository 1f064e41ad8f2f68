"""The full nonlinear dynamics graph (paper 001, Fig. 1 and 3): every quantity a variable, every equation a
``CustomFactor``. Useful where q and q̇ are themselves unknown (estimation, trajectory optimisation); for a
single dynamics solve at known (q, q̇) ``gtdyn.dynamics`` builds the linear graph directly.
"""

from __future__ import annotations

from collections.abc import Mapping

import gtsam
import numpy as np

from gtdyn import keys as K
from gtdyn.factors import PoseFactor, TorqueFactor, TwistAccelFactor, TwistFactor, WrenchFactor, joint_prior
from gtdyn.robot import Robot


def full_dynamics_graph(robot: Robot, gravity=(0.0, 0.0, -9.81),
                        external_wrenches: Mapping[int, np.ndarray] | None = None) -> gtsam.NonlinearFactorGraph:
    """Pose, twist (eq. 4), twist-acceleration (eq. 5) and torque (eq. 7) factors per joint, a wrench
    factor (eq. 6) per moving link. ``external_wrenches[i]``: on link i, in its CoM frame. No priors."""
    external_wrenches = external_wrenches or {}
    graph = gtsam.NonlinearFactorGraph()
    for joint in robot.joints:
        j, p = joint.index, robot.link(joint.parent).index
        on_base = p == 0
        q, v, a = K.joint_angle_key(j), K.joint_vel_key(j), K.joint_accel_key(j)
        graph.add(PoseFactor(joint, None if on_base else K.pose_key(p), K.pose_key(j), q))
        graph.add(TwistFactor(joint, K.twist_key(j), None if on_base else K.twist_key(p), q, v))
        graph.add(TwistAccelFactor(joint, K.twist_accel_key(j), None if on_base else K.twist_accel_key(p), q, v, a,
                                   K.twist_key(j)))
        graph.add(TorqueFactor(joint, K.wrench_key(j), K.torque_key(j)))
    for link in robot.links:
        i = link.index
        children = [(c, K.wrench_key(c.index), K.joint_angle_key(c.index)) for c in robot.child_joints(link.name)]
        graph.add(WrenchFactor(link, K.twist_accel_key(i), K.twist_key(i), K.pose_key(i), K.wrench_key(i), children,
                               gravity=gravity, external=external_wrenches.get(i)))
    return graph


def joint_priors(robot: Robot, name_to_key, values) -> gtsam.NonlinearFactorGraph:
    """Hard priors fixing a joint quantity: ``name_to_key`` is e.g. ``keys.joint_angle_key``."""
    graph = gtsam.NonlinearFactorGraph()
    for joint, value in zip(robot.joints, values):
        graph.add(joint_prior(name_to_key(joint.index), value))
    return graph


def zero_values(robot: Robot) -> gtsam.Values:
    """An initial estimate: every variable zero, every pose the identity."""
    values = gtsam.Values()
    for joint in robot.joints:
        j = joint.index
        for key in (K.joint_angle_key(j), K.joint_vel_key(j), K.joint_accel_key(j), K.torque_key(j)):
            values.insert(key, np.zeros(1))
        values.insert(K.wrench_key(j), np.zeros(6))
    for link in robot.links:
        i = link.index
        values.insert(K.twist_key(i), np.zeros(6))
        values.insert(K.twist_accel_key(i), np.zeros(6))
        values.insert(K.pose_key(i), gtsam.Pose3())
    return values
