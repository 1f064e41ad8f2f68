"""Integrator factors (issue 13): one-step rules linking a joint's (q, q̇, q̈), or a floating base's (pose,
twist, acceleration), at time steps k and k+1.

Each equation integrates one level, x = q with ẋ = q̇ or x = q̇ with ẋ = q̈ (and likewise a base's twist from
its acceleration), by a weighted rule

    x_{k+1} − x_k − Δt (w_k ẋ_k + w_{k+1} ẋ_{k+1}) = 0,

with weights (1, 0) forward (explicit) Euler, (0, 1) backward Euler and (½, ½) the trapezoidal rule. A
scheme picks weights per level (``RULES``): semi-implicit Euler integrates q̇ forward and then q backward,
with the new velocity. The relations are exact, so the factors are hard constraints unless given a model.

A base's pose lives on SE(3): the rule acts on the local coordinates ξ of the step, pose_{k+1} = pose_k·Exp(ξ),
whose rate is ξ̇ = J_r(ξ)⁻¹ V (V the body twist; Munthe-Kaas, as ``gtdyn.simulate`` integrates it), so
ξ = Δt (w_k V_k + w_{k+1} J_r(ξ)⁻¹ V_{k+1}). Multiplied by J_r(ξ) (which leaves ξ itself unchanged) this is
``PoseIntegrationFactor``'s ξ − Δt (w_k J_r(ξ) V_k + w_{k+1} V_{k+1}) = 0, whose J_r is a power series with
an exact derivative.
"""

from __future__ import annotations

import math

import gtsam
import numpy as np

from gtdyn import keys as K
from gtdyn.arguments import choice, distinct_keys, noise_model, positive_number, whole_number
from gtdyn.errors import ArgumentError
from gtdyn.factors.base import fill, hard
from gtdyn.spatial import ad

WEIGHTS = {"explicit": (1.0, 0.0), "implicit": (0.0, 1.0), "trapezoidal": (0.5, 0.5)}
"""Weights (w_k, w_{k+1}) on the derivative of one level."""

RULES = {"euler": ("explicit", "explicit"),
         "semi_implicit_euler": ("implicit", "explicit"),
         "trapezoidal": ("trapezoidal", "trapezoidal")}
"""Per scheme, the weights of its position level (q from q̇) and of its velocity level (q̇ from q̈)."""


def _weights(weights) -> tuple[float, float]:
    if isinstance(weights, str):
        return WEIGHTS[choice("weights", weights, WEIGHTS)]
    try:
        w = tuple(float(x) for x in weights)
    except (TypeError, ValueError):
        w = ()
    if len(w) != 2 or not all(map(math.isfinite, w)) or w == (0.0, 0.0):
        raise ArgumentError(f"weights: expected one of {', '.join(WEIGHTS)} or two finite numbers (w_k, w_k+1) "
                            f"not both zero, got {weights!r}")
    return w


def _model(model, dim: int) -> gtsam.noiseModel.Base:
    return hard(dim) if model is None else noise_model("model", model, dim)


def _slopes(dx_k, dx_next, h: float, w_k: float, w_next: float) -> dict[int, float]:
    """derivative key → its coefficient −Δt w in the error; a derivative of weight zero is no key."""
    for name, key, w in (("dx_k", dx_k, w_k), ("dx_next", dx_next, w_next)):
        if w != 0.0 and key is None:
            raise ArgumentError(f"{name}: needed (its weight is {w:g}), got None")
    return {dx: -h * w for dx, w in ((dx_k, w_k), (dx_next, w_next)) if w != 0.0}


def _distinct(keys: list[int]) -> list[int]:
    return distinct_keys("keys", keys)


