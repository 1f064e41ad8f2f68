"""Planning again after each executed step (paper 001's proposal, after GPMP2 and STEAP), from the measured state,
starting from the previous plan — a warm start, which needs fewer iterations than a cold one.

Two horizons. *Receding*: every plan looks the same number of knots ahead, so the goal moves one step later at
each replan (the previous plan moved one knot on, its last knot held, is the start). *Fixed*: the goal keeps the
time the first plan gave it, as in STEAP, and each replan plans the knots that are left (the previous plan's tail
is the start: by the principle of optimality it is nearly the new optimum when the robot followed the plan), with
its contact runs and frame goals moved to the new knot numbers.

A fixed-horizon replan holds the acceleration under way: the new first knot's q̈ is the last plan's at that knot,
at the actuated joints whose torque there is inside its limit (``held_acceleration``). Under trapezoidal
collocation q̈ is part of the state; a replan that freed it would plan a different problem from the last plan's
tail (one more free knot), whose optimum lies O(1) away even when the robot followed the plan exactly — and the
steps to reach it were most of a replan's time. The tail also keeps its limits' weight μ (``tail``); the moved-on
plan of a receding horizon, whose goal is a step later, does not (``shifted``): there the old optimum is not near,
and a stiff μ slows the way to the new one.

``iterations=k`` makes each replan a real-time iteration: at most k Gauss–Newton steps from the last plan, stopping
once every constraint holds to the tolerance (``optimize_trajectory``'s ``real_time_steps``)."""

from __future__ import annotations

import dataclasses
import inspect
import time

import numpy as np

from gtdyn.arguments import choice, flag, joint_vector, whole_number
from gtdyn.arguments.series import preparable
from gtdyn.errors import ArgumentError
from gtdyn.planning.limits import Limits
from gtdyn.planning.optimize import PlannedTrajectory, finish, optimize_trajectory, set_up
from gtdyn.planning.prepared import PreparedStep

KNOT_ARRAYS = ("q", "v", "qdd", "tau", "base_pose", "base_twist", "base_accel")
HORIZONS = ("receding", "fixed")


def _per_knot(plan: PlannedTrajectory, move, **changes) -> PlannedTrajectory:
    """``plan`` with ``move`` applied to every per-knot array (states, torques, base, contact forces, the
    multipliers of its limits and contacts)."""
    moved = {name: move(getattr(plan, name)) for name in KNOT_ARRAYS if getattr(plan, name) is not None}
    return dataclasses.replace(
        plan, **moved, iterations=0, seconds=0.0, **changes,
        multipliers={name: move(m) for name, m in plan.multipliers.items()} if plan.multipliers else None,
        contact_forces={name: move(f) for name, f in plan.contact_forces.items()} if plan.contact_forces else
        plan.contact_forces)


def _moved(x: np.ndarray) -> np.ndarray:
    """Knots moved one on, the last held."""
    return np.concatenate([x[1:], x[-1:]])


def shifted(plan: PlannedTrajectory) -> PlannedTrajectory:
    """``plan`` moved one knot on, the last knot held: a warm start for the horizon that begins one step later
    and ends one step later."""
    out = _per_knot(plan, _moved, weight=0.0)  # μ starts afresh (see the module's note)
    if plan.collocation == "trapezoidal":  # the held knot's velocity is the last one's only if their mean
        for name in ("qdd", "base_accel"):  # acceleration is zero: its own is the last's, negated
            if getattr(out, name) is not None:
                getattr(out, name)[-1] *= -1.0
    return out


def tail(plan: PlannedTrajectory) -> PlannedTrajectory:
    """``plan`` from its second knot on (one knot fewer, times from zero): a warm start for the horizon that begins
    one step later and ends where ``plan`` ends."""
    return _per_knot(plan, lambda x: x[1:], t=plan.t[1:] - plan.t[1])


