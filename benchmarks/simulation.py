"""Simulation steps per second: ``gtdyn.simulate`` (a compiled ABA solver per step) against the same integrator
written as a Python loop over Pinocchio's ``pin.aba``, in one run, on the PUMA 560 and Talos; plus the
variational integrator's steps per second (also on the quadruped's floating base). Without gravity, from random
joint velocities (a falling Talos swings its gripper links fast enough to make explicit integrators diverge within
2 s).

    python -m benchmarks.simulation [STEPS [DT]]     # 2,000 steps of 1 ms by default

A ``simulate`` call costs a few milliseconds besides its steps (checking the start, loading the compiled solver
from the cache, allocating the run): long runs (20,000 steps of 0.1 ms) show the steps' own rate.

Each figure is the best of 3 runs (the loops are long enough that the median of a few is the minimum up to
noise). Pinocchio's loop does only what the integrator needs (no energies, no checks); gtdyn's is the whole
``simulate`` call. Writes benchmarks/results/simulation.md.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from importlib.metadata import distribution

import numpy as np

import gtdyn
from gtdyn.bench.pinocchio import PinocchioModel
from gtdyn.bench.report import machine_description

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "simulation.md")


def erd(relative: str) -> str:
    return str(distribution("example-robot-data")
               .locate_file(f"cmeel.prefix/share/example-robot-data/robots/{relative}"))


def pinocchio_loop(ref: PinocchioModel, q, v, steps: int, dt: float, method: str):
    pin, model, data = ref.pin, ref.model, ref.data
    qp, vp, tau = ref.configuration(q), ref.tangent(v), np.zeros(model.nv)
    aba = lambda q_, v_: pin.aba(model, data, q_, v_, tau)  # noqa: E731
    for _ in range(steps):
        if method == "semi_implicit_euler":
            vp = vp + dt * aba(qp, vp)
            qp = pin.integrate(model, qp, dt * vp)
        else:  # rk4 on the tangent space
            a1 = aba(qp, vp)
            q2, v2 = pin.integrate(model, qp, dt / 2 * vp), vp + dt / 2 * a1
            a2 = aba(q2, v2)
            q3, v3 = pin.integrate(model, qp, dt / 2 * v2), vp + dt / 2 * a2
            a3 = aba(q3, v3)
            q4, v4 = pin.integrate(model, qp, dt * v3), vp + dt * a3
            a4 = aba(q4, v4)
            qp = pin.integrate(model, qp, dt / 6 * (vp + 2 * v2 + 2 * v3 + v4))
            vp = vp + dt / 6 * (a1 + 2 * a2 + 2 * a3 + a4)
    return qp


def best_of(fn, runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def main(steps: int = 2000, dt: float = 1e-3) -> None:
    rows = ["| robot | method | gtdyn.simulate steps/s | Python loop over pin.aba steps/s | gtdyn / Pinocchio |",
            "|---|---|---|---|---|"]
    robots = {"puma560": gtdyn.bundled_path("puma560"), "talos": erd("talos_data/robots/talos_reduced.urdf")}
    for name, path in robots.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", gtdyn.ModelWarning)
            robot = gtdyn.load_robot(path, transmissions="independent")  # as Pinocchio reads <mimic>
        ref = PinocchioModel(path, robot, gravity=np.zeros(3))
        q0, v0 = np.random.default_rng(0).uniform(-0.5, 0.5, (2, robot.num_dofs))
        print(f"{name}: compiling and warming up …", file=sys.stderr, flush=True)
        gtdyn.simulate(robot, q0, v0, dt=dt, steps=10, gravity=np.zeros(3), progress=False)
        for method in ("semi_implicit_euler", "rk4"):
            theirs = best_of(lambda: pinocchio_loop(ref, q0, v0, steps, dt, method))
            for checks in (True, False):
                ours = best_of(lambda: gtdyn.simulate(robot, q0, v0, dt=dt, steps=steps, method=method, checks=checks,
                                                      gravity=np.zeros(3), progress=False))
                rows.append(f"| {name} ({robot.num_dofs} joints) | {method}{'' if checks else ', checks=False'} | "
                            f"{steps / ours:,.0f} | {steps / theirs:,.0f} | {(steps / ours) / (steps / theirs):.2f} |")
                print(rows[-1], file=sys.stderr, flush=True)
        if name == "puma560":
            trajectory = None

            def variational():
                nonlocal trajectory
                trajectory = gtdyn.simulate(robot, q0, v0, dt=dt, steps=steps, method="variational",
                                            gravity=np.zeros(3), progress=False)

            gtdyn.simulate(robot, q0, v0, dt=dt, steps=10, method="variational", gravity=np.zeros(3),
                           progress=False)  # compiles its DRNEA once per process, outside the timing
            seconds = best_of(variational)
            rows.append(f"| {name} ({robot.num_dofs} joints) | variational (compiled DRNEA) | {steps / seconds:,.0f} "
                        "| — | — |")
    rows.append(floating_variational(steps, dt))
    text = "\n".join(["# Simulation speed", "",
                      f"`python -m benchmarks.simulation {steps} {dt:g}` ({steps:,} steps of {dt * 1e3:g} ms, no "
                      "gravity or torque, from joints and velocities drawn in ±0.5) "
                      f"on {machine_description(3, steps, 1)}.", "", *rows, ""])
    print(text)
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w") as f:
        f.write(text)


def floating_variational(steps: int, dt: float) -> str:
    """The variational integrator (compiled DRNEA) on the bundled quadruped's free base, from random joints,
    velocities and base twist: its table row."""
    robot = gtdyn.load_robot("quadruped", base="floating")
    rng = np.random.default_rng(0)
    q0, v0 = rng.uniform(-0.3, 0.3, (2, robot.num_dofs))
    twist = 0.3 * rng.normal(size=6)

    def run(count: int):
        with warnings.catch_warnings():  # its free legs swing past their limits, which simulate does not enforce
            warnings.simplefilter("ignore", gtdyn.JointLimitWarning)
            gtdyn.simulate(robot, q0, v0, base_twist=twist, dt=dt, steps=count, method="variational",
                           gravity=np.zeros(3), progress=False)

    run(10)  # compiles its DRNEA once per process, outside the timing
    seconds = best_of(lambda: run(steps))
    return (f"| quadruped, floating base ({robot.num_dofs} joints) | variational (compiled DRNEA) | "
            f"{steps / seconds:,.0f} | — | — |")


if __name__ == "__main__":
    arguments = sys.argv[1:]
    main(*([int(arguments[0])] if arguments else []), *([float(arguments[1])] if len(arguments) > 1 else []))
