"""A picture of a mechanism at a configuration: links as bars between their joints, joints as circles
(filled: actuated, open: passive, red ring: closes a loop), CoMs as dots. Planar mechanisms are drawn in their
plane (a planar loop's, or world x–z); others as seen from the front, left and above, so that limbs side by
side stay apart."""

from __future__ import annotations

import numpy as np

from gtdyn.arguments import pose_argument
from gtdyn.kinematics.forward import forward_kinematics
from gtdyn.kinematics.loops import loop_plane_normal
from gtdyn.model.robot import Robot
from gtdyn.plot.figure import tight_layout


def _plane_basis(robot: Robot, kin, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two orthonormal axes of the picture: a planar loop's plane; else world x and z when the mechanism lies in
    that plane; else the view from the front, left and above (the x–z projection would put a legged robot's
    left and right legs on top of each other). "Up" stays up."""
    normal = loop_plane_normal(robot, kin, robot.loops[0]) if robot.loops else None
    if normal is None:
        if len(points) < 2 or np.ptp(points[:, 1]) < 1e-9:  # in the x–z plane: drawn as it is
            return np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0])
        normal = np.array([1.0, -0.6, 0.45])  # the viewer's direction: front left, a little above
        normal /= np.linalg.norm(normal)
    u = np.cross(normal, [0.0, 0.0, 1.0]) if abs(normal[2]) < 0.9 else np.cross(normal, [1.0, 0.0, 0.0])
    u /= np.linalg.norm(u)
    w = np.cross(normal, u)
    return (u, w) if w[2] >= 0 else (u, -w)  # keep "up" up


def joint_positions(robot: Robot, q, base_pose=None) -> dict[str, np.ndarray]:
    """World position of every joint's axis point at configuration q (a floating base at ``base_pose``)."""
    kin = forward_kinematics(robot, np.asarray(q, float), np.zeros(robot.num_dofs), base_pose)
    return {joint.name: _link_pose(robot, kin, joint.parent).transformFrom(joint.origin.translation())
            for joint in robot.joints}


def _link_pose(robot: Robot, kin, name: str):
    """wTl of a link frame: a fixed base's dynamics frame is its link frame; every other body's is its CoM frame."""
    link = robot.link(name)
    return kin.wT[link.index] if robot.is_fixed(name) else kin.wT[link.index].compose(link.lTcom.inverse())


def _tips(robot: Robot, kin) -> dict[str, np.ndarray]:
    """Per moving link with no joint out of it, the world position of the frame merged into it that lies farthest
    from its joint (a foot, a hand, a flange): where the bar of a leaf link ends."""
    out = {}
    for link in robot.links:
        if robot.joints_out_of(link.name):
            continue
        wTl = _link_pose(robot, kin, link.name)
        frames = [bTf.translation() for body, bTf in robot.frames.values() if body == link.name]
        far = max(frames, key=lambda p: float(np.linalg.norm(p)), default=None)
        if far is not None and np.linalg.norm(far) > 1e-9:
            out[link.name] = wTl.transformFrom(far)
    return out


def draw_mechanism(robot: Robot, q, path: str | None = None, title: str | None = None, ax=None, base_pose=None):
    """Draw ``robot`` at ``q`` (a floating base at ``base_pose``, world ← root link; identity if None): bars between
    each link's joints, a leaf link's bar out to its farthest frame (a foot); link names only when there are few.
    Joint names never overlap: joints drawn at one point share a label, "FL_HAA / FL_HFE" (``_label_joints``).
    Saves to ``path`` when given; returns the matplotlib Figure."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    q = np.asarray(q, float)
    if base_pose is not None:
        base_pose = pose_argument("base_pose", base_pose)
    kin = forward_kinematics(robot, q, np.zeros(robot.num_dofs), base_pose)
    world = joint_positions(robot, q, base_pose)
    tips = _tips(robot, kin)
    u, w = _plane_basis(robot, kin, np.array([*world.values(), *tips.values()]))

    def to2d(p):
        return np.array([p @ u, p @ w])

    joints = {name: to2d(p) for name, p in world.items()}
    name_links = len(robot.links) <= 8  # more names than that only hide the picture
    if ax is None:
        fig = Figure(figsize=(7.0, 5.0))
        ax = fig.subplots()
    else:
        fig = ax.figure
    colours = iter(["#2196f3", "#4caf50", "#ff9800", "#9c27b0", "#795548", "#009688", "#e91e63", "#607d8b"])
    for link in robot.links:
        ends = [joints[j.name] for j in robot.joints_into(link.name) + robot.joints_out_of(link.name)]
        ends += [to2d(tips[link.name])] if link.name in tips else []
        com = to2d(kin.wT[link.index].translation())
        colour = next(colours, "#444444")
        for k, a in enumerate(ends):  # a bar, or the outline of a plate with three or more joints
            for b in ends[k + 1:]:
                ax.plot([a[0], b[0]], [a[1], b[1]], color=colour, linewidth=5, alpha=0.8, solid_capstyle="round")
        ax.plot(*com, "o", color="black", markersize=3)
        if name_links:
            ax.annotate(link.name, com, textcoords="offset points", xytext=(4, 4), fontsize=8, color=colour)
    for joint in robot.joints:
        x, y = joints[joint.name]
        ax.plot(x, y, "o", markersize=_JOINT_MARKER, markerfacecolor="black" if joint.actuated else "white",
                markeredgecolor="red" if joint.closes_loop else "black", markeredgewidth=2)
    base = [joints[j.name] for j in robot.joints_out_of(robot.base.name)]
    if robot.floating_base:  # the free base: a plate between the joints on it
        for k, a in enumerate(base):
            for b in base[k + 1:]:
                ax.plot([a[0], b[0]], [a[1], b[1]], color="#333333", linewidth=3, alpha=0.6, solid_capstyle="round")
    elif base:  # the ground, under the joints on a fixed base
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
    labels = _label_joints(ax, joints)
    if path:
        tight_layout(fig)
        for label in labels:  # the layout moved the joints on the page: lay their labels out again
            label.remove()
        _label_joints(ax, joints)
        fig.savefig(path, dpi=120)
    return fig


_JOINT_MARKER = 10  # a joint's circle, points across
_LABEL_GID = "joint label"  # gid of every joint label (an Annotation), to tell them from the links' names


def _label_spots() -> list[list[tuple[float, float, str]]]:
    """Where a joint's label may go, in rings around the joint, nearest first, each best first: (x, y) in points
    from the joint and the text's horizontal alignment. Below right (the usual place), above right, below left,
    above left; then the same a line farther out."""
    return [[(dx, dy, "left" if dx > 0 else "right") for dy in (-12 - 10 * ring, 4 + 10 * ring) for dx in (6, -6)]
            for ring in range(4)]


def _label_joints(ax, joints: dict[str, np.ndarray]) -> list:
    """Name the joints (2-D positions, in drawing order) so that no two names overlap. Joints whose circles
    overlap on the drawing (a hip's abduction and flexion axes through one point or nearly, a spherical wrist)
    get one label, "A / B", three names a line. A label stays in the usual place, below right, unless a label
    already placed or another joint's circle is in the way; then it goes to the nearest ring of
    ``_label_spots`` with a spot free of labels, and there to the spot most clear of the circles. Returns the
    labels (Annotations)."""
    if not joints:
        return []
    ax.get_xlim(), ax.get_ylim()  # settle the autoscaled limits and the equal-aspect box: where joints are drawn
    ax.apply_aspect()
    names = list(joints)
    at = ax.transData.transform(np.array([joints[n] for n in names]))
    half = 0.5 * _JOINT_MARKER * ax.figure.dpi / 72.0  # a circle's radius in pixels
    groups: list[list[int]] = []  # joints whose circles overlap, joined transitively
    for k in range(len(names)):
        near = [g for g in groups if any(np.hypot(*(at[k] - at[i])) < 2 * half for i in g)]
        for g in near:
            groups.remove(g)
        groups.append(sorted([k, *(i for g in near for i in g)]))
    groups.sort(key=lambda g: g[0])
    circles = [(*p - half, *p + half) for p in at]  # each joint's circle, as a box in pixels

    def overlap(box, others) -> float:
        return sum(max(0.0, min(box.x1, o[2]) - max(box.x0, o[0])) * max(0.0, min(box.y1, o[3]) - max(box.y0, o[1]))
                   for o in others)

    placed: list[tuple[float, float, float, float]] = []
    labels = []
    for g in groups:
        anchor = np.mean([joints[names[i]] for i in g], axis=0)
        text = "\n".join(" / ".join(names[i] for i in g[k:k + 3]) for k in range(0, len(g), 3))
        label = ax.annotate(text, anchor, textcoords="offset points", xytext=(6, -12),
                            fontsize=8, gid=_LABEL_GID)
        others = [c for i, c in enumerate(circles) if i not in g]
        best = None
        for ring, spots in enumerate(_label_spots()):
            for spot in spots:
                label.xyann = spot[:2]
                label.set_horizontalalignment(spot[2])
                box = label.get_window_extent().padded(1.0)
                score = (overlap(box, placed), ring, overlap(box, others))
                if best is None or score < best[0]:
                    best = (score, spot, box)
                if score[0] == 0 and score[2] == 0:
                    break
            if best[0][0] == 0:
                break
        _, (dx, dy, ha), box = best
        label.xyann = (dx, dy)
        label.set_horizontalalignment(ha)
        placed.append((box.x0, box.y0, box.x1, box.y1))
        labels.append(label)
    return labels
