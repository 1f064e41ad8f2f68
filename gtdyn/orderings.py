"""Elimination orderings: a registry of small named strategies, explicit label/key lists, or callables.

A strategy is ``fn(robot, problem, graph) -> gtsam.Ordering`` over the graph's unknowns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import gtsam

from gtdyn import keys
from gtdyn.graph import Problem
from gtdyn.robot import Robot

Strategy = Callable[[Robot, Problem, gtsam.GaussianFactorGraph], gtsam.Ordering]
STRATEGIES: dict[str, Strategy] = {}


def strategy(name: str):
    """Register a named ordering strategy."""

    def register(fn: Strategy) -> Strategy:
        STRATEGIES[name] = fn
        return fn

    return register


@strategy("colamd")
def colamd(robot: Robot, problem: Problem, graph: gtsam.GaussianFactorGraph) -> gtsam.Ordering:
    """GTSAM's COLAMD (approximate minimum degree on the column structure); GTSAM's default."""
    return gtsam.Ordering.ColamdGaussianFactorGraph(graph)


@strategy("natural")
def natural(robot: Robot, problem: Problem, graph: gtsam.GaussianFactorGraph) -> gtsam.Ordering:
    """Keys in increasing numeric order (by variable symbol, then index)."""
    return gtsam.Ordering.NaturalGaussianFactorGraph(graph)


def graph_keys(graph: gtsam.GaussianFactorGraph) -> list[int]:
    return sorted(set(graph.keyVector()))


def resolve_ordering(ordering, robot: Robot, problem: Problem, graph: gtsam.GaussianFactorGraph) -> gtsam.Ordering:
    """Turn what the user passed as ``ordering=`` into a gtsam.Ordering over exactly the graph's unknowns."""
    if ordering is None:
        ordering = "colamd"
    if isinstance(ordering, gtsam.Ordering):
        return _checked([ordering.at(i) for i in range(ordering.size())], graph)
    if isinstance(ordering, str):
        if ordering not in STRATEGIES:
            raise ValueError(f"ordering: unknown strategy '{ordering}'; known: {', '.join(sorted(STRATEGIES))}")
        return STRATEGIES[ordering](robot, problem, graph)
    if callable(ordering):
        result = ordering(robot, problem, graph)
        return resolve_ordering(result, robot, problem, graph) if not isinstance(result, gtsam.Ordering) else result
    if isinstance(ordering, Sequence):
        return _checked([_as_key(x) for x in ordering], graph)
    raise TypeError(f"ordering: expected a strategy name, a list of labels/keys or a callable, got {type(ordering).__name__}")


def _as_key(x) -> int:
    if isinstance(x, str):
        try:
            return keys.parse_label(x)
        except ValueError as e:
            raise ValueError(f"ordering: {e}") from None
    return int(x)


def _checked(order: list[int], graph: gtsam.GaussianFactorGraph) -> gtsam.Ordering:
    wanted = graph_keys(graph)
    unknown = [keys.label(k) for k in order if k not in set(wanted)]
    missing = [keys.label(k) for k in wanted if k not in set(order)]
    repeated = sorted({keys.label(k) for k in order if order.count(k) > 1})
    problems = []
    if unknown:
        problems.append(f"not unknowns of this problem: {', '.join(unknown)}")
    if missing:
        problems.append(f"missing: {', '.join(missing)}")
    if repeated:
        problems.append(f"repeated: {', '.join(repeated)}")
    if problems:
        raise ValueError("ordering: " + "; ".join(problems) + f" (the unknowns are {', '.join(keys.label(k) for k in wanted)})")
    result = gtsam.Ordering()
    for k in order:
        result.push_back(k)
    return result
