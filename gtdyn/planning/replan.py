"""Receding-horizon planning (paper 001's proposal, after GPMP2 and STEAP): after each executed step the same
horizon is planned again from the measured state, starting from the previous plan moved one knot on — a warm
start, which needs a few iterations where a cold start needs many."""

from __future__ import annotations

import dataclasses

import numpy as np

from gtdyn.arguments import joint_vector
from gtdyn.planning.optimize import PlannedTrajectory, optimize_trajectory

KNOT_ARRAYS = ("q", "v", "qdd", "tau", "base_pose", "base_twist", "base_accel")


def _moved(x: np.ndarray) -> np.ndarray:
    """Knots moved one on, the last held."""
    return np.concatenate([x[1:], x[-1:]])


def shifted(plan: PlannedTrajectory) -> PlannedTrajectory:
    """``plan`` moved one knot on (every per-knot array, the contact forces and the multipliers), the last knot
    held: a warm start for the horizon that begins one step later."""
    moved = {name: _moved(getattr(plan, name)) for name in KNOT_ARRAYS if getattr(plan, name) is not None}
    if plan.collocation == "trapezoidal":  # the held knot's velocity is the last one's only if their mean
        for name in ("qdd", "base_accel"):  # acceleration is zero: its own is the last's, negated
            if name in moved:
                moved[name][-1] *= -1.0
    return dataclasses.replace(
        plan, **moved, iterations=0, seconds=0.0,
        multipliers={name: _moved(m) for name, m in plan.multipliers.items()} if plan.multipliers else None,
        contact_forces={name: _moved(f) for name, f in plan.contact_forces.items()} if plan.contact_forces else
        plan.contact_forces)


class Replanner:
    """Plans ``steps`` knots of ``dt`` ahead to ``goal_q`` (None: free; at rest unless ``goal_v``), with
    ``optimize_trajectory``'s ``options`` (for a floating robot its goal base pose, contacts — the same runs of
    knots in every horizon — and so on). ``plan(q, v)`` plans from scratch; ``replan(q, v)`` plans again from
    the state reached after the first step of the last plan, warm-started from it (``shifted``: by one knot, the
    last knot held). A floating robot's measured base state goes with them: ``base_pose`` (4×4) and ``base_twist``.
    ``last`` is the latest plan."""

    def __init__(self, robot, *, goal_q=None, goal_v=None, steps: int, dt: float, **options):
        self.robot, self.goal_q, self.steps, self.dt, self.options = robot, goal_q, steps, dt, options
        self.goal_v = np.zeros(robot.num_dofs) if goal_v is None else goal_v
        self.last: PlannedTrajectory | None = None

    def plan(self, q, v=None, *, base_pose=None, base_twist=None) -> PlannedTrajectory:
        """A cold plan from (q, v) (and a floating robot's base pose and twist)."""
        self.last = self._optimize(q, v, None, base_pose, base_twist)
        return self.last

    def replan(self, q, v=None, *, base_pose=None, base_twist=None) -> PlannedTrajectory:
        """The horizon planned again from (q, v) (and a floating robot's base pose and twist), starting from the
        last plan moved one knot on."""
        if self.last is None:
            return self.plan(q, v, base_pose=base_pose, base_twist=base_twist)
        self.last = self._optimize(q, v, shifted(self.last), base_pose, base_twist)
        return self.last

    def _optimize(self, q, v, initial, base_pose, base_twist) -> PlannedTrajectory:
        q = joint_vector(self.robot, "q", q)
        v = np.zeros(self.robot.num_dofs) if v is None else joint_vector(self.robot, "v", v)
        base = {name: x for name, x in (("base_pose", base_pose), ("base_twist", base_twist)) if x is not None}
        return optimize_trajectory(self.robot, q0=q, v0=v, goal_q=self.goal_q, goal_v=self.goal_v, steps=self.steps,
                                   dt=self.dt, initial=initial, **base, **self.options)
