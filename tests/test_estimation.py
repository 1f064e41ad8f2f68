"""Trajectories as factor graphs (issue 13 item 4, paper 000 §4–5): the dynamics graph at every time step,
joined by integration factors.

1. ``full_dynamics_graph(..., step=k)`` and ``zero_values(robot, step=k)`` key every variable at step k.
2. Inverse dynamics over a trajectory: a PUMA 560 driven by known sinusoidal torques is simulated with the
   trapezoidal rule; the graph recovers τ(t) from the joint angles alone, exactly up to the smoothness
   prior's bias when the samples are exact, and within a stated bound when they carry 1e-4 rad of noise.
3. Online estimation: the four-bar (sdf/four_bar.sdf) swinging under gravity and a small known crank torque,
   observed through a noisy crank encoder only, estimated with GTSAM's incremental fixed-lag smoother.
"""

import gtsam
import numpy as np
import pytest
from test_factor_jacobians import check

import gtdyn
from gtdyn import keys as K
from gtdyn.errors import ArgumentError
from gtdyn.estimation import FixedLagEstimator, trajectory_inverse_dynamics
from gtdyn.estimation.trajectory import SnapFactor
from gtdyn.factors.full_graph import full_dynamics_graph, zero_values

PUMA_Q0 = np.array([0, np.pi / 4, -np.pi, 0, np.pi / 4, 0.0])  # the documented state, inside the joint limits
DRIVE = 2 * np.pi * np.array([1.0, 1.5, 2.0, 2.5, 3.0, 1.2])  # rad/s, per joint
DT, STEPS = 1e-2, 30  # 0.3 s, 31 samples


@pytest.fixture(scope="module")
def puma():
    """The PUMA from rest at its nominal pose, driven by its rest gravity torques plus sinusoids of 3 rad/s²
    times each joint's own inertia (so every joint moves ~0.1–0.2 rad): τ(t) known exactly at every sample."""
    robot = gtdyn.load_robot("puma560")
    zero = np.zeros(6)
    g0 = gtdyn.inverse_dynamics(robot, PUMA_Q0, zero, zero).tau
    inertia = np.array([gtdyn.inverse_dynamics(robot, PUMA_Q0, zero, e).tau[i] - g0[i]
                        for i, e in enumerate(np.eye(6))])

    def tau(t, q=None, v=None):
        return g0 + 3.0 * inertia * np.sin(DRIVE * t)

    trajectory = gtdyn.simulate(robot, PUMA_Q0, zero, tau=tau, dt=DT, steps=STEPS, method="trapezoidal", progress=False)
    truth = np.array([tau(t) for t in trajectory.t])
    return robot, tau, trajectory, truth


def test_full_graph_at_a_time_step():
    robot = gtdyn.load_robot("rrr")
    at0, at7 = full_dynamics_graph(robot), full_dynamics_graph(robot, step=7)
    assert at7.size() == at0.size()
    keys7 = set(at7.keyVector())
    assert keys7 == {K.at_step(key, 7) for key in at0.keyVector()}
    assert {K.step(key) for key in keys7} == {7}
    values = zero_values(robot, step=7)
    assert set(values.keys()) == keys7
    assert set(zero_values(robot).keys()) == set(at0.keyVector())  # step 0: the single-instant keys, as before
    for step in (-1, 1.5, True, "3", 1 << 40):
        with pytest.raises(ArgumentError, match="^step"):
            full_dynamics_graph(robot, step=step)
        with pytest.raises(ArgumentError, match="^step"):
            zero_values(robot, step=step)


def test_snap_factor_jacobians(rng):
    for h0, h1 in ((0.01, 0.01), (0.02, 0.005)):
        keys = [K.at_step(K.joint_accel_key(2), k) for k in (4, 5, 6)]
        factor = SnapFactor(*keys, h0, h1, 2 / (h0 + h1))  # unit σ: ``check`` compares whitened Jacobians
        values = gtsam.Values()
        for key in keys:
            values.insert(key, rng.normal(size=1))
        check(factor, values)


