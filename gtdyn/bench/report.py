"""Benchmark reports: the machine and versions, Markdown tables like the paper's Tables I–II (the reference path's
elimination, ``markdown_table``; compiled solvers, ``compiled_tables`` and ``paper_table``), CSV files."""

from __future__ import annotations

import csv
import datetime
import os
import platform

import numpy as np

from gtdyn.bench.orderings import BASELINE, Row


def machine(versions: list[str]) -> str:
    """CPU, cores and OS, then Python's, numpy's and the given versions ("gtsam 4.3.0", …)."""
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    versions = [f"Python {platform.python_version()}", f"numpy {np.__version__}"] + versions
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}; {', '.join(versions)}"


def machine_description(repeat: int, inner: int, warmup: int) -> str:
    versions = [f"gtsam {_version('gtsam')}", f"gtdyn {_version('gtdyn')}"]
    try:
        import pinocchio

        versions.append(f"pinocchio {pinocchio.__version__}")
    except ImportError:
        versions.append("pinocchio not installed")
    return (f"{datetime.date.today().isoformat()}; {machine(versions)}; medians of {repeat} samples × {inner} calls "
            f"after {warmup} warm-up calls")


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
    """Summary figures per row (timings: median and IQR in µs; measures; the maximum relative error);
    optionally every raw sample (µs) in a second file."""
    keys = sorted({k for r in rows for k in r.timings})
    standard = ["edges", "fill_in", "ops", "largest_clique"]
    measures = standard + sorted({k for r in rows for k in r.measures} - set(standard))
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["robot", "dofs", "problem", "method"] + [f"{k}_median" for k in keys] + [f"{k}_iqr" for k in keys]
                   + measures + ["max_rel_error"])
        for r in rows:
            w.writerow([r.robot, r.dofs, r.problem, r.method]
                       + [f"{r.timings[k].median_us:.3f}" if k in r.timings else "" for k in keys]
                       + [f"{r.timings[k].iqr_us:.3f}" if k in r.timings else "" for k in keys]
                       + [_csv_number(r.measures[k]) if k in r.measures else "" for k in measures]
                       + [f"{r.max_error:.3e}"])
    if samples_path:
        with open(samples_path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["robot", "problem", "method", "measure", "sample", "us"])
            for r in rows:
                for k, t in r.timings.items():
                    for i, s in enumerate(t.samples):
                        w.writerow([r.robot, r.problem, r.method, k, i, f"{s * 1e6:.3f}"])


def _csv_number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.6g}"


# -- compiled solvers --------------------------------------------------------------------------------------

PINOCCHIO_NAME = {"inverse": "rnea", "forward": "aba", "hybrid": "rnea+crba+solve"}
PARALLEL_NAME = {"inverse": "rneaInParallel", "forward": "abaInParallel"}


def _us(x: float) -> str:
    """µs to three significant digits or so, without exponents."""
    if not np.isfinite(x):
        return "–"
    return f"{x:.2f}" if x < 10 else f"{x:.1f}" if x < 100 else f"{x:.0f}"


def _times(x: float) -> str:
    return "–" if not np.isfinite(x) else f"{x:.2f}×" if x < 10 else f"{x:.0f}×"


def _median(r: Row, key: str) -> float:
    return r.timings[key].median_us if key in r.timings else float("nan")


def _measure(r: Row, key: str) -> float:
    return float(r.measures.get(key, float("nan")))


def _baseline(rows: list[Row], r: Row) -> Row | None:
    """The paper's reference row (RNEA / ABA ordering) of the same robot and problem."""
    return next((b for b in rows if b.robot == r.robot and b.problem == r.problem and b.method == BASELINE[r.problem]),
                None)


