"""A simulated trajectory (``gtdyn.simulate``'s ``Trajectory``): joint positions and the energy's drift in time."""

from __future__ import annotations

import math
import textwrap

import numpy as np

from gtdyn.plot.figure import tight_layout

POSITION_UNITS = {"revolute": "rad", "prismatic": "m"}
LEGEND_ROWS = 14  # joints per legend column
LINE_STYLES = ("-", "--", ":", "-.")  # one per ten joints: matplotlib's ten colours repeat after that


def draw_trajectory(trajectory, path: str | None = None, title: str | None = None, format: str | None = None):
    """Panels over time: q(t) of every joint (legend: joint names with their units), a floating base's position
    and orientation (roll, pitch, yaw) when it has one, and the total energy's change E(t) − E(0) in J. Saved to
    ``path`` (``format``, or its extension picks the format; given, the file is written at exactly ``path``) if
    given; returns the Figure."""
    from matplotlib.figure import Figure  # not pyplot: no global figure registry, no display needed

    robot, t = trajectory.robot, trajectory.t
    units = [POSITION_UNITS.get(j.type, "") for j in robot.joints]
    columns = max(1, math.ceil(len(units) / LEGEND_ROWS))
    floating = getattr(trajectory, "base_pose", None) is not None
    fig = Figure(figsize=(8.0 + 1.6 * columns, 9.6 if floating else 6.4))
    axes = fig.subplots(4 if floating else 2, 1, sharex=True)
    top, bottom = axes[0], axes[-1]
    if floating:
        draw_base(axes[1], axes[2], t, np.asarray(trajectory.base_pose))
    for i, (name, unit) in enumerate(zip(robot.joint_names, units)):
        top.plot(t, trajectory.q[:, i], lw=1.2, color=f"C{i % 10}", ls=LINE_STYLES[i // 10 % len(LINE_STYLES)],
                 label=f"{name} [{unit}]" if unit else name)
    kinds = sorted(set(units) - {""})
    top.set_ylabel(f"q [{' or '.join(kinds)}]" if kinds else "q")
    top.set_title("joint positions", fontsize=9)
    top.legend(fontsize=7, ncol=columns, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    energy = trajectory.energy
    change = energy - energy[0]
    bottom.plot(t, change, color="k", lw=1.2)
    bottom.axhline(0.0, color="grey", lw=0.8, ls=":")
    bottom.set_ylabel("E(t) − E(0) [J]")
    bottom.set_xlabel("t [s]")
    bottom.set_title(f"total energy (E(0) = {energy[0]:.6g} J): max |E − E(0)| = {np.max(np.abs(change)):.3g} J",
                     fontsize=9, pad=14)
    bottom.ticklabel_format(axis="y", style="sci", scilimits=(-3, 4), useOffset=False)
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.set_xlim(t[0], t[-1])
    if title:
        fig.suptitle(textwrap.fill(title, 110), fontsize=10)
    tight_layout(fig)
    if path is not None:
        fig.savefig(path, dpi=120, format=format)
    return fig


def draw_base(position_axes, orientation_axes, t, poses: np.ndarray) -> None:
    """A floating base's root link: its position (m) and its orientation as roll, pitch, yaw about fixed axes (rad,
    unwrapped so that a turn past ±π stays continuous), from the poses world ← root link."""
    for k, axis in enumerate("xyz"):
        position_axes.plot(t, poses[:, k, 3], lw=1.2, color=f"C{k}", label=axis)
    position_axes.set_ylabel("base position [m]")
    position_axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    R = poses[:, :3, :3]
    angles = {"roll": np.arctan2(R[:, 2, 1], R[:, 2, 2]), "pitch": -np.arcsin(np.clip(R[:, 2, 0], -1.0, 1.0)),
              "yaw": np.arctan2(R[:, 1, 0], R[:, 0, 0])}
    for k, (name, angle) in enumerate(angles.items()):
        orientation_axes.plot(t, np.unwrap(angle), lw=1.2, color=f"C{k + 3}", label=name)
    orientation_axes.set_ylabel("base orientation [rad]")
    orientation_axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
