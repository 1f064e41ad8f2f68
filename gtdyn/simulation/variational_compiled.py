"""The variational integrator with its residual and Legendre transform compiled (``gtdyn.compiled.drnea``): the
same RIQN iteration, tolerances and state as ``VariationalIntegrator``, for trees on a fixed or floating base. The
DRNEA passes, which cost a millisecond a step in Python, run in native code; the loop around them stays here."""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.compiled.drnea import CompiledDEL
from gtdyn.model.robot import Robot
from gtdyn.simulation.variational import (
    MAX_ITERATIONS,
    STEP_TOLERANCE,
    VariationalIntegrator,
    not_converged,
    settled,
)


class CompiledVariationalIntegrator(VariationalIntegrator):
    """``VariationalIntegrator`` stepping with compiled DRNEA. Its state keeps q, v, τ, Δt (and ``t``), and on a
    floating base T0 (its CoM frame's world pose) with v = [V0; q̇] as the Python integrator's; the momenta, weights
    and impulse live in the compiled code's workspace (T0 too, the state's ``gtsam.Pose3`` a copy)."""

    def __init__(self, robot: Robot, gravity, mass_inverse):
        super().__init__(robot, gravity, mass_inverse)
        self.compiled = CompiledDEL(robot, self.gravity)

    def start(self, q0, v0, tau0, dt: float, T0=None, V0=None) -> dict:
        state = super().start(q0, v0, tau0, dt, T0, V0)
        c = self.compiled
        c.dt[0] = dt
        c.momentum[:] = np.concatenate([state["momentum"][body.index] for body in self.bodies])
        c.weight[:] = np.concatenate([state["weight"][body.index] for body in self.bodies])
        c.impulse[:] = state["impulse"]
        out = {"q": state["q"], "v": state["v"], "tau": state["tau"], "dt": dt}
        if self.floating:
            c.T0[:] = [*state["T0"].rotation().matrix().ravel(), *state["T0"].translation()]
            out["T0"] = state["T0"]
        return out

    def step(self, state: dict, tau_next_of) -> tuple[dict, int]:
        """As ``VariationalIntegrator.step``: u_{k+1} by RIQN from u_k + Δt u̇_k, then the Legendre transform."""
        c, dt, q, v = self.compiled, state["dt"], state["q"], state["v"]
        c.q[:] = q
        c.u[:] = np.concatenate([dt * v[:6], q + dt * v[6:]]) if self.floating else q + dt * v
        scale = max(1.0, float(np.abs(c.impulse).max(initial=0.0)), float(np.abs(c.momentum).max()))
        iteration = self.iterate(q, dt, scale)
        if iteration is None:
            not_converged(state, float(np.abs(c.e).max()))
        self.iterations.append(iteration)
        _, q_next = self._split(c.u.copy())  # the momenta carried (and ΔT₀) are the last residual's, as in Python
        c.tau[:] = state["tau"]
        c.finish()
        v_next = self.mass_inverse(q_next, c.p)
        tau_next = np.asarray(tau_next_of(q_next, v_next[6:] if self.floating else v_next), float)
        c.momentum[:] = c.momentum_next
        c.weight[:] = c.weight_next
        c.impulse[:] = self._impulse(dt / 2 * state["tau"]) + self._impulse(dt / 2 * tau_next)
        out = {"q": q_next, "v": v_next, "tau": tau_next, "dt": dt}
        if self.floating:
            c.T0[:] = c.T0_next
            out["T0"] = gtsam.Pose3(gtsam.Rot3(c.T0[:9].reshape(3, 3)), c.T0[9:].copy())
        return out, iteration

    def iterate(self, q, dt: float, scale: float) -> int | None:
        """RIQN (paper 004's Algorithm 3) on the u in the workspace: u ← u − Δt M⁻¹(q_k) e until the residual has
        ``settled`` (``scale``: the momentum scale) or the step stops moving u; the iterations taken, None if
        ``MAX_ITERATIONS`` did not converge."""
        c, mass_inverse = self.compiled, self.mass_inverse
        previous = None
        for iteration in range(1, MAX_ITERATIONS + 1):
            largest = c.residual()
            if settled(largest, previous, scale):
                return iteration
            previous = largest
            largest_step, largest_u = c.update(mass_inverse(q, c.e))
            if largest_step <= STEP_TOLERANCE * (1.0 + largest_u):
                return iteration
        return None
