"""Many rollouts at once: ``gtdyn.simulate_batch`` on 1 and 2 threads against one run after another in a Python loop
over Pinocchio's ``pin.aba``, in one process, on the PUMA 560 and Talos: semi-implicit Euler without gravity, a PD
tracking a sampled reference (``gtdyn.PDController``, the rows of ``benchmarks.simulation``), from N random starts;
on Solo-12's free base without torque (Pinocchio's loop moves its free flyer by ``pin.integrate``); and on Solo-12's
four feet under gravity, a PD holding its stance or its straight legs (against ``constraintDynamics``); state by
state (``lanes=False``) and four runs at a time in SIMD lanes (``lanes=True``; the default, ``lanes=None``, takes
them once its solver has lane code: cached, or compiled for a big batch).

    python -m benchmarks.simulate_batch [STATES [STEPS [DT]]]     # 16 states of 2,000 steps of 1 ms by default
    python -m benchmarks.simulate_batch 1000 10                    # many short rollouts: a run's own cost shows

The threads run the native loop side by side (its ctypes call releases the GIL); the checks, allocation and
stacking around each run hold it. Runs interleave (1 thread, 2 threads, Pinocchio, three times) and each figure
is the best of the three, since other work on a shared machine only ever slows a run down; the load average
before the run is printed with the table. Writes benchmarks/results/simulate_batch.md (the default batch) or
simulate_batch_<STATES>x<STEPS>.md.
"""

from __future__ import annotations

import datetime
import os
import sys
import time
import warnings
from importlib.metadata import version

import numpy as np

import gtdyn
from benchmarks.simulation import FLOATING, SOLO_STANCE, Standing, erd, pd_tracking, pinocchio_loop, pinocchio_pd_loop
from gtdyn.bench.pinocchio import FreeFlyerPinocchio, PinocchioModel
from gtdyn.bench.report import machine

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "simulate_batch.md")


def versions() -> list[str]:
    import pinocchio

    return [f"gtsam {version('gtsam')}", f"gtdyn {version('gtdyn')}", f"pinocchio {pinocchio.__version__}"]


def case(path: str, base: str, states: int, steps: int, dt: float) -> tuple:
    """(robot, Q0, V0, ``simulate_batch``'s other arguments, Pinocchio's runs as a function) for one row: a fixed
    base under the PD tracking a reference, without gravity; Solo-12's free base without torque or gravity; Solo-12 on
    its four feet under gravity, a PD holding its stance (``benchmarks.simulation.Standing``), from nudged stances, or
    holding straight legs (q = 0, where the solver's twin answers: ``gtdyn.compiled.rescue``) from a few nanoradians
    off."""
    rng = np.random.default_rng(0)
    if base in ("feet", "straight"):  # straight legs: q = 0, nudged so little that the solver's twin answers
        stance, nudge = (SOLO_STANCE, 0.02) if base == "feet" else (np.zeros(12), 1e-8)
        standing = Standing(path, stance)
        Q0, V0 = stance + rng.uniform(-nudge, nudge, (states, 12)), np.zeros((states, 12))
        return standing.robot, Q0, V0, standing.options(), lambda: [standing.pinocchio(q0, steps, dt) for q0 in Q0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gtdyn.ModelWarning)
        robot = gtdyn.load_robot(path, base=base, transmissions="independent")
    floating = base == "floating"
    ref = (FreeFlyerPinocchio if floating else PinocchioModel)(path, robot, gravity=np.zeros(3))
    center = rng.uniform(-0.5, 0.5, robot.num_dofs)
    Q0 = center + rng.uniform(-0.05, 0.05, (states, robot.num_dofs))
    V0 = rng.uniform(-0.1, 0.1, (states, robot.num_dofs))
    twist = 0.3 * rng.normal(size=6)
    if floating:
        return robot, Q0, V0, {"base_twist": twist, "gravity": np.zeros(3)}, lambda: [
            pinocchio_loop(ref, q0, v0, steps, dt, "semi_implicit_euler", twist) for q0, v0 in zip(Q0, V0, strict=True)]
    controller = pd_tracking(robot, center, steps, dt)
    return robot, Q0, V0, {"tau": controller, "gravity": np.zeros(3)}, lambda: [
        pinocchio_pd_loop(ref, controller, q0, v0, steps, dt) for q0, v0 in zip(Q0, V0, strict=True)]


