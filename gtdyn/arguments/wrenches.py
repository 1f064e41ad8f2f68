"""External wrenches on links and frames, checked: where each one acts (``WrenchFrame``), given per call to the
reference path (``external_wrenches_in_com``) or to a compiled solver that names its frames at compile time
(``compiled_wrench_frames``, ``packed_wrenches``, ``wrench_rows``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import gtsam
import numpy as np

from gtdyn.arguments import bounded_wrench, choice, real_array
from gtdyn.equations import external_wrench
from gtdyn.errors import ArgumentError
from gtdyn.model.robot import Robot

WRENCH_AXES = ("local", "world_aligned")


@dataclass(frozen=True)
class WrenchFrame:
    """A link or frame that takes an external wrench: its name, its body's index and fTcom, the body's CoM frame
    seen from it (``gtdyn.equations.external_wrench``)."""

    name: str
    body: int
    fTcom: gtsam.Pose3


def wrench_frame(robot: Robot, frame, argument: str = "external_wrenches") -> WrenchFrame:
    """``frame`` checked as a place for an external wrench: a link or frame of a moving body."""
    if frame not in robot.frames:
        raise ArgumentError(f"{argument}: unknown link or frame '{frame}' (links: {', '.join(robot.frames)})")
    body, _ = robot.frames[frame]
    if robot.is_fixed(body):
        raise ArgumentError(f"{argument}: '{frame}' is fixed to the base, so a wrench on it moves no joint")
    i, iTf = robot.frame_in_body(frame)
    return WrenchFrame(frame, i, iTf.inverse())


def external_wrenches_in_com(robot: Robot, wrenches, axes: str = "local") -> tuple[dict, tuple]:
    """Wrenches [m; f] on links or frames, checked: those given in the frames' own axes (``axes="local"``) moved
    to the moving links' CoM frames, by link index; those in world-aligned axes at the frames' origins
    (``"world_aligned"``, Pinocchio's LOCAL_WORLD_ALIGNED) as (link index, fTcom, wrench), to be turned once the
    frames' orientations are known (``gtdyn.dynamics.reference``)."""
    choice("wrench_axes", axes, WRENCH_AXES)
    if wrenches is None:
        return {}, ()
    if not isinstance(wrenches, Mapping):
        raise ArgumentError(f"external_wrenches: expected a dict from link or frame name to a wrench [m; f], got "
                            f"{type(wrenches).__name__}")
    local: dict[int, np.ndarray] = {}
    aligned = []
    for name, wrench in wrenches.items():
        frame = wrench_frame(robot, name)
        F = bounded_wrench(f"external_wrenches['{name}']", wrench)
        if axes == "world_aligned":
            aligned.append((frame.body, frame.fTcom, F))
        else:
            local[frame.body] = local.get(frame.body, np.zeros(6)) + external_wrench(frame.fTcom, F)
    return local, tuple(aligned)


def compiled_wrench_frames(robot: Robot, frames: Iterable[str] | None, axes: str) -> tuple[WrenchFrame, ...]:
    """The ``wrench_frames`` argument of ``gtdyn.compile``, checked: distinct links or frames of moving bodies."""
    choice("wrench_axes", axes, WRENCH_AXES)
    if frames is None:
        return ()
    if isinstance(frames, str) or not isinstance(frames, Iterable):
        raise ArgumentError(f"wrench_frames: expected a list of link or frame names, got {frames!r}")
    frames = list(frames)
    repeated = sorted({str(f) for f in frames if frames.count(f) > 1})
    if repeated:
        raise ArgumentError(f"wrench_frames: {', '.join(repeated)} named more than once")
    return tuple(wrench_frame(robot, name, "wrench_frames") for name in frames)


@dataclass(frozen=True, eq=False)
class PackedWrenches:
    """External wrenches checked and packed once for a compiled solver's frames (read-only): what a time loop
    that holds them passes at every call instead of the dict, which would be checked again each time."""

    frames: tuple
    values: np.ndarray


def packed_once(frames: tuple[WrenchFrame, ...], wrenches) -> PackedWrenches:
    """``wrenches`` checked and packed for ``frames``, to be passed as they are at every call."""
    values = packed_wrenches(frames, wrenches)
    values.setflags(write=False)
    return PackedWrenches(frames, values)


def packed_wrenches(frames: tuple[WrenchFrame, ...], wrenches) -> np.ndarray:
    """One call's ``external_wrenches`` (a dict from compiled frame to [m; f]; None: none; or ``PackedWrenches``
    for these frames) as the 6k inputs."""
    if type(wrenches) is PackedWrenches and wrenches.frames is frames:
        return wrenches.values
    out = np.zeros(6 * len(frames))
    for m, F in _by_frame(frames, wrenches):
        out[6 * m:6 * m + 6] = bounded_wrench(f"external_wrenches['{frames[m].name}']", F)
    return out


def wrench_rows(frames: tuple[WrenchFrame, ...], wrenches, count: int) -> np.ndarray:
    """A batch's ``external_wrenches`` (per frame a wrench for every state, (count, 6), or one for all, (6,)) as
    (count, 6k) inputs."""
    out = np.zeros((count, 6 * len(frames)))
    if wrenches is None:  # none given: zero on every compiled frame
        return out
    for m, F in _by_frame(frames, wrenches):
        name = f"external_wrenches['{frames[m].name}']"
        F = real_array(name, F)
        if F.shape not in ((6,), (count, 6)):
            raise ArgumentError(f"{name}: expected a wrench (6,) or one per state ({count}, 6), got shape {F.shape}")
        out[:, 6 * m:6 * m + 6] = F
    if not np.all(np.isfinite(out)):
        bad = np.flatnonzero(~np.all(np.isfinite(out), axis=0))[0] // 6
        raise ArgumentError(f"external_wrenches['{frames[bad].name}']: not finite")
    return out


def _by_frame(frames: tuple[WrenchFrame, ...], wrenches):
    """(position in the compiled order, value) for each given wrench; the names checked."""
    if wrenches is None:
        return
    if not isinstance(wrenches, Mapping):
        raise ArgumentError(f"external_wrenches: expected a dict from link or frame name to a wrench [m; f], got "
                            f"{type(wrenches).__name__}")
    position = {f.name: m for m, f in enumerate(frames)}
    for name, F in wrenches.items():
        if name not in position:
            compiled = ", ".join(position) if position else "none"
            raise ArgumentError(f"external_wrenches: '{name}' is not one of the frames this solver was compiled "
                                f"for (wrench_frames: {compiled}); compile with gtdyn.compile(..., "
                                f"wrench_frames=[...])")
        yield position[name], F
