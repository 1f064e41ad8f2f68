"""A picture of a mechanism at a configuration: links as bars between their joints, joints as circles
(filled: actuated, open: passive, red ring: closes a loop), CoMs as dots. Planar mechanisms are drawn in their
plane; others are projected on the world x–z plane."""

from __future__ import annotations

import numpy as np

from gtdyn.kinematics.forward import forward_kinematics
from gtdyn.kinematics.loops import loop_plane_normal
from gtdyn.model.robot import Robot
from gtdyn.plot.figure import tight_layout


def _plane_basis(robot: Robot, kin) -> tuple[np.ndarray, np.ndarray]:
    """Two orthonormal in-plane axes: the first loop's plane if it is planar, else world x and z."""
    normal = loop_plane_normal(robot, kin, robot.loops[0]) if robot.loops else None
    if normal is None:
        return np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0])
    u = np.cross(normal, [0.0, 0.0, 1.0]) if abs(normal[2]) < 0.9 else np.cross(normal, [1.0, 0.0, 0.0])
    u /= np.linalg.norm(u)
    w = np.cross(normal, u)
    return (u, w) if w[2] >= 0 else (u, -w)  # keep "up" up


def joint_positions(robot: Robot, q) -> dict[str, np.ndarray]:
    """World position of every joint's axis point at configuration q."""
    kin = forward_kinematics(robot, np.asarray(q, float), np.zeros(robot.num_dofs))
    out = {}
    for joint in robot.joints:
        parent = robot.link(joint.parent)
        # a fixed base's dynamics frame is its link frame; every other body's is its CoM frame
        wTlink = (kin.wT[parent.index] if robot.is_fixed(joint.parent)
                  else kin.wT[parent.index].compose(parent.lTcom.inverse()))
        out[joint.name] = wTlink.transformFrom(joint.origin.translation())
    return out


def draw_mechanism(robot: Robot, q, path: str | None = None, title: str | None = None, ax=None):
    """Draw ``robot`` at ``q``; saves to ``path`` when given; returns the matplotlib Figure."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    q = np.asarray(q, float)
    kin = forward_kinematics(robot, q, np.zeros(robot.num_dofs))
    u, w = _plane_basis(robot, kin)
    to2d = lambda p: np.array([p @ u, p @ w])  # noqa: E731
    joints = {name: to2d(p) for name, p in joint_positions(robot, q).items()}
    if ax is None:
        fig = Figure(figsize=(7.0, 5.0))
        ax = fig.subplots()
    else:
        fig = ax.figure
    colours = iter(["#2196f3", "#4caf50", "#ff9800", "#9c27b0", "#795548", "#009688", "#e91e63", "#607d8b"])
    for link in robot.links:
        ends = [joints[j.name] for j in robot.joints_into(link.name) + robot.joints_out_of(link.name)]
        com = to2d(kin.wT[link.index].translation())
        colour = next(colours, "#444444")
        for k, a in enumerate(ends):  # a bar, or the outline of a plate with three or more joints
            for b in ends[k + 1:]:
                ax.plot([a[0], b[0]], [a[1], b[1]], color=colour, linewidth=5, alpha=0.8, solid_capstyle="round")
        ax.plot(*com, "o", color="black", markersize=3)
        ax.annotate(link.name, com, textcoords="offset points", xytext=(4, 4), fontsize=8, color=colour)
    for joint in robot.joints:
        x, y = joints[joint.name]
        ax.plot(x, y, "o", markersize=10, markerfacecolor="black" if joint.actuated else "white",
                markeredgecolor="red" if joint.closes_loop else "black", markeredgewidth=2)
        ax.annotate(joint.name, (x, y), textcoords="offset points", xytext=(6, -12), fontsize=8)
    base = [joints[j.name] for j in robot.joints_out_of(robot.base.name)]
    if base and not robot.floating_base:  # the ground, under the joints on a fixed base
        xs = [p[0] for p in base]
        ax.plot([min(xs) - 0.1, max(xs) + 0.1], [min(p[1] for p in base) - 0.05] * 2, color="#666666", linewidth=3)
    ax.legend(handles=[Line2D([], [], marker="o", color="w", markerfacecolor="black", markeredgecolor="black",
                              label="actuated joint"),
                       Line2D([], [], marker="o", color="w", markerfacecolor="white", markeredgecolor="black",
                              label="passive joint"),
                       Line2D([], [], marker="o", color="w", markerfacecolor="white", markeredgecolor="red",
                              label="closes a loop"),
                       Line2D([], [], marker="o", color="w", markerfacecolor="black", markersize=4,
                              label="centre of mass")],
              fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    ax.set_aspect("equal")
    loops = len(robot.loop_joints)
    ax.set_title(title or f"{robot.name}: {robot.num_dofs} joints, {loops} loop{'s' if loops != 1 else ''}",
                 fontsize=10)
    ax.margins(0.15)
    if path:
        tight_layout(fig)
        fig.savefig(path, dpi=120)
    return fig
