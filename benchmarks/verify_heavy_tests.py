"""The heavy test cases: those marked ``@pytest.mark.heavy``, which the default ``python -m pytest`` leaves out
(``addopts = -m 'not heavy'`` in pyproject.toml) to keep it near a minute on two cores. Each has a representative
in the default run (one notebook, one ordering per problem, a shorter fuzz run, …); this runs the rest.

    python benchmarks/verify_heavy_tests.py [PYTEST ARGS]      (or python -m benchmarks.verify_heavy_tests)

runs ``python -m pytest -m heavy -v`` from the repository root, with its progress on the terminal, then writes
what ran, the pass/fail counts, the time and the command to benchmarks/results/verify_heavy_tests.md
(``--out`` to write elsewhere). Extra arguments go to pytest (e.g. ``-k notebook``, ``-x``). Exits with pytest's
status: 0 when every heavy case passed. ``python -m pytest -m ""`` runs the default and the heavy cases together.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "benchmarks", "results", "verify_heavy_tests.md")
OUTCOMES = ("passed", "failed", "error", "skipped")


def outcomes(junit_xml: str) -> list[dict]:
    """Each test case of pytest's JUnit report: id, file, outcome, seconds and (if not passed) the first line of
    its message."""
    cases = []
    for case in ET.parse(junit_xml).getroot().iter("testcase"):
        module = case.get("classname", "")
        file = module.replace(".", "/") + ".py" if module else "?"
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            element = case.find(tag)
            if element is not None:
                outcome = "failed" if tag == "failure" else tag
                message = next(iter((element.get("message") or element.text or "").strip().splitlines()), "")
                break
        cases.append({"id": f"{file}::{case.get('name')}", "file": file, "outcome": outcome,
                      "seconds": float(case.get("time") or 0.0), "message": message})
    return cases


def report(cases: list[dict], command: str, seconds: float, status: int) -> str:
    counts = {o: sum(c["outcome"] == o for c in cases) for o in OUTCOMES}
    verdict = "all passed" if status == 0 and cases else f"pytest exit status {status}"
    lines = ["# Heavy test cases: verification", "",
             f"`{command}` (from the repository root), {datetime.date.today().isoformat()}:",
             f"{len(cases)} case{'' if len(cases) == 1 else 's'} in {seconds:.0f} s wall time — {verdict}.", "",
             f"Python {platform.python_version()} on {platform.system()} {platform.machine()}, "
             f"{os.cpu_count()} cores (timings are noisy on shared machines).", "",
             "| outcome | cases |", "|---|---:|"]
    lines += [f"| {o} | {counts[o]} |" for o in OUTCOMES]
    by_file: dict[str, list[dict]] = defaultdict(list)
    for c in cases:
        by_file[c["file"]].append(c)
    lines += ["", "| file | cases | passed | not passed | seconds |", "|---|---:|---:|---:|---:|"]
    for file in sorted(by_file):
        group = by_file[file]
        passed = sum(c["outcome"] == "passed" for c in group)
        lines.append(f"| {file} | {len(group)} | {passed} | {len(group) - passed} | "
                     f"{sum(c['seconds'] for c in group):.1f} |")
    bad = [c for c in cases if c["outcome"] in ("failed", "error")]
    if bad:
        lines += ["", "Not passed:", ""]
        lines += [f"* `{c['id']}` ({c['outcome']}): {c['message'][:200]}" for c in bad]
    lines += ["", "Every case (seconds: call and fixtures; a module's shared setup falls on its first case):", "",
              "```"]
    lines += [f"{c['seconds']:7.2f}  {c['outcome']:<7}  {c['id']}" for c in cases]
    lines += ["```", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=OUT, help="the Markdown record (default: %(default)s)")
    args, pytest_args = parser.parse_known_args(argv)
    with tempfile.TemporaryDirectory(prefix="gtdyn-heavy-") as folder:
        junit = os.path.join(folder, "junit.xml")
        shown = ["python", "-m", "pytest", "-m", "heavy", "-v", *pytest_args]
        command = [sys.executable, *shown[1:], f"--junitxml={junit}", "-o", "junit_family=xunit2"]
        print(f"verify_heavy_tests: {shlex.join(shown)}", file=sys.stderr, flush=True)
        start = time.perf_counter()
        status = subprocess.call(command, cwd=ROOT)  # the output streams to this terminal: the progress
        seconds = time.perf_counter() - start
        cases = outcomes(junit) if os.path.exists(junit) else []
    text = report(cases, shlex.join(["python", "benchmarks/verify_heavy_tests.py", *pytest_args]), seconds, status)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)
    counts = ", ".join(f"{sum(c['outcome'] == o for c in cases)} {o}" for o in OUTCOMES)
    print(f"verify_heavy_tests: {len(cases)} heavy cases ({counts}) in {seconds:.0f} s; wrote {args.out}",
          file=sys.stderr)
    if not cases and status == 0:
        return 1  # nothing ran: no heavy case was collected
    return status


if __name__ == "__main__":
    sys.exit(main())
