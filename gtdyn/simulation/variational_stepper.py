"""Paper 004's variational integrator (``variational.VariationalIntegrator``, its DRNEA compiled:
``variational_compiled``) as a stepper: torques held over each step, M⁻¹ from a compiled forward solver at rest
without gravity, every joint actuated. The integrator works in the floating base's CoM frame, the samples in its
root link frame: ``model.base_frame`` moves them."""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.model.base_frame import pose_to_com, pose_to_link, twist_to_com, twist_to_link, wrench_to_link
from gtdyn.model.robot import Robot
from gtdyn.simulation.solvers import forward_solver
from gtdyn.simulation.steppers import Samples, TorqueSource
from gtdyn.simulation.variational_compiled import CompiledVariationalIntegrator


class VariationalStepper:
    """The DEL state of one run. ``times``: the samples' times (the next sample's torque is asked at its time);
    ``forward`` the compiled solver that gives each sample's q̈ (and a floating base's acceleration)."""

    def __init__(self, robot: Robot, q, v, torque: TorqueSource, dt: float, times: np.ndarray, gravity, forward,
                 base_pose: gtsam.Pose3 | None = None, base_twist=None):
        self.robot, self.torque, self.times, self.forward = robot, torque, times, forward
        self.integrator = CompiledVariationalIntegrator(robot, gravity, _mass_inverse(robot))
        T0 = V0 = None
        if robot.floating_base:
            T0, V0 = pose_to_com(robot, base_pose), twist_to_com(robot) @ base_twist
            self.base_twist_to_link = twist_to_link(robot)
        self.state = self.integrator.start(q, v, torque(0, 0.0, q, v), dt, T0, V0)

    def record(self, k: int, t: float, out: Samples) -> None:
        state = self.state
        if not self.robot.floating_base:
            out.q[k], out.v[k], out.tau[k] = state["q"], state["v"], state["tau"]
            out.qdd[k] = self.forward(out.q[k], out.v[k], out.tau[k])
            return
        out.q[k], out.v[k], out.tau[k] = state["q"], state["v"][6:], state["tau"]
        out.base_pose[k] = pose_to_link(self.robot, state["T0"]).matrix()
        out.base_twist[k] = self.base_twist_to_link @ state["v"][:6]
        out.base_accel[k], out.qdd[k] = self.forward(out.q[k], out.v[k], out.tau[k], base_pose=out.base_pose[k],
                                                     base_twist=out.base_twist[k])

    def advance(self, k: int, t: float) -> None:
        self.state["t"] = t
        t_next = self.times[k + 1]
        self.state, _ = self.integrator.step(self.state, lambda q, v: self.torque(k + 1, t_next, q, v))


def _mass_inverse(robot: Robot):
    """``mass_inverse(q, p) -> M(q)⁻¹ p``; on a floating base p and the answer start with the base's 6 in its CoM
    frame, its impulse given to the solver as a wrench on the free base in its root link frame."""
    rest = forward_solver(robot.with_actuated(robot.joint_names), np.zeros(3))
    zeros = np.zeros(robot.num_dofs)
    if not robot.floating_base:
        return lambda q, p: rest(q, zeros, p)
    to_link, to_com = wrench_to_link(robot), twist_to_com(robot)

    def mass_inverse(q, p):
        accel, qdd = rest(q, zeros, p[6:], base_wrench=to_link @ p[:6])
        return np.concatenate([to_com @ accel, qdd])
    return mass_inverse
