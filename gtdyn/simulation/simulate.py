"""``gtdyn.simulate``: forward dynamics integrated in time, every step through a compiled solver."""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable

import gtsam
import numpy as np

from gtdyn.arguments import finite_vector, gravity_vector, joint_vector, pose_argument, real_array, robot_argument
from gtdyn.arguments.asked import check_passive_torques, check_transmissions
from gtdyn.compiled import compile as compile_solver
from gtdyn.equations import GRAVITY
from gtdyn.errors import ArgumentError
from gtdyn.model.robot import Robot
from gtdyn.simulation.closed_loops import ClosedLoopStepper
from gtdyn.simulation.floating import FloatingStepper
from gtdyn.simulation.steppers import JointStepper, Samples, Stepper
from gtdyn.simulation.trajectory import Trajectory
from gtdyn.simulation.variational_stepper import VariationalStepper

METHODS = ("semi_implicit_euler", "euler", "rk4", "trapezoidal", "variational")
PROGRESS_AFTER_S = 2.0  # a run longer than this reports its progress on stderr, once a second


def simulate(robot: Robot, q0, v0, *, tau=None, dt: float, steps: int, method: str = "semi_implicit_euler",
             base_pose=None, base_twist=None, gravity=GRAVITY, checks: bool = True,
             progress: bool | None = None) -> Trajectory:
    """Integrate forward dynamics from (q0, v0) for ``steps`` steps of ``dt`` seconds.

    ``tau``: None (no torque), a vector (constant), an array of shape (steps, n) (held over each step) or a
    callable ``tau(t, q, v) -> vector`` (a controller). ``method``: "semi_implicit_euler", "euler", "rk4",
    "trapezoidal" or "variational" (paper 004's DEL integrator, with torques held over each step). Each step
    calls a compiled forward-dynamics solver (``gtdyn.compile``, ABA ordering; ``checks=False`` uses its
    unchecked calls: faster, without the condition verdict). ``progress``: None reports on stderr once a run
    takes more than two seconds, True always, False never.

    Closed loops are integrated in their independent joints, every evaluation closing the loops around them
    (``Trajectory.closure`` reports the mismatch); the torques of passive joints are zero. A floating base
    starts at ``base_pose`` (identity if None) with ``base_twist`` (zero if None) and moves freely; its pose is
    integrated on SE(3) (``gtdyn.simulation.floating``) and ``Trajectory.base_pose``, ``base_twist`` and
    ``base_accel`` record it.
    """
    robot_argument(robot)
    if method not in METHODS:
        raise ArgumentError(f"method: '{method}' is not one of {', '.join(METHODS)}")
    dt = float(finite_vector("dt", [dt], 1)[0])
    if not dt > 0:
        raise ArgumentError(f"dt: expected a positive time step, got {dt}")
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise ArgumentError(f"steps: expected a positive whole number, got {steps!r}")
    _check_memory(robot, steps)
    if not math.isfinite(dt * int(steps)):  # Python floats: inf, no numpy warning
        raise ArgumentError(f"dt: {steps} steps of {dt:g} s end at t = inf; dt × steps must be a finite time")
    q = joint_vector(robot, "q0", q0)
    v = joint_vector(robot, "v0", v0)
    check_transmissions(robot, q, v, names=("q0", "v0"))  # here, or the first step would name the solver's q
    gravity = gravity_vector(gravity)
    torque = _torque_source(robot, tau, steps)
    forward = compile_solver(robot, "forward", ordering="aba", gravity=gravity, checks=checks)
    base_pose, base_twist = _base_state(robot, base_pose, base_twist)
    if robot.floating_base and robot.loop_joints:
        raise ArgumentError(f"robot: simulate covers closed loops on a fixed base; '{robot.name}' floats")
    if robot.loop_joints and method == "variational":
        raise ArgumentError(f"method: the variational integrator covers trees; '{robot.name}' has closed loops")
    samples = Samples.allocate(robot, steps, dt)
    stepper = _stepper(robot, method, q, v, base_pose, base_twist, torque, callable(tau), dt, samples.t, gravity,
                       forward)
    _run(stepper, samples, _Progress(steps, progress))
    return samples.trajectory(robot, method, gravity)


def _stepper(robot: Robot, method: str, q, v, base_pose, base_twist, torque, controller: bool, dt: float, times,
             gravity, forward) -> Stepper:
    """The stepper for this robot and method: paper 004's variational step, or an explicit integrator on a
    floating base (SE(3)), on closed loops (coordinate partitioning) or on a tree."""
    if method == "variational":
        return VariationalStepper(robot, q, v, torque, dt, times, gravity, forward, base_pose, base_twist)
    if robot.floating_base:
        return FloatingStepper(q, v, base_pose, base_twist, torque, controller, method, dt, forward)
    if robot.loop_joints:
        return ClosedLoopStepper(robot, q, v, torque, controller, method, dt, forward)
    return JointStepper(q, v, torque, controller, method, dt, forward)


