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
from gtdyn.errors import ArgumentError
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
#
# Layouts give every variable a place in "grid units" (a column per joint, tree depth or branch, a row per
# kind); drawings turn a unit into a fixed number of inches, fold very wide layouts into slices, and lower
# the resolution of a raster file so that its long side stays within MAX_PIXELS.

MAX_PIXELS = 8000  # the long side of a saved PNG, at most
MAX_PANELS = 12  # the step view merges batches so that it draws at most this many panels
MAX_STEP_VARIABLES = 240  # the step view refuses larger graphs (each panel draws every variable)
DAG_INCHES = (1.3, 0.8)  # a grid unit of a DAG drawing, across and down


def layered_layout(dag: nx.Graph) -> dict[int, tuple[float, float]]:
    """Variables of a kind on one row (V̇, F, τ, q̈ from top, rows present only), by index left to right."""
    present = {dag.nodes[n]["kind"] for n in dag.nodes}
    rows = {kind: -r for r, kind in enumerate(k for k in KIND_ROWS if k in present)}
    return {n: (float(dag.nodes[n]["index"]), float(rows.get(dag.nodes[n]["kind"], -len(KIND_ROWS))))
            for n in dag.nodes}


def joint_places(robot) -> dict[int, tuple[int, float]]:
    """(depth, slot) of every joint index in the kinematic tree: depth 1 for joints on the base, one more per
    joint down the spanning tree; slots number the leaves in depth-first order, and a joint with children
    sits midway between its first and last child. A loop-closing joint goes one depth beyond the deeper of
    its two links, midway between their slots (further out if that place is taken)."""
    tree = robot.tree_joints
    by_child = {j.child: j for j in tree}
    children: dict[str, list] = {}
    for j in tree:
        children.setdefault(j.parent, []).append(j)
    roots = [j for j in tree if j.parent not in by_child]
    depth: dict[int, int] = {}
    slot: dict[int, float] = {}
    preorder, stack = [], [(j, 1) for j in reversed(roots)]
    while stack:  # iterative depth-first walk: long chains need no recursion
        joint, d = stack.pop()
        depth[joint.index] = d
        preorder.append(joint)
        stack.extend((c, d + 1) for c in reversed(children.get(joint.child, [])))
    leaves = 0
    for joint in preorder:
        if not children.get(joint.child):
            slot[joint.index] = float(leaves)
            leaves += 1
    for joint in reversed(preorder):
        kids = children.get(joint.child)
        if kids:
            slot[joint.index] = (slot[kids[0].index] + slot[kids[-1].index]) / 2
    places = {i: (depth[i], slot[i]) for i in depth}

    def link_place(name: str) -> tuple[int, float | None]:
        j = by_child.get(name)
        return (0, None) if j is None else places[j.index]

    for joint in robot.loop_joints:
        (dp, sp), (dc, sc) = link_place(joint.parent), link_place(joint.child)
        known = [s for s in (sp, sc) if s is not None]
        s, d = (sum(known) / len(known) if known else 0.0), max(dp, dc) + 1
        while any(pd == d and abs(ps - s) < 1 for pd, ps in places.values()):
            d += 1
        places[joint.index] = (d, s)
    return places


def _kind_rows(dag: nx.Graph) -> dict[str, int]:
    present = {dag.nodes[n]["kind"] for n in dag.nodes}
    kinds = [k for k in KIND_ROWS if k in present] + sorted(present - set(KIND_ROWS))
    return {kind: r for r, kind in enumerate(kinds)}


