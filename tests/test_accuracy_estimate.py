"""``DynamicsResult.error_estimate()`` (issue 25, item 1): the relative error rounding leaves in the asked
quantities, where κ speaks only for the equations as a whole.

A long uniform chain is the issue's case: κ stays near 4e5 at every length, yet the q̈ of a forward solve at a
random state lose digits as the chain grows (in every ordering, and in Pinocchio), because they are small beside
the wrenches at the chain's base. The truth is known exactly: the q̈ put into inverse dynamics, whose τ are
accurate to ~1e-15 (their own estimate says so). ``python benchmarks/verify_long_chains.py`` runs the lengths up
to 2,000 links."""

import numpy as np
import pytest
from references import rel_err

import gtdyn
from gtdyn.model.build import build_robot
from gtdyn.model.random import uniform_chain_description

pytestmark = pytest.mark.usefixtures("private_cache")

# An estimate, not a bound: on chains of 25–2,000 links it read 0.65–6.3× the worst ordering's error
# (benchmarks/results/verify_long_chains.md); a factor of ten either way is what it claims.
FACTOR = 10.0


def round_trip(robot, seed=0):
    rng = np.random.default_rng(seed)
    n = robot.num_dofs
    q, v, qdd = rng.uniform(-1, 1, (3, n))
    return q, v, qdd, gtdyn.inverse_dynamics(robot, q, v, qdd)


def test_a_long_chain_says_how_few_digits_its_accelerations_keep():
    robot = build_robot(uniform_chain_description(200))
    q, v, qdd, inverse = round_trip(robot)
    assert inverse.error_estimate() < 1e-13  # τ = M q̈ + h: the torques keep their digits
    estimates = []
    for ordering in ("aba", "crba", "colamd"):
        forward = gtdyn.forward_dynamics(robot, q, v, inverse.tau, ordering=ordering)
        error, estimate = rel_err(forward.qdd, qdd), forward.error_estimate()
        assert error > 1e-9  # the case: digits really are lost...
        assert forward.condition < 1e6  # ...while κ sees a well-conditioned system
        assert error / FACTOR < estimate < error * FACTOR, (ordering, error, estimate)
        estimates.append(estimate)
    # one matrix A⁺ whatever the ordering: the same estimate, to rounding
    assert max(estimates) / min(estimates) < 1 + 1e-6


@pytest.mark.parametrize("name", ["puma560", "rrr"])
def test_ordinary_robots_keep_their_digits(name):
    robot = gtdyn.load_robot(name)
    for seed in range(3):
        q, v, qdd, inverse = round_trip(robot, seed)
        forward = gtdyn.forward_dynamics(robot, q, v, inverse.tau)
        assert forward.error_estimate() < 1e-12 and inverse.error_estimate() < 1e-12
        assert rel_err(forward.qdd, qdd) < FACTOR * max(forward.error_estimate(), 1e-15)


def test_an_exact_equilibrium_is_not_judged():
    """The four-bar held at rest by its gravity torque: q̈ = 0 has no relative accuracy to speak of (zero beside
    its own rounding), so the estimate does not blame it (it read 5 before equilibria were set aside)."""
    robot = gtdyn.load_robot("four_bar")
    state = gtdyn.close_loops(robot, {"j1": 0.7}, {"j1": 0.0}, {"j1": 0.0}, guess=[0.7, -0.7, 0.7, 0.7])
    hold = gtdyn.inverse_dynamics(robot, state.q, state.v, state.qdd).tau
    result = gtdyn.forward_dynamics(robot, state.q, state.v, [hold[0], 0, 0, 0])
    assert np.max(np.abs(result.qdd)) < 1e-12
    assert result.error_estimate() < 1e-8


def test_compiled_solvers_give_the_estimate_of_their_state():
    """The compiled code solves the reference path's equations: its estimate is theirs, at the same inputs (a
    floating base's and external wrenches' included)."""
    robot = gtdyn.load_robot("puma560")
    solver = gtdyn.compile(robot, "forward", wrench_frames=["link6"])
    rng = np.random.default_rng(4)
    q, v, tau = rng.uniform(-1, 1, (3, 6))
    wrench = rng.uniform(-1, 1, 6)
    reference = gtdyn.forward_dynamics(robot, q, v, tau, ordering=solver.ordering,
                                       external_wrenches={"link6": wrench})
    assert solver.error_estimate(q, v, tau, external_wrenches={"link6": wrench}) == reference.error_estimate()
    assert reference.error_estimate() < 1e-12 and solver.fallbacks == 0
