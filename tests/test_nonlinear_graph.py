"""The full nonlinear graph of CustomFactors and the linear fast path are the same physics.

1. Linearising each CustomFactor at a solution gives, on its linear variables (V̇, F, q̈, τ), exactly the
   blocks the fast path puts in its JacobianFactor.
2. Solving the full graph with priors on q, q̇, q̈ (inverse dynamics) by Gauss–Newton from zero gives the fast
   path's τ: the pose and twist factors reproduce the kinematics, eq. 5–7 the dynamics.
3. The same with a floating base (its wrench F0), a transmission (λ and the coupling factors) and a contact
   (constrained forward dynamics: q̈, the base's acceleration and the contact force).
"""

import gtsam
import numpy as np
from references import rel_err

import gtdyn
from gtdyn import keys as K
from gtdyn.factors import joint_prior, pose_prior, vector_prior
from gtdyn.factors.full_graph import full_dynamics_graph, joint_priors, zero_values
from gtdyn.model import base_frame
from gtdyn.model.random import random_robot


def solve_full_inverse(robot, q, v, qdd, gravity=(0, 0, -9.81), planar=None):
    """Gauss–Newton iterations from all-zero values. (GTSAM's optimizer stops at the first rise of the
    hard-constraint error, which the first step from zero can cause; plain iterations converge in ~4.)"""
    graph = full_dynamics_graph(robot, gravity, planar=planar)
    for key_fn, values in ((K.joint_angle_key, q), (K.joint_vel_key, v), (K.joint_accel_key, qdd)):
        graph.push_back(joint_priors(robot, key_fn, values))
    for joint in robot.joints:  # passive joints carry no torque
        if not joint.actuated:
            graph.add(joint_prior(K.torque_key(joint.index), 0.0))
    values = zero_values(robot)
    for _ in range(10):
        values = values.retract(graph.linearize(values).optimize())
    residual = max(np.max(np.abs(graph.at(i).unwhitenedError(values))) for i in range(graph.size()))
    return graph, values, residual


def test_full_graph_solves_inverse_dynamics_like_the_fast_path():
    for seed in range(5):
        rng = np.random.default_rng(300 + seed)
        robot = random_robot(rng, n=5, tree=True, prismatic=0.3)
        n = robot.num_dofs
        q, v, a = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n), rng.uniform(-2, 2, n)
        _, result, residual = solve_full_inverse(robot, q, v, a)
        assert residual < 1e-10
        tau_full = np.array([result.atVector(K.torque_key(j.index))[0] for j in robot.joints])
        assert rel_err(tau_full, gtdyn.inverse_dynamics(robot, q, v, a).tau) < 1e-9


LINEAR_KINDS = {"wrench", "twist_accel", "joint_accel", "torque"}


def columns(linear_factor) -> dict[int, np.ndarray]:
    A, _ = gtsam.JacobianFactor(linear_factor).jacobianUnweighted()
    out, col = {}, 0
    for key in linear_factor.keys():
        out[key] = A[:, col:col + K.dim(key)]
        col += K.dim(key)
    return out


def test_custom_factor_blocks_equal_fast_path_blocks():
    """Inverse dynamics: the fast path's factors are eq. 5–7 with q̈ known, so their keys are the nonlinear
    factors' linear keys minus q̈."""
    robot = gtdyn.load_robot("puma560")
    rng = np.random.default_rng(13)
    q, v, a = rng.uniform(-2, 2, (3, 6))
    graph, result, _ = solve_full_inverse(robot, q, v, a)
    fast = gtdyn.inverse_dynamics(robot, q, v, a).graph
    fast_by_keys = {frozenset(fast.at(i).keys()): columns(fast.at(i)) for i in range(fast.size())}
    compared = 0
    for i in range(graph.size()):
        factor = graph.at(i)
        kinds = {K.kind(k) for k in factor.keys()}
        if not kinds & {"wrench", "twist_accel"}:
            continue  # priors, pose and twist factors have no fast-path counterpart
        nonlinear = columns(factor.linearize(result))
        unknown = frozenset(k for k in factor.keys() if K.kind(k) in LINEAR_KINDS and K.kind(k) != "joint_accel")
        assert unknown in fast_by_keys, f"no fast-path factor on {sorted(K.label(k) for k in unknown)}"
        for key, block in fast_by_keys[unknown].items():
            np.testing.assert_allclose(block, nonlinear[key], atol=1e-12)
        compared += 1
    assert compared == 6 * 3  # eq. 5, 6 and 7 for each of the six joints/links


