"""The command's inputs, checked at the door: numbers, vectors and joint=value pairs from the command line,
an ordering, the robot file to read and the places to write. Anything wrong is a one-line CLIError."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import tempfile

import gtsam
import numpy as np

import gtdyn
from gtdyn.cli.messages import CLIError
from gtdyn.orderings import APPLIES_TO, STRATEGIES, applicable
from gtdyn.spatial import rpy_matrix

QUATERNION_NORM_TOLERANCE = 1e-3  # |‖q‖ − 1| a typed unit quaternion may miss by (0.7071 for √½); it is normalised


def number(text: str, name: str, where: str) -> float:
    """``text`` as a finite number, for option --``name`` (``where``: the text it came from)."""
    try:
        value = float(text)
    except ValueError:
        raise CLIError(f"--{name}: '{text.strip()}' is not a number (in '{where}')") from None
    if not np.isfinite(value):
        raise CLIError(f"--{name}: '{text.strip()}' is not a finite number")
    return value


def numbers(text: str, name: str) -> np.ndarray:
    """Comma-separated finite numbers for option --``name``; an empty field (``1,,2`` or a trailing comma) is an
    error, not a value to skip."""
    items = text.split(",") if text.strip() else []
    empty = [k for k, x in enumerate(items, start=1) if not x.strip()]
    if empty:
        raise CLIError(f"--{name}: value {empty[0]} of '{text}' is empty (a stray comma?); expected comma-separated "
                       "numbers")
    try:
        [float(x) for x in items]
    except ValueError:
        raise CLIError(f"--{name}: expected comma-separated numbers, got '{text}'") from None
    return np.array([number(x, name, text) for x in items])


def vector(text: str | None, name: str, robot: gtdyn.Robot, default: np.ndarray | None) -> np.ndarray | None:
    """Comma-separated numbers, one per joint of ``robot``, or one number for every joint (``--v 0``); ``default``
    if not given."""
    if text is None:
        return default
    values = numbers(text, name)
    if len(values) == 1:
        return np.full(robot.num_dofs, values[0])
    if len(values) != robot.num_dofs:
        raise CLIError(f"--{name}: expected {robot.num_dofs} values (joints {', '.join(robot.joint_names)}), "
                       f"got {len(values)}")
    return values


def base_vector(text: str | None, name: str, components: str) -> np.ndarray | None:
    """A floating base's twist or acceleration: six comma-separated numbers (``components`` names them);
    None if not given."""
    if text is None:
        return None
    values = numbers(text, name)
    if len(values) != 6:
        raise CLIError(f"--{name}: expected 6 values ({components}), got {len(values)}")
    return values


def base_pose(text: str | None, name: str = "base-pose") -> gtsam.Pose3 | None:
    """--base-pose (or the option ``name``): x,y,z,qx,qy,qz,qw (a unit quaternion in Pinocchio's order) or
    x,y,z,roll,pitch,yaw (as a URDF origin); None if not given."""
    if text is None:
        return None
    values = numbers(text, name)
    if len(values) == 6:
        rotation = rpy_matrix(*values[3:])
    elif len(values) == 7:
        norm = np.linalg.norm(values[3:])
        if abs(norm - 1) > QUATERNION_NORM_TOLERANCE:
            raise CLIError(f"--{name}: the quaternion qx,qy,qz,qw must have unit norm, got norm {norm:.6g}")
        qx, qy, qz, qw = values[3:] / norm
        rotation = gtsam.Rot3.Quaternion(qw, qx, qy, qz).matrix()
    else:
        raise CLIError(f"--{name}: expected 7 values x,y,z,qx,qy,qz,qw (m; a unit quaternion) or 6 values "
                       f"x,y,z,roll,pitch,yaw (m; rad), got {len(values)}")
    return gtsam.Pose3(gtsam.Rot3(rotation), values[:3])


def pairs(text: str | None, name: str, robot: gtdyn.Robot) -> dict[str, float] | None:
    """joint=value pairs; None if not given."""
    if not text:
        return None
    out: dict[str, float] = {}
    for item in text.split(","):
        if "=" not in item:
            raise CLIError(f"--{name}: for hybrid dynamics give joint=value pairs, got '{item}'")
        joint, value = (x.strip() for x in item.split("=", 1))
        if joint in out:
            raise CLIError(f"--{name}: joint '{joint}' is given twice (in '{text}')")
        out[joint] = number(value, name, item)
    unknown = [j for j in out if j not in robot.joint_names]
    if unknown:
        raise CLIError(f"--{name}: unknown joints {', '.join(unknown)} (joints of {robot.name}: "
                       f"{', '.join(robot.joint_names)})")
    return out


def wrenches(items: list[str] | None, robot: gtdyn.Robot) -> dict[str, np.ndarray] | None:
    """--wrench FRAME=mx,my,mz,fx,fy,fz (repeatable): the wrench the environment applies to each link or frame, in
    that frame's axes; None if not given."""
    if not items:
        return None
    out: dict[str, np.ndarray] = {}
    for item in items:
        frame, _, text = item.partition("=")
        frame = frame.strip()
        if not _ or not frame:
            raise CLIError(f"--wrench: expected FRAME=mx,my,mz,fx,fy,fz, got '{item}'")
        if frame in out:
            raise CLIError(f"--wrench: '{frame}' is given twice")
        if frame not in robot.frames:
            raise CLIError(f"--wrench: unknown link or frame '{frame}' (links and frames of {robot.name}: "
                           f"{', '.join(robot.frames)})")
        values = numbers(text, "wrench")
        if len(values) != 6:
            raise CLIError(f"--wrench: expected 6 values for '{frame}' (mx,my,mz in N·m, fx,fy,fz in N), got "
                           f"{len(values)}")
        out[frame] = values
    return out


def contacts(text: str | None, robot: gtdyn.Robot) -> list[gtdyn.Contact] | None:
    """--contacts FRAME[:surface],...: rigid contacts at the origins of these links or frames (point contacts
    unless ':surface'); None if not given."""
    if not text:
        return None
    out = []
    for item in text.split(","):
        frame, _, kind = (x.strip() for x in item.partition(":"))
        if frame not in robot.frames:
            raise CLIError(f"--contacts: unknown link or frame '{frame}' (links and frames of {robot.name}: "
                           f"{', '.join(robot.frames)})")
        if kind not in ("", "point", "surface"):
            raise CLIError(f"--contacts: '{item}': a contact is FRAME, FRAME:point or FRAME:surface")
        out.append(gtdyn.Contact(frame, kind=kind or "point"))
    return out


def attach_negative_values(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``--q -0.1,0.2`` as ``--q=-0.1,0.2``: argparse reads a value that starts with '-' as an option unless it
    is one plain negative number, so comma-separated vectors with a negative first entry could not be given."""
    takes_value = {option for p in _parsers(parser) for action in p._actions
                   if action.nargs is None and action.option_strings for option in action.option_strings}
    out = []
    for token in argv:
        if out and out[-1] in takes_value and re.match(r"^-[\d.]", token):
            out[-1] = f"{out[-1]}={token}"
        else:
            out.append(token)
    return out


def _parsers(parser: argparse.ArgumentParser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def ordering_argument(text: str | None, problem: str):
    """--ordering for ``problem``: None (the default), a strategy that applies to it, or a list of labels."""
    if text is None:
        return None
    if text in STRATEGIES:
        if problem not in APPLIES_TO[text]:
            raise CLIError(f"--ordering: '{text}' applies to {' and '.join(APPLIES_TO[text])} dynamics, not {problem}; "
                           f"for {problem} dynamics use {', '.join(applicable(problem))} or a list of labels")
        return text
    if "," in text:
        return [x.strip() for x in text.split(",") if x.strip()]
    raise CLIError(f"--ordering: unknown ordering '{text}'; use one of {', '.join(STRATEGIES)} "
                   "or a comma-separated list of labels such as t3,t2,t1,F1,F2,F3,A3,A2,A1")


def ordering_name(text: str | None) -> str:
    """How a result names its ordering: the strategy, 'colamd (default)' or 'custom'."""
    if text is None:
        return "colamd (default)"
    return text if text in STRATEGIES else "custom"


def load(path: str, base: str | None = None, transmissions: str = "exact") -> gtdyn.Robot:
    """The robot the command names, its base fixed or floating as --base says (None: as the file says) and its
    transmissions read as --transmissions says; an unreadable file or a base the file cannot have is a one-line
    error."""
    try:
        return gtdyn.load_robot(path, base=base, transmissions=transmissions)
    except OSError as e:
        raise CLIError(f"{path}: cannot read: {e.strerror or e}") from None
    except gtdyn.ArgumentError as e:  # the library names its argument base=; the command's option is --base
        if not str(e).startswith("base: "):
            raise
        raise CLIError(f"--{e}") from None


def file_name(name: str, fallback: str) -> str:
    """``name`` (a robot's, say) as a plain, visible file name: runs of other characters than letters, digits,
    '.', '_' and '-' made '_', no leading dot; ``fallback`` if nothing is left."""
    return re.sub(r"[^\w.-]+", "_", name).lstrip(".") or fallback


def output_prefix(out: str, name: str, example: str) -> str:
    """--out as a path prefix. A directory (an existing one, or a path ending in a separator) gets ``name``
    (``file_name(name, example)``) inside it; an empty --out would write hidden files such as '.csv' and
    '.png.png'. ``example``: the prefix the error suggests."""
    if not out.strip():
        raise CLIError(f"--out: expected a path prefix (such as '{example}') or a directory, got ''")
    if out.endswith(("/", os.sep)) or os.path.isdir(out):
        return os.path.join(out, file_name(name, example))
    return out


def writable_directory(path: str, option: str) -> None:
    """Create ``path`` if need be and check that a file can be written there, before any long work."""
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as e:
        raise CLIError(f"{option}: cannot write to '{path}': {e.strerror or e}") from None


@contextlib.contextmanager
def writing(path: str):
    """OSErrors while writing a file the user named become one-line errors."""
    try:
        yield
    except OSError as e:
        raise CLIError(f"{path}: cannot write: {e.strerror or e}") from None
