"""Joint locking (Pinocchio's ``buildReducedModel``): a robot with some joints welded at given values.

The robot is rebuilt from the description it was built from (``Robot.description``), each locked joint
rewritten as a fixed joint at its value, so that the welded bodies merge and their inertias compose exactly as
a file's fixed joints do when it is loaded — one merging rule, not a second one on built robots.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping

import gtsam
import numpy as np

from gtdyn.errors import ArgumentError, ModelWarning
from gtdyn.model.build import _requested_transmissions, build_robot
from gtdyn.model.description import JointSpec, RobotDescription, TransmissionSpec
from gtdyn.model.robot import Robot

# |q_dependent − Σ ratio·q − offset| accepted between given values, and how far a value may pass a limit, relative
# to the values' magnitude (as for states: gtdyn.arguments.asked.TRANSMISSION_TOLERANCE)
TOLERANCE = 1e-9


@dataclasses.dataclass(frozen=True)
class _Coupling:
    """One transmission of the description by joint names: q_joint = Σ ratio · q_drive + offset."""

    joint: str
    drives: tuple[tuple[str, float], ...]
    offset: float
    label: str


def lock_joints(robot: Robot, values) -> Robot:
    """``robot`` with the joints in ``values`` (joint name → q: rad, or m for a prismatic joint) welded at those
    values: Pinocchio's ``buildReducedModel``. Each locked joint becomes a fixed joint placed at
    origin · exp([axis] q) · child_pose, so its child body merges into its parent (inertias composed, as fixed
    joints are merged when a file is loaded); every other joint keeps its name, its order and its actuation.

    Use it to drop what a task never moves: the Panda without its gripper, an arm with its wrist held.

    * A floating base stays floating; the base's own frame is not touched (a joint from the base welds its
      child into the base).
    * ``frames``: every frame stays reachable by name, on the body it was merged into (a locked joint's child
      link is a frame of its parent's body).
    * Transmissions (``robot.transmissions``) are kept: a transmission whose drives are all locked locks its
      driven joint at the value they give; a locked driven joint with exactly one free drive (nonzero ratio)
      locks that drive at the value that keeps the coupling; a transmission with some drives locked keeps its
      free ones, its offset absorbing the locked drives' share. Values given for every joint of a transmission
      must keep it. With ``transmissions="approximate"`` a locked drive drops out of its rotor's reflected
      inertia (the rotor stays welded at its offset, as the approximation welds it); with "independent" every
      joint is locked alone.
    * Locking every joint is allowed: a robot with no joints. ``values`` empty: ``robot`` itself.

    The rebuild starts from ``robot.description`` with the same base and transmission reading; of changes made
    to the built robot it keeps only which joints are actuated (``with_actuated``). Its ``source`` says which
    joints are locked ("….urdf with j4, j5 locked"): it is no longer the file's robot (Pinocchio comparisons and
    documented states, which go by the file, do not apply).

    ArgumentError naming ``values`` and the joint: not a dict, an unknown joint, a non-finite value, a value
    outside the joint's limits, a loop-closing joint (locking one is not supported), values that break a
    transmission (with the value the joint must have), a locked driven joint that leaves several drives free.
    """
    locked, reading, refusal = _plan(robot, values)
    if refusal:  # the one raise: every check below says what is wrong instead (tests/test_layers.py counts them)
        raise ArgumentError(refusal)
    if not locked:
        return robot
    names = ", ".join(n for n in robot.joint_names if n in locked)  # not the file any more: no documented state
    description = dataclasses.replace(_rewrite(robot.description, locked, reading),
                                      source=f"{robot.source} with {names} locked")
    with warnings.catch_warnings():  # what the description warns about (ignored <mimic>s...) was said at load
        warnings.simplefilter("ignore", ModelWarning)
        reduced = build_robot(description, floating=robot.floating_base, transmissions=reading)
    return _keep_actuation(reduced, robot)


def _plan(robot: Robot, values) -> tuple[dict[str, float], str, str | None]:
    """Every joint to lock (the given ones and those their transmissions lock) with its value, and the
    transmission reading to rebuild with; or why ``values`` cannot be locked (the message of an ArgumentError)."""
    if robot.description is None:
        return {}, "", (f"robot: '{robot.name}' was not built from a description (gtdyn.load_robot and "
                        "gtdyn.model.build.build_robot keep one), so it cannot be rebuilt with joints locked")
    given, refusal = _given(robot, values)
    if refusal or not given:
        return {}, "", refusal
    reading = robot.reading
    couplings = _couplings(robot.description) if reading != "independent" else []
    if reading == "exact" and not robot.transmissions:  # made free after building (rigid_bodies): read it so
        reading, couplings = "independent", []
    locked, derived = _propagate(given, couplings, reading)
    refusals = [_kept(c, locked) for c in couplings if reading == "exact" and c.joint in given]
    refusals.append(_derived_refusal(robot, locked, derived))
    return locked, reading, next((r for r in refusals if r), None)


# -- the values ---------------------------------------------------------------------------------------------------


def _given(robot: Robot, values) -> tuple[dict[str, float], str | None]:
    """``values`` as joint name → float, each a finite real within its joint's limits, none closing a loop; or
    why not. (The checks of gtdyn.arguments live above this layer; the messages follow theirs.)"""
    if not isinstance(values, Mapping):
        return {}, f"values: expected a dict from joint name to value, got {type(values).__name__}"
    names = set(robot.joint_names)
    unknown = [k for k in values if k not in names]
    if unknown:
        return {}, f"values: unknown joints {', '.join(map(str, unknown))} (joints: {', '.join(robot.joint_names)})"
    out = {}
    for name, value in values.items():
        x = np.asarray(value)
        if x.shape != () or x.dtype.kind not in "iuf":
            return {}, f"values['{name}']: expected a real number, got {value!r:.80}"
        if not np.isfinite(x):
            return {}, f"values['{name}']: non-finite value {float(x)}"
        out[name] = float(x)
        problem = _lock_problem(robot, name, out[name])
        if problem:
            return {}, f"values['{name}']: {problem}"
    return out, None


def _lock_problem(robot: Robot, name: str, value: float) -> str | None:
    """Why joint ``name`` cannot be locked at ``value`` (it closes a loop, or the value is outside its limits), or
    None."""
    joint = robot.joint(name)
    if joint.closes_loop:
        return f"'{name}' closes a loop, and locking a loop-closing joint is not supported"
    slack = TOLERANCE * (1.0 + abs(value))
    if not joint.lower - slack <= value <= joint.upper + slack:
        return f"{value:.9g} is outside the limits [{joint.lower:g}, {joint.upper:g}] of joint '{name}'"
    return None


# -- the couplings ------------------------------------------------------------------------------------------------


def _couplings(description: RobotDescription) -> list[_Coupling]:
    """Every ``<mimic>`` and ``<gtdyn:transmission>`` of the description that the build couples (a fixed
    joint's is dropped), as ``build._requested_transmissions`` read them when the robot was built."""
    specs = {js.name: js for js in description.joints}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)
        requested = _requested_transmissions(specs, description.transmissions, description.source)
    return [_Coupling(name, tuple(drives), float(offset), label) for name, drives, offset, label in requested]


