"""Why ``gtdyn.compiled.objects`` turns LLVM's post-RA scheduler off, which optimization pipeline (-O level) it
runs, from what size it takes the fast code generator (``objects.FAST_CODEGEN_ABOVE``), why stores are written
next to their values (``gtdyn.compiled.dataflow.EARLY_STORES``), and why spilled values share stack slots (LLVM's
default): compile time and the speed of the code each setting makes, on a robot's forward and inverse dynamics
(with derivatives).

    python -m benchmarks.codegen_options [--last N] [robot ...]
        (default: ur5 talos; a bundled name or a URDF path; --last N: only the last N settings)

LLVM options are global to a process, so each setting compiles in a fresh process (no cache). There the native
entry points (``fast``: factor and solve; ``main``: the checked solve; ``dfast``: the unchecked solve and its
derivatives) are timed on one workspace: medians of 15 samples of 500 calls. Code of the same IR, scheduled
differently, computes the same bits; what can change is its speed. Prints a markdown table.
"""

from __future__ import annotations

import json
import subprocess
import sys

CHILD = '''
import json, sys, time, warnings
import numpy as np
import gtdyn
from gtdyn.compiled import dataflow, objects
objects.CODEGEN_OPTIONS = tuple(OPTIONS)
objects.PIPELINE_SPEED_LEVEL = LEVEL
objects.FAST_CODEGEN_ABOVE = FAST_ABOVE
dataflow.EARLY_STORES = EARLY
sys.path.insert(0, ROOT)
from benchmarks.derivatives import load, states

def median_us(call):
    samples = []
    for _ in range(15):
        started = time.perf_counter()
        for _ in range(500):
            call()
        samples.append((time.perf_counter() - started) / 500 * 1e6)
    return float(np.median(samples))

robot, _ = load(ROBOT)
q, v, x = next(states(robot, 1, seed=5))
rows = []
for problem, ordering in (("forward", "aba"), ("inverse", "rnea")):
    started = time.perf_counter()
    gtdyn.compile(robot, problem, ordering=ordering, use_cache=False)
    plain = time.perf_counter() - started
    started = time.perf_counter()
    solver = gtdyn.compile(robot, problem, ordering=ordering, derivatives=True, use_cache=False)
    with_derivatives = time.perf_counter() - started
    solver.derivatives(q, v, x)
    entry, pointer = solver._native.entry, solver._pointer
    rows.append(dict(problem=problem, compile=plain, compile_derivatives=with_derivatives,
                     **{name: median_us(lambda: entry[name](pointer)) for name in ("fast", "main", "dfast")}))
print(json.dumps(rows))
'''

NEVER = 10 ** 12  # objects.FAST_CODEGEN_ABOVE: no program takes the fast code generator
# setting: (LLVM options, pipeline -O level, stores early, FAST_CODEGEN_ABOVE)
SETTINGS = {"LLVM's default (-O2)": ((), 2, False, NEVER),
            "post-RA scheduler off, -O2": (("-post-RA-scheduler=false",), 2, False, NEVER),
            "post-RA scheduler off, -O1": (("-post-RA-scheduler=false",), 1, False, NEVER),
            "post-RA scheduler off, -O1, stores early": (("-post-RA-scheduler=false",), 1, True, NEVER),
            "the same, no stack-slot sharing":
                (("-post-RA-scheduler=false", "-no-stack-slot-sharing"), 1, True, NEVER),
            "post-RA scheduler off, no pipeline (-O0), stores early": (("-post-RA-scheduler=false",), 0, True, NEVER),
            "the same and the fast code generator": (("-post-RA-scheduler=false",), 0, True, 0),
            "post-RA scheduler off, -O1, stores early, the fast code generator (fast instruction selection, "
            "no machine scheduler)": (("-post-RA-scheduler=false",), 1, True, 0)}


def main(argv: list[str]) -> None:
    import os

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    last = 0  # --last N: only the last N settings
    if argv[:1] == ["--last"]:
        last, argv = int(argv[1]), argv[2:]
    robots = argv or ["ur5", "talos"]
    print("| robot | problem | setting | compile s | with derivatives s | fast µs | main µs | dfast µs |")
    print("|---|---|---|---|---|---|---|---|")
    for robot in robots:
        for setting, (options, level, early, fast_above) in list(SETTINGS.items())[-last:]:
            code = (f"OPTIONS, LEVEL, EARLY, FAST_ABOVE, ROOT, ROBOT = {options!r}, {level}, {early}, {fast_above}, "
                    f"{root!r}, {robot!r}\n" + CHILD)
            done = subprocess.run([sys.executable, "-c", code],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                print(f"| {robot} | | {setting} | failed: {done.stderr.strip().splitlines()[-1]} |||||")
                continue
            for row in json.loads(done.stdout.strip().splitlines()[-1]):
                print(f"| {robot} | {row['problem']} | {setting} | {row['compile']:.2f} | "
                      f"{row['compile_derivatives']:.2f} | {row['fast']:.2f} | {row['main']:.2f} | "
                      f"{row['dfast']:.2f} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
