"""The explicit integrators on closed loops, by coordinate partitioning: the integrator moves the independent
joints' q and q̇; every evaluation first closes the loops around them (``project``: positions on the current
assembly branch, then rates), so each stage's state is on the constraint manifold and the method keeps its
order."""

from __future__ import annotations

import warnings

import numpy as np

from gtdyn.errors import IllConditionedWarning
from gtdyn.kinematics.forward import forward_kinematics
from gtdyn.kinematics.loop_closure import independent_joints, project
from gtdyn.kinematics.loops import check_closed
from gtdyn.model.robot import Robot
from gtdyn.simulation.steppers import ExplicitStepper, Samples, TorqueSource

WARNING_STACKLEVEL = 4  # the warning names simulate's caller: record ← the time loop ← simulate ← its caller


class ClosedLoopStepper(ExplicitStepper):
    """x, y: the independent joints' q and q̇ (chosen at the start, among the actuated joints); a sample holds
    every joint, closed around them, and the largest loop mismatch left. The step starts from the independent
    joints alone (its first stage closes the loops again), so no sample's q̈ is reused."""

    def __init__(self, robot: Robot, q, v, torque: TorqueSource, controller: bool, method: str, dt: float, forward):
        super().__init__(torque, controller, method, dt, forward)
        check_closed(robot, forward_kinematics(robot, q, v))
        names = independent_joints(robot, robot.actuated_joint_names, q)
        self.robot, self.index = robot, np.array([robot.joint_names.index(name) for name in names])
        self.joints = [robot.joint(name).index for name in names]
        self.last_q = q  # the branch the next projection stays on
        self.x, self.y = q[self.index], v[self.index]
        self.warned = False

    def closed(self, qi, vi) -> tuple[np.ndarray, np.ndarray]:
        """Every joint's q and q̇ with the loops closed around the independent joints' (qi, vi)."""
        qi, vi = dict(zip(self.joints, qi, strict=True)), dict(zip(self.joints, vi, strict=True))
        self.last_q, v_all = project(self.robot, qi, vi, self.last_q)
        return self.last_q, v_all

    def accel(self, t: float, qi, vi) -> np.ndarray:
        q_all, v_all = self.closed(qi, vi)
        return self.forward(q_all, v_all, self.step_torque(t, q_all, v_all))[self.index]

    def record(self, k: int, t: float, out: Samples) -> None:
        q_all, v_all = self.closed(self.x, self.y)
        if k and not self.warned and _jumped(out.q[k - 1], out.v[k - 1], out.qdd[k - 1], q_all, self.dt):
            self.warned = True
            warnings.warn(IllConditionedWarning(
                f"the loops of '{self.robot.name}' passed near a singular configuration at t = {t:g} s: closing them "
                f"moved the dependent joints by {np.max(np.abs(q_all - out.q[k - 1] - self.dt * out.v[k - 1])):.3g} "
                "beyond the step's prediction, so the mechanism may have switched assembly branch (watch "
                "Trajectory.energy)"), stacklevel=WARNING_STACKLEVEL)
        out.closure[k] = _largest_mismatch(self.robot, q_all, v_all)
        out.q[k], out.v[k] = q_all, v_all
        self.k = k
        out.tau[k] = self.held = self.torque(k, t, q_all, v_all)
        out.qdd[k] = self.forward(q_all, v_all, self.held)


def _largest_mismatch(robot: Robot, q, v) -> float:
    """The largest pose or twist mismatch around any loop at (q, v)."""
    kin = forward_kinematics(robot, q, v)
    return max([float(np.max(np.abs(r))) for r in (*kin.pose_closure.values(), *kin.twist_closure.values())])


def _jumped(q_before, v_before, a_before, q_now, dt: float) -> bool:
    """Whether a projected state lies farther from the last one's Taylor prediction than a smooth motion could:
    the prediction is off by about Δt²/2 |q̈|; a hundred times that (and a millionth of a radian) is a jump."""
    miss = np.max(np.abs(q_now - q_before - dt * v_before))
    return miss > 100 * dt * dt * (1.0 + np.max(np.abs(a_before))) + 1e-6
