"""Controllers built from gtdyn's own blocks: plain callables ``tau(t, q, v)`` for ``gtdyn.simulate`` that the
native time loop (``native_loop``) also knows how to evaluate, with the same IEEE operations in the same order, so
a run gives the same trajectory bit for bit whichever loop takes it."""

from __future__ import annotations

import math

import numpy as np

from gtdyn.arguments import robot_argument
from gtdyn.arguments.control import controller_fits, controller_time, gain_vector, joint_state, reference_rows
from gtdyn.model.robot import Robot

# a knot counts as reached from a quarter step before it: the times a run asks at are k·Δt, k·Δt + Δt/2 and
# k·Δt + Δt, each within rounding of its own value, so this only absorbs the rounding of t / Δt
ROW_OFFSET = 0.25


class PDController:
    """τ = τ_ff + K_p (q_ref − q) + K_d (v_ref − q̇), joint by joint; passive joints get τ = 0.

    ``kp``, ``kd``: a number for every joint or one per joint, finite and ≥ 0. ``q_ref``, ``v_ref`` (None: zero)
    and ``tau_ff`` (None: zero): a vector of one value per joint, held throughout, or an array of shape
    (steps + 1, n) sampled at the knots t_k = k·``dt`` of a run of ``steps`` steps of ``dt`` (then ``dt`` is
    required, and ``simulate`` checks that the run has that step and that many knots).

    A sampled reference is held between knots (zero-order hold): at time t the controller reads row
    ``row(t)`` = ⌊t/Δt + ¼⌋ (clipped to the rows), the last knot at or before t + Δt/4 — the quarter step only
    absorbs the rounding of t/Δt at the run's evaluation times. Euler and semi-implicit Euler ask once per step, at t_k:
    row k. RK4 asks at t_k (row k), twice at t_k + Δt/2 (row k) and at t_k + Δt = t_{k+1}, where the hold
    has moved on to row k + 1: a controller told only the time cannot tell that last stage from the next sample,
    and the native loop reads the rows exactly as this call does.

    An ordinary callable: every ``simulate`` path takes it (closed loops, the trapezoidal rule and the variational
    integrator through their Python steppers); on trees with Euler, semi-implicit Euler or RK4 (a fixed or floating
    base, contacts, wrenches) the native time loop evaluates it in compiled code, bit for bit this ``__call__``.
    """

    def __init__(self, robot: Robot, kp, kd, q_ref, v_ref=None, tau_ff=None, *, dt=None):
        self.robot = robot_argument(robot)
        self.kp, self.kd = gain_vector(robot, "kp", kp), gain_vector(robot, "kd", kd)
        rows, self.samples, self.dt = reference_rows(robot, {"q_ref": q_ref, "v_ref": v_ref, "tau_ff": tau_ff}, dt)
        self.q_rows, self.v_rows, self.ff_rows = rows["q_ref"], rows["v_ref"], rows["tau_ff"]
        self.passive = np.array([not j.actuated for j in robot.joints], dtype=bool)
        self._any_passive = bool(self.passive.any())
        self.last_row = 0 if self.samples is None else self.samples - 1  # rows are clipped to it
        self._freeze()

    def _freeze(self) -> None:
        for a in (self.kp, self.kd, self.q_rows, self.v_rows, self.ff_rows, self.passive):
            a.setflags(write=False)  # the native loop reads them as they were checked

    def __setstate__(self, state: dict) -> None:  # unpickled (a process pool, a Dask worker): read-only again
        self.__dict__.update(state)
        self._freeze()

    def row(self, t) -> int:
        """The knot whose samples hold at time ``t`` (0 for held references): ⌊t/Δt + ¼⌋ clipped to the rows."""
        if self.samples is None:
            return 0
        s = t / self.dt + ROW_OFFSET
        if s != s:  # NaN
            controller_time("t", t)
        return 0 if s < 1.0 else self.last_row if s >= self.last_row else math.floor(s)  # an infinite t too

    def __call__(self, t, q, v) -> np.ndarray:
        q, v = joint_state(self.robot, "q", q), joint_state(self.robot, "v", v)
        k = self.row(t)
        qr, vr, ff = (rows[min(k, len(rows) - 1)] for rows in (self.q_rows, self.v_rows, self.ff_rows))
        tau = ff + self.kp * (qr - q) + self.kd * (vr - v)  # the native loop's order of operations
        if self._any_passive:
            tau[self.passive] = 0.0
        return tau

    def check_run(self, robot: Robot, dt: float, steps: int) -> None:
        """ArgumentError (naming ``tau``) unless this controller fits a run of ``robot`` for ``steps`` of ``dt``."""
        controller_fits(self.robot, robot, self.samples, self.dt, dt, steps)

    def __repr__(self) -> str:
        held = "held references" if self.samples is None else f"{self.samples} samples every {self.dt!r} s"
        return f"PDController('{self.robot.name}', {held})"
