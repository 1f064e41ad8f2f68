"""Every factor's analytic Jacobians against central differences, at ≥ 50 random points each.

Random robots carry off-diagonal inertias, rotated inertial frames and prismatic joints. The tolerance is
1e-6 relative to the Jacobian's scale: central differences with step 1e-6 have truncation error O(h²)·|f'''|
~1e-12 and round-off O(ε/h)·|f| ~1e-10·|f|, so anything above ~1e-7 is a wrong derivative, not noise.
"""

import gtsam
import numpy as np
import pytest

from gtdyn import keys as K
from gtdyn.factors import (MinTorqueFactor, PlanarFactor, PoseFactor, TorqueFactor, TwistAccelFactor, TwistFactor,
                           WrenchFactor)
from gtdyn.model.random import random_robot

POINTS = 50
STEP = 1e-6
TOL = 1e-6


def numerical_jacobian(factor, values: gtsam.Values, key: int) -> np.ndarray:
    dim = K.dim(key)
    columns = []
    for i in range(dim):
        delta = np.zeros(dim)
        delta[i] = STEP
        plus, minus = gtsam.VectorValues(), gtsam.VectorValues()
        plus.insert(key, delta)
        minus.insert(key, -delta)
        e_plus = factor.unwhitenedError(values.retract(plus))
        e_minus = factor.unwhitenedError(values.retract(minus))
        columns.append((e_plus - e_minus) / (2 * STEP))
    return np.column_stack(columns)


def analytic_jacobians(factor, values: gtsam.Values) -> dict[int, np.ndarray]:
    linear = gtsam.JacobianFactor(factor.linearize(values))
    A, _ = linear.jacobianUnweighted()
    out, col = {}, 0
    for key in factor.keys():
        d = K.dim(key)
        out[key] = A[:, col:col + d]
        col += d
    return out


def check(factor, values):
    analytic = analytic_jacobians(factor, values)
    assert set(analytic) == set(factor.keys())
    for key, H in analytic.items():
        numeric = numerical_jacobian(factor, values, key)
        scale = max(1.0, np.max(np.abs(numeric)))
        assert np.max(np.abs(H - numeric)) < TOL * scale, f"∂e/∂{K.label(key)} wrong"


def random_values(rng, entries: dict[int, str]) -> gtsam.Values:
    values = gtsam.Values()
    for key in entries:
        if K.kind(key) == "pose":
            values.insert(key, gtsam.Pose3(gtsam.Rot3.Expmap(rng.normal(size=3)), rng.normal(size=3)))
        else:
            values.insert(key, rng.normal(size=K.dim(key)) * (2.0 if K.dim(key) == 1 else 1.0))
    return values


@pytest.fixture(params=range(POINTS))
def point(request):
    """A random tree robot (≥ 1 prismatic joint likely) and a random joint/link on it, per point."""
    rng = np.random.default_rng(1000 + request.param)
    robot = random_robot(rng, n=5, tree=True, prismatic=0.4)
    return rng, robot


def test_twist_factor(point):
    rng, robot = point
    joint = robot.joints[int(rng.integers(robot.num_dofs))]
    p = robot.link(joint.parent).index
    Vp = None if p == 0 else K.twist_key(p)
    f = TwistFactor(joint, K.twist_key(joint.index), Vp, K.joint_angle_key(joint.index), K.joint_vel_key(joint.index))
    check(f, random_values(rng, dict.fromkeys(f.keys())))


def test_twist_accel_factor(point):
    rng, robot = point
    joint = robot.joints[int(rng.integers(robot.num_dofs))]
    p, j = robot.link(joint.parent).index, joint.index
    Ap = None if p == 0 else K.twist_accel_key(p)
    f = TwistAccelFactor(joint, K.twist_accel_key(j), Ap, K.joint_angle_key(j), K.joint_vel_key(j),
                         K.joint_accel_key(j), K.twist_key(j))
    check(f, random_values(rng, dict.fromkeys(f.keys())))


