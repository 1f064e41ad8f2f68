"""Compiled derivatives (issue 21): accuracy against Pinocchio's analytical derivatives and against central
differences of the reference path, and speed against Pinocchio, interleaved in one run.

    python -m benchmarks.derivatives            # the whole study (~5 min here)
    python -m benchmarks.derivatives --quick    # PUMA, UR5 and Solo-12 only

Accuracy: the largest relative error max|D − D_ref| / max|D_ref| over ∂/∂q, ∂/∂q̇, ∂/∂x at three random states,
* every named ordering of forward and inverse dynamics on the PUMA 560, UR5 and Panda (fingers free, as
  Pinocchio reads them) against ``computeABADerivatives`` / ``computeRNEADerivatives``; Talos in ABA, RNEA and
  COLAMD;
* Solo-12 and ANYmal with their free flyer (forward and inverse), and ``computeConstraintDynamicsDerivatives``
  with 2, 3 and 4 feet on the ground (point contacts);
* central differences (h = 1e-6) of the reference path on random trees with prismatic joints (forward, inverse,
  hybrid), the geared rotor of tests/test_transmissions.py, and along the loops of the four-, five- and six-bar
  (over their actuated joints; error against the whole Jacobian's scale, the four-bar's ∂q̈/∂q̇ being zero).

Speed: medians of 30 samples × 100 calls after 50 warm-up calls, gtdyn's Python call (arguments in, result out)
against Pinocchio's on vectors already in its order; checked (default) and unchecked (``checks=False``); batches
of 1,000 states on one and two threads; compile time with and without derivatives (cold, no cache).
Writes benchmarks/results/derivatives.md and derivatives.png.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from importlib.metadata import distribution

import numpy as np

import gtdyn
from gtdyn.bench.pinocchio import FreeFlyerPinocchio, PinocchioContacts, PinocchioModel
from gtdyn.bench.report import machine_description
from gtdyn.bench.timing import measure_interleaved, paired_ratio
from gtdyn.model.random import random_robot
from gtdyn.orderings import applicable
from gtdyn.progress import Progress

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from references import (  # noqa: E402  (the tests' own references, one copy)
    central_differences,
    closed_state,
    differences_along_loops,
    random_base,
)

LOOP_CASES = [("four_bar", "forward"), ("five_bar", "forward"), ("six_bar", "forward"), ("five_bar", "hybrid")]

PATHS = {"ur5": "ur_description/urdf/ur5_robot.urdf", "panda": "panda_description/urdf/panda.urdf",
         "talos": "talos_data/robots/talos_reduced.urdf", "solo12": "solo_description/robots/solo12.urdf",
         "anymal": "anymal_b_simple_description/robots/anymal.urdf"}
FEET = {"solo12": ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"], "anymal": ["LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT"]}
TOLERANCE = {"pinocchio": 1e-9, "differences": 1e-6}
REPEAT, INNER, WARMUP = 30, 100, 50
COMPILES = 3  # cold compiles of each kind, the median taken


def load(name: str, floating: bool = False) -> tuple[gtdyn.Robot, str]:
    if name == "puma560":
        robot = gtdyn.load_robot(name)
        return robot, robot.source
    path = str(distribution("example-robot-data").locate_file(
        f"cmeel.prefix/share/example-robot-data/robots/{PATHS[name]}"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gtdyn.ModelWarning)
        robot = gtdyn.load_robot(path, base="floating" if floating else "fixed", transmissions="independent")
    return robot, path


def relative(got, want) -> float:
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-300))


def states(robot: gtdyn.Robot, count: int = 3, seed: int = 0):
    """Random states within the joint limits (q), with q̇ and x in [-1, 1]."""
    rng = np.random.default_rng(seed)
    lower = np.array([max(j.lower, -np.pi) for j in robot.joints])
    upper = np.array([min(j.upper, np.pi) for j in robot.joints])
    for _ in range(count):
        yield rng.uniform(lower, upper), rng.uniform(-1, 1, robot.num_dofs), rng.uniform(-1, 1, robot.num_dofs)


# -- accuracy ------------------------------------------------------------------------------------------------


def against_pinocchio(name: str, orderings: dict[str, list[str]], progress: Progress) -> list[tuple]:
    robot, path = load(name)
    ref = PinocchioModel(path, robot)
    rows = []
    for problem, names in orderings.items():
        for ordering in names:
            solver = gtdyn.compile(robot, problem, ordering=ordering, derivatives=True)
            worst = 0.0
            for q, v, x in states(robot):
                d = solver.derivatives(q, v, x)
                want = ref.aba_derivatives(q, v, x) if problem == "forward" else ref.rnea_derivatives(q, v, x)
                worst = max(worst, *(relative(a, b) for a, b in zip((d.dq, d.dv, d.dx), want)))
            rows.append((name, problem, ordering, "Pinocchio", worst))
            progress.step(f"{name} {problem} {ordering}")
    return rows


def free_flyers(name: str, progress: Progress) -> list[tuple]:
    robot, path = load(name, floating=True)
    ref = FreeFlyerPinocchio(path, robot)
    rng = np.random.default_rng(1)
    rows = []
    for problem, ordering in (("forward", "aba"), ("inverse", "rnea")):
        solver = gtdyn.compile(robot, problem, ordering=ordering, derivatives=True)
        worst = 0.0
        for q, v, x in states(robot):
            pose, twist, accel = random_base(rng)
            if problem == "forward":
                d = solver.derivatives(q, v, x, base_pose=pose, base_twist=twist)
                want = ref.aba_derivatives(q, v, x, base_pose=pose, base_twist=twist)
            else:
                d = solver.derivatives(q, v, x, base_pose=pose, base_twist=twist, base_accel=accel)
                want = ref.rnea_derivatives(q, v, x, base_pose=pose, base_twist=twist, base_accel=accel)
            worst = max(worst, *(relative(a, b) for a, b in zip((d.dq, d.dv, d.dx), want)))
        rows.append((f"{name} (free flyer)", problem, ordering, "Pinocchio", worst))
        progress.step(f"{name} free flyer {problem}")
    for count in (2, 3, 4):
        feet = FEET[name][:count]
        contacts = PinocchioContacts(ref, feet)
        solver = gtdyn.compile(robot, "forward", contacts=[gtdyn.Contact(f) for f in feet], derivatives=True)
        worst = 0.0
        for q, v, x in states(robot):
            pose, twist, _ = random_base(rng)
            d = solver.derivatives(q, v, x, base_pose=pose, base_twist=twist)
            contacts(q, v, x, base_pose=pose, base_twist=twist)
            ref.pin.computeConstraintDynamicsDerivatives(ref.model, ref.data, contacts.models, contacts.datas,
                                                         contacts.settings)
            order, data, m = ref.velocity_order(), ref.data, robot.num_dofs + 6
            for got, motion, force in zip((d.dq, d.dv, d.dx), (data.ddq_dq, data.ddq_dv, data.ddq_dtau),
                                          (data.dlambda_dq, data.dlambda_dv, data.dlambda_dtau)):
                worst = max(worst, relative(got[:m], np.asarray(motion)[np.ix_(order, order)]),
                            relative(got[m:], np.asarray(force)[:, order]))
        rows.append((f"{name} on {count} feet", "forward", "aba", "Pinocchio (constraint dynamics)", worst))
        progress.step(f"{name} on {count} feet")
    return rows


def against_differences(progress: Progress) -> list[tuple]:
    from test_transmissions import GEARED

    rows = []
    cases = [(f"random tree {seed} (5 joints, prismatic)", random_robot(seed, 5, tree=True, prismatic=0.5))
             for seed in (7, 8)]
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "geared.urdf")
        with open(path, "w") as f:
            f.write(GEARED)
        cases.append(("geared rotor (transmission)", gtdyn.load_robot(path)))
        for label, robot in cases:
            problems = ["forward", "inverse"] + (["hybrid"] if not robot.transmissions else [])
            passive = np.array([not j.actuated for j in robot.joints])
            for problem in problems:
                qdd_joints = robot.joint_names[1::2] if problem == "hybrid" else None
                solver = gtdyn.compile(robot, problem, qdd_joints=qdd_joints, derivatives=True)
                worst = 0.0
                for q, v, x in states(robot, seed=3):
                    if problem != "inverse":
                        x[passive] = 0.0  # a passive joint's torque is zero
                    robot.follow_drives(q, v, x if problem == "inverse" else None)
                    d = solver.derivatives(q, v, x)
                    worst = max(worst, *(relative(a, b) for a, b in
                                         zip((d.dq, d.dv, d.dx), central_differences(solver, q, v, x))))
                rows.append((label, problem, "default", "central differences", worst))
                progress.step(f"{label} {problem}")
    return rows + along_loops(progress)


def along_loops(progress: Progress) -> list[tuple]:
    """The bundled loops, forward (and the five-bar hybrid), along the loops over their actuated joints,
    against central differences that close the loops again on each side; error against the Jacobian's scale."""
    rows = []
    for name, problem in LOOP_CASES:
        robot = gtdyn.load_robot(name)
        solver = gtdyn.compile(robot, problem, qdd_joints=["j1"] if problem == "hybrid" else None, derivatives=True)
        worst = 0.0
        for seed in range(3):
            q, v, x = closed_state(robot, solver.independent_joints, seed)
            d = solver.derivatives(q, v, x)
            worst = max(worst, relative(np.hstack([d.dq, d.dv, d.dx]),
                                        np.hstack(differences_along_loops(solver, q, v, x))))
        rows.append((f"{name} (closed loops)", problem, "default", "central differences", worst))
        progress.step(f"{name} {problem}")
    return rows


