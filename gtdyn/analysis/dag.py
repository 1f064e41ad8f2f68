"""The elimination result as a DAG: of an ordering (``elimination_dag``), of a numeric Bayes net, of a Bayes
tree's cliques; and as Graphviz DOT text.

The DAG of an ordering is the structure of Gaussian elimination with generic coefficients: eliminating x
stacks the factors on x (m rows in all); x's conditional depends on every other variable there, and a new
factor on those variables is left only if m > dim(x). An edge p → x means back-substitution computes x from
p (the arrows of the paper's Fig. 5, 7 and 10). This structure depends only on the graph and the ordering,
never on the configuration, so it describes the algorithm. (GTSAM's own symbolic structure also keeps
zero-row leftover factors, and its constrained QR can leave exact-zero blocks that depend on the numbers;
``bayes_net_dag`` shows that numeric structure, which the generic DAG always contains.)
"""

from __future__ import annotations

import gtsam
import networkx as nx  # the analysis layer returns networkx graphs; `import gtdyn` does not load it
import numpy as np

from gtdyn import keys
from gtdyn.orderings import adjacency

KIND_ROWS = ("twist_accel", "wrench", "torque", "joint_accel", "contact_force", "contact_wrench",
             "transmission_force")  # top to bottom in drawings
KIND_COLOURS = {"twist_accel": "#4caf50", "wrench": "#2196f3", "torque": "#ff9800", "joint_accel": "#9c27b0",
                "contact_force": "#e91e63", "contact_wrench": "#e91e63", "transmission_force": "#795548",
                "twist": "#9e9e9e", "joint_angle": "#9e9e9e", "joint_vel": "#9e9e9e", "pose": "#9e9e9e"}


def _blocks(conditional: gtsam.GaussianConditional) -> list[tuple[int, np.ndarray]]:
    """(parent key, S block) of a single-frontal conditional."""
    all_keys = list(conditional.keys())
    S = conditional.S() if len(all_keys) > 1 else np.zeros((0, 0))
    out, col = [], 0
    for key in all_keys[1:]:
        d = keys.dim(key)
        out.append((key, S[:, col:col + d]))
        col += d
    return out


def parents(conditional: gtsam.GaussianConditional) -> list[int]:
    """The parents a conditional really depends on (non-zero S block)."""
    return [key for key, block in _blocks(conditional) if np.any(block != 0.0)]


def _add_node(dag: nx.DiGraph, key: int) -> None:
    if key not in dag:
        dag.add_node(key, label=keys.label(key), pretty=keys.pretty(key), kind=keys.kind(key),
                     index=keys.index(key), dim=keys.dim(key))


def bayes_net_dag(bayes_net: gtsam.GaussianBayesNet) -> nx.DiGraph:
    """The numeric structure of a Bayes net: an edge for every parent with a non-zero block.

    Nodes are keys with attributes label ('F2'), pretty ('F2', 'V̇2', 'τ2'), kind, index, dim and step.
    """
    dag = nx.DiGraph()
    for step in range(bayes_net.size()):
        conditional = bayes_net.at(step)
        frontal = conditional.firstFrontalKey()
        _add_node(dag, frontal)
        dag.nodes[frontal]["step"] = step
        for parent in parents(conditional):
            _add_node(dag, parent)
            dag.add_edge(parent, frontal)
    return dag


def symbolic_elimination(graph: gtsam.GaussianFactorGraph, ordering: gtsam.Ordering):
    """Yield (x, separator, remaining factors) for each eliminated x, with generic coefficients and
    factors tracked as (keys, rows)."""
    factors = [(frozenset(graph.at(i).keys()), graph.at(i).rows()) for i in range(graph.size())]
    for i in range(ordering.size()):
        x = ordering.at(i)
        involved = [f for f in factors if x in f[0]]
        separator = frozenset().union(*(f[0] for f in involved)) - {x}
        rows = sum(f[1] for f in involved) - keys.dim(x)
        factors = [f for f in factors if x not in f[0]] + ([(separator, rows)] if rows > 0 and separator else [])
        yield x, separator, factors


