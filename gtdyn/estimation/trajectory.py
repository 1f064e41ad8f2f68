"""Inverse dynamics over a measured trajectory, as one factor graph (paper 000 §5.3, "collocation").

Every sample k of the trajectory carries the full nonlinear dynamics graph at time step k (pose, twist,
acceleration, wrench and torque factors: the Newton–Euler equations, exact); consecutive samples are joined
by integration factors (q from q̇ and q̇ from q̈, exact under the chosen rule); the measured joint angles are
Gaussian priors on q, and a weak prior on each joint's snap makes q̇ and q̈ well defined. Levenberg–Marquardt
then finds the trajectory (q, q̇, q̈, τ, and every link's pose, twist, acceleration and joint wrench) that
explains the samples best.
"""

from __future__ import annotations

import math
import re
import time
import warnings
from dataclasses import dataclass

import gtsam
import numpy as np

from gtdyn import keys as K
from gtdyn.arguments import choice, gravity_vector, positive_vector, whole_number
from gtdyn.arguments.series import base_pose_samples, joint_samples, sample_times
from gtdyn.equations import GRAVITY
from gtdyn.errors import ArgumentError, ConvergenceWarning, IndeterminateSystemError
from gtdyn.estimation.base_motion import base_motion
from gtdyn.estimation.snap import SnapFactor
from gtdyn.estimation.steps import (
    StepDynamics,
    base_series,
    between_steps,
    check_robot,
    coupled,
    dynamics_mode,
    integrated_joints,
    joint_key,
    joint_series,
    planar_normals,
)
from gtdyn.factors.integration import RULES
from gtdyn.kinematics.loop_closure import project, solve_rates
from gtdyn.model.robot import Robot

CUTOFF_FRACTION = 1 / 16
"""Default smoothing: the snap prior's cut-off frequency as a fraction of the sampling rate 1/Δt."""


@dataclass(frozen=True, eq=False)
class TrajectoryEstimate:
    """The trajectory that explains the samples: at each time ``t[k]`` the joint angles ``q``, velocities
    ``v``, accelerations ``qdd`` and torques ``tau`` (rows in time, columns in ``robot.joint_names`` order).
    ``error`` is the graph's final error (GTSAM's ½ Σ‖whitened residual‖², hard constraints weighted by their
    penalty), ``initial_error`` the error at the start, ``iterations`` the optimiser's count (Levenberg–Marquardt
    plus any Gauss–Newton iterations); ``smoothness`` the snap prior's s per joint and ``cutoff`` its cut-off
    frequency (s/σ)^¼ (rad/s); ``seconds`` the wall time; ``graph`` and ``values`` are the factor graph and its
    solution (keys ``keys.at_step(key, k)``). A floating base's estimated ``base_pose`` (N, 4, 4; world ← root
    link), ``base_twist`` and ``base_accel`` (N, 6; [angular; linear] in the root link frame, the acceleration
    the derivative of the body twist) are None on a fixed base."""

    robot: Robot
    rule: str
    dynamics: str  # "full" or "compiled": how the samples' dynamics entered the graph (``StepDynamics``)
    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray
    error: float
    initial_error: float
    iterations: int
    smoothness: np.ndarray
    cutoff: np.ndarray
    seconds: float
    graph: gtsam.NonlinearFactorGraph
    values: gtsam.Values
    base_pose: np.ndarray | None = None
    base_twist: np.ndarray | None = None
    base_accel: np.ndarray | None = None

    def __repr__(self) -> str:
        return (f"TrajectoryEstimate('{self.robot.name}', {len(self.t)} samples, {self.rule}, error {self.error:.3g} "
                f"after {self.iterations} iterations)")


