"""Checking what users pass: ValueErrors that name the argument (and the robot's joints) before any solve."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from gtdyn.robot import Robot


def finite_vector(name: str, x, n: int) -> np.ndarray:
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected {n} numbers, got {x!r}") from None
    if a.shape != (n,):
        raise ValueError(f"{name}: expected a vector of length {n}, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: contains non-finite values {a.tolist()}")
    return a


def joint_vector(robot: Robot, name: str, x) -> np.ndarray:
    try:
        return finite_vector(name, x, robot.num_dofs)
    except ValueError as e:
        raise ValueError(f"{e} (one per joint of '{robot.name}': {', '.join(robot.joint_names)})") from None


def joint_dict(robot: Robot, name: str, d) -> dict[int, float]:
    if not isinstance(d, Mapping):
        raise ValueError(f"{name}: expected a dict from joint name to value, got {type(d).__name__}")
    names = set(robot.joint_names)
    unknown = [k for k in d if k not in names]
    if unknown:
        raise ValueError(f"{name}: unknown joints {', '.join(map(str, unknown))} (joints: {', '.join(robot.joint_names)})")
    out = {}
    for k, value in d.items():
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{name}['{k}']: expected a number, got {value!r}") from None
        if not np.isfinite(value):
            raise ValueError(f"{name}['{k}']: non-finite value {value}")
        out[robot.joint(k).index] = value
    return out
