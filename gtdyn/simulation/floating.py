"""Simulating a floating-base robot with the classical integrators: the base's pose lives on SE(3), so each
step moves it in local coordinates ξ around its pose at the step's start, pose = pose_k · Exp(ξ), with
ξ̇ = J_r(ξ)⁻¹ V (V: the base's body twist; J_r⁻¹(ξ) = dlog(−ξ), ``variational.dlog``) — Runge–Kutta on the
Lie group in the manner of Munthe-Kaas, which keeps each method's order."""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.simulation.integrators import STEPS
from gtdyn.simulation.trajectory import Trajectory
from gtdyn.simulation.variational import dlog


def simulate_floating(robot, q, v, base_pose: gtsam.Pose3, base_twist, torque, dt: float, steps: int, method: str,
                      gravity, forward, report, step_with_note, controller: bool = False) -> Trajectory:
    """``forward(q, v, tau, base_pose=, base_twist=) -> (base_accel, qdd)`` is the compiled solver;
    ``step_with_note`` runs one integrator step and notes the time of an error. ``controller``: ``torque`` is a
    controller, asked at every stage of a step (as on a fixed base; holding its first answer over an RK4 step
    would cut the method to first order); otherwise the torque is held over each step."""
    n = robot.num_dofs
    Q, V, A, TAU = (np.empty((steps + 1, n)) for _ in range(4))
    poses, twists, accels = np.empty((steps + 1, 4, 4)), np.empty((steps + 1, 6)), np.empty((steps + 1, 6))
    t = dt * np.arange(steps + 1)
    held = [np.zeros(n)]
    step = [0]  # the current step, for a controller asked at the stages inside it
    start = [base_pose]  # the pose the local coordinates of the current step are about

    def accel(t_, x, y):
        pose = start[0].compose(gtsam.Pose3.Expmap(x[:6]))
        tau = torque(step[0], t_, x[6:], y[6:]) if controller else held[0]
        base_accel, qdd = forward(x[6:], y[6:], tau, base_pose=pose.matrix(), base_twist=y[:6])
        return np.concatenate([base_accel, qdd])

    def rate(x, y):
        return np.concatenate([dlog(-x[:6]) @ y[:6], y[6:]])

    x, y = np.concatenate([np.zeros(6), q]), np.concatenate([base_twist, v])
    for k in range(steps + 1):
        pose = start[0].compose(gtsam.Pose3.Expmap(x[:6]))
        start[0], x = pose, np.concatenate([np.zeros(6), x[6:]])  # re-centre the local coordinates
        Q[k], V[k], poses[k], twists[k] = x[6:], y[6:], pose.matrix(), y[:6]
        step[0], TAU[k] = k, torque(k, t[k], x[6:], y[6:])
        held[0] = TAU[k]
        if k < steps:
            x, y, a = step_with_note(STEPS[method], accel, t[k], x, y, dt, method, rate)
            A[k], accels[k] = a[6:], a[:6]
            report(k + 1)
    a = accel(t[steps], x, y)
    A[steps], accels[steps] = a[6:], a[:6]
    report.done()
    return Trajectory(robot, method, t, Q, V, A, TAU, gravity, base_pose=poses, base_twist=twists, base_accel=accels)
