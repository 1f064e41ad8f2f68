"""What a compiled solver's last single call measured: the condition estimate κ and the backward error of the
equations it solved (``CompiledSolver.condition``, ``.backward_error``), read from the workspace that call left.

A call that a bound settled did not estimate κ, and one that took the a-priori backward error did not measure
it: reading them runs what the call left out on a copy of its workspace. A call that the solver's own code
handed to its twin (a guarded pivot: ``gtdyn.compiled.rescue``) left NaN in the solver's workspace; its verdicts
are the twin's, read from the twin's."""

from __future__ import annotations

import numpy as np

from gtdyn.compiled.certificate import A_PRIORI, ITERATION


def condition(solver) -> float:
    """κ of ``solver``'s last single call's equations, as ``DynamicsResult.condition``."""
    solver, ws = _answered(solver)
    way = ws[solver._bounded]
    if way != 0.0:  # a bound settled the call: the estimate runs now, on that call's factors
        ws = _again(solver, ws, *(["measured"] if way == A_PRIORI else []), "exact")
        if ws[solver._bounded] != 0.0:  # exact's bound settled the refined answer: κ still to estimate
            ws = _again(solver, ws, ITERATION)
    return float(ws[solver._status + 1])


def backward_error(solver) -> float:
    """‖b − A x‖ / (‖A‖_F ‖x‖ + ‖b‖) of ``solver``'s last single call's answer."""
    solver, ws = _answered(solver)
    if ws[solver._bounded] == A_PRIORI:
        ws = _again(solver, ws, "measured")
    return float(ws[solver._status + 2])


def _answered(solver):
    """The solver whose code answered the last single call — ``solver``, or its twin where ``solver``'s code did
    not certify and the twin's last run certified the same inputs — and the workspace that run left."""
    ws = solver._last
    twin = None if solver._rescue is None else solver._rescue.compiled
    if twin is not None and ws[solver._status] != 1.0:
        inputs = solver._wrench_inputs.stop  # q, q̇, x, the base's and the wrenches' entries lead the workspace
        theirs = twin._last
        if theirs[twin._status] == 1.0 and np.array_equal(theirs[:inputs], ws[:inputs]):
            return twin, theirs
    return solver, ws


def _again(solver, ws: np.ndarray, *functions: str) -> np.ndarray:
    """A copy of ``ws`` with ``solver``'s generated ``functions`` run on it: what the call left out."""
    ws = ws.copy()
    for name in functions:
        solver._native.function(name)(ws.ctypes.data)
    return ws
