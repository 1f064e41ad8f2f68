"""Operational-space quantities: the inverse operational-space inertia Λ⁻¹ = J M⁻¹ Jᵀ of frames (paper 003's
C-EFPA computes it by elimination; here by the dynamics graph's forward solves, in any ordering)."""

from __future__ import annotations

import numpy as np

from gtdyn.arguments import frame_list, robot_argument
from gtdyn.dynamics.solve import forward_dynamics
from gtdyn.kinematics.frames import frame_jacobian
from gtdyn.model.robot import Robot

NO_GRAVITY = np.zeros(3)


def operational_space_inverse_inertia(robot: Robot, q, frames, *, base_pose=None, ordering=None) -> np.ndarray:
    """Λ⁻¹ (6k × 6k) of the k ``frames`` (links, or frames merged into links, as ``Contact`` takes them): block
    (a, b) maps a wrench [m; f] applied at frame b, in b's own axes, to the spatial acceleration [ω̇; v̇] it gives
    frame a at rest, in a's own axes — J_a M⁻¹ J_bᵀ with LOCAL Jacobians (Pinocchio: ``getFrameJacobian(...,
    LOCAL)`` and ``computeMinverse``, rows [v; ω]; ``computeDelassusMatrix`` for contacts).

    Column (b, j) is forward dynamics at q̇ = 0 with τ = 0 and no gravity under the unit wrench e_j at frame b —
    the generalized force J_bᵀ e_j, so q̈ = M⁻¹ J_bᵀ e_j — read through every frame's Jacobian (at rest
    J̇ q̇ = 0). Each is one elimination of the dynamics graph in ``ordering`` (any that applies to forward
    dynamics), so closed loops, transmissions and a floating base (free, its pose ``base_pose``) are as the
    forward solve has them: the accelerations the constraints allow. A singular system warns or raises there."""
    robot = robot_argument(robot)
    frames = frame_list(robot, "frames", frames)
    zero = np.zeros(robot.num_dofs)
    jacobians = [frame_jacobian(robot, q, frame, base_pose=base_pose) for frame in frames]
    columns = []
    for frame in frames:
        for wrench in np.eye(6):
            r = forward_dynamics(robot, q, zero, zero, base_pose=base_pose, gravity=NO_GRAVITY,
                                 external_wrenches={frame: wrench}, ordering=ordering)
            accelerations = np.concatenate([r.base_accel, r.qdd]) if robot.floating_base else r.qdd
            columns.append(np.concatenate([J @ accelerations for J in jacobians]))
    return np.column_stack(columns)
