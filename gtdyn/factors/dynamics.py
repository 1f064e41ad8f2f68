"""The dynamics of one time step as one factor: e = τ − ID(q, q̇, q̈), ID a compiled inverse-dynamics solver.

Where the full graph ties a step's q, q̇, q̈ and τ through every link's pose, twist, acceleration and wrench (the
Newton–Euler equations, one factor each), this factor holds them in one residual whose value is the compiled
solve and whose Jacobians are its exact derivatives (``solver.derivatives``, issue 21): ∂e/∂q = −∂τ/∂q,
∂e/∂q̇ = −∂τ/∂q̇, ∂e/∂q̈ = −M, ∂e/∂τ = I. The link quantities are no longer variables, so a trajectory's graph has
four scalar variables per joint and step instead of dozens.
"""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.arguments import covered
from gtdyn.errors import ArgumentError
from gtdyn.factors.base import hard


class DynamicsFactor(gtsam.CustomFactor):
    """τ − ID(q, q̇, q̈) = 0 at one step of a tree on a fixed base. ``solver``: ``gtdyn.compile(robot, "inverse",
    derivatives=True)``; ``q``, ``v``, ``qdd``, ``tau``: the step's keys by joint (scalar variables, 1-vectors; a
    passive joint's τ is a variable too, which a prior holds at zero). ``noise``: hard (an equation) unless
    given."""

    def __init__(self, solver, q: list[int], v: list[int], qdd: list[int], tau: list[int], noise=None):
        robot = solver.robot
        if solver.problem != "inverse" or not solver.has_derivatives:
            raise ArgumentError("solver: DynamicsFactor needs gtdyn.compile(robot, 'inverse', derivatives=True)")
        covered(robot, "DynamicsFactor", loops=False, floating_base=False, transmissions=False,
                advice="use the full graph, gtdyn.factors.full_graph")
        n = robot.num_dofs
        if not all(len(keys) == n for keys in (q, v, qdd, tau)):
            raise ArgumentError(f"q, v, qdd, tau: expected {n} keys each (one per joint of '{robot.name}')")
        keys = [*q, *v, *qdd, *tau]
        unit = np.eye(n)

        def dynamics_error(this, values, H):
            x = np.array([values.atVector(key)[0] for key in keys]).reshape(4, n)
            if H is None:
                return x[3] - solver(x[0], x[1], x[2])
            value, dq, dv, da = solver.derivatives(x[0], x[1], x[2])
            for i, block in enumerate((-dq, -dv, -da, unit)):
                for j in range(n):
                    H[i * n + j] = block[:, j:j + 1]
            return x[3] - value

        super().__init__(hard(n) if noise is None else noise, keys, dynamics_error)
