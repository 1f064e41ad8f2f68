"""``gtdyn bench``: time each ordering's compiled solver against Pinocchio in the same process (``--reference``:
the reference path's elimination instead); print Markdown, and with --out write tables, samples and plots."""

from __future__ import annotations

import os
import warnings

from gtdyn.cli.inputs import load, writable_directory, writing
from gtdyn.cli.messages import CLIError
from gtdyn.orderings import PROBLEM_KINDS, STRATEGIES, applicable
from gtdyn.progress import Progress

SCALING_SIZES = {"compiled": (6, 12, 24), "reference": (3, 6, 12, 24, 48)}


def _orderings(args) -> list[str] | None:
    chosen = [x.strip() for x in args.orderings.split(",")] if args.orderings else None
    if chosen:
        unknown = [x for x in chosen if x not in STRATEGIES]
        if unknown:
            raise CLIError(f"--orderings: unknown {', '.join(unknown)}; known: {', '.join(STRATEGIES)}")
    return chosen


def _plan(args, chosen: list[str] | None) -> dict[str, list[str]]:
    """The orderings to time for each problem --problem names: the chosen ones that apply to it (default: every
    applicable one). A problem none of them applies to is an error (its table would have no gtdyn rows); chosen
    ones skipped for a problem are a warning."""
    problems = PROBLEM_KINDS if args.problem == "all" else (args.problem,)
    plan = {k: [o for o in (chosen or applicable(k)) if o in applicable(k)] for k in problems}
    empty = [k for k in problems if not plan[k]]
    if empty:
        what = f"{chosen[0]} does not apply" if len(chosen) == 1 else f"none of {', '.join(chosen)} applies"
        others = [k for k in problems if plan[k]]
        raise CLIError(f"--orderings: {what} to {' or '.join(empty)} dynamics ("
                       + "; ".join(f"for {k} dynamics use {', '.join(applicable(k))}" for k in empty) + ")"
                       + (f"; or give --problem {' or '.join(others)}" if others else ""))
    for k in problems:
        skipped = [o for o in chosen or () if o not in plan[k]]
        if skipped:
            warnings.warn(f"--orderings: {', '.join(skipped)} {'does' if len(skipped) == 1 else 'do'} not apply to "
                          f"{k} dynamics, skipped: timing {', '.join(plan[k])} for it", stacklevel=2)
    return plan


def _threads(text: str) -> tuple[int, ...]:
    try:
        threads = tuple(int(t) for t in text.split(","))
    except ValueError:
        threads = ()
    if not threads or min(threads) < 1:
        raise CLIError(f"--threads: expected comma-separated thread counts of at least 1, got '{text}'")
    return threads


def cmd_bench(args) -> None:
    if args.out:  # before any timing: a bad directory must not cost a whole benchmark
        writable_directory(args.out, "--out")
    plan = _plan(args, _orderings(args))
    if args.batch < 0:
        raise CLIError("--batch: expected a number of states, 0 or more")
    threads = _threads(args.threads)
    if args.lanes and args.reference:
        raise CLIError("--lanes: SIMD lanes are for compiled solvers; the reference path (--reference) has none")
    robot = load(args.robot, args.base, args.transmissions)
    if robot.floating_base:
        raise CLIError(f"{robot.name} has a floating base, which gtdyn bench does not cover yet (its Pinocchio "
                       "comparison is for fixed bases; python -m benchmarks.floating times floating robots against "
                       "Pinocchio's free flyer); give --base fixed to time it welded to the world")
    if not robot.num_dofs:
        raise CLIError(f"{robot.name} has no moving joints (every joint is fixed): there are no dynamics to time")
    (_reference if args.reference else _compiled)(args, robot, plan, threads)


