"""Elimination batch by batch (paper Fig. 5): the graph left and the DAG made after each batch."""

from __future__ import annotations

import gtsam
import networkx as nx
import numpy as np

from gtdyn import keys
from gtdyn.analysis.dag import _add_node, symbolic_elimination, variable_graph
from gtdyn.errors import ArgumentError


def _kind_runs(order: list[int]) -> list[int]:
    """Batch sizes: consecutive variables of one kind form a batch."""
    batches, run = [], 0
    for i, key in enumerate(order):
        run += 1
        if i + 1 == len(order) or keys.kind(order[i + 1]) != keys.kind(key):
            batches.append(run)
            run = 0
    return batches


def elimination_steps(graph: gtsam.GaussianFactorGraph, ordering: gtsam.Ordering, batches: list[int] | None = None):
    """Elimination batch by batch (paper Fig. 5): after each batch, the graph of the variables still to
    eliminate (the factors left, fill-in included) and the DAG of those eliminated so far.

    ``batches`` gives batch sizes; by default consecutive variables of one kind form a batch. Returns a list
    of (eliminated labels, remaining nx.Graph, dag-so-far nx.DiGraph).
    """
    order = [ordering.at(i) for i in range(ordering.size())]
    if batches is None:
        batches = _kind_runs(order)
    if sum(batches) != len(order):
        raise ArgumentError(f"batches: sizes {batches} add up to {sum(batches)}, not the {len(order)} variables")
    ends = set(np.cumsum(batches).tolist())
    dag = nx.DiGraph()
    start = nx.Graph()
    for key in order:
        _add_node(start, key)
    start.add_edges_from(variable_graph(graph).edges)
    steps = [([], start, dag.copy())]
    eliminated: list[int] = []
    for step, (x, separator, factors) in enumerate(symbolic_elimination(graph, ordering), start=1):
        _add_node(dag, x)
        for p in separator:
            _add_node(dag, p)
            dag.add_edge(p, x)
        eliminated.append(x)
        if step in ends:
            remaining = nx.Graph()
            for key in order[step:]:
                _add_node(remaining, key)
            for factor_keys, _ in factors:
                ks = sorted(factor_keys)
                remaining.add_edges_from((a, b) for n, a in enumerate(ks) for b in ks[n + 1:])
            steps.append(([keys.label(k) for k in eliminated], remaining, dag.copy()))
            eliminated = []
    return steps


def group_batches(batches: list[int], groups: int) -> list[int]:
    """Consecutive batches merged into at most ``groups`` groups of about equal size (a batch is never
    split); unchanged if there are no more than ``groups`` already."""
    if len(batches) <= groups:
        return list(batches)
    cum = np.cumsum(batches)
    total = int(cum[-1])
    cuts = sorted({int(np.argmin(np.abs(cum[:-1] - k * total / groups))) for k in range(1, groups)})
    bounds = [0] + [int(cum[i]) for i in cuts] + [total]
    return [b - a for a, b in zip(bounds, bounds[1:]) if b > a]