def test_trajectory_inverse_dynamics_recovers_the_torques(puma):
    """Exact samples. The trapezoidal rule's own accuracy, in τ: the same graph fed the samples of an RK4
    simulation at the same Δt (within 4e-8 rad of the exact motion, while the trapezoidal simulation is off by
    2.1e-4 rad) recovers τ to 7.2e-3 N·m — the rule's discretisation error. Fed the trapezoidal simulation's own
    samples, which satisfy the graph's integration factors exactly, the graph must do much better: its only
    error is the snap prior's pull on the sequences the samples leave free (measured 3.3e-4 N·m; tolerance
    a tenth of the rule's accuracy, and 1e-3 N·m)."""
    robot, tau, trajectory, truth = puma
    exact = trajectory_inverse_dynamics(robot, trajectory.t, trajectory.q, sigma_q=1e-6, smoothness=1e6)
    assert exact.cutoff[0] > np.pi / DT  # the prior filters nothing: above the Nyquist frequency
    assert np.max(np.abs(exact.q - trajectory.q)) < 1e-9
    rk4 = gtdyn.simulate(robot, PUMA_Q0, np.zeros(6), tau=tau, dt=DT, steps=STEPS, method="rk4", progress=False)
    assert np.max(np.abs(rk4.q - trajectory.q)) > 1e-4  # the trapezoidal simulation's own error
    accuracy = np.max(np.abs(trajectory_inverse_dynamics(robot, rk4.t, rk4.q, sigma_q=1e-6, smoothness=1e6).tau
                             - truth))
    error = np.max(np.abs(exact.tau - truth))
    assert 1e-3 < accuracy < 2e-2
    assert error < min(0.1 * accuracy, 1e-3), (error, accuracy)
    assert np.max(np.abs(exact.qdd - trajectory.qdd)) < 3e-3  # rad/s², of up to 9
    assert exact.tau.shape == exact.q.shape == (STEPS + 1, 6) and exact.t.shape == (STEPS + 1,)


def test_trajectory_inverse_dynamics_with_noisy_samples(puma):
    """Samples with σ = 1e-4 rad of noise, the default smoothing (cut-off ω_c at 1/16 of the 100 Hz sampling
    rate, 39 rad/s, twice the fastest drive). Expected error: in the interior the noise leaves q̈ an error of
    σ (Δt ω_c⁵ / 5π)^½ = 0.025 rad/s², times joint 1's inertia 2.9 kg m² ≈ 0.07 N·m; the smoothing's own bias
    with this cut-off is up to 0.14 N·m inside and 0.4 N·m at the ends, where the samples are one-sided and
    the noise's effect a few times larger. Bound: RMS ≤ 0.25 N·m (3 % of joint 1's 8.6 N·m amplitude), every
    sample ≤ 1.5 N·m (over 20 seeds: RMS 0.06–0.18, largest 0.24–1.2). Inverse dynamics at finite differences
    of the same samples (three-point second differences: q̈ noise σ √6/Δt² = 2.4 rad/s²) does 15–50 times
    worse (RMS 2.8–4.9 N·m over the 20 seeds; np.gradient applied twice, a five-point stencil, ~6 times)."""
    robot, _, trajectory, truth = puma
    rng = np.random.default_rng(7)
    measured = trajectory.q + 1e-4 * rng.standard_normal(trajectory.q.shape)
    estimate = trajectory_inverse_dynamics(robot, trajectory.t, measured, sigma_q=1e-4)
    assert np.allclose(estimate.cutoff, 2 * np.pi / 16 / DT)
    error = estimate.tau - truth
    rms = np.sqrt(np.mean(error ** 2))
    assert rms < 0.25 and np.max(np.abs(error)) < 1.5, (rms, np.max(np.abs(error)))
    v = (measured[2:] - measured[:-2]) / (2 * DT)
    a = (measured[2:] - 2 * measured[1:-1] + measured[:-2]) / DT ** 2
    naive = np.array([gtdyn.inverse_dynamics(robot, q, v_, a_).tau
                      for q, v_, a_ in zip(measured[1:-1], v, a, strict=True)])
    assert np.sqrt(np.mean((naive - truth[1:-1]) ** 2)) > 10 * rms


