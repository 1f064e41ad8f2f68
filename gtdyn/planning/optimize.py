"""``optimize_trajectory``: a kinodynamic trajectory by direct collocation, solved as a sequence of linear factor
graphs.

Knots k = 0 … N (N = ``steps``), Δt apart, each with a state s_k = [q; q̇; q̈] and torques τ_k. The factors:

* dynamics at every knot, τ_k − ID(q_k, q̇_k, q̈_k) = 0 (hard), by a compiled inverse-dynamics solver and its exact
  derivatives (issue 21) — all knots in one native batch call per iteration; passive joints' τ = 0 (hard);
* collocation between knots (hard): trapezoidal, q_{k+1} = q_k + Δt/2 (q̇_k + q̇_{k+1}) and likewise q̇ from q̈,
  or Euler, q_{k+1} = q_k + Δt q̇_k, q̇_{k+1} = q̇_k + Δt q̈_k;
* start and goal (hard); costs (soft): torque effort Σ Δt ‖τ_k‖² and smoothness Σ Δt ‖(q̈_{k+1} − q̈_k)/Δt‖²;
* limits on q, q̇ and τ from the model as inequalities c(x) ≤ 0, by an augmented Lagrangian: soft terms
  μ/2 · max(0, c + λ/μ)², the multipliers λ and the weight μ updated between solves until every limit holds to
  ``tolerance``.

Why not GTSAM's nonlinear optimizers: its Python ``CustomFactor`` copies the whole ``Values`` at each call, so a
graph of N knots costs O(N²) per iteration. Here each Gauss–Newton iteration linearizes every factor at once
from Python (the dynamics' Jacobians from one batch call) into a ``gtsam.GaussianFactorGraph`` of
``JacobianFactor``s, whose elimination (COLAMD, banded in time) GTSAM does: linear in the knots. The hard rows
are GTSAM constrained rows, so each step meets the linearized constraints exactly (a Gauss–Newton SQP step);
Levenberg–Marquardt damping on a merit (cost plus a penalty on the hard residuals) keeps it descending.
"""

from __future__ import annotations

import functools
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from gtdyn.arguments import (
    choice,
    covered,
    gravity_vector,
    held_joints,
    joint_positions,
    joint_vector,
    positive_number,
    robot_argument,
    whole_number,
)
from gtdyn.arguments.series import floating_plan, within_limits
from gtdyn.compiled import compile
from gtdyn.compiled.frames import compile_frames
from gtdyn.dynamics.quantities import rigid_bodies
from gtdyn.equations import GRAVITY
from gtdyn.errors import ConvergenceWarning
from gtdyn.model.robot import Robot
from gtdyn.planning.contacts import ContactSchedule
from gtdyn.planning.floating import FloatingProblem
from gtdyn.planning.goals import FrameGoals
from gtdyn.planning.knots import KnotProblem
from gtdyn.planning.limits import Limits

COLLOCATION = ("trapezoidal", "euler")


@dataclass(frozen=True, eq=False)
class PlannedTrajectory:
    """The optimized trajectory at the ``steps + 1`` knots: times ``t``, ``q``, ``v``, ``qdd``, ``tau`` (rows in time,
    columns in ``robot.joint_names`` order). ``cost``: the soft costs' value (½ Σ weighted squares of effort and
    smoothness); ``violation``: the largest residual of a hard constraint (dynamics, collocation, start, goal,
    passive torques) or limit; ``converged``: whether both are met to the tolerance; ``iterations``
    (Gauss–Newton steps, all augmented-Lagrangian rounds together) and ``seconds``."""

    robot: Robot
    collocation: str
    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray
    cost: float
    violation: float
    converged: bool
    iterations: int
    seconds: float
    # the limits' augmented-Lagrangian state at the end ({name: (knots, n) multipliers}, weight μ): a warm start's
    multipliers: dict | None = field(default=None, repr=False)
    weight: float = field(default=0.0, repr=False)
    # a floating base: its pose (K, 4, 4), twist and acceleration (K, 6, root link frame) at the knots; with
    # contacts, each frame's force from the ground (K, 3, world axes; zero off its stances)
    base_pose: np.ndarray | None = field(default=None, repr=False)
    base_twist: np.ndarray | None = field(default=None, repr=False)
    base_accel: np.ndarray | None = field(default=None, repr=False)
    contact_forces: dict | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        return (f"PlannedTrajectory('{self.robot.name}', {len(self.t)} knots, {self.collocation}, "
                f"cost {self.cost:.4g}, violation {self.violation:.1e}, {self.iterations} iterations, "
                f"{self.seconds:.3g} s)")


# A replanning loop calls optimize_trajectory at every step, and loading a solver from the disk cache costs more
# than a real-time step: the last few robots' and options' solvers stay in memory (they hold their robot).
KEPT_SOLVERS = 8