def test_full_graph_on_a_closed_loop():
    """The five-bar: every joint's factors, the loop joint's planar factor, passive torques fixed at zero."""
    robot = gtdyn.load_robot("five_bar")
    s = gtdyn.close_loops(robot, {"j1": 0.2, "j2": -0.1}, {"j1": 0.5, "j2": 0.3}, {"j1": 1.0, "j2": -2.0})
    loop = robot.loop_joints[0]
    _, result, residual = solve_full_inverse(robot, s.q, s.v, s.qdd, planar={loop.index: np.array([0.0, 1.0, 0.0])})
    assert residual < 1e-9
    tau_full = np.array([result.atVector(K.torque_key(j.index))[0] for j in robot.joints])
    assert rel_err(tau_full, gtdyn.inverse_dynamics(robot, s.q, s.v, s.qdd).tau) < 1e-9


FLOATING = """<robot name="hopper">
  <link name="body"><inertial><origin xyz="0.05 -0.02 0.03" rpy="0.3 -0.2 0.5"/><mass value="3.0"/>
    <inertia ixx="0.05" ixy="0.004" ixz="-0.002" iyy="0.04" iyz="0.003" izz="0.06"/></inertial></link>
  <joint name="hip" type="revolute"><parent link="body"/><child link="thigh"/><origin xyz="0.1 0 -0.05"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="50" velocity="10"/></joint>
  <link name="thigh"><inertial><origin xyz="0 0.01 -0.15"/><mass value="0.8"/>
    <inertia ixx="0.006" ixy="0.0005" ixz="0.0003" iyy="0.005" iyz="-0.0004" izz="0.002"/></inertial></link>
  <joint name="knee" type="prismatic"><parent link="thigh"/><child link="shank"/><origin xyz="0 0 -0.3"/>
    <axis xyz="0.2 0 -1"/><limit lower="-0.2" upper="0.2" effort="100" velocity="2"/></joint>
  <link name="shank"><inertial><origin xyz="0 0 -0.1"/><mass value="0.4"/>
    <inertia ixx="0.002" ixy="0" ixz="0.0002" iyy="0.002" iyz="0" izz="0.0005"/></inertial></link>
  <joint name="foot_fixed" type="fixed"><parent link="shank"/><child link="foot"/><origin xyz="0 0 -0.2"/></joint>
  <link name="foot"/>
  <joint name="rotor_joint" type="revolute"><parent link="body"/><child link="rotor"/><origin xyz="0.1 0.05 -0.05"/>
    <axis xyz="0 1 0"/><limit lower="-30" upper="30" effort="5" velocity="90"/>
    <mimic joint="hip" multiplier="6" offset="0.1"/></joint>
  <link name="rotor"><inertial><origin xyz="0 0 0.01"/><mass value="0.2"/>
    <inertia ixx="0.0003" ixy="0" ixz="0" iyy="0.0004" iyz="0" izz="0.0003"/></inertial></link>
</robot>"""


def hopper(tmp_path):
    """A floating body with a revolute hip, a prismatic knee on an oblique axis, a foot frame and a 6:1 rotor on
    the hip (a transmission); the base's CoM frame is offset and turned from its link frame, so every link ↔ CoM
    conversion is exercised."""
    path = tmp_path / "hopper.urdf"
    path.write_text(FLOATING)
    robot = gtdyn.load_robot(str(path), base="floating")
    assert robot.transmissions and not np.allclose(robot.base.lTcom.matrix(), np.eye(4))
    return robot


def solve_full(robot, known: gtsam.NonlinearFactorGraph, contacts=None):
    """Gauss–Newton from zero on the full graph with the ``known`` priors and passive torques zero."""
    graph = full_dynamics_graph(robot, contacts=contacts)
    graph.push_back(known)
    for joint in robot.joints:
        if not joint.actuated:
            graph.add(joint_prior(K.torque_key(joint.index), 0.0))
    values = zero_values(robot, contacts=contacts)
    for _ in range(15):
        values = values.retract(graph.linearize(values).optimize())
    residual = max(np.max(np.abs(graph.at(i).unwhitenedError(values))) for i in range(graph.size()))
    return values, residual


def coupled_state(robot, rng):
    """q, q̇, q̈ that keep the hopper's coupling (rotor = 6 hip + 0.1)."""
    q, v, a = rng.uniform(-1, 1, (3, robot.num_dofs))
    (t,) = robot.transmissions
    (drive, ratio), = t.terms
    for x, offset in ((q, t.offset), (v, 0.0), (a, 0.0)):
        x[t.dependent - 1] = ratio * x[drive - 1] + offset
    return q, v, a