def trajectory_inverse_dynamics(robot: Robot, t, q_measured, *, sigma_q, rule: str = "trapezoidal",
                                gravity=GRAVITY, smoothness=None, max_iterations: int = 50, base_pose=None,
                                sigma_base=None, base_smoothness=None, dynamics: str = "auto") -> TrajectoryEstimate:
    """The torques (and velocities, accelerations) that explain joint angles measured at times ``t``.

    ``t``: N ≥ 3 increasing times (s; the steps need not be equal); ``q_measured``: array (N, n), one row per
    sample in ``robot.joint_names`` order; ``sigma_q``: the measurement noise's standard deviation (rad or m),
    one number or one per joint, > 0 (for exact samples a small number such as 1e-6, with a large
    ``smoothness``). ``rule``: the integration rule joining the samples, "trapezoidal", "semi_implicit_euler"
    or "euler" — the one the motion came from (a simulation's method), else "trapezoidal", the most accurate.

    Why a smoothness prior. Samples of q alone do not fix q̇ and q̈: per joint the integration factors give two
    equations per interval for three unknowns per sample, so with every q pinned two sequences stay free —
    under the trapezoidal rule the sawtooth q̇_k + c₁(−1)^k (it moves no sample), the sawtooth in q̈ it drags
    along, (4c₁/Δt) k (−1)^k, and a sawtooth c₂(−1)^k of its own; the Euler rules leave an end value of q̇ and
    of q̈ free instead. The dynamics cannot pin them, since every τ is unknown and any q̈ has its τ. So each
    (integrated) joint gets a prior on the change of its jerk, the snap:
    (q̈_{k+1} − q̈_k)/Δt_k − (q̈_k − q̈_{k−1})/Δt_{k−1} ~ N(0, (s Δt)²) — a second difference, which is 4c/Δt
    on a sawtooth of amplitude c but only about q⁗ Δt on a smooth motion. What it leaves of the free sequences
    is their projection on the motion's own snap, a boundary term: on the test's PUMA (Δt = 10 ms, 31
    samples) 3e-4 N·m in τ, against 0.02 N·m with a prior on the jerk itself (a first difference, which
    tells a sawtooth from a smooth motion one power of Δt less sharply) and the trapezoidal rule's own error
    in τ on exact samples, 7e-3 N·m.

    ``smoothness`` is s (rad/s⁴ or m/s⁴, one number or one per joint). It also sets how much the samples are
    smoothed: with noise σ the estimate follows the samples below the cut-off ω_c = (s/σ)^¼ rad/s and
    filters them above it (a smoothing spline); a motion at frequency ω < ω_c is biased by about (ω/ω_c)⁸
    of its amplitude, and white noise leaves q̈ an error of about σ (Δt ω_c⁵ / 5π)^½. The default puts ω_c
    at 1/16 of the sampling rate (s = σ (2π / 16 Δt)⁴, Δt the mean step), for noisy samples of motions
    slower than that; for exact samples pass a large s (ω_c above the Nyquist frequency π/Δt: the samples are
    then followed exactly and the prior only fixes the free sequences).

    Closed loops: the loops' pose, twist and acceleration factors close every sample; only the independent
    joints carry integration factors and snap priors, passive joints' τ are fixed at zero and planar loops
    get the planar factor.

    Transmissions: the driven joints follow their drives through the coupling factors (q, q̇ and q̈); only the
    others are integrated, a driven joint's τ is zero (the transmission's constraint force λ drives it) and its
    samples are priors like the others'.

    Floating bases (in free flight: the environment applies no wrench, F0 = 0). Their motion must be measured:
    ``base_pose``, an array (N, 4, 4) of the root link's pose in the world at each sample (or N ``gtsam.Pose3``),
    Gaussian priors with standard deviation ``sigma_base`` ([rotation (rad); translation (m)] about the base's
    CoM frame, one number or six; default the smallest of ``sigma_q``). The base's pose is integrated from its
    twist on SE(3) and its twist from its acceleration by the same ``rule`` (``gtdyn.factors.base_integration_
    factors``, as ``gtdyn.simulate`` moves it), and its acceleration gets a snap prior with ``base_smoothness``
    (one number or six; default: σ_base (2π / 16 Δt)⁴ as for the joints, or the largest ``smoothness`` when that
    is given). Estimated with the joints: the base's pose, twist and acceleration (``base_pose``,
    ``base_twist``, ``base_accel`` of the result, root link frame), which the joints' motion and F0 = 0 tie to
    the joints' through the dynamics.

    ``dynamics``: how each sample's dynamics enter the graph (``gtdyn.estimation.steps.StepDynamics``): "full",
    every link's Newton–Euler factors; "compiled", one factor per sample over a compiled inverse-dynamics solver
    and its exact derivatives (trees without transmissions, on a fixed or a floating base: the same estimate,
    faster);
    "auto" (default) the compiled form where it covers the robot.

    Initial values: the graph's kinematic part (measurement priors, integration factors and snap priors on
    the integrated joints) is linear in q, q̇, q̈ and is solved exactly; on closed loops the other joints
    then close the loops around it, and ``inverse_dynamics`` at each sample gives τ, the wrenches and the
    link accelerations. That start satisfies every hard factor, which GTSAM's Levenberg–Marquardt needs (its
    error weighs a violated constraint by a fixed penalty, so from finite differences it rejects the steps
    that restore the constraints and stops). On a tree it is already the optimum (with every τ unknown the
    dynamics only determine τ and the wrenches from the motion); on closed loops, where passive joints'
    τ = 0 constrain the motion, Levenberg–Marquardt moves on from it. On underactuated robots (passive
    joints among the independent ones) the dynamics decide the passive joints' q̈, so the start cannot meet
    every integration factor; Gauss–Newton iterations restore them before Levenberg–Marquardt resumes.
    """
    robot = check_robot(robot)
    t = sample_times(t)
    N = len(t)
    q_measured = joint_samples(robot, q_measured, N)
    sigma = _positive(robot.num_dofs, "sigma_q", sigma_q)
    choice("rule", rule, RULES)
    dynamics = dynamics_mode(robot, dynamics)
    gravity = gravity_vector(gravity)
    s = _positive(robot.num_dofs, "smoothness", _default_smoothness(t, sigma) if smoothness is None else smoothness)
    max_iterations = whole_number("max_iterations", max_iterations, 1)
    base = None
    if base_pose is not None or robot.floating_base:
        poses = base_pose_samples(robot, base_pose, N)
        sigma_b = _positive(6, "sigma_base", np.min(sigma) if sigma_base is None else sigma_base)
        if base_smoothness is None:
            base_smoothness = _default_smoothness(t, sigma_b) if smoothness is None else np.max(s)
        base = (poses, sigma_b, _positive(6, "base_smoothness", base_smoothness))

    started = time.perf_counter()
    try:
        return _estimate(robot, t, q_measured, sigma, s, rule, gravity, max_iterations, started, base, dynamics)
    except RuntimeError as e:  # GTSAM's, from an elimination that found a variable undetermined
        if isinstance(e, IndeterminateSystemError) or "Indeterminate linear system" not in str(e):
            raise
        found = re.search(r"variable\s+(\d+)", str(e))
        free = [K.label(int(found.group(1)))] if found else []
        raise IndeterminateSystemError(
            f"t, q_measured: the trajectory's equations lost {', '.join(free) or 'a variable'} in elimination at time "
            f"steps of {float(np.min(np.diff(t))):g} s; with steps this short (or a smoothness this large, "
            f"{float(np.max(s)):g}) the factors' weights span more than double precision holds: downsample the "
            "measurements, or pass a smaller smoothness", free) from None


