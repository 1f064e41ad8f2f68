"""The explicit integrators on a floating-base robot: the base's pose lives on SE(3), so each step moves it in
local coordinates ξ around its pose at the step's start, pose = pose_k · Exp(ξ), with ξ̇ = J_r(ξ)⁻¹ V (V: the
base's body twist; J_r⁻¹(ξ) = dlog(−ξ), ``gtdyn.spatial.dlog_times``) — Runge–Kutta on the Lie group in the manner of
Munthe-Kaas, which keeps each method's order. The base's pose, twist and acceleration are those of its root
link frame throughout, as the compiled solver takes and gives them: no frame conversion here. T · exp ξ and
dlog(−ξ) V are compiled (``gtdyn.compiled.pose_step``), and the native time loop calls the same code: the same
poses, bit for bit."""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.compiled.pose_step import PoseStep
from gtdyn.errors import GTDYN_ERRORS
from gtdyn.simulation.steppers import ExplicitStepper, Samples, TorqueSource, note_step


class FloatingStepper(ExplicitStepper):
    """x = [ξ; q] (ξ about ``self.start``, re-centred at every sample), y = [V; q̇]; ``forward(q, v, tau,
    base_pose=, base_twist=) -> (base_accel, qdd)`` is the compiled solver. ``start`` is a row-major 4×4 array,
    moved in place (the native loop reads and writes it)."""

    def __init__(self, q, v, base_pose, base_twist, torque: TorqueSource, controller: bool, method: str,
                 dt: float, forward):
        super().__init__(torque, controller, method, dt, forward)
        # the pose the local coordinates of the current step are about
        self.start = np.array(base_pose.matrix() if isinstance(base_pose, gtsam.Pose3) else base_pose, dtype=float,
                              order="C")
        self.steps = PoseStep()
        self.x, self.y = np.concatenate([np.zeros(6), q]), np.concatenate([base_twist, v])

    def rate(self, x, y) -> np.ndarray:
        """[ξ̇; q̇] = [dlog(−ξ) V; q̇] (compiled: the native loop's); at ξ = 0 (every step's first stage, the local
        coordinates being re-centred at each sample) dlog is the identity, exactly as its series sums it there."""
        if not x[:6].any():
            return y.copy()
        return np.concatenate([self.steps.rate(x[:6], y[:6]), y[6:]])

    def accel(self, t: float, x, y, tau=None) -> np.ndarray:
        """[base acceleration; q̈] at the state (ξ, q; V, q̇), under ``tau`` (None: the stage's torque)."""
        pose = self.steps.moved(self.start, x[:6]) if x[:6].any() else self.start  # at a sample: the start itself
        tau = self.step_torque(t, x[6:], y[6:]) if tau is None else tau
        base_accel, qdd = self.forward(x[6:], y[6:], tau, base_pose=pose, base_twist=y[:6])
        return np.concatenate([base_accel, qdd])

    def record(self, k: int, t: float, out: Samples) -> None:
        self.steps.move(self.start, self.x[:6])
        self.x = np.concatenate([np.zeros(6), self.x[6:]])  # re-centre the local coordinates
        x, y = self.x, self.y
        out.q[k], out.v[k], out.base_pose[k], out.base_twist[k] = x[6:], y[6:], self.start, y[:6]
        self.k = k
        out.tau[k] = self.held = self.torque(k, t, x[6:], y[6:])
        try:
            self.a = self.accel(t, x, y, self.held)  # a controller is asked once at the sample
        except GTDYN_ERRORS as e:
            note_step(e, t, self.method, self.dt)
            raise
        out.qdd[k], out.base_accel[k] = self.a[6:], self.a[:6]
