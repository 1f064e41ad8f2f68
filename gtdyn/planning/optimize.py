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

import time
import warnings
from dataclasses import dataclass, field

import gtsam
import numpy as np

from gtdyn.arguments import (
    choice,
    covered,
    gravity_vector,
    joint_positions,
    joint_vector,
    positive_number,
    robot_argument,
    whole_number,
)
from gtdyn.arguments.series import within_limits
from gtdyn.compiled import compile
from gtdyn.dynamics.quantities import rigid_bodies
from gtdyn.equations import GRAVITY
from gtdyn.errors import ArgumentError, ConvergenceWarning
from gtdyn.model.robot import Robot
from gtdyn.planning.goals import FrameGoals
from gtdyn.planning.limits import Limits

COLLOCATION = ("trapezoidal", "euler")
# The merit a step must lower: cost + limits' terms + ν · Σ|hard residual|. It is exact (its minima are the
# constrained ones) for ν above the multipliers. The dynamics rows' are λ = −(w² τ + ∂P/∂τ) by stationarity in τ;
# the estimate leaves out the passive joints' and the collocation rows', hence the margin: ν is MERIT_MARGIN
# times its largest, at least MERIT_PENALTY_MIN, and never falls within a solve. (A fixed ν = 1e4 made every full
# step that left the constraints by 1e-3 look worse than a tenth of it; with margin 2 the cart-pole stalled.)
MERIT_PENALTY_MIN, MERIT_MARGIN = 1.0, 10.0
DAMPING_START, DAMPING_MIN, DAMPING_MAX = 1e-3, 1e-12, 1e8
CORRECTION_DAMPING = 1e-6  # a second-order correction: the least-change step back onto the hard constraints
STALL = 1e-12  # a round of steps ends when the merit falls by less than this, relatively
# Rounds before the limits hold are solved loosely — to a relative merit change of 1e-3 of the last violation,
# at most 1e-4 — since their multipliers will change anyway; once every limit holds and only active ones carry a
# multiplier, a last round goes to STALL (inexact augmented-Lagrangian rounds, Nocedal & Wright §17.4).
ROUND_STALL, STALL_PER_VIOLATION = 1e-4, 1e-3
BACKTRACKING = 10  # halvings of a step tried before the damping grows


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

    def __repr__(self) -> str:
        return (f"PlannedTrajectory('{self.robot.name}', {len(self.t)} knots, {self.collocation}, "
                f"cost {self.cost:.4g}, violation {self.violation:.1e}, {self.iterations} iterations, "
                f"{self.seconds:.3g} s)")