def main(states: int = 16, steps: int = 2000, dt: float = 1e-3) -> None:
    load = os.getloadavg()
    rows = ["| robot | 1 thread: runs/s (steps/s) | 2 threads: runs/s (steps/s) | 2 threads / 1 | lanes, 1 thread: "
            "runs/s (steps/s) | lanes, 2 threads: runs/s (steps/s) | Python loop over pin.aba, run after run: runs/s "
            "| simulate_batch (2 threads) / Pinocchio: state by state, lanes |", "|---|---|---|---|---|---|---|---|"]
    robots = {"puma560": (gtdyn.bundled_path("puma560"), "fixed"),
              "talos": (erd("talos_data/robots/talos_reduced.urdf"), "fixed"),
              "solo12": (erd(FLOATING["solo12"]), "floating"), "solo12 on four feet": (erd(FLOATING["solo12"]), "feet"),
              "solo12 on four straight legs": (erd(FLOATING["solo12"]), "straight")}
    for name, (path, base) in robots.items():
        robot, Q0, V0, options, theirs = case(path, base, states, steps, dt)

        def ours(threads: int, lanes: bool = False):
            return gtdyn.simulate_batch(robot, Q0, V0, dt=dt, steps=steps, threads=threads, lanes=lanes, **options)

        print(f"{name}: compiling and warming up …", file=sys.stderr, flush=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", gtdyn.JointLimitWarning)
            plain = ours(2)  # every thread's solver and the loop compiled, outside the timing
            assert np.array_equal(ours(2, lanes=True).q, plain.q)  # lanes: the same bits
            best = {1: np.inf, 2: np.inf, "L1": np.inf, "L2": np.inf, "pin": np.inf}
            for _ in range(3):
                for key, run in ((1, lambda: ours(1)), (2, lambda: ours(2)), ("L1", lambda: ours(1, True)),
                                 ("L2", lambda: ours(2, True)), ("pin", theirs)):
                    started = time.perf_counter()
                    run()
                    best[key] = min(best[key], time.perf_counter() - started)
        rate = {key: states / seconds for key, seconds in best.items()}
        label = {"fixed": "", "floating": ", floating, no torque", "feet": ", a PD holding a stance",
                 "straight": ", a PD holding them (q = 0)"}[base]
        rows.append(f"| {name} ({robot.num_dofs} joints{label}) | "
                    + " | ".join(f"{rate[k]:,.1f} ({rate[k] * steps:,.0f})" for k in (1, 2))
                    + f" | {rate[2] / rate[1]:.2f} | "
                    + " | ".join(f"{rate[k]:,.1f} ({rate[k] * steps:,.0f})" for k in ("L1", "L2"))
                    + f" | {rate['pin']:,.1f} | {rate[2] / rate['pin']:.2f}, {rate['L2'] / rate['pin']:.2f} |")
        print(rows[-1], file=sys.stderr, flush=True)
    text = "\n".join(["# Many rollouts: simulate_batch on threads", "",
                      f"`python -m benchmarks.simulate_batch {states} {steps} {dt:g}` ({states} runs of {steps:,} "
                      f"steps of {dt * 1e3:g} ms each, semi-implicit Euler, a PD tracking a sampled reference (on "
                      f"the fixed bases), no gravity; load average {load[0]:.2f} before the run; best of 3 "
                      "interleaved) on "
                      f"{datetime.date.today().isoformat()}; {machine(versions())}.", "", *rows, ""])
    print(text)
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    path = RESULTS if (states, steps) == (16, 2000) else RESULTS.replace(".md", f"_{states}x{steps}.md")
    with open(path, "w") as f:
        f.write(text)


if __name__ == "__main__":
    arguments = sys.argv[1:]
    main(*([int(arguments[0])] if arguments else []), *([int(arguments[1])] if len(arguments) > 1 else []),
         *([float(arguments[2])] if len(arguments) > 2 else []))
