"""``gtdyn.simulate``: forward dynamics integrated in time, every step through a compiled solver."""

from __future__ import annotations

import math
import os
import sys
import time
import warnings
from collections.abc import Callable

import gtsam
import numpy as np

from gtdyn.arguments import (finite_vector, gravity_vector, joint_vector, pose_argument, real_array,
                             robot_argument)
from gtdyn.compiled import compile as compile_solver
from gtdyn.arguments.asked import check_passive_torques, check_transmissions
from gtdyn.equations import GRAVITY
from gtdyn.errors import GTDYN_ERRORS, ArgumentError, IllConditionedWarning
from gtdyn.kinematics.forward import forward_kinematics
from gtdyn.kinematics.loop_closure import independent_joints, project
from gtdyn.kinematics.loops import check_closed
from gtdyn.model.robot import Robot
from gtdyn.simulation.floating import simulate_floating
from gtdyn.simulation.integrators import STEPS
from gtdyn.simulation.trajectory import Trajectory
from gtdyn.simulation.variational import VariationalIntegrator
from gtdyn.spatial import Ad

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
    if robot.floating_base:
        if robot.loop_joints:
            raise ArgumentError(f"robot: simulate covers closed loops on a fixed base; '{robot.name}' floats")
        if method != "variational":
            return simulate_floating(robot, q, v, base_pose, base_twist, torque, dt, steps, method, gravity, forward,
                                     _Progress(steps, progress), _step, controller=callable(tau))
        return _simulate_variational(robot, q, v, torque, dt, steps, gravity, forward, _Progress(steps, progress),
                                     base_pose, base_twist)

    if robot.loop_joints:
        if method == "variational":
            raise ArgumentError(f"method: the variational integrator covers trees; '{robot.name}' has closed loops")
        return _simulate_loops(robot, q, v, torque, dt, steps, method, gravity, forward, _Progress(steps, progress),
                               callable(tau))
    n = robot.num_dofs
    Q, V, A, TAU = (np.empty((steps + 1, n)) for _ in range(4))
    t = dt * np.arange(steps + 1)
    report = _Progress(steps, progress)
    if method == "variational":
        return _simulate_variational(robot, q, v, torque, dt, steps, gravity, forward, report)
    step = STEPS[method]
    held = [np.zeros(n)]  # the torque of the current step, for integrators that evaluate q̈ inside a step
    accel = (lambda t_, q_, v_: forward(q_, v_, torque(k, t_, q_, v_))) if callable(tau) else \
        (lambda t_, q_, v_: forward(q_, v_, held[0]))
    for k in range(steps):
        Q[k], V[k] = q, v
        TAU[k] = held[0] = torque(k, t[k], q, v)
        q, v, A[k] = _step(step, accel, t[k], q, v, dt, method)
        report(k + 1)
    Q[steps], V[steps] = q, v
    TAU[steps] = held[0] = torque(steps, t[steps], q, v)
    A[steps] = _step(_acceleration_only, accel, t[steps], q, v, dt, method)[2]
    report.done()
    return Trajectory(robot, method, t, Q, V, A, TAU, gravity)


def _simulate_variational(robot: Robot, q, v, torque, dt: float, steps: int, gravity, forward, report,
                          base_pose=None, base_twist=None) -> Trajectory:
    """Paper 004's integrator (``variational``). M⁻¹ comes from a compiled forward solver at rest without gravity,
    every joint actuated; on a floating base it takes the base's impulse as a wrench on the free base (moved
    from its CoM frame to its link frame and back)."""
    n = robot.num_dofs
    rest = compile_solver(robot.with_actuated(robot.joint_names), "forward", ordering="aba", gravity=np.zeros(3))
    zeros, lTcom = np.zeros(n), robot.base.lTcom
    com_T_l = Ad(lTcom.inverse())
    if robot.floating_base:
        def mass_inverse(q_, p):
            accel, qdd = rest(q_, zeros, p[6:], base_wrench=com_T_l.T @ p[:6])
            return np.concatenate([com_T_l @ accel, qdd])
    else:
        def mass_inverse(q_, p):
            return rest(q_, zeros, p)
    integrator = VariationalIntegrator(robot, gravity, mass_inverse)
    T0 = V0 = None
    if robot.floating_base:
        T0, V0 = base_pose.compose(lTcom), com_T_l @ base_twist
    state = integrator.start(q, v, torque(0, 0.0, q, v), dt, T0, V0)
    Q, V, A, TAU = (np.empty((steps + 1, n)) for _ in range(4))
    poses, twists, accels = np.empty((steps + 1, 4, 4)), np.empty((steps + 1, 6)), np.empty((steps + 1, 6))
    t = dt * np.arange(steps + 1)
    for k in range(steps + 1):
        joints_v = state["v"][6:] if robot.floating_base else state["v"]
        Q[k], V[k], TAU[k] = state["q"], joints_v, state["tau"]
        if robot.floating_base:
            poses[k] = state["T0"].compose(lTcom.inverse()).matrix()
            twists[k] = Ad(lTcom) @ state["v"][:6]
            accels[k], A[k] = forward(Q[k], V[k], TAU[k], base_pose=poses[k], base_twist=twists[k])
        else:
            A[k] = forward(Q[k], V[k], TAU[k])
        if k < steps:
            state["t"] = t[k]
            state, _ = integrator.step(state, lambda q_, v_, k=k: torque(k + 1, t[k + 1], q_, v_))
            report(k + 1)
    report.done()
    if not robot.floating_base:
        return Trajectory(robot, "variational", t, Q, V, A, TAU, gravity)
    return Trajectory(robot, "variational", t, Q, V, A, TAU, gravity, base_pose=poses, base_twist=twists,
                      base_accel=accels)


