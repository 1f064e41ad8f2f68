"""What ``simulate``'s one time loop drives: a stepper owns a robot's state, writes it as a sample and moves it
one step of Δt under the step's torque. ``Samples`` are the run's arrays, allocated once and turned into the
``Trajectory`` once. The explicit integrators' steppers share ``ExplicitStepper``; ``JointStepper`` is the tree
on a fixed base (the others: ``floating``, ``closed_loops``, ``variational_stepper``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from gtdyn.errors import GTDYN_ERRORS
from gtdyn.model.robot import Robot
from gtdyn.simulation.integrators import STEPS
from gtdyn.simulation.trajectory import Trajectory

TorqueSource = Callable[[int, float, np.ndarray, np.ndarray], np.ndarray]  # torque(k, t, q, v) during step k


@dataclass(frozen=True)
class Samples:
    """A run's arrays, row k the sample at time ``t[k]``; those a robot has no use for are None."""

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray
    closure: np.ndarray | None = None
    base_pose: np.ndarray | None = None
    base_twist: np.ndarray | None = None
    base_accel: np.ndarray | None = None
    contact_forces: np.ndarray | None = None

    @classmethod
    def allocate(cls, robot: Robot, steps: int, dt: float, contact_forces: int = 0) -> Samples:
        """Uninitialised arrays for ``steps`` steps of ``dt`` (steps + 1 samples), with the base's pose, twist and
        acceleration on a floating base, the loops' closure on closed loops and ``contact_forces`` numbers per
        sample for the contacts' forces."""
        rows, n = steps + 1, robot.num_dofs
        floating = robot.floating_base
        return cls(dt * np.arange(rows), *(np.empty((rows, n)) for _ in range(4)),
                   closure=np.empty(rows) if robot.loop_joints else None,
                   base_pose=np.empty((rows, 4, 4)) if floating else None,
                   base_twist=np.empty((rows, 6)) if floating else None,
                   base_accel=np.empty((rows, 6)) if floating else None,
                   contact_forces=np.empty((rows, contact_forces)) if contact_forces else None)

    def trajectory(self, robot: Robot, method: str, gravity) -> Trajectory:
        """The run's ``Trajectory``, holding these arrays (not copies)."""
        return Trajectory(robot, method, self.t, self.q, self.v, self.qdd, self.tau, gravity, self.closure,
                          self.base_pose, self.base_twist, self.base_accel, self.contact_forces)


class Stepper(Protocol):
    """One way of moving a robot through time. The loop calls ``record(k, t_k, out)`` then ``advance(k, t_k)`` for
    every step k, then ``record`` once more for the last sample."""

    def record(self, k: int, t: float, out: Samples) -> None:
        """Write sample k — the state at ``t``, the torque during step k, and q̈ (and whatever else the robot's
        samples hold) at that state — into row k of ``out``."""

    def advance(self, k: int, t: float) -> None:
        """Take step k: move the state from ``t`` to ``t + Δt`` under the step's torque."""


def note_step(error: Exception, t: float, method: str, dt: float) -> None:
    """Say on an error of the dynamics (a state that overflowed, say) when in the run it happened."""
    error.add_note(f"gtdyn.simulate: at t = {t:g} s, {method} with dt = {dt:g} s" + (
        " (a diverging integration shows here first; try a smaller step)" if t > 0 else ""))


class ExplicitStepper:
    """An integrator of ``integrators.py`` on positions x and velocities y, with ẏ = ``self.accel(t, x, y)`` (a
    subclass's forward dynamics) and ẋ = ``self.rate(x, y)`` (None: y). The torque of step k is asked at its
    start (``self.k``, ``self.held``: the sample's) and held over the step, or, from a controller, asked again at
    every stage: holding a controller's first answer over an RK4 step would cut the method to first order."""

    rate = None

    def __init__(self, torque: TorqueSource, controller: bool, method: str, dt: float, forward):
        self.torque, self.controller, self.forward = torque, controller, forward
        self.method, self.dt, self.integrate = method, dt, STEPS[method]
        self.k, self.held = 0, None
        self.a = None  # q̈ at the sample that starts the current step, when the step may reuse it

    def step_torque(self, t: float, q, v) -> np.ndarray:
        """The torque at a stage of the current step."""
        return self.torque(self.k, t, q, v) if self.controller else self.held

    def advance(self, k: int, t: float) -> None:
        try:
            self.x, self.y, _ = self.integrate(self.accel, t, self.x, self.y, self.dt, self.rate, self.a)
        except GTDYN_ERRORS as e:
            note_step(e, t, self.method, self.dt)
            raise


class JointStepper(ExplicitStepper):
    """A tree on a fixed base: x = q, y = q̇, and the sample's q̈ starts the step. The hottest loop of all, so
    ``accel`` is picked once for held or controlled torques."""

    def __init__(self, q, v, torque: TorqueSource, controller: bool, method: str, dt: float, forward):
        super().__init__(torque, controller, method, dt, forward)
        self.x, self.y = q, v
        self.accel = self._controlled_accel if controller else self._held_accel

    def _held_accel(self, t: float, q, v) -> np.ndarray:
        return self.forward(q, v, self.held)

    def _controlled_accel(self, t: float, q, v) -> np.ndarray:
        return self.forward(q, v, self.torque(self.k, t, q, v))

    def record(self, k: int, t: float, out: Samples) -> None:
        q, v = self.x, self.y
        out.q[k], out.v[k] = q, v
        self.k = k
        out.tau[k] = self.held = self.torque(k, t, q, v)
        try:
            out.qdd[k] = self.a = self.forward(q, v, self.held)  # a controller is asked once at the sample
        except GTDYN_ERRORS as e:
            note_step(e, t, self.method, self.dt)
            raise
