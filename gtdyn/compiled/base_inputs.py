"""A floating base's inputs to a compiled solver, written into the workspace after q, q̇ and x in the order of
``Query.base_inputs``: its pose as a row-major 4×4 matrix (only the rotation enters the dynamics, gravity being
uniform; the generated code checks that the matrix is a rigid transform), its twist, and the base quantity the
problem gives — its acceleration in inverse dynamics, the wrench its environment applies to it in forward and
hybrid dynamics (zero: free). Anything but plain float arrays goes through the boundary's checks
(``gtdyn.arguments.query.packed_base``)."""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.arguments.base import base_rows
from gtdyn.arguments.query import BASE_INPUTS, POSE, TWIST, packed_base
from gtdyn.errors import ArgumentError
from gtdyn.model.robot import Robot

ROTATION = (0, 1, 2, 4, 5, 6, 8, 9, 10)  # the rotation's entries in the row-major pose
_IDENTITY = np.eye(4).ravel()
_IDENTITY_4 = np.eye(4)


def input_count(robot: Robot) -> int:
    """How many inputs a floating base adds after q, q̇ and x: pose (16), twist (6), the given quantity (6)."""
    return BASE_INPUTS if robot.floating_base else 0


def given_name(problem: str) -> str:
    """The base quantity a problem gives: "base_accel" (inverse dynamics) or "base_wrench" (forward, hybrid)."""
    return "base_accel" if problem == "inverse" else "base_wrench"


def checked_base(robot: Robot, problem: str, base_pose=None, base_twist=None, base_accel=None,
                 base_wrench=None) -> np.ndarray:
    """The base inputs, checked; a compiled hybrid solver's base is free (its acceleration is an output)."""
    if problem == "hybrid" and base_accel is not None:
        raise ArgumentError("base_accel: a compiled hybrid solver solves for the base acceleration (the base is "
                            "free); prescribe it with gtdyn.hybrid_dynamics(..., base_accel=...)")
    return packed_base(robot, problem, base_pose, base_twist, base_accel, base_wrench)


_ZERO_6 = np.zeros(6)
for _default in (_IDENTITY_4, _ZERO_6):
    _default.setflags(write=False)  # handed to the native entry, which only reads them
# what a floating base's input not given means, where the native entry fills it in (``gtdyn.compiled.entry``)
DEFAULTS = {"base_pose": _IDENTITY_4, "base_twist": _ZERO_6, "base_accel": _ZERO_6, "base_wrench": _ZERO_6}


def pose_converted(call, q, v, x, base_pose, *rest) -> bool:
    """``call`` (a native entry, ``gtdyn.compiled.entry``, which takes C-ordered float64 arrays only and refused
    these arguments) again with the pose converted: a ``gtsam.Pose3`` as its matrix, a column-major pose (what
    ``Pose3.matrix()`` returns) in C order. False, not called, for anything else: the Python path then checks,
    converts or names the error."""
    if type(base_pose) is gtsam.Pose3:
        base_pose = np.ascontiguousarray(base_pose.matrix())
    elif type(base_pose) is np.ndarray and not base_pose.flags.c_contiguous:
        base_pose = np.ascontiguousarray(base_pose)
    else:
        return False
    return bool(call(q, v, x, base_pose, *rest))


def write_base(robot: Robot, problem: str, views, base_pose, base_twist, base_accel, base_wrench) -> None:
    """A floating base's inputs into ``views`` (the workspace's pose as 4×4, twist and given quantity; None on a
    fixed base), with only the checks that cost nothing: the generated code checks that the pose is a rigid
    transform and every number finite, and hands anything else to the reference path, which raises the same
    errors as ``checked_base``."""
    if views is None or (base_wrench if problem == "inverse" else base_accel) is not None:
        checked_base(robot, problem, base_pose, base_twist, base_accel, base_wrench)  # raises the error, if any
        return  # a fixed base given nothing: nothing to write
    pose, twist, given_view = views
    given = base_accel if problem == "inverse" else base_wrench
    try:
        if base_pose is None:
            pose[...] = _IDENTITY_4
        elif type(base_pose) is np.ndarray and base_pose.shape == (4, 4) and base_pose.dtype.kind != "c":
            pose[...] = base_pose
        else:
            pose[...] = checked_base(robot, problem, base_pose)[POSE:TWIST].reshape(4, 4)  # a Pose3, or the error
        for view, value in ((twist, base_twist), (given_view, given)):
            if value is None:
                view.fill(0.0)
            elif type(value) is not np.ndarray:
                value = np.asarray(value)
            if value is None:
                continue
            if value.shape != (6,) or value.dtype.kind not in "fiu":  # complex would be truncated, silently
                raise ValueError
            view[...] = value
    except (TypeError, ValueError):
        checked_base(robot, problem, base_pose, base_twist, base_accel, base_wrench)  # the error naming the argument
        raise


def base_states(robot: Robot, problem: str, count: int, base_pose, base_twist, base_accel, base_wrench) -> np.ndarray:
    """(count, base inputs) for a batch: poses (count, 4, 4) — or a list of ``gtsam.Pose3`` —, twists and the
    given accelerations or wrenches (count, 6), identity and zeros where not given. Only shapes are checked here;
    the generated code checks each pose and the finiteness of every number, as for single calls."""
    if not robot.floating_base or (base_wrench if problem == "inverse" else base_accel) is not None:
        if robot.floating_base or any(x is not None for x in (base_pose, base_twist, base_accel, base_wrench)):
            checked_base(robot, problem, base_pose, base_twist, base_accel, base_wrench)  # raises the error, if any
        return np.zeros((count, 0))  # a fixed base given nothing: nothing to check

    given = base_accel if problem == "inverse" else base_wrench
    return np.hstack([base_rows("base_pose", base_pose, count, (4, 4), _IDENTITY),
                      base_rows("base_twist", base_twist, count, (6,), np.zeros(6)),
                      base_rows(given_name(problem), given, count, (6,), np.zeros(6))])
