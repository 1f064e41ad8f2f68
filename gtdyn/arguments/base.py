"""A floating base's state at the boundary: the one parser of ``base_pose`` and ``base_twist`` for every entry
point (dynamics calls, compiled solvers, simulation, estimation). The base's given acceleration or wrench is part
of what a problem asks (``gtdyn.arguments.asked.with_base``)."""

from __future__ import annotations

from dataclasses import dataclass

import gtsam
import numpy as np

from gtdyn.arguments import finite_vector, pose_argument
from gtdyn.errors import ArgumentError
from gtdyn.model.robot import Robot


@dataclass(frozen=True, eq=False)
class BaseState:
    """Where a floating base is and how it moves: ``pose`` (world ← root link frame) and ``twist`` ([ω; v] of the
    root link frame, in that frame), as users give them; ``gtdyn.model.base_frame`` moves them to the CoM frame."""

    pose: gtsam.Pose3
    twist: np.ndarray


def base_state(robot: Robot, base_pose=None, base_twist=None) -> BaseState | None:
    """A floating base's state, checked (identity and zero where not given); None for a fixed base, which
    refuses either argument."""
    if not robot.floating_base:
        refuse_on_fixed_base(robot, base_pose=base_pose, base_twist=base_twist)
        return None
    return BaseState(gtsam.Pose3() if base_pose is None else pose_argument("base_pose", base_pose),
                     np.zeros(6) if base_twist is None else finite_vector("base_twist", base_twist, 6))


def refuse_on_fixed_base(robot: Robot, **given) -> None:
    """ArgumentError naming the base arguments given (not None) to a robot whose base is fixed."""
    passed = [name for name, value in given.items() if value is not None]
    if passed and not robot.floating_base:
        raise ArgumentError(f"{', '.join(passed)}: robot '{robot.name}' has a fixed base; load it with "
                            "base='floating' to give its base a state")