def _estimate(robot: Robot, t, q_measured, sigma, s, rule: str, gravity, max_iterations: int,
              started: float, base=None, dynamics: str = "auto") -> TrajectoryEstimate:
    """``trajectory_inverse_dynamics`` once its arguments are checked; ``base``: a floating base's measured poses
    (root link frame), σ and smoothness."""
    N = len(t)
    joints = integrated_joints(robot, q_measured[0])
    kinematic = _kinematic_graph(joints, t, q_measured, sigma, s, rule)
    q0, v0, a0 = _initial_motion(robot, joints, t, q_measured, kinematic)
    steps = StepDynamics(robot, gravity, planar_normals(robot, q0[0]), dynamics)
    graph, values = gtsam.NonlinearFactorGraph(), gtsam.Values()
    graph.push_back(kinematic)
    states = [None] * N
    if base is not None:
        base_graph, states = base_motion(robot, t, *base, rule, _solve_qr)
        graph.push_back(base_graph)
    for k in range(N):
        graph.push_back(steps.graph(k))
        values.insert(steps.values(k, q0[k], v0[k], qdd=a0[k], base=states[k]))
        for j in (joint.index for joint in robot.joints if joint.index not in joints):  # loops' others, driven joints
            graph.add(gtsam.PriorFactorVector(joint_key(K.joint_angle_key, j, k), q_measured[k, j - 1:j],
                                              gtsam.noiseModel.Isotropic.Sigma(1, sigma[j - 1])))
    initial_error = graph.error(values)
    result, iterations = _optimize(graph, values, max_iterations)
    samples = range(N)
    return TrajectoryEstimate(
        robot=robot, rule=rule, dynamics=steps.mode, t=t,
        q=joint_series(result, robot, K.joint_angle_key, samples),
        v=joint_series(result, robot, K.joint_vel_key, samples),
        qdd=joint_series(result, robot, K.joint_accel_key, samples),
        tau=joint_series(result, robot, K.torque_key, samples),
        error=float(graph.error(result)), initial_error=float(initial_error), iterations=iterations,
        smoothness=s, cutoff=(s / sigma) ** 0.25, seconds=time.perf_counter() - started, graph=graph, values=result,
        **(dict(zip(("base_pose", "base_twist", "base_accel"), base_series(result, robot, samples), strict=True))
           if base else {}))


