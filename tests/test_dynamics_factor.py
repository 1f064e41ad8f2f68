"""The one-factor-per-step dynamics (issue 21, item 5): ``DynamicsFactor``'s Jacobians against numerical
derivatives, and the estimators with it giving the full graph's answers."""

import gtsam
import numpy as np
import pytest
from test_estimation import QUADRUPED_Q0, QUADRUPED_TAU, QUADRUPED_TWIST
from test_factor_jacobians import check
from test_nonlinear_graph import FLOATING

import gtdyn
from gtdyn import keys as K
from gtdyn.estimation.trajectory import trajectory_inverse_dynamics
from gtdyn.factors.dynamics import DynamicsFactor

pytestmark = pytest.mark.usefixtures("private_cache")
QUANTITIES = (K.joint_angle_key, K.joint_vel_key, K.joint_accel_key, K.torque_key)


def step_keys(robot, k=0):
    return [[K.at_step(kind(j.index), k) for j in robot.joints] for kind in QUANTITIES]


def base_keys(k=0):
    return tuple(K.at_step(kind(0), k) for kind in (K.pose_key, K.twist_key, K.twist_accel_key))


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


def test_the_floating_jacobians_are_the_numerical_derivatives(tmp_path):
    """The floating hopper of test_nonlinear_graph (its rotor left free): the base's CoM frame is offset and
    turned from its link frame and the knee is prismatic on an oblique axis, so the chain rule from the solver's
    root link columns to the CoM frame's variables is exercised; the error is [−F₀; τ − τ_ID] by the reference
    path."""
    path = tmp_path / "hopper.urdf"
    path.write_text(FLOATING)
    with pytest.warns(gtdyn.ModelWarning, match="mimic"):
        robot = gtdyn.load_robot(str(path), base="floating", transmissions="independent")
    assert not np.allclose(robot.base.lTcom.matrix(), np.eye(4))
    factor = DynamicsFactor(gtdyn.compile(robot, "inverse", derivatives=True), *step_keys(robot), base=base_keys())
    rng = np.random.default_rng(8)
    for _ in range(3):  # three random points
        values = gtsam.Values()
        values.insert(base_keys()[0], gtsam.Pose3(gtsam.Rot3.Expmap(rng.normal(size=3)), rng.normal(size=3)))
        for key in base_keys()[1:]:
            values.insert(key, rng.normal(size=6))
        for keys in step_keys(robot):
            for key in keys:
                values.insert(key, rng.uniform(-1, 1, 1))
        check(factor, values)
        q, v, a, tau = (np.array([values.atVector(k)[0] for k in keys]) for keys in step_keys(robot))
        to_link = gtdyn.model.base_frame.twist_to_link(robot)
        r = gtdyn.inverse_dynamics(robot, q, v, a,
                                   base_pose=gtdyn.model.base_frame.pose_to_link(robot, values.atPose3(base_keys()[0])),
                                   base_twist=to_link @ values.atVector(base_keys()[1]),
                                   base_accel=to_link @ values.atVector(base_keys()[2]))
        assert np.allclose(factor.unwhitenedError(values), np.concatenate([-r.base_wrench, tau - r.tau]),
                           rtol=0, atol=1e-10)


def test_the_floating_estimate_is_the_full_graphs():
    """test_estimation's quadruped in free flight, its torques recovered from joint angles and base poses: one
    factor per sample gives the full graph's estimate. Levenberg–Marquardt stops each at a relative decrease of
    1e-10 of the error, after different steps (the graphs differ), so the two estimates agree to far better than
    either's distance from the simulated truth (measured: 3e-4 of it at most, in q̈ and τ): bound 1 % of it."""
    robot = gtdyn.load_robot("quadruped", base="floating")
    run = gtdyn.simulate(robot, QUADRUPED_Q0, np.zeros(12), tau=QUADRUPED_TAU, dt=0.01, steps=6, method="trapezoidal",
                         base_twist=QUADRUPED_TWIST, progress=False)
    full, compiled = (trajectory_inverse_dynamics(robot, run.t, run.q, sigma_q=1e-6, smoothness=1e6,
                                                  base_pose=run.base_pose, sigma_base=1e-4, dynamics=mode)
                      for mode in ("full", "compiled"))
    assert (full.dynamics, compiled.dynamics) == ("full", "compiled")
    assert trajectory_inverse_dynamics(robot, run.t, run.q, sigma_q=1e-6, smoothness=1e6, base_pose=run.base_pose,
                                       sigma_base=1e-4).dynamics == "compiled"  # auto takes it
    truth = {"tau": np.tile(QUADRUPED_TAU, (len(run.t), 1)),
             **{name: getattr(run, name) for name in ("q", "v", "qdd", "base_pose", "base_twist", "base_accel")}}
    for name, true in truth.items():
        apart = np.max(np.abs(getattr(compiled, name) - getattr(full, name)))
        assert apart < 0.01 * np.max(np.abs(getattr(full, name) - true)), name
    assert np.max(np.abs(compiled.tau - QUADRUPED_TAU)) < 1e-4


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


