"""External wrenches as inputs of compiled solvers (issue 20, item 2): in the frames' own axes and world-aligned,
against the reference path (itself checked against a hand-derived pendulum and Pinocchio-checked Jacobians in
test_world_wrenches.py), on a fixed and a floating base, in batches, and the errors a bad wrench gets."""

import numpy as np
import pytest
from references import random_base, rel_err
from test_derivatives import FLOATING_ARM
from test_world_wrenches import PENDULUM

import gtdyn
from gtdyn.arguments.wrenches import packed_wrenches
from gtdyn.compiled.fallback import reference_answer

# the compiled and the reference path solve the same equations in different arithmetic: round-off, ~1e-14 seen
TOL = 1e-11


pytestmark = pytest.mark.usefixtures("private_cache")


@pytest.mark.parametrize("axes", ["local", "world_aligned"])
@pytest.mark.parametrize("problem", ["forward", "inverse"])
def test_compiled_wrenches_match_the_reference_path(puma, problem, axes):
    solver = gtdyn.compile(puma, problem, wrench_frames=["flange", "link3"], wrench_axes=axes)
    reference = gtdyn.forward_dynamics if problem == "forward" else gtdyn.inverse_dynamics
    rng = np.random.default_rng(7)
    for _ in range(3):
        q, v, x = rng.uniform(-1.5, 1.5, (3, 6))
        wrenches = {"flange": rng.normal(size=6), "link3": rng.normal(size=6)}
        result = reference(puma, q, v, x, external_wrenches=wrenches, wrench_axes=axes)
        want = result.qdd if problem == "forward" else result.tau
        assert rel_err(solver(q, v, x, external_wrenches=wrenches), want) < TOL
        # a compiled frame not named gets no wrench
        alone = reference(puma, q, v, x, external_wrenches={"link3": wrenches["link3"]}, wrench_axes=axes)
        got = solver(q, v, x, external_wrenches={"link3": wrenches["link3"]})
        assert rel_err(got, alone.qdd if problem == "forward" else alone.tau) < TOL
    assert solver.fallbacks == 0


def test_a_compiled_world_aligned_pull_gives_the_hand_derived_torque(tmp_path):
    """test_world_wrenches' pendulum, compiled: pulled down at its tip by 10 N, held by τ = 20 sin θ N·m."""
    path = tmp_path / "pendulum.urdf"
    path.write_text(PENDULUM)
    solver = gtdyn.compile(gtdyn.load_robot(str(path)), "inverse", gravity=(0, 0, 0), wrench_frames=["tip"],
                           wrench_axes="world_aligned")
    thetas = np.array([0.3, -1.1, 2.0])
    tau = solver.batch(thetas[:, None], np.zeros((3, 1)), np.zeros((3, 1)),
                       external_wrenches={"tip": [0, 0, 0, 0, 0, -10.0]})
    assert np.max(np.abs(tau[:, 0] - 20.0 * np.sin(thetas))) < 1e-12


def test_a_batch_is_a_loop_of_single_calls(puma):
    solver = gtdyn.compile(puma, "forward", wrench_frames=["flange"], wrench_axes="world_aligned")
    rng = np.random.default_rng(8)
    Q, V, X, W = rng.uniform(-1, 1, (4, 5, 6))
    batch = solver.batch(Q, V, X, threads=2, external_wrenches={"flange": W})
    singles = [solver(Q[k], V[k], X[k], external_wrenches={"flange": W[k]}) for k in range(5)]
    assert np.max(np.abs(batch - np.array(singles))) == 0.0
    one_for_all = solver.batch(Q, V, X, external_wrenches={"flange": W[0]})
    assert np.max(np.abs(one_for_all[0] - singles[0])) == 0.0