# -- speed ---------------------------------------------------------------------------------------------------


def speed(name: str, progress: Progress) -> list[dict]:
    floating = name in FEET
    robot, path = load(name, floating=floating)
    ref = (FreeFlyerPinocchio if floating else PinocchioModel)(path, robot)
    pin, model, data = ref.pin, ref.model, ref.data
    q, v, x = next(states(robot, 1, seed=5))
    rng = np.random.default_rng(2)
    pose, twist, accel = random_base(rng)
    rows = []
    for problem, ordering in (("forward", "aba"), ("inverse", "rnea")):
        seconds: dict[bool, list[float]] = {False: [], True: []}
        solvers = {}
        for _ in range(COMPILES):  # cold compiles without and with derivatives, interleaved: the machine's load
            for derivatives in (False, True):  # drifts by ~10 % between one compile and the next
                started = time.perf_counter()
                gtdyn.compile(robot, problem, ordering=ordering, derivatives=derivatives, use_cache=False)
                seconds[derivatives].append(time.perf_counter() - started)
        compile_seconds = {derivatives: float(np.median(times)) for derivatives, times in seconds.items()}
        for checks in (True, False):
            solvers[checks] = gtdyn.compile(robot, problem, ordering=ordering, derivatives=True, checks=checks)
        base = {}
        if floating:
            base = {"base_pose": pose, "base_twist": twist, **({"base_accel": accel} if problem == "inverse" else {})}
            qp, vp = ref.configuration(q, pose), ref.tangent(v, twist)
            xp = ref.tangent(x, accel) if problem == "inverse" else ref.tangent(x)
        else:
            qp, vp, xp = ref.configuration(q), ref.tangent(v), ref.tangent(x)
        reference = pin.computeABADerivatives if problem == "forward" else pin.computeRNEADerivatives
        fns = {"checked": lambda: solvers[True].derivatives(q, v, x, **base),
               "unchecked": lambda: solvers[False].derivatives(q, v, x, **base),
               "pinocchio": lambda: reference(model, data, qp, vp, xp)}
        timing = measure_interleaved(fns, REPEAT, INNER, WARMUP)
        count = 1000
        Q = np.tile(q, (count, 1))
        batch_base = {key: np.broadcast_to(value, (count, *np.shape(value))).copy() for key, value in base.items()}
        per_state = {}
        for threads in (1, 2):
            solver = solvers[True]
            started = time.perf_counter()
            for _ in range(3):
                solver.batch_derivatives(Q, np.tile(v, (count, 1)), np.tile(x, (count, 1)), threads=threads,
                                         **batch_base)
            per_state[threads] = (time.perf_counter() - started) / (3 * count) * 1e6
        rows.append({"robot": name + (" (free flyer)" if floating else ""), "n": robot.num_dofs, "problem": problem,
                     "pinocchio_us": timing["pinocchio"].median_us,
                     "checked_us": timing["checked"].median_us, "unchecked_us": timing["unchecked"].median_us,
                     "checked_ratio": paired_ratio(timing["checked"], timing["pinocchio"]),
                     "unchecked_ratio": paired_ratio(timing["unchecked"], timing["pinocchio"]),
                     "batch1_us": per_state[1], "batch2_us": per_state[2],
                     "compile_s": compile_seconds[False], "compile_derivatives_s": compile_seconds[True]})
        progress.step(f"{name} {problem} timed")
    return rows


