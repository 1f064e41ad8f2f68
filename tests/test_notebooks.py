"""Every notebook runs from a clean kernel without an error, computes the numbers it shows correctly (checks run in
its kernel after its last cell), and is committed without outputs.

Running the notebooks is heavy (~35 s for all of them on two cores): the default run executes ``IN_SUITE`` only, the
others are marked ``heavy`` and run by ``python benchmarks/verify_heavy_tests.py`` (``pytest -m heavy``)."""

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbclient
import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))
CELL_TIMEOUT_S = 120
IN_SUITE = "01_inverse_dynamics.ipynb"  # the default run's representative (~3 s); the others are heavy (3–12 s each)


def read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=nbformat.NO_CONVERT)


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 4, [p.name for p in NOTEBOOKS]


# What each notebook must have computed, checked in its own kernel after its last cell: a notebook that runs
# but shows a wrong number fails here. (CRBA 22 / ABA 18 edges: derived in test_orderings.py; RNEA 10 there too.)
CHECKS = {
    "01_inverse_dynamics.ipynb": """
assert np.max(np.abs(r.tau - tau_pinocchio)) < 1e-9 * np.max(np.abs(tau_pinocchio))
assert metrics_of(r)["edges"] == 10 and metrics_of(r)["fill_in"] == 0
""",
    "02_forward_dynamics.ipynb": """
assert all(np.max(np.abs(r.qdd - qdd_expected)) < 1e-9 for r in results.values())
assert (metrics_of(results["crba"])["edges"], metrics_of(results["aba"])["edges"]) == (22, 18)
assert any(row.method.startswith("pinocchio") for row in rows) and all(row.max_error < 1e-9 for row in rows)
""",
    "03_hybrid_dynamics.ipynb": """
for r in [*results.values(), three]:
    assert np.max(np.abs(r.qdd - qdd_true)) < 1e-9 and np.max(np.abs(r.tau - tau_true)) < 1e-9
assert metrics_of(results["MD (Table III)"])["edges"] == metrics_of(results["CUSTOM (Table III)"])["edges"]
""",
    "04_closed_loops.ipynb": """
assert max(state.position_residual, state.velocity_residual, state.acceleration_residual) < 1e-9
assert max(other.position_residual, other.velocity_residual) < 1e-9 and np.max(np.abs(other.q - state.q)) > 0.5
assert np.max(np.abs(forward.qdd - state.qdd)) < 1e-9 and max(errors) < 1e-9
assert np.linalg.norm(least_norm) < np.linalg.norm(padded)
assert abs(F5 @ loop_joint.screw_axis) < 1e-9
""",
    "05_your_robot.ipynb": """
assert error < 1e-9 and all(row.max_error < 1e-9 for row in rows)
assert any(row.method.startswith("pinocchio") for row in rows)
""",
    "06_orderings_to_code.ipynb": """
assert np.max(np.abs(tau_compiled - reference.tau)) < 1e-9
assert [step["variable"] for step in steps(rnea)] == ["V̇1", "V̇2", "V̇3", "F3", "F2", "F1", "τ1", "τ2", "τ3"]  # Algorithm 1
assert code_reads == parents(rnea.computed_dag()) == parents(rnea.dag())
assert len(qdd_of) == 3 and all(np.max(np.abs(qdd - qdd_expected)) < 1e-9 for qdd in qdd_of.values())
assert len(pivots) == 3 and np.allclose(pivots, pinocchio_pivots, rtol=1e-9, atol=0)
assert len(puma_errors) == 4 and all(max(errors) < 1e-9 for errors in puma_errors.values())
assert {"Pinocchio rnea", "Pinocchio aba"} < set(median_us) and all(us > 0 for us in median_us.values())
assert isinstance(nan_error, gtdyn.ArgumentError) and puma_solvers["aba"].fallbacks == 1
assert derivative_error < 1e-9 * max(1.0, np.max(np.abs(pin_dq)))
assert moved["A1"] < 1e-9 and all(moved[x] > 1e-6 for x in ("A2", "A3", "F1", "F2", "F3", "t1", "t2", "t3"))
""",  # noqa: E501
    "08_simulation_and_estimation.ipynb": """
assert drift["euler"] > 1e3 * drift["variational"] and drift["rk4"] < drift["variational"]
variational_error = np.abs(runs["variational"].energy - runs["variational"].energy[0])
assert np.max(variational_error[-500:]) < 1.5 * np.max(variational_error[500:1000])  # bounded: no trend
assert np.max(fall.closure) < 1e-12 and np.max(np.abs(fall.energy - fall.energy[0])) < 1e-5
assert rmse < 0.6 * sigma and reading_rmse > 0.8 * sigma
""",
    "07_legged_robot.ipynb": """
assert abs(pin.computeTotalMass(model) * np.linalg.norm(GRAVITY) - weight) < 1e-12 * weight
assert standing.least_norm == ("c1", "c2", "c3", "c4") and [c.contact.link for c in standing.contact_wrenches] == FEET
assert abs(sum(c.world[5] for c in standing.contact_wrenches) - weight) < 1e-9 * weight
assert np.max(np.abs(sum(c.world[3:5] for c in standing.contact_wrenches))) < 1e-9 * weight
assert len(lifted.contact_wrenches) == 3 and lifted.least_norm == ()
assert np.all(np.isfinite([c.local for c in lifted.contact_wrenches]))
scale = np.max(np.abs(lifted.qdd))
assert all(np.max(np.abs(feet_accel[f])) < 1e-9 * scale for f in FEET[1:]) and np.linalg.norm(feet_accel["FL_foot"]) > 1
assert all(np.max(np.abs(feet_accel[f] - feet_accel_pinocchio[f])) < 1e-9 * scale for f in FEET)
""",
    "09_transmissions_and_clusters.ipynb": """
assert [names_of(robot, c) for c in clusters(robot)] == [["j1", "m1"], ["j2", "m2"], ["j3", "m3"]]
assert sorted(names_of(four_bar, *clusters(four_bar))) == ["j1", "j2", "j3", "j4", "motor"]
assert len(results) >= 7 and agree < 1e-9 and reference_error < 1e-9 and agree_four_bar < 1e-9
assert all(connected for _, connected in cluster_subtrees(robot, results["cluster_aba"].bayes_tree()).values())
assert set(timings) == set(systems) and all(t.median_us > 0 for s in timings.values() for t in s.values())
assert compiled_error < 1e-9 and all(n > 0 for s in operations.values() for n in s.values())
assert len(base_errors) == len(knee_errors) == 50 and np.max(base_errors) < 1e-9 and 0.01 < np.median(knee_errors) < 0.1
assert np.max(np.abs(delta_M - 9 * 0.00006 * np.array([[0.0, 1.0], [1.0, 0.0]]))) < 1e-12
""",
    "10_trajectory_optimization.ipynb": """
assert plan.converged and reach.converged
assert dynamics_error < 1e-6 and collocation_error < 1e-6 and pose_error < 1e-8
assert np.max(np.abs(plan.tau[:, 1])) < 1e-9 and np.max(np.abs(plan.tau[:, 0])) <= 30 + 1e-8
assert abs(plan.q[-1, 1] - np.pi) < 1e-8
assert jump.converged and jump_error < 1e-6 and jump.base_pose[10, 2, 3] > T_stand[2, 3] + 0.02
assert not any(np.any(jump.contact_forces[foot][8:13]) for foot in feet)
assert len(violations) == 10 and max(violations) <= 1e-4 and max(cost_gaps) < 1e-4
assert real_time.executed == 10 and len(current.t) == 31
""",
}
# Text a cell must print (a caught error the notebook demonstrates).
PRINTED = {"04_closed_loops.ipynb": ["IndeterminateSystemError:", "free variables:"]}


