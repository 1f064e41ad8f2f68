"""Verify ``gtdyn.estimation`` beyond what the fast tests afford: many noise seeds, longer runs, both smoothers.

    python -m benchmarks.verify_estimation            # ~1–2 minutes
    python -m benchmarks.verify_estimation --quick    # a few seeds only

1. Trajectory inverse dynamics on the PUMA 560 (the test's motion: rest gravity torques plus sinusoids,
   simulated with the trapezoidal rule, 31 samples at Δt = 10 ms): the τ error from exact samples, from the
   samples of an RK4 simulation at the same Δt (the trapezoidal rule's own accuracy in τ), and its spread over
   noise seeds with σ = 1e-4 rad, against inverse dynamics at three-point finite differences.
2. One factor per step against the full graph (``dynamics="compiled"`` / ``"full"``), timed side by side with
   the same answers: the PUMA 560's estimate above and its fixed-lag filter, and the bundled quadruped in free
   flight (21 samples at 10 ms, constant joint torques, RK4 truth; encoders σ = 1e-3 rad, exact base poses).
3. The four-bar fixed-lag estimator (the test's setting: crank encoder σ = 0.01 rad, 0.05 N·m sinusoid on the
   crank, RK4 truth) over 200 steps and many seeds: RMSE of the filtered and of the smoothed crank angle; the
   batch smoother against the incremental one on the same readings; milliseconds per update.

Prints a report and exits 1 if a bound the tests state is broken on any seed.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import gtdyn
from gtdyn.estimation import FixedLagEstimator, trajectory_inverse_dynamics

PUMA_Q0 = np.array([0, np.pi / 4, -np.pi, 0, np.pi / 4, 0.0])  # the documented state, inside the joint limits
DRIVE = 2 * np.pi * np.array([1.0, 1.5, 2.0, 2.5, 3.0, 1.2])


def puma(seeds: int) -> bool:
    robot = gtdyn.load_robot("puma560")
    zero = np.zeros(6)
    g0 = gtdyn.inverse_dynamics(robot, PUMA_Q0, zero, zero).tau
    inertia = np.array([gtdyn.inverse_dynamics(robot, PUMA_Q0, zero, e).tau[i] - g0[i]
                        for i, e in enumerate(np.eye(6))])

    def tau(t, q=None, v=None):
        return g0 + 3.0 * inertia * np.sin(DRIVE * t)

    dt, steps = 1e-2, 30
    trap = gtdyn.simulate(robot, PUMA_Q0, zero, tau=tau, dt=dt, steps=steps, method="trapezoidal", progress=False)
    rk4 = gtdyn.simulate(robot, PUMA_Q0, zero, tau=tau, dt=dt, steps=steps, method="rk4", progress=False)
    fine = gtdyn.simulate(robot, PUMA_Q0, zero, tau=tau, dt=dt / 16, steps=16 * steps, method="rk4", progress=False)
    truth = np.array([tau(t) for t in trap.t])
    print("PUMA 560, 31 samples at 10 ms")
    print(f"  trapezoidal simulation vs RK4 (dt/16): {np.max(np.abs(trap.q - fine.q[::16])):.2e} rad; "
          f"RK4 at dt: {np.max(np.abs(rk4.q - fine.q[::16])):.2e} rad")
    ok = True
    for name, q in (("trapezoidal samples", trap.q), ("RK4 samples", rk4.q), ("RK4 dt/16 samples", fine.q[::16])):
        r = trajectory_inverse_dynamics(robot, trap.t, q, sigma_q=1e-6, smoothness=1e6)
        print(f"  exact {name:20s}: max |τ error| {np.max(np.abs(r.tau - truth)):.2e} N·m "
              f"({r.iterations} LM iterations, {r.seconds:.2f} s)")
    exact = trajectory_inverse_dynamics(robot, trap.t, trap.q, sigma_q=1e-6, smoothness=1e6)
    ok &= np.max(np.abs(exact.tau - truth)) < 1e-3
    rms, largest, naive = [], [], []
    for seed in range(seeds):
        measured = trap.q + 1e-4 * np.random.default_rng(seed).standard_normal(trap.q.shape)
        error = trajectory_inverse_dynamics(robot, trap.t, measured, sigma_q=1e-4).tau - truth
        rms.append(np.sqrt(np.mean(error ** 2)))
        largest.append(np.max(np.abs(error)))
        v = (measured[2:] - measured[:-2]) / (2 * dt)
        a = (measured[2:] - 2 * measured[1:-1] + measured[:-2]) / dt ** 2
        fd = np.array([gtdyn.inverse_dynamics(robot, q, v_, a_).tau for q, v_, a_ in zip(measured[1:-1], v, a)])
        naive.append(np.sqrt(np.mean((fd - truth[1:-1]) ** 2)))
    print(f"  noisy (σ = 1e-4 rad, {seeds} seeds): RMS τ error {min(rms):.3f}–{max(rms):.3f} N·m, largest "
          f"{min(largest):.2f}–{max(largest):.2f} N·m; finite differences RMS {min(naive):.2f}–{max(naive):.2f} N·m")
    ok &= max(rms) < 0.25 and max(largest) < 1.5
    return bool(ok)


def four_bar(seeds: int, steps: int) -> bool:
    robot = gtdyn.load_robot("four_bar")
    dt, sigma = 0.01, 0.01

    def crank(k):
        return np.array([0.05 * np.sin(2 * np.pi * k * dt), 0.0, 0.0, 0.0])

    start = gtdyn.close_loops(robot, q={"j1": 1.7128})
    truth = gtdyn.simulate(robot, start.q, start.v, tau=np.array([crank(k) for k in range(steps)]), dt=dt,
                           steps=steps, method="rk4", progress=False)
    guess = gtdyn.close_loops(robot, q={"j1": 1.7128 + 0.03}).q
    print(f"four-bar, {steps} steps of 10 ms, crank encoder σ = {sigma} rad, lag 10 steps")
    ok = True
    for seed in range(seeds):
        readings = truth.q[:, 0] + sigma * np.random.default_rng(seed).standard_normal(steps + 1)
        estimator = FixedLagEstimator(robot, dt, 10, "j1", sigma, crank, q0=guess)
        smoothed = []
        started = time.perf_counter()
        for k, z in enumerate(readings):
            estimator.update(z)
            if k >= 10:
                oldest = estimator.window()[0]
                assert oldest.k == k - 10
                smoothed.append(oldest.q[0] - truth.q[oldest.k, 0])
        per_step = (time.perf_counter() - started) / (steps + 1) * 1e3
        q = np.array([e.q[0] for e in estimator.estimates])
        filtered = np.sqrt(np.mean((q - truth.q[:, 0]) ** 2))
        settled = np.sqrt(np.mean((q[10:] - truth.q[10:, 0]) ** 2))
        print(f"  seed {seed}: readings RMSE {np.sqrt(np.mean((readings - truth.q[:, 0]) ** 2)):.4f}, filtered "
              f"{filtered:.4f} ({settled:.4f} after 0.1 s), smoothed 10 steps back "
              f"{np.sqrt(np.mean(np.square(smoothed))):.4f} "
              f"rad; {per_step:.1f} ms per update (window() included)")
        ok &= filtered < 0.6 * sigma and settled < 0.5 * sigma
    readings = truth.q[:31, 0] + sigma * np.random.default_rng(0).standard_normal(31)
    runs = {}
    for smoother in ("incremental", "batch"):
        estimator = FixedLagEstimator(robot, dt, 10, "j1", sigma, crank, q0=guess, smoother=smoother)
        started = time.perf_counter()
        runs[smoother] = np.array([estimator.update(z).q for z in readings])
        print(f"  {smoother} smoother, 31 steps: {(time.perf_counter() - started) / 31 * 1e3:.1f} ms per update")
    difference = np.max(np.abs(runs["incremental"] - runs["batch"]))
    print(f"  incremental vs batch filtered estimates: max difference {difference:.1e} rad")
    ok &= difference < 1e-4
    return bool(ok)


QUADRUPED_Q0 = np.tile([0.1, 0.7, -1.4], 4)  # tests/test_estimation.py's free-flight case
QUADRUPED_TAU = np.tile([0.02, -0.03, 0.04], 4)
QUADRUPED_TWIST = np.array([0.3, -0.2, 0.5, 0.1, 0.2, 0.0])


def one_factor_per_step() -> bool:
    """``dynamics="compiled"`` against ``"full"``: seconds and the largest difference of the estimates, which must
    be far below the estimates' own error (the optimizers stop, or relinearize, at different points)."""
    print('one factor per step (dynamics="compiled") against the full graph ("full")')
    zero = np.zeros(6)
    puma_robot = gtdyn.load_robot("puma560")
    hold = gtdyn.inverse_dynamics(puma_robot, PUMA_Q0, zero, zero).tau  # gravity held, plus a push on each joint
    trap = gtdyn.simulate(puma_robot, PUMA_Q0, zero, tau=hold + [1.0, -2.0, 0.5, 0.01, 0.01, 0.001], dt=0.01, steps=30,
                          method="rk4", progress=False)
    quadruped = gtdyn.load_robot("quadruped", base="floating")
    fall = gtdyn.simulate(quadruped, QUADRUPED_Q0, np.zeros(12), tau=QUADRUPED_TAU, dt=0.01, steps=20, method="rk4",
                          base_twist=QUADRUPED_TWIST, progress=False)
    noise = np.random.default_rng(0)
    cases = [("PUMA 560", puma_robot, trap, {}, {}),
             ("quadruped, free flight", quadruped, fall, {"base_pose": fall.base_pose, "sigma_base": 1e-4},
              {"sigma_base": 1e-4, "base_twist0": QUADRUPED_TWIST})]
    ok = True
    for name, robot, run, base, filter_base in cases:
        measured = run.q + 1e-3 * noise.standard_normal(run.q.shape)
        estimates, seconds, filtered, per_update = {}, {}, {}, {}
        for mode in ("full", "compiled"):
            gtdyn.compile(robot, "inverse", derivatives=True)  # compiled (or loaded) once, outside the timing
            started = time.perf_counter()
            estimates[mode] = trajectory_inverse_dynamics(robot, run.t, measured, sigma_q=1e-3, dynamics=mode, **base)
            seconds[mode] = time.perf_counter() - started
            estimator = FixedLagEstimator(robot, 0.01, 5, robot.joint_names, 1e-3, run.tau, q0=measured[0],
                                          dynamics=mode, **filter_base)
            poses = run.base_pose if robot.floating_base else [None] * len(run.t)
            started = time.perf_counter()
            filtered[mode] = np.array([estimator.update(z, base_pose=T).q for z, T in zip(measured, poses)])
            per_update[mode] = (time.perf_counter() - started) / len(run.t) * 1e3
        apart = np.max(np.abs(estimates["compiled"].tau - estimates["full"].tau))
        error = np.max(np.abs(estimates["full"].tau - run.tau))
        filter_apart = np.max(np.abs(filtered["compiled"] - filtered["full"]))
        filter_error = np.max(np.abs(filtered["full"] - run.q))
        print(f"  {name}, {len(run.t)} samples: estimate {seconds['full']:.2f} s full, {seconds['compiled']:.2f} s "
              f"compiled ({seconds['full'] / seconds['compiled']:.1f}x), τ apart {apart:.1e} N·m (error {error:.1e}); "
              f"filter {per_update['full']:.1f} → {per_update['compiled']:.1f} ms per update "
              f"({per_update['full'] / per_update['compiled']:.1f}x), q apart {filter_apart:.1e} (error "
              f"{filter_error:.1e})")
        ok &= apart < 0.01 * error and filter_apart < 0.05 * filter_error
    return bool(ok)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 seeds, 100 four-bar steps")
    args = parser.parse_args(argv)
    seeds, steps = (3, 100) if args.quick else (20, 200)
    ok = puma(seeds)
    ok &= one_factor_per_step()
    ok &= four_bar(seeds // 2 if not args.quick else seeds, steps)
    print("OK" if ok else "FAILED: a bound the tests state was broken")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
