"""A floating base's pose step T · exp ξ (``gtdyn.compiled.pose_step``), the one the native time loop and the Python
stepper share, against gtsam's ``Pose3.compose`` and ``Pose3.Expmap``."""

import gtsam
import numpy as np
import pytest

from gtdyn.compiled.drnea import SMALL_ANGLE
from gtdyn.compiled.pose_step import PoseStep

EPS = np.finfo(float).eps


@pytest.mark.parametrize("angle", [0.0, 1e-9, 0.99 * SMALL_ANGLE, 1.01 * SMALL_ANGLE, 0.05, 1.3])
def test_the_pose_step_is_gtsams_compose_of_its_expmap(angle):
    rng = np.random.default_rng(7)
    step = PoseStep()
    for _ in range(20):
        start = gtsam.Pose3(gtsam.Rot3.Expmap(rng.normal(size=3)), rng.uniform(-1, 1, 3))
        axis = rng.normal(size=3)
        xi = np.concatenate([angle * axis / np.linalg.norm(axis), rng.uniform(-1, 1, 3)])
        T = np.ascontiguousarray(start.matrix())
        moved = step.moved(T, xi)
        expected = start.compose(gtsam.Pose3.Expmap(xi)).matrix()
        # entries of size ≤ 2 from sums of three products of the exponential's (each a few ulps from gtsam's, see
        # test_drnea) with the start's: 16ε
        assert np.allclose(moved, expected, rtol=0, atol=16 * EPS), (angle, np.abs(moved - expected).max())
        assert np.array_equal(T, start.matrix())  # moved() leaves its argument alone; move() moves in place
        step.move(T, xi)
        assert np.array_equal(T, moved) and np.array_equal(T[3], [0, 0, 0, 1])


def test_a_zero_step_leaves_the_pose_as_it_is():
    start = gtsam.Pose3(gtsam.Rot3.Expmap([0.3, -1.2, 2.0]), np.array([1.5, -0.25, 3.0]))
    T = np.ascontiguousarray(start.matrix())
    PoseStep().move(T, np.zeros(6))
    assert np.array_equal(T, start.matrix())
