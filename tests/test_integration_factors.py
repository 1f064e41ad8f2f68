"""Integrator factors (issue 13): Jacobians against central differences, one step against each rule's closed
form, many steps against the exact solution for constant acceleration, and argument checking."""

import math

import gtsam
import numpy as np
import pytest
from test_factor_jacobians import POINTS, check

from gtdyn import keys as K
from gtdyn.errors import ArgumentError
from gtdyn.factors import IntegrationFactor, base_integration_factors, integration_factors, joint_prior
from gtdyn.factors.integration import RULES

SCHEMES = list(RULES)


def q(j, k):
    return K.at_step(K.joint_angle_key(j), k)


def v(j, k):
    return K.at_step(K.joint_vel_key(j), k)


def a(j, k):
    return K.at_step(K.joint_accel_key(j), k)


def random_values(rng, keys) -> gtsam.Values:
    values = gtsam.Values()
    for key in keys:
        values.insert(key, rng.normal(size=1) * 2.0)
    return values


def solve(graph: gtsam.NonlinearFactorGraph, initial: gtsam.Values) -> gtsam.Values:
    return gtsam.LevenbergMarquardtOptimizer(graph, initial).optimize()


def step_by_hand(rule, dt, q0, v0, a0, a1):
    """(q_{k+1}, q̇_{k+1}) of one step of ``rule``."""
    if rule == "euler":
        return q0 + dt * v0, v0 + dt * a0
    if rule == "semi_implicit_euler":
        v1 = v0 + dt * a0
        return q0 + dt * v1, v1
    v1 = v0 + dt / 2 * (a0 + a1)
    return q0 + dt / 2 * (v0 + v1), v1


@pytest.mark.parametrize("rule", SCHEMES)
@pytest.mark.parametrize("point", range(POINTS))
def test_jacobians_match_central_differences(rule, point):
    """Both levels' analytic Jacobians equal central differences at a random state and Δt, and each factor's
    keys are exactly the variables its rule involves."""
    rng = np.random.default_rng(2000 + point)
    j, k, dt = int(rng.integers(1, 8)), int(rng.integers(0, 100)), 10 ** rng.uniform(-3, 0.5)
    position, velocity = integration_factors(j, k, dt, rule)
    derivative = {"euler": v(j, k), "semi_implicit_euler": v(j, k + 1), "trapezoidal": None}[rule]
    expected = [q(j, k), q(j, k + 1)] + ([v(j, k), v(j, k + 1)] if derivative is None else [derivative])
    assert list(position.keys()) == expected
    accel = [a(j, k), a(j, k + 1)] if rule == "trapezoidal" else [a(j, k)]
    assert list(velocity.keys()) == [v(j, k), v(j, k + 1)] + accel
    values = random_values(rng, {key for f in (position, velocity) for key in f.keys()})
    check(position, values)
    check(velocity, values)


@pytest.mark.parametrize("point", range(POINTS))
def test_jacobians_with_general_weights(point):
    """IntegrationFactor with arbitrary weights (w_k, w_k+1): Jacobians 1, −1, −Δt w_k, −Δt w_k+1, checked
    numerically; with a soft model (σ = 0.1) linearization whitens them by 1/σ."""
    rng = np.random.default_rng(3000 + point)
    w, dt = rng.normal(size=2), 10 ** rng.uniform(-3, 0.5)
    keys = (q(1, 4), v(1, 4), q(1, 5), v(1, 5))
    f = IntegrationFactor(*keys, dt, tuple(w))
    values = random_values(rng, f.keys())
    check(f, values)
    expected = np.array([[-1.0, 1.0, -dt * w[0], -dt * w[1]]])
    np.testing.assert_allclose(gtsam.JacobianFactor(f.linearize(values)).jacobianUnweighted()[0], expected, rtol=1e-15)
    soft = IntegrationFactor(*keys, dt, tuple(w), gtsam.noiseModel.Isotropic.Sigma(1, 0.1))
    np.testing.assert_allclose(gtsam.JacobianFactor(soft.linearize(values)).jacobianUnweighted()[0], expected / 0.1,
                               rtol=1e-14)
    np.testing.assert_allclose(soft.unwhitenedError(values), f.unwhitenedError(values), rtol=0, atol=0)


