"""A floating base's pose moved by a step in local coordinates, T · exp ξ, as one compiled function: the same
machine code for the native time loop (``gtdyn.simulation.loop_ir`` calls it by address) and for the Python
stepper (``gtdyn.simulation.floating``), so a run's poses are the same bits whichever loop takes a step. The
exponential is ``drnea.exp_pose``'s (the variational step's), written once on traced values.

The function works on a scratch array of its own (``SCRATCH`` doubles): T (R row by row, then p) at 0, ξ = [ω; v]
at 12, T · exp ξ written at 18."""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from gtdyn.compiled import native, trace
from gtdyn.compiled.drnea import exp_pose
from gtdyn.compiled.kinematics import TracedPose

POSE_AT, TWIST_AT, MOVED_AT, SCRATCH = 0, 12, 18, 30
_lock = threading.Lock()
_loaded: list = []  # the process's compiled function, once


@trace.tracing
def _traced() -> trace.Function:
    fn = trace.Function("moved")
    values = [fn.load(POSE_AT + k) for k in range(12)]
    start = TracedPose(np.array(values[:9], dtype=object).reshape(3, 3), np.array(values[9:], dtype=object))
    moved = start.compose(exp_pose(np.array([fn.load(TWIST_AT + k) for k in range(6)], dtype=object)))
    for k, value in enumerate([*moved.R.ravel(), *moved.p]):
        fn.store(MOVED_AT + k, value)
    return fn


def address() -> int:
    """The compiled ``moved(scratch)``'s address (compiled once per process)."""
    with _lock:
        if not _loaded:
            fn = _traced()
            loaded = native.Loaded(native.compile_object(native.module_ir({"moved": fn}, "pose_step_", entries=())),
                                   "pose_step_", entries=(), extra=["moved"])
            trace.release(fn)
            _loaded.append(loaded)
        return _loaded[0].extra["moved"]


class PoseStep:
    """``move(T, ξ)``: T ← T · exp ξ in place, T a row-major 4×4 float array (its last row is left as it is).
    Each holder has its own scratch (``scratch``; the native loop uses it too), so threads do not share one."""

    def __init__(self):
        self.scratch = np.zeros(SCRATCH)
        self._function = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address())
        self._pointer = self.scratch.ctypes.data

    def move(self, T: np.ndarray, xi) -> None:
        scratch = self.scratch
        scratch[0:9] = T[:3, :3].ravel()
        scratch[9:12] = T[:3, 3]
        scratch[TWIST_AT:MOVED_AT] = xi
        self._function(self._pointer)
        T[:3, :3] = scratch[MOVED_AT:MOVED_AT + 9].reshape(3, 3)
        T[:3, 3] = scratch[MOVED_AT + 9:SCRATCH]

    def moved(self, T: np.ndarray, xi) -> np.ndarray:
        """T · exp ξ as a new 4×4 array."""
        out = T.copy()
        self.move(out, xi)
        return out
