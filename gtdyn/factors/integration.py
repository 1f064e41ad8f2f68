"""Integrator factors (issue 13): one-step rules linking a joint's (q, q̇, q̈) at time steps k and k+1.

Each equation integrates one level, x = q with ẋ = q̇ or x = q̇ with ẋ = q̈, by a weighted rule

    x_{k+1} − x_k − Δt (w_k ẋ_k + w_{k+1} ẋ_{k+1}) = 0,

with weights (1, 0) forward (explicit) Euler, (0, 1) backward Euler and (½, ½) the trapezoidal rule. A
scheme picks weights per level (``RULES``): semi-implicit Euler integrates q̇ forward and then q backward,
with the new velocity. The relations are exact, so the factors are hard constraints unless given a model.
"""

from __future__ import annotations

import math
import numbers

import gtsam
import numpy as np

from gtdyn import keys as K
from gtdyn.errors import ArgumentError
from gtdyn.factors.base import fill, hard, scalar

WEIGHTS = {"explicit": (1.0, 0.0), "implicit": (0.0, 1.0), "trapezoidal": (0.5, 0.5)}
"""Weights (w_k, w_{k+1}) on the derivative of one level."""

RULES = {"euler": ("explicit", "explicit"),
         "semi_implicit_euler": ("implicit", "explicit"),
         "trapezoidal": ("trapezoidal", "trapezoidal")}
"""Per scheme, the weights of its position level (q from q̇) and of its velocity level (q̇ from q̈)."""


def _time_step(dt) -> float:
    if isinstance(dt, bool) or not isinstance(dt, numbers.Real) or not math.isfinite(dt) or dt <= 0:
        raise ArgumentError(f"dt: expected a finite time step > 0, got {dt!r}")
    return float(dt)


def _weights(weights) -> tuple[float, float]:
    if isinstance(weights, str):
        if weights not in WEIGHTS:
            raise ArgumentError(f"weights: '{weights}' is not one of {', '.join(WEIGHTS)}")
        return WEIGHTS[weights]
    try:
        w = tuple(float(x) for x in weights)
    except (TypeError, ValueError):
        w = ()
    if len(w) != 2 or not all(map(math.isfinite, w)) or w == (0.0, 0.0):
        raise ArgumentError(f"weights: expected one of {', '.join(WEIGHTS)} or two finite numbers (w_k, w_k+1) "
                            f"not both zero, got {weights!r}")
    return w


def _model(model) -> gtsam.noiseModel.Base:
    if model is None:
        return hard(1)
    if not isinstance(model, gtsam.noiseModel.Base) or model.dim() != 1:
        raise ArgumentError(f"model: expected a 1-dimensional gtsam noise model, got {model!r}")
    return model


class IntegrationFactor(gtsam.CustomFactor):
    """e = x_{k+1} − x_k − Δt (w_k ẋ_k + w_{k+1} ẋ_{k+1}).  Keys: x_k, x_{k+1}, then ẋ_k and ẋ_{k+1} where
    their weight is nonzero (a derivative with weight zero is not a key and may be given as None).

    ``weights``: "explicit" (1, 0), "implicit" (0, 1), "trapezoidal" (½, ½) or a pair of numbers. ``model``:
    a 1-dimensional noise model, default a hard constraint."""

    def __init__(self, x_k: int, dx_k: int | None, x_next: int, dx_next: int | None, dt: float,
                 weights="explicit", model: gtsam.noiseModel.Base | None = None):
        h = _time_step(dt)
        w_k, w_next = _weights(weights)
        for name, key, w in (("dx_k", dx_k, w_k), ("dx_next", dx_next, w_next)):
            if w != 0.0 and key is None:
                raise ArgumentError(f"{name}: needed (its weight is {w:g}), got None")
        slopes = {dx: -h * w for dx, w in ((dx_k, w_k), (dx_next, w_next)) if w != 0.0}
        keys = [x_k, x_next, *slopes]
        if len(set(keys)) != len(keys):
            raise ArgumentError(f"keys: expected distinct variables, got {', '.join(map(K.label, keys))}")
        J = {x_k: -np.ones((1, 1)), x_next: np.ones((1, 1)), **{dx: np.full((1, 1), c) for dx, c in slopes.items()}}
        self.dt, self.weights = h, (w_k, w_next)

        def error(this, values, H):
            e = scalar(values, x_next) - scalar(values, x_k) + sum(c * scalar(values, dx) for dx, c in slopes.items())
            if H is not None:
                fill(H, keys, J)
            return np.array([e])

        super().__init__(_model(model), keys, error)


def integration_factors(joint_index: int, k: int, dt: float, rule: str = "semi_implicit_euler",
                        model: gtsam.noiseModel.Base | None = None) -> list[IntegrationFactor]:
    """The position-level (q from q̇) and velocity-level (q̇ from q̈) factors of joint j between time steps k and
    k+1 under ``rule``: "euler" (explicit), "semi_implicit_euler" or "trapezoidal"."""
    if not isinstance(rule, str) or rule not in RULES:
        raise ArgumentError(f"rule: {rule!r} is not one of {', '.join(RULES)}")
    if isinstance(joint_index, bool) or not isinstance(joint_index, numbers.Integral) or joint_index < 1:
        raise ArgumentError(f"joint_index: expected a joint index ≥ 1, got {joint_index!r}")
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 0:
        raise ArgumentError(f"k: expected a time step ≥ 0, got {k!r}")
    try:
        q, v, a = ([K.at_step(key(int(joint_index)), s) for s in (int(k), int(k) + 1)]
                   for key in (K.joint_angle_key, K.joint_vel_key, K.joint_accel_key))
    except (ValueError, OverflowError) as e:  # a step or index beyond what a key can hold
        raise ArgumentError(f"k: cannot key joint {joint_index} at steps {k} and {k} + 1 ({e})") from None
    if (K.index(q[1]), K.step(q[1])) != (joint_index, k + 1):
        raise ArgumentError(f"joint_index: {joint_index} is beyond what a time-step key can hold")
    position, velocity = RULES[rule]
    return [IntegrationFactor(q[0], v[0], q[1], v[1], dt, position, model),
            IntegrationFactor(v[0], a[0], v[1], a[1], dt, velocity, model)]
