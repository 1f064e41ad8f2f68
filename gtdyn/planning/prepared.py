"""A replan in two phases, as Diehl's real-time iteration splits it, for a model-predictive loop whose latency
counts. *Preparation*, before the state is measured: the next replan's problem at the state the last plan
predicts (its next knot), linearized once, and every variable but the first knot's eliminated — latest knots
first, so the band stays a band — into a Gaussian Bayes net and one small factor on the first knot. *Feedback*,
once the state is measured: the start's rows (δq₀ = q − q̂₀, δq̇₀ = q̇ − q̂̇₀) join that factor, it is solved, and
the Bayes net is back-substituted. A measurement changes the start alone, so all of the elimination but its root
is done before it arrives: iSAM2's root update, written for this one graph (``benchmarks/replanning.py`` measures
iSAM2 itself on it).

The step is one Gauss–Newton step of the problem (``TrajectoryProblem``), with the Levenberg–Marquardt damping a
solve's first step takes, taken whole — no merit line search, whose trial points would each cost an evaluation
after the measurement; Diehl's real-time iteration takes its steps so. The plan reports the violation it leaves.
Fixed-base robots (a floating base's start is a pose, whose rows would have to be linearized again at the
measured pose).
"""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.arguments import joint_positions, joint_vector
from gtdyn.arguments.series import within_limits
from gtdyn.planning.knots import HARD
from gtdyn.planning.problem import DAMPING_START


class PreparedStep:
    """The preparation of one replan (a ``gtdyn.planning.optimize.Setup`` whose start is the predicted state);
    ``feedback(q, v)`` finishes it from the measured state and returns the new point x and its violation."""

    def __init__(self, setup, limits: bool):
        self.setup, self.limits = setup, limits
        problem = setup.problem
        first = {problem.u_keys[0], problem.s_keys[0]}
        later = [key for key, _ in reversed(problem.keys) if key not in first]
        self.bayes_net, self.first_knot = step_factors(problem, setup.start).eliminatePartialSequential(
            gtsam.Ordering(later))

    def start_factor(self, q: np.ndarray, v: np.ndarray) -> gtsam.JacobianFactor:
        """The start's rows at the measured (q, v): δq₀ = q − q̂₀, δq̇₀ = q̇ − q̂̇₀ (hard), q̂ the predicted state."""
        problem = self.setup.problem
        predicted = self.setup.start[problem.s_index[0]][:2 * problem.m]
        return gtsam.JacobianFactor(problem.s_keys[0], problem.position_velocity,
                                    np.concatenate([q, v]) - predicted, HARD(2 * problem.m))

    def feedback(self, q, v) -> tuple[np.ndarray, float]:
        """The step from the measured (q, v): the start's rows added to the first knot's factor, that solved, the
        Bayes net back-substituted; the problem's start moved to (q, v). Returns the point and its violation."""
        setup = self.setup
        problem, robot = setup.problem, setup.robot
        q = joint_positions(robot, "q", q)
        v = joint_vector(robot, "v", v)
        if self.limits:
            within_limits(robot, {"q": q}, {"v": v})
        first = gtsam.GaussianFactorGraph()
        first.push_back(self.first_knot)
        first.add(self.start_factor(q, v))
        delta = self.bayes_net.optimize(first.optimize())
        x = setup.start + np.concatenate([delta.at(key) for key, _ in problem.keys])
        problem.q0, problem.v0 = q, v
        _, violation = problem.settled(x, setup.tolerance)  # where not met, the multipliers' update for the next
        return x, violation


def step_factors(problem, x: np.ndarray) -> gtsam.GaussianFactorGraph:
    """A Gauss–Newton step's factors at x but the start's rows, with the damping a solve's first step takes."""
    graph = problem.linearized(x, start=False)
    problem.add_damping(graph, DAMPING_START)
    return graph
