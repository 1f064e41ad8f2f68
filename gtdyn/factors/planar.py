"""Planar factor (paper 001 §VII): in a planar loop, zero the loop joint's out-of-plane wrench components,
which the dynamics alone leave indeterminate."""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.equations import planar_equation
from gtdyn.factors.base import error_function, hard
from gtdyn.spatial import skew


class PlanarFactor(gtsam.CustomFactor):
    """P(wTc) F = 0 with P = ``planar_directions``: the wrench's force along the plane normal and its moments
    about two in-plane axes, seen in the loop joint's child frame. Keys: F, wTc (the child link's pose).

    Each row of P is dᵀ Rᵀ for a fixed world direction d; turning R by exp(ω) changes Rᵀd by [Rᵀd] ω.
    """

    def __init__(self, F: int, pose: int, normal):
        normal = np.asarray(normal, float)
        keys = [F, pose]

        def evaluate(values):
            wTc = values.atPose3(pose)
            eq = planar_equation(wTc, normal)
            x = values.atVector(F)
            P = eq.coefficients["F"]
            H_pose = np.zeros((3, 6))
            for row in range(3):
                part = slice(3, 6) if row == 0 else slice(0, 3)
                H_pose[row, :3] = -(skew(P[row, part]) @ x[part])  # d(xᵀ Rᵀd)/dω = xᵀ [Rᵀd] = −([Rᵀd] x)ᵀ
            return eq.error({"F": x}), {F: P, pose: H_pose}

        super().__init__(hard(3), keys, error_function(keys, evaluate))
