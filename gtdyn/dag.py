"""The elimination result as a DAG, its metrics, and pictures of it.

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
import networkx as nx
import numpy as np

from gtdyn import keys
from gtdyn.orderings import variable_graph

KIND_ROWS = ("twist_accel", "wrench", "torque", "joint_accel")  # top to bottom in drawings
KIND_COLOURS = {"twist_accel": "#4caf50", "wrench": "#2196f3", "torque": "#ff9800", "joint_accel": "#9c27b0",
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
    attributes of ``bayes_net_dag`` plus ``step``."""
    dag = nx.DiGraph()
    for step, (x, separator, _) in enumerate(symbolic_elimination(graph, ordering)):
        _add_node(dag, x)
        dag.nodes[x]["step"] = step
        for p in separator:
            _add_node(dag, p)
            dag.add_edge(p, x)
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


# -- pictures -------------------------------------------------------------------------------------------


def layered_layout(dag: nx.Graph) -> dict[int, tuple[float, float]]:
    """Variables of a kind on one row (V̇, F, τ, q̈ from top, rows present only), by index left to right."""
    present = {dag.nodes[n]["kind"] for n in dag.nodes}
    rows = {kind: -r for r, kind in enumerate(k for k in KIND_ROWS if k in present)}
    return {n: (float(dag.nodes[n]["index"]), float(rows.get(dag.nodes[n]["kind"], -len(KIND_ROWS))))
            for n in dag.nodes}


def draw_dag(dag: nx.DiGraph, path: str | None = None, title: str | None = None, ax=None):
    """Draw a DAG (or any graph with gtdyn node attributes) in the layered layout, coloured by kind.

    Saves to ``path`` (.png, .svg, .pdf) when given; returns the matplotlib Figure.
    """
    from matplotlib.figure import Figure  # not pyplot: no global figure registry, no display needed

    if ax is None:
        width = max(4.0, 1.3 * (1 + max((dag.nodes[n]["index"] for n in dag), default=1)))
        fig = Figure(figsize=(width, 4.2))
        ax = fig.subplots()
    else:
        fig = ax.figure
    pos = layered_layout(dag)
    colours = [KIND_COLOURS.get(dag.nodes[n]["kind"], "#9e9e9e") for n in dag.nodes]
    nx.draw_networkx_nodes(dag, pos, ax=ax, node_color=colours, node_size=650, edgecolors="black", linewidths=0.8)
    nx.draw_networkx_labels(dag, pos, ax=ax, labels={n: dag.nodes[n]["pretty"] for n in dag}, font_size=9,
                            font_color="white", font_weight="bold")
    if dag.is_directed():
        nx.draw_networkx_edges(dag, pos, ax=ax, arrows=True, arrowstyle="-|>", arrowsize=12, node_size=650,
                               connectionstyle="arc3,rad=0.18", edge_color="#444444", width=1.0)
    else:
        nx.draw_networkx_edges(dag, pos, ax=ax, edge_color="#888888", width=1.0, style="dashed")
    ax.set_title(title or f"{dag.number_of_nodes()} variables, {dag.number_of_edges()} edges", fontsize=10)
    ax.set_axis_off()
    ax.margins(0.12)
    if path:
        fig.tight_layout()
        fig.savefig(path, dpi=130)
    return fig


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


def elimination_steps(graph: gtsam.GaussianFactorGraph, ordering: gtsam.Ordering, batches: list[int] | None = None):
    """Elimination batch by batch (paper Fig. 5): after each batch, the graph of the variables still to
    eliminate (the factors left, fill-in included) and the DAG of those eliminated so far.

    ``batches`` gives batch sizes; by default consecutive variables of one kind form a batch. Returns a list
    of (eliminated labels, remaining nx.Graph, dag-so-far nx.DiGraph).
    """
    order = [ordering.at(i) for i in range(ordering.size())]
    if batches is None:
        batches, run = [], 0
        for i, key in enumerate(order):
            run += 1
            if i + 1 == len(order) or keys.kind(order[i + 1]) != keys.kind(key):
                batches.append(run)
                run = 0
    if sum(batches) != len(order):
        raise ValueError(f"batches: sizes {batches} add up to {sum(batches)}, not the {len(order)} variables")
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


def draw_elimination_steps(graph: gtsam.GaussianFactorGraph, ordering: gtsam.Ordering, path: str | None = None,
                           batches: list[int] | None = None):
    """One panel per batch: remaining variables (dashed, undirected, with fill-in) and the DAG so far."""
    from matplotlib.figure import Figure

    steps = elimination_steps(graph, ordering, batches)
    fig = Figure(figsize=(3.6 * len(steps), 3.8))
    axes = fig.subplots(1, len(steps), squeeze=False)
    pos = layered_layout(steps[0][1])  # the same places in every panel
    xs, ys = [x for x, _ in pos.values()], [y for _, y in pos.values()]
    for ax, (eliminated, remaining, dag) in zip(axes[0], steps):
        nx.draw_networkx_edges(remaining, pos, ax=ax, edge_color="#bbbbbb", style="dashed")
        nx.draw_networkx_nodes(remaining, pos, ax=ax, node_color="white", edgecolors="#666666", node_size=450)
        nx.draw_networkx_labels(remaining, pos, ax=ax, labels={n: remaining.nodes[n]["pretty"] for n in remaining},
                                font_size=8)
        if dag.number_of_nodes():
            nx.draw_networkx_nodes(dag, pos, ax=ax, nodelist=[n for n in dag if n not in remaining],
                                   node_color=[KIND_COLOURS[dag.nodes[n]["kind"]] for n in dag if n not in remaining],
                                   node_size=450, edgecolors="black")
            nx.draw_networkx_labels(dag, pos, ax=ax, labels={n: dag.nodes[n]["pretty"] for n in dag if n not in remaining},
                                    font_size=8, font_color="white")
            nx.draw_networkx_edges(dag, pos, ax=ax, arrows=True, arrowstyle="-|>", node_size=450,
                                   connectionstyle="arc3,rad=0.18", edge_color="#333333")
        ax.set_title("start" if not eliminated else "eliminate " + ", ".join(eliminated), fontsize=9)
        ax.set_axis_off()
        ax.set_xlim(min(xs) - 0.5, max(xs) + 0.5)
        ax.set_ylim(min(ys) - 0.5, max(ys) + 0.5)
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=120)
    return fig
