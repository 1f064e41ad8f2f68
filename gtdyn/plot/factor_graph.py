"""Factor graphs drawn in the paper's style (Fig. 1, 3 and 4a): variables as circles, known variables as
squares, factors as small black dots joined to the variables they constrain.

Variables sit in columns by joint/link index and rows by kind. A simplified linear graph (dynamics variables
only) uses the rows of ``gtdyn.plot.dag``'s layered layout, so it and its elimination DAG put every variable in the
same place. The full nonlinear graph adds the kinematic rows; there a joint's quantities sit halfway between
the two links it joins. Each factor dot sits at the mean of its variables, nudged aside where it would cover
a variable or another dot.

    from gtdyn.plot.factor_graph import draw_factor_graph, known_keys
    from gtdyn.factors.full_graph import full_dynamics_graph
    draw_factor_graph(full_dynamics_graph(robot), known=known_keys(robot, "inverse"), path="fig3.png")
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from gtdyn import keys
from gtdyn.analysis.dag import KIND_COLOURS, KIND_ROWS
from gtdyn.model.robot import Robot

KINEMATIC_KINDS = ("twist", "joint_angle", "joint_vel", "pose")
JOINT_KINDS = ("joint_angle", "joint_vel", "joint_accel", "wrench", "torque")
# rows of the full graph, top to bottom: accelerations, velocities, positions, forces. Picked by trying every
# row order (joints between links): with this one no line passes over a variable it does not touch on serial
# arms (tests check the 3R arm and the PUMA 560).
FULL_ROWS = ("twist_accel", "joint_accel", "joint_vel", "twist", "joint_angle", "pose", "wrench", "torque")
KIND_NAMES = {"twist_accel": "twist acceleration", "wrench": "wrench", "torque": "torque",
              "joint_accel": "joint acceleration", "twist": "twist", "joint_angle": "joint angle",
              "joint_vel": "joint velocity", "pose": "pose", "contact_force": "contact force",
              "contact_wrench": "contact wrench", "transmission_force": "transmission force"}

COLUMN_SPACING, ROW_SPACING = 1.6, 1.0  # data units between neighbouring variables
NODE_RADIUS, DOT_RADIUS = 0.24, 0.06  # data units
CLEARANCE = 0.05  # gap kept between a factor dot and anything else
INCHES_PER_UNIT = 0.85
# where to try a factor dot, relative to its variables' mean: rings of growing radius, sideways first
_NUDGES = [(0.0, 0.0)] + [(r * np.cos(a), r * np.sin(a)) for r in (0.15, 0.3, 0.45, 0.6)
                          for a in np.radians([180, 0, 90, 270, 135, 45, 225, 315])]


def known_keys(robot: Robot, problem: str, qdd: Mapping[str, float] | Iterable[str] = (),
               tau: Mapping[str, float] | Iterable[str] = ()) -> set[int]:
    """The variables known in the paper's full graph (Fig. 3) for a dynamics problem.

    Joint angles q, velocities q̇ and, computed from them, the link twists V and poses T are always known;
    inverse dynamics knows every q̈, forward dynamics every τ. For ``problem="hybrid"`` give ``qdd`` and
    ``tau`` as for ``gtdyn.hybrid_dynamics`` (dicts by joint name; only the names matter).
    """
    if problem not in ("inverse", "forward", "hybrid"):
        raise ValueError(f"problem: '{problem}' is not one of inverse, forward, hybrid")
    if problem != "hybrid" and (qdd or tau):
        raise ValueError("qdd, tau: only a hybrid problem takes the joints whose q̈ or τ is given")
    joints = [j.index for j in robot.joints]
    links = [link.index for link in robot.links]
    known = {keys.joint_angle_key(j) for j in joints} | {keys.joint_vel_key(j) for j in joints}
    known |= {keys.twist_key(i) for i in links} | {keys.pose_key(i) for i in links}
    if problem == "inverse":
        return known | {keys.joint_accel_key(j) for j in joints}
    if problem == "forward":
        return known | {keys.torque_key(j) for j in joints}
    known |= {keys.joint_accel_key(robot.joint(name).index) for name in qdd}
    return known | {keys.torque_key(robot.joint(name).index) for name in tau}


def factor_keys(graph) -> list[list[int]]:
    """The keys of every factor of a GaussianFactorGraph or NonlinearFactorGraph (removed factors skipped)."""
    factors = (graph.at(i) for i in range(graph.size()))
    return [list(f.keys()) for f in factors if f is not None]


def row_order(variables: Iterable[int]) -> list[str]:
    """The kinds present, top to bottom: ``FULL_ROWS`` if kinematic variables are there, else the DAG's rows."""
    present = {keys.kind(v) for v in variables}
    full = any(kind in present for kind in KINEMATIC_KINDS)
    return [kind for kind in (FULL_ROWS if full else KIND_ROWS) if kind in present]


