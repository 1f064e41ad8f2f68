"""Paper 004's Fig. 3 and Fig. 4 on compiled DRNEA: per-step time against degrees of freedom on serial chains,
and iterations per step, for three ways of solving the discrete Euler–Lagrange equations each step:

* **RIQN** (the paper's Algorithm 3): u ← u − Δt M⁻¹(q_k) e, M⁻¹e by a compiled articulated-body solve, O(n);
* **Newton**: u ← u − J⁻¹ e with the exact Jacobian J = ∂e/∂u (``CompiledDEL.jacobian``: n forward-mode
  products, O(n²)) and a dense solve (O(n³));
* **Broyden**: the inverse Jacobian started at Δt M⁻¹(q_k) (n articulated-body solves) and updated by rank-one
  corrections (O(n²) per iteration).

Random serial chains (``gtdyn.model.random.serial_chain``), Δt = 1 ms, no gravity, from joints and velocities
drawn in ±0.3, the same tolerances as the integrator. Per-step time: the whole step (iteration, Legendre
transform, q̇ from p), median over the run's steps; iterations: mean ± standard deviation over them.

Not built: the paper's mass-matrix DEL evaluation (the scalable variational integrator's O(n²)–O(n³) residual).

    python -m benchmarks.paper004 [--quick] [--steps N]     # 10, 20, 50, 100 joints; --quick: 10 and 20

Writes benchmarks/results/paper004.md and paper004.png.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from gtdyn.bench.report import machine_description
from gtdyn.model.random import serial_chain
from gtdyn.progress import Progress
from gtdyn.simulation.variational import MAX_ITERATIONS, STEP_TOLERANCE, settled
from gtdyn.simulation.variational_compiled import CompiledVariationalIntegrator
from gtdyn.simulation.variational_stepper import _mass_inverse

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
PAPER = {"RIQN / Newton at 10 DoF": 1 / 3.8, "RIQN / Newton at 100 DoF": 1 / 53, "RIQN iterations": "5.69 ± 1.16",
         "Newton iterations": "4"}


class Newton(CompiledVariationalIntegrator):
    """DRNEA with Newton's method on the exact Jacobian."""

    def iterate(self, q, dt, scale):
        c, previous = self.compiled, None
        for iteration in range(1, MAX_ITERATIONS + 1):
            largest = c.residual()
            if settled(largest, previous, scale):
                return iteration
            previous = largest
            step = np.linalg.solve(c.jacobian(), c.e) / dt  # update() takes M⁻¹e-like steps and scales them by Δt
            largest_step, largest_u = c.update(step)
            if largest_step <= STEP_TOLERANCE * (1.0 + largest_u):
                return iteration
        return None


class Broyden(CompiledVariationalIntegrator):
    """DRNEA with Broyden's ("good") method on the inverse Jacobian, started at Δt M⁻¹(q_k)."""

    def iterate(self, q, dt, scale):
        c, n = self.compiled, self.robot.num_dofs
        H = dt * np.column_stack([self.mass_inverse(q, column) for column in np.eye(n)])
        e = s = previous = None  # the last residual and step (secant pairs from the second iteration on)
        for iteration in range(1, MAX_ITERATIONS + 1):
            largest = c.residual()
            if e is not None:  # the secant condition H (e − e_prev) = Δu for the last step Δu = −H_prev e_prev
                y = c.e - e
                Hy = H @ y
                H += np.outer(s - Hy, s @ H) / (s @ Hy)
            if settled(largest, previous, scale):
                return iteration
            e, previous = c.e.copy(), largest
            s = -(H @ e)
            largest_step, largest_u = c.update(-s / dt)
            if largest_step <= STEP_TOLERANCE * (1.0 + largest_u):
                return iteration
        return None


SOLVERS = {"RIQN": CompiledVariationalIntegrator, "Newton": Newton, "Broyden": Broyden}


