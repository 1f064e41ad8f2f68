"""Guards on the pivots a plan keeps though they vanish at the robot's reference configuration
(``gtdyn.compiled.plan``: ``Plan.guarded``, a straight leg's contact rows, say). Near that state such a pivot is
small and the plan's answer loses digits — the unchecked call's without a verdict — so the generated code checks
each one, and where one is under ``GUARD`` of its smallest magnitude at the build's random states the call is not
the plan's to answer: its twin answers (``gtdyn.compiled.rescue``), or the reference path."""

from __future__ import annotations

from gtdyn.compiled import trace
from gtdyn.compiled.layout import Layout, Slots
from gtdyn.compiled.plan import Plan

GUARD = 1e-2  # a pivot zero there is trusted down to this share of its smallest magnitude at the random states
BEYOND = {"main": "certify", "fast": "fast_solve"}  # each entry's passes after the factors, behind the guard


def guard(plan: Plan):
    """1.0 unless a pivot that vanishes at the reference configuration is under ``GUARD`` of its smallest magnitude at
    the random states (the plan's answer would lose digits there); traced in the function that computed the pivots."""
    ok = 1.0
    for pivot, smallest in plan.guarded:
        ok = ok * trace.le(GUARD * smallest, trace.fabs(pivot))
    return ok


def unless_guarded(fn: trace.Function, plan: Plan, layout: Layout, slots: Slots) -> trace.Function:
    """Where ``fn`` (an entry that has run ``factor``) goes on: itself, or, for a plan with guarded pivots
    (``guard``), a function (named as ``BEYOND`` says) it calls unless one of them is too small. There the state
    is not the plan's (its twin, ``gtdyn.compiled.rescue``, answers): status 0 and an answer of NaN, without the
    passes."""
    if not plan.guarded:
        return fn
    fn.comment("a pivot that vanishes at the reference configuration, too small here: not this plan's state")
    for index in range(layout.start["out"], layout.status + 3):  # an answer and verdicts of NaN, status 0: the
        fn.store(index, 0.0 if index == layout.status else float("nan"))  # same bits in every lane (``lanes``)
    fn.store(layout.start["bounded"], 0.0)
    rest = trace.Function(BEYOND[fn.name])
    fn.call_unless(1.0 - slots.use(fn, guard(plan)), rest)
    return rest
