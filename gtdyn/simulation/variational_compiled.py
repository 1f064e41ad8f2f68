"""The variational integrator with its residual and Legendre transform compiled (``gtdyn.compiled.drnea``): the
same RIQN iteration, tolerances and state as ``VariationalIntegrator``, for trees on a fixed base. The DRNEA
passes, which cost a millisecond a step in Python, run in native code; the loop around them stays here."""

from __future__ import annotations

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
    """``VariationalIntegrator`` on a fixed base, stepping with compiled DRNEA. Its state keeps q, q̇, τ, Δt (and
    ``t``); the momenta, weights and impulse live in the compiled code's workspace."""

    def __init__(self, robot: Robot, gravity, mass_inverse):
        super().__init__(robot, gravity, mass_inverse)
        if robot.floating_base:  # the stepper keeps the Python integrator there
            raise ValueError("CompiledVariationalIntegrator: the compiled variational integrator covers fixed bases")
        self.compiled = CompiledDEL(robot, self.gravity)

    def start(self, q0, v0, tau0, dt: float, T0=None, V0=None) -> dict:
        state = super().start(q0, v0, tau0, dt)
        c, links = self.compiled, self.robot.links
        c.dt[0] = dt
        c.momentum[:] = np.concatenate([state["momentum"][link.index] for link in links])
        c.weight[:] = np.concatenate([state["weight"][link.index] for link in links])
        c.impulse[:] = state["impulse"]
        return {"q": state["q"], "v": state["v"], "tau": state["tau"], "dt": dt}

    def step(self, state: dict, tau_next_of) -> tuple[dict, int]:
        """As ``VariationalIntegrator.step``: u_{k+1} by RIQN from q_k + Δt q̇_k, then the Legendre transform."""
        c, dt, q = self.compiled, state["dt"], state["q"]
        c.q[:] = q
        c.u[:] = q + dt * state["v"]
        scale = max(1.0, float(np.abs(c.impulse).max(initial=0.0)), float(np.abs(c.momentum).max()))
        iteration = self.iterate(q, dt, scale)
        if iteration is None:
            not_converged(state, float(np.abs(c.e).max()))
        self.iterations.append(iteration)
        u = c.u.copy()  # q_{k+1}; the momenta carried are the last residual's, as in the Python step
        c.tau[:] = state["tau"]
        c.finish()
        v_next = self.mass_inverse(u, c.p)
        tau_next = np.asarray(tau_next_of(u, v_next), float)
        c.momentum[:] = c.momentum_next
        c.weight[:] = c.weight_next
        c.impulse[:] = dt / 2 * state["tau"] + dt / 2 * tau_next
        return {"q": u, "v": v_next, "tau": tau_next, "dt": dt}, iteration

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
