"""The dynamics of one time step as one factor: e = τ − ID(q, q̇, q̈), ID a compiled inverse-dynamics solver.

Where the full graph ties a step's q, q̇, q̈ and τ through every link's pose, twist, acceleration and wrench (the
Newton–Euler equations, one factor each), this factor holds them in one residual whose value is the compiled
solve and whose Jacobians are its exact derivatives (``solver.derivatives``, issue 21): ∂e/∂q = −∂τ/∂q,
∂e/∂q̇ = −∂τ/∂q̇, ∂e/∂q̈ = −M, ∂e/∂τ = I. The link quantities are no longer variables, so a trajectory's graph has
four scalar variables per joint and step instead of dozens.

A floating base in free flight adds its pose, twist and acceleration (of its CoM frame, the full graph's body 0
variables) and six rows: the wrench its environment would have to apply, which free flight makes zero,
e = [0; τ] − ID(T, V, A, q, q̇, q̈). The solver takes the base in its root link frame (``gtdyn.model.base_frame``):
T_l = T_c · comTl, so perturbing T_c by Exp(ξ_c) perturbs T_l by Exp(Ad(lTcom) ξ_c), and V_l = Ad(lTcom) V_c, as
A_l; each base column block of the derivatives is taken times Ad(lTcom).
"""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.arguments import covered, step_keys
from gtdyn.errors import ArgumentError
from gtdyn.factors.base import hard
from gtdyn.model import base_frame


class DynamicsFactor(gtsam.CustomFactor):
    """τ − ID(q, q̇, q̈) = 0 at one step of a tree. ``solver``: ``gtdyn.compile(robot, "inverse",
    derivatives=True)``; ``q``, ``v``, ``qdd``, ``tau``: the step's keys by joint (scalar variables, 1-vectors; a
    passive joint's τ is a variable too, which a prior holds at zero). A floating base (in free flight) needs
    ``base``: the keys of its CoM frame's pose (``gtsam.Pose3``), twist and acceleration (6-vectors, that frame's
    axes). ``noise``: hard (an equation) unless given."""

    def __init__(self, solver, q: list[int], v: list[int], qdd: list[int], tau: list[int],
                 base: tuple[int, int, int] | None = None, noise=None):
        robot = solver.robot
        if solver.problem != "inverse" or not solver.has_derivatives:
            raise ArgumentError("solver: DynamicsFactor needs gtdyn.compile(robot, 'inverse', derivatives=True)")
        covered(robot, "DynamicsFactor", loops=False, transmissions=False,
                advice="use the full graph, gtdyn.factors.full_graph")
        n = robot.num_dofs
        keys = step_keys(robot, q, v, qdd, tau, base)
        joint_keys = keys[-4 * n:]
        unit = np.eye(n)

        def joint_values(values) -> np.ndarray:
            return np.array([values.atVector(key)[0] for key in joint_keys]).reshape(4, n)

        def set_joint_jacobians(H, first: int, dq, dv, da, rows: int) -> None:
            torque = np.vstack([np.zeros((rows - n, n)), unit])  # ∂e/∂τ: τ enters the rows of the joints alone
            for i, block in enumerate((-dq, -dv, -da, torque)):
                for j in range(n):
                    H[first + i * n + j] = block[:, j:j + 1]

        if base is None:
            def dynamics_error(this, values, H):
                x = joint_values(values)
                if H is None:
                    return x[3] - solver(x[0], x[1], x[2])
                value, dq, dv, da = solver.derivatives(x[0], x[1], x[2])
                set_joint_jacobians(H, 0, dq, dv, da, n)
                return x[3] - value

            super().__init__(hard(n) if noise is None else noise, joint_keys, dynamics_error)
            return

        to_link = base_frame.twist_to_link(robot)
        pose_key, twist_key, accel_key = base

        def floating_error(this, values, H):
            x = joint_values(values)
            given = {"base_pose": base_frame.pose_to_link(robot, values.atPose3(pose_key)),
                     "base_twist": to_link @ values.atVector(twist_key),
                     "base_accel": to_link @ values.atVector(accel_key)}
            if H is None:
                wrench, tau = solver(x[0], x[1], x[2], **given)
                return np.concatenate([-wrench, x[3] - tau])
            value, dq, dv, da = solver.derivatives(x[0], x[1], x[2], **given)
            for i, d in enumerate((dq, dv, da)):  # pose, twist, acceleration: the root link's columns, moved
                H[i] = -d[:, :6] @ to_link
            set_joint_jacobians(H, 3, dq[:, 6:], dv[:, 6:], da[:, 6:], n + 6)
            return np.concatenate([np.zeros(6), x[3]]) - value

        super().__init__(hard(n + 6) if noise is None else noise, keys, floating_error)