class IntegrationFactor(gtsam.CustomFactor):
    """e = x_{k+1} − x_k − Δt (w_k ẋ_k + w_{k+1} ẋ_{k+1}).  Keys: x_k, x_{k+1}, then ẋ_k and ẋ_{k+1} where
    their weight is nonzero (a derivative with weight zero is not a key and may be given as None). x is a
    joint scalar or a vector (a base's twist, ẋ its acceleration), of ``keys.dim(x_k)`` entries.

    ``weights``: "explicit" (1, 0), "implicit" (0, 1), "trapezoidal" (½, ½) or a pair of numbers. ``model``:
    a noise model of that dimension, default a hard constraint."""

    def __init__(self, x_k: int, dx_k: int | None, x_next: int, dx_next: int | None, dt: float,
                 weights="explicit", model: gtsam.noiseModel.Base | None = None):
        h = positive_number("dt", dt)
        w_k, w_next = _weights(weights)
        slopes = _slopes(dx_k, dx_next, h, w_k, w_next)
        keys = _distinct([x_k, x_next, *slopes])
        dim = K.dim(x_k)
        eye = np.eye(dim)
        J = {x_k: -eye, x_next: eye, **{dx: c * eye for dx, c in slopes.items()}}
        self.dt, self.weights = h, (w_k, w_next)

        def integration_error(this, values, H):
            e = values.atVector(x_next) - values.atVector(x_k)
            e = e + sum(c * values.atVector(dx) for dx, c in slopes.items())
            if H is not None:
                fill(H, keys, J)
            return e

        super().__init__(_model(model, dim), keys, integration_error)


