"""Arguments that run over time: a time grid, measured samples (times, joint angles, base poses), torque sources
(constant, per step, or a controller) and whether a run's arrays fit in memory. Checked once, at the boundary, for
simulation and estimation."""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Mapping, Sequence

import gtsam
import numpy as np

from gtdyn.arguments import (
    finite_vector,
    frame_list,
    joint_vector,
    pose_argument,
    positive_number,
    real_array,
    state_batch,
    whole_number,
)
from gtdyn.arguments.asked import check_passive_torques
from gtdyn.errors import ArgumentError
from gtdyn.model.robot import Robot
from gtdyn.problem import FrameGoal


def time_grid(dt, steps) -> tuple[float, int]:
    """``steps`` steps of ``dt`` seconds: a positive finite step, a whole number ≥ 1 of them, a finite end."""
    dt = positive_number("dt", dt)
    steps = whole_number("steps", steps, 1)
    if not math.isfinite(dt * steps):  # Python floats: inf, no numpy warning
        raise ArgumentError(f"dt: {steps} steps of {dt:g} s end at t = inf; dt × steps must be a finite time")
    return dt, steps


def joint_name_list(robot: Robot, name: str, names) -> list[str]:
    """A joint name or a list of distinct ones, of this robot."""
    listed = [names] if isinstance(names, str) else list(names) if isinstance(names, Sequence) else None
    if not listed or any(not isinstance(n, str) or n not in robot.joint_names for n in listed):
        raise ArgumentError(f"{name}: expected a joint name or a list of them (joints of '{robot.name}': "
                            f"{', '.join(robot.joint_names)}), got {names!r}")
    if len(set(listed)) != len(listed):
        raise ArgumentError(f"{name}: a joint given twice in {listed}")
    return listed


