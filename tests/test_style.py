"""The habits of issue 19, checked by the README's test command: ruff clean (pyproject.toml's [tool.ruff]) on the
package, the tests and the benchmarks, and no measured timings in the package's docstrings or comments (numbers
belong in benchmarks/results/)."""

import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_ruff_is_clean():
    ruff = shutil.which("ruff") or (pathlib.Path(sys.executable).parent / "ruff")
    if not pathlib.Path(ruff).exists():
        pytest.skip("ruff is not installed (it comes with the test extra)")
    done = subprocess.run([str(ruff), "check", "gtdyn", "tests", "benchmarks"], cwd=ROOT, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


# a number followed by a unit of time: "2.9 s", "20 s", "7.7 µs", "12 ms"
TIMING = re.compile(r"\b\d+(\.\d+)?\s?(µs|us|ms|s)\b(?!\w)")


def test_no_measured_timings_in_docstrings_or_comments():
    """Timings in docstrings go stale; a constant that sets a time (a progress threshold) says so in code."""
    found = []
    for path in sorted((ROOT / "gtdyn").rglob("*.py")):
        for k, line in enumerate(path.read_text().splitlines(), 1):
            text = line.strip()
            comment = text.startswith("#") or ("#" in line and not text.startswith(("f\"", "\"")))
            in_doc = not text.startswith(("print(", "raise", "return", "f\"", "\"", "warnings.", "LOG."))
            if TIMING.search(line) and (comment or in_doc) and "=" not in text.split("#")[0]:
                found.append(f"{path.relative_to(ROOT)}:{k}: {text}")
    assert found == []