def _compiled(args, robot, plan, threads) -> None:
    import tempfile

    from gtdyn import bench as B
    from gtdyn.plot.bench import compiled_scaling_plot, operations_plot

    problems = tuple(plan)
    state = B.benchmark_state(robot)
    sizes = SCALING_SIZES["compiled"] if args.scaling else ()
    chain_kinds = [k for k in ("inverse", "forward") if k in problems]
    total = sum(map(len, plan.values())) + sum(len(B.chain_orderings(k, n)) for n in sizes for k in chain_kinds)
    progress = Progress("benchmark", total, enabled=True)
    options = dict(repeat=args.repeat, inner=args.inner, warmup=args.warmup, batch=args.batch, threads=threads,
                   batch_repeat=min(args.repeat, 7), progress=progress.step, lanes=args.lanes)
    path = robot.source if str(robot.source).lower().endswith(".urdf") else None
    rows = [r for kind in problems for r in B.bench_compiled(robot, path, kind, state, plan[kind], **options)]
    scaling = []
    with tempfile.TemporaryDirectory(prefix="gtdyn-chains-") as folder:
        for n in sizes:
            chain, chain_path = B.chain_with_urdf(n, folder)
            for kind in chain_kinds:
                scaling += B.bench_compiled(chain, chain_path, kind, B.benchmark_state(chain),
                                            B.chain_orderings(kind, n), **options)
    progress.close()
    about = B.machine_description(args.repeat, args.inner, args.warmup)
    text = [f"# gtdyn benchmark: {robot.name}, compiled solvers", "", about + ".", "",
            "µs per call from Python (checked; unchecked: checks=False), × Pinocchio as paired samples of the same "
            "run" + (f"; batches: µs per state of {args.batch} states" if args.batch else "")
            + ("; solvers compiled with lanes=True (batches four states per pass in SIMD lanes)"
               if args.lanes and args.batch else "")
            + "; compile seconds cold / cached.", ""]
    if robot.name == "puma560" and {"inverse", "forward"} <= set(problems):
        text += ["PUMA 560 next to paper 001's Tables I–II:", "", B.paper_table(rows)]
    text += [B.compiled_tables(rows, problems)]
    if scaling:
        label = lambda r: f"{r.dofs} joints, {r.method}"  # noqa: E731
        text += ["Serial chains:", ""] + [B.compiled_call_table(scaling, k, f"{k} dynamics, chains", label)
                                          for k in chain_kinds]
    print("\n".join(text))
    if args.out:
        with writing(args.out):
            _write_tables(args.out, text, rows + scaling)
            operations_plot(rows + scaling, os.path.join(args.out, "operations.png"), f"{robot.name}: {about}")
            if scaling:
                compiled_scaling_plot(scaling, os.path.join(args.out, "scaling.png"), about)
        print(f"wrote {args.out}/results.md, results.csv, samples.csv, operations.png"
              + (", scaling.png" if scaling else ""))


def _write_tables(folder: str, text: list[str], rows: list) -> None:
    """results.md (the printed tables), results.csv and samples.csv in ``folder``."""
    from gtdyn import bench as B

    with open(os.path.join(folder, "results.md"), "w") as f:
        f.write("\n".join(text))
    B.write_csv(rows, os.path.join(folder, "results.csv"), os.path.join(folder, "samples.csv"))


def _reference(args, robot, plan, threads) -> None:
    from gtdyn import bench as B
    from gtdyn.model.random import serial_chain
    from gtdyn.plot.bench import bar_chart, scaling_plot

    problems = tuple(plan)
    state = B.benchmark_state(robot)
    sizes = SCALING_SIZES["reference"] if args.scaling else []
    total = sum(len(v) + (k == "hybrid") for k, v in plan.items()) + len(sizes) * 2 * len(STRATEGIES)
    progress = Progress("benchmark", total, enabled=True)
    rows = []
    for kind in problems:
        rows += B.bench_orderings(robot, kind, state, plan[kind], repeat=args.repeat, inner=args.inner,
                                  warmup=args.warmup, progress=progress.step)
        rows += B.bench_pinocchio(robot, robot.source, kind, state, repeat=args.repeat, warmup=args.warmup)
    scaling = B.bench_scaling([serial_chain(n) for n in sizes], repeat=max(3, args.repeat // 2),
                              progress=progress.step) if sizes else []
    progress.close()
    about = B.machine_description(args.repeat, args.inner, args.warmup)
    text = ([f"# gtdyn benchmark: {robot.name}, reference path", "", about, ""]
            + [B.markdown_table(rows, k) for k in problems])
    print("\n".join(text))
    if args.out:
        with writing(args.out):
            _write_tables(args.out, text, rows + scaling)
            bar_chart(rows, os.path.join(args.out, "orderings.png"), f"{robot.name}: {about}")
            if scaling:
                scaling_plot(scaling, os.path.join(args.out, "scaling.png"), about)
        print(f"wrote {args.out}/results.md, results.csv, samples.csv, orderings.png"
              + (", scaling.png" if scaling else ""))
