"""Forward-kinematics factor of one joint: the child's pose is the parent's pose times pTc(q)."""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.factors.base import error_function, hard, present, scalar
from gtdyn.robot import Joint


class PoseFactor(gtsam.CustomFactor):
    """Log( (wTp · pTc(q))⁻¹ · wTc ) = 0.  Keys: wTp, wTc, q; None for wTp or wTc: that end is the fixed base,
    at the world origin (a loop can close onto the base).

    With h = wTp·pTc(q) and E = h⁻¹·wTc = exp(e): ∂e/∂wTc = J_r⁻¹(e), ∂e/∂h = −J_r⁻¹(e)·Ad(E⁻¹),
    ∂h/∂wTp = Ad(pTc⁻¹) and ∂h/∂q = S (pTc(q+δ) = pTc(q)·exp([S]δ)).
    """

    def __init__(self, joint: Joint, wTp: int | None, wTc: int | None, q: int):
        S = joint.screw_axis
        keys = present(wTp, wTc, q)

        def evaluate(values):
            parent = gtsam.Pose3() if wTp is None else values.atPose3(wTp)
            pTc = joint.parent_T_child(scalar(values, q))
            h = parent.compose(pTc)
            E = h.between(gtsam.Pose3() if wTc is None else values.atPose3(wTc))
            e = gtsam.Pose3.Logmap(E)
            Jr_inv = gtsam.Pose3.LogmapDerivative(e)
            H_h = -Jr_inv @ E.inverse().AdjointMap()
            H = {q: (H_h @ S).reshape(6, 1)}
            if wTc is not None:
                H[wTc] = Jr_inv
            if wTp is not None:
                H[wTp] = H_h @ pTc.inverse().AdjointMap()
            return e, H

        super().__init__(hard(6), keys, error_function(keys, evaluate))
