"""Closed-loop analysis: is a loop planar (and in which plane), and does a state close every loop."""

from __future__ import annotations

import numpy as np

from gtdyn.errors import LoopClosureError
from gtdyn.kinematics.forward import KinematicState
from gtdyn.model.robot import Robot

PARALLEL_TOLERANCE = 1e-9  # |sin| between joint axes counted as parallel
CLOSURE_TOLERANCE = 1e-7  # pose (rad, m) and twist (rad/s, m/s) mismatch accepted around a loop


def loop_plane_normal(robot: Robot, kin: KinematicState, loop: list[str]) -> np.ndarray | None:
    """The plane normal (world) of a planar loop, or None: every revolute axis of the loop parallel to one
    direction n and every prismatic axis perpendicular to it — any plane, not only x/y/z."""
    revolute, prismatic = [], []
    for name in loop:
        joint = robot.joint(name)
        R = kin.wT[robot.link(joint.child).index].rotation().matrix()
        S = joint.screw_axis
        if joint.type == "revolute":
            revolute.append(R @ S[:3] / np.linalg.norm(S[:3]))
        else:
            prismatic.append(R @ S[3:] / np.linalg.norm(S[3:]))
    if not revolute:
        return None
    n = revolute[0]
    if all(np.linalg.norm(np.cross(n, w)) < PARALLEL_TOLERANCE for w in revolute) and \
            all(abs(n @ d) < PARALLEL_TOLERANCE for d in prismatic):
        return n
    return None


def check_closed(robot: Robot, kin: KinematicState) -> None:
    """LoopClosureError naming the loop joint whose loop the given q or v does not close."""
    for name, residual in kin.pose_closure.items():
        if np.max(np.abs(residual)) > CLOSURE_TOLERANCE:
            raise LoopClosureError(f"q: the loop closed by joint '{name}' is open by {np.max(np.abs(residual)):.3g} "
                             "(rad or m); compute consistent joint values with gtdyn.close_loops")
    for name, residual in kin.twist_closure.items():
        if np.max(np.abs(residual)) > CLOSURE_TOLERANCE * (1 + np.max(np.abs(kin.v))):
            raise LoopClosureError(f"v: the joint velocities violate the loop closed by joint '{name}' by "
                             f"{np.max(np.abs(residual)):.3g}; compute consistent velocities with gtdyn.close_loops")
