"""The checked call and the batches against Pinocchio (issue 24, items 1 and 4), interleaved in one process:

* per call from Python, at ``benchmark_state``: ``solver(q, v, x)`` checked and ``checks=False`` against
  ``pin.rnea`` / ``pin.aba`` (paired ratios);
* per state in a batch of N random states, one thread and two: ``solver.batch`` state by state
  (``compile(..., lanes=False)``, and the default's first ``LANES_AFTER`` states) and in SIMD lanes (the
  default's batches once its lane code is compiled), checked and unchecked, against ``pin.rneaInParallel`` /
  ``pin.abaInParallel``;
* how long a default solver's batches run state by state before its lane code, compiled in the background from
  a cold start, takes over (wall time, batches running all along);
* how many of the batch's states a bound settled (u, or Schur's u_S behind it; the rest took the estimate's
  branch).

    python -m benchmarks.checked_call [--quick]      # PUMA 560, UR5, Talos; --quick: PUMA and UR5

Writes benchmarks/results/checked_call.md, checked_call.png and checked_call_tier_up.png.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import gtdyn
from benchmarks.derivatives import load  # robots by name, and their URDF paths
from gtdyn.bench.compiled import PinocchioBaseline, batch_states, given_vector
from gtdyn.bench.orderings import benchmark_state
from gtdyn.bench.report import machine_description
from gtdyn.bench.timing import measure_interleaved, paired_ratio
from gtdyn.compiled.certificate import A_PRIORI, BY_BOUND, BY_SCHUR
from gtdyn.compiled.lanes import LANES_AFTER
from gtdyn.progress import Progress

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
REPEAT, INNER, WARMUP = 40, 20, 20
BATCH, BATCH_REPEAT = 2000, 9
SMALL = 4  # states of a small batch (``gtdyn.compiled.small_batches``: calls), timed as a call is
GIVE_UP_S = 120.0  # tier_up's wait for the lanes
GOALS = {"call": 1.5, "fast": 1.0, "lanes_fast1": 0.35, "lanes1": 0.7}  # the default batch (lanes1) ≤ 1.0 too


def measure(robot: gtdyn.Robot, path: str, kind: str) -> dict:
    """Paired ratios to Pinocchio (keys as ``GOALS``, plus the two-thread ones) and the bound's share."""
    pin = PinocchioBaseline(path, robot, kind)
    state = benchmark_state(robot)
    x = given_vector(robot, kind, state)
    checked, fast = gtdyn.compile(robot, kind), gtdyn.compile(robot, kind, checks=False)
    for solver in (checked, fast):  # what the default's batches reach after LANES_AFTER states
        assert solver.compile_lanes(wait=True)
    scalar, scalar_fast = gtdyn.compile(robot, kind, lanes=False), gtdyn.compile(robot, kind, lanes=False, checks=False)
    Q, V, X = batch_states(robot, kind, None, BATCH)
    few = [a[:SMALL] for a in (Q, V, X)]
    single = measure_interleaved({"call": lambda: checked(state.q, state.v, x),
                                  "fast": lambda: fast(state.q, state.v, x),
                                  "pin": pin.single(*pin.vectors(state.q, state.v, x)),
                                  "small": lambda: checked.batch(*few),
                                  "pin_small": pin.parallel(*pin.vectors(*few), 1)}, REPEAT, INNER, WARMUP)
    out = {key: paired_ratio(single[key], single["pin"]) for key in ("call", "fast")}
    out["pin_us"] = single["pin"].median_us
    out["small"] = paired_ratio(single["small"], single["pin_small"])
    out["small_us"] = single["small"].median_us
    checked(state.q, state.v, x)
    out["call_way"] = {0.0: "estimate", BY_BOUND: "bound", BY_SCHUR: "Schur",
                       A_PRIORI: "bound, a-priori backward error"}[checked._ws[checked._bounded]]
    QP, VP, XP = pin.vectors(Q, V, X)
    for t in (1, 2):
        timed = measure_interleaved({f"batch{t}": lambda t=t: scalar.batch(Q, V, X, threads=t),
                                     f"batch_fast{t}": lambda t=t: scalar_fast.batch(Q, V, X, threads=t),
                                     f"lanes{t}": lambda t=t: checked.batch(Q, V, X, threads=t),
                                     f"lanes_fast{t}": lambda t=t: fast.batch(Q, V, X, threads=t),
                                     "pin": pin.parallel(QP, VP, XP, t)}, BATCH_REPEAT, 1, 1)
        out.update({key: paired_ratio(timing, timed["pin"]) for key, timing in timed.items() if key != "pin"})
        out[f"pin_parallel{t}_us"] = timed["pin"].median_us / BATCH
    assert np.array_equal(checked.batch(Q, V, X), scalar.batch(Q, V, X))  # lanes: bit for bit
    settled = 0
    for q, v, xx in zip(Q, V, X):
        checked(q, v, xx)
        settled += checked._ws[checked._bounded] != 0.0
    out["settled"] = settled / BATCH
    out["fallbacks"] = checked.fallbacks + scalar.fallbacks
    out["tier_up_s"], out["tier_up_batches"], out["timeline"] = tier_up(robot, kind, Q, V, X)
    return out