def test_trajectory_inverse_dynamics_rejects_bad_arguments(puma):
    robot, _, trajectory, _ = puma
    t, q = trajectory.t, trajectory.q
    cases = [
        ({"t": t[::-1]}, "^t: expected strictly increasing"),
        ({"t": t[:2], "q_measured": q[:2]}, "^t: "),
        ({"t": np.where(np.arange(len(t)) == 3, np.nan, t)}, "^t: non-finite"),
        ({"q_measured": q[:, :5]}, "^q_measured: expected shape"),
        ({"q_measured": q[:-1]}, "^q_measured: expected shape"),
        ({"sigma_q": 0.0}, "^sigma_q"),
        ({"sigma_q": -1e-4}, "^sigma_q"),
        ({"sigma_q": [1e-4] * 5}, "^sigma_q"),
        ({"smoothness": 0.0}, "^smoothness"),
        ({"rule": "rk4"}, "^rule"),
        ({"gravity": (0, 0)}, "^gravity"),
        ({"max_iterations": 0}, "^max_iterations"),
    ]
    for change, message in cases:
        arguments = {"t": t, "q_measured": q, "sigma_q": 1e-4} | change
        with pytest.raises(ArgumentError, match=message):
            trajectory_inverse_dynamics(robot, arguments.pop("t"), arguments.pop("q_measured"), **arguments)
    with pytest.raises(ArgumentError, match="^robot"):
        trajectory_inverse_dynamics("puma560", t, q, sigma_q=1e-4)


def test_trajectory_inverse_dynamics_names_time_steps_too_small_to_invert():
    """1e-302 s steps overflowed the default smoothness σ (2π / 16 Δt)⁴ as a bare OverflowError; subnormal steps
    make 1/Δt itself infinite."""
    robot = gtdyn.load_robot("rr")
    q = np.zeros((5, 2))
    with pytest.raises(ArgumentError, match="^t: time steps of 1e-302 s .* too small"):
        trajectory_inverse_dynamics(robot, np.arange(5) * 1e-302, q, sigma_q=1e-3)
    with pytest.raises(ArgumentError, match="^t: time steps down to .* too small to invert"):
        trajectory_inverse_dynamics(robot, np.arange(5) * 1e-320, q, sigma_q=1e-3, smoothness=1.0)


def test_trajectory_inverse_dynamics_on_a_closed_loop():
    """The four-bar under a constant crank torque (constant, so that the torque held over each step by the
    simulator is also the torque at each sample): the loop's factors close every sample, only the crank is
    integrated, the passive joints' τ stay zero and the crank's τ is recovered to the snap prior's bias."""
    robot = gtdyn.load_robot("four_bar")
    start = gtdyn.close_loops(robot, q={"j1": 1.7128})
    trajectory = gtdyn.simulate(robot, start.q, start.v, tau=np.array([0.3, 0, 0, 0]), dt=0.01, steps=15,
                                method="trapezoidal", progress=False)
    estimate = trajectory_inverse_dynamics(robot, trajectory.t, trajectory.q, sigma_q=1e-6, smoothness=1e6)
    assert np.max(np.abs(estimate.tau[:, 0] - 0.3)) < 1e-3
    assert np.max(np.abs(estimate.tau[:, 1:])) < 1e-9
    assert np.max(np.abs(estimate.q - trajectory.q)) < 1e-9
    assert np.max(np.abs(estimate.v - trajectory.v)) < 1e-4


def test_trajectory_inverse_dynamics_on_an_underactuated_arm():
    """The 3R arm with its middle joint passive: the dynamics decide that joint's q̈, so from noisy samples the
    start cannot meet every integration factor and Levenberg–Marquardt alone would stop there; the answer must
    satisfy every hard factor all the same (Gauss–Newton restores them), with the passive torque zero."""
    robot = gtdyn.load_robot("rrr").with_actuated(["j1", "j3"])
    tau = np.array([1.0, 0.0, 0.5])
    trajectory = gtdyn.simulate(robot, [0.3, 0.2, 0.1], np.zeros(3), tau=tau, dt=0.01, steps=20,
                                method="trapezoidal", progress=False)
    measured = trajectory.q + 1e-4 * np.random.default_rng(0).standard_normal(trajectory.q.shape)
    estimate = trajectory_inverse_dynamics(robot, trajectory.t, measured, sigma_q=1e-4)
    graph, values = estimate.graph, estimate.values
    hard = [np.max(np.abs(graph.at(i).unwhitenedError(values))) for i in range(graph.size())
            if graph.at(i).noiseModel().isConstrained()]
    assert max(hard) < 1e-9
    assert np.max(np.abs(estimate.tau[:, 1])) < 1e-9
    assert np.max(np.abs(estimate.tau - tau)) < 0.3  # measured 0.16 N·m


