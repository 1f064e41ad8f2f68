"""Compiled solvers that travel (issue 24, item 5): they pickle, so process pools, Dask or Ray can run them; the
other side loads the machine code when its CPU is this one's, and compiles the same plan otherwise."""

import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
from references import random_states

import gtdyn
from gtdyn.compiled import native

pytestmark = pytest.mark.usefixtures("private_cache")


def test_a_pickled_solver_answers_bit_for_bit(puma):
    solver = gtdyn.compile(puma, "forward", derivatives=True)
    copy = pickle.loads(pickle.dumps(solver))
    assert copy is not solver and copy.cache_key == solver.cache_key and copy.ordering == solver.ordering
    Q, V, X = random_states(6, 4)
    assert np.array_equal(copy.batch(Q, V, X), solver.batch(Q, V, X))
    for a, b in zip(copy.derivatives(Q[0], V[0], X[0]), solver.derivatives(Q[0], V[0], X[0])):
        assert np.array_equal(a, b)
    assert copy.fallbacks == 0 and copy.source == solver.source


def test_hybrid_problems_and_their_joints_travel_too():
    robot = gtdyn.load_robot("rrr")
    solver = gtdyn.compile(robot, "hybrid", qdd_joints=["j2"])
    copy = pickle.loads(pickle.dumps(solver))
    q, v, x = random_states(3, 1, seed=2)[:, 0]
    for a, b in zip(copy(q, v, x), solver(q, v, x)):
        assert np.array_equal(a, b)


def _batch_in_a_worker(solver, Q, V, X):
    return solver.batch(Q, V, X)


def test_a_process_pool_runs_a_solver_over_chunks(puma):
    """Fresh interpreters (spawn), as a cluster's workers are: each unpickles the solver and loads its code."""
    solver = gtdyn.compile(puma, "inverse")
    Q, V, X = random_states(6, 40, seed=3)
    chunks = [slice(0, 20), slice(20, 40)]
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        parts = list(pool.map(_batch_in_a_worker, [solver] * 2, *([A[c] for c in chunks] for A in (Q, V, X))))
    assert np.array_equal(np.concatenate(parts), solver.batch(Q, V, X))


def test_a_solver_for_another_cpu_is_compiled_again_on_arrival(puma, monkeypatch):
    """Machine code made for another CPU must not run here: the pickle carries the CPU it was made for, and a
    different one compiles the same plan (here, or from its cache)."""
    solver = gtdyn.compile(puma, "forward", ordering="crba")
    real = native.target_id()
    monkeypatch.setattr(native, "target_id", lambda: real + "|another machine")
    data = pickle.dumps(solver)
    monkeypatch.setattr(native, "target_id", lambda: real)
    arrived = pickle.loads(data)
    assert arrived.ordering == solver.ordering and arrived._record is not solver._record
    q, v, tau = random_states(6, 1, seed=4)[:, 0]
    assert np.array_equal(arrived(q, v, tau), solver(q, v, tau))


def test_the_other_compiled_objects_travel_bit_for_bit(puma):
    """A Pinocchio user sweeping Jacobians, mass matrices or Λ⁻¹ over a pool sends these, not a solver."""
    frames = gtdyn.compile_frames(puma, ["link6", "flange"])
    mass = gtdyn.compile_mass_matrix(puma)
    osim = gtdyn.compile_inverse_osim(puma, ["flange"])
    Q, V, _ = random_states(6, 5, seed=5)
    here = (frames.batch_jacobian(Q), frames.batch_velocity(Q, V), mass.batch(Q), osim.batch(Q))
    frames, mass, osim = pickle.loads(pickle.dumps((frames, mass, osim)))
    there = (frames.batch_jacobian(Q), frames.batch_velocity(Q, V), mass.batch(Q), osim.batch(Q))
    for a, b in zip(there, here):
        assert np.array_equal(a, b)
    assert osim.fallbacks == 0 and osim.frames == ["flange"]


def test_frames_carry_the_modules_compiled_so_far_and_compile_the_rest_on_arrival(puma, monkeypatch):
    frames = gtdyn.compile_frames(puma, "flange")
    q = random_states(6, 1, seed=6)[0, 0]
    frames.placement(q)  # the module at q is compiled; the one at (q, q̇) is not
    copy = pickle.loads(pickle.dumps(frames))
    assert set(copy._modules) == {"at_q"} and copy._modules["at_q"].object == frames._modules["at_q"].object
    assert np.array_equal(copy.velocity(q, np.ones(6)), frames.velocity(q, np.ones(6)))
    real = native.target_id()
    monkeypatch.setattr(native, "target_id", lambda: real + "|another machine")
    data = pickle.dumps(frames)
    monkeypatch.setattr(native, "target_id", lambda: real)
    arrived = pickle.loads(data)
    assert arrived._modules == {}  # machine code for another CPU is not loaded: compiled again when called
    assert np.array_equal(arrived.placement(q), frames.placement(q))


def test_an_inverse_osim_for_another_cpu_is_compiled_again_on_arrival(puma, monkeypatch):
    osim = gtdyn.compile_inverse_osim(puma, ["link6", "flange", "link6"], ordering="lagrange")
    real = native.target_id()
    monkeypatch.setattr(native, "target_id", lambda: real + "|another machine")
    data = pickle.dumps(osim)
    monkeypatch.setattr(native, "target_id", lambda: real)
    arrived = pickle.loads(data)
    assert arrived._record is not osim._record and arrived.ordering == osim.ordering
    q = random_states(6, 1, seed=7)[0, 0]
    assert np.array_equal(arrived(q), osim(q))


def test_a_singular_states_error_crosses_processes_whole():
    """A worker that meets a singular state raises IndeterminateSystemError; the caller must get it with its
    free variables, not a TypeError from unpickling it."""
    error = gtdyn.IndeterminateSystemError("singular", ["q̈3"], float("inf"))
    copy = pickle.loads(pickle.dumps(error))
    assert str(copy) == "singular" and copy.free_variables == ["q̈3"] and copy.condition == float("inf")
