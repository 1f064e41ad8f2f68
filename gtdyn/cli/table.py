"""A solved problem as a table for a terminal: what was given and solved, the ordering, a row per joint
with units, a floating base's state and wrench with units, and the DAG's cost."""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gtdyn.cli.solve import Solved

UNITS = {"revolute": ("rad", "rad/s", "rad/s²", "N·m"), "prismatic": ("m", "m/s", "m/s²", "N")}

# A floating base's rows: label with units, decimals (as the joint columns: 4 for velocities, 6 for the rest).
BASE_ROWS = (("ω [rad/s]", 4), ("v [m/s]", 4), ("ω̇ [rad/s²]", 6), ("v̇ [m/s²]", 6), ("moment [N·m]", 6),
             ("force [N]", 6))


def width(text: str) -> int:
    """Columns a string takes on a terminal (combining accents take none)."""
    return sum(0 if unicodedata.combining(c) else 1 for c in text)


def right(text: str, columns: int) -> str:
    """``text`` right-aligned in ``columns`` terminal columns."""
    return " " * max(0, columns - width(text)) + text


def base_text(robot) -> str:
    """``fixed base 'base_link'`` or ``floating base 'base_link'``: how a robot was loaded."""
    return f"{'floating' if robot.floating_base else 'fixed'} base '{robot.base.name}'"


def _numbers(values) -> str:
    return "(" + ", ".join(f"{x:g}" for x in values) + ")"


def format_base(s: Solved) -> list[str]:
    """A floating base's lines: its pose in the world, then its twist, acceleration and the wrench its
    environment applies, in its own frame, each row marked given or solved."""
    r, base = s.result, s.base
    name = r.robot.base.name
    quaternion = base.pose.rotation().toQuaternion()
    lines = [f"  base {name} at {_numbers(base.pose.translation())} m, (qx, qy, qz, qw) = "
             f"{_numbers([quaternion.x(), quaternion.y(), quaternion.z(), quaternion.w()])}; "
             "moment, force: the wrench its environment applies"]
    label_width = max(width(f"{name} frame"), *(width(label) for label, _ in BASE_ROWS))
    accel_status = "given" if base.accel is not None else "solved"
    wrench_status = "solved" if base.accel is not None else "given"
    values = (base.twist[:3], base.twist[3:], r.base_accel[:3], r.base_accel[3:], r.base_wrench[:3],
              r.base_wrench[3:])
    statuses = ("given", "given", accel_status, accel_status, wrench_status, wrench_status)
    lines.append(f"  {name} frame{' ' * (label_width - width(name + ' frame'))}  "
                 + "  ".join(right(axis, 12) for axis in "xyz"))
    for (label, decimals), xyz, status in zip(BASE_ROWS, values, statuses):
        cells = "  ".join(f"{x:12.{decimals}f}" for x in xyz)
        lines.append(f"  {label}{' ' * (label_width - width(label))}  {cells}  {status}")
    return lines


def gravity_text(g) -> str:
    """Gravity as ``(0, 0, -9.81) m/s²``."""
    return "(" + ", ".join(f"{x:g}" for x in g) + ") m/s²"


def format_contacts(r) -> list[str]:
    """Each contact's wrench from the environment, at the contact point with the world's axes."""
    if not r.contact_wrenches:
        return []
    lines = ["  contacts: what the environment applies, at the contact point in world axes"
             + (f" (least-norm: {', '.join(r.least_norm)})" if r.least_norm else "")]
    for k, w in enumerate(r.contact_wrenches, start=1):
        force = "  ".join(f"{x:12.6f}" for x in w.world[3:])
        moment = "" if w.contact.kind == "point" else "  moment [N·m] " + "  ".join(f"{x:.6f}" for x in w.world[:3])
        lines.append(f"  {k} {w.contact.kind} on {w.contact.link}: force [N] {force}{moment}")
    return lines


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
    if s.base is not None:
        lines += format_base(s)
    lines += format_contacts(r)
    m = metrics_of(r)
    lines.append(f"  DAG: {m['edges']} edges, fill-in {m['fill_in']}, ~{m['ops']:.0f} multiply-adds")
    return "\n".join(lines)
