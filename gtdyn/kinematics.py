"""Kinematic quantities computed before the dynamics: link poses, joint transforms and link twists.

Eliminating the pose and twist factors (eq. 4) root→leaf is a forward pass; this module does that pass
directly with the same equations, so the dynamics graph that follows is linear in its unknowns.
"""

from __future__ import annotations

from dataclasses import dataclass

import gtsam
import numpy as np

from gtdyn.equations import twist_equation
from gtdyn.robot import Robot


@dataclass(frozen=True)
class KinematicState:
    """Everything eq. 5–7 need at one (q, v): indexed by link / joint index (index 0 = base)."""

    q: np.ndarray
    v: np.ndarray
    wT: list[gtsam.Pose3]  # wT[i]: pose of link i's dynamics (CoM) frame in the world; wT[0] = identity
    cTp: list[gtsam.Pose3 | None]  # cTp[j]: parent's dynamics frame in joint j's child frame; cTp[0] unused
    V: list[np.ndarray]  # V[i]: twist of link i in its CoM frame; V[0] = 0 (fixed base)


def forward_kinematics(robot: Robot, q: np.ndarray, v: np.ndarray) -> KinematicState:
    """Poses and twists of every link, root → leaves (joints are stored in that order)."""
    n = robot.num_dofs
    wT: list[gtsam.Pose3] = [gtsam.Pose3()] * (n + 1)
    cTp: list[gtsam.Pose3 | None] = [None] * (n + 1)
    V = [np.zeros(6)] * (n + 1)
    for joint in robot.joints:  # forward pass
        j = joint.index
        p = robot.link(joint.parent).index
        pTc = joint.parent_T_child(q[j - 1])
        cTp[j] = pTc.inverse()
        wT[j] = wT[p].compose(pTc)
        eq = twist_equation(cTp[j], joint.screw_axis)
        # Eliminate V_c from eq. 4: V_c = −(coef_Vp V_p + coef_v q̇) + rhs.
        V[j] = eq.rhs - eq.coefficients["V_p"] @ V[p] - eq.coefficients["v"] @ np.array([v[j - 1]])
    return KinematicState(np.asarray(q, float), np.asarray(v, float), wT, cTp, V)
