"""Minimum-torque factor (paper 001 §VII): a soft τ = 0 that picks the least-norm torques of a redundantly
actuated mechanism from the hard dynamics constraints."""

from __future__ import annotations

import gtsam

from gtdyn.equations import minimum_torque_equation
from gtdyn.factors.base import error_function, scalar


class MinTorqueFactor(gtsam.CustomFactor):
    """τ = 0 with unit weight (a soft factor: combine with hard constraints and constrained elimination)."""

    def __init__(self, tau: int, sigma: float = 1.0):
        eq = minimum_torque_equation()
        keys = [tau]

        def evaluate(values):
            return eq.error({"tau": scalar(values, tau)}), {tau: eq.coefficients["tau"]}

        super().__init__(gtsam.noiseModel.Isotropic.Sigma(1, sigma), keys, error_function(keys, evaluate))
