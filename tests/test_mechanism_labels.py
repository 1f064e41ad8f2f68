"""draw_mechanism's joint labels: joints at one point (a legged robot's hip abduction and flexion axes, a
spherical wrist) had their names drawn on top of each other, unreadable. Now joints whose circles overlap on the
drawing share one label, "A / B", and a label that would cover another moves beside its joint."""

import itertools
import re
from pathlib import Path

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

import gtdyn  # noqa: E402
from gtdyn.io.load import bundled_path, example_robot_path  # noqa: E402

STAND = np.tile([0.0, 0.8, -1.6], 4)  # HAA, HFE, KFE on each leg: knees bent


def _joint_labels(fig) -> dict:
    """The joint labels on the drawing's axes, text → rendered box (Agg, after a full draw)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    fig.canvas.draw()
    texts = [t for t in fig.axes[0].texts if t.get_gid() == "joint label"]
    return {t.get_text(): t.get_window_extent() for t in texts}


def _assert_readable(fig, robot) -> dict:
    """No two joint labels overlap, and every joint is named exactly once. Returns the labels."""
    labels = _joint_labels(fig)
    for (a, box_a), (b, box_b) in itertools.combinations(labels.items(), 2):
        assert not box_a.overlaps(box_b), f"joint labels {a!r} and {b!r} overlap: {box_a} {box_b}"
    named = [name for text in labels for name in re.split(r" / |\n", text)]
    assert sorted(named) == sorted(j.name for j in robot.joints)
    return labels


def _hips_through_one_point(tmp_path: Path) -> Path:
    """The bundled quadruped with each hip's flexion axis moved onto its abduction axis' point, as on robots whose
    two hip axes cross: HAA and HFE coincide."""
    text = Path(bundled_path("quadruped")).read_text()
    moved, count = re.subn(r'(<joint name="\w\w_HFE" type="revolute">\s*<parent link="\w+"/>\s*<child link="\w+"/>\s*)'
                           r'<origin xyz="0 -?0\.05 0"', r'\1<origin xyz="0 0 0"', text)
    assert count == 4
    path = tmp_path / "quadruped_hips.urdf"
    path.write_text(moved)
    return path


def test_coincident_hip_joints_share_one_label(tmp_path):
    robot = gtdyn.load_robot(_hips_through_one_point(tmp_path), base="floating")
    fig = gtdyn.draw_mechanism(robot, STAND, str(tmp_path / "hips.png"), base_pose=np.eye(4))
    labels = _assert_readable(fig, robot)
    for leg in ("FL", "FR", "RL", "RR"):
        assert f"{leg}_HAA / {leg}_HFE" in labels and f"{leg}_KFE" in labels
    assert len(labels) == 8


@pytest.mark.parametrize("name, base", [("quadruped", "floating"), ("puma560", None), ("five_bar", None)])
def test_bundled_robots_joint_labels_do_not_overlap(tmp_path, name, base):
    """The quadruped's hip joints are 5 cm apart (their circles apart, their names not); the PUMA's wrist joints
    5 and 6 coincide; the five-bar has nothing to untangle."""
    robot = gtdyn.load_robot(name, base=base)
    q = STAND if robot.num_dofs == 12 else np.zeros(robot.num_dofs)
    pose = {"base_pose": np.eye(4)} if robot.floating_base else {}
    _assert_readable(gtdyn.draw_mechanism(robot, q, str(tmp_path / f"{name}.png"), **pose), robot)
    _assert_readable(gtdyn.draw_mechanism(robot, q, **pose), robot)  # no file: no tight layout
    if name == "puma560":
        assert "joint5 / joint6" in _joint_labels(gtdyn.draw_mechanism(robot, q))


def test_labels_stay_in_the_usual_place_when_nothing_is_in_the_way():
    robot = gtdyn.load_robot("five_bar")
    fig = gtdyn.draw_mechanism(robot, np.zeros(robot.num_dofs))
    labels = [t for t in fig.axes[0].texts if t.get_gid() == "joint label"]
    assert len(labels) == len(robot.joints)
    assert all(tuple(t.xyann) == (6, -12) and t.get_horizontalalignment() == "left" for t in labels)


def test_labels_on_a_callers_axes():
    import matplotlib.pyplot as plt

    robot = gtdyn.load_robot("quadruped", base="floating")
    fig, ax = plt.subplots(figsize=(4.0, 3.0))  # a small picture: the hips' names crowd more
    try:
        assert gtdyn.draw_mechanism(robot, STAND, ax=ax, base_pose=np.eye(4)) is fig
        _assert_readable(fig, robot)
    finally:
        plt.close(fig)


@pytest.mark.skipif(example_robot_path("solo12") is None, reason="example-robot-data is not installed")
def test_solo12_hips_are_readable(tmp_path):
    robot = gtdyn.load_robot("solo12", base="floating")
    fig = gtdyn.draw_mechanism(robot, STAND, str(tmp_path / "solo.png"), base_pose=np.eye(4))
    labels = _assert_readable(fig, robot)
    assert "FL_HAA / FL_HFE" in labels  # 1.4 cm apart: one blob on the drawing, one label