FOUR_BAR_DT, FOUR_BAR_STEPS, ENCODER_SIGMA = 0.01, 100, 0.01


def crank_torque(k):
    """A small known drive on the crank (0.05 N·m at 1 Hz; gravity's torque on the linkage is ~1.8 N·m)."""
    return np.array([0.05 * np.sin(2 * np.pi * k * FOUR_BAR_DT), 0.0, 0.0, 0.0])


@pytest.mark.heavy  # the suite keeps the estimator through transmissions
def test_fixed_lag_estimator_tracks_the_four_bar():
    """The crank starts 45° below horizontal (j1 = 1.7128 rad) at rest and swings between about −45° and
    −135° (never near the flat, singular configurations). The truth is an RK4 simulation with the torque held
    over each step; the estimator (trapezoidal rule, torque known to 0.01 N·m) starts from a crank angle
    0.03 rad off and sees only the crank encoder with σ = 0.01 rad noise. Its filtered crank angle must beat
    the encoder well (this seed: RMSE 0.0036 rad, 0.0020 after the first 0.1 s, against the readings'
    0.0106); on the parallelogram every joint angle is ±j1 + const, so the others must be as good, and every
    estimate must close the loop. The smoothed estimates ten steps back are better still."""
    robot = gtdyn.load_robot("four_bar")
    start = gtdyn.close_loops(robot, q={"j1": 1.7128})
    torques = np.array([crank_torque(k) for k in range(FOUR_BAR_STEPS + 1)])
    truth = gtdyn.simulate(robot, start.q, start.v, tau=torques[:-1], dt=FOUR_BAR_DT, steps=FOUR_BAR_STEPS,
                           method="rk4", progress=False)
    assert np.ptp(truth.q[:, 0]) > 1.0  # it swings
    readings = truth.q[:, 0] + ENCODER_SIGMA * np.random.default_rng(3).standard_normal(FOUR_BAR_STEPS + 1)
    guess = gtdyn.close_loops(robot, q={"j1": 1.7128 + 0.03}).q
    estimator = FixedLagEstimator(robot, FOUR_BAR_DT, 10, "j1", ENCODER_SIGMA, crank_torque, q0=guess)
    for k, z in enumerate(readings):
        estimate = estimator.update(z)
        assert estimate.k == k and estimate.q.shape == (4,)
    q = np.array([e.q for e in estimator.estimates])
    rmse = np.sqrt(np.mean((q - truth.q) ** 2, axis=0))
    assert rmse[0] < 0.6 * ENCODER_SIGMA, rmse  # 0.19σ–0.52σ over seeds 0–9 (this seed: 0.36σ)
    assert np.all(rmse < ENCODER_SIGMA), rmse
    settled = np.sqrt(np.mean((q[10:, 0] - truth.q[10:, 0]) ** 2))  # after the first 0.1 s
    assert settled < 0.5 * ENCODER_SIGMA, settled  # 0.13σ–0.42σ over seeds 0–9
    v = np.array([e.v for e in estimator.estimates])
    assert np.sqrt(np.mean((v[10:] - truth.v[10:]) ** 2)) < 0.1  # rad/s (0.01–0.064), of up to ~6 rad/s
    assert np.allclose(q[:, 1], -q[:, 0], atol=1e-6) and np.allclose(q[:, 2], q[:, 0], atol=1e-6)
    assert np.allclose([e.tau[1:] for e in estimator.estimates], 0.0, atol=1e-9)  # passive joints
    window = estimator.window()
    assert [e.k for e in window] == list(range(FOUR_BAR_STEPS - 10, FOUR_BAR_STEPS + 1))
    smoothed = np.array([e.q[0] for e in window[:5]]) - truth.q[[e.k for e in window[:5]], 0]
    assert np.sqrt(np.mean(smoothed ** 2)) < 0.5 * ENCODER_SIGMA


