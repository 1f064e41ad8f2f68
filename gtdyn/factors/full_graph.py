"""The full nonlinear dynamics graph (paper 001, Fig. 1 and 3): every quantity a variable, every equation a
``CustomFactor``. Useful where q and q̇ are themselves unknown (estimation, trajectory optimisation); for a
single dynamics solve at known (q, q̇) ``gtdyn.dynamics`` builds the linear graph directly.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping

import gtsam
import numpy as np

from gtdyn import keys as K
from gtdyn.equations import GRAVITY
from gtdyn.errors import ArgumentError
from gtdyn.factors import (PlanarFactor, PoseFactor, TorqueFactor, TwistAccelFactor, TwistFactor, WrenchFactor,
                           joint_prior)
from gtdyn.model.robot import Robot


def full_dynamics_graph(robot: Robot, gravity=GRAVITY,
                        external_wrenches: Mapping[int, np.ndarray] | None = None,
                        planar: Mapping[int, np.ndarray] | None = None, step: int = 0) -> gtsam.NonlinearFactorGraph:
    """Pose, twist (eq. 4), twist-acceleration (eq. 5) and torque (eq. 7) factors per joint (loop-closing
    ones too), a wrench factor (eq. 6) per moving link, and a planar factor on each loop joint j in ``planar``
    (j → plane normal). ``external_wrenches[i]``: on link i, in its CoM frame. No priors. ``step``: the time
    step k of every variable (``keys.at_step``; 0, the default, is the single-instant keys), so that graphs
    at successive steps can be joined by integration factors into a trajectory."""
    if robot.transmissions:
        raise ArgumentError(f"robot: the full nonlinear graph has no transmission factors yet; '{robot.name}' has "
                            f"{', '.join(t.name for t in robot.transmissions)}")
    external_wrenches, planar = external_wrenches or {}, planar or {}
    at = _stepper(step)
    graph = gtsam.NonlinearFactorGraph()
    for joint in robot.joints:
        j, p, c = joint.index, robot.link(joint.parent).index, robot.link(joint.child).index
        # Link index 0 is the fixed base, which has no variables (a loop may close onto it: c == 0).
        T_p, V_p, A_p = _link_keys(p, at)
        T_c, V_c, A_c = _link_keys(c, at)
        q, v, a = at(K.joint_angle_key(j)), at(K.joint_vel_key(j)), at(K.joint_accel_key(j))
        graph.add(PoseFactor(joint, T_p, T_c, q))
        graph.add(TwistFactor(joint, V_c, V_p, q, v))
        graph.add(TwistAccelFactor(joint, A_c, A_p, q, v, a, V_c))
        graph.add(TorqueFactor(joint, at(K.wrench_key(j)), at(K.torque_key(j))))
        if j in planar:
            graph.add(PlanarFactor(at(K.wrench_key(j)), T_c, planar[j]))
    for link in robot.links:
        i = link.index
        into = [at(K.wrench_key(jt.index)) for jt in robot.joints_into(link.name)]
        out_of = [(jt, at(K.wrench_key(jt.index)), at(K.joint_angle_key(jt.index)))
                  for jt in robot.joints_out_of(link.name)]
        graph.add(WrenchFactor(link, at(K.twist_accel_key(i)), at(K.twist_key(i)), at(K.pose_key(i)), into, out_of,
                               gravity=gravity, external=external_wrenches.get(i)))
    return graph


def _link_keys(i: int, at) -> tuple:
    """Pose, twist and acceleration keys of link i; None for the fixed base (index 0), which has no variables."""
    if i == 0:
        return None, None, None
    return at(K.pose_key(i)), at(K.twist_key(i)), at(K.twist_accel_key(i))


def _stepper(step):
    """key → the same key at time step ``step`` (the identity at step 0)."""
    if isinstance(step, bool) or not isinstance(step, numbers.Integral) or step < 0:
        raise ArgumentError(f"step: expected a time step ≥ 0 (a whole number), got {step!r}")
    step = int(step)
    if step == 0:
        return lambda key: key
    try:
        K.at_step(K.joint_angle_key(1), step)
    except ValueError as e:
        raise ArgumentError(f"step: {e}") from None
    return lambda key: K.at_step(key, step)


def joint_priors(robot: Robot, name_to_key, values) -> gtsam.NonlinearFactorGraph:
    """Hard priors fixing a joint quantity: ``name_to_key`` is e.g. ``keys.joint_angle_key``."""
    graph = gtsam.NonlinearFactorGraph()
    for joint, value in zip(robot.joints, values):
        graph.add(joint_prior(name_to_key(joint.index), value))
    return graph


def zero_values(robot: Robot, step: int = 0) -> gtsam.Values:
    """An initial estimate: every variable (at time step ``step``) zero, every pose the identity."""
    at = _stepper(step)
    values = gtsam.Values()
    for joint in robot.joints:
        j = joint.index
        for key in (K.joint_angle_key(j), K.joint_vel_key(j), K.joint_accel_key(j), K.torque_key(j)):
            values.insert(at(key), np.zeros(1))
        values.insert(at(K.wrench_key(j)), np.zeros(6))
    for link in robot.links:
        i = link.index
        values.insert(at(K.twist_key(i)), np.zeros(6))
        values.insert(at(K.twist_accel_key(i)), np.zeros(6))
        values.insert(at(K.pose_key(i)), gtsam.Pose3())
    return values
