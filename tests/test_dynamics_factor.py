"""The one-factor-per-step dynamics (issue 21, item 5): ``DynamicsFactor``'s Jacobians against numerical
derivatives, and the estimators with it giving the full graph's answers."""

import gtsam
import numpy as np
import pytest
from test_factor_jacobians import check

import gtdyn
from gtdyn import keys as K
from gtdyn.estimation.trajectory import trajectory_inverse_dynamics
from gtdyn.factors.dynamics import DynamicsFactor

pytestmark = pytest.mark.usefixtures("private_cache")
QUANTITIES = (K.joint_angle_key, K.joint_vel_key, K.joint_accel_key, K.torque_key)


def step_keys(robot, k=0):
    return [[K.at_step(kind(j.index), k) for j in robot.joints] for kind in QUANTITIES]


def test_the_jacobians_are_the_numerical_derivatives():
    robot = gtdyn.load_robot("puma560")
    factor = DynamicsFactor(gtdyn.compile(robot, "inverse", derivatives=True), *step_keys(robot))
    values = gtsam.Values()
    rng = np.random.default_rng(6)
    for keys in step_keys(robot):
        for key in keys:
            values.insert(key, rng.uniform(-1, 1, 1))
    check(factor, values)
    q, v, a, tau = (np.array([values.atVector(k)[0] for k in keys]) for keys in step_keys(robot))
    assert np.allclose(factor.unwhitenedError(values), tau - gtdyn.inverse_dynamics(robot, q, v, a).tau,
                       rtol=0, atol=1e-12)


def test_the_underactuated_estimate_is_the_full_graphs():
    """The 3R arm with its middle joint passive (test_estimation's): Levenberg–Marquardt and Gauss–Newton iterate
    here, so the two graphs' optima are compared, not their common start."""
    robot = gtdyn.load_robot("rrr").with_actuated(["j1", "j3"])
    trajectory = gtdyn.simulate(robot, [0.3, 0.2, 0.1], np.zeros(3), tau=[1.0, 0.0, 0.5], dt=0.01, steps=20,
                                method="trapezoidal", progress=False)
    measured = trajectory.q + 1e-4 * np.random.default_rng(0).standard_normal(trajectory.q.shape)
    full, compiled = (trajectory_inverse_dynamics(robot, trajectory.t, measured, sigma_q=1e-4, dynamics=mode)
                      for mode in ("full", "compiled"))
    assert (full.dynamics, compiled.dynamics) == ("full", "compiled") and compiled.iterations > 0
    # both converge to the optimum to Levenberg–Marquardt's relative tolerance, 1e-10 of an error of ~10
    assert np.max(np.abs(compiled.q - full.q)) < 1e-8
    assert np.max(np.abs(compiled.tau - full.tau)) < 1e-6
    assert np.max(np.abs(compiled.tau[:, 1])) < 1e-9


def test_the_fixed_lag_estimator_with_one_factor_per_step():
    robot = gtdyn.load_robot("rr")
    truth = gtdyn.simulate(robot, [0.3, -0.2], np.zeros(2), tau=[0.5, 0.1], dt=0.01, steps=15, method="rk4",
                           progress=False)
    rng = np.random.default_rng(1)
    readings = truth.q + 1e-3 * rng.standard_normal(truth.q.shape)
    estimates = {}
    for mode in ("full", "compiled"):
        estimator = gtdyn.FixedLagEstimator(robot, 0.01, 5, robot.joint_names, 1e-3, np.tile([0.5, 0.1], (16, 1)),
                                            q0=readings[0], dynamics=mode)
        estimates[mode] = np.array([estimator.update(z).q for z in readings])
    # iSAM2 relinearizes a variable when it moves more than 1e-3: the two graphs relinearize at slightly
    # different points, so they agree to well within the estimate's own error (~1e-3), not to round-off
    assert np.max(np.abs(estimates["compiled"] - estimates["full"])) < 1e-5
    assert np.max(np.abs(estimates["compiled"] - truth.q)) < 5e-3


def test_what_the_factor_does_not_cover_is_named():
    puma = gtdyn.load_robot("puma560")
    with pytest.raises(gtdyn.ArgumentError, match="needs gtdyn.compile.robot, 'inverse', derivatives=True"):
        DynamicsFactor(gtdyn.compile(puma, "inverse"), *step_keys(puma))
    with pytest.raises(gtdyn.ArgumentError, match="^q, v, qdd, tau: expected 6 keys"):
        DynamicsFactor(gtdyn.compile(puma, "inverse", derivatives=True), *(keys[:5] for keys in step_keys(puma)))
    four_bar = gtdyn.load_robot("four_bar")
    with pytest.raises(gtdyn.ArgumentError, match='dynamics="compiled" does not cover closed loops'):
        trajectory_inverse_dynamics(four_bar, [0, 0.01, 0.02], np.zeros((3, 4)), sigma_q=1e-3, dynamics="compiled")
    with pytest.raises(gtdyn.ArgumentError, match="^dynamics: 'fast' is not one of auto, compiled, full"):
        trajectory_inverse_dynamics(puma, [0, 0.01, 0.02], np.zeros((3, 6)), sigma_q=1e-3, dynamics="fast")
