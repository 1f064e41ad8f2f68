"""The compiled inverse operational-space inertia (issue 23, item 1: ``gtdyn.compile_inverse_osim``) against
Pinocchio's J M⁻¹ Jᵀ, the projected formula on a transmission and the reference path on a loop; its verdicts
(singular and ill-conditioned mass matrices), batches, repeated frames, the cache and bad input."""

import warnings

import numpy as np
import pytest
from references import load_quietly, rel_err
from test_operational import TOL, pinocchio_inverse_inertia

import gtdyn
from gtdyn.bench.pinocchio import FreeFlyerPinocchio, PinocchioModel

pytestmark = pytest.mark.usefixtures("private_cache")

PUMA_FRAMES = ["flange", "link3"]
FEET = ["FL_foot", "FR_foot", "RL_foot", "RR_foot"]


@pytest.mark.parametrize("ordering", ["efpa", "projection", "colamd"])
@pytest.mark.parametrize("checks", [True, False])
def test_the_puma_matches_pinocchio(puma, ordering, checks):
    ref = PinocchioModel(puma.source, puma)
    solver = gtdyn.compile_inverse_osim(puma, PUMA_FRAMES, ordering=ordering, checks=checks)
    for q in np.random.default_rng(4).uniform(-1.5, 1.5, (3, 6)):
        got = solver(q)
        assert got.shape == (12, 12)
        assert rel_err(got, pinocchio_inverse_inertia(ref, ref.configuration(q), PUMA_FRAMES)) < TOL
    assert solver.fallbacks == 0  # the compiled code answered, not the reference path


def test_the_checked_call_runs_no_solve_at_rest(puma):
    """At rest the plan's right-hand side is zero by structure (no velocity, gravity, torque or wrench inputs: the
    unit solves push the frames): its answer and residual are 0 exactly, so the checked call runs the bound's pass
    alone before Λ⁻¹ — the same Λ⁻¹, bit for bit, as the unchecked call."""
    from gtdyn.bench.compiled import call_counts

    checked = gtdyn.compile_inverse_osim(puma, PUMA_FRAMES)
    unchecked = gtdyn.compile_inverse_osim(puma, PUMA_FRAMES, checks=False)
    assert call_counts(checked, "main") == {"factor": 1, "solve_abs": 1}
    for q in np.random.default_rng(6).uniform(-3.0, 3.0, (4, 6)):
        assert np.array_equal(checked(q), unchecked(q))
    assert checked.fallbacks == 0


def test_a_floating_quadruped_matches_pinocchio_at_any_base_pose():
    """Λ⁻¹ in the feet's own axes does not depend on the base's pose: Pinocchio's at a random pose is ours."""
    from references import random_base

    robot = gtdyn.load_robot("quadruped", base="floating")
    ref = FreeFlyerPinocchio(robot.source, robot)
    rng = np.random.default_rng(5)
    solver = gtdyn.compile_inverse_osim(robot, FEET)
    for _ in range(2):
        pose, _, _ = random_base(rng)
        q = rng.uniform(-0.8, 0.8, robot.num_dofs)
        assert rel_err(solver(q), pinocchio_inverse_inertia(ref, ref.configuration(q, pose), FEET)) < TOL


def test_a_transmission_gives_the_projected_inverse_inertia(tmp_path):
    """The geared rotor of tests/test_operational.py: J G (Gᵀ M G)⁻¹ Gᵀ Jᵀ of the unconstrained robot."""
    from test_transmissions import GEARED

    path = tmp_path / "geared.urdf"
    path.write_text(GEARED)
    coupled, free = gtdyn.load_robot(str(path), transmissions="exact"), load_quietly(str(path))
    q = np.array([0.3, -0.4, 9 * 0.3 + 0.25])
    G = np.array([[1.0, 0.0], [0.0, 1.0], [9.0, 0.0]])
    J = np.vstack([gtdyn.frame_jacobian(free, q, frame) for frame in ("l2", "rotor")])
    expected = J @ G @ np.linalg.solve(G.T @ gtdyn.mass_matrix(free, q) @ G, G.T @ J.T)
    for ordering in ("cluster_efpa", "projection", "lagrange"):
        assert rel_err(gtdyn.compile_inverse_osim(coupled, ["l2", "rotor"], ordering=ordering)(q), expected) < TOL