def tree_layout(dag: nx.Graph, robot, orientation: str | None = None) -> dict[int, tuple[float, float]]:
    """The layout that follows the kinematic tree: joint j's variables (τj, Fj, q̈j and V̇j of its child link)
    stack in one column, a row per kind as in ``layered_layout``, at the joint's place from ``joint_places``.

    ``orientation`` "horizontal": the depth in the tree runs left to right and each branch has its own band
    of rows, one below the other (a serial chain is drawn exactly as by ``layered_layout``); "vertical": the
    depth runs top to bottom, a band of rows per depth, and the branches lie side by side. By default, the
    one whose figure has the shorter long side: horizontal for chains and long-limbed trees such as
    humanoids, vertical for bushy ones.
    """
    rows = _kind_rows(dag)
    band = len(rows) + 1
    places = joint_places(robot)
    depth = max((d for d, _ in places.values()), default=0)
    leaves = 1 + max((s for _, s in places.values()), default=0)
    if orientation is None:  # figure inches: DAG_INCHES per grid unit
        ix, iy = DAG_INCHES
        horizontal = max(depth * ix, leaves * band * iy)
        vertical = max(leaves * ix, depth * band * iy)
        orientation = "horizontal" if horizontal <= vertical else "vertical"
    if orientation not in ("horizontal", "vertical"):
        raise ArgumentError(f"orientation: expected 'horizontal' or 'vertical', got {orientation!r}")
    out = {}
    for n in dag.nodes:
        d = dag.nodes[n]
        level, s = places.get(d["index"], (depth + 1, 0.0))  # anything the tree lacks: one level beyond
        row = rows[d["kind"]]
        out[n] = (float(level), -(s * band + row)) if orientation == "horizontal" else (s, -((level - 1) * band + row))
    return out


