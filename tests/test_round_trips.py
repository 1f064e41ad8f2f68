"""forward(inverse(q̈)) = q̈, and hybrid dynamics with any split of known/unknown joints reproduces both, to 1e-9.

Also physics properties: the mass matrix built column by column from inverse dynamics is symmetric positive
definite and equals Pinocchio's CRBA.
"""

import itertools

import numpy as np
import pytest
from references import rel_err

import gtdyn
from gtdyn.bench.pinocchio import PinocchioModel
from gtdyn.model.random import random_robot

TOL = 1e-9


@pytest.fixture(scope="module")
def puma():
    return gtdyn.load_robot("puma560")


def test_forward_of_inverse_is_identity(puma):
    rng = np.random.default_rng(5)
    for _ in range(30):
        q, v, a = rng.uniform(-np.pi, np.pi, 6), rng.uniform(-2, 2, 6), rng.uniform(-5, 5, 6)
        tau = gtdyn.inverse_dynamics(puma, q, v, a).tau
        assert rel_err(gtdyn.forward_dynamics(puma, q, v, tau).qdd, a) < TOL


def test_every_hybrid_split_reproduces_both(puma):
    """All 2^6 splits of the PUMA's joints into given-q̈ and given-τ sets, at one random state."""
    rng = np.random.default_rng(6)
    q, v, a = rng.uniform(-np.pi, np.pi, 6), rng.uniform(-2, 2, 6), rng.uniform(-5, 5, 6)
    tau = gtdyn.inverse_dynamics(puma, q, v, a).tau
    names = puma.joint_names
    for mask in itertools.product([False, True], repeat=6):
        given_qdd = {n: a[i] for i, n in enumerate(names) if mask[i]}
        given_tau = {n: tau[i] for i, n in enumerate(names) if not mask[i]}
        r = gtdyn.hybrid_dynamics(puma, q, v, qdd=given_qdd, tau=given_tau)
        assert rel_err(r.qdd, a) < TOL and rel_err(r.tau, tau) < TOL, f"split {mask}"
        assert r.problem == "hybrid"  # what was asked, even when every q̈ (or every τ) is given


@pytest.mark.parametrize("seed", range(10))
def test_random_trees_round_trip(seed):
    """Random trees with prismatic joints, fixed joints to merge and rotated inertias (and against Pinocchio, through
    URDF, in test_against_pinocchio.py)."""
    rng = np.random.default_rng(100 + seed)
    robot = random_robot(rng, n=7, tree=True, prismatic=0.3, fixed=0.2)
    n = robot.num_dofs
    q, v, a = rng.uniform(-np.pi, np.pi, n), rng.uniform(-2, 2, n), rng.uniform(-5, 5, n)
    tau = gtdyn.inverse_dynamics(robot, q, v, a).tau
    assert rel_err(gtdyn.forward_dynamics(robot, q, v, tau).qdd, a) < TOL
    split = rng.uniform(size=n) < 0.5
    r = gtdyn.hybrid_dynamics(robot, q, v, qdd={robot.joint_names[i]: a[i] for i in range(n) if split[i]},
                              tau={robot.joint_names[i]: tau[i] for i in range(n) if not split[i]})
    assert rel_err(r.qdd, a) < TOL and rel_err(r.tau, tau) < TOL


def mass_matrix_from_inverse_dynamics(robot, q):
    """M(q) column by column: τ(q, 0, e_k) with gravity off."""
    n = robot.num_dofs
    return np.column_stack([gtdyn.inverse_dynamics(robot, q, np.zeros(n), np.eye(n)[k], gravity=(0, 0, 0)).tau
                            for k in range(n)])


def test_mass_matrix_is_spd_and_matches_crba(puma):
    """M from inverse dynamics is Pinocchio's CRBA, the bias τ(q, v, 0) its nonlinear effects h, and
    forward dynamics is M⁻¹(τ − h)."""
    ref = PinocchioModel(puma.source, puma)
    rng = np.random.default_rng(7)
    for _ in range(5):
        q, v, tau = rng.uniform(-np.pi, np.pi, 6), rng.uniform(-2, 2, 6), rng.uniform(-20, 20, 6)
        M = mass_matrix_from_inverse_dynamics(puma, q)
        assert np.allclose(M, M.T, atol=1e-12)
        assert np.min(np.linalg.eigvalsh(M)) > 0
        assert rel_err(M, ref.mass_matrix(q)) < TOL
        assert rel_err(gtdyn.inverse_dynamics(puma, q, v, np.zeros(6)).tau, ref.nonlinear_effects(q, v)) < TOL
        assert rel_err(gtdyn.forward_dynamics(puma, q, v, tau).qdd, ref.forward_by_crba(q, v, tau)) < TOL
