"""Twist (eq. 4) and twist-acceleration (eq. 5) factors of one joint.

With y = [Ad_cTp(q)] x, moving q by δ turns cTp into exp(−[S]δ)·cTp, so ∂y/∂q = −[ad_S] y; the errors below
subtract y, so ∂e/∂q = [ad_S] y.
"""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.equations import bias_acceleration
from gtdyn.factors.base import fill, hard, present, scalar, vector
from gtdyn.model.robot import Joint
from gtdyn.spatial import Ad, ad

I6 = np.eye(6)


class TwistFactor(gtsam.CustomFactor):
    """Eq. 4:  e = V_c − [Ad_cTp(q)] V_p − S q̇.  Keys: V_c, V_p, q, q̇ (V_c or V_p None: the fixed base)."""

    def __init__(self, joint: Joint, V_c: int | None, V_p: int | None, q: int, v: int):
        S = joint.screw_axis
        keys = present(V_c, V_p, q, v)

        def error(this, values, H):
            Ad_cTp = Ad(joint.child_T_parent(scalar(values, q)))
            Vp = vector(values, V_p)
            e = vector(values, V_c) - Ad_cTp @ Vp - S * scalar(values, v)
            if H is not None:
                fill(H, keys, {V_c: I6, V_p: -Ad_cTp, q: ad(S) @ Ad_cTp @ Vp, v: -S})
            return e

        super().__init__(hard(6), keys, error)


class TwistAccelFactor(gtsam.CustomFactor):
    """Eq. 5:  e = V̇_c − [Ad_cTp(q)] V̇_p − S q̈ − [ad_Vc] S q̇.  Keys: V̇_c, V̇_p, q, q̇, q̈, V_c
    (V̇_c and V_c, or V̇_p, None: that end is the fixed base)."""

    def __init__(self, joint: Joint, A_c: int | None, A_p: int | None, q: int, v: int, a: int, V_c: int | None):
        S = joint.screw_axis
        keys = present(A_c, A_p, q, v, a, V_c)

        def error(this, values, H):
            Ad_cTp = Ad(joint.child_T_parent(scalar(values, q)))
            Ap, Vc, qd = vector(values, A_p), vector(values, V_c), scalar(values, v)
            e = vector(values, A_c) - Ad_cTp @ Ap - S * scalar(values, a) - bias_acceleration(Vc, S, qd)
            if H is not None:
                fill(H, keys, {A_c: I6, A_p: -Ad_cTp, q: ad(S) @ Ad_cTp @ Ap,
                               v: -bias_acceleration(Vc, S, 1.0), a: -S,
                               V_c: ad(S) * qd})  # −∂([ad_V] S)/∂V = [ad_S]
            return e

        super().__init__(hard(6), keys, error)
