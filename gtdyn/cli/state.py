"""The state the command solves at when none is given: a bundled robot's documented state
(``gtdyn.io.load.DOCUMENTED_STATES``), else a generic one inside the joint limits; and its help text."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

import gtdyn
from gtdyn.io.load import DOCUMENTED_STATES, documented_state
from gtdyn.kinematics.loop_closure import independent_joints

LIMIT_MARGIN = 0.05  # of a joint's range: how far inside its limits a default position stays


def _numbers(values, angles: bool = False) -> str:
    """``(0, π/4, π)`` for angles that are simple multiples of π, else ``(1, −0.5)``: as people write them."""

    def text(x: float) -> str:
        ratio = Fraction(x / np.pi).limit_denominator(12)
        if angles and x != 0 and abs(float(ratio) * np.pi - x) < 1e-12:
            n, d = ratio.numerator, ratio.denominator
            out = ("" if abs(n) == 1 else str(abs(n))) + "π" + ("" if d == 1 else f"/{d}")
            return ("−" if n < 0 else "") + out
        return f"{x:g}".replace("-", "−")

    return "(" + ", ".join(text(x) for x in values) + ")"


def _documented_states_text() -> str:
    return "; ".join(f"for the {s.title} q = {_numbers(s.q, angles=True)} rad" + (f" ({s.about})" if s.about else "")
                     + f",\nq̇ = {_numbers(s.v)} rad/s, q̈ = {_numbers(s.qdd)} rad/s²"
                     for s in DOCUMENTED_STATES.values())


DEFAULT_STATE_DOC = f"""default state: {_documented_states_text()}. For other robots
q_k = 0.1·k for the k-th joint if that lies inside its limits by {LIMIT_MARGIN:.0%} of the range, else the middle
of the range (or 0.1 inside a one-sided limit); q̇_k = 0.1, q̈_k = 0.5 (rad or m for revolute or prismatic
joints). On closed loops these are the values of independent joints (actuated ones first: as many as the loops
leave free) and the other joints close the loops.
Forward dynamics is given the torques inverse dynamics finds for that q̈; hybrid dynamics is given q̈ for
the first half of the actuated joints and those torques for the rest (so it needs two actuated joints).
Units: rad, rad/s, rad/s², N·m for revolute joints; m, m/s, m/s², N for prismatic ones.
A floating base (--base floating) is at the identity pose with zero twist unless --base-pose and --base-twist
say otherwise. Inverse dynamics gives its acceleration (--base-accel, default 0) and solves for the wrench its
environment must apply (moment in N·m, force in N, in its frame); forward dynamics leaves it free (no wrench)
and solves for its acceleration (rad/s², m/s²), with the torques inverse dynamics finds with the base held at
that acceleration; hybrid dynamics leaves it free unless --base-accel is given."""

def inside_limits(joint: gtdyn.Joint, value: float) -> float:
    """``value`` if it lies inside the joint's limits by LIMIT_MARGIN of the range, else the middle of the
    range; with a one-sided limit, at least 0.1 inside it."""
    lo, hi = joint.lower, joint.upper
    if np.isfinite(lo) and np.isfinite(hi):
        margin = LIMIT_MARGIN * (hi - lo)
        return value if lo + margin <= value <= hi - margin else (lo + hi) / 2
    if np.isfinite(lo):
        return max(value, lo + 0.1)
    if np.isfinite(hi):
        return min(value, hi - 0.1)
    return value


def default_state(robot: gtdyn.Robot) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q, q̇, q̈ as DEFAULT_STATE_DOC says."""
    documented = documented_state(robot)
    if documented is not None:
        return documented
    q = np.array([inside_limits(j, 0.1 * j.index) for j in robot.joints])
    if robot.loop_joints:  # independent joints (actuated ones first) at the values below; the others close the loops
        free = [robot.joint(n) for n in independent_joints(robot, robot.actuated_joint_names)]
        s = gtdyn.close_loops(robot, {j.name: q[j.index - 1] for j in free}, {j.name: 0.1 for j in free},
                              {j.name: 0.5 for j in free})
        return s.q, s.v, s.qdd
    v, qdd = np.full(robot.num_dofs, 0.1), np.full(robot.num_dofs, 0.5)
    robot.follow_drives(q, v, qdd)
    return q, v, qdd
