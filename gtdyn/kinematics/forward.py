"""Kinematic quantities computed before the dynamics: link poses, joint transforms and link twists.

Eliminating the pose and twist factors (eq. 4) of the spanning tree root→leaf is a forward pass; this module
does that pass directly with the same equations, so the dynamics graph that follows is linear in its
unknowns. A loop-closing joint's transform comes from its own q; how far the loop then fails to close (in
pose and in twist) is reported, because the dynamics need a consistent state.
"""

from __future__ import annotations

from dataclasses import dataclass

import gtsam
import numpy as np

from gtdyn.equations import twist_equation
from gtdyn.model.robot import Robot
from gtdyn.spatial import Ad


@dataclass(frozen=True)
class KinematicState:
    """Everything eq. 5–7 need at one (q, v): indexed by link / joint index (index 0 = base)."""

    q: np.ndarray
    v: np.ndarray
    wT: list[gtsam.Pose3]  # wT[i]: pose of link i's dynamics frame in the world; a fixed base's wT[0] = identity
    cTp: list[gtsam.Pose3 | None]  # cTp[j]: parent's dynamics frame in joint j's child frame; cTp[0] unused
    V: list[np.ndarray]  # V[i]: twist of link i in its dynamics frame; a fixed base's V[0] = 0
    pose_closure: dict[str, np.ndarray]  # loop joint name -> Log of the pose mismatch around its loop
    twist_closure: dict[str, np.ndarray]  # loop joint name -> eq. 4 residual across the loop joint


def forward_kinematics(robot: Robot, q: np.ndarray, v: np.ndarray, base_pose: gtsam.Pose3 | None = None,
                       base_twist: np.ndarray | None = None) -> KinematicState:
    """Poses and twists of every link, root → leaves along the spanning tree, then loop-closure residuals.

    A floating base starts the pass at ``base_pose`` (world ← root link frame; identity if None) with
    ``base_twist`` ([ω; v] of the root link frame in that frame; zero if None); a fixed base is the world."""
    n_links = len(robot.links)
    wT: list[gtsam.Pose3] = [gtsam.Pose3()] * (n_links + 1)
    cTp: list[gtsam.Pose3 | None] = [None] * (robot.num_dofs + 1)
    V = [np.zeros(6)] * (n_links + 1)
    if robot.floating_base:  # the base's dynamics frame is its CoM frame
        lTcom = robot.base.lTcom
        wT[0] = (gtsam.Pose3() if base_pose is None else base_pose).compose(lTcom)
        V[0] = np.zeros(6) if base_twist is None else Ad(lTcom.inverse()) @ base_twist
    for joint in robot.tree_joints:  # forward pass
        j, p = joint.index, robot.link(joint.parent).index
        pTc = joint.parent_T_child(q[j - 1])
        cTp[j] = pTc.inverse()
        wT[j] = wT[p].compose(pTc)
        eq = twist_equation(cTp[j], joint.screw_axis)
        # Eliminate V_c from eq. 4: V_c = −(coef_Vp V_p + coef_v q̇) + rhs.
        V[j] = eq.rhs - eq.coefficients["V_p"] @ V[p] - eq.coefficients["v"] @ np.array([v[j - 1]])
    pose_closure, twist_closure = {}, {}
    for joint in robot.loop_joints:
        j, p, c = joint.index, robot.link(joint.parent).index, robot.link(joint.child).index
        cTp[j] = joint.child_T_parent(q[j - 1])
        pose_closure[joint.name] = gtsam.Pose3.Logmap(wT[c].between(wT[p].compose(cTp[j].inverse())))
        twist_closure[joint.name] = twist_equation(cTp[j], joint.screw_axis).error(
            {"V_c": V[c], "V_p": V[p], "v": v[j - 1]})
    return KinematicState(np.asarray(q, float), np.asarray(v, float), wT, cTp, V, pose_closure, twist_closure)