def variable_positions(variables: Iterable[int]) -> dict[int, np.ndarray]:
    """Column by joint/link index, row by kind (``row_order``); in the full graph joints between links."""
    variables = list(variables)
    rows = row_order(variables)
    between = 0.5 if any(kind in rows for kind in KINEMATIC_KINDS) else 0.0

    def column(v: int) -> float:
        return keys.index(v) - (between if keys.kind(v) in JOINT_KINDS else 0.0)

    return {v: np.array([column(v) * COLUMN_SPACING, -rows.index(keys.kind(v)) * ROW_SPACING]) for v in variables}


def factor_positions(factors: list[list[int]], variable_pos: dict[int, np.ndarray]) -> list[np.ndarray]:
    """A dot per factor at the mean of its variables, moved to the first nearby spot that is clear.

    A factor on one variable has no natural place (its mean is the variable itself), so those come last and take
    the roomiest spot around their variable, away from the other dots and lines."""
    nodes = np.array(list(variable_pos.values()))
    placed: dict[int, np.ndarray] = {}
    for i in sorted(range(len(factors)), key=lambda i: len(set(factors[i])) == 1):
        centre = np.mean([variable_pos[k] for k in factors[i]], axis=0)
        candidates = [centre + nudge for nudge in _NUDGES]
        dots = list(placed.values())
        if len(set(factors[i])) == 1:
            segments = [(placed[j], variable_pos[k]) for j in placed for k in factors[j]]
            gaps = [min(_clearance(c, nodes, dots), _segment_gap(c, segments)) for c in candidates]
            placed[i] = candidates[int(np.argmax(gaps))]
            continue
        gaps = [_clearance(c, nodes, dots) for c in candidates]
        clear = [c for c, gap in zip(candidates, gaps) if gap >= CLEARANCE]
        placed[i] = clear[0] if clear else candidates[int(np.argmax(gaps))]
    return [placed[i] for i in range(len(factors))]


def _clearance(point: np.ndarray, nodes: np.ndarray, dots: list[np.ndarray]) -> float:
    """Smallest gap between a dot at ``point`` and any variable node or dot already placed."""
    gaps = [np.min(np.linalg.norm(nodes - point, axis=1)) - NODE_RADIUS - DOT_RADIUS]
    if dots:
        gaps.append(np.min(np.linalg.norm(np.array(dots) - point, axis=1)) - 2 * DOT_RADIUS)
    return float(min(gaps))


def _segment_gap(point: np.ndarray, segments: list[tuple[np.ndarray, np.ndarray]]) -> float:
    """Smallest gap between a dot at ``point`` and any of the line segments."""
    if not segments:
        return np.inf
    starts, ends = (np.array(side) for side in zip(*segments))
    along = ends - starts
    t = np.clip(np.einsum("ij,ij->i", point - starts, along) / np.maximum(np.einsum("ij,ij->i", along, along), 1e-12),
                0.0, 1.0)
    return float(np.min(np.linalg.norm(starts + t[:, None] * along - point, axis=1)) - DOT_RADIUS)


