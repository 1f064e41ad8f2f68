"""Benchmark charts: elimination times per ordering (bars) and scaling with the number of joints (log–log).
``rows`` are ``gtdyn.bench.orderings.Row``s."""

from __future__ import annotations

import textwrap

import numpy as np

from gtdyn.plot.figure import tight_layout
from gtdyn.problem import PROBLEM_KINDS as PROBLEMS


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
    from matplotlib.ticker import NullLocator

    kinds = [k for k in PROBLEMS if any(r.problem == k for r in rows)]
    fig = Figure(figsize=(5.2 * len(kinds), 8.0))
    axes = fig.subplots(2, len(kinds), squeeze=False)
    for col, kind in enumerate(kinds):
        sub = [r for r in rows if r.problem == kind and r.robot.startswith("chain")]
        for method in dict.fromkeys(r.method for r in sub):
            pts = sorted((r.dofs, r.timings["elim_us"].median_us, r.measures["edges"]) for r in sub if r.method == method)
            n, t, e = zip(*pts)
            axes[0][col].plot(n, t, marker="o", label=method)
            axes[1][col].plot(n, e, marker="o", label=method)
        sizes = sorted({r.dofs for r in sub})
        for row, label in ((0, "elimination µs (median)"), (1, "DAG edges")):
            ax = axes[row][col]
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xticks(sizes, [str(n) for n in sizes])
            ax.xaxis.set_minor_locator(NullLocator())
            ax.set_xlabel("joints in a serial chain")
            ax.set_ylabel(label)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
        axes[0][col].set_title(f"{kind} dynamics", fontsize=10)
    fig.suptitle(textwrap.fill(title, 110), fontsize=9)
    tight_layout(fig)
    fig.savefig(path, dpi=120)
