"""A controller's arguments (``gtdyn.PDController``): gains, references held or sampled at a run's knots, and
whether a controller fits the run it is given to. Checked once, when the controller is built and when a run
takes it."""

from __future__ import annotations

import numpy as np

from gtdyn.arguments import _shown, positive_number, real_array
from gtdyn.errors import ArgumentError
from gtdyn.model.robot import Robot


def gain_vector(robot: Robot, name: str, gain) -> np.ndarray:
    """A gain: one number for every joint, or one per joint; finite and ≥ 0. Returns one per joint."""
    n = robot.num_dofs
    a = real_array(name, gain, f"a number ≥ 0 or {n} of them")
    if a.shape not in ((), (n,)):
        raise ArgumentError(f"{name}: expected a number or a vector of {n} (one per joint of '{robot.name}': "
                            f"{', '.join(robot.joint_names)}), got shape {a.shape}")
    if not np.all(np.isfinite(a)) or not np.all(a >= 0):
        raise ArgumentError(f"{name}: expected finite gains ≥ 0, got {_shown(a.tolist())}")
    return np.broadcast_to(a, (n,)).copy()


def reference_rows(robot: Robot, references: dict, dt) -> tuple[dict[str, np.ndarray], int | None, float | None]:
    """References by name (None: zero): each a vector of one value per joint (held throughout) or an array of
    shape (samples, n), one row per knot k·``dt``; every array has the same number of rows, and ``dt`` is given
    when any is an array. Returns ({name: rows}, each of shape (1, n) when held, the sample count or None, and
    dt as a float or None)."""
    n = robot.num_dofs
    out, samples, sampled_by = {}, None, None
    for name, x in references.items():
        if x is None:
            out[name] = np.zeros((1, n))
            continue
        a = real_array(name, x, f"a vector of {n} or an array of shape (samples, {n})")
        if a.ndim not in (1, 2) or a.shape[-1] != n or (a.ndim == 2 and len(a) == 0):
            raise ArgumentError(f"{name}: expected a vector of {n} or an array of shape (samples, {n}), one row per "
                                f"knot k·dt (one column per joint of '{robot.name}': {', '.join(robot.joint_names)}),"
                                f" got shape {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ArgumentError(f"{name}: non-finite values")
        if a.ndim == 2:
            if samples is not None and len(a) != samples:
                raise ArgumentError(f"{name}: {len(a)} rows, but {sampled_by} has {samples}: sampled references "
                                    "have one row per knot of the same run")
            samples, sampled_by = len(a), name
        out[name] = np.array(a.reshape(-1, n), dtype=float)
    if samples is None:
        if dt is not None:
            positive_number("dt", dt)
        return out, None, None if dt is None else float(dt)
    if dt is None:
        raise ArgumentError(f"dt: {sampled_by} is sampled (one row per knot k·dt), so the controller needs the run's "
                            "time step dt to pick a row from the time")
    return out, samples, positive_number("dt", dt)


def controller_fits(controller_robot: Robot, robot: Robot, samples: int | None, controller_dt: float | None,
                    dt: float, steps: int) -> None:
    """ArgumentError naming ``tau`` when a controller built for one robot, time step or number of knots is given to
    a run of another: the references of a run of ``steps`` steps are sampled at its steps + 1 knots k·``dt``."""
    if controller_robot.joint_names != robot.joint_names:
        raise ArgumentError(f"tau: the controller was built for '{controller_robot.name}' (joints "
                            f"{', '.join(controller_robot.joint_names)}), not '{robot.name}' (joints "
                            f"{', '.join(robot.joint_names)})")
    passive = [j.name for j in robot.joints if not j.actuated]
    if [j.name for j in controller_robot.joints if not j.actuated] != passive:
        raise ArgumentError(f"tau: the controller was built for a '{controller_robot.name}' whose passive joints are "
                            f"not this robot's ({', '.join(passive) or 'none'}); build it for the robot it drives")
    if samples is None:
        return
    if samples != steps + 1:
        raise ArgumentError(f"tau: the controller's references have {samples} rows, but a run of {steps} steps has "
                            f"{steps + 1} knots (one row per sample, the last one included)")
    if controller_dt != dt:
        raise ArgumentError(f"tau: the controller's references are sampled every dt = {controller_dt!r} s, but the "
                            f"run steps dt = {dt!r} s")


def joint_state(robot: Robot, name: str, x) -> np.ndarray:
    """A controller's input ``q`` or ``v``: a float vector of one per joint (non-finite values pass: what the
    controller answers is checked)."""
    a = x if type(x) is np.ndarray and x.dtype == np.float64 else real_array(name, x, f"{robot.num_dofs} numbers")
    if a.shape != (robot.num_dofs,):
        raise ArgumentError(f"{name}: expected a vector of {robot.num_dofs} (one per joint of '{robot.name}': "
                            f"{', '.join(robot.joint_names)}), got shape {a.shape}")
    return a


def controller_time(name: str, t) -> None:
    """ArgumentError: a controller asked at a time that is not a number (NaN)."""
    raise ArgumentError(f"{name}: expected a time in seconds, got {t!r}")
