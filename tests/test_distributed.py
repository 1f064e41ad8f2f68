"""``gtdyn.distributed`` on a ``dask.distributed`` LocalCluster (issue 24, item 5): a batch over chunks and
simulations from many initial states, run by worker processes, equal to the same work done here."""

import numpy as np
import pytest

import gtdyn
import gtdyn.distributed

distributed = pytest.importorskip("distributed")  # the [test] extra installs it; gtdyn[distributed] for users
pytestmark = pytest.mark.usefixtures("private_cache")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def test_a_batch_runs_over_chunks_on_the_cluster(client):
    robot = gtdyn.load_robot("puma560")
    solver = gtdyn.compile(robot, "hybrid", qdd_joints=["joint1", "joint4"])
    Q, V, X = np.random.default_rng(0).uniform(-1, 1, (3, 25, 6))
    here = solver.batch(Q, V, X)
    there = gtdyn.distributed.batch_on(client, solver, Q, V, X, chunk=10)  # three chunks, the last short
    for a, b in zip(there, here):
        assert np.array_equal(a, b)


def test_a_long_sweep_sends_the_solver_with_its_lanes(client, monkeypatch, tmp_path):
    """Past ``LANES_AFTER`` states the solver compiles its lanes before it goes, so that the workers, which
    compile none of their own, run in lanes too; the answers are the same bits."""
    from gtdyn.compiled import lanes

    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(lanes, "LANES_AFTER", 100)
    robot = gtdyn.load_robot("puma560")
    Q, V, X = np.random.default_rng(2).uniform(-1, 1, (3, 120, 6))
    here = gtdyn.compile(robot, "inverse", lanes=False).batch(Q, V, X)
    solver = gtdyn.compile(robot, "inverse")
    assert solver.lanes == 0
    there = gtdyn.distributed.batch_on(client, solver, Q, V, X, chunk=40)
    assert solver.lanes == 4 and np.array_equal(there, here)
    assert client.submit(lambda s: s.lanes, solver, pure=False).result() == 4  # what a worker gets


def test_per_state_inputs_are_chunked_with_the_states(client):
    robot = gtdyn.load_robot("puma560")
    solver = gtdyn.compile(robot, "forward", wrench_frames=["link6"])
    rng = np.random.default_rng(1)
    Q, V, X = rng.uniform(-1, 1, (3, 7, 6))
    wrenches = {"link6": rng.uniform(-1, 1, (7, 6))}
    there = gtdyn.distributed.batch_on(client, solver, Q, V, X, chunk=3, external_wrenches=wrenches)
    assert np.array_equal(there, solver.batch(Q, V, X, external_wrenches=wrenches))


def test_simulations_from_many_initial_states(client):
    robot = gtdyn.load_robot("rrr")
    Q0 = np.array([[0.1, 0.2, 0.3], [-0.4, 0.1, 0.0], [0.9, -0.2, 0.5]])
    runs = gtdyn.distributed.simulate_on(client, robot, Q0, np.zeros_like(Q0), dt=1e-3, steps=200)
    for q0, run in zip(Q0, runs):
        local = gtdyn.simulate(robot, q0, np.zeros(3), dt=1e-3, steps=200, progress=False)
        assert np.array_equal(run.q, local.q)


def test_what_is_not_a_solver_is_named(client):
    with pytest.raises(gtdyn.ArgumentError, match="solver: expected a gtdyn.CompiledSolver"):
        gtdyn.distributed.batch_on(client, "puma560", np.zeros((1, 6)), np.zeros((1, 6)), np.zeros((1, 6)))


def test_any_compiled_batch_method_runs_over_chunks(client):
    """Jacobians, mass matrices and Λ⁻¹ sweep as solvers do: the object goes once, the rows in chunks."""
    robot = gtdyn.load_robot("puma560")
    frames = gtdyn.compile_frames(robot, ["link6", "flange"])
    mass = gtdyn.compile_mass_matrix(robot)
    Q, V = np.random.default_rng(2).uniform(-1, 1, (2, 11, 6))
    assert np.array_equal(gtdyn.distributed.rows_on(client, frames.batch_jacobian, Q, chunk=4),
                          frames.batch_jacobian(Q))
    for a, b in zip(gtdyn.distributed.rows_on(client, frames.batch_placement_jacobian, Q, chunk=5),
                    frames.batch_placement_jacobian(Q)):
        assert np.array_equal(a, b)
    assert np.array_equal(gtdyn.distributed.rows_on(client, mass.batch, Q, chunk=6), mass.batch(Q))
    solver = gtdyn.compile(robot, "forward", derivatives=True)
    there = gtdyn.distributed.rows_on(client, solver.batch_derivatives, Q, V, np.zeros_like(Q), chunk=4)
    here = solver.batch_derivatives(Q, V, np.zeros_like(Q))
    assert type(there) is type(here) and all(np.array_equal(a, b) for a, b in zip(there, here))


def test_a_row_a_worker_refuses_is_named_with_its_chunk(client):
    robot = gtdyn.load_robot("puma560")
    frames = gtdyn.compile_frames(robot, "flange")
    Q = np.zeros((6, 6))
    Q[4, 2] = np.nan  # row 4: the second row of the chunk from row 3
    with pytest.raises(gtdyn.ArgumentError, match=r"chunk from row 3 .*Q\[1\]"):
        gtdyn.distributed.rows_on(client, frames.batch_jacobian, Q, chunk=3)


def test_what_is_not_a_compiled_batch_method_is_named(client):
    solver = gtdyn.compile(gtdyn.load_robot("puma560"), "forward")
    with pytest.raises(gtdyn.ArgumentError, match="method: expected a batch method"):
        gtdyn.distributed.rows_on(client, np.linalg.inv, np.zeros((1, 6)))
    with pytest.raises(gtdyn.ArgumentError, match="method: expected a batch method"):
        gtdyn.distributed.rows_on(client, solver.derivatives, np.zeros((1, 6)))
    with pytest.raises(gtdyn.ArgumentError, match=r"Q, V, X: expected 3 arrays of shape \(N, 6\), got \(2, 6\), \(3"):
        gtdyn.distributed.rows_on(client, solver.batch, np.zeros((2, 6)), np.zeros((3, 6)), np.zeros((2, 6)))


def test_a_list_of_poses_is_chunked_with_the_states(client):
    """``batch`` takes a floating base's poses as an (N, 4, 4) array or a list of N ``gtsam.Pose3``; a list is per
    state too, so each chunk gets its own poses (it was sent whole, and every chunk refused it)."""
    import gtsam

    robot = gtdyn.load_robot("quadruped", base="floating")
    solver = gtdyn.compile(robot, "forward")
    rng = np.random.default_rng(3)
    Q, V, X = rng.uniform(-0.3, 0.3, (3, 5, robot.num_dofs))
    poses = [gtsam.Pose3(gtsam.Rot3.Rz(0.1 * k), np.array([0.0, 0.0, 0.1 * k])) for k in range(5)]
    for there, here in zip(gtdyn.distributed.batch_on(client, solver, Q, V, X, chunk=2, base_pose=poses),
                           solver.batch(Q, V, X, base_pose=poses)):
        assert np.array_equal(there, here)
