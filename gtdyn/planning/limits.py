"""The model's limits on q, q̇ and τ over a trajectory's knots, as inequalities c(x) ≤ 0 kept by an augmented
Lagrangian: the soft terms μ/2 · max(0, c + λ/μ)² (λ ≥ 0 one multiplier per inequality, μ a weight) are part of
each Gauss–Newton step; between solves λ ← max(0, λ + μ c), and μ grows while the violation does not shrink.
At convergence the active limits hold to the tolerance (the multipliers carry the force that holds them), not
approximately as a fixed penalty would leave them."""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.model.robot import Robot

MU_START, MU_GROWTH, MU_MAX = 1e3, 10.0, 1e12
MU_WARM = 1e6  # a warm start's μ at most (``KnotProblem.joints_from``)
# (name, variable, sign): c = sign · (value − bound), for q (column j of a state), q̇ (column n + j) and τ
KINDS = (("q upper", "q", 1.0), ("q lower", "q", -1.0), ("v upper", "v", 1.0), ("v lower", "v", -1.0),
         ("tau upper", "tau", 1.0), ("tau lower", "tau", -1.0))


class AugmentedLagrangian:
    """What every set of inequalities c ≤ 0 shares: the weight μ, the terms' formulas on arrays of c and λ, and
    the rounds' rule for μ (``grow``)."""

    def __init__(self):
        self.mu = MU_START
        self.last_violation = np.inf

    def shifted(self, c: np.ndarray, lam: np.ndarray) -> np.ndarray:
        """max(0, c + λ/μ): where a term is active, and by how much (c is −∞ where there is no bound)."""
        return np.maximum(0.0, c + lam / self.mu)

    def value(self, c: np.ndarray, lam: np.ndarray) -> float:
        """Σ μ/2 · max(0, c + λ/μ)² − λ²/(2μ)."""
        shifted = self.shifted(c, lam)
        return float(np.sum(0.5 * self.mu * shifted ** 2 - lam ** 2 / (2 * self.mu)))

    def kkt(self, c: np.ndarray, lam: np.ndarray) -> float:
        """max |max(c, −λ/μ)|: zero exactly when every inequality holds (c ≤ 0) and only the active ones carry a
        multiplier (λ c = 0). Feasible with a stale λ > 0 on an inequality left behind is not done: the
        multiplier still pushes the trajectory off the bound, at a cost."""
        return float(np.max(np.abs(np.maximum(c, -lam / self.mu)), initial=0.0))

    def updated(self, c: np.ndarray, lam: np.ndarray) -> np.ndarray:
        """λ ← max(0, λ + μ c)."""
        return np.maximum(0.0, lam + self.mu * c)

    def grow(self, violation: float) -> bool:
        """After a round: μ grows while the violation does not shrink by four. False when μ is at its cap and
        the violation did not shrink: nothing more to try."""
        if violation > 0.25 * self.last_violation:
            if self.mu >= MU_MAX:
                return False
            self.mu = min(self.mu * MU_GROWTH, MU_MAX)
        self.last_violation = violation
        return True


class Limits(AugmentedLagrangian):
    """The model's limits on q, q̇ and τ at every knot."""

    def __init__(self, robot: Robot, knots: int, lower, upper, velocity, effort):
        self.robot, self.n = robot, robot.num_dofs
        self.bound = {"q upper": upper, "q lower": lower, "v upper": velocity, "v lower": -velocity,
                      "tau upper": effort, "tau lower": -effort}
        self.multipliers = {name: np.zeros((knots, self.n)) for name, _, _ in KINDS}
        super().__init__()

    @classmethod
    def of(cls, robot: Robot, knots: int) -> Limits:
        """The model's limits (infinite where it has none; passive joints' τ are zero anyway)."""
        return cls(robot, knots, robot.lower_limits, robot.upper_limits, robot.velocity_limits, robot.effort_limits)

    @classmethod
    def none(cls, robot: Robot, knots: int) -> Limits:
        inf = np.full(robot.num_dofs, np.inf)
        return cls(robot, knots, -inf, inf, inf, inf)

    def _constraints(self, q, v, tau):
        values = {"q": q, "v": v, "tau": tau}
        for name, variable, sign in KINDS:
            bound = self.bound[name]
            finite = np.isfinite(bound)
            if finite.any():
                c = np.where(finite, sign * (values[variable] - np.where(finite, bound, 0.0)), -np.inf)
                yield name, variable, sign, c

    def violation(self, q, v, tau) -> float:
        """The largest amount by which a limit is exceeded (0 when all hold)."""
        return max([0.0] + [float(np.max(c)) for _, _, _, c in self._constraints(q, v, tau)])

    def kkt_residual(self, q, v, tau) -> float:
        """``kkt`` over every limit."""
        return max([0.0] + [self.kkt(c, self.multipliers[name]) for name, _, _, c in self._constraints(q, v, tau)])

    def tau_gradient(self, q, v, tau) -> np.ndarray:
        """∂/∂τ of the terms' value (``penalty``): μ · max(0, c + λ/μ) · sign on the τ limits."""
        gradient = np.zeros_like(tau)
        for name, variable, sign, c in self._constraints(q, v, tau):
            if variable == "tau":
                gradient += sign * self.mu * self.shifted(c, self.multipliers[name])
        return gradient

    def penalty(self, q, v, tau) -> float:
        """The augmented-Lagrangian terms' value (``value``) over every limit."""
        return sum(self.value(c, self.multipliers[name]) for name, _, _, c in self._constraints(q, v, tau))

    def add_factors(self, graph: gtsam.GaussianFactorGraph, q, v, tau, s_keys, u_keys, base: int = 0) -> None:
        """The active terms, linearized: rows √μ ∂c/∂x δ = −√μ (c + λ/μ), per knot and variable. A state
        s_k = [q; q̇; q̈] and u_k = τ over m = ``base`` + n coordinates, the joints' after ``base`` others."""
        n, root = self.n, np.sqrt(self.mu)
        m = base + n
        rows = {}
        for name, variable, sign, c in self._constraints(q, v, tau):
            shifted = c + self.multipliers[name] / self.mu
            for k, j in zip(*np.nonzero(shifted > 0.0), strict=True):
                key, dim, column = (u_keys[k], m, base + j) if variable == "tau" else \
                    (s_keys[k], 3 * m, base + j if variable == "q" else m + base + j)
                rows.setdefault((key, dim), []).append((column, root * sign, -root * shifted[k, j]))
        for (key, dim), entries in rows.items():
            A = np.zeros((len(entries), dim))
            for r, (column, value, _) in enumerate(entries):
                A[r, column] = value
            graph.add(gtsam.JacobianFactor(key, A, np.array([b for _, _, b in entries]),
                                           gtsam.noiseModel.Unit.Create(len(entries))))

    def update_multipliers(self, q, v, tau) -> None:
        for name, _, _, c in self._constraints(q, v, tau):
            self.multipliers[name] = self.updated(c, self.multipliers[name])

    def update(self, q, v, tau) -> bool:
        """After a round: every multiplier updated, then μ (``grow``)."""
        violation = self.violation(q, v, tau)
        self.update_multipliers(q, v, tau)
        return self.grow(violation)
