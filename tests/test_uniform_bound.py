"""A bound on the certificate's u proven at every state (``gtdyn.compiled.uniform_bound``): its intervals hold the
traced values at any input, ū is above the u each call's own pass computes (at random states and at angles far
outside the joint limits), and the plans it certifies leave u's pass out of ``main`` — inverse dynamics of the
PUMA and of a floating quadruped, and the mass matrix; a prismatic joint's offset within its limits, which the
call checks."""

import math

import numpy as np
import pytest
from references import random_states

import gtdyn
from gtdyn.compiled import trace
from gtdyn.compiled.certificate import A_PRIORI, BY_BOUND
from gtdyn.compiled.uniform_bound import _AngleMaxima, _trig_on_pieces, enclosures
from gtdyn.compiled.verdicts import _again
from gtdyn.model.random import random_robot

pytestmark = pytest.mark.usefixtures("private_cache")


def _expressions(q, t):
    """Expressions of the kinds the rows' coefficients take (rotations' products, lever arms, quotients by
    bounded pivots), written once for traced values and for numbers."""
    c, s = trace.cos(q), trace.sin(q)
    r = c * c - s * s  # cos 2q through its squares
    bounded = [c, s, r, 0.3 * c - 0.7 * s + 0.1, trace.div(s, 2.0 + c), trace.sqrt(1.0 + s * s),
               trace.fabs(s - c), -(c * 1e-300), trace.select(trace.le(s, t), c, 2.0 * s)]
    return bounded + [t * s, trace.div(c, t), trace.sqrt(1.0 + t * t)]


def test_the_intervals_hold_the_traced_values_at_any_input(rng):
    """Each expression's interval holds its value at inputs from 1e-3 to 1e6 (sin and cos, not q, reach it);
    one of an unbounded input, or divided by a value that may vanish, is unbounded."""
    fn = trace.Function("f", 1)
    q, t = fn.load(0, np.zeros(1)), fn.load(1, np.ones(1))
    traced = _expressions(q, t)
    found = enclosures(fn)
    bounds = [found[e.id] for e in traced]
    for low, high in bounds[:9]:
        assert math.isfinite(low) and math.isfinite(high)
    assert -1.0 - 1e-14 < bounds[2][0] <= -1.0 <= 1.0 <= bounds[2][1] < 1.0 + 1e-14  # squares are never negative
    assert bounds[9] == bounds[10] == (-math.inf, math.inf) and bounds[11][1] == math.inf  # t · sin q, cos q / t
    for scale in (1e-3, 1.0, 1e3, 1e6):
        for value_q, value_t in rng.uniform(-scale, scale, (50, 2)):
            for (low, high), value in zip(bounds, _expressions(value_q, value_t)):
                assert low <= value <= high


def test_the_terms_of_one_angle_peak_together():
    """|cos θ| + |sin θ| peaks at √2, which the sum of each term's own largest (2) overstates; taken jointly on the
    angle's pieces the bound is near √2, and cos² θ + sin² θ near 1. A term of another angle adds its own largest."""
    fn = trace.Function("f", 1)
    theta, phi = fn.load(0, np.zeros(1)), fn.load(1, np.zeros(1))
    c, s, other = trace.cos(theta), trace.sin(theta), trace.cos(phi)
    found = enclosures(fn)
    maxima = _AngleMaxima(fn, found)

    def largest(value):
        return max(abs(found[value.id][0]), abs(found[value.id][1]))

    assert math.sqrt(2.0) <= maxima.largest_sum([c, s], [1.0, 1.0], largest) < 1.55
    assert 1.0 <= maxima.largest_sum([c, s], [1.0, 1.0], largest, squares=True) < 1.15
    assert 3.0 * math.sqrt(2.0) <= maxima.largest_sum([c, other, s], [3.0, 2.0, 3.0], largest) - 2.0 < 3.0 * 1.55
    # a piece wider than π holds a peak and a trough: sin on [0, 5] reaches both −1 and 1, not sin 5 = −0.96
    assert [float(v[0]) for v in _trig_on_pieces("sin", np.array([0.0]), np.array([5.0]))] == [-1.0, 1.0]


def _bound_and_u(solver, ws):
    """ū as ``main`` stored it, and u as the call's own pass computes it (``measured``, on a copy)."""
    assert ws[solver._bounded] == A_PRIORI and ws[solver._status] == 1.0
    return ws[solver._status + 1], _again(solver, ws, "measured")[solver._status + 1]


