"""Receding-horizon planning (paper 001's proposal, after GPMP2 and STEAP): after each executed step the same
horizon is planned again from the measured state, starting from the previous plan moved one knot on — a warm
start, which needs a few iterations where a cold start needs many."""

from __future__ import annotations

import numpy as np

from gtdyn.arguments import joint_vector
from gtdyn.planning.optimize import PlannedTrajectory, optimize_trajectory


class Replanner:
    """Plans ``steps`` knots of ``dt`` ahead to ``goal_q`` (at rest unless ``goal_v``), with ``optimize_trajectory``'s
    ``options``. ``plan(q, v)`` plans from scratch; ``replan(q, v)`` plans again from the state reached after the
    first step of the last plan, warm-started from it (shifted by one knot, the last knot held). ``last`` is the
    latest plan."""

    def __init__(self, robot, *, goal_q, goal_v=None, steps: int, dt: float, **options):
        self.robot, self.goal_q, self.steps, self.dt, self.options = robot, goal_q, steps, dt, options
        self.goal_v = np.zeros(robot.num_dofs) if goal_v is None else goal_v
        self.last: PlannedTrajectory | None = None

    def plan(self, q, v=None) -> PlannedTrajectory:
        """A cold plan from (q, v)."""
        self.last = self._optimize(q, v, None)
        return self.last

    def replan(self, q, v=None) -> PlannedTrajectory:
        """The horizon planned again from (q, v), starting from the last plan moved one knot on."""
        if self.last is None:
            return self.plan(q, v)
        last = self.last
        moved = {name: np.vstack([m[1:], m[-1:]]) for name, m in (last.multipliers or {}).items()} or None
        shifted = PlannedTrajectory(last.robot, last.collocation, last.t,
                                    *(np.vstack([x[1:], x[-1:]]) for x in (last.q, last.v, last.qdd, last.tau)),
                                    last.cost, last.violation, last.converged, 0, 0.0, moved, last.weight)
        self.last = self._optimize(q, v, shifted)
        return self.last

    def _optimize(self, q, v, initial) -> PlannedTrajectory:
        q = joint_vector(self.robot, "q", q)
        v = np.zeros(self.robot.num_dofs) if v is None else joint_vector(self.robot, "v", v)
        return optimize_trajectory(self.robot, q0=q, v0=v, goal_q=self.goal_q, goal_v=self.goal_v, steps=self.steps,
                                   dt=self.dt, initial=initial, **self.options)
