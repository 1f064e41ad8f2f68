"""Minimum-torque factor (paper 001 §VII): a soft τ = 0 that picks the least-norm torques of a redundantly
actuated mechanism from the hard dynamics constraints."""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.factors.base import scalar


class MinTorqueFactor(gtsam.CustomFactor):
    """e = τ with unit weight (a soft factor: combine with hard constraints and constrained elimination)."""

    def __init__(self, tau: int, sigma: float = 1.0):
        def error(this, values, H):
            if H is not None:
                H[0] = np.ones((1, 1))
            return np.array([scalar(values, tau)])

        super().__init__(gtsam.noiseModel.Isotropic.Sigma(1, sigma), [tau], error)