@pytest.mark.parametrize("name", ["puma560", "quadruped"])
def test_the_bound_is_above_every_calls_own_u(name):
    """Inverse dynamics (RNEA) of the PUMA and of the floating quadruped (its base's block taken whole by u's
    pass): ū, the same at every call, is above u at random states and at angles of ±100 rad, and the answers are
    the reference path's."""
    robot = gtdyn.load_robot(name)
    solver = gtdyn.compile(robot, "inverse", lanes=False)
    assert "uniform_bound" in solver.code("main") and "solve_abs" not in solver.code("main")
    n = robot.num_dofs
    Q, V, X = random_states(n, 16, seed=31)
    Q = np.vstack([Q, np.random.default_rng(32).uniform(-100.0, 100.0, (16, n))])
    bounds, largest = set(), 0.0
    for q, v, x in zip(Q, V.repeat(2, 0), X.repeat(2, 0)):
        answer = solver(q, v, x)
        bound, u = _bound_and_u(solver, solver._ws)
        bounds.add(bound)
        assert 0.0 < u <= bound
        largest = max(largest, u)
        tau = answer[1] if robot.floating_base else answer
        assert np.allclose(tau, gtdyn.inverse_dynamics(robot, q, v, x).tau, rtol=1e-9, atol=1e-9)
    assert len(bounds) == 1 and largest > bound / 100  # one ū, and not far above what the calls reach
    assert solver.fallbacks == 0


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_the_bound_holds_on_random_trees(seed):
    """Seeded random trees (revolute and prismatic joints, off-diagonal inertias): wherever main certified with ū,
    ū is at or above the call's own u, at angles in ±π and ±100 rad and prismatic offsets across their ranges."""
    robot = random_robot(seed, 5, tree=True, prismatic=0.4)
    solver = gtdyn.compile(robot, "inverse", lanes=False)
    assert "uniform_bound" in solver.code("main")
    rng = np.random.default_rng(seed)
    prismatic = np.array([j.type == "prismatic" for j in robot.joints], dtype=bool)
    for reach in (np.pi, 100.0):
        for _ in range(10):
            q, v, x = rng.uniform(-reach, reach, 5), rng.uniform(-1, 1, 5), rng.uniform(-1, 1, 5)
            q[prismatic] = rng.uniform(robot.lower_limits[prismatic], robot.upper_limits[prismatic])
            solver(q, v, x)
            bound, u = _bound_and_u(solver, solver._ws)
            assert 0.0 < u <= bound


def test_the_mass_matrix_certifies_without_a_solve(puma):
    """At rest b = 0 by structure: the checked M runs no pass beyond the factors (its ``main`` is ``fast``'s size),
    equals the unchecked M bit for bit, and u stays under ū; a NaN angle still goes to the reference path."""
    mass = gtdyn.compile_mass_matrix(puma)
    unchecked = gtdyn.compile_mass_matrix(puma, checks=False)
    assert mass.operations["main"] <= mass.operations["fast"] + 2
    Q, _, _ = random_states(6, 8, seed=33)
    for q in Q:
        assert np.array_equal(mass(q), unchecked(q))
        np.testing.assert_allclose(mass(q), gtdyn.mass_matrix(puma, q), rtol=1e-12, atol=1e-12)
    assert mass.fallbacks == 0
    with pytest.raises(gtdyn.ArgumentError):
        mass(np.full(6, np.nan))


def test_prismatic_joints_are_bounded_by_their_limits_where_the_call_checks_them():
    """A prismatic joint's offset enters A's coefficients: ū holds within the joints' limits (±π here), which the
    call checks; a call beyond them measures u itself (``measured``), and either way answers as the reference path."""
    robot = random_robot(7, 4, tree=False, prismatic=1.0)
    assert {j.type for j in robot.joints} == {"prismatic"} and all(j.upper == np.pi for j in robot.joints)
    solver = gtdyn.compile(robot, "inverse", lanes=False)
    assert "uniform_bound" in solver.code("main")
    Q, V, X = random_states(4, 4, seed=34)
    for q, v, x, beyond in zip(Q, V, X, (False, True, False, True)):
        if beyond:
            q = q.copy()
            q[2] = 3.5
        tau = solver(q, v, x)
        if beyond:
            assert solver._ws[solver._bounded] == BY_BOUND  # measured's u certified it
        else:
            bound, u = _bound_and_u(solver, solver._ws)
            assert 0.0 < u <= bound
        np.testing.assert_allclose(tau, gtdyn.inverse_dynamics(robot, q, v, x).tau, rtol=1e-9, atol=1e-9)
    assert solver.fallbacks == 0
    fn = trace.Function("f", 1)
    offset = fn.load(0, np.zeros(1))
    lever = 2.0 * offset + 1.0
    assert enclosures(fn)[lever.id] == (-math.inf, math.inf)
    low, high = enclosures(fn, {0: (-0.5, 0.25)})[lever.id]
    assert low <= 0.0 < 1.5 <= high < 1.5 + 1e-14