@pytest.mark.parametrize("rule", SCHEMES)
def test_one_step_matches_closed_form(rule, rng):
    """Each rule's two factors with priors on q_k, q̇_k, q̈_k, q̈_k+1, optimized from a wrong guess, give the
    rule's q_k+1 and q̇_k+1 computed by hand to 1e-12."""
    for _ in range(20):
        j, k, dt = 3, int(rng.integers(0, 50)), 10 ** rng.uniform(-3, 0)
        q0, v0, a0, a1 = rng.normal(size=4) * 2.0
        graph = gtsam.NonlinearFactorGraph()
        for f in integration_factors(j, k, dt, rule):
            graph.add(f)
        for key, value in ((q(j, k), q0), (v(j, k), v0), (a(j, k), a0), (a(j, k + 1), a1)):
            graph.add(joint_prior(key, value))
        initial = random_values(rng, [q(j, k), v(j, k), a(j, k), a(j, k + 1), q(j, k + 1), v(j, k + 1)])
        result = solve(graph, initial)
        q1, v1 = step_by_hand(rule, dt, q0, v0, a0, a1)
        assert abs(result.atVector(q(j, k + 1))[0] - q1) < 1e-12
        assert abs(result.atVector(v(j, k + 1))[0] - v1) < 1e-12


def trajectory(rule, steps, dt, q0, v0, c):
    """q_0..q_N and q̇_0..q̇_N of a 1-joint system with q̈ = c, solved as one graph over all steps."""
    graph = gtsam.NonlinearFactorGraph()
    initial = gtsam.Values()
    for k in range(steps + 1):
        graph.add(joint_prior(a(1, k), c))
        for key in (q(1, k), v(1, k), a(1, k)):
            initial.insert(key, np.zeros(1))
        if k < steps:
            for f in integration_factors(1, k, dt, rule):
                graph.add(f)
    graph.add(joint_prior(q(1, 0), q0))
    graph.add(joint_prior(v(1, 0), v0))
    result = solve(graph, initial)
    return ([result.atVector(q(1, k))[0] for k in range(steps + 1)],
            [result.atVector(v(1, k))[0] for k in range(steps + 1)])


def test_constant_acceleration_over_ten_steps():
    """q̈ = c over N = 10 steps: the trapezoidal rule is exact (q = q0 + v0 t + c t²/2 at every step), explicit
    Euler lags by the known first-order term (q_N = q0 + v0 T + c Δt² N(N−1)/2) and semi-implicit Euler leads
    by it (… N(N+1)/2); all three get q̇_N = v0 + c T exactly."""
    N, dt, q0, v0, c = 10, 0.05, 0.3, -1.2, 2.5
    qs, vs = trajectory("trapezoidal", N, dt, q0, v0, c)
    for k in range(N + 1):
        t = k * dt
        assert abs(qs[k] - (q0 + v0 * t + c * t * t / 2)) < 1e-12
        assert abs(vs[k] - (v0 + c * t)) < 1e-12
    T = N * dt
    for rule, n in (("euler", N * (N - 1) / 2), ("semi_implicit_euler", N * (N + 1) / 2)):
        qs, vs = trajectory(rule, N, dt, q0, v0, c)
        assert abs(qs[-1] - (q0 + v0 * T + c * dt * dt * n)) < 1e-12, rule
        assert abs(vs[-1] - (v0 + c * T)) < 1e-12, rule


@pytest.mark.parametrize("dt", [0, 0.0, -0.1, math.nan, math.inf, -math.inf, "0.1", None, True, 1j])
def test_bad_dt(dt):
    for make in (lambda: integration_factors(1, 0, dt, "euler"),
                 lambda: IntegrationFactor(q(1, 0), v(1, 0), q(1, 1), v(1, 1), dt)):
        with pytest.raises(ArgumentError, match=r"^dt: "):
            make()