def test_fixed_lag_estimator_rejects_bad_arguments():
    robot = gtdyn.load_robot("four_bar")
    q0 = gtdyn.close_loops(robot, q={"j1": 1.7128}).q
    good = {"robot": robot, "dt": 0.01, "lag": 10, "encoder_joints": "j1", "sigma_encoder": 0.01,
            "tau_of_step": crank_torque, "q0": q0}
    cases = [
        ({"robot": "four_bar"}, "^robot"),
        ({"dt": 0.0}, "^dt"),
        ({"dt": float("nan")}, "^dt"),
        ({"lag": 0}, "^lag"),
        ({"lag": 2.5}, "^lag"),
        ({"encoder_joints": "j9"}, "^encoder_joints"),
        ({"encoder_joints": ["j1", "j1"]}, "^encoder_joints"),
        ({"encoder_joints": []}, "^encoder_joints"),
        ({"sigma_encoder": 0.0}, "^sigma_encoder"),
        ({"sigma_encoder": [0.01, 0.01]}, "^sigma_encoder"),
        ({"tau_of_step": np.zeros((5, 3))}, "^tau_of_step"),
        ({"q0": q0[:3]}, "^q0"),
        ({"sigma_tau": -1.0}, "^sigma_tau"),
        ({"rule": "rk4"}, "^rule"),
        ({"smoother": "kalman"}, "^smoother"),
    ]
    for change, message in cases:
        arguments = good | change
        with pytest.raises(ArgumentError, match=message):
            FixedLagEstimator(**arguments)
    estimator = FixedLagEstimator(**(good | {"tau_of_step": np.zeros((1, 4))}))
    with pytest.raises(ArgumentError, match="^reading"):
        estimator.update([1.7, 1.7])
    with pytest.raises(ArgumentError, match="^reading"):
        estimator.update(float("nan"))
    estimator.update(1.7128)
    with pytest.raises(ArgumentError, match="^tau_of_step: no torques for step 1"):
        estimator.update(1.7128)
    bad = FixedLagEstimator(**(good | {"tau_of_step": lambda k: [0.0]}))
    with pytest.raises(ArgumentError, match="^tau_of_step: bad torques for step 0"):
        bad.update(1.7128)


def test_fine_sampling_is_solved_by_qr_or_named():
    """At Δt = 1e-5 s the snap priors' weights span ~1e9 of the others', and GTSAM's default (Cholesky of the
    normal equations, which squares that) raised a raw 'Indeterminate linear system': QR recovers τ (measured
    2.5e-7 N·m from exact samples; 1e-5 allowed). Steps so short that even QR loses a variable (1e-6 s with a
    1e-6 rad encoder) are a gtdyn error naming the arguments and the variable, with what to do."""
    robot = gtdyn.load_robot("rr")

    def motion(t):
        q = np.stack([0.3 * np.sin(5 * t), 0.2 * np.cos(3 * t)], axis=-1)
        v = np.stack([1.5 * np.cos(5 * t), -0.6 * np.sin(3 * t)], axis=-1)
        a = np.stack([-7.5 * np.sin(5 * t), -1.8 * np.cos(3 * t)], axis=-1)
        return q, v, a

    t = 0.3 + 1e-5 * np.arange(20)
    q, v, a = motion(t)
    estimate = gtdyn.trajectory_inverse_dynamics(robot, t, q, sigma_q=1e-9)
    assert np.max(np.abs(estimate.tau[10] - gtdyn.inverse_dynamics(robot, q[10], v[10], a[10]).tau)) < 1e-5
    t = 1e-6 * np.arange(20)
    with pytest.raises(gtdyn.IndeterminateSystemError,
                       match=r"^t, q_measured: the trajectory's equations lost v\d@\d+"):
        gtdyn.trajectory_inverse_dynamics(robot, t, motion(t)[0], sigma_q=1e-6)


def test_an_estimate_stopped_by_the_iteration_limit_says_so():
    """Levenberg–Marquardt stopped by max_iterations returns its last iterate, not the optimum: a
    ConvergenceWarning says so (it used to be returned like a converged estimate)."""
    robot = gtdyn.load_robot("rr")
    t = 0.3 + 1e-5 * np.arange(20)
    q = np.stack([0.3 * np.sin(5 * t), 0.2 * np.cos(3 * t)], axis=-1)
    with pytest.warns(gtdyn.ConvergenceWarning, match="stopped at max_iterations = 3 before converging"):
        estimate = gtdyn.trajectory_inverse_dynamics(robot, t, q, sigma_q=1e-6, max_iterations=3)
    assert estimate.iterations >= 3


