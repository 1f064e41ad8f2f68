"""Cold compile time and call time, optimized (the default) against ``compile(..., quick=True)`` (LLVM's -O0 code
generator, no optimization pipeline), with Pinocchio's call beside them (issue 24, item 3): Talos's forward and
inverse dynamics and serial chains of 24, 48 and 96 joints (ABA), each compiled without the cache; and the
96-joint chain in the other named orderings.

    python -m benchmarks.quick_compile [--quick]      # --quick: Talos and the 24-joint chain

Call times: ``solver(q, v, x)`` from Python at one random state, checked and unchecked, medians of 15 samples of
200 calls, Pinocchio's ``aba`` / ``rnea`` interleaved. Writes benchmarks/results/quick_compile.md.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

import gtdyn
from benchmarks.derivatives import load  # robots by name, and their URDF paths
from gtdyn.bench.compiled import PinocchioBaseline, chain_with_urdf
from gtdyn.bench.report import machine_description
from gtdyn.bench.timing import measure_interleaved, paired_ratio
from gtdyn.progress import Progress

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
REPEAT, INNER, WARMUP = 15, 200, 20
COMPILES = 3  # cold compiles of each solver, the median reported: one varies by ~10 % on this machine
ORDERINGS = ("colamd", "nd", "md", "crba", "natural")  # the 96-joint chain's other named forward orderings


def row(robot, path: str, kind: str) -> dict:
    pin = PinocchioBaseline(path, robot, kind)
    q, v, x = np.random.default_rng(0).uniform(-0.5, 0.5, (3, robot.num_dofs))
    out = {}
    for quick in (False, True):
        seconds = []
        for _ in range(COMPILES):
            started = time.perf_counter()
            checked = gtdyn.compile(robot, kind, use_cache=False, quick=quick)
            seconds.append(time.perf_counter() - started)
        out[quick, "compile"] = float(np.median(seconds))
        out[quick, "spread"] = (min(seconds), max(seconds))
        out[quick, "megabytes"] = object_megabytes(checked)
        out["operations"] = sum(checked.operations.values())
        unchecked = gtdyn.compile(robot, kind, use_cache=False, quick=quick, checks=False)
        timed = measure_interleaved({"checked": lambda: checked(q, v, x), "unchecked": lambda: unchecked(q, v, x),
                                     "pin": pin.single(*pin.vectors(q, v, x))}, REPEAT, INNER, WARMUP)
        for key in ("checked", "unchecked"):
            out[quick, key] = timed[key].median_us
            out[quick, key + "_x"] = paired_ratio(timed[key], timed["pin"])
        out["pin"] = timed["pin"].median_us
    return out


def chain_orderings(robot) -> dict:
    """Cold compiles (``COMPILES``) of the chain's forward dynamics in each other named ordering: the median
    seconds and their range, operations and code size, or the memory budget's refusal (orderings that fill in
    densely)."""
    from gtdyn.errors import BudgetError

    out = {}
    for ordering in ORDERINGS:
        seconds = []
        try:
            for _ in range(COMPILES):
                started = time.perf_counter()
                solver = gtdyn.compile(robot, "forward", ordering=ordering, use_cache=False)
                seconds.append(time.perf_counter() - started)
        except BudgetError as error:
            out[ordering] = str(error).split(" — ")[0]
            continue
        out[ordering] = (float(np.median(seconds)), min(seconds), max(seconds), sum(solver.operations.values()),
                         object_megabytes(solver))
        print(f"chain {robot.num_dofs} {ordering}: compile {out[ordering][0]:.2f} s", flush=True)
    return out


def object_megabytes(solver) -> float:
    """The size of a solver's machine code (all its object parts), in MB."""
    code = solver._record["object"]
    return sum(len(part) for part in (code if isinstance(code, list) else [code])) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="Talos and the 24-joint chain only")
    args = parser.parse_args()
    folder = tempfile.mkdtemp()
    cases = [("talos", "inverse"), ("talos", "forward"), ("chain 24", "forward")]
    if not args.quick:
        cases += [("chain 48", "forward"), ("chain 96", "forward")]
    results = {}
    with Progress("quick_compile", len(cases), enabled=True) as progress:
        for name, kind in cases:
            if name.startswith("chain"):
                robot, path = chain_with_urdf(int(name.split()[1]), folder)[:2]
            else:
                robot, path = load(name)
            results[name, kind] = r = row(robot, str(path), kind)
            r["joints"] = robot.num_dofs
            progress.step(f"{name} {kind}")
            print(f"{name} {kind}: compile {r[False, 'compile']:.2f} -> {r[True, 'compile']:.2f} s; checked "
                  f"{r[False, 'checked_x']:.2f}x -> {r[True, 'checked_x']:.2f}x Pinocchio", flush=True)
    lines = ["# Quick compiles (issue 24, item 3)", "",
             f"`python -m benchmarks.quick_compile{' --quick' if args.quick else ''}`; "
             + machine_description(REPEAT, INNER, WARMUP), "",
             f"Cold compile (no cache) of the checked solver, default ordering, the median of {COMPILES} (range in "
             "brackets; programs of over 2 MB compile in parts side by side); calls from Python at one random "
             "state, × Pinocchio as paired ratios. *Quick*: `gtdyn.compile(..., quick=True)` — LLVM's -O0 code "
             "generator and no optimization pipeline; the same operations, so the same answers bit for bit "
             "(`tests/test_compiled.py`). Goals: cold compile ≤ 3 s for Talos, ≤ 15 s for a 96-joint chain; per "
             "call on the 96-joint chain ≤ 1.5× Pinocchio.", "",
             "| robot | problem | joints | operations | object code MB: default / quick | compile s: default / quick | "
             "checked µs: default / quick (× Pinocchio) | unchecked µs: default / quick (× Pinocchio) | "
             "Pinocchio µs |", "|---|---|---|---|---|---|---|---|---|"]
    for (name, kind), r in results.items():
        spread = " / ".join(f"{r[quick, 'compile']:.2f} ({r[quick, 'spread'][0]:.2f}–{r[quick, 'spread'][1]:.2f})"
                            for quick in (False, True))
        lines.append(f"| {name} | {kind} | {r['joints']} | {r['operations']:,} | {r[False, 'megabytes']:.2f} / "
                     f"{r[True, 'megabytes']:.2f} | {spread} | "
                     f"{r[False, 'checked']:.2f} / {r[True, 'checked']:.2f} ({r[False, 'checked_x']:.2f}× / "
                     f"{r[True, 'checked_x']:.2f}×) | {r[False, 'unchecked']:.2f} / {r[True, 'unchecked']:.2f} "
                     f"({r[False, 'unchecked_x']:.2f}× / {r[True, 'unchecked_x']:.2f}×) | {r['pin']:.2f} |")
    if not args.quick:
        lines += ["", f"The 96-joint chain's forward dynamics in the other named orderings (ABA: above), the median "
                  f"of {COMPILES} cold compiles (range in brackets):", "",
                  "| ordering | compile s | operations | object code MB |", "|---|---|---|---|"]
        for ordering, r in chain_orderings(chain_with_urdf(96, folder)[0]).items():
            lines.append(f"| {ordering} | refused: {r} | | |" if isinstance(r, str) else
                         f"| {ordering} | {r[0]:.2f} ({r[1]:.2f}–{r[2]:.2f}) | {r[3]:,} | {r[4]:.2f} |")
    lines += ["", "![compile time and code size against joints](quick_compile_scaling.png)"]
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "quick_compile.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    plot(results)
    print(f"wrote {os.path.join(RESULTS, 'quick_compile.md')} and quick_compile_scaling.png")


