"""Torque factor (eq. 7): the joint torque is the wrench projected on the screw axis."""

from __future__ import annotations

import gtsam

from gtdyn.equations import torque_equation
from gtdyn.factors.base import error_function, hard, scalar
from gtdyn.robot import Joint


class TorqueFactor(gtsam.CustomFactor):
    """Eq. 7:  Sᵀ F − τ = 0.  Keys: F, τ."""

    def __init__(self, joint: Joint, F: int, tau: int):
        eq = torque_equation(joint.screw_axis)
        keys = [F, tau]

        def evaluate(values):
            e = eq.error({"F": values.atVector(F), "tau": scalar(values, tau)})
            return e, {F: eq.coefficients["F"], tau: eq.coefficients["tau"]}

        super().__init__(hard(1), keys, error_function(keys, evaluate))
