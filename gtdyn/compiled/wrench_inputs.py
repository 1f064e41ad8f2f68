"""External wrenches as a compiled solver's inputs. The links or frames named at compile time
(``wrench_frames``) take a wrench [m; f] each at every call — in their own axes or world-aligned at their
origins (``wrench_axes``, as the reference path takes them) — written into the workspace after the floating
base's inputs, six per frame in the compiled order; a frame not given at a call gets zero. The generated code
moves each into its body's CoM frame by ``gtdyn.equations.external_wrench``, the reference path's formula."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from gtdyn.arguments import bounded_wrench, choice, real_array
from gtdyn.arguments.asked import WRENCH_AXES, WrenchFrame, wrench_frame
from gtdyn.equations import external_wrench
from gtdyn.errors import ArgumentError
from gtdyn.model.robot import Robot


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


def packed_wrenches(frames: tuple[WrenchFrame, ...], wrenches) -> np.ndarray:
    """One call's ``external_wrenches`` (a dict from compiled frame to [m; f]; None: none) as the 6k inputs."""
    out = np.zeros(6 * len(frames))
    for m, F in _by_frame(frames, wrenches):
        out[6 * m:6 * m + 6] = bounded_wrench(f"external_wrenches['{frames[m].name}']", F)
    return out


def wrench_rows(frames: tuple[WrenchFrame, ...], wrenches, count: int) -> np.ndarray:
    """A batch's ``external_wrenches`` (per frame a wrench for every state, (count, 6), or one for all, (6,)) as
    (count, 6k) inputs."""
    out = np.zeros((count, 6 * len(frames)))
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


def unpacked_wrenches(frames: tuple[WrenchFrame, ...], packed) -> dict[str, np.ndarray] | None:
    """The inputs back as the ``external_wrenches`` dict a reference-path call takes."""
    return {f.name: np.asarray(packed[6 * m:6 * m + 6], float) for m, f in enumerate(frames)} or None


def traced_wrenches(frames: tuple[WrenchFrame, ...], axes: str, wrenches: list, kin) -> dict[int, np.ndarray]:
    """The traced wrench inputs (one 6-vector per frame) as wrenches on their bodies, by body, in the CoM frames."""
    out: dict[int, np.ndarray] = {}
    for frame, F in zip(frames, wrenches, strict=True):
        i = frame.body
        wTf = kin.wT[i].compose(frame.fTcom.inverse()) if axes == "world_aligned" else None
        F_com = external_wrench(frame.fTcom, np.asarray(F, dtype=object), wTf)
        out[i] = F_com if i not in out else out[i] + F_com
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
