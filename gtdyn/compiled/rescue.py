"""A compiled solver's twin for the states near the robot's reference configuration that its plan cannot take.

Pivots are chosen on random states (``gtdyn.compiled.plan``); at the reference configuration (every joint at zero)
symmetry can zero one of them. Solo-12 standing on straight legs zeroes its feet's contact rows, the pivots random
states like best for its legs' q̈: the plan divides 0 by 0 there and loses digits near there, and a run that starts
there (gravity keeps straight legs straight) took the reference path at every step. A plan whose pivots see that
state too is defined there, but its other pivots are smaller: on Solo-12 its a-priori bound stopped certifying a
stance as the robot sagged, and every call ran the condition estimate, twice the time
(benchmarks/results/design_measurements.md).

So a solver keeps its own plan, which guards the pivots that vanish there (``Plan.guarded``: a call near there is
not its to answer), and gets a twin built with ``reference_pivots``: compiled (or loaded from the cache) the first
time a call is not its own, then asked before the reference path, checked or not as the solver is. The twin takes
the same inputs at the same places of its workspace (the layout follows the equations, not the pivots) and gives
its answer at the same places; what it does not answer goes to the reference path, which answers, warns or raises
as always. The native time loop asks the twin the same way (``gtdyn.simulation.native_loop.follow``).
"""

from __future__ import annotations

import threading

import numpy as np


class Rescue:
    """The twin of one solver: ``build()`` compiles it (``gtdyn.compile(..., reference_pivots=True)``), once;
    ``calls`` counts the answers it gave."""

    def __init__(self, build):
        self._build, self._twin, self.calls = build, None, 0
        self._lock = threading.Lock()

    @property
    def compiled(self):
        """The twin if it has been compiled, else None."""
        return self._twin

    def twin(self, solver):
        """The twin of ``solver``, compiled the first time; its workspace's inputs, answer and status must sit where
        ``solver``'s do."""
        with self._lock:
            if self._twin is None:
                twin = self._build()
                if (twin._out, twin._status, twin._outputs) != (solver._out, solver._status, solver._outputs):
                    raise RuntimeError("gtdyn.compile: a solver's twin lays out its workspace differently; "
                                       "please report this")
                self._twin = twin
            return self._twin

    def answer(self, solver, inputs: np.ndarray) -> np.ndarray | None:
        """The twin's answer (``solver``'s outputs, one vector) to ``inputs`` (the workspace's input entries: q, q̇,
        x, the base's and the external wrenches'), certified where ``solver`` checks its own; None where its status
        is not 1 either."""
        twin = self.twin(solver)
        ws = twin._ws if threading.get_ident() == twin._owner else np.zeros(twin._size)  # a thread's own
        ws[:len(inputs)] = inputs
        twin._native.entry[solver._entry](ws.ctypes.data)  # checked, or not, as the solver
        twin._last = ws  # its verdicts are the call's where it answers (``gtdyn.compiled.verdicts``)
        if ws[twin._status] != 1.0:
            return None
        self.calls += 1
        return ws[twin._out:twin._out + twin._outputs].copy()