def _simulate_loops(robot: Robot, q, v, torque, dt: float, steps: int, method: str, gravity, forward, report,
                    controlled: bool) -> Trajectory:
    """Closed loops by coordinate partitioning: the integrator moves the independent joints' q and q̇; every
    evaluation first closes the loops around them (``project``: positions on the current assembly branch,
    then rates), so each stage's state is on the constraint manifold and the method keeps its order."""
    check_closed(robot, forward_kinematics(robot, q, v))
    names = independent_joints(robot, robot.actuated_joint_names, q)
    index = np.array([robot.joint_names.index(name) for name in names])
    joints = [robot.joint(name).index for name in names]
    last = {"q": q}

    def closed(qi, vi):
        q_all, v_all = project(robot, dict(zip(joints, qi)), dict(zip(joints, vi)), last["q"])
        last["q"] = q_all
        return q_all, v_all

    n = robot.num_dofs
    Q, V, A, TAU = (np.empty((steps + 1, n)) for _ in range(4))
    closure = np.empty(steps + 1)
    t = dt * np.arange(steps + 1)
    held = [np.zeros(n)]

    def accel(t_, qi, vi):  # a controller is asked at every stage, as on a tree
        q_all, v_all = closed(qi, vi)
        return forward(q_all, v_all, torque(k, t_, q_all, v_all) if controlled else held[0])[index]

    qi, vi = q[index], v[index]
    warned = False
    for k in range(steps + 1):
        q_all, v_all = closed(qi, vi)
        if k and not warned and _jumped(Q[k - 1], V[k - 1], A[k - 1], q_all, dt):
            warned = True
            warnings.warn(IllConditionedWarning(
                f"the loops of '{robot.name}' passed near a singular configuration at t = {t[k]:g} s: closing them "
                f"moved the dependent joints by {np.max(np.abs(q_all - Q[k - 1] - dt * V[k - 1])):.3g} beyond the "
                "step's prediction, so the mechanism may have switched assembly branch (watch Trajectory.energy)"),
                stacklevel=3)
        kin = forward_kinematics(robot, q_all, v_all)
        closure[k] = max([float(np.max(np.abs(r))) for r in (*kin.pose_closure.values(), *kin.twist_closure.values())])
        Q[k], V[k] = q_all, v_all
        TAU[k] = held[0] = torque(k, t[k], q_all, v_all)
        A[k] = forward(q_all, v_all, held[0])
        if k < steps:
            qi, vi, _ = _step(STEPS[method], accel, t[k], qi, vi, dt, method)
            report(k + 1)
    report.done()
    return Trajectory(robot, method, t, Q, V, A, TAU, gravity, closure)


def _jumped(q_before, v_before, a_before, q_now, dt: float) -> bool:
    """Whether a projected state lies farther from the last one's Taylor prediction than a smooth motion could:
    the prediction is off by about Δt²/2 |q̈|; a hundred times that (and a millionth of a radian) is a jump."""
    miss = np.max(np.abs(q_now - q_before - dt * v_before))
    return miss > 100 * dt * dt * (1.0 + np.max(np.abs(a_before))) + 1e-6


def _acceleration_only(accel, t: float, q, v, dt: float, rate=None):
    """q̈ at the last sample, through ``_step`` for its error note."""
    return q, v, accel(t, q, v)


def _step(step, accel, t: float, q, v, dt: float, method: str, rate=None):
    """One integrator step; an error of the dynamics (a state that overflowed, say) says when it happened."""
    try:
        return step(accel, t, q, v, dt, rate)
    except GTDYN_ERRORS as e:
        e.add_note(f"gtdyn.simulate: at t = {t:g} s, {method} with dt = {dt:g} s" + (
            " (a diverging integration shows here first; try a smaller step)" if t > 0 else ""))
        raise


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
    """'gtdyn.simulate: k/N steps' on stderr, once a second, for runs longer than ``PROGRESS_AFTER_S``."""

    def __init__(self, steps: int, progress: bool | None):
        self.steps, self.progress = steps, progress
        self.started = self.last = time.perf_counter()
        self.shown = False

    def __call__(self, k: int) -> None:
        if self.progress is False or k % 64:
            return
        now = time.perf_counter()
        if (self.progress or now - self.started > PROGRESS_AFTER_S) and now - self.last > 1.0:
            print(f"\rgtdyn.simulate: {k}/{self.steps} steps", end="", file=sys.stderr, flush=True)
            self.last, self.shown = now, True

    def done(self) -> None:
        if self.shown:
            print(f"\rgtdyn.simulate: {self.steps}/{self.steps} steps, {time.perf_counter() - self.started:.1f} s",
                  file=sys.stderr, flush=True)