QUADRUPED_Q0 = np.tile([0.1, 0.7, -1.4], 4)
QUADRUPED_TAU = np.tile([0.02, -0.03, 0.04], 4)  # N·m: the legs move ~0.1–0.3 rad in 0.1 s
QUADRUPED_TWIST = np.array([0.3, -0.2, 0.5, 0.1, 0.2, 0.0])  # the base tumbles as it falls


def test_trajectory_inverse_dynamics_of_a_free_floating_geared_hopper(tmp_path):
    """The suite's representative of the quadruped case below (which is in the heavy set): the hopper of
    tests/test_nonlinear_graph.py — a floating body whose CoM frame is offset and turned from its link frame, a
    revolute hip, an oblique prismatic knee and a 6:1 rotor on the hip — in free flight under constant torques,
    11 samples at Δt = 10 ms. The joint torques are recovered from the joint angles and base poses alone; the
    rule's own accuracy is measured on RK4 samples, and the trapezoidal samples must do twice as well (measured:
    5.1e-5 and 1.1e-5 N·m)."""
    from test_nonlinear_graph import FLOATING

    path = tmp_path / "hopper.urdf"
    path.write_text(FLOATING)
    robot = gtdyn.load_robot(str(path), base="floating")
    tau, q0 = np.array([0.3, -2.0, 0.0]), np.array([0.2, 0.05, 6 * 0.2 + 0.1])  # the rotor follows the hip
    estimates = {}
    for method in ("trapezoidal", "rk4"):
        run = gtdyn.simulate(robot, q0, np.zeros(3), tau=tau, dt=0.01, steps=10, method=method,
                             base_twist=QUADRUPED_TWIST, progress=False)
        estimates[method] = trajectory_inverse_dynamics(robot, run.t, run.q, sigma_q=1e-6, smoothness=1e6,
                                                        base_pose=run.base_pose, sigma_base=1e-4)
    accuracy = np.max(np.abs(estimates["rk4"].tau - tau))
    error = np.max(np.abs(estimates["trapezoidal"].tau - tau))
    assert 1e-6 < accuracy < 1e-3
    assert error < 0.5 * accuracy, (error, accuracy)
    assert estimates["trapezoidal"].tau[:, 2].tolist() == [0.0] * 11  # the driven rotor is passive
    assert np.max(np.abs(estimates["trapezoidal"].q[:, 2] - (6 * estimates["trapezoidal"].q[:, 0] + 0.1))) < 1e-9