def _propagate(given: dict[str, float], couplings: list[_Coupling], reading: str
               ) -> tuple[dict[str, float], dict[str, _Coupling]]:
    """Every joint to lock — the given ones and those their transmissions lock — and, for each added one, the
    transmission that locks it. Grows until nothing changes (a drive locked through one transmission may
    complete another). "approximate": a rotor whose drives are all locked is welded at its offset."""
    locked, derived = dict(given), {}
    grew = True
    while grew:
        grew = False
        for c in couplings:
            free = _free_drives(c, locked)
            if c.joint not in locked and not free:
                locked[c.joint] = c.offset if reading == "approximate" else c.offset + _locked_share(c, locked)
                derived[c.joint] = c
            elif c.joint in locked and len(free) == 1 and reading == "exact":
                drive, ratio = free[0]
                locked[drive] = (locked[c.joint] - c.offset - _locked_share(c, locked)) / ratio
                derived[drive] = c
            else:
                continue
            grew = True
    return locked, derived


def _free_drives(c: _Coupling, locked: dict[str, float]) -> list[tuple[str, float]]:
    return [(j, r) for j, r in c.drives if j not in locked and r != 0.0]


def _locked_share(c: _Coupling, locked: dict[str, float]) -> float:
    """Σ ratio · q over the coupling's locked drives."""
    return sum(r * locked[j] for j, r in c.drives if j in locked)