def tier_up(robot: gtdyn.Robot, kind: str, Q, V, X, after: int = 20) -> tuple[float, int, list]:
    """Seconds from a cold default solver's first batch past ``LANES_AFTER`` states until its batches run in lanes
    (the lane code traced again and compiled in a worker process), the batches of ``len(Q)`` states it ran state
    by state meanwhile, and the timeline: (seconds since that batch began, µs per state, in lanes) for each batch,
    ``after`` more once the lanes are there. Every answer is checked against the first, bit for bit."""
    solver = gtdyn.compile(robot, kind, use_cache=False)
    first = solver.batch(Q, V, X)
    started, timeline = time.perf_counter(), []
    solver.compile_lanes(wait=False)
    seconds = None
    while seconds is None or sum(lanes for _, _, lanes in timeline) < after:
        if seconds is None and time.perf_counter() - started > GIVE_UP_S:
            break  # no lanes (a failed compile is logged): the report says so
        began = time.perf_counter()
        assert np.array_equal(solver.batch(Q, V, X), first)
        timeline.append((began - started, (time.perf_counter() - began) / len(Q) * 1e6, bool(solver.lanes)))
        if solver.lanes and seconds is None:
            seconds = began - started
    return seconds, sum(not lanes for _, _, lanes in timeline), timeline


