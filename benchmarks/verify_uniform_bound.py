"""ū against u on every example-robot-data robot (``gtdyn.compiled.uniform_bound``): a checked inverse-dynamics
call certified with the bound proven at every state must have stored a ū at or above the u that call's own pass
computes. For each URDF that loads and whose inverse dynamics compile, at random states (revolute angles in ±π,
then in ±100 rad; prismatic offsets across their limits; q̇ and q̈ in ±1), the call's stored bound is read, and
``measured`` (u's pass, the residual, the conclusion) is run on a copy of the call's workspace to give u.

    python -m benchmarks.verify_uniform_bound [--only SUBSTRING] [--states N]

A row reports whether the plan certifies with ū, ū, the largest u met and their ratio, and the states where
ū < u (which must be none). Writes ``benchmarks/results/verify_uniform_bound.md``.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time
import warnings

import numpy as np

import gtdyn
from benchmarks.verify_bench_robots import robots_root
from gtdyn.compiled.certificate import A_PRIORI
from gtdyn.compiled.verdicts import _again
from gtdyn.progress import Progress

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "verify_uniform_bound.md")
TYPED = (gtdyn.ModelError, gtdyn.ArgumentError, gtdyn.LoopClosureError, gtdyn.IndeterminateSystemError,
         gtdyn.BudgetError)  # gtdyn's typed errors: a file's, or a state's verdict


def random_states(robot: gtdyn.Robot, count: int, seed: int) -> list:
    """(q, q̇, q̈): revolute angles in ±π (the second half in ±100 rad), prismatic offsets across their limits
    (±1 where they have none), the rest in ±1; driven joints follow their drives."""
    rng = np.random.default_rng(seed)
    lower, upper = robot.lower_limits, robot.upper_limits
    prismatic = np.array([j.type == "prismatic" for j in robot.joints], dtype=bool)
    states = []
    for k in range(count):
        reach = np.pi if k < count // 2 else 100.0
        q = rng.uniform(-reach, reach, robot.num_dofs)
        limited = prismatic & np.isfinite(lower) & np.isfinite(upper)
        q[limited] = rng.uniform(lower[limited], upper[limited])
        q[prismatic & ~limited] = rng.uniform(-1.0, 1.0, int(np.sum(prismatic & ~limited)))
        v, qdd = rng.uniform(-1.0, 1.0, (2, robot.num_dofs))
        robot.follow_drives(q, v, qdd)
        states.append((q, v, qdd))
    return states


def check(path: str, count: int) -> dict:
    """One robot file: whether its inverse dynamics certify with ū, ū, the largest u, and the states below u."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            robot = gtdyn.load_robot(path)
            solver = gtdyn.compile(robot, "inverse", lanes=False)
        except TYPED as error:
            return {"outcome": "skipped", "detail": str(error).splitlines()[0][:120]}
        bounds, largest, below, bounded = set(), 0.0, 0, 0
        for q, v, qdd in random_states(robot, count, seed=len(path)):
            try:
                solver(q, v, qdd)
            except TYPED:
                continue  # the reference path's verdict on a state the code did not certify
            ws = solver._ws
            if ws[solver._status] != 1.0 or ws[solver._bounded] != A_PRIORI:
                continue
            bound = ws[solver._status + 1]
            u = _again(solver, ws, "measured")[solver._status + 1]
            bounded += 1
            if u != bound:  # main stored ū (else it computed u itself: the plan has no ū)
                bounds.add(bound)
                largest = max(largest, u)
                below += bool(bound < u)
    if not bounds:
        return {"outcome": "no ū", "detail": f"{bounded} of {count} states certified a priori with u"}
    bound = max(bounds)
    return {"outcome": "FAIL" if below or len(bounds) > 1 else "ok", "joints": robot.num_dofs, "bound": bound,
            "largest": largest, "states": bounded, "below": below,
            "detail": "" if len(bounds) == 1 else f"{len(bounds)} different ū"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="")
    parser.add_argument("--states", type=int, default=200)
    args = parser.parse_args(argv)
    root = robots_root()
    paths = sorted(p for p in glob.glob(os.path.join(root, "**", "*.urdf"), recursive=True) if args.only in p)
    rows, started = [], time.perf_counter()
    with Progress("verify_uniform_bound", len(paths), enabled=True) as progress:
        for path in paths:
            name = os.path.relpath(path, root)
            rows.append((name, check(path, args.states)))
            progress.step(name)
    counts: dict[str, int] = {}
    for _, row in rows:
        counts[row["outcome"]] = counts.get(row["outcome"], 0) + 1
    summary = (f"{len(rows)} files, {args.states} states each, in {time.perf_counter() - started:.0f} s: "
               + ", ".join(f"{v} {n}" for n, v in sorted(counts.items())))
    lines = ["# ū against each call's own u, on every example-robot-data robot", "",
             f"`python -m benchmarks.verify_uniform_bound`: {summary}. *ok*: every state certified with ū had "
             "ū ≥ u (u by the call's own pass, `measured`, on a copy of its workspace); *no ū*: the plan's ū "
             "does not certify (its calls compute u as before); *skipped*: the file does not load or compile.", "",
             "| file | outcome | joints | ū | largest u | ū / largest u | states certified a priori | ū < u | detail |",
             "|---|---|--:|--:|--:|--:|--:|--:|---|"]
    for name, row in rows:
        if "bound" in row:
            lines.append(f"| {name} | {row['outcome']} | {row['joints']} | {row['bound']:.3g} | {row['largest']:.3g} "
                         f"| {row['bound'] / row['largest']:.3g} | {row['states']} | {row['below']} | "
                         f"{row['detail']} |")
        else:
            lines.append(f"| {name} | {row['outcome']} | | | | | | | {row['detail']} |")
    with open(RESULTS, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(summary)
    return 1 if counts.get("FAIL") else 0


if __name__ == "__main__":
    sys.exit(main())