def fold_layout(pos: dict, inches: tuple[float, float] = DAG_INCHES, max_aspect: float = 3.0,
                min_width: float = 20.0) -> dict:
    """A layout whose figure (``inches`` a grid unit, across and down) would be wider than ``min_width``
    inches and more than ``max_aspect`` times wider than tall, cut into equal slices stacked top to bottom,
    as many as make it at most twice as wide as tall: a long chain reads like lines of text. Other layouts
    are returned unchanged."""
    if not pos:
        return pos
    xs, ys = [x for x, _ in pos.values()], [y for _, y in pos.values()]
    x0, columns, rows = min(xs), int(round(max(xs) - min(xs))) + 1, max(ys) - min(ys) + 1
    ix, iy = inches
    if columns * ix <= max(min_width, max_aspect * rows * iy):
        return pos
    slices = 2
    while slices < columns and -(-columns // slices) * ix > 2 * (slices * rows + slices - 1) * iy:
        slices += 1
    per = -(-columns // slices)
    return {n: (x0 + (x - x0) % per, y - ((x - x0) // per) * (rows + 1)) for n, (x, y) in pos.items()}


def _extent(pos: dict) -> tuple[float, float, float, float]:
    xs, ys = [x for x, _ in pos.values()] or [0.0], [y for _, y in pos.values()] or [0.0]
    return min(xs), max(xs), min(ys), max(ys)


def _dpi(fig, preferred: float) -> float:
    """``preferred`` unless the figure's long side would exceed MAX_PIXELS."""
    return min(preferred, MAX_PIXELS / max(fig.get_size_inches()))


def _edge_style(n_edges: int) -> dict:
    """Thinner, lighter arrows when there are many of them, so that the nodes stay readable."""
    if n_edges <= 150:
        return {"width": 1.0, "alpha": 0.9, "arrowsize": 12}
    if n_edges <= 400:
        return {"width": 0.7, "alpha": 0.65, "arrowsize": 10}
    return {"width": 0.5, "alpha": 0.4, "arrowsize": 8}


def _bend(a: tuple[float, float], b: tuple[float, float]) -> float:
    """How much an arrow a → b bends (arc3's rad): between non-neighbours in one column, enough to pass
    ~0.35 units beside the variables in between; otherwise a little, less the longer the arrow, so that it
    bulges at most ~0.3 units (beyond the drawing's margin never)."""
    length = float(np.hypot(b[0] - a[0], b[1] - a[1]))
    if abs(a[0] - b[0]) < 1e-9 and length > 1.01:
        return min(0.45, round(0.7 / length, 2))
    return next(rad for rad in (0.18, 0.1, 0.05, 0.025, 0.012, 0.0) if rad * length <= 0.6)


def _draw_arrows(dag: nx.DiGraph, pos: dict, ax, node_size: float, colour: str, **style) -> None:
    by_bend: dict[float, list] = {}
    for a, b in dag.edges:
        by_bend.setdefault(_bend(pos[a], pos[b]), []).append((a, b))
    for rad, edges in by_bend.items():
        nx.draw_networkx_edges(dag, pos, edgelist=edges, ax=ax, arrows=True, arrowstyle="-|>",
                               node_size=node_size, connectionstyle=f"arc3,rad={rad}", edge_color=colour, **style)


def draw_dag(dag: nx.DiGraph, path: str | None = None, title: str | None = None, ax=None, robot=None):
    """Draw a DAG (or any graph with gtdyn node attributes), coloured by kind: in ``tree_layout`` when the
    ``robot`` is given, else in ``layered_layout``; either is folded (``fold_layout``) if very wide.

    The figure grows with the layout (DAG_INCHES a grid unit); a PNG is saved at 130 dpi, or less so
    that its long side stays within MAX_PIXELS. Saves to ``path`` (.png, .svg, .pdf) when given; returns the
    matplotlib Figure.
    """
    from matplotlib.figure import Figure  # not pyplot: no global figure registry, no display needed

    pos = fold_layout(tree_layout(dag, robot) if robot is not None else layered_layout(dag))
    x0, x1, y0, y1 = _extent(pos)
    if ax is None:
        ix, iy = DAG_INCHES
        fig = Figure(figsize=(max(4.0, (x1 - x0 + 1.4) * ix), max(2.6, (y1 - y0 + 1.4) * iy + 0.4)))
        ax = fig.subplots()
    else:
        fig = ax.figure
    node_size = 650
    if dag.is_directed():
        _draw_arrows(dag, pos, ax, node_size, "#444444", **_edge_style(dag.number_of_edges()))
    else:
        nx.draw_networkx_edges(dag, pos, ax=ax, edge_color="#888888", width=1.0, style="dashed")
    colours = [KIND_COLOURS.get(dag.nodes[n]["kind"], "#9e9e9e") for n in dag.nodes]
    nx.draw_networkx_nodes(dag, pos, ax=ax, node_color=colours, node_size=node_size, edgecolors="black", linewidths=0.8)
    nx.draw_networkx_labels(dag, pos, ax=ax, labels={n: dag.nodes[n]["pretty"] for n in dag}, font_size=9,
                            font_color="white", font_weight="bold")
    ax.set_title(title or f"{dag.number_of_nodes()} variables, {dag.number_of_edges()} edges", fontsize=10)
    ax.set_axis_off()
    ax.set_xlim(x0 - 0.7, x1 + 0.7)
    ax.set_ylim(y0 - 0.7, y1 + 0.7)
    if path:
        fig.tight_layout()
        fig.savefig(path, dpi=_dpi(fig, 130))
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


def _step_title(eliminated: list[str]) -> str:
    if not eliminated:
        return "start"
    pretty = [keys.pretty(keys.parse_label(label)) for label in eliminated]
    if len(pretty) <= 6:
        return "eliminate " + ", ".join(pretty)
    return f"eliminate {len(pretty)}: " + ", ".join(pretty[:3]) + " … " + ", ".join(pretty[-2:])


def draw_elimination_steps(graph: gtsam.GaussianFactorGraph, ordering: gtsam.Ordering, path: str | None = None,
                           batches: list[int] | None = None, robot=None, max_panels: int = MAX_PANELS,
                           progress=None):
    """One panel per batch (paper Fig. 5): the variables still to eliminate (white; dashed edges: the factors
    left, fill-in included) and the DAG so far, in the layout of ``draw_dag`` (``tree_layout`` if ``robot``
    is given), the same places in every panel.

    Batches default to runs of one kind; if that makes more than ``max_panels`` panels (the first shows the
    start), consecutive batches are merged into groups of about equal size. Explicit ``batches`` are drawn
    as given and must fit. Panels are laid out in a grid; a PNG's long side stays within MAX_PIXELS. Graphs
    of more than MAX_STEP_VARIABLES variables are refused (ArgumentError): draw the DAG alone instead.
    ``progress(done, total)``, if given, is called after each panel and before saving. Saves to ``path`` if
    given; returns the matplotlib Figure.
    """
    from matplotlib.figure import Figure

    n_vars = ordering.size()
    if n_vars > MAX_STEP_VARIABLES:
        raise ArgumentError(f"the step view draws graphs of at most {MAX_STEP_VARIABLES} variables, this one has "
                            f"{n_vars}; draw the DAG alone (gtdyn.dag.draw_dag, or gtdyn dag without --steps)")
    if max_panels < 2:
        raise ArgumentError(f"max_panels: need at least 2 (the start and one batch), got {max_panels}")
    if batches is None:
        batches = group_batches(_kind_runs([ordering.at(i) for i in range(n_vars)]), max_panels - 1)
    elif len(batches) + 1 > max_panels:
        raise ArgumentError(f"batches: {len(batches)} batches make {len(batches) + 1} panels, more than "
                            f"max_panels={max_panels}; merge some batches or raise max_panels")
    steps = elimination_steps(graph, ordering, batches)
    big = n_vars > 60
    node_size, font_size = (300, 6) if big else (450, 8)
    unit_x, unit_y = (0.75, 0.42) if big else (0.9, 0.75)
    pos = fold_layout(tree_layout(steps[0][1], robot) if robot is not None else layered_layout(steps[0][1]),
                      (unit_x, unit_y))
    x0, x1, y0, y1 = _extent(pos)
    panel_w, panel_h = max(2.8, (x1 - x0 + 1.2) * unit_x), max(2.4, (y1 - y0 + 1.2) * unit_y + 0.5)
    n = len(steps)
    if n * panel_w <= 24:  # a row, as in the paper
        cols = n
    else:  # the grid with the shortest long side (then the fewest empty cells)
        cols = min(range(1, n + 1), key=lambda c: (max(c * panel_w, -(-n // c) * panel_h), c * -(-n // c)))
    rows = -(-n // cols)
    fig = Figure(figsize=(cols * panel_w, rows * panel_h))
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    width = 0.6 if big else 1.0
    for k, (ax, (eliminated, remaining, dag)) in enumerate(zip(axes, steps)):
        nx.draw_networkx_edges(remaining, pos, ax=ax, edge_color="#bbbbbb", style="dashed", width=width)
        nx.draw_networkx_nodes(remaining, pos, ax=ax, node_color="white", edgecolors="#666666", node_size=node_size)
        nx.draw_networkx_labels(remaining, pos, ax=ax, labels={n: remaining.nodes[n]["pretty"] for n in remaining},
                                font_size=font_size)
        done = [n for n in dag if n not in remaining]
        if done:
            _draw_arrows(dag, pos, ax, node_size, "#333333", **_edge_style(dag.number_of_edges() * (2 if big else 1)))
            nx.draw_networkx_nodes(dag, pos, ax=ax, nodelist=done, node_size=node_size, edgecolors="black",
                                   node_color=[KIND_COLOURS.get(dag.nodes[n]["kind"], "#9e9e9e") for n in done])
            nx.draw_networkx_labels(dag, pos, ax=ax, labels={n: dag.nodes[n]["pretty"] for n in done},
                                    font_size=font_size, font_color="white")
        ax.set_title(_step_title(eliminated), fontsize=9)
        ax.set_axis_off()
        ax.set_xlim(x0 - 0.6, x1 + 0.6)
        ax.set_ylim(y0 - 0.6, y1 + 0.6)
        if progress:
            progress(k + 1, n + 1)
    for ax in axes[n:]:
        ax.set_axis_off()
    fig.tight_layout()
    if path:
        if progress:
            progress(n + 1, n + 1)
        fig.savefig(path, dpi=_dpi(fig, 120))
    return fig