def plot_tier_up(results: dict, path: str) -> None:
    """µs per state of each batch against the seconds since the first batch past ``LANES_AFTER`` states."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4))
    for (name, kind), r in results.items():
        t, us, _ = zip(*r["timeline"])
        ax.plot(t, us, lw=1, label=f"{name} {kind}")
    ax.set_yscale("log")
    ax.set_xlabel("seconds since the batch that started the lane compile")
    ax.set_ylabel("µs per state (checked, one thread)")
    ax.set_title(f"Default solvers, cold: batches of {BATCH} states, state by state until their lanes are compiled")
    ax.legend(fontsize=8, ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def after(r: dict) -> str:
    """The "lanes after" cell: seconds (batches run state by state meanwhile)."""
    if r["tier_up_s"] is None:
        return f"none after {GIVE_UP_S:.0f} s"
    return f"{r['tier_up_s']:.1f} s ({r['tier_up_batches']})"


def report(results: dict, header: str) -> str:
    lines = ["# The checked call and batches against Pinocchio (issue 24, items 1 and 4)", "", header, "",
             "Ratios are medians of paired samples (ours / Pinocchio's, interleaved). Per call: `solver(q, v, x)` from "
             "Python at `benchmark_state` against `pin.rnea` / `pin.aba`. Batches: per state, "
             f"{BATCH} random states, against `pin.rneaInParallel` / `pin.abaInParallel` with the same threads; "
             "*scalar* runs state by state (`compile(..., lanes=False)`, and a default solver's first "
             f"{LANES_AFTER:,} batched states), *lanes* four states per pass (a default solver's batches once its "
             "lane code, compiled in the background, is ready; or `compile(..., lanes=True)`; the same answers bit "
             "for bit). *Lanes after*: from a cold default solver's first batch past that count, the seconds until "
             f"its batches ran in lanes, and the batches of {BATCH} it ran state by state meanwhile. *Batch of "
             f"{SMALL}*: a checked `solver.batch` of the batch's first {SMALL} states (a few states run as calls) "
             "against `*InParallel` on one thread, timed as a call is. "
             "*Bound*: the share of the batch's states a bound (u, or Schur's u_S behind "
             "it) settled in a single call (the rest took the estimate's branch as well); the per-call figure is "
             "marked with the way `benchmark_state` was certified (bound — with the a-priori backward error of "
             "a plan of substitutions where it says so —, Schur or estimate). Goals (issue 24): "
             "checked call ≤ 1.5×, unchecked ≤ 1.0×, the default checked batch ≤ 1.0× (in lanes once they are "
             "compiled), lanes unchecked ≤ 0.35× and checked ≤ 0.7× on one thread.", "",
             "| robot | problem | Pinocchio µs | call checked | call unchecked | 1 thread: scalar checked / unchecked "
             "| lanes checked / unchecked | 2 threads: scalar checked / unchecked | lanes checked / unchecked "
             f"| lanes after | bound | fallbacks | batch of {SMALL}: µs (×) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (name, kind), r in results.items():
        def cell(key):
            goal = GOALS.get(key)
            return f"{r[key]:.2f}×" + (" ✗" if goal is not None and r[key] > goal else "")
        way = r["call_way"]
        lines.append(f"| {name} | {kind} | {r['pin_us']:.2f} | {cell('call')} ({way}) | {cell('fast')} | "
                     f"{cell('batch1')} / {r['batch_fast1']:.2f}× | {cell('lanes1')} / {cell('lanes_fast1')} | "
                     f"{r['batch2']:.2f}× / {r['batch_fast2']:.2f}× | {r['lanes2']:.2f}× / {r['lanes_fast2']:.2f}× | "
                     f"{after(r)} | {r['settled']:.0%} | {r['fallbacks']} | {r['small_us']:.2f} ({r['small']:.2f}×) |")
    lines += ["", "✗: misses the issue's goal on this run.", "", "![ratios](checked_call.png)", "",
              "Lanes after, batch by batch (cold default solvers; each batch's µs per state, on a log scale):", "",
              "![tier-up](checked_call_tier_up.png)", ""]
    return "\n".join(lines)


def plot(results: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [("call", "call, checked"), ("fast", "call, unchecked"), ("batch1", "batch state by state, checked"),
            ("lanes1", "batch in lanes (default, once compiled), checked"), ("lanes_fast1", "lanes, unchecked")]
    fig, ax = plt.subplots(figsize=(10, 4))
    width = 0.8 / len(keys)
    labels = [f"{name}\n{kind}" for name, kind in results]
    for i, (key, label) in enumerate(keys):
        ax.bar(np.arange(len(results)) + i * width, [r[key] for r in results.values()], width, label=label)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(np.arange(len(results)) + 0.4 - width / 2, labels)
    ax.set_ylabel("× Pinocchio (one thread)")
    ax.legend(fontsize=8, ncol=3)
    ax.set_title("gtdyn compiled calls and batches against Pinocchio (lower is faster)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="PUMA 560 and UR5 only")
    args = parser.parse_args()
    robots = ["puma560", "ur5"] if args.quick else ["puma560", "ur5", "talos"]
    cases = [(name, kind) for name in robots for kind in ("inverse", "forward")]
    results = {}
    with Progress("checked_call", len(cases), enabled=True) as progress:
        for name, kind in cases:
            robot, path = load(name)
            results[name, kind] = r = measure(robot, path, kind)
            progress.step(f"{name} {kind}")
            print(f"{name} {kind}: call {r['call']:.2f}× / {r['fast']:.2f}×, batch {r['batch1']:.2f}×, lanes "
                  f"{r['lanes1']:.2f}× / {r['lanes_fast1']:.2f}× Pinocchio; bound {r['settled']:.0%}", flush=True)
    os.makedirs(RESULTS, exist_ok=True)
    header = (f"`python -m benchmarks.checked_call{' --quick' if args.quick else ''}`; "
              + machine_description(REPEAT, INNER, WARMUP))
    with open(os.path.join(RESULTS, "checked_call.md"), "w") as f:
        f.write(report(results, header))
    plot(results, os.path.join(RESULTS, "checked_call.png"))
    plot_tier_up(results, os.path.join(RESULTS, "checked_call_tier_up.png"))
    print(f"wrote {os.path.join(RESULTS, 'checked_call.md')}")


if __name__ == "__main__":
    main()