def right_jacobian(xi: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(J_r(ξ), ∂(J_r(ξ) u)/∂ξ) on SE(3), from the series J_r(ξ) = Σ_n c_n [ad_ξ]ⁿ, c_n = (−1)ⁿ/(n+1)! (the
    right Jacobian of Exp, ``gtsam.Pose3.ExpmapDerivative``), summed until its terms fall below round-off.

    The derivative of [ad_ξ]ⁿ u in direction δ is Σ_{i<n} [ad_ξ]^i [ad_δ] [ad_ξ]^{n−1−i} u, and [ad_δ] w = −[ad_w] δ,
    so ∂(J_r u)/∂ξ = −Σ_i [ad_ξ]^i [ad_{z_i}] with z_i = Σ_m c_{i+m+1} [ad_ξ]^m u."""
    A = ad(xi)
    r = np.linalg.norm(A)  # Frobenius: bounds every power's growth
    terms = 1
    while terms < 80 and r ** terms / math.factorial(terms + 1) > 1e-18 * max(1.0, math.exp(r)):
        terms += 1
    c = [(-1) ** n / math.factorial(n + 1) for n in range(terms + 1)]
    powers, w = [np.eye(6)], [np.asarray(u, float)]
    for _ in range(terms):
        powers.append(A @ powers[-1])
        w.append(A @ w[-1])
    J = sum(cn * P for cn, P in zip(c, powers, strict=True))
    D = np.zeros((6, 6))
    for i in range(terms):
        z = sum(c[i + m + 1] * w[m] for m in range(terms - i))
        D -= powers[i] @ ad(z)
    return J, D


class PoseIntegrationFactor(gtsam.CustomFactor):
    """e = ξ − Δt (w_k J_r(ξ) V_k + w_{k+1} V_{k+1}),  ξ = Log(T_k⁻¹ T_{k+1}): a body's pose integrated from its
    body twist on SE(3) (see the module's notes). Keys: T_k, T_{k+1}, then V_k and V_{k+1} where their weight is
    nonzero. ``weights`` and ``model`` as for ``IntegrationFactor`` (a 6-dimensional model).

    With E = T_k⁻¹ T_{k+1}: ∂ξ/∂T_{k+1} = J_r(ξ)⁻¹ and ∂ξ/∂T_k = −J_r(ξ)⁻¹ Ad(E⁻¹) (poses perturbed as T·Exp(δ)).
    """

    def __init__(self, T_k: int, V_k: int | None, T_next: int, V_next: int | None, dt: float,
                 weights="explicit", model: gtsam.noiseModel.Base | None = None):
        h = positive_number("dt", dt)
        w_k, w_next = _weights(weights)
        slopes = _slopes(V_k, V_next, h, w_k, w_next)
        keys = _distinct([T_k, T_next, *slopes])
        self.dt, self.weights = h, (w_k, w_next)

        def pose_integration_error(this, values, H):
            E = values.atPose3(T_k).between(values.atPose3(T_next))
            xi = gtsam.Pose3.Logmap(E)
            J_r, D = right_jacobian(xi, values.atVector(V_k)) if V_k in slopes else (np.eye(6), np.zeros((6, 6)))
            e = xi.copy()
            if V_k in slopes:
                e += slopes[V_k] * J_r @ values.atVector(V_k)
            if V_next in slopes:
                e += slopes[V_next] * values.atVector(V_next)
            if H is not None:
                de_dxi = np.eye(6) + slopes.get(V_k, 0.0) * D
                Jr_inv = gtsam.Pose3.LogmapDerivative(xi)
                jacobians = {T_next: de_dxi @ Jr_inv, T_k: -de_dxi @ Jr_inv @ E.inverse().AdjointMap()}
                if V_k in slopes:
                    jacobians[V_k] = slopes[V_k] * J_r
                if V_next in slopes:
                    jacobians[V_next] = slopes[V_next] * np.eye(6)
                fill(H, keys, jacobians)
            return e

        super().__init__(_model(model, 6), keys, pose_integration_error)


def _at_steps(key_fns, index: int, k: int, name: str) -> list[list[int]]:
    """Per key function, [key at k, key at k + 1] of link or joint ``index``; ArgumentError beyond what keys hold."""
    try:
        out = [[K.at_step(key(index), s) for s in (k, k + 1)] for key in key_fns]
    except (ValueError, OverflowError) as e:  # a step or index beyond what a key can hold
        raise ArgumentError(f"k: cannot key {name} {index} at steps {k} and {k} + 1 ({e})") from None
    if (K.index(out[0][1]), K.step(out[0][1])) != (index, k + 1):
        raise ArgumentError(f"{name}_index: {index} is beyond what a time-step key can hold")
    return out


def integration_factors(joint_index: int, k: int, dt: float, rule: str = "semi_implicit_euler",
                        model: gtsam.noiseModel.Base | None = None) -> list[IntegrationFactor]:
    """The position-level (q from q̇) and velocity-level (q̇ from q̈) factors of joint j between time steps k and
    k+1 under ``rule``: "euler" (explicit), "semi_implicit_euler" or "trapezoidal"."""
    position, velocity = RULES[choice("rule", rule, RULES)]
    j, k = whole_number("joint_index", joint_index, 1), whole_number("k", k)
    q, v, a = _at_steps((K.joint_angle_key, K.joint_vel_key, K.joint_accel_key), j, k, "joint")
    return [IntegrationFactor(q[0], v[0], q[1], v[1], dt, position, model),
            IntegrationFactor(v[0], a[0], v[1], a[1], dt, velocity, model)]


def base_integration_factors(k: int, dt: float, rule: str = "semi_implicit_euler",
                             model: gtsam.noiseModel.Base | None = None) -> list[gtsam.CustomFactor]:
    """A floating base's (body 0's) pose-level (pose from twist, on SE(3)) and twist-level (twist from
    acceleration) factors between time steps k and k+1 under ``rule``, as ``integration_factors`` for a joint.
    The pose, twist and acceleration are those of the base's dynamics (CoM) frame."""
    position, velocity = RULES[choice("rule", rule, RULES)]
    k = whole_number("k", k)
    T, V, A = _at_steps((K.pose_key, K.twist_key, K.twist_accel_key), 0, k, "link")
    return [PoseIntegrationFactor(T[0], V[0], T[1], V[1], dt, position, model),
            IntegrationFactor(V[0], A[0], V[1], A[1], dt, velocity, model)]
