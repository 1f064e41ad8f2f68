"""Cost measures of one elimination: DAG edges, fill-in, non-zeros, an operation count, clique sizes."""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn import keys
from gtdyn.analysis.dag import _blocks, elimination_dag, variable_graph


def metrics(graph: gtsam.GaussianFactorGraph, ordering: gtsam.Ordering,
            bayes_net: gtsam.GaussianBayesNet | None = None) -> dict[str, int | float]:
    """Cost measures of one elimination, from its DAG (``elimination_dag``) unless said otherwise.

    * ``edges``: directed edges of the DAG (the paper's measure).
    * ``fill_in``: DAG edges between variables that share no factor in the original graph (new couplings);
      ``fill_in_scalar``: the scalar entries those blocks hold (dim child × dim parent).
    * ``nnz_original`` / ``nnz_factor``: scalar non-zeros of the graph's Jacobian and (given the numeric
      ``bayes_net``) of its [R S] rows — for reference; the two matrices differ in shape.
    * ``ops``: multiply-adds of dense block elimination, Σ f³/3 + f²s + f s² over conditionals (f frontal,
      s separator scalar size) — a standard operation-count estimate.
    * ``largest_clique``: variables in the largest conditional (frontal + parents); ``tree_width`` = that − 1;
      ``largest_clique_scalar``: its scalar size.
    """
    original = variable_graph(graph)
    dag = elimination_dag(graph, ordering)
    fill_edges = [(a, b) for a, b in dag.edges if not original.has_edge(a, b)]
    ops, largest, largest_scalar = 0.0, 0, 0
    for x in dag.nodes:
        f = keys.dim(x)
        s = sum(keys.dim(p) for p in dag.predecessors(x))
        ops += f**3 / 3 + f * f * s + f * s * s
        largest = max(largest, 1 + dag.in_degree(x))
        largest_scalar = max(largest_scalar, f + s)
    A, _ = graph.jacobian()
    out = {"edges": dag.number_of_edges(), "fill_in": len(fill_edges),
           "fill_in_scalar": sum(keys.dim(a) * keys.dim(b) for a, b in fill_edges),
           "nnz_original": int(np.count_nonzero(A)), "ops": ops,
           "largest_clique": largest, "tree_width": largest - 1, "largest_clique_scalar": largest_scalar}
    if bayes_net is not None:
        out["nnz_factor"] = sum(
            int(np.count_nonzero(np.triu(c.R()))) + sum(int(np.count_nonzero(block)) for _, block in _blocks(c))
            for c in (bayes_net.at(i) for i in range(bayes_net.size())))
    return out


def metrics_of(result) -> dict[str, int | float]:
    """``metrics`` of a dynamics result's own elimination (its graph, ordering and Bayes net)."""
    return metrics(result.graph, result.elimination_ordering, result.bayes_net)
