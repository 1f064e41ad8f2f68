"""When the generated code does not certify its answer, the reference path answers: the packed inputs become the
query they stand for (``unpacked_query``: the boundary's checks and errors), the reference path solves it in the
solver's ordering, and the result is packed in the solver's answer layout. The same comparison checks fresh code
against the reference path at sample states before it is cached."""

from __future__ import annotations

import warnings

import numpy as np

from gtdyn.arguments.query import unpacked_query
from gtdyn.arguments.wrenches import packed_wrenches
from gtdyn.compiled.base_inputs import checked_base
from gtdyn.compiled.states import sample_base, sample_wrenches
from gtdyn.compiled.wrench_inputs import unpacked_wrenches
from gtdyn.dynamics.reference import solve_query
from gtdyn.dynamics.result import DynamicsResult
from gtdyn.errors import GTDYN_ERRORS

# relative disagreement with the reference path at a sample state above which fresh code is a bug, not round-off
SELF_CHECK_TOLERANCE = 1e-8


def as_vector(answer) -> np.ndarray:
    """A solver's answer (its parts as a tuple, or one part bare) as one vector."""
    return np.concatenate(answer) if isinstance(answer, tuple) else answer


def reference_result(solver, q, v, x, base=(), wrenches=()) -> DynamicsResult:
    """The reference path's solve of the packed inputs (``base``: ``Query.base_inputs``; ``wrenches``: the
    external wrenches on the solver's ``wrench_frames``) in the solver's ordering."""
    query = unpacked_query(solver.robot, solver.problem, solver.qdd_joints, q, v, x, base,
                           contacts=[c.contact for c in solver.template.problem.contacts] or None,
                           gravity=solver.gravity, wrench_axes=solver.wrench_axes,
                           external_wrenches=unpacked_wrenches(solver.wrench_frames, wrenches))
    return solve_query(query, ordering=solver.order)


def reference_answer(solver, q, v, x, base=(), wrenches=()):
    """``reference_result``'s answer in the solver's shape: the parts of its answer layout, one part alone
    bare; counted in ``solver.fallbacks``."""
    solver.fallbacks += 1
    parts = reference_result(solver, q, v, x, base, wrenches).packed(solver.layout)
    return parts[0] if len(parts) == 1 else tuple(parts)


def fallback_answer(solver, q, v, x, base=(), wrenches=()):
    """The answer to packed inputs the solver's own code did not certify: its twin's, where it has one
    (``gtdyn.compiled.rescue``) and that certifies, else ``reference_answer``'s."""
    if solver._rescue is not None:
        answer = solver._rescue.answer(solver, np.concatenate([q, v, x, base, wrenches]))
        if answer is not None:
            return solver._split(answer)
    return reference_answer(solver, q, v, x, base, wrenches)


def self_check(solver, samples) -> None:
    """The generated code against the reference path at the sample states: a wrong answer here is a bug in
    gtdyn, never the user's. The plan's own code: its twin (``gtdyn.compiled.rescue``) is not asked (it checks
    itself when it is compiled, if ever)."""
    rescue, solver._rescue = solver._rescue, None
    try:
        _check_states(solver, samples)
    finally:
        solver._rescue = rescue


def _check_states(solver, samples) -> None:
    for k in range(samples["q"].shape[1]):
        q, v, x = (samples[s][:, k] for s in ("q", "v", "x"))
        base = sample_base(solver.robot, solver.problem, samples, k)
        wrenches = sample_wrenches(solver.wrench_frames, samples, k)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = solver(q, v, x, **base, **wrenches)
                if solver.fallbacks:  # the reference path answered: nothing of ours to check
                    continue
                want = reference_answer(solver, q, v, x, checked_base(solver.robot, solver.problem, **base),
                                        packed_wrenches(solver.wrench_frames, wrenches.get("external_wrenches")))
        except GTDYN_ERRORS:  # a singular robot raises at call time, as the reference path does
            continue
        finally:
            solver.fallbacks = 0
        got, want = as_vector(got), as_vector(want)
        error = np.max(np.abs(got - want), initial=0.0) / max(np.max(np.abs(want), initial=0.0), 1.0)
        if not error <= SELF_CHECK_TOLERANCE:
            raise RuntimeError(f"gtdyn.compile: the generated code for '{solver.robot.name}' disagrees with the "
                               f"reference path by {error:.3g} at a sample state; please report this")
