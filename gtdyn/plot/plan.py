"""A planned trajectory (``gtdyn.optimize_trajectory``'s ``PlannedTrajectory``): joint positions and torques at
its knots, with the model's torque limits where it has them; on a floating base also the base's position and
orientation and the ground forces on the feet."""

from __future__ import annotations

import numpy as np

from gtdyn.plot.figure import tight_layout
from gtdyn.plot.trajectory import LINE_STYLES, POSITION_UNITS, draw_base


def draw_plan(plan, path: str | None = None, title: str | None = None, format: str | None = None):
    """Panels over time: q(t) and τ(t) of every joint at the knots (τ's limits dotted); on a floating base between
    them the base's position and orientation (as ``draw_trajectory`` draws them) and, with contacts, each foot's
    ground force: its normal (vertical) part solid, the tangential part's size dashed. Saved to ``path`` if
    given (``format`` or its extension picks the format); returns the Figure."""
    from matplotlib.figure import Figure  # not pyplot: no global figure registry, no display needed

    robot, t = plan.robot, plan.t
    floating = plan.base_pose is not None
    forces = plan.contact_forces or {}
    panels = 2 + (2 if floating else 0) + (1 if forces else 0)
    fig = Figure(figsize=(9.0, 3.2 * panels))
    axes = fig.subplots(panels, 1, sharex=True)
    top, bottom = axes[0], axes[-1]
    if floating:
        draw_base(axes[1], axes[2], t, np.asarray(plan.base_pose))
    if forces:
        _draw_forces(axes[3], t, forces)
    for i, joint in enumerate(robot.joints):
        style = {"color": f"C{i % 10}", "ls": LINE_STYLES[i // 10 % len(LINE_STYLES)], "lw": 1.2}
        unit = POSITION_UNITS.get(joint.type, "")
        top.plot(t, plan.q[:, i], marker=".", ms=3, label=f"{joint.name} [{unit}]" if unit else joint.name, **style)
        bottom.plot(t, plan.tau[:, i], marker=".", ms=3, **style)
        if np.isfinite(joint.effort) and joint.actuated:
            for bound in (-joint.effort, joint.effort):
                bottom.axhline(bound, color=style["color"], lw=0.8, ls=":")
    top.set_ylabel("q")
    top.set_title("joint positions at the knots", fontsize=9)
    top.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    bottom.set_ylabel("τ [N·m or N]")
    bottom.set_xlabel("t [s]")
    bottom.set_title("torques (dotted: limits)", fontsize=9)
    fig.suptitle(title or f"{robot.name}: {len(t)} knots, {plan.collocation}", fontsize=10)
    tight_layout(fig)
    if path is not None:
        fig.savefig(path, dpi=120, format=format)
    return fig


def _draw_forces(ax, t, forces: dict) -> None:
    """Each foot's ground force (world axes): f_z solid, |(f_x, f_y)| dashed, one colour per foot."""
    for k, (frame, f) in enumerate(forces.items()):
        ax.plot(t, f[:, 2], marker=".", ms=3, lw=1.2, color=f"C{k % 10}", label=f"{frame}: normal")
        ax.plot(t, np.hypot(f[:, 0], f[:, 1]), lw=1.0, ls="--", color=f"C{k % 10}", label=f"{frame}: tangential")
    ax.set_ylabel("ground force [N]")
    ax.set_title("ground forces on the feet (solid: normal; dashed: tangential size)", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
