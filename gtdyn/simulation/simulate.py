"""``gtdyn.simulate``: forward dynamics integrated in time, every step through a compiled solver."""

from __future__ import annotations

import dataclasses
import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gtdyn.arguments import choice, robot_argument
from gtdyn.arguments.query import run_restart, run_start
from gtdyn.arguments.series import check_trajectory_memory, simulation_covers, simulation_torques, time_grid
from gtdyn.equations import GRAVITY
from gtdyn.errors import JointLimitWarning
from gtdyn.model.robot import Robot
from gtdyn.progress import Progress
from gtdyn.simulation import native_loop
from gtdyn.simulation.closed_loops import ClosedLoopStepper
from gtdyn.simulation.controllers import PDController
from gtdyn.simulation.environment import EnvironmentForward, RecordingForces
from gtdyn.simulation.floating import FloatingStepper
from gtdyn.simulation.solvers import forward_solver
from gtdyn.simulation.steppers import JointStepper, Samples, Stepper
from gtdyn.simulation.trajectory import Trajectory
from gtdyn.simulation.variational_stepper import VariationalStepper

METHODS = ("semi_implicit_euler", "euler", "rk4", "trapezoidal", "variational")
PROGRESS_AFTER_S = 2.0  # a run longer than this reports its progress on stderr, once a second


def simulate(robot: Robot, q0, v0, *, tau=None, dt: float, steps: int, method: str = "semi_implicit_euler",
             base_pose=None, base_twist=None, gravity=GRAVITY, external_wrenches=None, wrench_axes: str = "local",
             contacts=None, checks: bool = True, progress: bool | None = None) -> Trajectory:
    """Integrate forward dynamics from (q0, v0) for ``steps`` steps of ``dt`` seconds.

    ``tau``: None (no torque), a vector (constant), an array of shape (steps, n) (held over each step) or a
    callable ``tau(t, q, v) -> vector`` (a controller, asked once at every stage of a step; the native time loop
    evaluates a ``gtdyn.PDController`` itself and calls any other back). ``method``: "semi_implicit_euler",
    "euler", "rk4", "trapezoidal" or "variational" (paper 004's DEL integrator, with torques held over each
    step). Each step calls a compiled forward-dynamics solver (``gtdyn.compile``, ABA ordering; ``checks=False``
    uses its unchecked calls: faster, without the condition verdict). ``progress``: None reports on stderr once a run
    takes more than two seconds (when stderr is a terminal), True always, False never.

    Closed loops are integrated in their independent joints, every evaluation closing the loops around them
    (``Trajectory.closure`` reports the mismatch); the torques of passive joints are zero. A floating base
    starts at ``base_pose`` (identity if None) with ``base_twist`` (zero if None) and moves freely; its pose is
    integrated on SE(3) (``gtdyn.simulation.floating``) and ``Trajectory.base_pose``, ``base_twist`` and
    ``base_accel`` record it.

    ``external_wrenches`` ({link or frame: [m; f]}, in the frames' own axes or, with
    ``wrench_axes="world_aligned"``, in the world's axes at the frames' origins) act throughout the run.
    ``contacts`` (a list of ``gtdyn.Contact``) are rigid and bilateral: every step solves constrained forward
    dynamics, whose contact forces ``Trajectory.contact_forces`` records. They hold at the acceleration level,
    with no position correction, so a contact point drifts by the integrator's error (smaller steps, or a
    higher-order method, drift less).
    """
    run = prepare(robot, q0, v0, tau=tau, dt=dt, steps=steps, method=method, base_pose=base_pose,
                  base_twist=base_twist, gravity=gravity, external_wrenches=external_wrenches, wrench_axes=wrench_axes,
                  contacts=contacts, checks=checks)
    with Progress("simulate", run.steps, enabled=progress, after=0.0 if progress else PROGRESS_AFTER_S, every=1.0,
                  unit="steps") as report:
        run.step_all(report)
    return run.finish()


@dataclass
class Run:
    """A run set up to step (``prepare``): its stepper, the samples it fills, its forward solver and torque
    source, and whether the native time loop takes it."""

    robot: Robot
    method: str
    dt: float
    steps: int
    gravity: np.ndarray
    torque: object
    forward: object
    samples: Samples
    stepper: Stepper
    native: bool
    begin: Callable[..., tuple[Samples, Stepper]]  # (q, v, samples=None): the samples, and a stepper at (q, v)

    def again(self, q0, v0, samples: Samples | None = None) -> Run:
        """This run from another start (``simulate_batch``'s rows): q0 and v0 checked as ``prepare`` checks them,
        everything else this run's, checked once; a stepper of its own, filling ``samples`` (arrays like this
        run's; None: fresh ones)."""
        samples, stepper = self.begin(*run_restart(self.robot, q0, v0), samples)
        return dataclasses.replace(self, samples=samples, stepper=stepper)

    def step_all(self, report: Progress | None = None, start: int = 0) -> None:
        """Every step from ``start`` (the stepper's state is that step's start; only a run that loops natively
        resumes after 0): in the native time loop where it applies, else through the Python stepper."""
        if self.native:
            native_loop.run_loop(self.stepper, self.samples, report, self.forward, self.method, self.dt, self.torque,
                                 start)
        else:
            _run(self.stepper, self.samples, report)

    def finish(self) -> Trajectory:
        """The run's trajectory, once every step is taken (a warning if it left the joint limits)."""
        warn_past_limits(self.robot, self.samples.t, self.samples.q)
        return self.samples.trajectory(self.robot, self.method, self.gravity)