def options_after(options: dict, done: int, knots: int) -> dict:
    """``optimize_trajectory``'s ``options`` for the knots left after ``done`` executed steps of a plan of ``knots``
    knots: each contact run [a, b) becomes [a − done, b − done), clipped at the new first knot (a foot that landed
    stands from the start) and dropped once over; each frame goal's knot moves as much, and a goal at or before
    the new first knot (reached, or fixed by the measured state) is dropped. Goals counted from the end keep their
    knot."""
    out = dict(options)
    if options.get("contacts") is not None:
        out["contacts"] = {frame: [(max(a - done, 0), b - done) for a, b in runs if b - done > 0]
                           for frame, runs in options["contacts"].items()}
    if options.get("frame_goals"):
        goals = []
        for goal in options["frame_goals"]:
            knot = goal.knot if goal.knot >= 0 else knots + goal.knot  # absolute, in the first plan's knots
            if knot - done > 0:
                goals.append(goal if goal.knot < 0 else dataclasses.replace(goal, knot=knot - done))
        out["frame_goals"] = goals
    return out


# a joint whose torque is this close to its limit at the knot reached is left free: held, a state a little off the
# plan could ask it for more than the limit
RIDING_LIMIT = 0.99


def held_acceleration(plan: PlannedTrajectory) -> np.ndarray:
    """The acceleration under way (``plan``'s at its second knot) at the joints a replan holds — the actuated ones
    whose torque there is inside their limit — NaN at the others: a passive joint's acceleration, and a floating
    base's, follow from the state and the torques (held, a state off the plan would ask a passive joint for
    torque), and a joint whose torque rides its limit could not keep it."""
    free = np.array([not j.actuated for j in plan.robot.joints]) | (
        np.abs(plan.tau[1]) > RIDING_LIMIT * plan.robot.effort_limits)
    return np.where(free, np.nan, plan.qdd[1])


