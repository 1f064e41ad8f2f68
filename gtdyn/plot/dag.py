"""Pictures of elimination DAGs and of elimination step by step.

Layouts give every variable a place in "grid units" (a column per joint, tree depth or branch, a row per
kind); drawings turn a unit into a fixed number of inches, fold very wide layouts into slices, and lower
the resolution of a raster file so that its long side stays within MAX_PIXELS.
"""

from __future__ import annotations

import gtsam
import networkx as nx
import numpy as np

from gtdyn import keys
from gtdyn.analysis.dag import KIND_COLOURS, KIND_ROWS
from gtdyn.analysis.steps import _kind_runs, elimination_steps, group_batches
from gtdyn.arguments import choice
from gtdyn.errors import ArgumentError
from gtdyn.linear.budget import Cost, check_memory
from gtdyn.plot.figure import fixed_limits, tight_layout

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
    choice("orientation", orientation, ("horizontal", "vertical"))
    out = {}
    for n in dag.nodes:
        d = dag.nodes[n]
        # anything the tree lacks: one level beyond
        level, s = places.get(_place(d, robot), (depth + 1, 0.0))
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
    """The DAG's edges as arrows. The caller sets the axes' limits afterwards."""
    by_bend: dict[float, list] = {}
    for a, b in dag.edges:
        by_bend.setdefault(_bend(pos[a], pos[b]), []).append((a, b))
    with fixed_limits(ax):
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

    check_drawing(dag)
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
    if robot is not None:
        _outline_clusters(dag, pos, ax, robot)
    colours = [KIND_COLOURS.get(dag.nodes[n]["kind"], "#9e9e9e") for n in dag.nodes]
    nx.draw_networkx_nodes(dag, pos, ax=ax, node_color=colours, node_size=node_size, edgecolors="black", linewidths=0.8)
    nx.draw_networkx_labels(dag, pos, ax=ax, labels={n: dag.nodes[n]["pretty"] for n in dag}, font_size=9,
                            font_color="white", font_weight="bold")
    ax.set_title(title or f"{dag.number_of_nodes()} variables, {dag.number_of_edges()} edges", fontsize=10)
    ax.set_axis_off()
    ax.set_xlim(x0 - 0.7, x1 + 0.7)
    ax.set_ylim(y0 - 0.7, y1 + 0.7)
    if path:
        tight_layout(fig)
        fig.savefig(path, dpi=_dpi(fig, 130))
    return fig


# matplotlib's cost per drawn edge (an arrow patch each), fitted on CRBA's DAGs of 100- and 200-link chains
# (benchmarks/results/design_measurements.md, "Drawing a DAG")
DRAWING_BYTES_PER_EDGE, DRAWING_SECONDS_PER_EDGE = 11_000, 1e-3


def check_drawing(dag: nx.DiGraph) -> None:
    """``gtdyn.BudgetError`` before drawing a DAG whose edges would take more memory than the budget
    (``gtdyn.set_memory_budget``): the dense DAG of CRBA on a long chain has O(n²) edges."""
    edges = dag.number_of_edges()
    check_memory(Cost(DRAWING_BYTES_PER_EDGE * edges, edges), f"drawing a DAG of {dag.number_of_nodes()} variables "
                 f"and {edges} edges", list, DRAWING_SECONDS_PER_EDGE * edges, why="an arrow per edge",
                 otherwise="a sparser ordering's DAG (ABA, RNEA, COLAMD) has far fewer edges")


CLUSTER_COLOURS = ("#ffb300", "#26a69a", "#ab47bc", "#8d6e63", "#5c6bc0", "#ec407a")


def _outline_clusters(dag: nx.DiGraph, pos: dict, ax, robot) -> None:
    """A translucent rounded box around the variables of each cluster of joints a transmission or a loop
    couples (``gtdyn.orderings.clusters``): their torques, wrenches, q̈, their links' V̇ and the λ of the
    transmissions among them; labelled "cluster k" (its joints in the legend-like caption)."""
    from matplotlib.patches import FancyBboxPatch

    from gtdyn.orderings import clusters

    for number, cluster in enumerate(c for c in clusters(robot) if len(c) > 1):
        members = set(cluster)
        points = np.array([pos[n] for n, d in dag.nodes(data=True) if _joint_of(d, robot) in members], float)
        if len(points) < 2:
            continue
        (x0, y0), (x1, y1) = points.min(axis=0) - 0.42, points.max(axis=0) + 0.42
        colour = CLUSTER_COLOURS[number % len(CLUSTER_COLOURS)]
        ax.add_patch(FancyBboxPatch((x0, y0), x1 - x0, y1 - y0, boxstyle="round,pad=0.02,rounding_size=0.3",
                                    facecolor=colour, edgecolor=colour, alpha=0.2, linewidth=2, zorder=0))
        names = ", ".join(robot.joints[j - 1].name for j in cluster)
        ax.annotate(f"cluster {number + 1}: {names}", (x0, y1), xytext=(2, 3), textcoords="offset points",
                    fontsize=7, color=colour, va="bottom")


def _place(node: dict, robot) -> int:
    """The joint whose column a node stands in: its own index, but a contact's force with its link's variables
    and a transmission's λ with the joint it drives (their indices count contacts and transmissions)."""
    if "body" in node:
        return node["body"]
    if node["kind"] == "transmission_force":
        return robot.transmissions[node["index"] - 1].dependent
    return node["index"]


def _joint_of(node: dict, robot) -> int | None:
    """The joint a DAG node's variable belongs to (a link's V̇: its tree joint; λ_k: the joint it drives)."""
    kind, index = node["kind"], node["index"]
    if kind == "transmission_force":
        return robot.transmissions[index - 1].dependent
    if kind in ("torque", "wrench", "joint_accel", "twist_accel") and index >= 1:
        return index  # in a tree, joint i's child is link i
    return None


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
                            f"{n_vars}; draw the DAG alone (gtdyn.plot.draw_dag, or gtdyn dag without --steps)")
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
    tight_layout(fig)
    if path:
        if progress:
            progress(n + 1, n + 1)
        fig.savefig(path, dpi=_dpi(fig, 120))
    return fig
