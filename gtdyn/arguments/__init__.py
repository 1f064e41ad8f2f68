"""Checking what users pass: ArgumentErrors that name the argument (and the robot's joints) before any solve."""

from __future__ import annotations

import inspect
import math
import numbers
from collections.abc import Mapping

import gtsam
import numpy as np

from gtdyn import keys
from gtdyn.equations import GRAVITY
from gtdyn.errors import ArgumentError
from gtdyn.model.limits import MAX_ANGLE
from gtdyn.model.robot import Robot


def robot_argument(robot) -> Robot:
    """``robot`` itself, or ArgumentError: it is not a ``gtdyn.Robot`` (a path or bundled name, say)."""
    if not isinstance(robot, Robot):
        raise ArgumentError(f"robot: expected a gtdyn.Robot (from gtdyn.load_robot), got {type(robot).__name__}"
                            + (f" {robot!r}: load it first, gtdyn.load_robot({robot!r})" if isinstance(robot, str)
                               else ""))
    return robot


def real_array(name: str, x, what: str = "numbers") -> np.ndarray:
    """``x`` as a float array of any shape, or ArgumentError naming ``what`` it should hold: ragged, complex (numpy
    would drop the imaginary part with only a warning) or non-numeric."""
    try:
        raw = np.asarray(x)
    except (TypeError, ValueError):  # ragged nested sequences
        raise ArgumentError(f"{name}: expected {what}, got {_shown(x)}") from None
    if np.iscomplexobj(raw):
        raise ArgumentError(f"{name}: expected real numbers, got complex values {_shown(raw.tolist())}")
    try:
        return raw.astype(float)
    except (TypeError, ValueError):
        raise ArgumentError(f"{name}: expected {what}, got {_shown(x)}") from None


def _shown(x, limit: int = 200) -> str:
    """``repr(x)``, cut short: a batch of states must not make a message of megabytes."""
    text = repr(x)
    return text if len(text) <= limit else text[:limit] + "…"


# m/s²: a thousand times the Earth's. Beyond any robot's world, and far enough from float range that gravity's
# share of the dynamics cannot swamp the rest: at 1e30 along a planar arm's joint axes (where it should do
# nothing) its cancelling terms left q̈ wrong by 13 without any warning.
MAX_GRAVITY = 1e4


# N and N·m: a Saturn V's thrust is 3.5e7 N. A wrench of 1e25 on a 3R arm's tip left q̈ wrong by 1.5e-5, one of
# 1e30 by 13: the answer's rounding grows with the inputs' scale.
MAX_WRENCH = 1e12


def gravity_vector(gravity) -> np.ndarray:
    """``gravity`` (world frame, m/s²) as a float 3-vector, or ArgumentError: not 3 finite numbers, or beyond
    ±MAX_GRAVITY."""
    if gravity is GRAVITY:  # the default (a tuple) is valid: every simulate and query passes it
        return np.array(GRAVITY)
    g = finite_vector("gravity", gravity, 3)
    if np.max(np.abs(g)) > MAX_GRAVITY:
        raise ArgumentError(f"gravity: {np.max(np.abs(g)):g} m/s² is beyond the ±{MAX_GRAVITY:g} m/s² gtdyn accepts "
                            "(a thousand times the Earth's)")
    return g


def bounded_wrench(name: str, wrench) -> np.ndarray:
    """``wrench`` [m; f] as 6 finite floats within ±MAX_WRENCH, or ArgumentError naming ``name``."""
    F = finite_vector(name, wrench, 6)
    if np.max(np.abs(F)) > MAX_WRENCH:
        raise ArgumentError(f"{name}: {np.max(np.abs(F)):g} is beyond the ±{MAX_WRENCH:g} N (N·m) gtdyn accepts")
    return F


