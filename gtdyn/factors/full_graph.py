"""The full nonlinear dynamics graph (paper 001, Fig. 1 and 3): every quantity a variable, every equation a
``CustomFactor``. Useful where q and q̇ are themselves unknown (estimation, trajectory optimisation); for a
single dynamics solve at known (q, q̇) ``gtdyn.dynamics`` builds the linear graph directly.
"""

from __future__ import annotations

from collections.abc import Mapping

import gtsam
import numpy as np

from gtdyn import keys as K
from gtdyn.equations import GRAVITY
from gtdyn.factors import PlanarFactor, PoseFactor, TorqueFactor, TwistAccelFactor, TwistFactor, WrenchFactor, joint_prior
from gtdyn.model.robot import Robot


def full_dynamics_graph(robot: Robot, gravity=GRAVITY,
                        external_wrenches: Mapping[int, np.ndarray] | None = None,
                        planar: Mapping[int, np.ndarray] | None = None) -> gtsam.NonlinearFactorGraph:
    """Pose, twist (eq. 4), twist-acceleration (eq. 5) and torque (eq. 7) factors per joint (loop-closing
    ones too), a wrench factor (eq. 6) per moving link, and a planar factor on each loop joint j in ``planar``
    (j → plane normal). ``external_wrenches[i]``: on link i, in its CoM frame. No priors."""
    external_wrenches, planar = external_wrenches or {}, planar or {}
    graph = gtsam.NonlinearFactorGraph()
    for joint in robot.joints:
        j, p, c = joint.index, robot.link(joint.parent).index, robot.link(joint.child).index
        # Link index 0 is the fixed base, which has no variables (a loop may close onto it: c == 0).
        T_p, V_p, A_p = (None, None, None) if p == 0 else (K.pose_key(p), K.twist_key(p), K.twist_accel_key(p))
        T_c, V_c, A_c = (None, None, None) if c == 0 else (K.pose_key(c), K.twist_key(c), K.twist_accel_key(c))
        q, v, a = K.joint_angle_key(j), K.joint_vel_key(j), K.joint_accel_key(j)
        graph.add(PoseFactor(joint, T_p, T_c, q))
        graph.add(TwistFactor(joint, V_c, V_p, q, v))
        graph.add(TwistAccelFactor(joint, A_c, A_p, q, v, a, V_c))
        graph.add(TorqueFactor(joint, K.wrench_key(j), K.torque_key(j)))
        if j in planar:
            graph.add(PlanarFactor(K.wrench_key(j), T_c, planar[j]))
    for link in robot.links:
        i = link.index
        into = [K.wrench_key(jt.index) for jt in robot.joints_into(link.name)]
        out_of = [(jt, K.wrench_key(jt.index), K.joint_angle_key(jt.index)) for jt in robot.joints_out_of(link.name)]
        graph.add(WrenchFactor(link, K.twist_accel_key(i), K.twist_key(i), K.pose_key(i), into, out_of,
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