HARD_TOLERANCE = 1e-9  # largest residual of a hard factor accepted as satisfied


def _optimize(graph: gtsam.NonlinearFactorGraph, values: gtsam.Values, max_iterations: int) -> tuple[gtsam.Values, int]:
    """Levenberg–Marquardt (GTSAM's); if it leaves a hard factor violated — it judges steps by an error that
    weighs a violated constraint by a fixed penalty, so from a start that violates one it can reject every step
    and stop — Gauss–Newton iterations restore the constraints (each solves them to first order exactly, as
    ``tests/test_nonlinear_graph.py`` does from zero) and Levenberg–Marquardt resumes from there. Returns the
    values and the iterations taken in all."""
    params = gtsam.LevenbergMarquardtParams()
    params.setMaxIterations(max_iterations)
    params.setRelativeErrorTol(1e-10)
    params.setAbsoluteErrorTol(0.0)
    params.setlambdaFactor(100.0)  # at the optimum (a tree) each rejected trial costs a solve: fewer trials
    params.setLinearSolverType("MULTIFRONTAL_QR")  # not the normal equations: see _initial_motion
    optimizer = gtsam.LevenbergMarquardtOptimizer(graph, values, params)
    result, iterations = optimizer.optimize(), optimizer.iterations()
    if _hard_residual(graph, result) > HARD_TOLERANCE:
        for _ in range(max_iterations):
            result = result.retract(_solve_qr(graph.linearize(result)))
            iterations += 1
            if _hard_residual(graph, result) <= HARD_TOLERANCE:
                break
        optimizer = gtsam.LevenbergMarquardtOptimizer(graph, result, params)
        result = optimizer.optimize()
        iterations += optimizer.iterations()
    if optimizer.iterations() >= max_iterations:  # stopped by the limit, not by convergence: say so
        warnings.warn(f"trajectory_inverse_dynamics: Levenberg–Marquardt stopped at max_iterations = {max_iterations} "
                      f"before converging (error {graph.error(result):.6g}); the estimate is its last iterate — raise "
                      "max_iterations, or check that the samples and sigma_q are consistent", ConvergenceWarning,
                      stacklevel=4)
    return result, iterations


