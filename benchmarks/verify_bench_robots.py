"""``gtdyn bench`` on every example-robot-data URDF that loads (issue 20: the benchmark's own states must keep the
robot's couplings and limits, so that it works on any robot a user brings).

    python -m benchmarks.verify_bench_robots [--only SUBSTRING]

For each file: load it (a model error is the file's, not the benchmark's, and is listed as such), then run
``gtdyn bench FILE --problem forward --orderings aba --repeat 3 --inner 1 --warmup 1 --batch 0`` in this process
and record its exit status and first error line. Writes ``benchmarks/results/verify_bench_robots.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import io
import os
import sys
import time
import warnings
from importlib.metadata import distribution

import gtdyn
from gtdyn.cli import main as gtdyn_main

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "verify_bench_robots.md")
BENCH = ["--problem", "forward", "--orderings", "aba", "--repeat", "3", "--inner", "1", "--warmup", "1",
         "--batch", "0"]


def robots_root() -> str:
    return str(distribution("example-robot-data").locate_file("cmeel.prefix/share/example-robot-data/robots"))


def check(path: str) -> tuple[str, str]:
    """(outcome, detail): "model error" (the file does not load), "ok", "refused" (a typed error the command
    explains: a robot whose forward dynamics are singular, one with no joints), or "FAIL" (anything else: a
    traceback, a bug) with the command's error line."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gtdyn.load_robot(path)
    except gtdyn.ModelError as e:
        return "model error", str(e).splitlines()[0]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = gtdyn_main(["bench", path, *BENCH])
    if status == 0:
        return "ok", ""
    errors = [line for line in err.getvalue().splitlines() if line.startswith(("gtdyn: error:", "gtdyn: internal"))]
    return ("refused" if status == 1 else "FAIL"), (errors or ["(no message)"])[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="")
    args = parser.parse_args(argv)
    root = robots_root()
    paths = sorted(p for p in glob.glob(os.path.join(root, "**", "*.urdf"), recursive=True) if args.only in p)
    rows, started = [], time.perf_counter()
    for k, path in enumerate(paths, 1):
        name = os.path.relpath(path, root)
        print(f"[{k}/{len(paths)}] {name} …", file=sys.stderr, flush=True)
        outcome, detail = check(path)
        rows.append((name, outcome, detail.replace(root + os.sep, "")[:160]))  # names relative to the robots folder
    counts: dict[str, int] = {}
    for _, outcome, _ in rows:
        counts[outcome] = counts.get(outcome, 0) + 1
    summary = (f"{len(rows)} files in {time.perf_counter() - started:.0f} s: "
               + ", ".join(f"{v} {n}" for v, n in sorted(counts.items())))
    lines = ["# gtdyn bench on every example-robot-data robot", "",
             f"`python -m benchmarks.verify_bench_robots` (`gtdyn bench FILE {' '.join(BENCH)}`), {summary}.", "",
             "| file | outcome | detail |", "|---|---|---|",
             *(f"| {name} | {outcome} | {detail} |" for name, outcome, detail in rows), ""]
    with open(RESULTS, "w") as f:
        f.write("\n".join(lines))
    print(summary)
    return 1 if counts.get("FAIL") else 0


if __name__ == "__main__":
    sys.exit(main())
