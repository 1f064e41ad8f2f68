"""gtdyn.io.urdf_writer: a description written to URDF reads back as the same description, and what URDF
cannot say is refused by name. (Its use against Pinocchio is in test_against_pinocchio.py.)"""

import dataclasses
import math

import numpy as np
import pytest
from references import elementary_rpy

from gtdyn.errors import ArgumentError
from gtdyn.io.urdf import read_urdf
from gtdyn.io.urdf_writer import urdf_text, write_urdf
from gtdyn.model.description import JointSpec, LinkSpec, RobotDescription
from gtdyn.model.random import random_description
from gtdyn.spatial import roll_pitch_yaw

ULPS = 1e-13  # rotations go through roll-pitch-yaw and back: a few ulps


def test_roll_pitch_yaw_inverts_urdf_convention():
    rng = np.random.default_rng(40)
    angles = [tuple(rng.uniform(-3, 3, 3)) for _ in range(200)]
    angles += [(0.3, math.pi / 2, 0.7), (-1.0, -math.pi / 2, 2.0), (0.0, 0.0, 0.0), (math.pi, 0.0, 0.0)]
    for roll, pitch, yaw in angles:
        R = elementary_rpy(roll, pitch, yaw)
        assert np.max(np.abs(elementary_rpy(*roll_pitch_yaw(R)) - R)) < ULPS


@pytest.mark.parametrize("seed", range(3))
def test_random_trees_read_back_unchanged(tmp_path, seed):
    """Off-diagonal inertias, rotated inertial and joint frames, prismatic and fixed joints: every number."""
    description = random_description(seed, 6, tree=True, prismatic=0.4, fixed=0.3)
    back = read_urdf(write_urdf(description, str(tmp_path / "r.urdf")))
    assert back.name == description.name
    assert [link.name for link in back.links] == [link.name for link in description.links]
    for a, b in zip(description.links, back.links):
        assert a.mass == b.mass and np.array_equal(a.inertia, b.inertia)  # written and read exactly
        assert np.allclose(a.inertial_origin, b.inertial_origin, rtol=0, atol=ULPS)
    assert [(j.name, j.type, j.parent, j.child) for j in back.joints] == \
           [(j.name, j.type, j.parent, j.child) for j in description.joints]
    for a, b in zip(description.joints, back.joints):
        assert np.allclose(a.origin, b.origin, rtol=0, atol=ULPS)
        if a.type != "fixed":  # a fixed joint has no axis or limits
            assert np.allclose(a.axis, b.axis, rtol=0, atol=ULPS)
            assert (a.lower, a.upper, a.effort, a.velocity) == (b.lower, b.upper, b.effort, b.velocity)


def _one_joint(**joint) -> RobotDescription:
    links = (LinkSpec("base"), LinkSpec("a", mass=1.0, inertia=np.eye(3) * 0.1))
    return RobotDescription("r", links, (JointSpec(**{"name": "j", "type": "revolute", "parent": "base", "child": "a",
                                                       **joint}),))


def test_unlimited_revolute_is_continuous_and_massless_links_have_no_inertial():
    text = urdf_text(_one_joint())
    assert 'type="continuous"' in text and "<limit" not in text
    assert '<link name="base"/>' in text
    limited = urdf_text(_one_joint(lower=-1.0, upper=2.0, effort=3.0, velocity=4.0))
    assert 'type="revolute"' in limited and '<limit lower="-1.0" upper="2.0" effort="3.0" velocity="4.0"/>' in limited


@pytest.mark.parametrize("change, message", [
    ({"type": "prismatic"}, "joint 'j' is prismatic without finite limits"),
    ({"lower": -1.0}, "joint 'j' is limited on one side only"),
    ({"lower": -1.0, "upper": 1.0}, "joint 'j' has limits but no finite effort and velocity"),
    ({"actuated": False}, "joint 'j' is passive"),
    ({"child_pose": np.diag([1.0, 1.0, 1.0, 1.0]) + np.eye(4, k=3)}, "joint 'j' places its child link away"),
])
def test_what_urdf_cannot_say_is_refused(change, message):
    with pytest.raises(ArgumentError, match=message):
        urdf_text(_one_joint(**change))


def test_closed_loops_are_refused():
    description = _one_joint()
    second = dataclasses.replace(description.joints[0], name="k")
    with pytest.raises(ArgumentError, match="links a are the child of several joints"):
        urdf_text(dataclasses.replace(description, joints=description.joints + (second,)))
