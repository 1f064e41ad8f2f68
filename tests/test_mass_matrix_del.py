"""The baseline of paper 004's comparison (``benchmarks.mass_matrix_del``: the midpoint DEL equations in generalized
coordinates, compiled) against references it does not share code with: gtdyn's mass matrix and potential energy
(the reference path), central differences of the discrete action, and the DRNEA integrator's trajectories."""

import numpy as np
import pytest

import gtdyn
from gtdyn.model.random import serial_chain
from gtdyn.simulation.variational_compiled import CompiledVariationalIntegrator
from gtdyn.simulation.variational_stepper import _mass_inverse

GRAVITY = np.array([0.0, 0.0, -9.81])


@pytest.fixture(scope="module")
def chain():
    return serial_chain(3, seed=7)


@pytest.fixture(scope="module")
def baseline(chain):
    """The compiled baseline of the chain under gravity (benchmarks/ is importable from the project's root, as
    ``python -m pytest`` runs: imported here, not at collection)."""
    from benchmarks.mass_matrix_del import MassMatrixDEL

    return MassMatrixDEL(chain, GRAVITY)


def test_the_momentum_is_the_mass_matrix_times_the_velocity(chain, baseline):
    rng = np.random.default_rng(1)
    for _ in range(5):
        q, v = rng.uniform(-np.pi, np.pi, 3), rng.uniform(-2, 2, 3)
        _, momentum = baseline.derivatives(q, v)
        expected = gtdyn.mass_matrix(chain, q) @ v
        # both sum a few products of O(1) numbers over three links (round-off ~1e-15 relative); 1e-12 leaves
        # room for the reference's separate RNEA solves, and any modelling slip would be O(1)
        assert np.allclose(momentum, expected, rtol=0, atol=1e-12 * np.max(np.abs(expected)))


def discrete_lagrangian(robot, a, b, dt):
    """L_d(a, b) = Δt L((a + b)/2, (b − a)/Δt), L = ½ q̇ᵀ M q̇ − P, from gtdyn's reference path."""
    q, v = (a + b) / 2, (b - a) / dt
    return dt * (0.5 * v @ gtdyn.mass_matrix(robot, q) @ v - gtdyn.potential_energy(robot, q, gravity=GRAVITY))


def test_the_residual_is_the_gradient_of_the_discrete_action(chain, baseline):
    """e = −(D2 L_d(q_{k−1}, q_k) + D1 L_d(q_k, q_{k+1})) − impulse, the momentum p_k = D2 L_d(q_{k−1}, q_k) carried
    from the residual one step before, against central differences of L_d(q_{k−1}, q_k) + L_d(q_k, q_{k+1})."""
    rng = np.random.default_rng(2)
    dt = 0.05
    before, now, after = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)
    baseline.dt[0] = dt
    baseline.q[:], baseline.u[:] = before, now
    baseline.residual()
    impulse = rng.uniform(-1, 1, 3)
    baseline.momentum[:], baseline.impulse[:] = baseline.carried, impulse
    baseline.q[:], baseline.u[:] = now, after
    largest = baseline.residual()

    def action(q):
        return discrete_lagrangian(chain, before, q, dt) + discrete_lagrangian(chain, q, after, dt)

    h = 1e-3
    gradient = np.array([(-action(now + 2 * h * d) + 8 * action(now + h * d) - 8 * action(now - h * d)
                          + action(now - 2 * h * d)) / (12 * h) for d in np.eye(3)])
    expected = -gradient - impulse
    # the fourth-order stencil's truncation, h⁴/30 · ∂⁵S (S's derivatives ~ M/Δt ~ 1e2), is ~1e-12 · 1e2, its
    # round-off ~ 1e-16 · |S| / h with |S| ~ 20: both ~1e-13 of the gradient's scale (~30 here); 1e-10 is far above
    # them and far below the error of a wrong term (a missing (Δt/2) ∂L/∂q is ~1 here, 3e-2 of the scale)
    assert np.allclose(baseline.e, expected, rtol=0, atol=1e-10 * np.max(np.abs(expected)))
    assert largest == np.max(np.abs(baseline.e))


def trajectory(integrator, q0, v0, torque, dt, duration):
    """q every 2 ms over ``duration`` (held torques from ``torque(q, v)``)."""
    state = integrator.start(q0, v0, torque(q0, v0), dt)
    every = round(2e-3 / dt)
    samples = [state["q"]]
    for k in range(1, round(duration / dt) + 1):
        state, _ = integrator.step(state, torque)
        if k % every == 0:
            samples.append(state["q"])
    return np.array(samples)


def test_it_converges_to_the_drnea_integrators_trajectory_at_second_order(chain):
    """Midpoint DEL in generalized coordinates and DRNEA's trapezoidal DEL on SE(3) are different second-order
    variational integrators of the same motion: their trajectories differ by O(Δt²), a quarter as much when Δt
    halves. A forcing term off by one half-step (an impulse convention that is not the integrator's) or a wrong
    Legendre transform would leave an O(Δt) difference, which halves instead."""
    from benchmarks.mass_matrix_del import MassMatrixIntegrator

    mass_inverse = _mass_inverse(chain)
    baseline = MassMatrixIntegrator(chain, GRAVITY, mass_inverse)
    drnea = CompiledVariationalIntegrator(chain, GRAVITY, mass_inverse)
    q0, v0 = np.array([0.4, -0.3, 0.2]), np.array([1.0, -0.5, 0.8])

    def torque(q, v):  # state-dependent, so that the held torques' timing matters
        return np.array([1.0, -0.5, 0.3]) - 0.5 * v

    differences = [np.max(np.abs(trajectory(baseline, q0, v0, torque, dt, 0.2)
                                 - trajectory(drnea, q0, v0, torque, dt, 0.2)))
                   for dt in (2e-3, 1e-3, 5e-4)]
    ratios = np.array(differences[:-1]) / np.array(differences[1:])
    # 4 (1 + O(Δt)), the O(Δt) part well under a per cent at these steps; a first-order mismatch gives 2, a
    # different system 1
    assert np.all(np.abs(ratios - 4) < 0.2), (differences, ratios)
