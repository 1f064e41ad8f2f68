"""Every notebook runs from a clean kernel without an error, and is committed without outputs."""

from pathlib import Path

import nbclient
import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))
CELL_TIMEOUT_S = 120


def read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=nbformat.NO_CONVERT)


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 4, [p.name for p in NOTEBOOKS]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_headless(path, tmp_path):
    notebook = read(path)
    # the kernel's working directory is a scratch folder, so nothing a notebook writes lands in the repository
    client = nbclient.NotebookClient(notebook, kernel_name="python3", timeout=CELL_TIMEOUT_S,
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError, naming the cell, on the first error
    errors = [out for cell in notebook.cells for out in cell.get("outputs", []) if out.output_type == "error"]
    assert not errors


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_without_outputs(path):
    code_cells = [cell for cell in read(path).cells if cell.cell_type == "code"]
    assert code_cells
    with_outputs = [n for n, cell in enumerate(code_cells) if cell.outputs or cell.execution_count is not None]
    assert not with_outputs, f"{path.name}: clear the outputs of code cells {with_outputs}"
