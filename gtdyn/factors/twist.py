"""Twist (eq. 4) and twist-acceleration (eq. 5) factors of one joint: ``twist_equation`` and
``twist_accel_equation`` of ``gtdyn.equations`` evaluated at the current q (and V_c, q̇).

Their coefficient of the parent's twist (acceleration) is −[Ad_cTp(q)], whose derivative in q is
``turned_by_joint``; eq. 5's right-hand side [ad_Vc] S q̇ = −[ad_S] V_c q̇ is bilinear in V_c and q̇.
"""

from __future__ import annotations

import gtsam

from gtdyn.equations import bias_acceleration, twist_accel_equation, twist_equation
from gtdyn.factors.base import (
    add,
    coefficient_jacobians,
    evaluate,
    fill,
    hard,
    present,
    scalar,
    turned_by_joint,
    vector,
)
from gtdyn.model.robot import Joint
from gtdyn.spatial import ad


class TwistFactor(gtsam.CustomFactor):
    """Eq. 4:  e = V_c − [Ad_cTp(q)] V_p − S q̇.  Keys: V_c, V_p, q, q̇ (V_c or V_p None: the fixed base)."""

    def __init__(self, joint: Joint, V_c: int | None, V_p: int | None, q: int, v: int):
        S = joint.screw_axis
        keys = present(V_c, V_p, q, v)
        roles = {"V_c": V_c, "V_p": V_p, "v": v}

        def twist_error(this, values, H):
            eq = twist_equation(joint.child_T_parent(scalar(values, q)), S)
            e, x = evaluate(eq, roles, values)
            if H is not None:
                jacobians = coefficient_jacobians(eq, roles)
                add(jacobians, q, turned_by_joint(S, eq.coefficients["V_p"] @ x["V_p"]))
                fill(H, keys, jacobians)
            return e

        super().__init__(hard(6), keys, twist_error)


class TwistAccelFactor(gtsam.CustomFactor):
    """Eq. 5:  e = V̇_c − [Ad_cTp(q)] V̇_p − S q̈ − [ad_Vc] S q̇.  Keys: V̇_c, V̇_p, q, q̇, q̈, V_c
    (V̇_c and V_c, or V̇_p, None: that end is the fixed base)."""

    def __init__(self, joint: Joint, A_c: int | None, A_p: int | None, q: int, v: int, a: int, V_c: int | None):
        S = joint.screw_axis
        keys = present(A_c, A_p, q, v, a, V_c)
        roles = {"A_c": A_c, "A_p": A_p, "a": a}

        def twist_accel_error(this, values, H):
            Vc, qd = vector(values, V_c), scalar(values, v)
            eq = twist_accel_equation(joint.child_T_parent(scalar(values, q)), S, Vc, qd)
            e, x = evaluate(eq, roles, values)
            if H is not None:
                jacobians = coefficient_jacobians(eq, roles)
                add(jacobians, q, turned_by_joint(S, eq.coefficients["A_p"] @ x["A_p"]))
                add(jacobians, v, -bias_acceleration(Vc, S, 1.0))  # e = … − rhs, rhs linear in q̇
                add(jacobians, V_c, ad(S) * qd)  # rhs = −[ad_S] V_c q̇
                fill(H, keys, jacobians)
            return e

        super().__init__(hard(6), keys, twist_accel_error)