def base_priors(robot, pose, twist, accel=None) -> gtsam.NonlinearFactorGraph:
    """The base's pose, twist (and acceleration) given in the root link frame, as priors on body 0's CoM frame."""
    known = gtsam.NonlinearFactorGraph()
    known.add(pose_prior(K.pose_key(0), base_frame.pose_to_com(robot, pose)))
    known.add(vector_prior(K.twist_key(0), base_frame.twist_to_com(robot) @ twist))
    if accel is not None:
        known.add(vector_prior(K.twist_accel_key(0), base_frame.twist_to_com(robot) @ accel))
    return known


def independent_priors(robot, key_fn, x) -> gtsam.NonlinearFactorGraph:
    """Priors on the joints no transmission drives (the coupling factors give the driven ones)."""
    dependent = {t.dependent for t in robot.transmissions}
    known = gtsam.NonlinearFactorGraph()
    for joint in robot.joints:
        if joint.index not in dependent:
            known.add(joint_prior(key_fn(joint.index), x[joint.index - 1]))
    return known


def test_full_graph_with_a_floating_base_and_a_transmission_solves_inverse_dynamics(tmp_path):
    """Base pose, twist and acceleration given: the graph's F0 is the base wrench and its τ the torques of the
    linear path's inverse dynamics; λ1 the rotor's torque balance."""
    robot = hopper(tmp_path)
    rng = np.random.default_rng(5)
    for _ in range(3):
        q, v, a = coupled_state(robot, rng)
        pose = gtsam.Pose3(gtsam.Rot3.Expmap(rng.normal(size=3)), rng.normal(size=3))
        twist, accel = rng.normal(size=(2, 6))
        known = base_priors(robot, pose, twist, accel)
        for key_fn, x in ((K.joint_angle_key, q), (K.joint_vel_key, v), (K.joint_accel_key, a)):
            known.push_back(independent_priors(robot, key_fn, x))
        values, residual = solve_full(robot, known)
        assert residual < 1e-10
        r = gtdyn.inverse_dynamics(robot, q, v, a, base_pose=pose, base_twist=twist, base_accel=accel)
        tau = np.array([values.atVector(K.torque_key(j.index))[0] for j in robot.joints])
        assert rel_err(tau, r.tau) < 1e-9
        base_wrench = base_frame.wrench_to_link(robot) @ values.atVector(K.wrench_key(0))
        assert rel_err(base_wrench, r.base_wrench) < 1e-9
        qdd = np.array([values.atVector(K.joint_accel_key(j.index))[0] for j in robot.joints])
        assert np.max(np.abs(qdd - a)) < 1e-12  # the rotor's q̈ from the coupling


def test_full_graph_with_a_contact_solves_constrained_forward_dynamics(tmp_path):
    """Torques given, the foot held by a point contact and the base free (F0 = 0): the graph's q̈, base
    acceleration and contact force are the linear path's constrained forward dynamics."""
    robot = hopper(tmp_path)
    contacts = [gtdyn.Contact("foot", (0.01, 0.0, -0.02))]
    rng = np.random.default_rng(6)
    for _ in range(3):
        q, v, _ = coupled_state(robot, rng)
        tau = rng.uniform(-2, 2, robot.num_dofs)
        tau[[not j.actuated for j in robot.joints]] = 0.0
        pose = gtsam.Pose3(gtsam.Rot3.Expmap(rng.normal(size=3)), rng.normal(size=3))
        twist = rng.normal(size=6)
        r = gtdyn.forward_dynamics(robot, q, v, tau, base_pose=pose, base_twist=twist, contacts=contacts)
        known = base_priors(robot, pose, twist)
        known.add(vector_prior(K.wrench_key(0), np.zeros(6)))
        for key_fn, x in ((K.joint_angle_key, q), (K.joint_vel_key, v)):
            known.push_back(independent_priors(robot, key_fn, x))
        known.push_back(joint_priors(robot, K.torque_key, tau))
        values, residual = solve_full(robot, known, contacts)
        assert residual < 1e-10
        qdd = np.array([values.atVector(K.joint_accel_key(j.index))[0] for j in robot.joints])
        assert rel_err(qdd, r.qdd) < 1e-9
        accel = base_frame.twist_to_link(robot) @ values.atVector(K.twist_accel_key(0))
        assert rel_err(accel, r.base_accel) < 1e-9
        assert rel_err(values.atVector(K.contact_key(1, 3)), r.contact_wrenches[0].local[3:]) < 1e-9