# -- report --------------------------------------------------------------------------------------------------


def write(accuracy: list[tuple], timings: list[dict], quick: bool) -> None:
    lines = ["# Compiled derivatives (issue 21)", "",
             f"`python -m benchmarks.derivatives{' --quick' if quick else ''}`; "
             + machine_description(REPEAT, INNER, WARMUP), "",
             "## Accuracy", "",
             "Largest relative error max|D − D_ref| / max|D_ref| over ∂/∂q, ∂/∂q̇ and ∂/∂x at three random states "
             f"(tolerance {TOLERANCE['pinocchio']:g} against Pinocchio, {TOLERANCE['differences']:g} against "
             "central differences, whose own error at h = 1e-6 is ~1e-9).", "",
             "| robot | problem | ordering | reference | relative error | |", "|---|---|---|---|---|---|"]
    for robot, problem, ordering, reference, error in accuracy:
        limit = TOLERANCE["differences" if reference == "central differences" else "pinocchio"]
        lines.append(f"| {robot} | {problem} | {ordering} | {reference} | {error:.1e} | "
                     f"{'ok' if error <= limit else '**over**'} |")
    lines += ["", "## Speed", "",
              "Per call from Python, medians (µs) and the median of paired ratios to Pinocchio's "
              "`computeABADerivatives` (forward) / `computeRNEADerivatives` (inverse), interleaved in one process. "
              "Batch: per state of 1,000, checked. Compile: cold, without → with derivatives, medians of "
              f"{COMPILES} interleaved.", "",
              "| robot | n | problem | Pinocchio µs | checked µs (×) | unchecked µs (×) | batch 1 thread µs | "
              "batch 2 threads µs | compile s |", "|---|---|---|---|---|---|---|---|---|"]
    for r in timings:
        lines.append(f"| {r['robot']} | {r['n']} | {r['problem']} | {r['pinocchio_us']:.2f} | "
                     f"{r['checked_us']:.2f} ({r['checked_ratio']:.2f}×) | {r['unchecked_us']:.2f} "
                     f"({r['unchecked_ratio']:.2f}×) | {r['batch1_us']:.2f} | {r['batch2_us']:.2f} | "
                     f"{r['compile_s']:.2f} → {r['compile_derivatives_s']:.2f} "
                     f"({r['compile_derivatives_s'] / r['compile_s']:.2f}×) |")
    with open(os.path.join(RESULTS, "derivatives.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    plot(timings)


def plot(timings: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r['robot']}\n{r['problem']}" for r in timings]
    x = np.arange(len(timings))
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(timings)), 4))
    ax.bar(x - 0.2, [r["checked_ratio"] for r in timings], 0.4, label="checked")
    ax.bar(x + 0.2, [r["unchecked_ratio"] for r in timings], 0.4, label="unchecked")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_ylabel("time per call / Pinocchio's")
    ax.set_title("Compiled derivatives against Pinocchio's analytical derivatives")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(RESULTS, "derivatives.png"), dpi=120)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="PUMA, UR5 and Solo-12 only")
    args = parser.parse_args(argv)
    fixed = ["puma560", "ur5"] if args.quick else ["puma560", "ur5", "panda"]
    every = {"forward": applicable("forward"), "inverse": applicable("inverse")}
    talos = {} if args.quick else {"talos": {"forward": ["aba", "colamd"], "inverse": ["rnea", "colamd"]}}
    floating = ["solo12"] if args.quick else ["solo12", "anymal"]
    timed = ["ur5", "solo12"] if args.quick else ["puma560", "ur5", "talos", "solo12"]
    total = (len(fixed) * sum(map(len, every.values())) + sum(sum(map(len, o.values())) for o in talos.values())
             + 5 * len(floating) + 8 + len(LOOP_CASES) + 2 * len(timed))
    accuracy, timings = [], []
    with warnings.catch_warnings(), Progress("derivatives", total, enabled=True) as progress:
        warnings.simplefilter("ignore", gtdyn.ModelWarning)
        for name in fixed:
            accuracy += against_pinocchio(name, every, progress)
        for name, orderings in talos.items():
            accuracy += against_pinocchio(name, orderings, progress)
        for name in floating:
            accuracy += free_flyers(name, progress)
        accuracy += against_differences(progress)
        for name in timed:
            timings += speed(name, progress)
    write(accuracy, timings, args.quick)
    worst = {reference: max(e for *_, ref, e in accuracy if ref == reference) for reference in
             {row[3] for row in accuracy}}
    print("worst relative error: " + "; ".join(f"{k} {v:.1e}" for k, v in sorted(worst.items())))
    for r in timings:
        print(f"{r['robot']} {r['problem']}: checked {r['checked_ratio']:.2f}×, unchecked {r['unchecked_ratio']:.2f}× "
              f"Pinocchio ({r['pinocchio_us']:.1f} µs); compile ×{r['compile_derivatives_s'] / r['compile_s']:.2f}")
    print(f"wrote {os.path.join(RESULTS, 'derivatives.md')}")


if __name__ == "__main__":
    main()
