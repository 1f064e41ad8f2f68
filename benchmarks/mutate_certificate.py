"""A small mutation pass over the compiled solvers' verdict code (issue 25, item 6): each mutation switches one of
the certificate's checks off in a scratch copy of the source, and the suite's compiled tests must then fail. A
mutation the tests do not notice (a *survivor*) is a check nothing exercises.

    python -m benchmarks.mutate_certificate

Writes benchmarks/results/mutate_certificate.md.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

from gtdyn.progress import Progress

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results", "mutate_certificate.md")
CERTIFICATE = os.path.join("gtdyn", "compiled", "certificate.py")
VALIDITY = os.path.join("gtdyn", "compiled", "validity.py")  # the input checks the certificate keeps
UNIFORM = os.path.join("gtdyn", "compiled", "uniform_bound.py")  # the bound on u proven at every state
A_PRIORI = os.path.join("gtdyn", "compiled", "a_priori.py")  # the a-priori backward error of substitution plans
TESTS = ["tests/test_certificate.py", "tests/test_certificate_a_priori.py", "tests/test_uniform_bound.py",
         "tests/test_compiled.py", "tests/test_compiled_floating.py",
         "tests/test_edges.py", "tests/test_loops.py", "tests/test_transmissions.py"]
# (what is switched off, the line as it is, the line mutated[, the file: the certificate's by default])
MUTATIONS = [
    ("the condition limit", "CONDITION_LIMIT = WARN_CONDITION / 10", "CONDITION_LIMIT = 1e300"),
    ("the bound's limit", "BOUND_LIMIT = WARN_CONDITION / 2", "BOUND_LIMIT = 1e300"),
    ("the error bound κ · backward error", "ERROR_BOUND = 1e-10 ", "ERROR_BOUND = 1e300 "),
    ("the loop-closure check", "CLOSURE_LIMIT = 0.1 * CLOSURE_TOLERANCE", "CLOSURE_LIMIT = 1e300"),
    ("the refinement step", "        x.append(fn.load(start[\"xr\"] + k) + fn.load(start[\"sol\"] + k))",
     "        x.append(fn.load(start[\"xr\"] + k))"),
    ("the angle bound", "        ok = ok * trace.le(trace.fabs(fn.load(layout.start[\"inputs\"] + j)), MAX_ANGLE)",
     "        pass", VALIDITY),
    ("the finite-input check", "    ok = finite(inputs(fn, layout))", "    ok = 1.0", VALIDITY),
    ("the coupling check", "            ok = ok * trace.le(gap * gap, bound * bound)", "            pass", VALIDITY),
    ("the a-priori backward error γ_m", "    return longest * UNIT_ROUNDOFF / (1 - longest * UNIT_ROUNDOFF)",
     "    return 0.0", A_PRIORI),
    ("the longest row in γ_m", "        longest = max(longest, len(solved))", "        longest = 1", A_PRIORI),
    ("substitution alone (no row operations)", "    if plan.tape or len(plan.pivots) != len(plan.rows):",
     "    if len(plan.pivots) != len(plan.rows):", A_PRIORI),
    ("the solve's rows are the residual's",
     "            return None  # the solve's row is not the residual's: the lemma says nothing of b − A x",
     "            pass", A_PRIORI),
    ("a finite answer for the a-priori bound", "            sure = others * within * finite_sum(x_sum) * trace.le(",
     "            sure = others * within * 1.0 * trace.le("),
    ("the smallest right-hand side", "SMALLEST_RHS = 1e-280", "SMALLEST_RHS = 0.0"),
    ("sin and cos within [−1, 1] in ū", "    return np.maximum(bottom, -1.0), np.minimum(top, 1.0)",
     "    return np.maximum(bottom, -0.5), np.minimum(top, 0.5)", UNIFORM),
    ("ū above the sums", "    bound = math.sqrt(u_squared) * (1.0 + MARGIN)", "    bound = math.sqrt(u_squared) * 0.01",
     UNIFORM),
    ("an angle's terms at their joint largest", "            total += float(np.max(sums))",
     "            total += float(np.min(sums))", UNIFORM),
    ("the prismatic joints' limits ū assumed", "        ok = ok * trace.le(low, value) * trace.le(value, high)",
     "        pass", UNIFORM),
]


def run(mutation: tuple, folder: str) -> tuple[bool, str]:
    """Apply one mutation in a copy of the source and run the compiled tests there: (caught, last line)."""
    name, before, after, source = (*mutation, CERTIFICATE)[:4]
    copy = os.path.join(folder, "src")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".git", "__pycache__", ".venv", "*.egg-info"))
    path = os.path.join(copy, source)
    with open(path) as f:
        text = f.read()
    if before not in text:
        raise SystemExit(f"{name}: the line to mutate is not in {source}: {before!r}")
    mutated = text.replace(before, after, 1)
    try:  # a mutation that breaks the syntax would be "caught" by every test: it is the script's error
        compile(mutated, path, "exec")
    except SyntaxError as error:
        raise SystemExit(f"{name}: the mutated {source} does not parse: {error}") from None
    with open(path, "w") as f:
        f.write(mutated)
    env = {**os.environ, "PYTHONPATH": copy, "GTDYN_CACHE_DIR": os.path.join(folder, "cache", name.replace(" ", "_"))}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *TESTS], cwd=copy,
                            env=env, capture_output=True, text=True)
    last = (result.stdout.strip().splitlines() or [""])[-1]
    return result.returncode != 0, last


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as folder, Progress("mutations", len(MUTATIONS), enabled=True) as progress:
        for mutation in MUTATIONS:
            caught, last = run(mutation, folder)
            rows.append((mutation[0], caught, last))
            progress.step(mutation[0])
    lines = ["# The certificate's checks under mutation", "", "`python -m benchmarks.mutate_certificate`: each "
             f"check of `{CERTIFICATE}` (and of `{VALIDITY}`, the input checks it keeps) switched off in a scratch "
             f"copy, then `pytest {' '.join(TESTS)}`; a mutation the tests pass is a survivor, a check no test "
             "exercises.", "",
             "| switched off | caught | the run's last line |", "|---|---|---|"]
    lines += [f"| {name} | {'yes' if caught else '**survivor**'} | {last} |" for name, caught, last in rows]
    with open(RESULTS, "w") as f:
        f.write("\n".join(lines) + "\n")
    for name, caught, last in rows:
        print(f"{name}: {'caught' if caught else 'SURVIVED'} ({last})")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