def test_every_notebook_has_checks():
    assert sorted(CHECKS) == [p.name for p in NOTEBOOKS]
    assert IN_SUITE in CHECKS


def execute(path: Path, folder: Path) -> tuple[nbformat.NotebookNode, int, BaseException | None]:
    """Run a notebook, with its checks appended, in a fresh kernel whose working directory is ``folder`` (so
    nothing a notebook writes lands in the repository). Returns the executed notebook, its own code cell count
    and the error, if a cell (the checks' included) raised."""
    notebook = read(path)
    code_cells = sum(cell.cell_type == "code" for cell in notebook.cells)
    notebook.cells.append(nbformat.v4.new_code_cell(CHECKS[path.name]))
    client = nbclient.NotebookClient(notebook, kernel_name="python3", timeout=CELL_TIMEOUT_S,
                                     resources={"metadata": {"path": str(folder)}})
    try:
        client.execute()  # raises CellExecutionError, naming the cell, on the first error
    except BaseException as e:  # re-raised in the notebook's own test
        return notebook, code_cells, e
    return notebook, code_cells, None


@pytest.fixture(scope="module")
def executed(tmp_path_factory, request):
    """The selected tests' notebooks (all of them under ``-m heavy`` or ``-m ""``), each in its own fresh kernel,
    two at a time: the kernels are separate processes, so this uses both cores of the test machine while the
    tests themselves run one by one."""
    here = test_notebook_runs_headless_and_computes_the_right_numbers.__name__
    selected = [path for path in NOTEBOOKS
                if any(getattr(item, "originalname", None) == here and item.path == request.path
                       and item.callspec.params["path"] == path for item in request.session.items)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {path.name: pool.submit(execute, path, tmp_path_factory.mktemp(path.stem)) for path in selected}
        return {name: future.result() for name, future in futures.items()}


@pytest.mark.parametrize("path", [path if path.name == IN_SUITE else pytest.param(path, marks=pytest.mark.heavy)
                                  for path in NOTEBOOKS], ids=lambda p: p.name)
def test_notebook_runs_headless_and_computes_the_right_numbers(path, executed):
    notebook, code_cells, error = executed[path.name]
    if error is not None:
        raise error
    cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert [cell.execution_count for cell in cells] == list(range(1, code_cells + 2))  # every cell ran, in order
    printed = "".join(out.get("text", "") for cell in cells for out in cell.outputs if out.output_type == "stream")
    assert all(text in printed for text in PRINTED.get(path.name, []))
    assert any("image/png" in out.get("data", {}) for cell in cells for out in cell.outputs)  # it drew something


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_without_outputs(path):
    code_cells = [cell for cell in read(path).cells if cell.cell_type == "code"]
    assert code_cells
    with_outputs = [n for n, cell in enumerate(code_cells) if cell.outputs or cell.execution_count is not None]
    assert not with_outputs, f"{path.name}: clear the outputs of code cells {with_outputs}"
