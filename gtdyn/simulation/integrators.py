"""One step of the classical integrators, for q̈ = a(t, q, q̇) given by forward dynamics. Each returns
(q_{k+1}, q̇_{k+1}, q̈_k)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gtdyn.errors import ArgumentError

Accel = Callable[[float, np.ndarray, np.ndarray], np.ndarray]
TRAPEZOIDAL_TOLERANCE = 1e-13  # relative change of q̇_{k+1} between fixed-point iterations
TRAPEZOIDAL_ITERATIONS = 100


def euler(accel: Accel, t: float, q, v, dt: float):
    """Explicit Euler: q_{k+1} = q_k + Δt q̇_k, q̇_{k+1} = q̇_k + Δt q̈_k (first order)."""
    a = accel(t, q, v)
    return q + dt * v, v + dt * a, a


def semi_implicit_euler(accel: Accel, t: float, q, v, dt: float):
    """Semi-implicit (symplectic) Euler: q̇_{k+1} = q̇_k + Δt q̈_k, then q_{k+1} = q_k + Δt q̇_{k+1} (first order)."""
    a = accel(t, q, v)
    v_next = v + dt * a
    return q + dt * v_next, v_next, a


def rk4(accel: Accel, t: float, q, v, dt: float):
    """The classical fourth-order Runge–Kutta method on (q, q̇)."""
    a1 = accel(t, q, v)
    q2, v2 = q + dt / 2 * v, v + dt / 2 * a1
    a2 = accel(t + dt / 2, q2, v2)
    q3, v3 = q + dt / 2 * v2, v + dt / 2 * a2
    a3 = accel(t + dt / 2, q3, v3)
    q4, v4 = q + dt * v3, v + dt * a3
    a4 = accel(t + dt, q4, v4)
    return (q + dt / 6 * (v + 2 * v2 + 2 * v3 + v4), v + dt / 6 * (a1 + 2 * a2 + 2 * a3 + a4), a1)


def trapezoidal(accel: Accel, t: float, q, v, dt: float):
    """The trapezoidal rule (implicit, second order): q_{k+1} = q_k + Δt/2 (q̇_k + q̇_{k+1}),
    q̇_{k+1} = q̇_k + Δt/2 (q̈_k + q̈_{k+1}), solved by fixed-point iteration from the semi-implicit Euler step."""
    a = accel(t, q, v)
    v_next = v + dt * a
    q_next = q + dt / 2 * (v + v_next)
    for _ in range(TRAPEZOIDAL_ITERATIONS):
        v_new = v + dt / 2 * (a + accel(t + dt, q_next, v_next))
        q_next = q + dt / 2 * (v + v_new)
        change = np.max(np.abs(v_new - v_next), initial=0.0)
        v_next = v_new
        if change <= TRAPEZOIDAL_TOLERANCE * (1.0 + np.max(np.abs(v_next), initial=0.0)):
            return q_next, v_next, a
    raise ArgumentError(f"dt: the trapezoidal rule's iteration did not converge at t = {t:g} s; take a smaller step")


STEPS = {"euler": euler, "semi_implicit_euler": semi_implicit_euler, "rk4": rk4, "trapezoidal": trapezoidal}
