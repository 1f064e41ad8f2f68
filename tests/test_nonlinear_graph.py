"""The full nonlinear graph of CustomFactors and the linear fast path are the same physics.

1. Linearising each CustomFactor at a solution gives, on its linear variables (V̇, F, q̈, τ), exactly the
   blocks the fast path puts in its JacobianFactor.
2. Solving the full graph with priors on q, q̇, q̈ (inverse dynamics) by Gauss–Newton from zero gives the fast
   path's τ: the pose and twist factors reproduce the kinematics, eq. 5–7 the dynamics.
"""

import gtsam
import numpy as np
from references import rel_err

import gtdyn
from gtdyn import keys as K
from gtdyn.factors import joint_prior
from gtdyn.factors.full_graph import full_dynamics_graph, joint_priors, zero_values
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