def plot(results: dict) -> None:
    """Compile time, code size and call time against joints: the chains as lines, Talos as points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    chains = sorted(((r["joints"], r) for (name, _), r in results.items() if name.startswith("chain")),
                    key=lambda item: item[0])
    others = [(name, kind, r) for (name, kind), r in results.items() if not name.startswith("chain")]
    panels = [("compile", "cold compile s"), ("megabytes", "object code MB"), ("unchecked", "unchecked call µs")]
    for ax, (key, label) in zip(axes, panels, strict=True):
        for quick, style in ((False, "o-"), (True, "s--")):
            ax.plot([n for n, _ in chains], [r[quick, key] for _, r in chains], style,
                    label=f"chains, {'quick' if quick else 'default'}")
            for name, kind, r in others:
                ax.plot([r["joints"]], [r[quick, key]], "^" if kind == "forward" else "v", color="k" if not quick
                        else "0.5", label=f"{name} {kind}{', quick' if quick else ''}")
        if key == "unchecked":
            ax.plot([n for n, _ in chains], [r["pin"] for _, r in chains], "x:", color="r", label="Pinocchio")
        ax.set_xlabel("joints")
        ax.set_ylabel(label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        joints = sorted({r["joints"] for r in results.values()})
        ax.set_xticks(joints, [str(n) for n in joints])
        ax.minorticks_off()
        ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=7)
    axes[2].legend(fontsize=7)
    fig.suptitle("Compiled dynamics against joints (python -m benchmarks.quick_compile)", fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(RESULTS, "quick_compile_scaling.png"), dpi=120)


if __name__ == "__main__":
    main()
