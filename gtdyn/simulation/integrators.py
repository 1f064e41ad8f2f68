"""One step of the classical integrators of ẋ = r(x, y), ẏ = a(t, x, y): positions x and velocities y, with
a from forward dynamics and r the rate of the positions — y itself for joints; for a floating base in local
coordinates ξ around its pose at the step's start (pose = pose_k · Exp(ξ)), ξ̇ = dexp⁻¹ of its twist, which
keeps Runge–Kutta's order on SE(3) (Munthe-Kaas). Each returns (x_{k+1}, y_{k+1}, a_k); ``a``, when given, is
a_k already evaluated (a stepper's sample at the step's start), so the step does not ask for it again."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gtdyn.errors import ArgumentError

Accel = Callable[[float, np.ndarray, np.ndarray], np.ndarray]
Rate = Callable[[np.ndarray, np.ndarray], np.ndarray] | None  # None: ẋ = y
TRAPEZOIDAL_TOLERANCE = 1e-13  # relative change of y_{k+1} between fixed-point iterations
TRAPEZOIDAL_ITERATIONS = 100


def _rate(rate: Rate, x, y):
    return y if rate is None else rate(x, y)


def euler(accel: Accel, t: float, x, y, dt: float, rate: Rate = None, a=None):
    """Explicit Euler: x_{k+1} = x_k + Δt r(x_k, y_k), y_{k+1} = y_k + Δt a_k (first order)."""
    a = accel(t, x, y) if a is None else a
    return x + dt * _rate(rate, x, y), y + dt * a, a


def semi_implicit_euler(accel: Accel, t: float, x, y, dt: float, rate: Rate = None, a=None):
    """Semi-implicit Euler: y_{k+1} = y_k + Δt a_k, then x_{k+1} = x_k + Δt r(x_k, y_{k+1}) (first order;
    symplectic only where the mass matrix is constant — on an arm its energy drifts, unlike the variational
    integrator's)."""
    a = accel(t, x, y) if a is None else a
    y_next = y + dt * a
    return x + dt * _rate(rate, x, y_next), y_next, a


def rk4(accel: Accel, t: float, x, y, dt: float, rate: Rate = None, a=None):
    """The classical fourth-order Runge–Kutta method on (x, y)."""
    a1, r1 = (accel(t, x, y) if a is None else a), _rate(rate, x, y)
    x2, y2 = x + dt / 2 * r1, y + dt / 2 * a1
    a2, r2 = accel(t + dt / 2, x2, y2), _rate(rate, x2, y2)
    x3, y3 = x + dt / 2 * r2, y + dt / 2 * a2
    a3, r3 = accel(t + dt / 2, x3, y3), _rate(rate, x3, y3)
    x4, y4 = x + dt * r3, y + dt * a3
    a4, r4 = accel(t + dt, x4, y4), _rate(rate, x4, y4)
    return x + dt / 6 * (r1 + 2 * r2 + 2 * r3 + r4), y + dt / 6 * (a1 + 2 * a2 + 2 * a3 + a4), a1


def trapezoidal(accel: Accel, t: float, x, y, dt: float, rate: Rate = None, a=None):
    """The trapezoidal rule (implicit, second order): x_{k+1} = x_k + Δt/2 (r_k + r_{k+1}),
    y_{k+1} = y_k + Δt/2 (a_k + a_{k+1}), solved by fixed-point iteration from the semi-implicit Euler step."""
    a, r = (accel(t, x, y) if a is None else a), _rate(rate, x, y)
    y_next = y + dt * a
    x_next = x + dt / 2 * (r + _rate(rate, x, y_next))
    for _ in range(TRAPEZOIDAL_ITERATIONS):
        y_new = y + dt / 2 * (a + accel(t + dt, x_next, y_next))
        x_next = x + dt / 2 * (r + _rate(rate, x_next, y_new))
        change = np.max(np.abs(y_new - y_next), initial=0.0)
        y_next = y_new
        if change <= TRAPEZOIDAL_TOLERANCE * (1.0 + np.max(np.abs(y_next), initial=0.0)):
            return x_next, y_next, a
    raise ArgumentError(f"dt: the trapezoidal rule's iteration did not converge at t = {t:g} s; take a smaller step")


STEPS = {"euler": euler, "semi_implicit_euler": semi_implicit_euler, "rk4": rk4, "trapezoidal": trapezoidal}
