"""Produce benchmarks/results/: the PUMA 560 tables (inverse, forward, hybrid; every ordering; Pinocchio),
a few real robots, and the serial-chain scaling study, with CSVs and plots.

    python -m benchmarks.run_all                 # the committed run (a few minutes)
    python -m benchmarks.run_all --quick --out /tmp/bench   # a smoke run (seconds)

The same measurements are available for any robot as ``gtdyn bench ROBOT --out DIR [--scaling]``.
"""

from __future__ import annotations

import argparse
import os
import sys

import gtdyn
from gtdyn import bench as B
from gtdyn.model.random import serial_chain
from gtdyn.plot.bench import bar_chart, scaling_plot
from gtdyn.orderings import applicable

CHAIN_SIZES = (3, 6, 12, 24, 48)
QUICK_CHAIN_SIZES = (3, 6)


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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    parser.add_argument("--quick", action="store_true", help="few repetitions, small chains: a smoke test")
    args = parser.parse_args(argv)
    repeat, inner, warmup = (3, 1, 1) if args.quick else (40, 10, 20)
    sizes = QUICK_CHAIN_SIZES if args.quick else CHAIN_SIZES
    others = {} if args.quick else real_robots()
    os.makedirs(args.out, exist_ok=True)

    puma = gtdyn.load_robot("puma560")
    robots = [(puma, puma.source)] + [(gtdyn.load_robot(p), p) for p in others.values()]
    total = sum(len(applicable(k)) + (k == "hybrid") for k in B.PROBLEMS) * len(robots) \
        + len(sizes) * (len(applicable("inverse")) + len(applicable("forward")))
    progress = B.Progress(total)

    rows = {}
    for robot, path in robots:
        state = B.benchmark_state(robot)
        rows[robot.name] = []
        for kind in B.PROBLEMS:
            rows[robot.name] += B.bench_orderings(robot, kind, state, repeat=repeat, inner=inner, warmup=warmup,
                                                  progress=progress)
            rows[robot.name] += B.bench_pinocchio(robot, path, kind, state, repeat=repeat, warmup=warmup)
    scaling = B.bench_scaling([serial_chain(n) for n in sizes], repeat=max(3, repeat // 2), inner=max(1, inner // 2),
                              warmup=warmup, progress=progress)

    about = B.machine_description(repeat, inner, warmup)
    command = "python -m benchmarks.run_all" + (" --quick" if args.quick else "")
    lines = ["# gtdyn benchmark results", "", f"Produced by `{command}` on {about}.", "",
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
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write("\n".join(lines))
    all_rows = [r for rs in rows.values() for r in rs]
    B.write_csv(all_rows + scaling, os.path.join(args.out, "results.csv"), os.path.join(args.out, "samples.csv"))
    bar_chart(rows[puma.name], os.path.join(args.out, "puma560_orderings.png"), f"PUMA 560 — {about}")
    scaling_plot(scaling, os.path.join(args.out, "scaling.png"), f"serial chains — {about}")
    print(f"wrote {args.out}/results.md, results.csv, samples.csv, puma560_orderings.png, scaling.png", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
