"""Contact factor: ``contact_equation`` of ``gtdyn.equations`` — a rigid contact holds its point's classical
acceleration (a point contact) or its frame's spatial acceleration (a surface contact) at zero."""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.equations import contact_equation
from gtdyn.factors.base import add, coefficient_jacobians, evaluate, fill, hard, vector
from gtdyn.spatial import Ad, skew


class ContactFactor(gtsam.CustomFactor):
    """A point contact:  e = [0 I] [Ad_cTi] V̇_i + ω_c × v_c,  with [ω_c; v_c] = [Ad_cTi] V_i; a surface contact:
    e = [Ad_cTi] V̇_i. Keys: V̇_i, then V_i for a point contact. ``iTc``: the contact frame in body i's CoM frame;
    ``dim``: 3 (point) or 6 (surface).

    The point contact's right-hand side −ω_c × v_c = [v_c] ω_c − [ω_c] v_c has ∂/∂V_c = [[v_c], −[ω_c]].
    """

    def __init__(self, iTc: gtsam.Pose3, dim: int, A: int, V: int | None = None):
        Ad_cTi = Ad(iTc.inverse())
        roles = {"A": A}
        keys = [A] if dim == 6 else [A, V]

        def contact_error(this, values, H):
            Vi = vector(values, V) if dim == 3 else np.zeros(6)
            eq = contact_equation(iTc, dim, Vi)
            e, _ = evaluate(eq, roles, values)
            if H is not None:
                jacobians = coefficient_jacobians(eq, roles)
                if dim == 3:
                    Vc = Ad_cTi @ Vi
                    add(jacobians, V, -np.hstack([skew(Vc[3:]), -skew(Vc[:3])]) @ Ad_cTi)  # e = … − rhs
                fill(H, keys, jacobians)
            return e

        super().__init__(hard(dim), keys, contact_error)
