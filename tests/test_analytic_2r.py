"""The planar 2R arm (urdf/rr.urdf) against hand-derived formulas.

With lc_i the CoM distances and I_i the inertias about the CoMs (joint axes along z), and gravity (0, −g, 0)
in the plane, the Lagrangian gives (e.g. Spong, Hutchinson & Vidyasagar §7.4):

    M11 = m1 lc1² + m2 (l1² + lc2² + 2 l1 lc2 cos q2) + I1 + I2
    M12 = m2 (lc2² + l1 lc2 cos q2) + I2
    M22 = m2 lc2² + I2
    h   = −m2 l1 lc2 sin q2 · [2 q̇1 q̇2 + q̇2², −q̇1²]        (Coriolis and centrifugal)
    g1  = (m1 lc1 + m2 l1) g cos q1 + m2 lc2 g cos(q1 + q2)
    g2  = m2 lc2 g cos(q1 + q2)

so τ = M q̈ + h + g. The numbers are those written in rr.urdf.
"""

import numpy as np

import gtdyn

m1, m2, l1, lc1, lc2, I1, I2, g = 2.0, 1.5, 1.0, 0.5, 0.35, 0.2, 0.1, 9.81
GRAVITY_IN_PLANE = (0.0, -g, 0.0)


def hand_derived_tau(q, v, a):
    c2, s2 = np.cos(q[1]), np.sin(q[1])
    M = np.array([
        [m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * c2) + I1 + I2, m2 * (lc2**2 + l1 * lc2 * c2) + I2],
        [m2 * (lc2**2 + l1 * lc2 * c2) + I2, m2 * lc2**2 + I2],
    ])
    h = -m2 * l1 * lc2 * s2 * np.array([2 * v[0] * v[1] + v[1] ** 2, -v[0] ** 2])
    grav = np.array([(m1 * lc1 + m2 * l1) * g * np.cos(q[0]) + m2 * lc2 * g * np.cos(q[0] + q[1]),
                     m2 * lc2 * g * np.cos(q[0] + q[1])])
    return M @ a + h + grav, M, grav


def test_gravity_torques():
    robot = gtdyn.load_robot("rr")
    for q in [np.zeros(2), np.array([np.pi / 2, 0.0]), np.array([0.3, -1.1]), np.array([-2.0, 2.5])]:
        _, _, grav = hand_derived_tau(q, np.zeros(2), np.zeros(2))
        tau = gtdyn.inverse_dynamics(robot, q, np.zeros(2), np.zeros(2), gravity=GRAVITY_IN_PLANE).tau
        np.testing.assert_allclose(tau, grav, rtol=1e-12, atol=1e-12)


def test_mass_matrix():
    robot = gtdyn.load_robot("rr")
    for q2 in np.linspace(-np.pi, np.pi, 7):
        q = np.array([0.7, q2])
        _, M, _ = hand_derived_tau(q, np.zeros(2), np.zeros(2))
        columns = [gtdyn.inverse_dynamics(robot, q, np.zeros(2), e, gravity=(0, 0, 0)).tau for e in np.eye(2)]
        np.testing.assert_allclose(np.column_stack(columns), M, rtol=1e-12, atol=1e-12)


def test_full_equation_of_motion_and_default_gravity():
    robot = gtdyn.load_robot("rr")
    rng = np.random.default_rng(8)
    for _ in range(20):
        q, v, a = rng.uniform(-3, 3, 2), rng.uniform(-2, 2, 2), rng.uniform(-4, 4, 2)
        expected, _, grav = hand_derived_tau(q, v, a)
        tau = gtdyn.inverse_dynamics(robot, q, v, a, gravity=GRAVITY_IN_PLANE).tau
        np.testing.assert_allclose(tau, expected, rtol=1e-11, atol=1e-11)
        # default gravity is along −z, perpendicular to the plane: it does no work on z-axis joints
        tau_z = gtdyn.inverse_dynamics(robot, q, v, a).tau
        np.testing.assert_allclose(tau_z, expected - grav, rtol=1e-11, atol=1e-11)
        qdd = gtdyn.forward_dynamics(robot, q, v, expected, gravity=GRAVITY_IN_PLANE).qdd
        np.testing.assert_allclose(qdd, a, rtol=1e-10, atol=1e-10)
