"""Produce benchmarks/results/: compiled solvers (``gtdyn.compile``) per ordering, timed side by side with
Pinocchio in the same process, for the PUMA 560 (next to paper 001's Tables I–II), UR5, Panda, Talos and serial
chains of 6 to 96 joints; Markdown tables, CSVs and two plots (time against operation count, chains' scaling).

    python -m benchmarks.run_all                           # the committed run (about 15 minutes here)
    python -m benchmarks.run_all --quick --out /tmp/bench  # a smoke run (PUMA, 6-joint chain; seconds)
    python -m benchmarks.run_all --reference               # the reference path instead (GTSAM elimination
                                                           # per ordering), into benchmarks/results/reference/
    python -m benchmarks.run_all --chains 6,12,24          # fewer chains

Every ordering of every problem runs on the robots. Compiling grows faster than linearly with a chain's
length (a 96-joint forward ABA solver takes minutes to compile), so chains run fewer orderings as they grow:
``gtdyn.bench.compiled.chain_orderings``. Progress goes to stderr.

The same measurements are available for any robot as ``gtdyn bench ROBOT --out DIR [--scaling] [--reference]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import gtdyn
from gtdyn import bench as B
from gtdyn.model.random import serial_chain
from gtdyn.orderings import applicable
from gtdyn.plot.bench import bar_chart, compiled_scaling_plot, operations_fit, operations_plot, scaling_plot
from gtdyn.progress import Progress

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
REFERENCE_CHAIN_SIZES = (3, 6, 12, 24, 48)
QUICK_REFERENCE_CHAIN_SIZES = (3, 6)
QUICK_ORDERINGS = {"inverse": ["rnea", "colamd"], "forward": ["aba", "colamd"], "hybrid": ["colamd"]}


def real_robots() -> dict[str, str]:
    """Robots from example-robot-data, if installed (the test extra brings it)."""
    try:
        from importlib.metadata import distribution

        root = str(distribution("example-robot-data").locate_file("cmeel.prefix/share/example-robot-data/robots"))
    except Exception:
        return {}
    paths = {"ur5": "ur_description/urdf/ur5_robot.urdf", "panda": "panda_description/urdf/panda.urdf",
             "talos (32 joints)": "talos_data/robots/talos_reduced.urdf"}
    return {name: os.path.join(root, rel) for name, rel in paths.items() if os.path.isfile(os.path.join(root, rel))}


def _load(path: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gtdyn.ModelWarning)
        return gtdyn.load_robot(path, transmissions="independent")  # as Pinocchio reads <mimic>


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help=f"output directory (default {RESULTS}, or its reference/ with --reference)")
    parser.add_argument("--quick", action="store_true",
                        help="few repetitions, the PUMA and a small chain: a smoke test")
    parser.add_argument("--reference", action="store_true", help="time the reference path (GTSAM elimination) instead")
    parser.add_argument("--chains", help="comma-separated chain sizes (default 6,12,24,48,96; 3,6,12,24,48 with "
                                         "--reference)")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.chains:
        args.chains = tuple(int(n) for n in args.chains.split(","))
    return reference(args) if args.reference else compiled(args)


# -- compiled solvers (the default) ---------------------------------------------------------------------------


def compiled(args) -> int:
    import tempfile

    out = args.out or RESULTS
    os.makedirs(out, exist_ok=True)
    if args.quick:
        repeat, inner, warmup, states, batch_repeat = 5, 2, 2, 100, 2
    else:
        repeat, inner, warmup, states, batch_repeat = 40, 10, 20, B.BATCH_STATES, 7
    sizes = args.chains or ((6,) if args.quick else B.CHAIN_SIZES)
    plan_for = (lambda kind: QUICK_ORDERINGS[kind]) if args.quick else applicable
    chain_plan = (lambda kind, n: [B.BASELINE[kind]]) if args.quick else B.chain_orderings
    puma = gtdyn.load_robot("puma560")
    robots = [(puma, puma.source)] + ([] if args.quick else [(_load(p), p) for p in real_robots().values()])
    total = len(robots) * sum(len(plan_for(k)) for k in B.PROBLEMS) \
        + sum(len(chain_plan(k, n)) for n in sizes for k in ("inverse", "forward"))
    progress = Progress("benchmark", total, enabled=True)
    load_before, started = os.getloadavg(), time.time()

    def run(robot, path, kind, orderings):
        return B.bench_compiled(robot, path, kind, B.benchmark_state(robot), orderings, repeat=repeat, inner=inner,
                                warmup=warmup, batch=states, batch_repeat=batch_repeat, progress=progress.step)

    rows = {}
    for robot, path in robots:
        rows[robot.name] = [r for kind in B.PROBLEMS for r in run(robot, path, kind, plan_for(kind))]
    chains = []
    with tempfile.TemporaryDirectory(prefix="gtdyn-chains-") as folder:
        for n in sizes:
            robot, path = B.chain_with_urdf(n, folder)
            for kind in ("inverse", "forward"):
                chains += run(robot, path, kind, chain_plan(kind, n))
    progress.close()
    minutes, load_after = (time.time() - started) / 60, os.getloadavg()

    about = B.machine_description(repeat, inner, warmup)
    command = "python -m benchmarks.run_all" + (" --quick" if args.quick else "") \
        + (f" --chains {','.join(map(str, sizes))}" if args.chains else "")
    every = [r for rs in rows.values() for r in rs] + chains
    fits = {key: operations_fit(every, t, o) for key, t, o in (("unchecked", "fast_us", "fast_ops"),
                                                              ("checked", "call_us", "executed_ops"),
                                                              ("DAG", "fast_us", "ops"))}
    lines = [
        "# gtdyn benchmark results: compiled solvers", "",
        f"Produced by `{command}` in {minutes:.0f} minutes on {about}. Load average (1/5/15 min) before: "
        f"{' '.join(f'{x:.1f}' for x in load_before)}, after: {' '.join(f'{x:.1f}' for x in load_after)}.", "",
        "Each ordering's solver is compiled (`gtdyn.compile`, outside the timed regions) into an empty private cache "
        "(cold), then again from that cache (cached). A call is `solver(q, v, x)` from Python at the benchmark "
        "state (`gtdyn.bench.benchmark_state`); *unchecked* is the same object code with `checks=False` (no "
        "refinement, backward error or condition estimate: an answer without a verdict, as Pinocchio's). "
        "Pinocchio (`rnea` / `aba` / rnea + crba + solve for hybrid) is called from Python on the same state, "
        "its samples interleaved with ours: × Pinocchio is the median of the paired ratios. Batches: "
        f"`solver.batch` on {states} random states, per state, next to `pin.rneaInParallel` / "
        "`pin.abaInParallel` (a `ModelPool`) on the same states and number of threads, medians of "
        f"{batch_repeat} interleaved batches; × is unchecked over Pinocchio. Ratio to RNEA / ABA: to that "
        "ordering's row of the same run. Ops per call: arithmetic operations the generated code executes in a "
        "checked call (unchecked in parentheses); DAG ops: `gtdyn.analysis.metrics`' multiply-add estimate of "
        "the elimination. Max rel. error: against the state's reference solution.", "",
        "## PUMA 560 next to paper 001's Tables I–II", "",
        "Ratios are to the RNEA row (inverse) or the ABA row (forward), the paper's and ours. The library rows: "
        "the paper's RBDL RNEA, our Pinocchio (measured interleaved with the RNEA / ABA row).", "",
        B.paper_table(rows[puma.name]),
        "## Time against operation count", "",
        "![µs per call against operations](compiled_vs_operations.png)", "",
        "Least-squares fits of log µs on log operations over every (robot, problem, ordering) and chain: "
        + "; ".join(f"{name}: µs ∝ ops^{fit[0]:.2f}" for name, fit in fits.items() if fit) + ".", ""]
    for name, robot_rows in rows.items():
        lines += [f"## {name}", "", B.compiled_tables(robot_rows)]
    lines += ["## Serial chains", "", "![chains](chains_scaling.png)", "",
              "Orderings per size (`gtdyn.bench.compiled.chain_orderings`): "
              + "; ".join(f"{n} joints: {', '.join(chain_plan('inverse', n))} (inverse), "
                          f"{', '.join(chain_plan('forward', n))} (forward)" for n in sizes) + ".", ""]
    label = lambda r: f"{r.dofs} joints, {r.method}"  # noqa: E731
    for kind in ("inverse", "forward"):
        lines += [B.compiled_call_table(chains, kind, f"{kind} dynamics, chains", label),
                  B.compiled_batch_table(chains, kind, f"{kind}, chains", label)]
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(lines))
    B.write_csv(every, os.path.join(out, "results.csv"), os.path.join(out, "samples.csv"))
    operations_plot(every, os.path.join(out, "compiled_vs_operations.png"),
                    f"compiled solvers: µs per call against operations — {about}")
    compiled_scaling_plot(chains, os.path.join(out, "chains_scaling.png"), f"serial chains, compiled — {about}")
    print(f"wrote {out}/results.md, results.csv, samples.csv, compiled_vs_operations.png, chains_scaling.png",
          file=sys.stderr)
    return 0


# -- the reference path (--reference) --------------------------------------------------------------------------


def reference(args) -> int:
    out = args.out or os.path.join(RESULTS, "reference")
    repeat, inner, warmup = (3, 1, 1) if args.quick else (40, 10, 20)
    sizes = args.chains or (QUICK_REFERENCE_CHAIN_SIZES if args.quick else REFERENCE_CHAIN_SIZES)
    others = {} if args.quick else real_robots()
    os.makedirs(out, exist_ok=True)

    puma = gtdyn.load_robot("puma560")
    robots = [(puma, puma.source)] + [(_load(p), p) for p in others.values()]
    total = sum(len(applicable(k)) + (k == "hybrid") for k in B.PROBLEMS) * len(robots) \
        + len(sizes) * (len(applicable("inverse")) + len(applicable("forward")))
    progress = Progress("benchmark", total, enabled=True)

    rows = {}
    for robot, path in robots:
        state = B.benchmark_state(robot)
        rows[robot.name] = []
        for kind in B.PROBLEMS:
            rows[robot.name] += B.bench_orderings(robot, kind, state, repeat=repeat, inner=inner, warmup=warmup,
                                                  progress=progress.step)
            rows[robot.name] += B.bench_pinocchio(robot, path, kind, state, repeat=repeat, warmup=warmup)
    scaling = B.bench_scaling([serial_chain(n) for n in sizes], repeat=max(3, repeat // 2), inner=max(1, inner // 2),
                              warmup=warmup, progress=progress.step)
    progress.close()

    about = B.machine_description(repeat, inner, warmup)
    command = "python -m benchmarks.run_all --reference" + (" --quick" if args.quick else "")
    lines = ["# gtdyn benchmark results: the reference path", "", f"Produced by `{command}` on {about}.", "",
             "Elimination: `eliminateSequential` on the prepared linear graph and ordering (Householder QR, our "
             "default; the constrained column is GTSAM's elimination of `Constrained` factors). End to end: one "
             "`*_dynamics` call. Ratios are to the RNEA row (inverse) or ABA row (forward, hybrid) of the same run. "
             "Max rel. error: against the state's reference solution.", ""]
    for name, robot_rows in rows.items():
        lines.append(f"## {name}\n")
        lines += [B.markdown_table(robot_rows, k) for k in B.PROBLEMS]
    lines.append("## Serial chains (elimination only)\n")
    for kind in ("inverse", "forward"):
        lines.append(f"| {kind}: joints | " + " | ".join(applicable(kind)) + " |")
        lines.append("|---" * (len(applicable(kind)) + 1) + "|")
        for n in sizes:
            cells = [next((f"{r.timings['elim_us'].median_us:.0f} µs, {int(r.measures['edges'])} edges" for r in scaling
                           if r.dofs == n and r.problem == kind and r.method == o), "–") for o in applicable(kind)]
            lines.append(f"| {n} | " + " | ".join(cells) + " |")
        lines.append("")
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(lines))
    all_rows = [r for rs in rows.values() for r in rs]
    B.write_csv(all_rows + scaling, os.path.join(out, "results.csv"), os.path.join(out, "samples.csv"))
    bar_chart(rows[puma.name], os.path.join(out, "puma560_orderings.png"), f"PUMA 560 — {about}")
    scaling_plot(scaling, os.path.join(out, "scaling.png"), f"serial chains — {about}")
    print(f"wrote {out}/results.md, results.csv, samples.csv, puma560_orderings.png, scaling.png", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