def test_the_fallback_answers_with_the_same_wrenches(puma):
    """What an uncertified call hands to the reference path (gtdyn.compiled.fallback) carries the wrenches."""
    solver = gtdyn.compile(puma, "inverse", wrench_frames=["flange"], wrench_axes="world_aligned")
    rng = np.random.default_rng(9)
    q, v, x = rng.uniform(-1, 1, (3, 6))
    wrenches = {"flange": rng.normal(size=6)}
    fallback = reference_answer(solver, q, v, x, (), packed_wrenches(solver.wrench_frames, wrenches))
    assert rel_err(fallback, solver(q, v, x, external_wrenches=wrenches)) < TOL
    assert rel_err(fallback, solver(q, v, x)) > 1e-6  # and the wrench matters


def test_wrenches_on_a_floating_robot(tmp_path, axes="world_aligned"):
    path = tmp_path / "floating_arm.urdf"
    path.write_text(FLOATING_ARM)
    robot = gtdyn.load_robot(str(path), base="floating")
    solver = gtdyn.compile(robot, "forward", wrench_frames=["tip", "body"], wrench_axes=axes)
    rng = np.random.default_rng(10)
    pose, twist, _ = random_base(rng)
    q, v, tau = rng.uniform(-0.5, 0.5, (3, 2))
    wrenches = {"tip": rng.normal(size=6), "body": rng.normal(size=6)}
    base_accel, qdd = solver(q, v, tau, base_pose=pose, base_twist=twist, external_wrenches=wrenches)
    want = gtdyn.forward_dynamics(robot, q, v, tau, base_pose=pose, base_twist=twist, external_wrenches=wrenches,
                                  wrench_axes=axes)
    assert rel_err(np.concatenate([base_accel, qdd]), np.concatenate([want.base_accel, want.qdd])) < TOL


def test_bad_wrench_frames_and_wrenches_are_named(puma):
    with pytest.raises(gtdyn.ArgumentError, match="^wrench_frames: unknown link or frame 'hand'"):
        gtdyn.compile(puma, "inverse", wrench_frames=["hand"])
    with pytest.raises(gtdyn.ArgumentError, match="^wrench_frames: 'base_link' is fixed to the base"):
        gtdyn.compile(puma, "inverse", wrench_frames=["base_link"])
    with pytest.raises(gtdyn.ArgumentError, match="^wrench_frames: flange named more than once"):
        gtdyn.compile(puma, "inverse", wrench_frames=["flange", "flange"])
    with pytest.raises(gtdyn.ArgumentError, match="^wrench_frames: expected a list"):
        gtdyn.compile(puma, "inverse", wrench_frames="flange")
    with pytest.raises(gtdyn.ArgumentError, match="^wrench_axes: 'world' is not one of"):
        gtdyn.compile(puma, "inverse", wrench_frames=["flange"], wrench_axes="world")
    zero = np.zeros(6)
    plain = gtdyn.compile(puma, "inverse")
    with pytest.raises(gtdyn.ArgumentError, match=r"'flange' is not one of the frames .* \(wrench_frames: none\)"):
        plain(zero, zero, zero, external_wrenches={"flange": zero})
    solver = gtdyn.compile(puma, "inverse", wrench_frames=["flange"])
    with pytest.raises(gtdyn.ArgumentError, match=r"^external_wrenches\['flange'\]"):
        solver(zero, zero, zero, external_wrenches={"flange": [1.0, 2.0]})
    with pytest.raises(gtdyn.ArgumentError, match=r"^external_wrenches\['flange'\]"):
        solver(zero, zero, zero, external_wrenches={"flange": [np.nan] * 6})
    with pytest.raises(gtdyn.ArgumentError, match="^external_wrenches: expected a dict"):
        solver(zero, zero, zero, external_wrenches=[zero])
    with pytest.raises(gtdyn.ArgumentError, match=r"expected a wrench \(6,\) or one per state \(2, 6\)"):
        solver.batch(*np.zeros((3, 2, 6)), external_wrenches={"flange": np.zeros((3, 6))})
