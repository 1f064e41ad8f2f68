"""External wrenches as a compiled solver's inputs. The links or frames named at compile time
(``wrench_frames``) take a wrench [m; f] each at every call — in their own axes or world-aligned at their
origins (``wrench_axes``, as the reference path takes them) — written into the workspace after the floating
base's inputs, six per frame in the compiled order; a frame not given at a call gets zero. The generated code
moves each into its body's CoM frame by ``gtdyn.equations.external_wrench``, the reference path's formula; the
checks are the boundary's (``gtdyn.arguments.wrenches``)."""

from __future__ import annotations

import numpy as np

from gtdyn.arguments.wrenches import WrenchFrame
from gtdyn.equations import external_wrench


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


