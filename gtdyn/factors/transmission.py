"""Transmission factor: ``transmission_equation`` of ``gtdyn.equations`` — a joint driven through a
transmission, q_dependent = Σ_k ratio_k q_k + offset, at the position, velocity or acceleration level."""

from __future__ import annotations

import gtsam

from gtdyn.equations import LinearEquation, transmission_equation
from gtdyn.factors.base import constant_equation_error, hard
from gtdyn.model.robot import Transmission


class TransmissionFactor(gtsam.CustomFactor):
    """e = x_dependent − Σ_k ratio_k x_k − offset.  Keys: x_dependent, then x_k per drive, where x is q (with the
    transmission's offset), q̇ or q̈ (``offset`` 0: the relation is linear, so its rates obey it with no
    velocity term)."""

    def __init__(self, transmission: Transmission, dependent: int, drives: list[int], offset: float = 0.0):
        linear = transmission_equation(tuple(ratio for _, ratio in transmission.terms))
        eq = LinearEquation(linear.coefficients, linear.rhs + offset)
        roles = {"a": dependent, **{f"a{k}": key for k, key in enumerate(drives)}}
        keys = [dependent, *drives]
        super().__init__(hard(1), keys, constant_equation_error(eq, roles, keys, "transmission_error"))