def _solve_qr(linear: gtsam.GaussianFactorGraph) -> gtsam.VectorValues:
    """The least-squares solution by QR, not by Cholesky of the normal equations (GTSAM's default), which
    squares the spread of the factors' weights: at Δt = 1e-5 s the snap priors' span ~1e9 of the others'."""
    ordering = gtsam.Ordering.ColamdGaussianFactorGraph(linear)
    return linear.eliminateSequential(ordering, gtsam.EliminateQR).optimize()


def _hard_residual(graph: gtsam.NonlinearFactorGraph, values: gtsam.Values) -> float:
    return max((float(np.max(np.abs(graph.at(i).unwhitenedError(values)))) for i in range(graph.size())
                if graph.at(i).noiseModel().isConstrained()), default=0.0)


def _positive(n: int, name: str, x) -> np.ndarray:
    """One positive number, or one per joint (or per base coordinate), as a vector of n."""
    return np.broadcast_to(positive_vector(name, x, n), (n,)).astype(float)


def _default_smoothness(t: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """s = σ (2π / 16 Δt)⁴, Δt the mean step: the snap prior's cut-off at 1/16 of the sampling rate."""
    step = float(np.mean(np.diff(t)))
    try:
        with np.errstate(over="ignore"):
            smoothness = sigma * (2 * math.pi * CUTOFF_FRACTION / step) ** 4
    except OverflowError:  # Python's float power raises where numpy's gives inf
        smoothness = np.inf
    if not np.all(np.isfinite(smoothness)):
        raise ArgumentError(f"t: time steps of {step:g} s (on average) are too small: the default smoothness "
                            "σ (2π / 16 Δt)⁴ overflows; are the times in seconds?")
    return smoothness


def _kinematic_graph(joints: list[int], t: np.ndarray, q: np.ndarray, sigma: np.ndarray, s: np.ndarray, rule: str,
                     ) -> gtsam.NonlinearFactorGraph:
    """The graph's kinematic part for ``joints``: measurement priors on q, integration factors between
    consecutive samples and snap priors on q̈; linear in (q, q̇, q̈)."""
    graph = gtsam.NonlinearFactorGraph()
    h = np.diff(t)
    for k in range(len(t)):
        for j in joints:
            graph.add(gtsam.PriorFactorVector(joint_key(K.joint_angle_key, j, k), q[k, j - 1:j],
                                              gtsam.noiseModel.Isotropic.Sigma(1, sigma[j - 1])))
        if k + 1 < len(t):
            graph.push_back(between_steps(joints, k, float(h[k]), rule))
        if 0 < k < len(t) - 1:
            for j in joints:
                graph.add(SnapFactor(*(joint_key(K.joint_accel_key, j, i) for i in (k - 1, k, k + 1)),
                                     float(h[k - 1]), float(h[k]), float(s[j - 1])))
    return graph


def _initial_motion(robot: Robot, joints: list[int], t: np.ndarray, q: np.ndarray,
                    kinematic: gtsam.NonlinearFactorGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q, q̇, q̈ (rows in time) that satisfy every hard factor: the kinematic part solved exactly (it is linear)
    for the integrated ``joints``; on closed loops the others then close the loops around them, on the
    assembly branch of each sample."""
    zero = gtsam.Values()
    for key in kinematic.keyVector():
        zero.insert(key, np.zeros(1))
    x = _solve_qr(kinematic.linearize(zero))
    n, N = robot.num_dofs, len(t)
    series = [np.array([[x.at(joint_key(kind, j, k))[0] if j in joints else q[k, j - 1] for j in range(1, n + 1)]
                        for k in range(N)]) for kind in (K.joint_angle_key, K.joint_vel_key, K.joint_accel_key)]
    if not robot.loop_joints:
        return coupled(robot, *series)
    Q, V, A = (np.empty((N, n)) for _ in range(3))
    guess = q[0]
    for k in range(N):
        Q[k], V[k] = project(robot, {j: series[0][k, j - 1] for j in joints}, {j: series[1][k, j - 1] for j in joints},
                             guess)
        A[k] = solve_rates(robot, Q[k], {j: series[2][k, j - 1] for j in joints}, order=2, v=V[k])
        guess = Q[k]
    return Q, V, A