@pytest.mark.heavy
def test_trajectory_inverse_dynamics_of_a_free_floating_quadruped():
    """A floating quadruped in free flight (no contacts) under constant joint torques, simulated with the
    trapezoidal rule (11 samples at Δt = 10 ms): the joint torques are recovered from the joint angles and the
    base poses alone, with the base's twist and acceleration estimated too. The rule's own accuracy in τ, from
    the samples of an RK4 simulation at the same Δt (which the graph's trapezoidal factors cannot fit exactly):
    1.3e-4 N·m. Fed the trapezoidal samples the error is the snap prior's pull on the free sequences only
    (measured 3.0e-5 N·m; the base's motion, tied to the joints' by F0 = 0, makes it a larger share of the
    rule's accuracy than on the PUMA): bound half the rule's accuracy."""
    robot = gtdyn.load_robot("quadruped", base="floating")
    runs = {method: gtdyn.simulate(robot, QUADRUPED_Q0, np.zeros(12), tau=QUADRUPED_TAU, dt=0.01, steps=10,
                                   method=method, base_twist=QUADRUPED_TWIST, progress=False)
            for method in ("trapezoidal", "rk4")}
    estimates = {method: trajectory_inverse_dynamics(robot, run.t, run.q, sigma_q=1e-6, smoothness=1e6,
                                                     base_pose=run.base_pose, sigma_base=1e-4)
                 for method, run in runs.items()}
    accuracy = np.max(np.abs(estimates["rk4"].tau - QUADRUPED_TAU))
    error = np.max(np.abs(estimates["trapezoidal"].tau - QUADRUPED_TAU))
    assert 1e-5 < accuracy < 1e-3
    assert error < 0.5 * accuracy, (error, accuracy)
    exact, run = estimates["trapezoidal"], runs["trapezoidal"]
    assert exact.base_pose.shape == (11, 4, 4) and exact.base_twist.shape == exact.base_accel.shape == (11, 6)
    assert np.max(np.abs(exact.base_pose - run.base_pose)) < 1e-6
    assert np.max(np.abs(exact.base_twist - run.base_twist)) < 1e-4
    assert np.max(np.abs(exact.q - run.q)) < 1e-6
    with pytest.raises(ArgumentError, match="^base_pose: .* floating base, whose motion must be measured"):
        trajectory_inverse_dynamics(robot, run.t, run.q, sigma_q=1e-6)
    with pytest.raises(ArgumentError, match=r"^base_pose: expected an array \(11, 4, 4\)"):
        trajectory_inverse_dynamics(robot, run.t, run.q, sigma_q=1e-6, base_pose=run.base_pose[:-1])
    bad = run.base_pose.copy()
    bad[3, 0, 0] = 2.0
    with pytest.raises(ArgumentError, match=r"^base_pose\[3\]: .* not a rigid transform"):
        trajectory_inverse_dynamics(robot, run.t, run.q, sigma_q=1e-6, base_pose=bad)
    with pytest.raises(ArgumentError, match="^sigma_base"):
        trajectory_inverse_dynamics(robot, run.t, run.q, sigma_q=1e-6, base_pose=run.base_pose, sigma_base=[1.0] * 5)
    with pytest.raises(ArgumentError, match="^base_pose: 'rr' has a fixed base"):
        trajectory_inverse_dynamics(gtdyn.load_robot("rr"), run.t, np.zeros((11, 2)), sigma_q=1e-6,
                                    base_pose=run.base_pose)


GEARED_CHAIN = """<robot name="geared_chain">
  <link name="base"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="50" velocity="10"/></joint>
  <link name="l1"><inertial><origin xyz="0.4 0 0"/><mass value="1.5"/>
    <inertia ixx="0.01" ixy="0.002" ixz="0" iyy="0.08" iyz="0" izz="0.08"/></inertial></link>
  <joint name="rotor1" type="revolute"><parent link="base"/><child link="r1"/><origin xyz="0 0 -0.1"/>
    <axis xyz="0 0 1"/><limit lower="-30" upper="30" effort="5" velocity="90"/>
    <mimic joint="j1" multiplier="6" offset="0.2"/></joint>
  <link name="r1"><inertial><mass value="0.3"/>
    <inertia ixx="0.0002" ixy="0" ixz="0" iyy="0.0002" iyz="0" izz="0.0003"/></inertial></link>
  <joint name="j2" type="prismatic"><parent link="l1"/><child link="l2"/><origin xyz="0.8 0 0"/><axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" effort="50" velocity="10"/></joint>
  <link name="l2"><inertial><origin xyz="0.3 0 0"/><mass value="0.8"/>
    <inertia ixx="0.005" ixy="0.001" ixz="0" iyy="0.03" iyz="0" izz="0.03"/></inertial></link>
  <joint name="rotor2" type="revolute"><parent link="l1"/><child link="r2"/><origin xyz="0.7 0 0"/>
    <axis xyz="1 0 0"/><limit lower="-30" upper="30" effort="5" velocity="90"/>
    <mimic joint="j2" multiplier="-20"/></joint>
  <link name="r2"><inertial><mass value="0.1"/>
    <inertia ixx="0.0001" ixy="0" ixz="0" iyy="0.00005" iyz="0" izz="0.00005"/></inertial></link>
</robot>"""


@pytest.fixture(scope="module")
def geared_chain(tmp_path_factory):
    """Two links (a revolute, then a prismatic joint) each driven through a geared rotor (<mimic>: 6:1 on the
    base, −20 rad/m riding on the first link), under gravity in the plane of motion."""
    path = tmp_path_factory.mktemp("geared") / "geared_chain.urdf"
    path.write_text(GEARED_CHAIN)
    robot = gtdyn.load_robot(str(path))
    assert len(robot.transmissions) == 2
    q0 = np.zeros(robot.num_dofs)
    q0[robot.joint_names.index("rotor1")] = 0.2
    return robot, q0


