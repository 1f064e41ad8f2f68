"""A floating base's inputs to a compiled solver: its rotation (row-major; its position does not enter the
dynamics), twist and, in inverse dynamics, acceleration — written into the workspace after q, q̇ and x."""

from __future__ import annotations

import numpy as np

from gtdyn.arguments import finite_vector, pose_argument
from gtdyn.errors import ArgumentError
from gtdyn.model.robot import Robot

_IDENTITY = np.eye(3).ravel()


def base_state(robot: Robot, problem: str, base_pose, base_twist, base_accel) -> np.ndarray:
    """A floating base's inputs, checked as the reference path checks them: rotation (row-major), twist and,
    in inverse dynamics, acceleration (identity and zeros where not given)."""
    if not robot.floating_base:
        given = [name for name, value in (("base_pose", base_pose), ("base_twist", base_twist),
                                          ("base_accel", base_accel)) if value is not None]
        if given:
            raise ArgumentError(f"{', '.join(given)}: robot '{robot.name}' has a fixed base")
        return np.zeros(0)
    if base_accel is not None and problem != "inverse":
        raise ArgumentError(f"base_accel: {problem} dynamics solves for the base acceleration (the base is free)")
    R = np.eye(3) if base_pose is None else pose_argument("base_pose", base_pose).rotation().matrix()
    twist = np.zeros(6) if base_twist is None else finite_vector("base_twist", base_twist, 6)
    parts = [R.ravel(), twist]
    if problem == "inverse":
        parts.append(np.zeros(6) if base_accel is None else finite_vector("base_accel", base_accel, 6))
    return np.concatenate(parts)


def write_base(robot: Robot, problem: str, ws: np.ndarray, first: int, base_pose, base_twist, base_accel) -> None:
    """A floating base's inputs into ``ws[first:]``, with only the checks that cost nothing: the generated
    code checks that the rotation is one and that every number is finite, and hands anything else to the
    reference path, which raises the same errors as ``base_state``."""
    if not robot.floating_base or (base_accel is not None and problem != "inverse"):
        base_state(robot, problem, base_pose, base_twist, base_accel)  # raises the error, if any
        return  # a fixed base given nothing: nothing to write
    try:
        if base_pose is None:
            ws[first:first + 9] = _IDENTITY
        elif type(base_pose) is np.ndarray and base_pose.shape == (4, 4) and base_pose[3, 3] == 1.0 \
                and not base_pose[3, :3].any():
            ws[first:first + 9] = base_pose[:3, :3].ravel()
        else:
            ws[first:first + 9] = base_state(robot, problem, base_pose, None, None)[:9]  # a Pose3, or the error
        if base_twist is None:
            ws[first + 9:first + 15] = 0.0
        elif len(base_twist) == 6:
            ws[first + 9:first + 15] = base_twist
        else:
            raise ValueError
        if problem == "inverse":
            if base_accel is None:
                ws[first + 15:first + 21] = 0.0
            elif len(base_accel) == 6:
                ws[first + 15:first + 21] = base_accel
            else:
                raise ValueError
    except (TypeError, ValueError):
        base_state(robot, problem, base_pose, base_twist, base_accel)  # the error naming the argument
        raise


def base_states(robot: Robot, problem: str, count: int, base_pose, base_twist, base_accel) -> np.ndarray:
    """(count, base inputs): each state's ``base_state``."""
    if not robot.floating_base:
        base_state(robot, problem, base_pose, base_twist, base_accel)  # the fixed-base error, if any
        return np.zeros((count, 0))

    def rows(name, value, shape):
        if value is None:
            return [None] * count
        a = np.asarray(value, dtype=float)
        if a.shape != (count, *shape):
            raise ArgumentError(f"{name}: expected an array of shape ({count}, {', '.join(map(str, shape))}), got {a.shape}")
        return list(a)

    poses, twists, accels = rows("base_pose", base_pose, (4, 4)), rows("base_twist", base_twist, (6,)), \
        rows("base_accel", base_accel, (6,))
    return np.array([base_state(robot, problem, p, t, a) for p, t, a in zip(poses, twists, accels)]).reshape(count, -1)
