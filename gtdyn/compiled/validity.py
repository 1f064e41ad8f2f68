"""Whether a call's inputs are ones the compiled code may answer, as generated code: every input finite, every
revolute angle within its limit, a floating base's pose rigid, every transmission kept. A call that fails any goes
to the reference path, which raises or warns at the boundary as it always does."""

from __future__ import annotations

import numpy as np

from gtdyn.arguments.asked import TRANSMISSION_TOLERANCE
from gtdyn.arguments.query import POSE
from gtdyn.compiled import base_inputs, trace
from gtdyn.compiled.layout import Layout
from gtdyn.model.limits import MAX_ANGLE
from gtdyn.model.robot import Robot
from gtdyn.problem import Problem


def coupling_ok(robot: Robot, q: list, v: list, problem: Problem):
    """1.0 if the inputs keep every transmission (q, q̇, and q̈ where all of a transmission's are given) to the
    reference path's ``TRANSMISSION_TOLERANCE``, else 0.0: a state that breaks one goes to the reference path,
    which names the joint."""
    ok = 1.0
    for t in robot.transmissions:
        series = [(lambda j: q[j - 1], t.offset), (lambda j: v[j - 1], 0.0)]
        if all(j in problem.known_qdd for j in (t.dependent, *(k for k, _ in t.terms))):
            series.append((lambda j: problem.known_qdd[j], 0.0))
        for value, offset in series:
            expected = sum((ratio * value(k) for k, ratio in t.terms), 0.0) + offset
            gap = value(t.dependent) - expected
            bound = TRANSMISSION_TOLERANCE * (1.0 + trace.fabs(expected))
            ok = ok * trace.le(gap * gap, bound * bound)
    return ok


def inputs(fn: trace.Function, layout: Layout) -> list:
    """Every input, loaded: one that the equations never read (q1 of a planar arm about a vertical axis) must
    still not be NaN."""
    return [fn.load(i) for i in range(layout.start["inputs"], layout.start["inputs"] + layout.inputs)]


def valid_inputs(fn: trace.Function, layout: Layout):
    """1.0 if every input is finite, every revolute angle within ±``MAX_ANGLE`` and a floating base's pose input is
    a rigid transform (RᵀR = I to 1e-9 per entry, det R > 0, last row 0 0 0 1: what
    ``gtdyn.arguments.pose_argument`` accepts), else 0.0: the reference path then raises the boundary's error."""
    ok = finite(inputs(fn, layout))
    for j in layout.angles:
        ok = ok * trace.le(trace.fabs(fn.load(layout.start["inputs"] + j)), MAX_ANGLE)
    if layout.base_inputs:
        first = layout.start["inputs"] + 3 * layout.n + POSE
        R = np.array([fn.load(first + i) for i in base_inputs.ROTATION], dtype=object).reshape(3, 3)
        last_row = [fn.load(first + 12 + k) - (1.0 if k == 3 else 0.0) for k in range(4)]
        gram = R.T @ R - np.eye(3)
        det = R[0, 0] * (R[1, 1] * R[2, 2] - R[1, 2] * R[2, 1]) - R[0, 1] * (R[1, 0] * R[2, 2] - R[1, 2] * R[2, 0]) \
            + R[0, 2] * (R[1, 0] * R[2, 1] - R[1, 1] * R[2, 0])
        ok = ok * trace.le(squared_norm(list(gram.ravel())), 1e-18) * trace.le(-det, 0.0) \
            * trace.le(squared_norm(last_row), 0.0)
    return ok


def finite(values: list):
    """1.0 if every value is finite (their sum is), else 0.0."""
    return finite_sum(sum(values, 0.0))


def finite_sum(total):
    """1.0 if ``total``, a sum of values, is finite (so every value is), else 0.0."""
    return trace.le(trace.fabs(total), float(np.finfo(float).max))


def squared_norm(values) -> object:
    return trace.dot(values, values)