def test_trajectory_inverse_dynamics_through_transmissions(geared_chain):
    """Smooth known drive torques (the rotors passive: the transmissions drive them), trapezoidal simulation,
    16 samples at 10 ms: the drive joints' torques are recovered from the samples (inside the run). The rule's
    own accuracy in τ (the same graph fed RK4 samples): 6.2e-3 N·m; from the trapezoidal samples the snap
    prior's bias only (measured 1.4e-3 N·m: a larger share than on the PUMA, the rotors' reflected inertia
    weighing the free q̈ sequences by ratio²): bound half the rule's accuracy. The rotors follow the coupling
    exactly and carry no torque."""
    robot, q0 = geared_chain
    names = robot.joint_names
    drives = [names.index("j1"), names.index("j2")]

    def tau(t, q=None, v=None):
        out = np.zeros(robot.num_dofs)
        out[drives] = 0.5 + 0.3 * np.sin(8 * t), -0.4 * np.cos(6 * t)
        return out

    runs = {method: gtdyn.simulate(robot, q0, np.zeros(robot.num_dofs), tau=tau, dt=0.01, steps=15,
                                   method=method, gravity=(0, -9.81, 0), progress=False)
            for method in ("trapezoidal", "rk4")}
    truth = np.array([tau(t)[drives] for t in runs["trapezoidal"].t])
    estimates = {method: trajectory_inverse_dynamics(robot, run.t, run.q, sigma_q=1e-6, smoothness=1e6,
                                                     gravity=(0, -9.81, 0))
                 for method, run in runs.items()}
    accuracy = np.max(np.abs(estimates["rk4"].tau[1:-1, drives] - truth[1:-1]))
    error = np.max(np.abs(estimates["trapezoidal"].tau[1:-1, drives] - truth[1:-1]))
    assert error < 0.5 * accuracy, (error, accuracy)
    exact = estimates["trapezoidal"]
    rotors = [names.index("rotor1"), names.index("rotor2")]
    assert np.max(np.abs(exact.tau[:, rotors])) < 1e-12
    assert np.max(np.abs(exact.q[:, rotors[0]] - (6 * exact.q[:, drives[0]] + 0.2))) < 1e-9
    assert np.max(np.abs(exact.qdd[:, rotors[1]] + 20 * exact.qdd[:, drives[1]])) < 1e-6


def test_fixed_lag_estimator_through_transmissions(geared_chain):
    """The geared chain read through the first joint's encoder only (σ = 1e-3 rad), the drive torques known, for
    0.2 s: the estimator tracks the read joint better than its readings (largest error 8e-4 rad) and the unread
    prismatic one from the dynamics alone (largest error 0.014 m, from a guess at rest), and keeps every rotor
    on its coupling."""
    robot, q0 = geared_chain
    tau = np.zeros(robot.num_dofs)
    tau[robot.joint_names.index("j1")], tau[robot.joint_names.index("j2")] = 0.5, -0.2
    truth = gtdyn.simulate(robot, q0, np.zeros(robot.num_dofs), tau=tau, dt=0.01, steps=20, method="rk4",
                           gravity=(0, -9.81, 0), progress=False)
    readings = truth.q[:, 0] + 1e-3 * np.random.default_rng(1).standard_normal(21)
    estimator = FixedLagEstimator(robot, 0.01, 5, "j1", 1e-3, np.tile(tau, (21, 1)), q0=q0, gravity=(0, -9.81, 0))
    q = np.array([estimator.update(z).q for z in readings])
    names = robot.joint_names
    error = np.abs(q - truth.q)[:, [names.index("j1"), names.index("j2")]]
    assert np.max(error[:, 0]) < 1.5e-3 and np.max(error[:, 1]) < 0.03, np.max(error, axis=0)  # 8e-4 rad, 0.014 m
    assert np.allclose(q[:, names.index("rotor1")], 6 * q[:, names.index("j1")] + 0.2, atol=1e-9)
