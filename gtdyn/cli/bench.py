"""``gtdyn bench``: time every ordering against each other and against Pinocchio; print Markdown, and with
--out write tables, samples and plots."""

from __future__ import annotations

import os

from gtdyn.cli.inputs import load, writable_directory, writing
from gtdyn.cli.messages import CLIError
from gtdyn.orderings import STRATEGIES, applicable


def cmd_bench(args) -> None:
    from gtdyn import bench as B
    from gtdyn.model.random import serial_chain
    from gtdyn.plot.bench import bar_chart, scaling_plot

    if args.out:  # before any timing: a bad directory must not cost a whole benchmark
        writable_directory(args.out, "--out")
    robot = load(args.robot)
    problems = B.PROBLEMS if args.problem == "all" else (args.problem,)
    chosen = [x.strip() for x in args.orderings.split(",")] if args.orderings else None
    if chosen:
        unknown = [x for x in chosen if x not in STRATEGIES]
        if unknown:
            raise CLIError(f"--orderings: unknown {', '.join(unknown)}; known: {', '.join(STRATEGIES)}")
    state = B.benchmark_state(robot)
    plan = {k: [o for o in (chosen or applicable(k)) if o in applicable(k)] for k in problems}
    sizes = [3, 6, 12, 24, 48] if args.scaling else []
    total = sum(len(v) + (k == "hybrid") for k, v in plan.items()) + len(sizes) * 2 * len(STRATEGIES)
    progress = B.Progress(total)
    rows = []
    for kind in problems:
        rows += B.bench_orderings(robot, kind, state, plan[kind], repeat=args.repeat, inner=args.inner,
                                  warmup=args.warmup, progress=progress)
        rows += B.bench_pinocchio(robot, robot.source, kind, state, repeat=args.repeat, warmup=args.warmup)
    scaling = B.bench_scaling([serial_chain(n) for n in sizes], repeat=max(3, args.repeat // 2),
                              progress=progress) if sizes else []
    progress.done = progress.total - 1
    progress("done")
    about = B.machine_description(args.repeat, args.inner, args.warmup)
    text = [f"# gtdyn benchmark: {robot.name}", "", about, ""] + [B.markdown_table(rows, k) for k in problems]
    print("\n".join(text))
    if args.out:
        with writing(args.out):
            with open(os.path.join(args.out, "results.md"), "w") as f:
                f.write("\n".join(text))
            B.write_csv(rows + scaling, os.path.join(args.out, "results.csv"), os.path.join(args.out, "samples.csv"))
            bar_chart(rows, os.path.join(args.out, "orderings.png"), f"{robot.name}: {about}")
            if scaling:
                scaling_plot(scaling, os.path.join(args.out, "scaling.png"), about)
        print(f"wrote {args.out}/results.md, results.csv, samples.csv, orderings.png"
              + (", scaling.png" if scaling else ""))
