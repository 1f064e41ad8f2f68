"""Benchmark charts. The reference path: elimination times per ordering (bars) and scaling with the number of
joints (log–log). Compiled solvers: µs per call against operation counts, and chains' scaling (log–log).
``rows`` are ``gtdyn.bench.orderings.Row``s."""

from __future__ import annotations

import textwrap

import numpy as np

from gtdyn.plot.figure import tight_layout
from gtdyn.problem import PROBLEM_KINDS as PROBLEMS


def _chain_axes(ax, sizes: list[int], label: str) -> None:
    """Log–log axes over serial chains of ``sizes`` joints, ticked at those sizes."""
    from matplotlib.ticker import NullLocator

    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(sizes, [str(n) for n in sizes])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("joints in a serial chain")
    ax.set_ylabel(label)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def bar_chart(rows: list, path: str, title: str) -> None:
    """Median time per method (elimination alone, and end to end), with IQR whiskers, one panel per problem."""
    from matplotlib.figure import Figure

    kinds = [k for k in PROBLEMS if any(r.problem == k for r in rows)]
    fig = Figure(figsize=(5.2 * len(kinds), 4.4))
    axes = fig.subplots(1, len(kinds), squeeze=False)[0]
    for ax, kind in zip(axes, kinds):
        sub = [r for r in rows if r.problem == kind]
        y = np.arange(len(sub))
        for offset, key, colour, label in ((-0.2, "elim_us", "#2196f3", "elimination"),
                                           (0.2, "solve_us", "#ff9800", "end to end")):
            med = [r.timings[key].median_us if key in r.timings else 0 for r in sub]
            iqr = [r.timings[key].iqr_us if key in r.timings else 0 for r in sub]
            ax.barh(y + offset, med, height=0.38, xerr=iqr, color=colour, label=label)
        ax.set_yticks(y, [r.method for r in sub], fontsize=8)
        ax.set_xscale("log")
        ax.set_xlabel("µs (median, IQR whiskers)")
        ax.set_title(f"{kind} dynamics", fontsize=10)
        ax.invert_yaxis()
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle(textwrap.fill(title, 150), fontsize=9)
    tight_layout(fig)
    fig.savefig(path, dpi=120)


def scaling_plot(rows: list, path: str, title: str) -> None:
    """Elimination time and DAG edges against the number of joints, log axes, one curve per ordering."""
    from matplotlib.figure import Figure

    kinds = [k for k in PROBLEMS if any(r.problem == k for r in rows)]
    fig = Figure(figsize=(5.2 * len(kinds), 8.0))
    axes = fig.subplots(2, len(kinds), squeeze=False)
    for col, kind in enumerate(kinds):
        sub = [r for r in rows if r.problem == kind and r.robot.startswith("chain")]
        for method in dict.fromkeys(r.method for r in sub):
            pts = sorted((r.dofs, r.timings["elim_us"].median_us, r.measures["edges"])
                         for r in sub if r.method == method)
            n, t, e = zip(*pts)
            axes[0][col].plot(n, t, marker="o", label=method)
            axes[1][col].plot(n, e, marker="o", label=method)
        sizes = sorted({r.dofs for r in sub})
        for row, label in ((0, "elimination µs (median)"), (1, "DAG edges")):
            _chain_axes(axes[row][col], sizes, label)
        axes[0][col].set_title(f"{kind} dynamics", fontsize=10)
    fig.suptitle(textwrap.fill(title, 110), fontsize=9)
    tight_layout(fig)
    fig.savefig(path, dpi=120)


# -- compiled solvers (rows of gtdyn.bench.compiled) ------------------------------------------------------

_MARKERS = {"inverse": "o", "forward": "s", "hybrid": "^"}
PINOCCHIO_NAME = {"inverse": "rnea", "forward": "aba", "hybrid": "rnea+crba+solve"}  # as gtdyn.bench.report's
PARALLEL_NAME = {"inverse": "rneaInParallel", "forward": "abaInParallel"}


