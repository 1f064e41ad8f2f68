"""The full nonlinear dynamics graph (paper 001, Fig. 1 and 3): every quantity a variable, every equation a
``CustomFactor``. Useful where q and q̇ are themselves unknown (estimation, trajectory optimisation); for a
single dynamics solve at known (q, q̇) ``gtdyn.dynamics`` builds the linear graph directly. Both evaluate the
same equations (``gtdyn.equations``), so the nonlinear graph has what the linear one has: a floating base (body
0, with pose T0, twist V0, acceleration A0 and the wrench F0 its environment applies), contacts (their force or
wrench variables c_k / C_k and acceleration constraints) and transmissions (constraint forces λ_k in the torque
factors, and the coupling at position, velocity and acceleration level).
"""

from __future__ import annotations

from collections.abc import Mapping

import gtsam
import numpy as np

from gtdyn import keys as K
from gtdyn.arguments import whole_number
from gtdyn.arguments.asked import place_contacts
from gtdyn.equations import GRAVITY
from gtdyn.errors import ArgumentError
from gtdyn.factors import (
    PlanarFactor,
    PoseFactor,
    TorqueFactor,
    TwistAccelFactor,
    TwistFactor,
    WrenchFactor,
    joint_prior,
)
from gtdyn.factors.contact import ContactFactor
from gtdyn.factors.transmission import TransmissionFactor
from gtdyn.model.robot import Robot


def full_dynamics_graph(robot: Robot, gravity=GRAVITY,
                        external_wrenches: Mapping[int, np.ndarray] | None = None,
                        planar: Mapping[int, np.ndarray] | None = None, step: int = 0,
                        contacts=None, free_flight: bool = False) -> gtsam.NonlinearFactorGraph:
    """Pose, twist (eq. 4), twist-acceleration (eq. 5) and torque (eq. 7) factors per joint (loop-closing
    ones too), a wrench factor (eq. 6) per moving body, and a planar factor on each loop joint j in ``planar``
    (j → plane normal). ``external_wrenches[i]``: on body i, in its CoM frame. No priors. ``step``: the time
    step k of every variable (``keys.at_step``; 0, the default, is the single-instant keys), so that graphs
    at successive steps can be joined by integration factors into a trajectory.

    A floating base is body 0: its pose T0, twist V0 and acceleration A0 (of its CoM frame, as for every body;
    ``gtdyn.model.base_frame`` converts from the root link frame) are variables, and so is F0, the wrench its
    environment applies to it (fix it with a prior, or pass ``free_flight=True``: no wrench from the environment,
    and no F0 variable).
    ``contacts``: a list of ``gtdyn.Contact`` (numbered 1, 2, … in that order): each adds its force (c_k, 3) or
    wrench (C_k, 6) to its body's eq. 6 and a factor holding its acceleration at zero. Transmissions: the
    constraint force λ_k enters the torque factors of the joints it couples, and q_dep = Σ ratio q + offset
    is a factor on q, q̇ and q̈ each.
    """
    external_wrenches, planar = external_wrenches or {}, planar or {}
    at = _stepper(step)
    placed = place_contacts(robot, contacts)
    graph = gtsam.NonlinearFactorGraph()
    for joint in robot.joints:
        j, p, c = joint.index, robot.link(joint.parent).index, robot.link(joint.child).index
        # A fixed base (link 0) has no variables (a loop may close onto it: c == 0)
        T_p, V_p, A_p = _body_keys(robot, p, at)
        T_c, V_c, A_c = _body_keys(robot, c, at)
        q, v, a = at(K.joint_angle_key(j)), at(K.joint_vel_key(j)), at(K.joint_accel_key(j))
        graph.add(PoseFactor(joint, T_p, T_c, q))
        graph.add(TwistFactor(joint, V_c, V_p, q, v))
        graph.add(TwistAccelFactor(joint, A_c, A_p, q, v, a, V_c))
        shares = [(at(K.transmission_key(number)), share) for number, share in robot.transmission_shares(j)]
        graph.add(TorqueFactor(joint, at(K.wrench_key(j)), at(K.torque_key(j)), shares, a))
        if j in planar:
            graph.add(PlanarFactor(at(K.wrench_key(j)), T_c, planar[j]))
    for body in _bodies(robot):
        i = body.index
        into = [at(K.wrench_key(jt.index)) for jt in robot.joints_into(body.name)]
        if i == 0 and not free_flight:  # the floating base: the wrench F0 of its environment, as if through a joint 0
            into.insert(0, at(K.wrench_key(0)))
        out_of = [(jt, at(K.wrench_key(jt.index)), at(K.joint_angle_key(jt.index)))
                  for jt in robot.joints_out_of(body.name)]
        touching = [(contact.iTc, contact.dim, at(K.contact_key(contact.number, contact.dim)))
                    for contact in placed if contact.body == i]
        graph.add(WrenchFactor(body, at(K.twist_accel_key(i)), at(K.twist_key(i)), at(K.pose_key(i)), into, out_of,
                               gravity=gravity, external=external_wrenches.get(i), contacts=touching))
    for contact in placed:
        i = contact.body
        graph.add(ContactFactor(contact.iTc, contact.dim, at(K.twist_accel_key(i)), at(K.twist_key(i))))
    for transmission in robot.transmissions:
        for key, offset in ((K.joint_angle_key, transmission.offset), (K.joint_vel_key, 0.0),
                            (K.joint_accel_key, 0.0)):
            graph.add(TransmissionFactor(transmission, at(key(transmission.dependent)),
                                         [at(key(j)) for j, _ in transmission.terms], offset))
    return graph


def _bodies(robot: Robot) -> tuple:
    """The bodies with an eq. 6: the moving links, and a floating base first."""
    return (robot.base, *robot.links) if robot.floating_base else robot.links


def _body_keys(robot: Robot, i: int, at) -> tuple:
    """Pose, twist and acceleration keys of body i; None for a fixed base (index 0), which has no variables."""
    if i == 0 and not robot.floating_base:
        return None, None, None
    return at(K.pose_key(i)), at(K.twist_key(i)), at(K.twist_accel_key(i))


def _stepper(step):
    """key → the same key at time step ``step`` (the identity at step 0)."""
    step = whole_number("step", step)
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
    for joint, value in zip(robot.joints, values, strict=True):
        graph.add(joint_prior(name_to_key(joint.index), value))
    return graph


def zero_values(robot: Robot, step: int = 0, contacts=None) -> gtsam.Values:
    """An initial estimate of every variable of ``full_dynamics_graph(robot, step=step, contacts=contacts)``:
    zero, every pose the identity."""
    at = _stepper(step)
    values = gtsam.Values()
    for joint in robot.joints:
        j = joint.index
        for key in (K.joint_angle_key(j), K.joint_vel_key(j), K.joint_accel_key(j), K.torque_key(j)):
            values.insert(at(key), np.zeros(1))
        values.insert(at(K.wrench_key(j)), np.zeros(6))
    for body in _bodies(robot):
        i = body.index
        values.insert(at(K.twist_key(i)), np.zeros(6))
        values.insert(at(K.twist_accel_key(i)), np.zeros(6))
        values.insert(at(K.pose_key(i)), gtsam.Pose3())
    if robot.floating_base:
        values.insert(at(K.wrench_key(0)), np.zeros(6))
    for number in range(1, len(robot.transmissions) + 1):
        values.insert(at(K.transmission_key(number)), np.zeros(1))
    for contact in place_contacts(robot, contacts):
        values.insert(at(K.contact_key(contact.number, contact.dim)), np.zeros(contact.dim))
    return values
