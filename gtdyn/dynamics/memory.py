"""A reference-path solve's memory (and a compile's), predicted and checked against the budget before it starts
(``gtdyn.linear.budget``): CRBA on a 1,000-link chain would need 44 GiB and get the process killed; it raises
``gtdyn.BudgetError`` instead, naming the orderings that fit."""

from __future__ import annotations

import weakref

import gtsam

from gtdyn.arguments.query import Query
from gtdyn.errors import ArgumentError
from gtdyn.linear.budget import (
    COMPILE_SECONDS_PER_OPERATION,
    SECONDS_PER_FLOP,
    Cost,
    check_memory,
    compile_cost,
    elimination_cost,
)
from gtdyn.orderings import REFERENCE_DEFAULT, applicable, remembered_ordering, structural

# robot -> {(strategy name, problem structure): Cost}: one symbolic elimination per structure, as for orderings
_COSTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def check_solve_memory(query: Query, graph: gtsam.GaussianFactorGraph, order: gtsam.Ordering, ordering,
                       compiling: bool = False) -> None:
    """``BudgetError`` if eliminating ``graph`` in ``order`` (the user's ``ordering``) — or ``compiling`` that
    elimination into code (``gtdyn.linear.budget.compile_cost``) — would exceed the budget."""
    robot, problem = query.robot, query.problem
    name = REFERENCE_DEFAULT if ordering is None else ordering
    priced = compile_cost if compiling else (lambda cost: cost)

    def alternatives() -> list[tuple[str, Cost]]:
        out = []
        for other in applicable(problem.kind):
            if other != name:
                try:
                    order_of = remembered_ordering(other, robot, problem, graph)
                    out.append((other, priced(_cost(query, graph, order_of, other))))
                except ArgumentError:  # a strategy that does not apply to this robot (a loop, say)
                    continue
        return out

    shown = f"ordering '{name}'" if isinstance(name, str) else "the given ordering"
    cost = priced(_cost(query, graph, order, name))
    what = f"{'compiling ' if compiling else ''}{problem.kind} dynamics of '{robot.name}' in {shown}"
    check_memory(cost, what, alternatives,
                 cost.flops * (COMPILE_SECONDS_PER_OPERATION if compiling else SECONDS_PER_FLOP))


def _cost(query: Query, graph: gtsam.GaussianFactorGraph, order: gtsam.Ordering, name) -> Cost:
    if not structural(name):
        return elimination_cost(graph, order)
    known = _COSTS.setdefault(query.robot, {})
    structure = (name, query.problem.structure)
    if structure not in known:
        known[structure] = elimination_cost(graph, order)
    return known[structure]