def test_a_closed_loop_matches_the_reference_forward_solves():
    """The four-bar's coupler at a closed configuration: the reference path's forward solves (one per unit
    wrench, tests/test_operational.py checks them); Λ⁻¹ of a one-degree-of-freedom mechanism has rank one."""
    robot = gtdyn.load_robot("four_bar")
    q = gtdyn.close_loops(robot, {"j1": 0.4}).q
    got = gtdyn.compile_inverse_osim(robot, "coupler")(q)
    want = gtdyn.operational_space_inverse_inertia(robot, q, "coupler", method="forward solves")
    assert rel_err(got, want) < TOL
    singular_values = np.linalg.svd(got, compute_uv=False)
    assert singular_values[1] < 1e-12 * singular_values[0]


def test_batches_and_threads_give_the_single_calls(puma):
    solver = gtdyn.compile_inverse_osim(puma, PUMA_FRAMES)
    Q = np.random.default_rng(6).uniform(-1.5, 1.5, (7, 6))
    singles = np.array([solver(q) for q in Q])
    assert np.array_equal(solver.batch(Q), singles)  # the same machine code, state by state
    assert np.array_equal(solver.batch(Q, threads=2), singles)


def test_a_frame_named_twice_repeats_its_blocks(puma):
    q = np.random.default_rng(7).uniform(-1.5, 1.5, 6)
    once = gtdyn.compile_inverse_osim(puma, ["flange", "link3"])(q)
    solver = gtdyn.compile_inverse_osim(puma, ["flange", "link3", "flange"])
    twice = solver(q)
    rows = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5]
    assert np.array_equal(twice, once[np.ix_(rows, rows)])
    assert np.array_equal(solver.batch(q[None])[0], twice)


def test_a_singular_mass_matrix_raises_and_an_ill_conditioned_one_warns_as_forward_dynamics(tmp_path):
    """The chain of tests/test_determinacy.py with massless tip links (singular: the reference path's
    IndeterminateSystemError names them) and with tips 1e-10 of the first link (condition ~1e11: a warning)."""
    from test_determinacy import STATE, load_chain

    q = STATE[0]
    massless = gtdyn.compile_inverse_osim(load_chain(tmp_path, None), ["l3", "l1"])
    with pytest.raises(gtdyn.IndeterminateSystemError, match="link l2"):
        massless(q)
    light = gtdyn.compile_inverse_osim(load_chain(tmp_path, 1e-10), ["l3", "l1"])
    with pytest.warns(gtdyn.IllConditionedWarning):
        got = light(q)
    assert light.fallbacks == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gtdyn.IllConditionedWarning)
        want = gtdyn.operational_space_inverse_inertia(load_chain(tmp_path, 1e-10), q, ["l3", "l1"],
                                                       ordering=light.ordering)
    assert np.array_equal(got, want)  # the reference path's answer in the solver's ordering, with its verdict


def test_a_second_compile_loads_the_cached_code(puma):
    first = gtdyn.compile_inverse_osim(puma, ["flange"], ordering="colamd")
    second = gtdyn.compile_inverse_osim(puma, ["flange"], ordering="colamd")
    q = np.full(6, 0.2)
    assert np.array_equal(first(q), second(q))
    assert "column 1: a unit moment on flange" in second.source


def test_bad_input_is_named(puma):
    solver = gtdyn.compile_inverse_osim(puma, ["flange"])
    with pytest.raises(gtdyn.ArgumentError, match="^q: "):
        solver(np.zeros(5))
    with pytest.raises(gtdyn.ArgumentError, match="^frames: unknown link or frame 'hand'"):
        gtdyn.compile_inverse_osim(puma, ["hand"])
    with pytest.raises(gtdyn.ArgumentError, match="^frames: 'base_link' is fixed to the base"):
        gtdyn.compile_inverse_osim(puma, ["base_link"])
    with pytest.raises(gtdyn.ArgumentError, match="^threads: "):
        solver.batch(np.zeros((2, 6)), threads=0)
    with pytest.raises(gtdyn.ArgumentError, match="ordering"):
        gtdyn.compile_inverse_osim(puma, ["flange"], ordering="rnea")
