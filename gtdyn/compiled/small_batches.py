"""Small batches as calls: a compiled solver's ``batch`` of a few states (up to ``SMALL_BATCH``) runs its native
entry (``gtdyn.compiled.entry``) state by state, each answer written straight into its row of the batch's array.
A batch crossing checks, stacks and copies its inputs and checks its answers' statuses in Python, which costs more
than a few calls; from about a dozen states the batch's own loop is faster, and on a big robot with lane code
from one lane group (``LANES_PAY_FROM``; benchmarks/results/design_measurements.md).

Only plain float64 arrays of one shape (N, n) with no base or wrench arguments go this way, from the thread that
owns the solver's workspace; anything else — and a batch with a state the entry does not take or the certificate
does not pass — runs as the full batch does: the same code on the same inputs, so the rows answered here come
out the same there."""

from __future__ import annotations

import operator

import numpy as np

from gtdyn.arguments import whole_number

SMALL_BATCH = 8  # states: up to here a batch is a loop of calls
NO_OTHERS = (None,) * 5  # the batch's base and wrench arguments, when none is given
# Where the solver has lane code, a batch of a lane group or more whose states come to this many operations
# (``evaluation_operations`` each) runs in lanes instead: four states a pass pay for the batch's own Python.
# Talos forward dynamics from 4 states, the PUMA's never below 12 (benchmarks/results/design_measurements.md).
LANES_PAY_FROM = 100_000


def evaluation_operations(solver) -> int:
    """A state's evaluation by ``solver``, counted by its unchecked operations (``factor``, ``solve``, ``fast``):
    what its work per state scales with."""
    return sum(solver.operations.get(name, 0) for name in ("factor", "solve", "fast"))


def few_states(*arrays) -> bool:
    """Whether ``arrays`` are numpy arrays (N, n) of one shape with N ≤ ``SMALL_BATCH``: a batch the calls may take
    (the native entry checks each row's type and layout)."""
    first = arrays[0]
    if type(first) is not np.ndarray or first.ndim != 2 or len(first) > SMALL_BATCH:
        return False
    for other in arrays[1:]:  # a loop, not generators: this runs on every batch call
        if type(other) is not np.ndarray or other.shape != first.shape:
            return False
    return True


def by_calls(solver, Q, V, X, threads, others: tuple) -> np.ndarray | None:
    """The answers' array (N, outputs) of a small batch through ``solver``'s native entry, or None where the full
    batch must run (``others``: the batch's base and wrench arguments, which must all be None). As calls, the
    batch leaves its last state's verdicts (``solver.condition``, ``backward_error``)."""
    call = solver._quick_call
    if call is None or not few_states(Q, V, X) or not all(map(operator.is_, others, NO_OTHERS)):
        return None
    if solver.lanes and len(Q) >= solver.lanes and len(Q) * evaluation_operations(solver) >= LANES_PAY_FROM:
        return None
    whole_number("threads", threads, 1)
    out = np.empty((len(Q), solver._outputs))
    for i in range(len(Q)):
        if not call(Q[i], V[i], X[i], None, None, None, None, out[i]):
            return None
    solver._last = solver._ws
    return out