def optimize_trajectory(robot: Robot, *, q0, v0=None, goal_q=None, goal_v=None, steps: int, dt: float,
                        collocation: str = "trapezoidal", limits: bool = True, frame_goals=None, effort: float = 1.0,
                        smoothness: float = 1e-4, gravity=GRAVITY, tolerance: float = 1e-8,
                        max_iterations: int = 400, initial=None) -> PlannedTrajectory:
    """A trajectory from (q0, v0) to ``goal_q`` (and ``goal_v``; None: free) in ``steps`` steps of ``dt`` seconds
    that obeys the dynamics and the ``collocation`` rule ("trapezoidal" or "euler") at every knot, minimizes
    ``effort`` · Σ Δt ‖τ‖² + ``smoothness`` · Σ Δt ‖jerk‖², and keeps the model's limits on q, q̇ and τ when
    ``limits`` (as constraints met to ``tolerance``, not penalties). ``frame_goals``: a list of
    ``gtdyn.FrameGoal`` — a frame's position and/or orientation at a knot (the last by default), in task space,
    met exactly like ``goal_q``. ``initial``: a ``PlannedTrajectory`` of the same knots to start from (a warm
    start: ``gtdyn.planning.Replanner``), else a smooth path through the goals. Passive joints carry no torque.
    Trees on a
    fixed base. A run that stops before meeting every constraint says so with a ``ConvergenceWarning`` (and
    ``converged`` False)."""
    covered(robot_argument(robot), "optimize_trajectory", loops=False, floating_base=False, transmissions=False,
            advice="it covers trees on a fixed base for now")
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
    if limits:
        within_limits(robot, {"q0": q0, "goal_q": goal_q}, {"v0": v0, "goal_v": goal_v})
    bounds = Limits.of(robot, steps + 1) if limits else Limits.none(robot, steps + 1)
    started = time.perf_counter()
    # every joint actuated in the solver: its τ are generalized forces, a passive joint's held at zero by a hard row
    solver = compile(rigid_bodies(robot), "inverse", gravity=gravity_vector(gravity), derivatives=True)
    goals = FrameGoals(robot, frame_goals, steps + 1)
    problem = _Problem(robot, solver, steps, dt, collocation, q0, v0, goal_q, goal_v, weights, bounds, goals)
    start = problem.initial_guess() if initial is None else problem.warm_start(initial)
    x, iterations, violation = problem.solve(start, tolerance, max_iterations)
    converged = violation <= tolerance
    if not converged:
        warnings.warn(f"optimize_trajectory: stopped after {iterations} iterations with a constraint violated by "
                      f"{violation:.3g} (tolerance {tolerance:g}); the trajectory does not meet its constraints — "
                      "more steps, a longer dt, wider limits or a reachable goal may help", ConvergenceWarning,
                      stacklevel=2)
    q, v, a, tau = problem.unpack(x)
    return PlannedTrajectory(robot, collocation, dt * np.arange(steps + 1), q, v, a, tau, problem.cost(x),
                             violation, converged, iterations, time.perf_counter() - started,
                             {name: m.copy() for name, m in bounds.multipliers.items()}, bounds.mu)