def _run(stepper: Stepper, out: Samples, report: _Progress) -> None:
    """The one time loop, whatever the stepper: sample k, then step k, for every step, then the last sample; the
    progress report hears every ``report.every`` steps."""
    record, advance, every = stepper.record, stepper.advance, report.every
    times = out.t
    steps = len(times) - 1
    for k in range(steps):
        t = times[k]
        record(k, t, out)
        advance(k, t)
        if not (k + 1) % every:
            report(k + 1)
    record(steps, times[steps], out)
    report.done()


def _base_state(robot: Robot, base_pose, base_twist):
    """A floating base's start (Pose3, twist); ArgumentError for base arguments on a fixed base."""
    if not robot.floating_base:
        given = [name for name, value in (("base_pose", base_pose), ("base_twist", base_twist)) if value is not None]
        if given:
            raise ArgumentError(f"{', '.join(given)}: robot '{robot.name}' has a fixed base")
        return None, None
    return (gtsam.Pose3() if base_pose is None else pose_argument("base_pose", base_pose),
            np.zeros(6) if base_twist is None else finite_vector("base_twist", base_twist, 6))


def _torque_source(robot: Robot, tau, steps: int) -> Callable[[int, float, np.ndarray, np.ndarray], np.ndarray]:
    """``torque(k, t, q, v)``: the torque during step k (at time t, state (q, v)), checked once up front (a
    controller's at every call). Passive joints' torques are checked here, where they are still called tau: the
    compiled solver would name them its x."""
    n = robot.num_dofs
    passive = any(not j.actuated for j in robot.joints)
    if tau is None:
        zero = np.zeros(n)
        return lambda k, t, q, v: zero
    if callable(tau):
        def controller(k, t, q, v):
            try:
                torque = joint_vector(robot, "tau", tau(t, q, v))
                if passive:
                    check_passive_torques(robot, "tau", torque)
                return torque
            except ArgumentError as e:
                raise ArgumentError(f"tau: the controller returned a bad torque at t = {t:g} s: {e}") from None
        return controller
    expected = f"None, a vector of {n}, an array of shape ({steps}, {n}) or a callable (t, q, v) -> tau"
    array = real_array("tau", tau, expected)
    if array.shape == (n,):
        constant = joint_vector(robot, "tau", array)
        check_passive_torques(robot, "tau", constant)
        return lambda k, t, q, v: constant
    if array.shape != (steps, n):
        raise ArgumentError(f"tau: expected {expected}; got {type(tau).__name__} of shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ArgumentError("tau: non-finite values")
    check_passive_torques(robot, "tau", np.max(np.abs(array), axis=0))  # nonzero where any step's torque is
    return lambda k, t, q, v: array[min(k, steps - 1)]


def _check_memory(robot: Robot, steps: int) -> None:
    """ArgumentError naming ``steps`` when the trajectory's arrays cannot be held: more bytes than the machine's
    memory, or than numpy can allocate (it would fail with its own MemoryError, or the run would swap)."""
    n = robot.num_dofs
    # per sample: q, v, q̈, τ; t and the three energies; a floating base's pose, twist and acceleration; closure
    per_sample = 4 * n + 4 + (16 + 6 + 6 if robot.floating_base else 0) + (1 if robot.loop_joints else 0)
    need = (steps + 1) * per_sample * 8
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):  # not every system says
        memory = None
    try:
        if memory is not None and need > memory:
            raise MemoryError
        np.empty(need, dtype=np.uint8)  # freed at once, its pages never touched: can numpy allocate this much?
    except (MemoryError, ValueError, OverflowError):
        size = f"{need / 2**30:.3g} GiB" if need < 2**1000 else "more bytes than exist"
        raise ArgumentError(f"steps: {steps} steps of '{robot.name}' need {size} for the trajectory's arrays, more "
                            "than this machine can allocate; simulate fewer steps (or several runs, each starting "
                            "where the last ended)") from None


class _Progress:
    """'gtdyn.simulate: k/N steps' on stderr, once a second, for runs longer than ``PROGRESS_AFTER_S``; told the
    step count every ``every`` steps."""

    every = 64

    def __init__(self, steps: int, progress: bool | None):
        self.steps, self.progress = steps, progress
        self.started = self.last = time.perf_counter()
        self.shown = False

    def __call__(self, k: int) -> None:
        if self.progress is False:
            return
        now = time.perf_counter()
        if (self.progress or now - self.started > PROGRESS_AFTER_S) and now - self.last > 1.0:
            print(f"\rgtdyn.simulate: {k}/{self.steps} steps", end="", file=sys.stderr, flush=True)
            self.last, self.shown = now, True

    def done(self) -> None:
        if self.shown:
            print(f"\rgtdyn.simulate: {self.steps}/{self.steps} steps, {time.perf_counter() - self.started:.1f} s",
                  file=sys.stderr, flush=True)