def test_the_floating_fixed_lag_estimator_with_one_factor_per_step():
    """The quadruped in free flight read through noisy encoders and exact base poses: as on the fixed base, the
    two graphs relinearize at slightly different points, so they agree to well within the estimate's own error
    (~2e-3 rad here), not to round-off."""
    robot = gtdyn.load_robot("quadruped", base="floating")
    truth = gtdyn.simulate(robot, QUADRUPED_Q0, np.zeros(12), tau=QUADRUPED_TAU, dt=0.01, steps=8, method="rk4",
                           base_twist=QUADRUPED_TWIST, progress=False)
    readings = truth.q + 1e-3 * np.random.default_rng(1).standard_normal(truth.q.shape)
    estimates = {}
    for mode in ("full", "compiled"):
        estimator = gtdyn.FixedLagEstimator(robot, 0.01, 5, robot.joint_names, 1e-3, np.tile(QUADRUPED_TAU, (9, 1)),
                                            q0=readings[0], sigma_base=1e-4, base_twist0=QUADRUPED_TWIST,
                                            dynamics=mode)
        steps = [estimator.update(z, base_pose=T) for z, T in zip(readings, truth.base_pose)]
        estimates[mode] = np.array([s.q for s in steps]), np.array([s.base_twist for s in steps])
    for full, compiled in zip(estimates["full"], estimates["compiled"]):
        assert np.max(np.abs(compiled - full)) < 1e-4
    assert np.max(np.abs(estimates["compiled"][0] - truth.q)) < 5e-3


def test_what_the_factor_does_not_cover_is_named():
    puma = gtdyn.load_robot("puma560")
    with pytest.raises(gtdyn.ArgumentError, match="needs gtdyn.compile.robot, 'inverse', derivatives=True"):
        DynamicsFactor(gtdyn.compile(puma, "inverse"), *step_keys(puma))
    with pytest.raises(gtdyn.ArgumentError, match="^q, v, qdd, tau: expected 6 keys"):
        DynamicsFactor(gtdyn.compile(puma, "inverse", derivatives=True), *(keys[:5] for keys in step_keys(puma)))
    with pytest.raises(gtdyn.ArgumentError, match="^base: robot 'puma560' has a fixed base; pass no keys as base="):
        DynamicsFactor(gtdyn.compile(puma, "inverse", derivatives=True), *step_keys(puma), base=base_keys())
    quadruped = gtdyn.load_robot("quadruped", base="floating")
    with pytest.raises(gtdyn.ArgumentError, match="^base: robot 'quadruped' has a floating base; pass the keys of its "
                       "pose, twist and acceleration as base="):
        DynamicsFactor(gtdyn.compile(quadruped, "inverse", derivatives=True), *step_keys(quadruped))
    with pytest.raises(gtdyn.ArgumentError, match="^q, v, qdd, tau, base: expected distinct variables"):
        DynamicsFactor(gtdyn.compile(puma, "inverse", derivatives=True), *step_keys(puma)[:3], step_keys(puma)[0])
    four_bar = gtdyn.load_robot("four_bar")
    with pytest.raises(gtdyn.ArgumentError, match='dynamics="compiled" does not cover closed loops'):
        trajectory_inverse_dynamics(four_bar, [0, 0.01, 0.02], np.zeros((3, 4)), sigma_q=1e-3, dynamics="compiled")
    with pytest.raises(gtdyn.ArgumentError, match="^dynamics: 'fast' is not one of auto, compiled, full"):
        trajectory_inverse_dynamics(puma, [0, 0.01, 0.02], np.zeros((3, 6)), sigma_q=1e-3, dynamics="fast")
