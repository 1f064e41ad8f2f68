"""A floating base's inputs to a compiled solver: its pose as a row-major 4×4 matrix (only the rotation enters
the dynamics, gravity being uniform; the generated code checks that the matrix is a rigid transform), twist
and, in inverse dynamics, acceleration — written into the workspace after q, q̇ and x."""

from __future__ import annotations

import numpy as np

from gtdyn.arguments import finite_vector, pose_argument
from gtdyn.errors import ArgumentError
from gtdyn.model.robot import Robot

POSE, TWIST, ACCEL = 0, 16, 22  # where each starts among the base inputs
ROTATION = (0, 1, 2, 4, 5, 6, 8, 9, 10)  # the rotation's entries in the row-major pose
_IDENTITY = np.eye(4).ravel()


def input_count(robot: Robot, problem: str) -> int:
    """How many inputs a floating base adds after q, q̇ and x: pose (16), twist (6), given acceleration (6)."""
    return (ACCEL + 6 * (problem == "inverse")) if robot.floating_base else 0


def base_state(robot: Robot, problem: str, base_pose, base_twist, base_accel) -> np.ndarray:
    """A floating base's inputs, checked as the reference path checks them: pose (row-major), twist and, in
    inverse dynamics, acceleration (identity and zeros where not given)."""
    if not robot.floating_base:
        given = [name for name, value in (("base_pose", base_pose), ("base_twist", base_twist),
                                          ("base_accel", base_accel)) if value is not None]
        if given:
            raise ArgumentError(f"{', '.join(given)}: robot '{robot.name}' has a fixed base")
        return np.zeros(0)
    if base_accel is not None and problem != "inverse":
        raise ArgumentError(f"base_accel: {problem} dynamics solves for the base acceleration (the base is free)")
    T = np.eye(4) if base_pose is None else pose_argument("base_pose", base_pose).matrix()
    twist = np.zeros(6) if base_twist is None else finite_vector("base_twist", base_twist, 6)
    parts = [T.ravel(), twist]
    if problem == "inverse":
        parts.append(np.zeros(6) if base_accel is None else finite_vector("base_accel", base_accel, 6))
    return np.concatenate(parts)


def write_base(robot: Robot, problem: str, ws: np.ndarray, first: int, base_pose, base_twist, base_accel) -> None:
    """A floating base's inputs into ``ws[first:]``, with only the checks that cost nothing: the generated
    code checks that the pose is a rigid transform and every number finite, and hands anything else to the
    reference path, which raises the same errors as ``base_state``."""
    if not robot.floating_base or (base_accel is not None and problem != "inverse"):
        base_state(robot, problem, base_pose, base_twist, base_accel)  # raises the error, if any
        return  # a fixed base given nothing: nothing to write
    try:
        if base_pose is None:
            ws[first:first + TWIST] = _IDENTITY
        elif type(base_pose) is np.ndarray and base_pose.shape == (4, 4):
            ws[first:first + TWIST] = base_pose.ravel()
        else:
            ws[first:first + TWIST] = base_state(robot, problem, base_pose, None, None)[:TWIST]  # a Pose3, or the error
        if base_twist is None:
            ws[first + TWIST:first + ACCEL] = 0.0
        elif len(base_twist) == 6:
            ws[first + TWIST:first + ACCEL] = base_twist
        else:
            raise ValueError
        if problem == "inverse":
            if base_accel is None:
                ws[first + ACCEL:first + ACCEL + 6] = 0.0
            elif len(base_accel) == 6:
                ws[first + ACCEL:first + ACCEL + 6] = base_accel
            else:
                raise ValueError
    except (TypeError, ValueError):
        base_state(robot, problem, base_pose, base_twist, base_accel)  # the error naming the argument
        raise


def base_states(robot: Robot, problem: str, count: int, base_pose, base_twist, base_accel) -> np.ndarray:
    """(count, base inputs) for a batch: poses (count, 4, 4) — or a list of ``gtsam.Pose3`` —, twists and
    accelerations (count, 6), identity and zeros where not given. Only shapes are checked here; the generated
    code checks each pose and the finiteness of every number, as for single calls."""
    if not robot.floating_base or (base_accel is not None and problem != "inverse"):
        base_state(robot, problem, base_pose, base_twist, base_accel)  # raises the error, if any
        return np.zeros((count, 0))

    def rows(name: str, value, shape: tuple[int, ...], default: np.ndarray) -> np.ndarray:
        if value is None:
            return np.broadcast_to(default, (count, default.size))
        try:
            a = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            if name != "base_pose":
                raise ArgumentError(f"{name}: expected an array of shape ({count}, 6)") from None
            a = np.array([pose_argument(f"base_pose[{k}]", p).matrix() for k, p in enumerate(value)])
        if a.shape != (count, *shape):
            raise ArgumentError(f"{name}: expected an array of shape ({count}, {', '.join(map(str, shape))}), got {a.shape}")
        return a.reshape(count, -1)

    parts = [rows("base_pose", base_pose, (4, 4), _IDENTITY), rows("base_twist", base_twist, (6,), np.zeros(6))]
    if problem == "inverse":
        parts.append(rows("base_accel", base_accel, (6,), np.zeros(6)))
    return np.hstack(parts)
