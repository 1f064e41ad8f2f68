"""Planar factor (paper 001 §VII): ``planar_equation`` of ``gtdyn.equations`` — in a planar loop, zero the loop
joint's out-of-plane wrench components, which the dynamics alone leave indeterminate."""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.equations import planar_equation
from gtdyn.factors.base import add, coefficient_jacobians, evaluate, fill, hard, pose, present
from gtdyn.spatial import skew


class PlanarFactor(gtsam.CustomFactor):
    """e = P(wTc) F with P = ``planar_directions``: the wrench's force along the plane normal and its moments
    about two in-plane axes, seen in the loop joint's child frame. Keys: F, wTc (the child link's pose; None
    when the loop closes onto the fixed base, at the world origin).

    Each row of P is dᵀ Rᵀ for a fixed world direction d; turning R by exp(ω) changes Rᵀd by [Rᵀd] ω.
    """

    def __init__(self, F: int, wTc: int | None, normal):
        normal = np.asarray(normal, float)
        keys = present(F, wTc)
        roles = {"F": F}

        def planar_error(this, values, H):
            eq = planar_equation(pose(values, wTc), normal)
            e, x = evaluate(eq, roles, values)
            if H is not None:
                jacobians = coefficient_jacobians(eq, roles)
                P, f = eq.coefficients["F"], x["F"]
                H_pose = np.zeros((3, 6))
                for row in range(3):
                    part = slice(3, 6) if row == 0 else slice(0, 3)
                    H_pose[row, :3] = -(skew(P[row, part]) @ f[part])  # d(fᵀ Rᵀd)/dω = fᵀ [Rᵀd] = −([Rᵀd] f)ᵀ
                add(jacobians, wTc, H_pose)
                fill(H, keys, jacobians)
            return e

        super().__init__(hard(3), keys, planar_error)
