"""Planar factor (paper 001 §VII): in a planar loop, zero the loop joint's out-of-plane wrench components,
which the dynamics alone leave indeterminate."""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.equations import planar_directions
from gtdyn.factors.base import fill, hard, present
from gtdyn.spatial import skew


class PlanarFactor(gtsam.CustomFactor):
    """e = P(wTc) F with P = ``planar_directions``: the wrench's force along the plane normal and its moments
    about two in-plane axes, seen in the loop joint's child frame. Keys: F, wTc (the child link's pose; None
    when the loop closes onto the fixed base, at the world origin).

    Each row of P is dᵀ Rᵀ for a fixed world direction d; turning R by exp(ω) changes Rᵀd by [Rᵀd] ω.
    """

    def __init__(self, F: int, pose: int | None, normal):
        normal = np.asarray(normal, float)
        keys = present(F, pose)

        def error(this, values, H):
            P = planar_directions(gtsam.Pose3() if pose is None else values.atPose3(pose), normal)
            x = values.atVector(F)
            if H is not None:
                H_pose = np.zeros((3, 6))
                for row in range(3):
                    part = slice(3, 6) if row == 0 else slice(0, 3)
                    H_pose[row, :3] = -(skew(P[row, part]) @ x[part])  # d(xᵀ Rᵀd)/dω = xᵀ [Rᵀd] = −([Rᵀd] x)ᵀ
                fill(H, keys, {F: P, pose: H_pose})
            return P @ x

        super().__init__(hard(3), keys, error)
