"""Batches over native threads: a ``batch_<entry>`` function (``gtdyn.compiled.native``, or its lane form in
``gtdyn.compiled.lanes``) run over the rows of an input array, the rows split among the threads of a pool kept
for the process, one workspace per thread (ctypes releases the GIL while native code runs)."""

from __future__ import annotations

import ctypes
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def run_states(batch, workspace_size: int, inputs: np.ndarray, n_out: int, out_start: int, threads: int = 1,
               lanes: int = 1) -> np.ndarray:
    """Run a ``batch_<entry>`` function over the rows of ``inputs`` (C-contiguous, one state per row) and return
    (count, n_out) results; ``threads`` > 1 splits the states among native threads, one workspace each. ``lanes``:
    the function's states per pass (``gtdyn.compiled.lanes``; it is then given groups, and the count must fill
    them)."""
    count = inputs.shape[0]
    if count % lanes:
        raise ValueError(f"parallel: {count} states do not fill groups of {lanes}")
    results = np.empty((count, n_out))
    groups = count // lanes
    threads = max(1, min(int(threads), groups))
    if threads == 1:  # the common case, without a closure, slices or numpy's ctypes views (small batches)
        ws = np.zeros(workspace_size * lanes)  # named: alive while the code runs
        batch(address(ws), address(inputs), address(results), groups, inputs.shape[1], n_out, out_start)
        return results
    bounds = [groups * k // threads * lanes for k in range(threads + 1)]  # whole groups per thread

    def run(a: int, b: int) -> None:  # one workspace per thread; ctypes releases the GIL while it runs
        ws = np.zeros(workspace_size * lanes)
        batch(ws.ctypes.data, inputs[a:].ctypes.data, results[a:].ctypes.data, int(b - a) // lanes, inputs.shape[1],
              n_out, out_start)

    in_threads(run, bounds)
    return results


def in_threads(run, bounds) -> None:
    """``run(a, b)`` for each consecutive pair of ``bounds``, on as many threads of the pool as there are pairs."""
    pairs = list(zip(bounds[:-1], bounds[1:]))
    if len(pairs) == 1:
        run(*pairs[0])
        return
    pool = _pool(len(pairs))
    for done in [pool.submit(run, a, b) for a, b in pairs]:
        done.result()


_POOLS: dict[int, ThreadPoolExecutor] = {}
_POOL_LOCK = threading.Lock()


def _pool(threads: int) -> ThreadPoolExecutor:
    """One pool per thread count for the process: starting threads per batch costs more than many small states."""
    with _POOL_LOCK:
        if threads not in _POOLS:
            _POOLS[threads] = ThreadPoolExecutor(threads, thread_name_prefix="gtdyn-batch")
        return _POOLS[threads]


def address(array: np.ndarray) -> int:
    """The address of an array's data: through ctypes' view of a writable buffer (a third of
    ``ndarray.ctypes.data``'s time, which a short run or a small batch paid several times), else through numpy."""
    try:
        return ctypes.addressof(_BYTE.from_buffer(array))
    except (TypeError, ValueError):  # read-only, empty, or not one contiguous block
        return array.ctypes.data


_BYTE = ctypes.c_byte
