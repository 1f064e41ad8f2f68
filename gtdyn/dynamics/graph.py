"""The transcriber: a Robot, its kinematic state and which variables are known → a linear factor graph.

Given q and q̇ (and so every pose and twist), eq. 5–7 are linear in V̇, F, q̈ and τ. Each equation becomes one
``gtsam.JacobianFactor``; variables that the problem gives (q̈ of inverse-dynamics joints, τ of
forward-dynamics joints) move to the right-hand side. The result is the paper's *simplified* graph
(Fig. 4a, 6a, 9a): only unknowns are nodes.

Every equation is exact. The system is square (13 equations and 13 unknowns per joint), so a determined
system is solved exactly whatever the row weights; ``constrained=True`` marks the rows as GTSAM hard
constraints (``noiseModel.Constrained``), ``False`` gives them unit weight so that they can be eliminated
by Householder QR, which is backward stable in every variable ordering (see ``gtdyn.linear.elimination``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import gtsam
import numpy as np

from gtdyn import keys
from gtdyn.equations import (
    LinearEquation,
    contact_equation,
    contact_wrench_map,
    gravity_wrench,
    minimum_norm_equation,
    planar_equation,
    torque_equation,
    transmission_equation,
    twist_accel_equation,
    wrench_equation,
)
from gtdyn.kinematics.forward import KinematicState
from gtdyn.linear.system import Key, add_equation
from gtdyn.model import base_frame
from gtdyn.model.robot import Robot
from gtdyn.problem import Problem


def dynamics_equations(robot: Robot, kin: KinematicState, problem: Problem, gravity,
                       external_wrenches: Mapping[int, np.ndarray] | None = None, contact_rows: bool = True
                       ) -> Iterator[tuple[LinearEquation, dict, bool]]:
    """The equations of the linear dynamics graph, in graph order, as (equation, roles, soft): eq. 5 and 7 per
    joint, eq. 6 per moving link (and a floating base), a contact equation per contact, a planar factor per
    planar loop and soft minimum-norm factors on torques and contact forces where the problem asks for them.
    ``roles`` maps each coefficient name to a ``Key`` (an unknown) or a known value.

    ``external_wrenches[i]`` is a wrench on link i from its environment, in link i's CoM frame. The same
    equations, written on traced values, are what ``gtdyn.compiled`` turns into code.
    """
    external_wrenches = external_wrenches or {}
    zero = np.zeros(6)
    base_accel = _base_accel_role(robot, problem)
    for joint in robot.joints:
        j, p = joint.index, robot.link(joint.parent).index
        c = robot.link(joint.child).index
        S = joint.screw_axis
        # eq. 5: a fixed base has V̇_0 = 0 (gravity is explicit in eq. 6); a loop may close onto the base (c == 0)
        yield twist_accel_equation(kin.cTp[j], S, kin.V[c], kin.v[j - 1]), {
            "A_c": base_accel if c == 0 else Key(keys.twist_accel_key(c)),
            "A_p": base_accel if p == 0 else Key(keys.twist_accel_key(p)),
            "a": problem.known_qdd[j] if j in problem.known_qdd else Key(keys.joint_accel_key(j)),
        }, False
        # eq. 7, with the constraint forces of the transmissions the joint takes part in
        shares = robot.transmission_shares(j)
        roles = {"F": Key(keys.wrench_key(j)),
                 "tau": problem.known_tau[j] if j in problem.known_tau else Key(keys.torque_key(j))}
        roles.update({f"L{k}": Key(keys.transmission_key(number)) for k, (number, _) in enumerate(shares)})
        if joint.armature:
            roles["a"] = _joint_accel_role(problem, j)
        yield torque_equation(S, tuple(share for _, share in shares), joint.armature), roles, False
    # eq. 6 per moving link; a floating base is one more body, the wrench from its environment ("F0") taking the
    # place of a joint from its parent
    for link in (robot.base, *robot.links) if robot.floating_base else robot.links:
        i = link.index
        into, out_of = robot.joints_into(link.name), robot.joints_out_of(link.name)
        base = (_base_wrench_role(robot, problem),) if i == 0 else ()
        touching = [contact for contact in problem.contacts if contact.body == i]
        eq = wrench_equation(link.G, kin.V[i], [kin.cTp[c.index] for c in out_of],
                             gravity_wrench(link.mass, kin.wT[i], gravity), external_wrenches.get(i, zero),
                             len(base) + len(into), [contact_wrench_map(c.iTc, c.dim) for c in touching])
        roles = {"A": base_accel if i == 0 else Key(keys.twist_accel_key(i))}
        roles.update({f"F_in{k}": role for k, role in enumerate(base + tuple(Key(keys.wrench_key(jt.index))
                                                                             for jt in into))})
        roles.update({f"F_out{k}": Key(keys.wrench_key(jt.index)) for k, jt in enumerate(out_of)})
        roles.update({f"C{k}": Key(keys.contact_key(c.number, c.dim)) for k, c in enumerate(touching)})
        yield eq, roles, False
    # each contact's acceleration constraint (left out for the operational-space inertia, whose contact wrenches
    # are given and whose accelerations are what it asks)
    for contact in constrained_contacts(problem) if contact_rows else ():
        i = contact.body
        yield contact_equation(contact.iTc, contact.dim, kin.V[i]), {
            "A": base_accel if i == 0 else Key(keys.twist_accel_key(i))}, False
    for transmission in coupled_transmissions(robot, problem):  # each transmission's q̈ relation
        roles = {"a": _joint_accel_role(problem, transmission.dependent)}
        roles.update({f"a{k}": _joint_accel_role(problem, j) for k, (j, _) in enumerate(transmission.terms)})
        yield transmission_equation(tuple(ratio for _, ratio in transmission.terms)), roles, False
    for j, normal in problem.planar.items():
        child = robot.link(robot.joints[j - 1].child).index
        yield planar_equation(kin.wT[child], normal), {"F": Key(keys.wrench_key(j))}, False
    for j in problem.minimum_torque:
        yield minimum_norm_equation(1), {"x": Key(keys.torque_key(j))}, True
    for contact in problem.contacts:
        if contact.number in problem.minimum_contact:
            yield minimum_norm_equation(contact.dim), {"x": Key(keys.contact_key(contact.number, contact.dim))}, True


def constrained_contacts(problem: Problem) -> list:
    """The contacts whose acceleration constraint is an equation of the graph: all but those on a floating base
    whose acceleration is given (there the constraint has no unknown left: a check on the data, made before the
    graph is built, ``gtdyn.dynamics.reference.check_given_contacts``)."""
    return [c for c in problem.contacts if not (c.body == 0 and problem.base_accel is not None)]


def coupled_transmissions(robot: Robot, problem: Problem) -> list:
    """The transmissions whose q̈ relation is an equation of the graph: those with an unknown q̈ (where every
    q̈ is given, the relation is a check on the data, made before the graph is built)."""
    return [t for t in robot.transmissions
            if any(j not in problem.known_qdd for j in (t.dependent, *(k for k, _ in t.terms)))]


def _joint_accel_role(problem: Problem, j: int):
    return problem.known_qdd[j] if j in problem.known_qdd else Key(keys.joint_accel_key(j))


def _base_accel_role(robot: Robot, problem: Problem):
    """V̇_0 in the base's dynamics frame: zero for a fixed base; for a floating one its given acceleration
    (converted from the root link frame: the CoM frame is fixed in the link, so V̇_com = Ad(comTl) V̇_l) or
    an unknown."""
    if not robot.floating_base:
        return np.zeros(6)
    if problem.base_accel is None:
        return Key(keys.twist_accel_key(0))
    return base_frame.twist_to_com(robot) @ problem.base_accel


def _base_wrench_role(robot: Robot, problem: Problem):
    """The wrench a floating base's environment applies to it, in its CoM frame: given (from the root link
    frame: F_com = Ad(lTcom)ᵀ F_l) or an unknown, "F0"."""
    if problem.base_wrench is None:
        return Key(keys.wrench_key(0))
    return base_frame.wrench_to_com(robot) @ problem.base_wrench


def dynamics_graph(robot: Robot, kin: KinematicState, problem: Problem, gravity: np.ndarray,
                   external_wrenches: Mapping[int, np.ndarray] | None = None,
                   constrained: bool = False) -> gtsam.GaussianFactorGraph:
    """The linear dynamics graph of ``dynamics_equations``, one factor per equation; the soft minimum-torque
    factors come last, after the exact equations."""
    graph = gtsam.GaussianFactorGraph()
    for eq, roles, soft in dynamics_equations(robot, kin, problem, gravity, external_wrenches):
        add_equation(graph, eq, roles, constrained, soft)
    return graph