def test_bad_rule_lists_the_rules():
    with pytest.raises(ArgumentError, match=r"^rule: 'rk4' is not one of euler, semi_implicit_euler, trapezoidal$"):
        integration_factors(1, 0, 0.01, "rk4")
    with pytest.raises(ArgumentError, match=r"^rule: \[1\] is not one of euler, "):
        integration_factors(1, 0, 0.01, [1])


@pytest.mark.parametrize("weights", ["forward", (1.0,), (0.0, 0.0), (math.nan, 1.0), "ab", None])
def test_bad_weights(weights):
    with pytest.raises(ArgumentError, match=r"^weights: "):
        IntegrationFactor(q(1, 0), v(1, 0), q(1, 1), v(1, 1), 0.01, weights)


def test_other_bad_arguments():
    with pytest.raises(ArgumentError, match=r"^dx_next: "):  # a derivative the rule needs is missing
        IntegrationFactor(q(1, 0), v(1, 0), q(1, 1), None, 0.01, "trapezoidal")
    with pytest.raises(ArgumentError, match=r"^keys: "):
        IntegrationFactor(q(1, 0), v(1, 0), q(1, 0), None, 0.01)
    with pytest.raises(ArgumentError, match=r"^model: "):
        IntegrationFactor(q(1, 0), v(1, 0), q(1, 1), None, 0.01, model=gtsam.noiseModel.Unit.Create(2))
    for j in (0, -1, 1.5, True, 1 << 24):
        with pytest.raises(ArgumentError, match=r"^joint_index: "):
            integration_factors(j, 0, 0.01)
    for k in (-1, 0.5, None):
        with pytest.raises(ArgumentError, match=r"^k: "):
            integration_factors(1, k, 0.01)
    # zero-weight derivatives may be None and are not keys
    f = IntegrationFactor(q(1, 0), None, q(1, 1), v(1, 1), 0.01, "implicit")
    assert list(f.keys()) == [q(1, 0), q(1, 1), v(1, 1)]


@pytest.mark.parametrize("rule", SCHEMES)
def test_a_floating_base_integrates_on_se3(rule, rng):
    """The base's factors between steps k and k+1: pose from twist on SE(3), twist from acceleration (6-vectors);
    Jacobians against central differences; at a constant body twist V and zero acceleration every rule is exact,
    pose_{k+1} = pose_k · Exp(Δt V)."""
    from test_factor_jacobians import random_pose

    k, dt = 3, 0.05
    pose_level, twist_level = base_integration_factors(k, dt, rule)
    T, V, A = ([K.at_step(key(0), s) for s in (k, k + 1)] for key in (K.pose_key, K.twist_key, K.twist_accel_key))
    assert set(twist_level.keys()) <= {V[0], V[1], A[0], A[1]} and set(pose_level.keys()) <= {T[0], T[1], V[0], V[1]}
    twist = rng.normal(size=6)
    values = gtsam.Values()
    start = random_pose(rng)
    values.insert(T[0], start)
    values.insert(T[1], start.compose(gtsam.Pose3.Expmap(dt * twist)))
    for key, value in ((V[0], twist), (V[1], twist), (A[0], np.zeros(6)), (A[1], np.zeros(6))):
        values.insert(key, value)
    for factor in (pose_level, twist_level):
        assert np.max(np.abs(factor.unwhitenedError(values))) < 1e-14
        moved = gtsam.Values(values)
        moved.update(V[1], twist + rng.normal(size=6))
        moved.update(A[1], rng.normal(size=6))
        check(factor, moved)
    with pytest.raises(ArgumentError, match="^rule: "):
        base_integration_factors(k, dt, "rk4")
    with pytest.raises(ArgumentError, match="^k: "):
        base_integration_factors(-1, dt)
    with pytest.raises(ArgumentError, match="^model: "):
        IntegrationFactor(V[0], A[0], V[1], A[1], dt, model=gtsam.noiseModel.Unit.Create(1))