def test_wrench_factor(point):
    rng, robot = point
    # prefer a link with children so the child-joint terms are exercised
    links = sorted(robot.links, key=lambda link: -len(robot.child_joints(link.name)))
    link = links[int(rng.integers(0, 2))]
    i = link.index
    children = [(c, K.wrench_key(c.index), K.joint_angle_key(c.index)) for c in robot.child_joints(link.name)]
    f = WrenchFactor(link, K.twist_accel_key(i), K.twist_key(i), K.pose_key(i), K.wrench_key(i), children,
                     gravity=rng.normal(size=3) * 5, external=rng.normal(size=6))
    check(f, random_values(rng, dict.fromkeys(f.keys())))


def test_torque_factor(point):
    rng, robot = point
    joint = robot.joints[int(rng.integers(robot.num_dofs))]
    f = TorqueFactor(joint, K.wrench_key(joint.index), K.torque_key(joint.index))
    check(f, random_values(rng, dict.fromkeys(f.keys())))


def test_pose_factor(point):
    rng, robot = point
    joint = robot.joints[int(rng.integers(robot.num_dofs))]
    p = robot.link(joint.parent).index
    Tp = None if p == 0 else K.pose_key(p)
    f = PoseFactor(joint, Tp, K.pose_key(joint.index), K.joint_angle_key(joint.index))
    values = random_values(rng, dict.fromkeys(f.keys()))
    check(f, values)


def test_wrench_points_cover_children_and_prismatic():
    """The random points above really include multi-child links and prismatic joints."""
    robots = [random_robot(np.random.default_rng(1000 + k), n=5, tree=True, prismatic=0.4) for k in range(POINTS)]
    assert sum(any(j.type == "prismatic" for j in r.joints) for r in robots) > POINTS // 2
    most_children = [max(len(r.child_joints(link.name)) for link in r.links) for r in robots]
    assert sum(c >= 1 for c in most_children) > 3 * POINTS // 4
    assert sum(c >= 2 for c in most_children) > POINTS // 4


def test_wrench_factor_with_several_joints_into_the_link(point):
    """Where a loop closes on a link, several joint wrenches enter its eq. 6."""
    rng, robot = point
    link = robot.links[int(rng.integers(len(robot.links)))]
    i = link.index
    children = [(c, K.wrench_key(c.index), K.joint_angle_key(c.index)) for c in robot.child_joints(link.name)]
    F_in = [K.wrench_key(i), K.wrench_key(100 + i)]  # its tree joint and a loop joint closing on it
    f = WrenchFactor(link, K.twist_accel_key(i), K.twist_key(i), K.pose_key(i), F_in, children,
                     gravity=rng.normal(size=3) * 5, external=rng.normal(size=6))
    check(f, random_values(rng, dict.fromkeys(f.keys())))


def test_planar_factor(point):
    rng, _ = point
    normal = rng.normal(size=3)
    f = PlanarFactor(K.wrench_key(1), K.pose_key(1), normal)
    check(f, random_values(rng, dict.fromkeys(f.keys())))


def test_minimum_torque_factor(point):
    rng, _ = point
    f = MinTorqueFactor(K.torque_key(1))
    check(f, random_values(rng, dict.fromkeys(f.keys())))


def test_joint_factors_of_a_loop_closing_onto_the_base(point):
    """A loop joint whose child is the fixed base: the child end has no variables (issue 9 §3)."""
    rng, robot = point
    joint = robot.joints[int(rng.integers(robot.num_dofs))]
    p, j = robot.link(joint.parent).index, joint.index
    parent = (None, None, None) if p == 0 else (K.pose_key(p), K.twist_key(p), K.twist_accel_key(p))
    q, v, a = K.joint_angle_key(j), K.joint_vel_key(j), K.joint_accel_key(j)
    for f in (PoseFactor(joint, parent[0], None, q), TwistFactor(joint, None, parent[1], q, v),
              TwistAccelFactor(joint, None, parent[2], q, v, a, None), PlanarFactor(K.wrench_key(j), None, rng.normal(size=3))):
        check(f, random_values(rng, dict.fromkeys(f.keys())))