def prepare(robot: Robot, q0, v0, *, tau=None, dt: float, steps: int, method: str = "semi_implicit_euler",
            base_pose=None, base_twist=None, gravity=GRAVITY, external_wrenches=None, wrench_axes: str = "local",
            contacts=None, checks: bool = True, lanes: bool | None = False) -> Run:
    """``simulate``'s arguments checked and its run set up (``lanes``: its solver's, ``gtdyn.compile``'s: None for
    ``simulate_batch``, whose solver may compile its lane code later)."""
    robot_argument(robot)
    choice("method", method, METHODS)
    dt, steps = time_grid(dt, steps)
    check_trajectory_memory(robot, steps)
    # the start, checked as any forward-dynamics question (q0, v0, couplings, gravity, base): here, or the first
    # step would name the compiled solver's arguments
    start = run_start(robot, q0, v0, base_pose=base_pose, base_twist=base_twist, gravity=gravity, contacts=contacts,
                      external_wrenches=external_wrenches, wrench_axes=wrench_axes)
    placed = start.problem.contacts
    q, v, gravity = start.q, start.v, start.gravity
    torque = simulation_torques(robot, tau, steps)
    if isinstance(tau, PDController):
        tau.check_run(robot, dt, steps)
    simulation_covers(robot, method, bool(placed))
    solver = forward_solver(robot, gravity, checks, contacts, external_wrenches, wrench_axes, lanes)
    forward = EnvironmentForward(solver, external_wrenches, bool(placed)) if placed or external_wrenches else solver
    base_pose, base_twist = (None, None) if start.base is None else (start.base.pose, start.base.twist)
    forces, controller = sum(c.dim for c in placed), callable(tau)

    def begin(q, v, samples: Samples | None = None) -> tuple[Samples, Stepper]:
        samples = Samples.allocate(robot, steps, dt, forces) if samples is None else samples
        stepper = _stepper(robot, method, q, v, base_pose, base_twist, torque, controller, dt, samples.t, gravity,
                           forward)
        return samples, RecordingForces(stepper, forward) if placed else stepper

    return Run(robot, method, dt, steps, gravity, torque, forward, *begin(q, v),
               native_loop.applies(robot, method, forward), begin)


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


def _run(stepper: Stepper, out: Samples, report: Progress | None) -> None:
    """The one time loop, whatever the stepper: sample k, then step k, for every step, then the last sample; the
    progress report (if any) hears every ``every`` steps (not every step: the loop stays cheap)."""
    record, advance, every = stepper.record, stepper.advance, 64
    at = (lambda k: None) if report is None else report.at
    times = out.t
    steps = len(times) - 1
    for k in range(steps):
        t = times[k]
        record(k, t, out)
        advance(k, t)
        if not (k + 1) % every:
            at(k + 1)
    record(steps, times[steps], out)
    at(steps)


# a position this far past a limit (relative to 1 + |limit|) counts as leaving it: round-off stays far below
LIMIT_TOLERANCE = 1e-9
_PADDED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # each robot's limits with the tolerance, once


def within_limits(robot: Robot, Q: np.ndarray, axis=None):
    """Whether the positions ``Q`` (samples × joints, or runs × samples × joints with ``axis`` (1, 2): one answer
    per run) are all within the joints' limits, with the tolerance; NaN is not within them."""
    lower, upper = _PADDED.get(robot) or _PADDED.setdefault(robot, (
        robot.lower_limits - LIMIT_TOLERANCE * (1 + np.abs(robot.lower_limits)),  # ±inf stay ±inf
        robot.upper_limits + LIMIT_TOLERANCE * (1 + np.abs(robot.upper_limits))))
    if axis is None:
        return (Q >= lower).all() and (Q <= upper).all()  # the common case, in two passes
    return (Q >= lower).all(axis=axis) & (Q <= upper).all(axis=axis)


def warn_past_limits(robot: Robot, t: np.ndarray, Q: np.ndarray) -> None:
    """One JointLimitWarning naming the first joint, the time and the position where the trajectory first leaves
    a joint's limits; limits are not enforced (the joints have no stops in the model)."""
    if within_limits(robot, Q):
        return
    lower, upper = _PADDED[robot]
    outside = (Q < lower) | (Q > upper)  # NaN is neither
    if not np.any(outside):
        return
    k = int(np.argmax(np.any(outside, axis=1)))
    i = int(np.argmax(outside[k]))
    joint = robot.joints[i]
    warnings.warn(JointLimitWarning(
        f"joint '{joint.name}' leaves its limits [{joint.lower:g}, {joint.upper:g}] at t = {t[k]:g} s (q = "
        f"{Q[k, i]:.6g}); gtdyn.simulate does not enforce joint limits, so the motion beyond them has no stops"),
        stacklevel=3)