@functools.lru_cache(maxsize=KEPT_SOLVERS)
def planning_solver(robot: Robot, gravity: tuple, frames: tuple | None):
    """The compiled inverse dynamics with derivatives that a trajectory of ``robot`` needs (every joint actuated:
    its τ are generalized forces; with contact ``frames``, their forces in world-aligned axes)."""
    wrenches = {"wrench_frames": list(frames), "wrench_axes": "world_aligned"} if frames else {}
    return compile(rigid_bodies(robot), "inverse", gravity=np.array(gravity), derivatives=True, **wrenches)


@functools.lru_cache(maxsize=KEPT_SOLVERS)
def planning_frames(robot: Robot, frames: tuple):
    """The contact frames' compiled kinematics, kept as ``planning_solver`` is."""
    return compile_frames(robot, list(frames))


def optimize_trajectory(robot: Robot, *, q0, v0=None, goal_q=None, goal_v=None, steps: int, dt: float,
                        collocation: str = "trapezoidal", limits: bool = True, frame_goals=None, effort: float = 1.0,
                        smoothness: float = 1e-4, gravity=GRAVITY, tolerance: float = 1e-8,
                        max_iterations: int = 400, initial=None, base_pose=None, base_twist=None,
                        goal_base_pose=None, goal_base_twist=None, contacts=None, friction: float = 0.7,
                        ground: float = 0.0, force_smoothness: float = 1e-3, qdd0=None, base_accel0=None,
                        real_time_steps: int | None = None) -> PlannedTrajectory:
    """A trajectory from (q0, v0) to ``goal_q`` (and ``goal_v``; None: free) in ``steps`` steps of ``dt`` seconds
    that obeys the dynamics and the ``collocation`` rule ("trapezoidal" or "euler") at every knot, minimizes
    ``effort`` · Σ Δt ‖τ‖² + ``smoothness`` · Σ Δt ‖jerk‖², and keeps the model's limits on q, q̇ and τ when
    ``limits`` (as constraints met to ``tolerance``, not penalties). ``frame_goals``: a list of
    ``gtdyn.FrameGoal`` — a frame's position and/or orientation at a knot (the last by default), in task space,
    met exactly like ``goal_q``. ``initial``: a ``PlannedTrajectory`` of the same knots to start from (a warm
    start: ``gtdyn.planning.Replanner``), else a smooth path through the goals. Passive joints carry no torque.
    ``qdd0`` (and on a floating base ``base_accel0``, root link frame) holds the first knot's accelerations (None,
    or NaN at a joint: free): a replan that keeps the acceleration under way.

    ``real_time_steps``: a real-time iteration for model-predictive control from a warm start ``initial`` — at
    most that many Gauss–Newton steps, stopping at the first point that meets every constraint to ``tolerance``,
    its cost not polished further (``TrajectoryProblem.real_time``); None solves to the optimum.

    A floating robot starts at ``base_pose`` (4×4, required) with ``base_twist`` (root link frame, default zero)
    and may end at ``goal_base_pose`` / ``goal_base_twist``; nothing but ``contacts`` pushes its base:
    ``{frame: [(a, b), …]}`` says over which runs of knots [a, b) each frame (a point, its origin) stands on the
    ground at height ``ground`` (world z up) — landing at a, standing still until b, with a force inside the
    friction pyramid of coefficient ``friction`` — and off its runs it stays above the ground
    (``gtdyn.planning.floating``, ``gtdyn.planning.contacts``); ``force_smoothness`` weighs the forces' rate of
    change, Σ Δt ‖Δf/Δt‖², as ``smoothness`` the accelerations'. The result adds ``base_pose``, ``base_twist``,
    ``base_accel`` and ``contact_forces``; as ``initial`` it warm-starts all of them (a floating plan for a
    floating robot).

    Trees (no loops or transmissions). A run that stops before meeting every constraint says so with a
    ``ConvergenceWarning`` (and ``converged`` False)."""
    asked = dict(locals())  # the request as given, checked once in ``set_up``
    steps_cap = asked.pop("real_time_steps")
    steps_cap = None if steps_cap is None else whole_number("real_time_steps", steps_cap, 1)
    setup = set_up(**asked)
    problem, tolerance = setup.problem, setup.tolerance
    if steps_cap is None:
        x, iterations, violation = problem.solve(setup.start, tolerance, setup.max_iterations)
    else:
        x, iterations, violation = problem.real_time(setup.start, tolerance, min(steps_cap, setup.max_iterations))
    return finish(setup, x, iterations, violation)


@dataclass(frozen=True, eq=False)
class Setup:
    """A checked request: its problem, the point its solve starts from, and what its result records."""

    robot: Robot
    problem: object  # a KnotProblem, or a FloatingProblem on a floating base
    start: np.ndarray
    bounds: Limits
    floating: bool
    collocation: str
    dt: float
    tolerance: float
    max_iterations: int
    started: float  # perf_counter when the problem was being built: the result's seconds count from it