def draw_factor_graph(graph, known: Iterable[int] = (), path: str | None = None, title: str | None = None,
                      ax=None):
    """Draw a gtsam factor graph of gtdyn variables as a bipartite picture; return the matplotlib Figure.

    ``known``: keys drawn as squares (known quantities, as the paper's Fig. 3). Saves to ``path`` (.png, .svg,
    .pdf) when given. The artists carry gids for inspection: ``unknown-variables``, ``known-variables``,
    ``factors`` (one dot per factor) and ``factor-edges``.
    """
    from matplotlib.figure import Figure  # not pyplot: no global figure registry, no display needed

    factors = factor_keys(graph)
    variables = list(dict.fromkeys(k for factor in factors for k in factor))
    known = set(known)
    variable_pos = variable_positions(variables)
    dots = factor_positions(factors, variable_pos)
    extent = _extent(list(variable_pos.values()) + dots)
    if ax is None:
        fig = Figure(figsize=_figure_size(extent), layout="constrained")
        ax = fig.subplots()
    else:
        fig = ax.figure
    _draw_edges(ax, factors, variable_pos, dots)
    _draw_variables(ax, [v for v in variables if v not in known], variable_pos, "unknown-variables")
    _draw_variables(ax, [v for v in variables if v in known], variable_pos, "known-variables")
    _draw_dots(ax, dots)
    _frame(ax, extent)
    ax.set_title(title or f"{len(variables)} variables ({len(known & set(variables))} known), "
                 f"{len(factors)} factors", fontsize=10)
    ax.legend(handles=_legend_handles(variables, any(v in known for v in variables)), loc="upper left",
              bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    if path:
        fig.savefig(path, dpi=130, bbox_inches="tight")
    return fig


def _extent(points: list[np.ndarray]) -> tuple[float, float, float, float]:
    """x and y limits that show every node and dot whole, with a margin."""
    xs, ys = zip(*points)
    pad = NODE_RADIUS + 0.3
    return min(xs) - pad, max(xs) + pad, min(ys) - pad, max(ys) + pad


def _figure_size(extent: tuple[float, float, float, float]) -> tuple[float, float]:
    """Inches that keep variable circles round and readable; room on the right for the legend."""
    x0, x1, y0, y1 = extent
    return max((x1 - x0) * INCHES_PER_UNIT + 2.6, 6.0), max((y1 - y0) * INCHES_PER_UNIT + 0.5, 3.0)


def _draw_edges(ax, factors, variable_pos, dots) -> None:
    from matplotlib.collections import LineCollection

    segments = [(dot, variable_pos[k]) for factor, dot in zip(factors, dots) for k in factor]
    ax.add_collection(LineCollection(segments, colors="#555555", linewidths=0.9, zorder=1, gid="factor-edges"))


def _draw_variables(ax, variables: list[int], variable_pos, gid: str) -> None:
    """Circles for unknowns, squares (same area feel) for knowns; label each with its pretty name."""
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Circle, Rectangle

    square = gid == "known-variables"
    side = 1.75 * NODE_RADIUS
    shapes = [Rectangle(variable_pos[v] - side / 2, side, side) if square else Circle(variable_pos[v], NODE_RADIUS)
              for v in variables]
    colours = [KIND_COLOURS[keys.kind(v)] for v in variables]
    ax.add_collection(PatchCollection(shapes, facecolors=colours, edgecolors="black", linewidths=0.8, zorder=2,
                                      gid=gid))
    for v in variables:
        ax.text(*variable_pos[v], keys.pretty(v), ha="center", va="center", fontsize=8, color="white",
                fontweight="bold", zorder=3)


def _draw_dots(ax, dots: list[np.ndarray]) -> None:
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Circle

    ax.add_collection(PatchCollection([Circle(d, DOT_RADIUS) for d in dots], facecolors="black", zorder=4,
                                      gid="factors"))


def _frame(ax, extent: tuple[float, float, float, float]) -> None:
    ax.set_xlim(*extent[:2])
    ax.set_ylim(*extent[2:])
    ax.set_aspect("equal")
    ax.set_axis_off()


def _marker(shape: str, label: str, colour: str = "white", size: float = 11):
    from matplotlib.lines import Line2D

    return Line2D([], [], linestyle="none", marker=shape, markersize=size, markerfacecolor=colour,
                  markeredgecolor="black", label=label)


def _kind_handles(variables: Iterable[int]) -> list:
    """One legend entry per colour used, naming its kinds ('V̇ twist acceleration', …)."""
    variables = list(variables)
    by_colour: dict[str, list[str]] = {}
    for kind in row_order(variables):
        example = next(v for v in variables if keys.kind(v) == kind)
        symbol = keys.pretty(example).rstrip("0123456789")
        by_colour.setdefault(KIND_COLOURS[kind], []).append(f"{symbol} {KIND_NAMES[kind]}")
    return [_marker("o", ", ".join(names), colour) for colour, names in by_colour.items()]


def _legend_handles(variables: list[int], with_known: bool) -> list:
    """Shapes (unknown, known if any are drawn, factor), then the colours of the kinds."""
    shapes = [_marker("o", "unknown variable")] + ([_marker("s", "known variable")] if with_known else [])
    return shapes + [_marker("o", "factor (an equation)", "black", 5)] + _kind_handles(variables)


def add_dag_legend(fig, variables: Iterable[int], steps: bool = False):
    """A legend to the right of a figure from ``gtdyn.plot.draw_dag``: colours by kind and
    what an arrow means; ``steps=True`` for ``draw_elimination_steps`` adds the not-yet-eliminated look.
    ``variables``: the keys drawn (a DAG itself will do). Returns the Legend."""
    from matplotlib.lines import Line2D

    handles = _kind_handles(variables)
    handles.append(Line2D([], [], color="#444444", label="p → x: back-substitution computes x from p"))
    if steps:
        handles += [_marker("o", "not yet eliminated"),
                    Line2D([], [], color="#bbbbbb", linestyle="--", label="still coupled by a factor (fill-in too)")]
    return fig.legend(handles=handles, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, frameon=False)