def compiled_call_table(rows: list[Row], kind: str, title: str | None = None, label=None) -> str:
    """Single calls of compiled solvers (``gtdyn.bench.compiled``): checked and unchecked µs, the ratio to the
    RNEA / ABA ordering's row, × Pinocchio (paired samples of the same run), operations, DAG measures, compile
    seconds. ``label(row)`` names a row (default: its ordering)."""
    rows = [r for r in rows if r.problem == kind]
    if not rows:
        return ""
    label = label or (lambda r: r.method)
    title = title or f"{kind} dynamics, {rows[0].robot}"
    base = BASELINE[kind].upper()
    lines = [f"| {title} | µs (IQR) | ratio to {base} | × Pinocchio | unchecked µs | × Pinocchio "
             f"| Pinocchio {PINOCCHIO_NAME[kind]} µs | ops per call (unchecked) | DAG edges | DAG ops "
             f"| compile s: cold / cached | max rel. error |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        b = _baseline(rows, r)
        ratio = _median(r, "call_us") / _median(b, "call_us") if b else float("nan")
        call = r.timings.get("call_us")
        lines.append(
            f"| {label(r)} | {_us(call.median_us)} ({_us(call.iqr_us)}) | {ratio:.3g} "
            f"| {_times(_measure(r, 'call_x_pinocchio'))} | {_us(_median(r, 'fast_us'))} "
            f"| {_times(_measure(r, 'fast_x_pinocchio'))} | {_us(_median(r, 'pinocchio_us'))} "
            f"| {_measure(r, 'executed_ops'):.0f} ({_measure(r, 'fast_ops'):.0f}) | {_measure(r, 'edges'):.0f} "
            f"| {_measure(r, 'ops'):.0f} | {_measure(r, 'compile_cold_s'):.2f} / {_measure(r, 'compile_cached_s'):.3f} "
            f"| {r.max_error:.1e}{_fallback_note(r)} |")
    return "\n".join(lines) + "\n"


def _fallback_note(r: Row) -> str:
    n = int(_measure(r, "fallbacks")) if np.isfinite(_measure(r, "fallbacks")) else 0
    return f" ({n} fallbacks)" if n else ""


def compiled_batch_table(rows: list[Row], kind: str, title: str | None = None, label=None) -> str:
    """Batches: µs per state of ``solver.batch`` (checked / unchecked) against Pinocchio's ``*InParallel`` on the
    same states and threads and a Python loop of its single call; × is unchecked over Pinocchio, paired."""
    rows = [r for r in rows if r.problem == kind and "batch_states" in r.measures]
    if not rows:
        return ""
    label = label or (lambda r: r.method)
    threads = sorted({int(k[len("batch"):-len("_us")]) for r in rows for k in r.timings
                      if k.startswith("batch") and k.endswith("_us")})
    states = int(rows[0].measures["batch_states"])
    title = title or f"{kind} dynamics, {rows[0].robot}"
    parallel = PARALLEL_NAME.get(kind, "–")
    head = [f"{t} thread{'s' if t > 1 else ''}: ours, checked / unchecked | Pinocchio {parallel} | ×" for t in threads]
    lines = [f"| {title}: µs per state, {states} states | " + " | ".join(head)
             + f" | Python loop of {PINOCCHIO_NAME[kind]} |",
             "|---" * (1 + 3 * len(threads) + 1) + "|"]
    for r in rows:
        cells = []
        for t in threads:
            cells += [f"{_us(_median(r, f'batch{t}_us'))} / {_us(_median(r, f'fast_batch{t}_us'))}",
                      _us(_median(r, f"pin_parallel{t}_us")), _times(_measure(r, f"fast_batch{t}_x_pinocchio"))]
        lines.append(f"| {label(r)} | " + " | ".join(cells) + f" | {_us(_median(r, 'pin_loop_us'))} |")
    return "\n".join(lines) + "\n"


def paper_table(rows: list[Row]) -> str:
    """The PUMA 560 next to paper 001's Tables I–II: µs and ratios to the RNEA (inverse) / ABA (forward) row, the
    paper's and ours (compiled, checked and unchecked), and the dedicated library of each (the paper: RBDL's
    RNEA; ours: Pinocchio, measured interleaved with the baseline row)."""
    from gtdyn.bench.compiled import PAPER_RBDL_RNEA_US, PAPER_US

    lines = ["| PUMA 560 | paper (µs) | paper ratio | compiled (µs) | ratio | unchecked (µs) | ratio "
             "| × Pinocchio (checked / unchecked) | ops per call (unchecked) | DAG edges | DAG ops |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for kind, paper in PAPER_US.items():
        base_paper = paper[BASELINE[kind]]
        base = next((r for r in rows if r.problem == kind and r.method == BASELINE[kind]), None)
        b_call, b_fast = (_median(base, "call_us"), _median(base, "fast_us")) if base else (float("nan"),) * 2
        for method, us in paper.items():
            r = next((r for r in rows if r.problem == kind and r.method == method), None)
            if r is None:
                lines.append(f"| {kind} {method.upper()} | {us} | {us / base_paper:.2f} "
                             "| – | – | – | – | – | – | – | – |")
                continue
            call, fast = _median(r, "call_us"), _median(r, "fast_us")
            lines.append(
                f"| {kind} {method.upper()} | {us} | {us / base_paper:.2f} | {_us(call)} | {call / b_call:.2f} "
                f"| {_us(fast)} | {fast / b_fast:.2f} | {_times(_measure(r, 'call_x_pinocchio'))} / "
                f"{_times(_measure(r, 'fast_x_pinocchio'))} | {_measure(r, 'executed_ops'):.0f} "
                f"({_measure(r, 'fast_ops'):.0f}) | {_measure(r, 'edges'):.0f} | {_measure(r, 'ops'):.0f} |")
        library = _median(base, "pinocchio_us") if base else float("nan")
        paper_library = (f"{PAPER_RBDL_RNEA_US} | {PAPER_RBDL_RNEA_US / base_paper:.2f}" if kind == "inverse"
                         else "– | –")
        name = "paper: RBDL's RNEA; ours: " if kind == "inverse" else ""
        lines.append(f"| {kind}: library ({name}Pinocchio {PINOCCHIO_NAME[kind]}) | {paper_library} | {_us(library)} "
                     f"| {library / b_call:.2f} | {_us(library)} | {library / b_fast:.2f} | 1 | | | |")
    return "\n".join(lines) + "\n"


def compiled_tables(rows: list[Row], kinds=("inverse", "forward", "hybrid")) -> str:
    """Per problem: the single-call table, then the batch table."""
    return "\n".join(t for kind in kinds
                     for t in (compiled_call_table(rows, kind), compiled_batch_table(rows, kind)) if t)