def sample_times(t) -> np.ndarray:
    """Sample times: at least 3, finite, strictly increasing, with steps whose inverse is finite."""
    try:
        a = np.asarray(t, dtype=float)
    except (TypeError, ValueError):
        raise ArgumentError(f"t: expected a sequence of times, got {type(t).__name__}") from None
    if a.ndim != 1 or len(a) < 3:
        raise ArgumentError(f"t: expected a 1-D sequence of at least 3 times, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ArgumentError("t: non-finite values")
    if not np.all(np.diff(a) > 0):
        k = int(np.argmax(~(np.diff(a) > 0)))
        raise ArgumentError(f"t: expected strictly increasing times, got t[{k}] = {a[k]:g} "
                            f"then t[{k + 1}] = {a[k + 1]:g}")
    with np.errstate(divide="ignore", over="ignore"):
        finite_rates = np.all(np.isfinite(1.0 / np.diff(a)))  # the integration and snap factors divide by Δt
    if not finite_rates:
        raise ArgumentError(f"t: time steps down to {np.min(np.diff(a)):g} s are too small to invert (1/Δt overflows)")
    return a


def joint_samples(robot: Robot, q, N: int) -> np.ndarray:
    """``q_measured``: N rows (one per sample time) of one finite value per joint."""
    n = robot.num_dofs
    try:
        a = np.asarray(q, dtype=float)
    except (TypeError, ValueError):
        raise ArgumentError(f"q_measured: expected an array of shape ({N}, {n}), got {type(q).__name__}") from None
    if a.shape != (N, n):
        raise ArgumentError(f"q_measured: expected shape ({N}, {n}) (one row per time in t, one column per joint of "
                            f"'{robot.name}': {', '.join(robot.joint_names)}), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ArgumentError("q_measured: non-finite values")
    return a


def base_pose_samples(robot: Robot, base_pose, N: int) -> list[gtsam.Pose3]:
    """The measured poses of a floating base's root link, one per sample."""
    if not robot.floating_base:
        raise ArgumentError(f"base_pose: '{robot.name}' has a fixed base (load it with base=\"floating\")")
    if base_pose is None:
        raise ArgumentError(f"base_pose: '{robot.name}' has a floating base, whose motion must be measured: give its "
                            f"root link's pose at each sample, an array ({N}, 4, 4)")
    if isinstance(base_pose, np.ndarray) or not isinstance(base_pose, (list, tuple)):
        poses = np.asarray(base_pose, dtype=float) if not isinstance(base_pose, str) else np.empty(0)
        if poses.shape != (N, 4, 4):
            raise ArgumentError(f"base_pose: expected an array ({N}, 4, 4), one pose per time in t, got shape "
                                f"{poses.shape}")
        base_pose = list(poses)
    if len(base_pose) != N:
        raise ArgumentError(f"base_pose: expected {N} poses, one per time in t, got {len(base_pose)}")
    return [pose_argument(f"base_pose[{k}]", T) for k, T in enumerate(base_pose)]


class HeldTorques:
    """``torque(k, t, q, v)`` for torques held over each step: ``rows`` has one row for every step, or one per step
    (the last one again for the final sample); a native time loop reads the rows themselves."""

    def __init__(self, rows: np.ndarray):
        self.rows = rows

    def __call__(self, k: int, t: float, q, v) -> np.ndarray:
        return self.rows[min(k, len(self.rows) - 1)]


class ControllerTorques:
    """``torque(k, t, q, v)`` from a controller ``law(t, q, v)``, its answer checked at every call; a native time
    loop that knows the law (``gtdyn.PDController``) evaluates it itself. The law gets copies of q and v: it may
    keep or change them without touching the run's state."""

    def __init__(self, robot: Robot, law, passive: bool):
        self.robot, self.law, self.passive = robot, law, passive
        self._shape = (robot.num_dofs,)

    def __call__(self, k: int, t: float, q, v) -> np.ndarray:
        return self._checked(t, self.law(t, np.array(q), np.array(v)))

    def for_native_loop(self, t: float, q, v) -> np.ndarray:
        """The law's torque at a stage of a native time loop: a float vector of the robot's joints as it is,
        anything else as ``__call__`` takes it. The loop's compiled solver checks that its inputs are finite,
        checked or not, and a step whose torque is not stops the loop before it, for the Python stepper to take
        (and raise ``__call__``'s error)."""
        torque = self.law(t, q.copy(), v.copy())
        if type(torque) is np.ndarray and torque.dtype == np.float64 and torque.shape == self._shape \
                and not self.passive:
            return torque
        return self._checked(t, torque)

    def _checked(self, t: float, torque) -> np.ndarray:
        try:
            torque = joint_vector(self.robot, "tau", torque)
            if self.passive:
                check_passive_torques(self.robot, "tau", torque)
            return torque
        except ArgumentError as e:
            raise ArgumentError(f"tau: the controller returned a bad torque at t = {t:g} s: {e}") from None


def simulation_torques(robot: Robot, tau, steps: int) -> Callable[[int, float, np.ndarray, np.ndarray], np.ndarray]:
    """``torque(k, t, q, v)``: the torque during step k (at time t, state (q, v)), checked once up front (a
    controller's at every call). Passive joints' torques are checked here, where they are still called tau: the
    compiled solver would name them its x."""
    n = robot.num_dofs
    if tau is None:
        return HeldTorques(np.zeros((1, n)))
    if callable(tau):
        return ControllerTorques(robot, tau, any(not j.actuated for j in robot.joints))
    expected = f"None, a vector of {n}, an array of shape ({steps}, {n}) or a callable (t, q, v) -> tau"
    array = real_array("tau", tau, expected)
    if array.shape == (n,):
        constant = joint_vector(robot, "tau", array)
        check_passive_torques(robot, "tau", constant)
        return HeldTorques(np.array(constant, float)[None])
    if array.shape != (steps, n):
        raise ArgumentError(f"tau: expected {expected}; got {type(tau).__name__} of shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ArgumentError("tau: non-finite values")
    check_passive_torques(robot, "tau", np.max(np.abs(array), axis=0))  # nonzero where any step's torque is
    return HeldTorques(np.ascontiguousarray(array, dtype=float))


def step_torques(robot: Robot, tau) -> Callable[[int], np.ndarray]:
    """``torque(k)``: the known torques of step k, checked when asked for."""
    n = robot.num_dofs
    if callable(tau):
        def call(k: int) -> np.ndarray:
            try:
                return joint_vector(robot, "tau_of_step", tau(k))
            except ArgumentError as e:
                raise ArgumentError(f"tau_of_step: bad torques for step {k}: {e}") from None
        return call
    try:
        array = np.asarray(tau, dtype=float) if not isinstance(tau, str) else None
    except (TypeError, ValueError):
        array = None
    if array is None or array.ndim != 2 or array.shape[1] != n or not np.all(np.isfinite(array)):
        raise ArgumentError(f"tau_of_step: expected a callable k -> {n} torques or a finite array of shape "
                            f"(steps, {n}), got {type(tau).__name__}"
                            + (f" of shape {array.shape}" if array is not None else ""))

    def row(k: int) -> np.ndarray:
        if k >= len(array):
            raise ArgumentError(f"tau_of_step: no torques for step {k} (the array has {len(array)} rows)")
        return array[k]
    return row


SURELY_ALLOCATED = 2**26  # bytes (64 MiB): a trajectory this small needs no look at the machine's memory


@functools.cache
def _physical_memory() -> int | None:
    """The machine's memory in bytes, read once; None where the system does not say."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def check_trajectory_memory(robot: Robot, steps: int, runs: int = 1) -> None:
    """ArgumentError naming ``steps`` when the trajectory's arrays (of ``runs`` runs) cannot be held: more bytes
    than the machine's memory, or than numpy can allocate (it would fail with its own MemoryError, or the run would
    swap)."""
    n = robot.num_dofs
    # per sample: q, v, q̈, τ; t and the three energies; a floating base's pose, twist and acceleration; closure
    per_sample = 4 * n + 4 + (16 + 6 + 6 if robot.floating_base else 0) + (1 if robot.loop_joints else 0)
    need = runs * (steps + 1) * per_sample * 8
    if need <= SURELY_ALLOCATED:
        return
    memory = _physical_memory()
    try:
        if memory is not None and need > memory:
            raise MemoryError
        np.empty(need, dtype=np.uint8)  # freed at once, its pages never touched: can numpy allocate this much?
    except (MemoryError, ValueError, OverflowError):
        size = f"{need / 2**30:.3g} GiB" if need < 2**1000 else "more bytes than exist"
        runs_of = f" from {runs} states" if runs > 1 else ""
        raise ArgumentError(f"steps: {steps} steps of '{robot.name}'{runs_of} need {size} for the trajectory's arrays, "
                            "more than this machine can allocate; simulate fewer steps (or several runs, each starting "
                            "where the last ended)") from None


def batch_starts(robot: Robot, q0, v0) -> tuple[np.ndarray, np.ndarray]:
    """The initial states of a batch of runs: ``q0`` and ``v0`` of shape (N, n), N ≥ 1 (each row is checked as
    ``simulate`` checks its start)."""
    q0, v0 = state_batch(robot.num_dofs, q0=q0, v0=v0)
    if not len(q0):
        raise ArgumentError(f"q0, v0: no states (shape {q0.shape}); give at least one row")
    return q0, v0


def simulation_covers(robot: Robot, method: str, contacts: bool) -> None:
    """What ``gtdyn.simulate`` covers, checked: closed loops on a fixed base, the variational integrator on trees,
    contacts on trees with the explicit integrators."""
    if robot.floating_base and robot.loop_joints:
        raise ArgumentError(f"robot: simulate covers closed loops on a fixed base; '{robot.name}' floats")
    if robot.loop_joints and method == "variational":
        raise ArgumentError(f"method: the variational integrator covers trees; '{robot.name}' has closed loops")
    if contacts and (robot.loop_joints or method == "variational"):
        raise ArgumentError("contacts: simulate covers contacts on trees with the explicit integrators (not closed "
                            "loops, not the variational integrator)")


def preparable(robot: Robot, planned: bool) -> None:
    """What ``Replanner.prepare`` needs: a plan to predict from, on a fixed base (a floating base's start is a pose,
    whose rows would have to be linearized again at the measured pose)."""
    if not planned:
        raise ArgumentError("prepare: nothing planned yet; plan() first")
    if robot.floating_base:
        raise ArgumentError(f"prepare: '{robot.name}' floats; a prepared replan covers fixed-base robots "
                            "(replan() without it covers both)")


def within_limits(robot: Robot, positions: dict, velocities: dict) -> None:
    """Joint positions and velocities (by argument name; None skipped) inside the model's limits: what a trajectory
    that keeps the limits must start or end at. The error names the argument, the joint and the bound."""
    lower, upper, speed = robot.lower_limits, robot.upper_limits, robot.velocity_limits
    for states, low, high, what in ((positions, lower, upper, "limits"), (velocities, -speed, speed,
                                                                          "velocity limits")):
        for name, x in states.items():
            outside = np.flatnonzero((x < low) | (x > high)) if x is not None else []
            if len(outside):
                j = int(outside[0])
                raise ArgumentError(f"{name}: joint '{robot.joints[j].name}' at {x[j]:g} is outside its {what} "
                                    f"[{low[j]:g}, {high[j]:g}], which the trajectory must keep (limits=False drops "
                                    "them)")


def frame_goal_targets(robot: Robot, goals, knots: int) -> list[tuple[str, int, np.ndarray | None, object]]:
    """``frame_goals`` checked: per goal (frame, knot in [0, knots), position (3,) or None, ``gtsam.Rot3`` or
    None)."""
    out = []
    for i, goal in enumerate(goals or ()):
        if not isinstance(goal, FrameGoal):
            raise ArgumentError(f"frame_goals[{i}]: expected a gtdyn.FrameGoal, got {type(goal).__name__}")
        if goal.frame not in robot.frames:
            raise ArgumentError(f"frame_goals[{i}]: unknown link or frame '{goal.frame}' "
                                f"(links and frames: {', '.join(robot.frames)})")
        if goal.position is None and goal.rotation is None:
            raise ArgumentError(f"frame_goals[{i}]: give a position, a rotation or both")
        knot = goal.knot
        if not isinstance(knot, (int, np.integer)) or isinstance(knot, bool) or not -knots <= knot < knots:
            raise ArgumentError(f"frame_goals[{i}].knot: expected a knot in [{-knots}, {knots - 1}], got {knot!r}")
        position = None if goal.position is None else finite_vector(f"frame_goals[{i}].position", goal.position, 3)
        rotation = None
        if goal.rotation is not None:
            pose = np.eye(4)
            pose[:3, :3] = np.asarray(goal.rotation, dtype=float) if np.shape(goal.rotation) == (3, 3) else np.nan
            rotation = pose_argument(f"frame_goals[{i}].rotation", pose).rotation()
        out.append((goal.frame, int(knot) % knots, position, rotation))
    return out


def contact_phases(robot: Robot, contacts, knots: int) -> list[tuple[str, tuple[tuple[int, int], ...]]]:
    """``contacts`` checked: {frame: [(a, b), …]} — each frame a link or frame of the robot, each run of knots
    [a, b) within [0, knots), non-empty, the runs of a frame apart and in order. Returns (frame, runs) pairs."""
    if not isinstance(contacts, Mapping) or not contacts:
        raise ArgumentError(f"contacts: expected {{frame: [(first knot, end knot), …]}}, got {contacts!r}")
    frame_list(robot, "contacts", list(contacts))
    out = []
    for frame, runs in contacts.items():
        checked: list[tuple[int, int]] = []
        for run in runs if isinstance(runs, (list, tuple)) else [None]:
            ok = isinstance(run, (list, tuple)) and len(run) == 2 and all(
                isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in run)
            if not ok or not 0 <= run[0] < run[1] <= knots or (checked and run[0] < checked[-1][1]):
                raise ArgumentError(f"contacts['{frame}']: expected runs of knots (a, b), 0 ≤ a < b ≤ {knots}, in "
                                    f"order and apart, got {runs!r}")
            checked.append((int(run[0]), int(run[1])))
        out.append((frame, tuple(checked)))
    return out


def floating_plan(robot: Robot, knots: int, base_pose, base_twist, goal_base_pose, goal_base_twist, contacts,
                  friction, ground, base_accel0=None):
    """``optimize_trajectory``'s floating-base arguments checked: None on a fixed base (which must not be given
    them), else ((start pose 4×4, twist, held acceleration or None), (goal pose or None, twist or None),
    ``contact_phases`` or None, friction, ground)."""
    given = {"base_pose": base_pose, "base_twist": base_twist, "goal_base_pose": goal_base_pose,
             "goal_base_twist": goal_base_twist, "contacts": contacts, "base_accel0": base_accel0}
    named = [name for name, value in given.items() if value is not None]
    if not robot.floating_base:
        if named:
            raise ArgumentError(f"{named[0]}: '{robot.name}' has a fixed base (load it with base=\"floating\")")
        return None
    if base_pose is None:
        raise ArgumentError("base_pose: a floating robot's trajectory starts from a base pose (4×4)")
    start = (pose_argument("base_pose", base_pose).matrix(),
             np.zeros(6) if base_twist is None else finite_vector("base_twist", base_twist, 6),
             None if base_accel0 is None else finite_vector("base_accel0", base_accel0, 6))
    goal = (None if goal_base_pose is None else pose_argument("goal_base_pose", goal_base_pose).matrix(),
            None if goal_base_twist is None else finite_vector("goal_base_twist", goal_base_twist, 6))
    phases = None if contacts is None else contact_phases(robot, contacts, knots)
    return start, goal, phases, positive_number("friction", friction), float(finite_vector("ground", [ground], 1)[0])
