"""Every factor's analytic Jacobians against central differences, at ≥ 50 random points each.

Random robots carry off-diagonal inertias, rotated inertial frames and prismatic joints. The tolerance is
1e-6 relative to the Jacobian's scale: central differences with step 1e-6 have truncation error O(h²)·|f'''|
~1e-12 and round-off O(ε/h)·|f| ~1e-10·|f|, so anything above ~1e-7 is a wrong derivative, not noise.
"""

import dataclasses

import gtsam
import numpy as np
import pytest

from gtdyn import keys as K
from gtdyn.errors import ArgumentError
from gtdyn.factors import (
    ContactFactor,
    MinTorqueFactor,
    PlanarFactor,
    PoseFactor,
    PoseIntegrationFactor,
    TorqueFactor,
    TransmissionFactor,
    TwistAccelFactor,
    TwistFactor,
    WrenchFactor,
)
from gtdyn.factors.integration import right_jacobian
from gtdyn.model.random import random_robot
from gtdyn.model.robot import Transmission

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
    for key in (K.torque_key(1), K.contact_key(2, 3)):  # a torque, or a contact force's least norm
        f = MinTorqueFactor(key)
        check(f, random_values(rng, dict.fromkeys(f.keys())))


def test_joint_factors_of_a_loop_closing_onto_the_base(point):
    """A loop joint whose child is the fixed base: the child end has no variables (issue 9 §3)."""
    rng, robot = point
    joint = robot.joints[int(rng.integers(robot.num_dofs))]
    p, j = robot.link(joint.parent).index, joint.index
    parent = (None, None, None) if p == 0 else (K.pose_key(p), K.twist_key(p), K.twist_accel_key(p))
    q, v, a = K.joint_angle_key(j), K.joint_vel_key(j), K.joint_accel_key(j)
    for f in (PoseFactor(joint, parent[0], None, q), TwistFactor(joint, None, parent[1], q, v),
              TwistAccelFactor(joint, None, parent[2], q, v, a, None),
              PlanarFactor(K.wrench_key(j), None, rng.normal(size=3))):
        check(f, random_values(rng, dict.fromkeys(f.keys())))


def random_pose(rng, scale: float = 1.0) -> gtsam.Pose3:
    return gtsam.Pose3(gtsam.Rot3.Expmap(rng.normal(size=3) * scale), rng.normal(size=3) * scale)


def test_wrench_factor_of_a_floating_base_with_contacts(point):
    """A floating base's eq. 6: the wrench F0 of its environment in the place of a joint's, its child joints,
    and a point and a surface contact on it (their force and wrench variables)."""
    rng, robot = point
    M = rng.normal(size=(3, 3))
    base = dataclasses.replace(robot.base, mass=float(rng.uniform(1, 5)), inertia=M @ M.T + 0.1 * np.eye(3))
    children = [(c, K.wrench_key(c.index), K.joint_angle_key(c.index)) for c in robot.child_joints(base.name)]
    contacts = [(random_pose(rng), 3, K.contact_key(1, 3)), (random_pose(rng), 6, K.contact_key(2, 6))]
    f = WrenchFactor(base, K.twist_accel_key(0), K.twist_key(0), K.pose_key(0), [K.wrench_key(0)], children,
                     gravity=rng.normal(size=3) * 5, external=rng.normal(size=6), contacts=contacts)
    assert len(f.keys()) == 4 + 2 * len(children) + 2
    check(f, random_values(rng, dict.fromkeys(f.keys())))


def test_joint_factors_on_a_floating_base(point):
    """A joint whose parent is a floating base: the base's pose, twist and acceleration are variables."""
    rng, robot = point
    joint = robot.child_joints(robot.base.name)[0]
    j = joint.index
    q, v, a = K.joint_angle_key(j), K.joint_vel_key(j), K.joint_accel_key(j)
    for f in (PoseFactor(joint, K.pose_key(0), K.pose_key(j), q),
              TwistFactor(joint, K.twist_key(j), K.twist_key(0), q, v),
              TwistAccelFactor(joint, K.twist_accel_key(j), K.twist_accel_key(0), q, v, a, K.twist_key(j))):
        check(f, random_values(rng, dict.fromkeys(f.keys())))


def test_torque_factor_with_transmissions_and_armature(point):
    """Eq. 7 with the constraint forces of two transmissions (shares 1 and −ratio) and an armature's J q̈."""
    rng, robot = point
    joint = dataclasses.replace(robot.joints[int(rng.integers(robot.num_dofs))], armature=float(rng.uniform(0.1, 2)))
    j = joint.index
    f = TorqueFactor(joint, K.wrench_key(j), K.torque_key(j),
                     [(K.transmission_key(1), 1.0), (K.transmission_key(2), -float(rng.normal() * 5))],
                     K.joint_accel_key(j))
    assert list(f.keys()) == [K.wrench_key(j), K.torque_key(j), K.transmission_key(1), K.transmission_key(2),
                              K.joint_accel_key(j)]
    check(f, random_values(rng, dict.fromkeys(f.keys())))
    with pytest.raises(ArgumentError, match="^a: "):
        TorqueFactor(joint, K.wrench_key(j), K.torque_key(j))


@pytest.mark.parametrize("dim", [3, 6])
def test_contact_factor(point, dim):
    rng, _ = point
    f = ContactFactor(random_pose(rng), dim, K.twist_accel_key(2), K.twist_key(2))
    assert len(f.keys()) == (2 if dim == 3 else 1)
    check(f, random_values(rng, dict.fromkeys(f.keys())))


def test_transmission_factor(point):
    rng, _ = point
    ratios = tuple(float(r) for r in rng.normal(size=2) * 4)
    t = Transmission("belt", 3, ((1, ratios[0]), (2, ratios[1])), offset=0.3)
    for key, offset in ((K.joint_angle_key, t.offset), (K.joint_accel_key, 0.0)):
        f = TransmissionFactor(t, key(3), [key(1), key(2)], offset)
        values = random_values(rng, dict.fromkeys(f.keys()))
        check(f, values)
        x = [values.atVector(key(j))[0] for j in (3, 1, 2)]
        assert abs(f.unwhitenedError(values)[0] - (x[0] - ratios[0] * x[1] - ratios[1] * x[2] - offset)) < 1e-12


def test_the_right_jacobian_series_is_gtsams(point):
    rng, _ = point
    xi, u = rng.normal(size=6), rng.normal(size=6)
    J, _ = right_jacobian(xi, u)
    np.testing.assert_allclose(J, gtsam.Pose3.ExpmapDerivative(xi), atol=1e-12)


def test_pose_integration_factor(point):
    """A base's pose from its twist on SE(3), under each weighting, at poses one step apart (|ξ| ≲ 1)."""
    rng, _ = point
    T_k, V_k, T_next, V_next = (K.at_step(key, s) for key, s in ((K.pose_key(0), 4), (K.twist_key(0), 4),
                                                                  (K.pose_key(0), 5), (K.twist_key(0), 5)))
    for weights in ("explicit", "implicit", "trapezoidal", tuple(rng.normal(size=2))):
        f = PoseIntegrationFactor(T_k, V_k, T_next, V_next, 10 ** rng.uniform(-3, 0), weights)
        values = random_values(rng, dict.fromkeys(f.keys()))
        start = random_pose(rng)
        values.update(T_k, start)
        values.update(T_next, start.compose(gtsam.Pose3.Expmap(rng.normal(size=6) * 0.4)))
        check(f, values)