def finite_vector(name: str, x, n: int) -> np.ndarray:
    """``x`` as a float vector of length n, or ArgumentError: wrong shape, complex, non-numeric or non-finite."""
    if type(x) is np.ndarray and x.dtype == np.float64 and x.shape == (n,) and math.isfinite(sum(x.tolist())):
        # the common case, as below in a fraction of the time (a controller's torque, every stage): a finite sum has
        # every entry finite (NaN and ±inf make it NaN or inf; Python floats overflow without a warning, and such
        # entries take the check below)
        return x.copy()
    a = real_array(name, x, f"{n} numbers")
    if a.shape != (n,):
        raise ArgumentError(f"{name}: expected a vector of length {n}, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ArgumentError(f"{name}: non-finite values {a.tolist()}")
    return a


def state_batch(n: int, **arrays) -> list[np.ndarray]:
    """Arrays of N states (shape (N, n) each, all the same N), by their argument names, as float arrays of their
    own (copies)."""
    checked = state_arrays(n, **arrays)
    return [a.copy() if a is given else a for a, given in zip(checked, arrays.values(), strict=True)]


def state_arrays(n: int, **arrays) -> list[np.ndarray]:
    """``state_batch``'s checks, float64 arrays returned as they are (for a caller that copies them anyway)."""
    out = [a if type(a) is np.ndarray and a.dtype == np.float64 else  # the common case, as real_array gives it
           real_array(name, a, f"an array of shape (N, {n})") for name, a in arrays.items()]
    if out[0].ndim != 2 or out[0].shape[1] != n or any(a.shape != out[0].shape for a in out):
        raise ArgumentError(f"{', '.join(arrays)}: expected {len(out)} arrays of shape (N, {n}), got "
                            f"{', '.join(str(a.shape) for a in out)}")
    return out


def held_joints(robot: Robot, name: str, x) -> np.ndarray:
    """``x`` as one float per joint where NaN means "free" (``optimize_trajectory``'s ``qdd0``), or ArgumentError:
    wrong shape, complex, non-numeric or infinite."""
    a = real_array(name, x, f"{robot.num_dofs} numbers")
    if a.shape != (robot.num_dofs,):
        raise ArgumentError(f"{name}: expected a vector of length {robot.num_dofs}, got shape {a.shape} (one per "
                            f"joint of '{robot.name}': {', '.join(robot.joint_names)}; NaN leaves one free)")
    if np.any(np.isinf(a)):
        raise ArgumentError(f"{name}: infinite values {a.tolist()} (NaN leaves a joint free)")
    return a


def joint_vector(robot: Robot, name: str, x) -> np.ndarray:
    try:
        return finite_vector(name, x, robot.num_dofs)
    except ArgumentError as e:
        raise ArgumentError(f"{e} (one per joint of '{robot.name}': {', '.join(robot.joint_names)})") from None


def joint_positions(robot: Robot, name: str, q) -> np.ndarray:
    """``joint_vector`` of joint positions: a revolute joint's angle beyond ±``MAX_ANGLE`` rad is an error (its
    sine and cosine carry no digits there)."""
    q = joint_vector(robot, name, q)
    values = q.tolist()
    if max(map(abs, values), default=0.0) > MAX_ANGLE:  # only then is there a joint to name (a revolute one, or none)
        check_angles(robot, name, dict(enumerate(values, start=1)))
    return q


def check_angles(robot: Robot, name: str, values: Mapping[int, float]) -> None:
    """Revolute joints' angles (by joint index) within ±``MAX_ANGLE``."""
    for j, value in values.items():
        joint = robot.joints[j - 1]
        if joint.type == "revolute" and abs(value) > MAX_ANGLE:
            raise ArgumentError(f"{name}: joint '{joint.name}' at {value:g} rad is beyond ±{MAX_ANGLE:g} rad, where "
                                "an angle's sine and cosine lose their digits; reduce it modulo 2π")


def joint_dict(robot: Robot, name: str, d) -> dict[int, float]:
    if not isinstance(d, Mapping):
        raise ArgumentError(f"{name}: expected a dict from joint name to value, got {type(d).__name__}")
    names = set(robot.joint_names)
    unknown = [k for k in d if k not in names]
    if unknown:
        raise ArgumentError(f"{name}: unknown joints {', '.join(map(str, unknown))} "
                            f"(joints: {', '.join(robot.joint_names)})")
    out = {}
    for k, value in d.items():
        out[robot.joint(k).index] = float(finite_vector(f"{name}['{k}']", [value], 1)[0])
    return out


def pose_argument(name: str, value) -> gtsam.Pose3:
    """A ``gtsam.Pose3`` or a 4×4 homogeneous transform (rotation orthonormal to 1e-9) as a Pose3."""
    if isinstance(value, gtsam.Pose3):
        return value
    T = real_array(name, value, "a gtsam.Pose3 or a 4×4 matrix")
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        raise ArgumentError(f"{name}: expected a gtsam.Pose3 or a finite 4×4 matrix, got shape {T.shape}")
    R = T[:3, :3]
    if (np.max(np.abs(R.T @ R - np.eye(3))) > 1e-9 or np.linalg.det(R) < 0
            or np.max(np.abs(T[3] - [0, 0, 0, 1])) > 0):
        raise ArgumentError(f"{name}: the 4×4 matrix is not a rigid transform (its rotation block is not a "
                            "rotation, or its last row is not 0 0 0 1)")
    return gtsam.Pose3(gtsam.Rot3(R), T[:3, 3])


def choice(name: str, value, options) -> str:
    """``value`` if it is one of the words ``options``, or ArgumentError listing them (an array's ``in`` would be
    elementwise, so non-strings are refused first)."""
    if not isinstance(value, str) or value not in options:
        raise ArgumentError(f"{name}: {value!r} is not one of {', '.join(options)}")
    return value


def positive_number(name: str, x) -> float:
    """``x`` as a finite float > 0, or ArgumentError (a bool is not a number here)."""
    if type(x) is float and 0.0 < x < math.inf:  # the common case, without the ABC's check (NaN fails both)
        return x
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(x) or x <= 0:
        raise ArgumentError(f"{name}: expected a finite number > 0, got {x!r}")
    return float(x)


def flag(name: str, x) -> bool:
    """``x`` as a bool (numpy's too), or ArgumentError: a string such as "no" would count as True."""
    if not isinstance(x, (bool, np.bool_)):
        raise ArgumentError(f"{name}: expected True or False, got {x!r}")
    return bool(x)


def instance_of(name: str, value, kind: type, what: str):
    """``value`` itself, or ArgumentError: it is not a ``kind`` (``what`` says what was expected and from where)."""
    if not isinstance(value, kind):
        raise ArgumentError(f"{name}: expected {what}, got {type(value).__name__}")
    return value


def batch_method(name: str, method, kinds: tuple[type, ...], *states, **inputs) -> tuple[object, str, dict]:
    """``method``'s object, its name and its arguments by parameter name (``inspect.Signature.bind``), or
    ArgumentError: it is not a ``batch…`` method of one of ``kinds``, or it does not take these arguments."""
    owner, method_name = getattr(method, "__self__", None), getattr(method, "__name__", "")
    if not isinstance(owner, kinds) or not method_name.startswith("batch"):
        raise ArgumentError(f"{name}: expected a batch method of a compiled object (solver.batch, mass.batch, "
                            f"frames.batch_jacobian, …), got {_shown(method)}")
    try:
        return owner, method_name, inspect.signature(method).bind(*states, **inputs).arguments
    except TypeError as error:
        raise ArgumentError(f"{type(owner).__name__}.{method_name}: {error}") from None


def whole_number(name: str, x, minimum: int = 0) -> int:
    """``x`` as an int ≥ ``minimum``, or ArgumentError (a bool or a float is not a count here)."""
    if type(x) is int and x >= minimum:  # the common case, without the ABC's check (a bool's type is bool)
        return x
    if isinstance(x, bool) or not isinstance(x, numbers.Integral) or x < minimum:
        raise ArgumentError(f"{name}: expected a whole number ≥ {minimum}, got {x!r}")
    return int(x)


def positive_vector(name: str, x, n: int) -> np.ndarray:
    """``x`` as a float array of shape () or (n,) with every entry finite and > 0, or ArgumentError."""
    try:
        a = np.asarray(x, dtype=float) if not isinstance(x, (bool, str)) else None
    except (TypeError, ValueError):
        a = None
    if a is None or a.shape not in ((), (n,)) or not np.all(np.isfinite(a)) or not np.all(a > 0):
        raise ArgumentError(f"{name}: expected a finite number > 0 or {n} of them, got {_shown(x)}")
    return a


def noise_model(name: str, model, dim: int) -> gtsam.noiseModel.Base:
    """``model`` if it is a ``dim``-dimensional gtsam noise model."""
    if not isinstance(model, gtsam.noiseModel.Base) or model.dim() != dim:
        raise ArgumentError(f"{name}: expected a {dim}-dimensional gtsam noise model, got {model!r}")
    return model


def distinct_keys(name: str, key_list: list[int]) -> list[int]:
    """``key_list`` if no variable appears twice in it."""
    if len(set(key_list)) != len(key_list):
        raise ArgumentError(f"{name}: expected distinct variables, got {', '.join(map(keys.label, key_list))}")
    return key_list


def step_keys(robot: Robot, q, v, qdd, tau, base) -> list[int]:
    """The variables of one time step of the whole robot, as a factor over them takes them: the floating base's
    pose, twist and acceleration (``base``: three keys; None on a fixed base), then q, q̇, q̈ and τ (one key per
    joint each), checked distinct."""
    n = robot.num_dofs
    if not all(len(joint_keys) == n for joint_keys in (q, v, qdd, tau)):
        raise ArgumentError(f"q, v, qdd, tau: expected {n} keys each (one per joint of '{robot.name}')")
    if (base is not None) != robot.floating_base or (base is not None and len(base) != 3):
        wanted = "the keys of its pose, twist and acceleration" if robot.floating_base else "no keys"
        raise ArgumentError(f"base: robot '{robot.name}' has a {'floating' if robot.floating_base else 'fixed'} "
                            f"base; pass {wanted} as base=")
    return distinct_keys("q, v, qdd, tau, base", [*(base or ()), *q, *v, *qdd, *tau])


def covered(robot: Robot, by: str, *, loops: bool = True, floating_base: bool = True, transmissions: bool = True,
            advice: str = "") -> Robot:
    """``robot`` if ``by`` (what is asked of it, for the message) covers what the robot has — closed loops, a
    floating base, transmissions — else an ArgumentError naming what it does not cover, and ``advice``."""
    missing = [what for what, present, allowed in (("closed loops", robot.loop_joints, loops),
                                                   ("a floating base", robot.floating_base, floating_base),
                                                   ("transmissions", robot.transmissions, transmissions))
               if present and not allowed]
    if missing:
        raise ArgumentError(f"robot: {by} does not cover {' or '.join(missing)}, and '{robot.name}' has "
                            f"{' and '.join(missing)}" + (f" ({advice})" if advice else ""))
    return robot


_SIZE_UNITS = {"": 1, "b": 1, **{prefix + suffix: 1024 ** power for power, prefix in enumerate("kmgt", start=1)
                                 for suffix in ("", "b", "ib")}}  # binary: "8GB" and "8GiB" are 8 · 1024³


def memory_size(name: str, value) -> int | None:
    """A memory size in bytes: a positive number, or text such as "8GB", "512 MB", "1e9"; None, "none" or
    "unlimited" for no limit."""
    if value is None:
        return None
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        if not value > 0:
            raise ArgumentError(f"{name}: a memory size must be positive, got {value!r}")
        return int(value)
    cleaned = value.strip().lower().replace(" ", "") if isinstance(value, str) else None
    if cleaned in ("none", "unlimited"):
        return None
    number = (cleaned or "").rstrip("kmgtib")
    try:
        size = float(number) * _SIZE_UNITS[(cleaned or "")[len(number):]]
    except (ValueError, KeyError):
        raise ArgumentError(f"{name}: expected a size such as '8GB', '512MB' or 'unlimited', or a number of bytes, "
                            f"got {value!r}") from None
    if not size > 0:
        raise ArgumentError(f"{name}: a memory size must be positive, got {value!r}")
    return int(size)


def frame_list(robot: Robot, name: str, frames) -> list[str]:
    """One frame name or a non-empty list of them, each a link or frame of ``robot``."""
    listed = [frames] if isinstance(frames, str) else list(frames) if isinstance(frames, (list, tuple)) else None
    if not listed:
        raise ArgumentError(f"{name}: expected a frame name or a non-empty list of them, got {frames!r}")
    unknown = [frame for frame in listed if frame not in robot.frames]
    if unknown:
        raise ArgumentError(f"{name}: unknown link or frame '{unknown[0]}' (links and frames: "
                            f"{', '.join(robot.frames)})")
    return listed