class _Problem:
    """The factors of one planning problem, linearized at a point as a ``gtsam.GaussianFactorGraph``."""

    def __init__(self, robot, solver, steps, dt, collocation, q0, v0, goal_q, goal_v, weights, bounds: Limits,
                 goals: FrameGoals):
        self.robot, self.solver, self.N, self.h, self.rule = robot, solver, steps, dt, collocation
        self.q0, self.v0, self.goal_q, self.goal_v = q0, v0, goal_q, goal_v
        self.effort, self.smoothness = weights
        self.bounds, self.goals = bounds, goals
        self.merit_penalty = MERIT_PENALTY_MIN
        n = self.n = robot.num_dofs
        self.passive = np.array([not j.actuated for j in robot.joints], bool)
        self.s_keys = [gtsam.symbol("s", k) for k in range(steps + 1)]
        self.u_keys = [gtsam.symbol("u", k) for k in range(steps + 1)]
        # eliminated in time, each knot's torques before its state: the band stays a band (COLAMD finds the
        # same kind of order, but at every step, for a tenth of the step's time)
        self.ordering = gtsam.Ordering([key for k in range(steps + 1) for key in (self.u_keys[k], self.s_keys[k])])
        dims = [3 * self.n] * len(self.s_keys) + [self.n] * len(self.u_keys)
        self.damping_rows = [(key, np.eye(dim), np.zeros(dim), gtsam.noiseModel.Unit.Create(dim))
                             for key, dim in zip(self.s_keys + self.u_keys, dims)]
        eye, zero = np.eye(n), np.zeros((n, n))
        h = dt
        # collocation rows [q; q̇]_{k+1} − [q; q̇]_k − rule = C_now s_k + C_next s_{k+1}
        if collocation == "trapezoidal":
            self.C_now = np.block([[-eye, -h / 2 * eye, zero], [zero, -eye, -h / 2 * eye]])
            self.C_next = np.block([[eye, -h / 2 * eye, zero], [zero, eye, -h / 2 * eye]])
        else:
            self.C_now = np.block([[-eye, -h * eye, zero], [zero, -eye, -h * eye]])
            self.C_next = np.block([[eye, zero, zero], [zero, eye, zero]])
        self.position_velocity = np.block([[eye, zero, zero], [zero, eye, zero]])

    # -- variables ------------------------------------------------------------------------------------------

    def unpack(self, x: np.ndarray):
        """x = [s_0 … s_N, τ_0 … τ_N] → q, v, a, τ (rows in time)."""
        n, K = self.n, self.N + 1
        s = x[:3 * n * K].reshape(K, 3, n)
        return s[:, 0].copy(), s[:, 1].copy(), s[:, 2].copy(), x[3 * n * K:].reshape(K, n).copy()

    def pack(self, q, v, a, tau) -> np.ndarray:
        return np.concatenate([np.stack([q, v, a], axis=1).ravel(), np.asarray(tau).ravel()])

    def warm_start(self, initial) -> np.ndarray:
        """A given trajectory's knots as the starting point (its start moved to this problem's q0, v0)."""
        if not isinstance(initial, PlannedTrajectory) or initial.q.shape != (self.N + 1, self.n):
            raise ArgumentError(f"initial: expected a PlannedTrajectory of {self.N + 1} knots of '{self.robot.name}'")
        q, v = initial.q.copy(), initial.v.copy()
        q[0], v[0] = self.q0, self.v0
        if initial.multipliers is not None:  # the limits' multipliers too: they took rounds to find
            self.bounds.multipliers = {name: m.copy() for name, m in initial.multipliers.items()}
            # but not their weight: near the right multipliers a small μ suffices, and the μ a solve ends with
            # (up to 1e9 and more) makes the next one's steps so stiff that they stall off the constraints

        return self.pack(q, v, initial.qdd, initial.tau)

    def initial_guess(self) -> np.ndarray:
        """q through its waypoints — q0, a configuration meeting each knot's frame goals (inverse kinematics),
        ``goal_q`` — along smooth (cubic) rest-to-rest segments, q̇ and q̈ their derivatives, τ their inverse
        dynamics: consistent with the dynamics, nearly so with the collocation."""
        waypoints = {0: self.q0}
        lower, upper = self.bounds.bound["q lower"], self.bounds.bound["q upper"]
        for knot in self.goals.knots() if self.goals else ():
            waypoints[knot] = self.goals.inverse_kinematics(knot, waypoints[max(waypoints)], lower, upper)
        if self.goal_q is not None:
            waypoints[self.N] = self.goal_q
        q = np.empty((self.N + 1, self.n))
        v, a = np.zeros_like(q), np.zeros_like(q)
        knots = sorted(waypoints)
        q[:] = waypoints[knots[-1]]
        for first, last in zip(knots[:-1], knots[1:], strict=True):
            T = (last - first) * self.h
            t = self.h * np.arange(last - first + 1)[:, None]
            change = waypoints[last] - waypoints[first]
            q[first:last + 1] = waypoints[first] + (3 * (t / T) ** 2 - 2 * (t / T) ** 3) * change
            v[first:last + 1] = (6 * t / T ** 2 - 6 * t ** 2 / T ** 3) * change
            a[first:last + 1] = (6 / T ** 2 - 12 * t / T ** 3) * change
        v[0] = self.v0
        tau = self.solver.batch_derivatives(q, v, a).value
        tau[:, self.passive] = 0.0
        return self.pack(q, v, a, tau)

    # -- the factors ----------------------------------------------------------------------------------------

    def hard_residuals(self, x: np.ndarray) -> np.ndarray:
        """Every hard constraint's residual at x (the dynamics by the solver's values alone, no Jacobians)."""
        q, v, a, tau = self.unpack(x)
        inverse = self.solver.batch(q, v, a)
        s = x[:3 * self.n * (self.N + 1)].reshape(self.N + 1, 3 * self.n)
        parts = [(tau - inverse).ravel(), tau[:, self.passive].ravel(),
                 (s[:-1] @ self.C_now.T + s[1:] @ self.C_next.T).ravel(), q[0] - self.q0, v[0] - self.v0]
        if self.goal_q is not None:
            parts.append(q[-1] - self.goal_q)
        if self.goal_v is not None:
            parts.append(v[-1] - self.goal_v)
        parts += [r for _, r, _ in self.goals.residuals(q)] if self.goals else []
        return np.concatenate(parts)

    def soft_residuals(self, x: np.ndarray) -> np.ndarray:
        """Effort and smoothness, weighted so that ½‖r‖² is the cost."""
        _, _, a, tau = self.unpack(x)
        effort = np.sqrt(self.effort * self.h) * tau[:, ~self.passive]
        jerk = np.sqrt(self.smoothness * self.h) * np.diff(a, axis=0) / self.h
        return np.concatenate([effort.ravel(), jerk.ravel()])

    def cost(self, x: np.ndarray) -> float:
        return 0.5 * float(np.sum(self.soft_residuals(x) ** 2))

    def merit(self, x: np.ndarray) -> float:
        q, v, _, tau = self.unpack(x)
        return self.cost(x) + self.bounds.penalty(q, v, tau) + self.merit_penalty * float(np.sum(np.abs(
            self.hard_residuals(x))))

    def raise_merit_penalty(self, x: np.ndarray) -> None:
        """ν ≥ ``MERIT_MARGIN`` · max|λ| over the dynamics rows' multiplier estimates."""
        q, v, _, tau = self.unpack(x)
        multipliers = (self.effort * self.h * tau + self.bounds.tau_gradient(q, v, tau))[:, ~self.passive]
        self.merit_penalty = max(self.merit_penalty, MERIT_MARGIN * float(np.max(np.abs(multipliers), initial=0.0)))

    def linearized(self, x: np.ndarray, soft: bool = True) -> gtsam.GaussianFactorGraph:
        """Every factor linearized at x (J δ = −r per factor; the hard ones alone if not ``soft``)."""
        n, N, h = self.n, self.N, self.h
        q, v, a, tau = self.unpack(x)
        d = self.solver.batch_derivatives(q, v, a)
        graph = gtsam.GaussianFactorGraph()
        hard = gtsam.noiseModel.Constrained.All
        unit = gtsam.noiseModel.Unit.Create
        eye = np.eye(n)
        w_effort, w_jerk = np.sqrt(self.effort * h), np.sqrt(self.smoothness * h) / h
        selector = eye[~self.passive]
        for k in range(N + 1):
            s_k, u_k = self.s_keys[k], self.u_keys[k]
            J_state = -np.hstack([d.dq[k], d.dv[k], d.dx[k]])
            graph.add(gtsam.JacobianFactor(s_k, J_state, u_k, eye, -(tau[k] - d.value[k]), hard(n)))
            if self.passive.any():
                graph.add(gtsam.JacobianFactor(u_k, eye[self.passive], -tau[k, self.passive],
                                               hard(int(self.passive.sum()))))
            if selector.size and soft:
                graph.add(gtsam.JacobianFactor(u_k, w_effort * selector, -w_effort * tau[k, ~self.passive],
                                               unit(selector.shape[0])))
            if k < N:
                s_now = np.concatenate([q[k], v[k], a[k]])
                s_next = np.concatenate([q[k + 1], v[k + 1], a[k + 1]])
                r = self.C_now @ s_now + self.C_next @ s_next
                graph.add(gtsam.JacobianFactor(s_k, self.C_now, self.s_keys[k + 1], self.C_next, -r, hard(2 * n)))
                if not soft:
                    continue
                jerk = np.hstack([np.zeros((n, 2 * n)), eye])
                graph.add(gtsam.JacobianFactor(s_k, -w_jerk * jerk, self.s_keys[k + 1], w_jerk * jerk,
                                               -w_jerk * (a[k + 1] - a[k]), unit(n)))
        P = self.position_velocity
        graph.add(gtsam.JacobianFactor(self.s_keys[0], P, -np.concatenate([q[0] - self.q0, v[0] - self.v0]),
                                       hard(2 * n)))
        if self.goal_q is not None:
            graph.add(gtsam.JacobianFactor(self.s_keys[N], P[:n], -(q[N] - self.goal_q), hard(n)))
        if self.goal_v is not None:
            graph.add(gtsam.JacobianFactor(self.s_keys[N], P[n:], -(v[N] - self.goal_v), hard(n)))
        for k, r, J in self.goals.residuals(q) if self.goals else ():
            graph.add(gtsam.JacobianFactor(self.s_keys[k], np.hstack([J, np.zeros((len(r), 2 * n))]), -r,
                                           hard(len(r))))
        if soft:
            self.bounds.add_factors(graph, q, v, tau, self.s_keys, self.u_keys)
        return graph

    def step(self, graph: gtsam.GaussianFactorGraph, damping: float) -> np.ndarray:
        """The Gauss–Newton step of the linearized graph, with Levenberg–Marquardt damping √damping · δ = 0 on
        every variable (the hard rows stay exact)."""
        damped = gtsam.GaussianFactorGraph()
        damped.push_back(graph)
        root = np.sqrt(damping)
        for key, eye, zero, unit in self.damping_rows:
            damped.add(gtsam.JacobianFactor(key, root * eye, zero, unit))
        delta = damped.optimize(self.ordering)
        return np.concatenate([delta.at(key) for key in self.s_keys] + [delta.at(key) for key in self.u_keys])

    # -- the solve ------------------------------------------------------------------------------------------

    def solve(self, x: np.ndarray, tolerance: float, max_iterations: int) -> tuple[np.ndarray, int, float]:
        """Augmented-Lagrangian rounds, each of damped Gauss–Newton steps until the merit stops falling (a step is
        taken when it lowers the merit, after a second-order correction if the constraints' curvature needs one;
        the damping shrinks after a success and grows after a failure), the multipliers updated between rounds,
        until the hard rows hold and the limits' KKT residual is within ``tolerance`` after a tight round.
        Returns the point, the linearizations made and the largest violation (hard residual or limit) there."""
        iterations, stall = 0, ROUND_STALL
        while iterations < max_iterations:
            x, taken = self._descend(x, max_iterations - iterations, stall)
            iterations += taken
            q, v, _, tau = self.unpack(x)
            hard = float(np.max(np.abs(self.hard_residuals(x))))
            if self.bounds.kkt_residual(q, v, tau) <= tolerance and hard <= tolerance:
                if stall <= STALL:
                    break
                stall = STALL  # feasible: one more round, to the optimum
                continue
            if not self.bounds.update(q, v, tau):  # the multipliers and weights cannot grow further
                break
            stall = min(ROUND_STALL, max(STALL, STALL_PER_VIOLATION * self.bounds.last_violation))
        q, v, _, tau = self.unpack(x)
        return x, iterations, max(float(np.max(np.abs(self.hard_residuals(x)))), self.bounds.violation(q, v, tau))

    def _trial(self, x: np.ndarray, delta: np.ndarray, merit: float,
               backtrack: bool = False) -> tuple[np.ndarray, float] | None:
        """A point along ``delta`` that lowers the merit, and its merit, or None: the full step, then the full step
        with a second-order correction (the constraints' curvature, the Maratos effect), then (``backtrack``)
        shorter steps."""
        def points():
            trial = x + delta
            yield trial
            yield trial + self.step(self.linearized(trial, soft=False), CORRECTION_DAMPING)
            for halvings in range(1, BACKTRACKING + 1 if backtrack else 1):
                yield x + 0.5 ** halvings * delta

        for point in points():  # made one at a time: each costs a solve
            value = self.merit(point)
            if value < merit:
                return point, value
        return None

    def _descend(self, x: np.ndarray, budget: int, stall: float) -> tuple[np.ndarray, int]:
        """Damped Gauss–Newton steps on the current merit until it stops falling (relative change below
        ``stall``) or the damping runs out; returns the point and the linearizations made."""
        self.raise_merit_penalty(x)
        damping, merit = DAMPING_START, self.merit(x)
        for taken in range(1, budget + 1):
            graph = self.linearized(x)
            while damping <= DAMPING_MAX:
                found = self._trial(x, self.step(graph, damping), merit)
                if found is not None:
                    break
                damping *= 10
            if damping > DAMPING_MAX:  # damping shortens only the soft part of a step: shorten it all
                damping = DAMPING_START
                found = self._trial(x, self.step(graph, damping), merit, backtrack=True)
                if found is None:
                    return x, taken
            (x, new_merit), damping = found, max(damping / 10, DAMPING_MIN)
            stalled = merit - new_merit <= stall * (1.0 + abs(merit))
            merit = new_merit
            if stalled:
                return x, taken
        return x, budget