def _kept(c: _Coupling, locked: dict[str, float]) -> str | None:
    """Why a given driven joint breaks its coupling, or None: its drives must all end up locked (one free drive
    would have been locked by ``_propagate``), at values that keep the coupling."""
    free = _free_drives(c, locked)
    if free:
        return (f"values['{c.joint}']: locking '{c.joint}' ({c.label}) leaves its drives "
                f"{', '.join(j for j, _ in free)} free; give values for all but one of them")
    expected = c.offset + _locked_share(c, locked)
    if abs(locked[c.joint] - expected) > TOLERANCE * (1.0 + abs(expected)):
        return (f"values['{c.joint}']: joint '{c.joint}' is coupled ({c.label}) and must be {expected:.9g} with the "
                f"other values given, got {locked[c.joint]:.9g}")
    return None


def _derived_refusal(robot: Robot, locked: dict[str, float], derived: dict[str, _Coupling]) -> str | None:
    """Why a joint a transmission locks cannot be locked, or None (a rotor of the approximation is no joint)."""
    names = set(robot.joint_names)
    for name, c in derived.items():
        problem = _lock_problem(robot, name, locked[name]) if name in names else None
        if problem:
            return f"values: the transmission '{c.label}' locks joint '{name}' at {locked[name]:.9g}, but {problem}"
    return None


# -- the rebuilt description --------------------------------------------------------------------------------------


def _rewrite(description: RobotDescription, locked: dict[str, float], reading: str) -> RobotDescription:
    """The description with each locked joint fixed at its value and the transmissions rewritten to name only free
    joints ("independent": any naming a locked joint is dropped, as the reading ignores them anyway)."""
    joints = tuple(_welded(js, locked[js.name]) if js.name in locked
                   else dataclasses.replace(js, mimic=None) if js.mimic and js.mimic[0] in locked else js
                   for js in description.joints)
    blocks = []
    for b in description.transmissions:
        named = [b.joint, *(j for j, _ in b.drives)]
        if b.joint in locked or (reading == "independent" and any(j in locked for j in named)):
            continue
        share = sum(r * locked[j] for j, r in b.drives if j in locked) if reading == "exact" else 0.0
        blocks.append(TransmissionSpec(b.joint, tuple((j, r) for j, r in b.drives if j not in locked),
                                       b.offset + share))
    return dataclasses.replace(description, joints=joints, transmissions=tuple(blocks))


def _welded(js: JointSpec, value: float) -> JointSpec:
    """The joint as a fixed joint at ``value``: origin · exp([axis] value) (a rotation about the unit axis, or a
    translation along it for a prismatic joint), so that parent_T_child = origin · child_pose is its pose there."""
    axis = np.asarray(js.axis, float) / np.linalg.norm(js.axis)
    motion = np.eye(4)
    if js.type == "prismatic":
        motion[:3, 3] = axis * value
    elif js.type != "fixed":
        motion[:3, :3] = gtsam.Rot3.Rodrigues(axis * value).matrix()
    return dataclasses.replace(js, type="fixed", origin=np.asarray(js.origin, float) @ motion, mimic=None)


def _keep_actuation(reduced: Robot, robot: Robot) -> Robot:
    """The reduced robot with each remaining joint actuated as it is in ``robot`` (``with_actuated`` survives)."""
    actuated = [j.name for j in reduced.joints if robot.joint(j.name).actuated]
    if actuated == reduced.actuated_joint_names:
        return reduced
    return reduced.with_actuated(actuated)
