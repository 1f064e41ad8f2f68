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
    """Where a floating base is and how it moves: ``pose`` (world ← root link frame), ``twist`` ([ω; v] of the
    root link frame, in that frame) and, where a state carries it (estimation), ``accel`` (the twist's time
    derivative; None: not known), as users give them; ``gtdyn.model.base_frame`` moves them to the CoM frame."""

    pose: gtsam.Pose3
    twist: np.ndarray
    accel: np.ndarray | None = None


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


def base_rows(name: str, value, count: int, shape: tuple[int, ...], default: np.ndarray) -> np.ndarray:
    """A batch's base input ``name`` as (count, entries) rows: an array of shape (count, *shape) — base poses may
    also be a list of ``gtsam.Pose3`` —, or ``default`` in every row when not given. Only shapes are checked: the
    generated code checks each pose and every number's finiteness, as for single calls."""
    if value is None:
        return np.broadcast_to(default, (count, default.size))
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        if name != "base_pose":
            raise ArgumentError(f"{name}: expected an array of shape ({count}, 6)") from None
        a = np.array([pose_argument(f"base_pose[{k}]", p).matrix() for k, p in enumerate(value)])
    if a.shape != (count, *shape):
        raise ArgumentError(f"{name}: expected an array of shape ({count}, {', '.join(map(str, shape))}), "
                            f"got {a.shape}")
    return a.reshape(count, -1)


def base_pose_reading(robot: Robot, base_pose) -> gtsam.Pose3 | None:
    """One step's reading of a floating base's pose: needed for a floating base, refused for a fixed one."""
    if robot.floating_base and base_pose is None:
        raise ArgumentError(f"base_pose: '{robot.name}' has a floating base: its pose reading is needed at every step")
    refuse_on_fixed_base(robot, base_pose=base_pose)
    return None if base_pose is None else pose_argument("base_pose", base_pose)
