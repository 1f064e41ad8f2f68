"""Benchmark reports: the machine and versions, Markdown tables like the paper's Tables I–II, CSV files."""

from __future__ import annotations

import csv
import datetime
import os
import platform

import numpy as np

from gtdyn.bench.orderings import BASELINE, Row


def machine_description(repeat: int, inner: int, warmup: int) -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    versions = [f"Python {platform.python_version()}", f"numpy {np.__version__}", f"gtsam {_version('gtsam')}",
                f"gtdyn {_version('gtdyn')}"]
    try:
        import pinocchio

        versions.append(f"pinocchio {pinocchio.__version__}")
    except ImportError:
        versions.append("pinocchio not installed")
    return (f"{datetime.date.today().isoformat()}; {cpu}, {os.cpu_count()} cores, {platform.system()} "
            f"{platform.release()}; {', '.join(versions)}; medians of {repeat} samples × {inner} calls after "
            f"{warmup} warm-up calls")


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


def markdown_table(rows: list[Row], kind: str) -> str:
    """A table like the paper's Tables I–II, with ratios to the RNEA (inverse) or ABA (forward, hybrid) row."""
    rows = [r for r in rows if r.problem == kind]
    base = next((r for r in rows if r.method == BASELINE[kind]), None)
    base_elim = base.timings["elim_us"].median_us if base else float("nan")
    base_solve = base.timings["solve_us"].median_us if base and "solve_us" in base.timings else float("nan")
    lines = [f"| {kind} dynamics, {rows[0].robot} | elimination µs (IQR) | ratio to {BASELINE[kind].upper()} "
             f"| constrained elim. µs | end-to-end µs (IQR) | ratio | DAG edges | fill-in | ops | max rel. error |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        def cell(key, base_value):
            if key not in r.timings:
                return "–", "–"
            t = r.timings[key]
            return f"{t.median_us:.1f} ({t.iqr_us:.1f})", f"{t.median_us / base_value:.3g}"
        elim, elim_ratio = cell("elim_us", base_elim)
        solve, solve_ratio = cell("solve_us", base_solve)
        hard = f"{r.timings['elim_constrained_us'].median_us:.1f}" if "elim_constrained_us" in r.timings else "–"
        m = r.measures
        lines.append(f"| {r.method} | {elim} | {elim_ratio} | {hard} | {solve} | {solve_ratio} | "
                     f"{m.get('edges', '–') if not m else int(m['edges'])} | {int(m['fill_in']) if m else '–'} | "
                     f"{int(m['ops']) if m else '–'} | {r.max_error:.1e} |")
    return "\n".join(lines) + "\n"


def write_csv(rows: list[Row], path: str, samples_path: str | None = None) -> None:
    """Summary figures per row; optionally every raw sample (µs) in a second file."""
    keys = sorted({k for r in rows for k in r.timings})
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["robot", "dofs", "problem", "method"] + [f"{k}_median" for k in keys] + [f"{k}_iqr" for k in keys]
                   + ["edges", "fill_in", "ops", "largest_clique", "max_rel_error"])
        for r in rows:
            w.writerow([r.robot, r.dofs, r.problem, r.method]
                       + [f"{r.timings[k].median_us:.3f}" if k in r.timings else "" for k in keys]
                       + [f"{r.timings[k].iqr_us:.3f}" if k in r.timings else "" for k in keys]
                       + [r.measures.get(k, "") for k in ("edges", "fill_in", "ops", "largest_clique")]
                       + [f"{r.max_error:.3e}"])
    if samples_path:
        with open(samples_path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["robot", "problem", "method", "measure", "sample", "us"])
            for r in rows:
                for k, t in r.timings.items():
                    for i, s in enumerate(t.samples):
                        w.writerow([r.robot, r.problem, r.method, k, i, f"{s * 1e6:.3f}"])
