"""Inverse, forward and hybrid dynamics: the user's entry points. Each checks its arguments once, at the boundary
(``gtdyn.arguments.query.ask``), and solves the resulting query on the reference path
(``gtdyn.dynamics.reference.solve_query``): one linear factor graph, eliminated in a chosen ordering.
"""

from __future__ import annotations

from collections.abc import Mapping

from gtdyn.arguments.query import ask
from gtdyn.dynamics.reference import solve_query
from gtdyn.dynamics.result import DynamicsResult
from gtdyn.equations import GRAVITY
from gtdyn.model.robot import Robot


def inverse_dynamics(robot: Robot, q, v, qdd, *, base_pose=None, base_twist=None, base_accel=None, contacts=None,
                     gravity=GRAVITY, external_wrenches=None, wrench_axes="local", ordering=None, elimination="qr",
                     planar=None) -> DynamicsResult:
    """Torques τ that produce joint accelerations ``qdd`` at state (q, v).

    ``external_wrenches`` maps a link (or merged frame) name to the wrench [m; f] its environment applies
    to it, expressed in that frame's own axes (``wrench_axes="local"``) or in the world's axes at the frame's
    origin (``wrench_axes="world_aligned"``: a weight held at a hand is [0, 0, 0, 0, 0, −m g]). ``ordering`` is a
    strategy name, a list of labels/keys or a callable.
    ``elimination`` is "qr" (Householder QR of the exact equations: accurate in every ordering) or
    "constrained" (GTSAM's elimination of Constrained factors, as GTDynamics does).

    Closed loops: q, v and qdd give every joint (loop-closing ones too) and must close every loop (see
    ``gtdyn.close_loops``); passive joints have τ = 0 and actuated ones get the τ that produce the motion —
    the least-norm τ if the loop is redundantly actuated. ``planar`` (None: detect per loop; True: require;
    False: never) adds the planar factor to planar loops.

    A floating base (``robot.floating_base``) is at ``base_pose`` (a gtsam.Pose3 or 4×4 matrix, world ← root
    link frame; identity if None) with twist ``base_twist`` ([ω; v] of the root link frame, in that frame) and
    accelerates by ``base_accel`` ([ω̇; v̇], the derivative of that twist; zero if None): ``r.base_wrench`` is
    the wrench [m; f] (root link frame) its environment must apply to produce the motion.

    ``contacts``: a list of ``gtdyn.Contact``; their forces are solved for (``r.contact_wrenches``) and carry
    the robot instead of a base wrench. The motion must keep every contact (else ArgumentError naming it);
    when more contacts touch than the motion determines (a quadruped on four feet) the forces are the
    least-norm ones, and ``r.least_norm`` names them.
    """
    return solve_query(ask(robot, "inverse", q, v, qdd=qdd, base_pose=base_pose, base_twist=base_twist,
                           base_accel=base_accel, contacts=contacts, gravity=gravity,
                           external_wrenches=external_wrenches, wrench_axes=wrench_axes),
                       ordering=ordering, elimination=elimination, planar=planar)


def forward_dynamics(robot: Robot, q, v, tau, *, base_pose=None, base_twist=None, contacts=None, gravity=GRAVITY,
                     external_wrenches=None, wrench_axes="local", ordering=None, elimination="qr",
                     planar=None) -> DynamicsResult:
    """Joint accelerations q̈ produced by torques ``tau`` at state (q, v). Arguments as ``inverse_dynamics``;
    ``tau`` is 0 at passive joints. A floating base moves freely (no wrench on it but ``external_wrenches``):
    ``r.base_accel`` is its acceleration. With ``contacts`` this is constrained dynamics: the accelerations
    that keep every contact, and the contact forces that make them."""
    return solve_query(ask(robot, "forward", q, v, tau=tau, base_pose=base_pose, base_twist=base_twist,
                           contacts=contacts, gravity=gravity, external_wrenches=external_wrenches,
                           wrench_axes=wrench_axes),
                       ordering=ordering, elimination=elimination, planar=planar)


def hybrid_dynamics(robot: Robot, q, v, qdd: Mapping[str, float], tau: Mapping[str, float], *, base_pose=None,
                    base_twist=None, base_accel=None, contacts=None, gravity=GRAVITY, external_wrenches=None,
                    wrench_axes="local", ordering=None, elimination="qr", planar=None) -> DynamicsResult:
    """Given q̈ at some joints and τ at the others (dicts by joint name), solve for the rest.

    Every actuated joint must appear in exactly one of ``qdd`` and ``tau``; passive joints have τ = 0 and
    their q̈ is solved for. A floating base is free (``r.base_accel`` solved for) unless ``base_accel`` is
    given (then ``r.base_wrench`` is).
    """
    return solve_query(ask(robot, "hybrid", q, v, qdd=qdd, tau=tau,
                           base_pose=base_pose, base_twist=base_twist, base_accel=base_accel, contacts=contacts,
                           gravity=gravity, external_wrenches=external_wrenches, wrench_axes=wrench_axes),
                       ordering=ordering, elimination=elimination, planar=planar)


def solve(robot: Robot, kind: str, q, v, *, qdd=None, tau=None, base_pose=None, base_twist=None, base_accel=None,
          contacts=None, gravity=GRAVITY, external_wrenches=None, wrench_axes="local", ordering=None,
          elimination="qr", planar=None) -> DynamicsResult:
    """One entry for the three problems: ``kind`` "inverse" (``qdd``: every joint), "forward" (``tau``: every
    joint) or "hybrid" (``qdd`` and ``tau``: dicts by joint name). Other arguments as ``inverse_dynamics``."""
    return solve_query(ask(robot, kind, q, v, qdd=qdd, tau=tau, base_pose=base_pose, base_twist=base_twist,
                           base_accel=base_accel, contacts=contacts, gravity=gravity,
                           external_wrenches=external_wrenches, wrench_axes=wrench_axes),
                       ordering=ordering, elimination=elimination, planar=planar)

