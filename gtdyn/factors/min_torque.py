"""Minimum-norm factor (paper 001 §VII): ``minimum_norm_equation`` of ``gtdyn.equations``, a soft x = 0 that picks
the least-norm torques of a redundantly actuated mechanism (or the least-norm contact forces of a robot standing
on more contacts than its motion determines) from the hard dynamics constraints."""

from __future__ import annotations

import gtsam

from gtdyn import keys as K
from gtdyn.arguments import positive_number
from gtdyn.equations import minimum_norm_equation
from gtdyn.factors.base import constant_equation_error


class MinTorqueFactor(gtsam.CustomFactor):
    """e = x with standard deviation ``sigma`` (a soft factor: combine with hard constraints and constrained
    elimination). Key: x — a torque τ_j, or any vector variable (a contact force, of ``keys.dim`` entries)."""

    def __init__(self, tau: int, sigma: float = 1.0):
        error = constant_equation_error(minimum_norm_equation(K.dim(tau)), {"x": tau}, [tau], "minimum_norm_error")
        super().__init__(gtsam.noiseModel.Isotropic.Sigma(K.dim(tau), positive_number("sigma", sigma)), [tau], error)
