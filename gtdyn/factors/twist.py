"""Twist (eq. 4) and twist-acceleration (eq. 5) factors of one joint.

With y = [Ad_cTp(q)] x, moving q by δ turns cTp into exp(−[S]δ)·cTp, so ∂y/∂q = −[ad_S] y.
"""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.equations import twist_accel_equation, twist_equation
from gtdyn.factors.base import error_function, hard, present, scalar, vector
from gtdyn.robot import Joint
from gtdyn.spatial import ad


class TwistFactor(gtsam.CustomFactor):
    """Eq. 4:  V_c − [Ad_cTp(q)] V_p − S q̇ = 0.  Keys: V_c, V_p, q, q̇ (V_c or V_p None: the fixed base)."""

    def __init__(self, joint: Joint, V_c: int | None, V_p: int | None, q: int, v: int):
        S = joint.screw_axis
        keys = present(V_c, V_p, q, v)

        def evaluate(values):
            qj, vj, Vp = scalar(values, q), scalar(values, v), vector(values, V_p)
            eq = twist_equation(joint.child_T_parent(qj), S)
            e = eq.error({"V_c": vector(values, V_c), "V_p": Vp, "v": vj})
            Ad_Vp = -eq.coefficients["V_p"] @ Vp
            H = {q: (ad(S) @ Ad_Vp).reshape(6, 1), v: eq.coefficients["v"]}
            if V_c is not None:
                H[V_c] = eq.coefficients["V_c"]
            if V_p is not None:
                H[V_p] = eq.coefficients["V_p"]
            return e, H

        super().__init__(hard(6), keys, error_function(keys, evaluate))


class TwistAccelFactor(gtsam.CustomFactor):
    """Eq. 5:  V̇_c − [Ad_cTp(q)] V̇_p − S q̈ − [ad_Vc] S q̇ = 0.  Keys: V̇_c, V̇_p, q, q̇, q̈, V_c
    (V̇_c and V_c, or V̇_p, None: that end is the fixed base)."""

    def __init__(self, joint: Joint, A_c: int | None, A_p: int | None, q: int, v: int, a: int, V_c: int | None):
        S = joint.screw_axis
        keys = present(A_c, A_p, q, v, a, V_c)

        def evaluate(values):
            qj, vj, Vc, Ap = scalar(values, q), scalar(values, v), vector(values, V_c), vector(values, A_p)
            eq = twist_accel_equation(joint.child_T_parent(qj), S, Vc, vj)
            e = eq.error({"A_c": vector(values, A_c), "A_p": Ap, "a": scalar(values, a)})
            Ad_Ap = -eq.coefficients["A_p"] @ Ap
            H = {
                q: (ad(S) @ Ad_Ap).reshape(6, 1),
                v: (-ad(Vc) @ S).reshape(6, 1),  # ∂/∂q̇ of −[ad_Vc] S q̇
                a: eq.coefficients["a"],
            }
            if A_c is not None:
                H[A_c] = eq.coefficients["A_c"]
                H[V_c] = ad(S) * vj  # −[ad_V] S = [ad_S] V
            if A_p is not None:
                H[A_p] = eq.coefficients["A_p"]
            return e, H

        super().__init__(hard(6), keys, error_function(keys, evaluate))
