"""The factors of a trajectory on a fixed base, knot by knot (``optimize_trajectory``'s graph).

Per knot k a state s_k = [q; q̇; q̈] and generalized forces u_k = τ (every joint's: a passive joint's held at zero
by a hard row). The variables are one vector x in elimination order, per knot u_k then s_k (a subclass may put
more keys between them: ``gtdyn.planning.floating``'s contact forces).
"""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.errors import ArgumentError
from gtdyn.planning.goals import FrameGoals
from gtdyn.planning.limits import MU_START, MU_WARM, Limits
from gtdyn.planning.problem import TrajectoryProblem

HARD = gtsam.noiseModel.Constrained.All
UNIT = gtsam.noiseModel.Unit.Create


def factor(terms: list[tuple[int, np.ndarray]], b: np.ndarray, model) -> gtsam.JacobianFactor:
    """A JacobianFactor Σ A_i δ_i = b on one to three keys ((key, A) pairs; the constructors Python has)."""
    return gtsam.JacobianFactor(*(item for term in terms for item in term), b, model)


class KnotProblem(TrajectoryProblem):
    """Dynamics, collocation, start and goal (hard), effort and smoothness (soft), the model's limits (an
    augmented Lagrangian) over ``steps + 1`` knots of m generalized coordinates each (the joints here)."""

    def __init__(self, robot, solver, steps, dt, collocation, q0, v0, goal_q, goal_v, weights, bounds: Limits,
                 goals: FrameGoals | None, passive: np.ndarray, extra_keys: dict | None = None, *,
                 start_accel: np.ndarray | None = None):
        self.robot, self.solver, self.N, self.h, self.rule = robot, solver, steps, dt, collocation
        self.q0, self.v0, self.goal_q, self.goal_v = q0, v0, goal_q, goal_v
        # the first knot's q̈ where given (m numbers, NaN where free): a replan holding the acceleration under way
        self.start_accel = start_accel
        self.effort, self.smoothness = weights
        self.bounds, self.goals = bounds, goals
        self.passive = passive
        m = self.m = len(passive)
        self.s_keys = [gtsam.symbol("s", k) for k in range(steps + 1)]
        self.u_keys = [gtsam.symbol("u", k) for k in range(steps + 1)]
        extra_keys = extra_keys or {}
        super().__init__([pair for k in range(steps + 1) for pair in
                          [(self.u_keys[k], m), *extra_keys.get(k, []), (self.s_keys[k], 3 * m)]])
        self.s_index = np.array([self.offsets[key] + np.arange(3 * m) for key in self.s_keys])
        self.u_index = np.array([self.offsets[key] + np.arange(m) for key in self.u_keys])
        eye, zero = np.eye(m), np.zeros((m, m))
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
        """x → q, v, a, τ (rows in time, m columns)."""
        s = x[self.s_index].reshape(self.N + 1, 3, self.m)
        return s[:, 0], s[:, 1], s[:, 2], x[self.u_index]

    def pack(self, q, v, a, tau, x: np.ndarray | None = None) -> np.ndarray:
        x = np.zeros(sum(dim for _, dim in self.keys)) if x is None else x
        x[self.s_index] = np.stack([q, v, a], axis=1).reshape(self.N + 1, -1)
        x[self.u_index] = tau
        return x

    def joint_parts(self, x: np.ndarray):
        """(q, q̇, τ) of the joints, as the limits read them."""
        q, v, _, tau = self.unpack(x)
        return q, v, tau

    def warm_start(self, initial, planned_type) -> np.ndarray:
        """A given trajectory's knots as the starting point (its start moved to this problem's q0, v0)."""
        q, v = self.joints_from(initial, planned_type, floating=False)
        return self.pack(q, v, initial.qdd, initial.tau)

    def joints_from(self, initial, planned_type, floating: bool) -> tuple[np.ndarray, np.ndarray]:
        """A warm start's checks and its joints' q, q̇ with the start moved to q0, v0; the limits' multipliers
        taken over."""
        n, knots = self.robot.num_dofs, self.N + 1
        if not isinstance(initial, planned_type) or initial.q.shape != (knots, n) or \
                (initial.base_pose is None) == floating:
            raise ArgumentError(f"initial: expected a PlannedTrajectory of {knots} knots of '{self.robot.name}' on "
                                f"a {'floating' if floating else 'fixed'} base")
        q, v = initial.q.copy(), initial.v.copy()
        q[0], v[0] = self.q0, self.v0
        for name, m in (initial.multipliers or {}).items():  # the limits' multipliers too: they took rounds to find
            if name in self.bounds.multipliers and m.shape == (knots, n):
                self.bounds.multipliers[name] = m.copy()
        # and their weight up to MU_WARM: the μ a solve ends with (up to 1e9 and more) makes the next one's steps so
        # stiff that they stall off the constraints, while restarting at MU_START takes rounds to get back (a plan
        # whose optimum is not near, as a receding horizon's moved-on plan, comes with weight 0: it restarts)
        self.bounds.mu = min(max(initial.weight, MU_START), MU_WARM)
        return q, v

    def initial_guess(self) -> np.ndarray:
        """q through its waypoints — q0, a configuration meeting each knot's frame goals (inverse kinematics),
        ``goal_q`` — along smooth (cubic) rest-to-rest segments, q̇ and q̈ their derivatives, τ their inverse
        dynamics: consistent with the dynamics, nearly so with the collocation."""
        q, v, a = self.smooth_path()
        tau = self.solver.batch_derivatives(q, v, a).value
        tau[:, self.passive] = 0.0
        return self.pack(q, v, a, tau)

    def smooth_path(self):
        """The joints' starting guess: q, q̇, q̈ along cubic rest-to-rest segments through the waypoints."""
        waypoints = {0: self.q0}
        lower, upper = self.bounds.bound["q lower"], self.bounds.bound["q upper"]
        for knot in self.goals.knots() if self.goals else ():
            waypoints[knot] = self.goals.inverse_kinematics(knot, waypoints[max(waypoints)], lower, upper)
        if self.goal_q is not None:
            waypoints[self.N] = self.goal_q
        q = np.empty((self.N + 1, len(self.q0)))
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
        return q, v, a

    # -- the factors: each part as (residual rows, their Jacobian blocks) -------------------------------------

    def dynamics(self, x: np.ndarray, jacobians: bool):
        """ID(q, q̇, q̈) at every knot (K, m), and with ``jacobians`` per knot the blocks of the rows τ − ID = 0
        other than u's identity: [(key, J)]."""
        q, v, a, _ = self.unpack(x)
        if not jacobians:
            return self.solver.batch(q, v, a), None
        d = self.solver.batch_derivatives(q, v, a)
        return d.value, [[(self.s_keys[k], -np.hstack([d.dq[k], d.dv[k], d.dx[k]]))] for k in range(self.N + 1)]

    def collocation(self, x: np.ndarray):
        """The collocation rows between knots k and k + 1: residuals (N, 2m) and their blocks on s_k, s_{k+1}."""
        s = x[self.s_index]
        return s[:-1] @ self.C_now.T + s[1:] @ self.C_next.T, [(self.C_now, self.C_next)] * self.N

    def boundary(self, x: np.ndarray, start: bool = True) -> list[tuple[list, np.ndarray]]:
        """Start (unless not ``start``: ``gtdyn.planning.prepared`` adds it later), goal and frame-goal rows:
        [([(key, J)], residual)]."""
        q, v, _, _ = self.unpack(x)
        P, m, N = self.position_velocity, self.m, self.N
        rows = [([(self.s_keys[0], P)], np.concatenate([q[0] - self.q0, v[0] - self.v0]))] if start else []
        rows += self.start_acceleration_rows(x)
        if self.goal_q is not None:
            rows.append(([(self.s_keys[N], P[:m])], q[N] - self.goal_q))
        if self.goal_v is not None:
            rows.append(([(self.s_keys[N], P[m:])], v[N] - self.goal_v))
        for k, r, J in self.goals.residuals(q) if self.goals else ():
            rows.append(([(self.s_keys[k], np.hstack([J, np.zeros((len(r), 2 * m))]))], r))
        return rows

    def start_acceleration_rows(self, x: np.ndarray) -> list[tuple[list, np.ndarray]]:
        """q̈_0 = the held acceleration, where one is given."""
        if self.start_accel is None:
            return []
        held = np.isfinite(self.start_accel)
        m = self.m
        J = np.hstack([np.zeros((m, 2 * m)), np.eye(m)])[held]
        return [([(self.s_keys[0], J)], self.unpack(x)[2][0, held] - self.start_accel[held])]

    def hard_residuals(self, x: np.ndarray) -> np.ndarray:
        """Every hard constraint's residual at x (the dynamics by the solver's values alone, no Jacobians)."""
        tau = x[self.u_index]
        inverse, _ = self.dynamics(x, False)
        return np.concatenate([(tau - inverse).ravel(), tau[:, self.passive].ravel(), self.collocation(x)[0].ravel(),
                               *(r for _, r in self.boundary(x))])

    def soft_residuals(self, x: np.ndarray) -> np.ndarray:
        """Effort and smoothness, weighted so that ½‖r‖² is the cost."""
        _, _, a, tau = self.unpack(x)
        effort = np.sqrt(self.effort * self.h) * tau[:, ~self.passive]
        jerk = np.sqrt(self.smoothness * self.h) * np.diff(a, axis=0) / self.h
        return np.concatenate([effort.ravel(), jerk.ravel()])

    def linearized(self, x: np.ndarray, soft: bool = True, start: bool = True) -> gtsam.GaussianFactorGraph:
        """Every factor linearized at x (J δ = −r per factor; the hard ones alone if not ``soft``; without the
        start's rows if not ``start``)."""
        m, N, h = self.m, self.N, self.h
        _, _, a, tau = self.unpack(x)
        value, blocks = self.dynamics(x, True)
        collocation, collocation_blocks = self.collocation(x)
        graph = gtsam.GaussianFactorGraph()
        eye = np.eye(m)
        w_effort, w_jerk = np.sqrt(self.effort * h), np.sqrt(self.smoothness * h) / h
        selector = eye[~self.passive]
        jerk = np.hstack([np.zeros((m, 2 * m)), eye])
        for k in range(N + 1):
            s_k, u_k = self.s_keys[k], self.u_keys[k]
            terms = [(u_k, eye), *blocks[k]]
            graph.add(factor(terms, -(tau[k] - value[k]), HARD(m)))
            if self.passive.any():
                graph.add(gtsam.JacobianFactor(u_k, eye[self.passive], -tau[k, self.passive],
                                               HARD(int(self.passive.sum()))))
            if selector.size and soft:
                graph.add(gtsam.JacobianFactor(u_k, w_effort * selector, -w_effort * tau[k, ~self.passive],
                                               UNIT(selector.shape[0])))
            if k < N:
                now, after = collocation_blocks[k]
                graph.add(gtsam.JacobianFactor(s_k, now, self.s_keys[k + 1], after, -collocation[k], HARD(2 * m)))
                if soft:
                    graph.add(gtsam.JacobianFactor(s_k, -w_jerk * jerk, self.s_keys[k + 1], w_jerk * jerk,
                                                   -w_jerk * (a[k + 1] - a[k]), UNIT(m)))
        for terms, r in self.boundary(x, start):
            graph.add(factor(terms, -r, HARD(len(r))))
        if soft:
            self.add_soft_factors(graph, x)
            self.add_inequality_factors(graph, x)
        return graph

    def add_soft_factors(self, graph: gtsam.GaussianFactorGraph, x: np.ndarray) -> None:
        """Soft rows beyond effort and smoothness (a subclass's; ``soft_residuals`` must list their residuals)."""

    # -- inequalities ---------------------------------------------------------------------------------------

    def inequalities(self, x: np.ndarray) -> list[tuple[object, tuple]]:
        return [(self.bounds, self.joint_parts(x))]

    def add_inequality_factors(self, graph: gtsam.GaussianFactorGraph, x: np.ndarray) -> None:
        self.bounds.add_factors(graph, *self.joint_parts(x), self.s_keys, self.u_keys, self.m - self.robot.num_dofs)

    def multiplier_estimates(self, x: np.ndarray) -> np.ndarray:
        """The dynamics rows' multipliers by stationarity in τ: −(w² τ + ∂P/∂τ), actuated joints."""
        q, v, tau = self.joint_parts(x)
        actuated = ~self.passive[self.m - self.robot.num_dofs:]
        return (self.effort * self.h * tau + self.bounds.tau_gradient(q, v, tau))[:, actuated]
