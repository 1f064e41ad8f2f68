"""Goals in task space: a frame's position (world, m) and/or orientation (world ← frame) at a knot, as hard
constraints of ``optimize_trajectory``. Residuals p(q_k) − p* and Log(R*ᵀ R(q_k)), with Jacobians from the
compiled frame kinematics (``gtdyn.compile_frames``, the frame's own axes): ∂p/∂q = R J_v and
∂Log/∂q = J_r⁻¹(e) J_ω."""

from __future__ import annotations

from dataclasses import dataclass

import gtsam
import numpy as np

from gtdyn.arguments.series import frame_goal_targets
from gtdyn.compiled.frames import compile_frames
from gtdyn.model.robot import Robot


@dataclass(frozen=True)
class _Goal:
    frame: int  # position in the compiled frames
    knot: int
    position: np.ndarray | None
    rotation: gtsam.Rot3 | None

    @property
    def rows(self) -> int:
        return 3 * ((self.position is not None) + (self.rotation is not None))


class FrameGoals:
    """The checked goals of one problem and the compiled kinematics of their frames."""

    def __init__(self, robot: Robot, goals, knots: int):
        self.goals: list[_Goal] = []
        names: list[str] = []
        for frame, knot, position, rotation in frame_goal_targets(robot, goals, knots):
            if frame not in names:
                names.append(frame)
            self.goals.append(_Goal(names.index(frame), knot, position, rotation))
        self.kinematics = compile_frames(robot, names) if names else None

    def __bool__(self) -> bool:
        return bool(self.goals)

    def residuals(self, q: np.ndarray, base_poses: np.ndarray | None = None) -> list[tuple]:
        """Per goal: (knot, residual, its Jacobian with respect to that knot's q); ``q`` rows in time. A floating
        base: ``base_poses`` (knots, 4, 4), and the Jacobian leads with the base's six columns (a right
        perturbation T Exp(ξ), as ``frame_jacobian``'s)."""
        return [(goal.knot, *self._residual(goal, q[goal.knot], None if base_poses is None else base_poses[goal.knot]))
                for goal in self.goals]

    def _residual(self, goal: _Goal, q: np.ndarray, base_pose=None) -> tuple[np.ndarray, np.ndarray]:
        poses, jacobians = self.kinematics.placement_jacobian(q, base_pose=base_pose)
        T, J = poses[goal.frame], jacobians[goal.frame]
        R = T[:3, :3]
        parts, blocks = [], []
        if goal.position is not None:
            parts.append(T[:3, 3] - goal.position)
            blocks.append(R @ J[3:])
        if goal.rotation is not None:
            error = gtsam.Rot3.Logmap(goal.rotation.between(gtsam.Rot3(R)))
            parts.append(error)
            blocks.append(gtsam.Rot3.LogmapDerivative(error) @ J[:3])
        return np.concatenate(parts), np.vstack(blocks)

    def _at(self, knot: int, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The goals of one knot, stacked, at configuration q."""
        found = [self._residual(goal, q) for goal in self.goals if goal.knot == knot]
        return np.concatenate([r for r, _ in found]), np.vstack([J for _, J in found])

    def knots(self) -> list[int]:
        """The knots that have goals, in order."""
        return sorted({goal.knot for goal in self.goals})

    def inverse_kinematics(self, knot: int, q: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
        """A configuration that meets the goals at ``knot``, from ``q`` (damped least squares, kept within the
        limits): the planner's starting guess there. Returns the best found; the planner meets the goals exactly."""
        q = np.array(q, dtype=float)
        damping = 1e-3
        for _ in range(IK_ITERATIONS):
            r, J = self._at(knot, q)
            if np.max(np.abs(r)) < 1e-12:
                break
            step = -np.linalg.solve(J.T @ J + damping * np.eye(len(q)), J.T @ r)
            trial = np.clip(q + step, lower, upper)
            if np.sum(self._at(knot, trial)[0] ** 2) < np.sum(r ** 2):
                q, damping = trial, max(damping / 10, 1e-12)
            else:
                damping *= 10
                if damping > 1e8:
                    break
        return q


IK_ITERATIONS = 200
