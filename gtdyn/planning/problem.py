"""The solve behind ``optimize_trajectory``: a sequence of linear factor graphs, one per Gauss–Newton step.

A problem (``gtdyn.planning.optimize``: a fixed base; ``gtdyn.planning.floating``: a floating base with contact
phases) says what its variables are (one flat vector x, a block per key), its hard residuals, its soft ones, its
inequalities and its factors linearized at x; this class takes the steps. Hard rows are GTSAM constrained rows,
so each step meets the linearized constraints exactly (a Gauss–Newton SQP step); Levenberg–Marquardt damping on a
merit (cost plus the inequalities' augmented-Lagrangian terms plus a penalty on the hard residuals) keeps it
descending; the inequalities' multipliers are updated between rounds of steps.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import gtsam
import numpy as np

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
# A round also ends when CREEP_STEPS steps in a row each lowered the merit by less than CREEP, relatively: damped
# steps creeping toward an optimum the Gauss–Newton model misjudges (it leaves out the constraints' curvature),
# where a multiplier update does more than more steps. (The quadruped's jump crept 350 steps at ~3e-10 a step.)
CREEP, CREEP_STEPS = 1e-8, 5
BACKTRACKING = 10  # halvings of a step tried before the damping grows


class TrajectoryProblem(ABC):
    """What every problem shares: its keys (``keys``: per knot, in elimination order, with their dimensions),
    the damping rows, the merit and the solve. A subclass gives ``hard_residuals``, ``soft_residuals``,
    ``linearized``, ``inequalities`` (pairs of an augmented-Lagrangian set — ``gtdyn.planning.limits`` — and the
    arguments it reads from x), ``add_inequality_factors`` and ``multiplier_estimates``."""

    def __init__(self, keys: list[tuple[int, int]]):
        self.keys = keys
        self.merit_penalty = MERIT_PENALTY_MIN
        # eliminated in time, as listed (each knot's torques before its state): the band stays a band (COLAMD
        # finds the same kind of order, but at every step, for a tenth of the step's time)
        self.ordering = gtsam.Ordering([key for key, _ in keys])
        self.damping_rows = [(key, np.eye(dim), np.zeros(dim), gtsam.noiseModel.Unit.Create(dim))
                             for key, dim in keys]
        self.offsets = dict(zip([key for key, _ in keys], np.cumsum([0] + [dim for _, dim in keys])[:-1]))

    # -- what a problem gives -----------------------------------------------------------------------------------

    @abstractmethod
    def hard_residuals(self, x: np.ndarray) -> np.ndarray:
        """Every hard constraint's residual at x."""

    @abstractmethod
    def soft_residuals(self, x: np.ndarray) -> np.ndarray:
        """The weighted soft residuals: ½‖r‖² is the cost."""

    @abstractmethod
    def linearized(self, x: np.ndarray, soft: bool = True) -> gtsam.GaussianFactorGraph:
        """Every factor linearized at x (the hard ones alone if not ``soft``), keys as ``keys``."""

    @abstractmethod
    def inequalities(self, x: np.ndarray) -> list[tuple[object, tuple]]:
        """(augmented-Lagrangian set, the arguments it reads from x) pairs."""

    @abstractmethod
    def multiplier_estimates(self, x: np.ndarray) -> np.ndarray:
        """Estimates of the hard rows' multipliers, for the merit's penalty."""

    def rebase(self, x: np.ndarray) -> np.ndarray:
        """x with the same meaning, its manifold coordinates moved into their anchors (nothing on a fixed base)."""
        return x

    # -- merit ----------------------------------------------------------------------------------------------

    def cost(self, x: np.ndarray) -> float:
        return 0.5 * float(np.sum(self.soft_residuals(x) ** 2))

    def merit(self, x: np.ndarray) -> float:
        return self.cost(x) + sum(terms.penalty(*args) for terms, args in self.inequalities(x)) + \
            self.merit_penalty * float(np.sum(np.abs(self.hard_residuals(x))))

    def raise_merit_penalty(self, x: np.ndarray) -> None:
        """ν ≥ ``MERIT_MARGIN`` · max|λ| over the dynamics rows' multiplier estimates."""
        self.merit_penalty = max(self.merit_penalty,
                                 MERIT_MARGIN * float(np.max(np.abs(self.multiplier_estimates(x)), initial=0.0)))

    def violation(self, x: np.ndarray, hard: float | None = None) -> float:
        """The largest hard residual (``hard``, if the caller has it) or inequality violation."""
        hard = float(np.max(np.abs(self.hard_residuals(x)))) if hard is None else hard
        return max([hard] + [terms.violation(*args) for terms, args in self.inequalities(x)])

    # -- steps ----------------------------------------------------------------------------------------------

    def step(self, graph: gtsam.GaussianFactorGraph, damping: float) -> np.ndarray:
        """The Gauss–Newton step of the linearized graph, with Levenberg–Marquardt damping √damping · δ = 0 on
        every variable (the hard rows stay exact)."""
        damped = gtsam.GaussianFactorGraph()
        damped.push_back(graph)
        self.add_damping(damped, damping)
        delta = damped.optimize(self.ordering)
        return np.concatenate([delta.at(key) for key, _ in self.keys])

    def add_damping(self, graph: gtsam.GaussianFactorGraph, damping: float) -> None:
        """The Levenberg–Marquardt rows √damping · δ = 0 on every variable, added to ``graph``."""
        root = np.sqrt(damping)
        for key, eye, zero, unit in self.damping_rows:
            graph.add(gtsam.JacobianFactor(key, root * eye, zero, unit))

    def solve(self, x: np.ndarray, tolerance: float, max_iterations: int) -> tuple[np.ndarray, int, float]:
        """Augmented-Lagrangian rounds, each of damped Gauss–Newton steps until the merit stops falling (a step is
        taken when it lowers the merit, after a second-order correction if the constraints' curvature needs one;
        the damping shrinks after a success and grows after a failure), the multipliers updated between rounds,
        until the hard rows hold and the inequalities' KKT residual is within ``tolerance`` after a tight round.
        Returns the point, the linearizations made and the largest violation (hard residual or limit) there."""
        iterations, stall = 0, ROUND_STALL
        while iterations < max_iterations:
            before = self.rebase(x)
            x, taken = self._descend(before, max_iterations - iterations, stall)
            iterations += taken
            hard = float(np.max(np.abs(self.hard_residuals(x))))
            if hard > tolerance and x is before:  # no step lowered the merit: with ν below some multiplier, a
                self.merit_penalty *= 10.0        # step toward the constraints can look worse than none
            sets = self.inequalities(x)
            if max([0.0] + [terms.kkt_residual(*args) for terms, args in sets]) <= tolerance and hard <= tolerance:
                if stall <= STALL:
                    break
                stall = STALL  # feasible: one more round, to the optimum
                continue
            if not all([terms.update(*args) for terms, args in sets]):  # at their cap, and no better
                break
            last = max([0.0] + [terms.last_violation for terms, _ in sets])
            stall = min(ROUND_STALL, max(STALL, STALL_PER_VIOLATION * last))
        return x, iterations, self.violation(x)

    def real_time(self, x: np.ndarray, tolerance: float, steps: int) -> tuple[np.ndarray, int, float]:
        """A real-time iteration (Diehl's, for model-predictive control from a warm start near the optimum): at most
        ``steps`` damped Gauss–Newton steps, the inequalities' multipliers updated after each (their weight kept),
        stopping at the first point that meets every constraint to ``tolerance`` — its cost not polished further.
        Returns what ``solve`` returns."""
        taken, violation = 0, np.inf
        while taken < steps:
            x, made = self._descend(self.rebase(x), 1, 0.0)
            taken += made
            met, violation = self.settled(x, tolerance)
            if met:
                break
        return x, taken, violation

    def settled(self, x: np.ndarray, tolerance: float) -> tuple[bool, float]:
        """Whether every constraint holds at x to ``tolerance`` (the hard rows, and the inequalities' KKT residual),
        and the largest violation there (``violation``); if not met, the inequalities' multipliers take their
        first-order update, λ ← max(0, λ + μ c), for the next step."""
        hard, sets = float(np.max(np.abs(self.hard_residuals(x)))), self.inequalities(x)
        violation = self.violation(x, hard)
        if hard <= tolerance and max([0.0] + [terms.kkt_residual(*args) for terms, args in sets]) <= tolerance:
            return True, violation
        for terms, args in sets:
            terms.update_multipliers(*args)
        return False, violation

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
        creeping = 0
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
            drop = (merit - new_merit) / (1.0 + abs(merit))
            creeping = creeping + 1 if drop < CREEP else 0
            merit = new_merit
            if drop <= stall or creeping >= CREEP_STEPS:
                return x, taken
        return x, budget
