"""A floating base's two frames, and the one place quantities move between them.

Users give and get a floating base's pose, twist, acceleration and wrench in its root **link** frame (as
Pinocchio's free flyer does); the dynamics work in every body's **centre-of-mass** frame. The CoM frame is fixed
in the link (``lTcom``), so twists and accelerations move by ``Ad`` and wrenches by ``Adᵀ``:

    V_com = Ad(comTl) V_l        F_com = Ad(lTcom)ᵀ F_l        wTcom = wTl · lTcom

The matrices are returned (not applied) so that numbers, traced symbols and generated code use the same ones.
"""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.spatial import Ad


def twist_to_com(robot) -> np.ndarray:
    """Ad(comTl): a base twist or acceleration in the root link frame → in the base's CoM frame."""
    return Ad(robot.base.lTcom.inverse())


def twist_to_link(robot) -> np.ndarray:
    """Ad(lTcom): a base twist or acceleration in the CoM frame → in the root link frame."""
    return Ad(robot.base.lTcom)


def wrench_to_com(robot) -> np.ndarray:
    """Ad(lTcom)ᵀ: a wrench [m; f] on the base in the root link frame → in its CoM frame."""
    return Ad(robot.base.lTcom).T


def wrench_to_link(robot) -> np.ndarray:
    """Ad(comTl)ᵀ: a wrench on the base in its CoM frame → in the root link frame."""
    return Ad(robot.base.lTcom.inverse()).T


def pose_to_com(robot, wTl: gtsam.Pose3) -> gtsam.Pose3:
    """wTcom = wTl · lTcom: the base's CoM frame in the world, from its root link frame's pose."""
    return wTl.compose(robot.base.lTcom)


def pose_to_link(robot, wTcom: gtsam.Pose3) -> gtsam.Pose3:
    """wTl = wTcom · comTl: the root link frame in the world, from the base's CoM frame's pose."""
    return wTcom.compose(robot.base.lTcom.inverse())