def set_up(robot: Robot, *, q0, v0, goal_q, goal_v, steps, dt, collocation, limits, frame_goals, effort,
           smoothness, gravity, tolerance, max_iterations, initial, base_pose, base_twist, goal_base_pose,
           goal_base_twist, contacts, friction, ground, force_smoothness, qdd0, base_accel0) -> Setup:
    """``optimize_trajectory``'s arguments (all of them: its signature holds the defaults) checked and converted,
    and the problem they ask for with its starting point (a warm start's, or the smooth guess)."""
    covered(robot_argument(robot), "optimize_trajectory", loops=False, transmissions=False,
            advice="it covers trees, on a fixed or floating base")
    choice("collocation", collocation, COLLOCATION)
    steps = whole_number("steps", steps, 1)
    dt = positive_number("dt", dt)
    n = robot.num_dofs
    q0 = joint_positions(robot, "q0", q0)
    v0 = np.zeros(n) if v0 is None else joint_vector(robot, "v0", v0)
    goal_q = None if goal_q is None else joint_positions(robot, "goal_q", goal_q)
    goal_v = None if goal_v is None else joint_vector(robot, "goal_v", goal_v)
    weights = positive_number("effort", effort), positive_number("smoothness", smoothness)
    tolerance = positive_number("tolerance", tolerance)
    max_iterations = whole_number("max_iterations", max_iterations, 1)
    gravity = gravity_vector(gravity)
    floating = floating_plan(robot, steps + 1, base_pose, base_twist, goal_base_pose, goal_base_twist, contacts,
                             friction, ground, base_accel0)
    if limits:
        within_limits(robot, {"q0": q0, "goal_q": goal_q}, {"v0": v0, "goal_v": goal_v})
    bounds = Limits.of(robot, steps + 1) if limits else Limits.none(robot, steps + 1)
    started = time.perf_counter()
    args = (steps, dt, collocation, q0, v0, goal_q, goal_v, weights, bounds)
    held = np.full(n, np.nan) if qdd0 is None else held_joints(robot, "qdd0", qdd0)
    qdd0 = None if np.all(np.isnan(held)) else held
    if floating is None:
        # every joint actuated in the solver: its τ are generalized forces, a passive joint's held at zero by a
        # hard row
        passive = np.array([not j.actuated for j in robot.joints], bool)
        problem = KnotProblem(robot, planning_solver(robot, tuple(gravity), None), *args,
                              FrameGoals(robot, frame_goals, steps + 1), passive,
                              start_accel=None if qdd0 is None else held)
    else:
        start, goal, phases, friction, ground = floating
        schedule = ContactSchedule(tuple(f for f, _ in phases), tuple(runs for _, runs in phases), friction, ground,
                                   steps + 1) if phases else None
        frames = tuple(schedule.frames) if schedule else None
        base_held = start[2] if start[2] is not None else np.full(6, np.nan)
        problem = FloatingProblem(robot, planning_solver(robot, tuple(gravity), frames),
                                  planning_frames(robot, frames) if frames else None, *args, schedule, start[:2],
                                  goal, gravity, positive_number("force_smoothness", force_smoothness),
                                  FrameGoals(robot, frame_goals, steps + 1),
                                  start_accel=None if qdd0 is None and start[2] is None else
                                  np.concatenate([base_held, held]))
    start = problem.initial_guess() if initial is None else problem.warm_start(initial, PlannedTrajectory)
    return Setup(robot, problem, start, bounds, floating is not None, collocation, dt, tolerance, max_iterations,
                 started)


def finish(setup: Setup, x: np.ndarray, iterations: int, violation: float) -> PlannedTrajectory:
    """The plan at x, a solve's point (a ``ConvergenceWarning`` when a constraint is violated beyond the
    tolerance)."""
    problem, bounds, tolerance, n = setup.problem, setup.bounds, setup.tolerance, setup.robot.num_dofs
    converged = violation <= tolerance
    if not converged:
        warnings.warn(f"optimize_trajectory: stopped after {iterations} iterations with a constraint violated by "
                      f"{violation:.3g} (tolerance {tolerance:g}); the trajectory does not meet its constraints — "
                      "more steps, a longer dt, wider limits or a reachable goal may help", ConvergenceWarning,
                      stacklevel=3)
    q, v, a, tau = (part[:, -n:].copy() for part in problem.unpack(x))
    extra, multipliers = {}, {name: m.copy() for name, m in bounds.multipliers.items()}
    if getattr(problem, "contact_terms", None) is not None:
        multipliers["contacts"] = problem.contact_terms.by_knot()
    if setup.floating:
        _, base_v, base_a, _ = problem.unpack(x)
        extra = {"base_pose": problem.poses(x), "base_twist": base_v[:, :6].copy(),
                 "base_accel": base_a[:, :6].copy(), "contact_forces": {
                     name: wrench[:, 3:] for name, wrench in problem.wrenches(x).items()}}
    return PlannedTrajectory(setup.robot, setup.collocation, setup.dt * np.arange(problem.N + 1), q, v, a, tau,
                             problem.cost(x), violation, converged, iterations, time.perf_counter() - setup.started,
                             multipliers, bounds.mu, **extra)