class Replanner:
    """Plans ``steps`` knots of ``dt`` to ``goal_q`` (None: free; at rest unless ``goal_v``), with
    ``optimize_trajectory``'s ``options`` (for a floating robot its goal base pose, contacts and so on).
    ``plan(q, v)`` plans from scratch; ``replan(q, v)`` plans again from the state reached after the next step,
    warm-started from the last plan. ``horizon``: "receding" (default), every plan ``steps`` knots long, the goal
    one step later each time, the contact runs the same in every horizon; or "fixed", the goal at the time the
    first plan set, each replan one knot shorter, its contact runs and frame goals moved with it (``replan``
    refuses once no step is left). A floating robot's measured base state goes with them: ``base_pose`` (4×4)
    and ``base_twist``. ``hold_acceleration``: each replan's first q̈ is the last plan's there (see above); by
    default on fixed horizons only. ``iterations``: None, each replan solved to the optimum; k, a real-time
    iteration of at most k steps (its plan says whether it met ``tolerance``, an option of
    ``optimize_trajectory``, and warns when not). ``prepare()``, while a step executes, makes the next
    ``replan`` the feedback of a prepared step (``gtdyn.planning.prepared``; fixed bases). ``last`` is the latest
    plan; ``executed``, the steps replanned since ``plan``; ``prepared``, the step ``prepare`` made, until the
    replan that uses it."""

    def __init__(self, robot, *, goal_q=None, goal_v=None, steps: int, dt: float, horizon: str = "receding",
                 hold_acceleration: bool | None = None, iterations: int | None = None, **options):
        self.robot, self.goal_q, self.steps, self.dt, self.options = robot, goal_q, steps, dt, options
        self.horizon = choice("horizon", horizon, HORIZONS)
        self.hold_acceleration = self.horizon == "fixed" if hold_acceleration is None else \
            flag("hold_acceleration", hold_acceleration)
        self.iterations = None if iterations is None else whole_number("iterations", iterations, 1)
        self.goal_v = np.zeros(robot.num_dofs) if goal_v is None else goal_v
        self.last: PlannedTrajectory | None = None
        self.executed = 0
        self.prepared: PreparedStep | None = None  # ``prepare``'s, for the next replan

    def plan(self, q, v=None, *, base_pose=None, base_twist=None) -> PlannedTrajectory:
        """A cold plan from (q, v) (and a floating robot's base pose and twist)."""
        self.last = optimize_trajectory(self.robot, **self._request(q, v, None, base_pose, base_twist, self.steps,
                                                                    self.options))
        self.executed, self.prepared = 0, None
        return self.last

    def replan(self, q, v=None, *, base_pose=None, base_twist=None) -> PlannedTrajectory:
        """The horizon planned again from (q, v) (and a floating robot's base pose and twist), the state measured
        one step after the last plan's start, warm-started from that plan (``shifted`` or ``tail``); after
        ``prepare``, the prepared step's feedback instead."""
        if self.last is None:
            return self.plan(q, v, base_pose=base_pose, base_twist=base_twist)
        prepared, self.prepared = self.prepared, None
        if prepared is not None:
            started = time.perf_counter()
            setup, steps = prepared.setup, 1
            x, violation = prepared.feedback(q, np.zeros(self.robot.num_dofs) if v is None else v)
            if (self.iterations or 1) > 1 and violation > setup.tolerance:  # the feedback was the first step
                x, more, violation = setup.problem.real_time(x, setup.tolerance, self.iterations - 1)
                steps += more
            self.last = dataclasses.replace(finish(setup, x, steps, violation), seconds=time.perf_counter() - started)
        else:
            self.last = optimize_trajectory(self.robot, **self._next(q, v, base_pose, base_twist))
        self.executed += self.horizon == "fixed"
        return self.last

    def prepare(self) -> None:
        """Before the next state is measured: the next replan prepared at the state the last plan predicts for it
        (``gtdyn.planning.prepared``: linearized, and eliminated but for its first knot), so that the next
        ``replan`` is only the feedback — one Gauss–Newton step, taken whole, from the measured state (with
        ``iterations=k``, the first of at most k, the others line-searched as ``real_time``'s). Fixed-base
        robots; meant for fixed horizons, whose last plan's tail is nearly the next optimum: a receding horizon's
        goal moves a step later at each replan, and the one step leaves what it cannot reach as violation (about
        0.1 on the 2R arm's 31 knots), which the plan reports and warns of."""
        preparable(self.robot, self.last is not None)
        q, v = self.last.q[1], self.last.v[1]
        if self.options.get("limits", True):  # a plan keeps its limits to its tolerance; a start must keep them
            bound = Limits.of(self.robot, 1).bound
            q, v = np.clip(q, bound["q lower"], bound["q upper"]), np.clip(v, bound["v lower"], bound["v upper"])
        asked = inspect.signature(optimize_trajectory).bind(self.robot, **self._next(q, v, None, None))
        asked.apply_defaults()
        arguments = dict(asked.arguments)
        del arguments["robot"], arguments["real_time_steps"]
        self.prepared = PreparedStep(set_up(self.robot, **arguments), limits=arguments["limits"])

    def _next(self, q, v, base_pose, base_twist) -> dict:
        """``optimize_trajectory``'s arguments for the replan from (q, v): the horizon's knots and options, the
        last plan as the warm start, the acceleration under way where held."""
        last, held = self.last, {}
        if self.hold_acceleration:  # the acceleration under way, at the knot the robot has reached
            held = {"qdd0": held_acceleration(last)}
        if self.iterations is not None:
            held["real_time_steps"] = self.iterations
        if self.horizon == "receding":
            return self._request(q, v, shifted(last), base_pose, base_twist, self.steps, {**self.options, **held})
        left = self.steps - self.executed - 1
        if left < 1:
            raise ArgumentError(f"replan: the fixed horizon of {self.steps} steps is used up (the goal's time has "
                                "come); plan() again for a new one")
        options = options_after(self.options, self.executed + 1, self.steps + 1)
        return self._request(q, v, tail(last), base_pose, base_twist, left, {**options, **held})

    def _request(self, q, v, initial, base_pose, base_twist, steps: int, options: dict) -> dict:
        q = joint_vector(self.robot, "q", q)
        v = np.zeros(self.robot.num_dofs) if v is None else joint_vector(self.robot, "v", v)
        base = {name: x for name, x in (("base_pose", base_pose), ("base_twist", base_twist)) if x is not None}
        return dict(q0=q, v0=v, goal_q=self.goal_q, goal_v=self.goal_v, steps=steps, dt=self.dt, initial=initial,
                    **base, **options)