def elimination_dag(graph: gtsam.GaussianFactorGraph, ordering: gtsam.Ordering) -> nx.DiGraph:
    """The DAG of eliminating ``graph`` in ``ordering`` (see the module docstring); nodes carry the
    attributes of ``bayes_net_dag`` plus ``step``, and a contact's force its ``body`` (the index of the link it
    acts on: the link whose eq. 6 holds it), so that drawings place it with that link's variables."""
    dag = nx.DiGraph()
    for step, (x, separator, _) in enumerate(symbolic_elimination(graph, ordering)):
        _add_node(dag, x)
        dag.nodes[x]["step"] = step
        for p in separator:
            _add_node(dag, p)
            dag.add_edge(p, x)
    for body, contact in _contact_bodies(graph):
        if contact in dag:
            dag.nodes[contact]["body"] = body
    return dag


def _contact_bodies(graph: gtsam.GaussianFactorGraph):
    """(link index, contact key) for each contact variable, from the one wrench equation (eq. 6) it enters with
    its link's twist acceleration."""
    for f in range(graph.size()):
        factor = graph.at(f)
        if factor is None:
            continue
        factor_keys = list(factor.keys())
        contacts = [k for k in factor_keys if keys.kind(k) in ("contact_force", "contact_wrench")]
        accels = [keys.index(k) for k in factor_keys if keys.kind(k) == "twist_accel"]
        if contacts and len(accels) == 1:
            yield from ((accels[0], c) for c in contacts)


def dependency_dag(order: list[int], parents: dict[int, list[int]]) -> nx.DiGraph:
    """A DAG from each eliminated variable's parents (``gtdyn.compile``'s ``computed_dag``): the nodes of
    ``order`` with their ``step``, an edge p → x for each parent p of x."""
    dag = nx.DiGraph()
    for step, key in enumerate(order):
        _add_node(dag, key)
        dag.nodes[key]["step"] = step
    for key, ps in parents.items():
        for p in ps:
            _add_node(dag, p)
            dag.add_edge(p, key)
    return dag


def bayes_tree_dag(bayes_tree: gtsam.GaussianBayesTree, ordering: gtsam.Ordering) -> nx.DiGraph:
    """The clique tree of multifrontal elimination: one node per clique (attributes frontals, separator as
    labels, size), edges parent clique → child clique (back-substitution runs root → leaves)."""
    clique_of = {}
    for i in range(ordering.size()):
        key = ordering.at(i)
        clique_of[key] = bayes_tree[key].conditional().firstFrontalKey()
    tree = nx.DiGraph()
    for clique_id in dict.fromkeys(clique_of.values()):
        clique = bayes_tree[clique_id]
        frontals = [k for k, c in clique_of.items() if c == clique_id]
        separator = [k for k in clique.conditional().keys() if k not in frontals]
        tree.add_node(clique_id, frontals=[keys.label(k) for k in frontals],
                      separator=[keys.label(k) for k in separator],
                      size=sum(keys.dim(k) for k in frontals + separator),
                      label=", ".join(keys.pretty(k) for k in frontals)
                      + (" : " + ", ".join(keys.pretty(k) for k in separator) if separator else ""))
        if not clique.isRoot():
            tree.add_edge(clique.parent().conditional().firstFrontalKey(), clique_id)
    return tree


def to_dot(dag: nx.DiGraph, name: str = "elimination") -> str:
    """Graphviz DOT text: nodes labelled and filled by kind, edges parent -> child."""
    lines = [f'digraph "{name}" {{', "  rankdir=BT;", '  node [shape=circle, style=filled, fontcolor=white];']
    for n in sorted(dag.nodes, key=lambda k: (KIND_ROWS.index(dag.nodes[k]["kind"]) if dag.nodes[k]["kind"] in KIND_ROWS
                                              else 9, dag.nodes[k]["index"])):
        d = dag.nodes[n]
        lines.append(f'  "{d["label"]}" [label="{d["pretty"]}", fillcolor="{KIND_COLOURS.get(d["kind"], "#9e9e9e")}"];')
    for a, b in sorted(dag.edges, key=lambda e: (dag.nodes[e[1]].get("step", 0), dag.nodes[e[0]]["label"])):
        lines.append(f'  "{dag.nodes[a]["label"]}" -> "{dag.nodes[b]["label"]}";')
    lines.append("}")
    return "\n".join(lines) + "\n"


def variable_graph(graph: gtsam.GaussianFactorGraph) -> nx.Graph:
    """Undirected graph of the unknowns: an edge wherever two variables share a factor."""
    g = nx.Graph()
    for key, around in adjacency(graph).items():
        g.add_node(key)
        g.add_edges_from((key, other) for other in around)
    return g