def _plain_numbers(ax) -> None:
    """Log axes labelled 2, 5, 10, 200 rather than 2×10⁰; minor ticks labelled within less than a decade."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    plain = FuncFormatter(lambda value, _: f"{value:g}")
    for axis, (low, high) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
        if axis.get_scale() != "log" or isinstance(axis.get_major_formatter(), FuncFormatter):
            continue
        axis.set_major_formatter(plain)
        axis.set_minor_formatter(plain if 0 < low and high / low < 10 else NullFormatter())


def _fit(x, y):
    """Least squares of log y on log x: (exponent, factor), or None with fewer than 3 distinct x."""
    x, y = np.log(np.asarray(x, float)), np.log(np.asarray(y, float))
    if len(set(np.round(x, 9))) < 3:
        return None
    k, c = np.polyfit(x, y, 1)
    return float(k), float(np.exp(c))


def operations_fit(rows: list, time_key: str = "fast_us", ops_key: str = "fast_ops"):
    """(exponent, factor) of µs ≈ factor · ops^exponent over the rows that have both, or None."""
    pts = [(r.measures[ops_key], r.timings[time_key].median_us) for r in rows
           if ops_key in r.measures and time_key in r.timings and r.measures[ops_key] > 0]
    return _fit(*zip(*pts)) if len(pts) >= 3 else None


def operations_plot(rows: list, path: str, title: str) -> None:
    """Measured µs per call against operation counts, log–log, one point per (robot, problem, ordering),
    labelled by ordering; colour: robot, marker: problem. Panels: unchecked calls against the operations they
    execute (factor + one solve), checked calls against theirs (with refinement and condition estimate), and
    unchecked calls against the DAG's multiply-add estimate (``gtdyn.analysis.metrics``). Each panel has the
    least-squares line of log µs on log ops."""
    from matplotlib.figure import Figure

    panels = [("fast_ops", "fast_us", "operations per unchecked call (generated code)", "unchecked call µs"),
              ("executed_ops", "call_us", "operations per checked call (generated code)", "checked call µs"),
              ("ops", "fast_us", "DAG multiply-add estimate (gtdyn.analysis.metrics)", "unchecked call µs")]
    robots = list(dict.fromkeys(r.robot for r in rows))
    colours = {name: f"C{i % 10}" for i, name in enumerate(robots)}
    fig = Figure(figsize=(6.0 * len(panels), 5.6))
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (ops_key, time_key, xlabel, ylabel) in zip(axes, panels):
        use = [r for r in rows if ops_key in r.measures and time_key in r.timings and r.measures[ops_key] > 0]
        for r in use:
            x, y = r.measures[ops_key], r.timings[time_key].median_us
            ax.scatter([x], [y], color=colours[r.robot], marker=_MARKERS.get(r.problem, "o"), s=22)
            ax.annotate(r.method, (x, y), xytext=(2, 2), textcoords="offset points", fontsize=6, alpha=0.8)
        fit = operations_fit(use, time_key, ops_key)
        if fit:
            k, c = fit
            xs = np.geomspace(min(r.measures[ops_key] for r in use), max(r.measures[ops_key] for r in use), 50)
            ax.plot(xs, c * xs ** k, color="grey", lw=1, ls="--", label=f"fit: µs ∝ ops^{k:.2f}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
        _plain_numbers(ax)
    handles = [axes[0].scatter([], [], color=colours[n], marker="o", label=n) for n in robots]
    handles += [axes[0].scatter([], [], color="k", marker=m, label=k) for k, m in _MARKERS.items()
                if any(r.problem == k for r in rows)]
    axes[0].legend(handles=handles, fontsize=6, loc="upper left")
    for ax in axes[1:]:
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="upper left")
    fig.suptitle(textwrap.fill(title, 160), fontsize=9)
    tight_layout(fig)
    fig.savefig(path, dpi=130)


def compiled_scaling_plot(rows: list, path: str, title: str) -> None:
    """Serial chains (robots named ``chain…``): µs per call (checked solid, unchecked dashed) per ordering with
    Pinocchio's line; µs per state of unchecked batches (1 thread) with Pinocchio's parallel line; cold compile
    seconds. Log–log against the number of joints, one column per problem."""
    from matplotlib.figure import Figure

    chains = [r for r in rows if r.robot.startswith("chain")]
    kinds = [k for k in PROBLEMS if any(r.problem == k for r in chains)]
    fig = Figure(figsize=(5.6 * len(kinds), 12.0))
    axes = fig.subplots(3, len(kinds), squeeze=False)
    for col, kind in enumerate(kinds):
        sub = [r for r in chains if r.problem == kind]
        sizes = sorted({r.dofs for r in sub})
        for i, method in enumerate(dict.fromkeys(r.method for r in sub)):
            mine = sorted((r for r in sub if r.method == method), key=lambda r: r.dofs)
            n = [r.dofs for r in mine]
            colour = f"C{i}"
            axes[0][col].plot(n, [r.timings["call_us"].median_us for r in mine], marker="o", color=colour,
                              label=f"{method}, checked")
            axes[0][col].plot(n, [r.timings["fast_us"].median_us for r in mine], marker="o", ls="--", color=colour,
                              label=f"{method}, unchecked")
            batch = [(r.dofs, r.timings["fast_batch1_us"].median_us) for r in mine if "fast_batch1_us" in r.timings]
            if batch:
                axes[1][col].plot(*zip(*batch), marker="o", ls="--", color=colour, label=f"{method}, unchecked")
            axes[2][col].plot(n, [r.measures.get("compile_cold_s", np.nan) for r in mine], marker="o", color=colour,
                              label=method)
        for row, key, name in ((0, "pinocchio_us", f"Pinocchio {PINOCCHIO_NAME[kind]}"),
                               (1, "pin_parallel1_us", f"Pinocchio {PARALLEL_NAME.get(kind, '')}")):
            pts = [(n, np.median([r.timings[key].median_us for r in sub if r.dofs == n and key in r.timings]))
                   for n in sizes if any(r.dofs == n and key in r.timings for r in sub)]
            if pts:
                axes[row][col].plot(*zip(*pts), color="k", lw=2, marker="x", label=name)
        for row, label in ((0, "µs per call (median)"), (1, "µs per state, batch, 1 thread"),
                           (2, "compile seconds, cold")):
            _chain_axes(axes[row][col], sizes, label)
            _plain_numbers(axes[row][col])
        axes[0][col].set_title(f"{kind} dynamics, compiled", fontsize=10)
    fig.suptitle(textwrap.fill(title, 110), fontsize=9)
    tight_layout(fig)
    fig.savefig(path, dpi=120)
