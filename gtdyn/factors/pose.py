"""Forward-kinematics factor of one joint: the child's pose is the parent's pose times pTc(q)."""

from __future__ import annotations

import gtsam

from gtdyn.factors.base import fill, hard, present, scalar
from gtdyn.model.robot import Joint


class PoseFactor(gtsam.CustomFactor):
    """e = Log( (wTp · pTc(q))⁻¹ · wTc ).  Keys: wTp, wTc, q; None for wTp or wTc: that end is the fixed base,
    at the world origin (a loop can close onto the base).

    With h = wTp·pTc(q) and E = h⁻¹·wTc = exp(e): ∂e/∂wTc = J_r⁻¹(e), ∂e/∂h = −J_r⁻¹(e)·Ad(E⁻¹),
    ∂h/∂wTp = Ad(pTc⁻¹) and ∂h/∂q = S (pTc(q+δ) = pTc(q)·exp([S]δ)).
    """

    def __init__(self, joint: Joint, wTp: int | None, wTc: int | None, q: int):
        S = joint.screw_axis
        keys = present(wTp, wTc, q)

        def error(this, values, H):
            parent = gtsam.Pose3() if wTp is None else values.atPose3(wTp)
            pTc = joint.parent_T_child(scalar(values, q))
            E = parent.compose(pTc).between(gtsam.Pose3() if wTc is None else values.atPose3(wTc))
            e = gtsam.Pose3.Logmap(E)
            if H is not None:
                Jr_inv = gtsam.Pose3.LogmapDerivative(e)
                H_h = -Jr_inv @ E.inverse().AdjointMap()
                fill(H, keys, {wTc: Jr_inv, q: H_h @ S, wTp: H_h @ pTc.inverse().AdjointMap()})
            return e

        super().__init__(hard(6), keys, error)
