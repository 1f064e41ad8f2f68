"""The variational integrator's cost per quasi-Newton iteration against the number of joints: random serial
chains of 6–48 joints (``gtdyn.model.random.serial_chain``), 100 steps of 1 ms from a random state without
gravity, the wall time divided by the iterations taken. Paper 004's point is that both the residual (DRNEA) and
the update (M⁻¹ e by the articulated-body algorithm) are O(n); here the update is a compiled solver and the
residual a Python recursion, which dominates.

    python -m benchmarks.variational_scaling
"""

from __future__ import annotations

import time

import numpy as np

import gtdyn
from gtdyn.model.random import serial_chain
from gtdyn.simulation import variational


def main() -> None:
    print("| joints | iterations per step | µs per iteration | µs per iteration per joint |")
    print("|---|---|---|---|")
    for n in (6, 12, 24, 48):
        robot = serial_chain(n, seed=1)
        q0, v0 = np.random.default_rng(0).uniform(-0.3, 0.3, (2, n))
        gtdyn.simulate(robot, q0, v0, dt=1e-3, steps=2, method="variational", gravity=np.zeros(3), progress=False)
        counts = []
        original = variational.VariationalIntegrator.step

        def counting(self, state, tau_next_of):
            nxt, iterations = original(self, state, tau_next_of)
            counts.append(iterations)
            return nxt, iterations

        variational.VariationalIntegrator.step = counting
        try:
            started = time.perf_counter()
            gtdyn.simulate(robot, q0, v0, dt=1e-3, steps=100, method="variational", gravity=np.zeros(3), progress=False)
            seconds = time.perf_counter() - started
        finally:
            variational.VariationalIntegrator.step = original
        per_iteration = seconds / sum(counts) * 1e6
        print(f"| {n} | {np.mean(counts):.1f} | {per_iteration:,.0f} | {per_iteration / n:.0f} |", flush=True)


if __name__ == "__main__":
    main()
