"""A planned trajectory (``gtdyn.optimize_trajectory``'s ``PlannedTrajectory``): joint positions and torques at
its knots, with the model's torque limits where it has them."""

from __future__ import annotations

import numpy as np

from gtdyn.plot.figure import tight_layout
from gtdyn.plot.trajectory import LINE_STYLES, POSITION_UNITS


def draw_plan(plan, path: str | None = None, title: str | None = None, format: str | None = None):
    """Two panels over time: q(t) and τ(t) of every joint at the knots (τ's limits dotted). Saved to ``path`` if
    given (``format`` or its extension picks the format); returns the Figure."""
    from matplotlib.figure import Figure  # not pyplot: no global figure registry, no display needed

    robot, t = plan.robot, plan.t
    fig = Figure(figsize=(9.0, 6.4))
    top, bottom = fig.subplots(2, 1, sharex=True)
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