def run(n: int, solver, steps: int) -> dict:
    """Per-step seconds (median) and iterations of one solver on one chain."""
    robot = serial_chain(n, seed=1)
    q0, v0 = np.random.default_rng(0).uniform(-0.3, 0.3, (2, n))
    integrator = solver(robot, np.zeros(3), _mass_inverse(robot))
    state = integrator.start(q0, v0, np.zeros(n), 1e-3)
    zero = np.zeros(n)
    seconds = []
    for _ in range(steps):
        started = time.perf_counter()
        state, _ = integrator.step(state, lambda q, v: zero)
        seconds.append(time.perf_counter() - started)
    counts = np.array(integrator.iterations, float)
    return {"us": float(np.median(seconds) * 1e6), "iterations": float(counts.mean()), "spread": float(counts.std()),
            "q": state["q"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10 and 20 joints only")
    parser.add_argument("--steps", type=int, default=300, help="steps per run (default 300)")
    args = parser.parse_args()
    sizes = [10, 20] if args.quick else [10, 20, 50, 100]
    results = {}
    with Progress("paper004", len(sizes) * len(SOLVERS), enabled=True) as progress:
        for n in sizes:
            for name, solver in SOLVERS.items():
                results[n, name] = run(n, solver, args.steps)
                progress.step(f"{n} joints, {name}")
            agree = max(np.max(np.abs(results[n, name]["q"] - results[n, "RIQN"]["q"])) for name in SOLVERS)
            results[n, "agree"] = agree
            print(f"{n} joints: " + ", ".join(f"{name} {results[n, name]['us']:,.0f} µs / "
                                             f"{results[n, name]['iterations']:.2f} it" for name in SOLVERS)
                  + f"; final q agree to {agree:.1e}", flush=True)
    write(results, sizes, args)


def write(results: dict, sizes: list, args) -> None:
    lines = ["# Paper 004's Fig. 3 and Fig. 4 on compiled DRNEA", "",
             f"`python -m benchmarks.paper004{' --quick' if args.quick else ''} --steps {args.steps}`; "
             + machine_description(1, args.steps, 0), "",
             "Random serial chains, Δt = 1 ms, no gravity, the integrator's tolerances; µs per whole step (median "
             "over the run), iterations per step (mean ± std). *RIQN / Newton* is the ratio of per-step times (the "
             f"paper: {PAPER['RIQN / Newton at 10 DoF']:.2f} at 10 DoF, {PAPER['RIQN / Newton at 100 DoF']:.3f} "
             f"at 100; iterations {PAPER['RIQN iterations']} against Newton's {PAPER['Newton iterations']}). "
             "*Agree*: the largest difference in the final q between the solvers (they solve the same equations).",
             "", "| joints | RIQN µs | Newton µs | Broyden µs | RIQN / Newton | RIQN / Broyden | iterations: RIQN | "
             "Newton | Broyden | agree |", "|---|---|---|---|---|---|---|---|---|---|"]
    for n in sizes:
        r, nw, b = results[n, "RIQN"], results[n, "Newton"], results[n, "Broyden"]
        lines.append(f"| {n} | {r['us']:,.0f} | {nw['us']:,.0f} | {b['us']:,.0f} | {r['us'] / nw['us']:.3f} | "
                     f"{r['us'] / b['us']:.2f} | {r['iterations']:.2f} ± {r['spread']:.2f} | "
                     f"{nw['iterations']:.2f} ± {nw['spread']:.2f} | {b['iterations']:.2f} ± {b['spread']:.2f} | "
                     f"{results[n, 'agree']:.1e} |")
    lines += ["", "![per-step time and iterations](paper004.png)", ""]
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "paper004.md"), "w") as f:
        f.write("\n".join(lines))
    plot(results, sizes, os.path.join(RESULTS, "paper004.png"))
    print(f"wrote {os.path.join(RESULTS, 'paper004.md')}")


def plot(results: dict, sizes: list, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for name in SOLVERS:
        left.loglog(sizes, [results[n, name]["us"] for n in sizes], "o-", label=name)
        right.errorbar(sizes, [results[n, name]["iterations"] for n in sizes],
                       yerr=[results[n, name]["spread"] for n in sizes], marker="o", capsize=3, label=name)
    left.set_xlabel("degrees of freedom")
    left.set_ylabel("µs per step")
    left.set_title("Per-step time (paper 004, Fig. 3)")
    right.set_xscale("log")
    right.set_xlabel("degrees of freedom")
    right.set_ylabel("iterations per step")
    right.set_title("Iterations per step (Fig. 4)")
    for axis in (left, right):
        axis.legend()
        axis.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
