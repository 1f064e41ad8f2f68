"""A solved problem as a table for a terminal: what was given and solved, the ordering, a row per joint
with units, and the DAG's cost."""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gtdyn.cli.solve import Solved

UNITS = {"revolute": ("rad", "rad/s", "rad/s²", "N·m"), "prismatic": ("m", "m/s", "m/s²", "N")}


def width(text: str) -> int:
    """Columns a string takes on a terminal (combining accents take none)."""
    return sum(0 if unicodedata.combining(c) else 1 for c in text)


def right(text: str, columns: int) -> str:
    """``text`` right-aligned in ``columns`` terminal columns."""
    return " " * max(0, columns - width(text)) + text


def gravity_text(g) -> str:
    """Gravity as ``(0, 0, -9.81) m/s²``."""
    return "(" + ", ".join(f"{x:g}" for x in g) + ") m/s²"


def format_result(s: Solved) -> str:
    """The lines ``gtdyn solve`` prints for one problem."""
    from gtdyn.analysis.metrics import metrics_of  # networkx: only once there is a result to measure

    r, robot = s.result, s.result.robot
    name_width = max(len(n) for n in robot.joint_names + ["joint"])
    types = {j.type for j in robot.joints}
    lines = [f"{s.problem} dynamics of {robot.name} ({robot.num_dofs} joints)",
             f"  given: {s.given} · solved: {s.solved}",
             f"  ordering {s.ordering}: {','.join(r.ordering)}"]
    columns = (("q", 10, 4), ("q̇", 10, 4), ("q̈", 12, 6), ("τ", 12, 6))
    if len(types) == 1:  # one kind of joint: units in the header
        units = UNITS.get(types.pop(), ("", "", "", ""))
        header = "  ".join(right(f"{c} [{u}]", w) for (c, w, _), u in zip(columns, units))
        lines.append(f"  {'joint':<{name_width}}  {header}")
        for i, name in enumerate(robot.joint_names):
            cells = "  ".join(f"{x[i]:{w}.{p}f}" for x, (_, w, p) in zip((r.q, r.v, r.qdd, r.tau), columns))
            lines.append(f"  {name:<{name_width}}  {cells}")
    else:  # revolute and prismatic joints: units in every cell
        header = "  ".join(right(c, w) + " " * 7 for c, w, _ in columns)
        lines.append(f"  {'joint':<{name_width}}  {header}".rstrip())
        for i, joint in enumerate(robot.joints):
            units = UNITS.get(joint.type, ("", "", "", ""))
            cells = "  ".join(f"{x[i]:{w}.{p}f} {u:<6}"
                              for x, (_, w, p), u in zip((r.q, r.v, r.qdd, r.tau), columns, units))
            lines.append(f"  {joint.name:<{name_width}}  {cells}".rstrip())
    m = metrics_of(r)
    lines.append(f"  DAG: {m['edges']} edges, fill-in {m['fill_in']}, ~{m['ops']:.0f} multiply-adds")
    return "\n".join(lines)
