"""A floating base's pose moved by a step in local coordinates, T · exp ξ, and the rate of those coordinates,
ξ̇ = dlog(−ξ) V, as compiled functions: the same machine code for the native time loop (``gtdyn.simulation.loop_ir``
calls them by address) and for the Python stepper (``gtdyn.simulation.floating``), so a run's poses are the same
bits whichever loop takes a step. The exponential is ``drnea.exp_pose``'s (the variational step's), the rate
``spatial.dlog_times``' series, each written once on traced values.

They work on a scratch array of their own (``SCRATCH`` doubles): T (R row by row, then p) at 0, ξ = [ω; v] at 12,
T · exp ξ written at 18 (``moved``); V at 30, dlog(−ξ) V written at 36 (``rate``)."""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from gtdyn.compiled import cache, native, trace
from gtdyn.compiled.drnea import exp_pose
from gtdyn.compiled.kinematics import TracedPose
from gtdyn.spatial import dlog_times

POSE_AT, TWIST_AT, MOVED_AT, VELOCITY_AT, RATE_AT, SCRATCH = 0, 12, 18, 30, 36, 42
_lock = threading.Lock()
_loaded: list = []  # the process's loaded functions, once


@trace.tracing
def _traced() -> dict[str, trace.Function]:
    moved_fn, rate_fn = trace.Function("moved"), trace.Function("rate")
    values = [moved_fn.load(POSE_AT + k) for k in range(12)]
    start = TracedPose(np.array(values[:9], dtype=object).reshape(3, 3), np.array(values[9:], dtype=object))
    moved = start.compose(exp_pose(np.array([moved_fn.load(TWIST_AT + k) for k in range(6)], dtype=object)))
    for k, value in enumerate([*moved.R.ravel(), *moved.p]):
        moved_fn.store(MOVED_AT + k, value)
    xi = np.array([-rate_fn.load(TWIST_AT + k) for k in range(6)], dtype=object)
    rate = dlog_times(xi, np.array([rate_fn.load(VELOCITY_AT + k) for k in range(6)], dtype=object))
    for k, value in enumerate(rate):
        rate_fn.store(RATE_AT + k, value)
    return {"moved": moved_fn, "rate": rate_fn}


def address(name: str = "moved") -> int:
    """The address of the compiled ``moved(scratch)`` or ``rate(scratch)`` (loaded once per process, from the
    compile cache where it is there)."""
    with _lock:
        if not _loaded:
            functions = _traced()
            code = cache.compiled_ir(native.module_ir(functions, "pose_step_", entries=()), native.target_id(),
                                     native.compile_object)
            loaded = native.Loaded(code, "pose_step_", entries=(), extra=list(functions))
            trace.release(*functions.values())
            _loaded.append(loaded)
        return _loaded[0].extra[name]


class PoseStep:
    """``move(T, ξ)``: T ← T · exp ξ in place, T a row-major 4×4 float array (its last row is left as it is);
    ``rate(ξ, V)``: dlog(−ξ) V.
    Each holder has its own scratch (``scratch``; the native loop uses it too), so threads do not share one."""

    def __init__(self):
        self.scratch = np.zeros(SCRATCH)
        self._function = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address("moved"))
        self._rate = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address("rate"))
        self._pointer = self.scratch.ctypes.data

    def move(self, T: np.ndarray, xi) -> None:
        scratch = self.scratch
        scratch[0:9] = T[:3, :3].ravel()
        scratch[9:12] = T[:3, 3]
        scratch[TWIST_AT:MOVED_AT] = xi
        self._function(self._pointer)
        T[:3, :3] = scratch[MOVED_AT:MOVED_AT + 9].reshape(3, 3)
        T[:3, 3] = scratch[MOVED_AT + 9:VELOCITY_AT]

    def moved(self, T: np.ndarray, xi) -> np.ndarray:
        """T · exp ξ as a new 4×4 array."""
        out = T.copy()
        self.move(out, xi)
        return out

    def rate(self, xi, V) -> np.ndarray:
        """ξ̇ = dlog(−ξ) V: the rate of local coordinates ξ about a pose, for the body twist V at T · exp ξ."""
        scratch = self.scratch
        scratch[TWIST_AT:MOVED_AT], scratch[VELOCITY_AT:RATE_AT] = xi, V
        self._rate(self._pointer)
        return scratch[RATE_AT:SCRATCH].copy()
