"""Trajectory optimization against a direct-collocation baseline written with ``scipy.optimize`` and Pinocchio's
dynamics (issue 22): the same problem, solved by ``gtdyn.optimize_trajectory`` and by SciPy's SLSQP and
trust-constr, in one run.

    python -m benchmarks.planning_baseline            # PUMA 560 rest to rest, 41 knots

The problem is ``benchmarks/planning.py``'s. The PUMA 560 goes from rest to rest in 2 s. The variables are
q, q̇, q̈ and τ at every knot. The constraints are:

* dynamics τ = RNEA(q, q̇, q̈), by Pinocchio (``pin.rnea``), with exact Jacobians
  (``computeRNEADerivatives``);
* trapezoidal collocation;
* start and goal;
* the model's limits on q, q̇ and τ, as variable bounds.

The cost is effort plus smoothness, with the same weights as gtdyn's (effort 1, smoothness 1e-4). The baseline
is given the same start, a cubic path through the goals with its inverse dynamics, as gtdyn starts from. Each
optimizer reports its time, iterations, cost and largest violation. Writes
benchmarks/results/planning_baseline.md.
"""

from __future__ import annotations

import os
import time
import warnings

import numpy as np
import scipy.optimize as so
import scipy.sparse as sp

import gtdyn
from gtdyn.bench.pinocchio import PinocchioModel
from gtdyn.bench.report import machine_description

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
Q0, GOAL, DURATION, STEPS = np.array([0, 0.5, -2.0, 0, 0.5, 0]), np.array([1.0, 0.2, -1.5, 0.5, 1.0, 0.3]), 2.0, 40
EFFORT, SMOOTHNESS = 1.0, 1e-4


class Collocation:
    """z = [q_k, q̇_k, q̈_k, τ_k for k = 0 … N]: cost, constraints and their Jacobians."""

    def __init__(self, robot, pin: PinocchioModel, steps: int, dt: float):
        self.robot, self.pin, self.N, self.h, self.n = robot, pin, steps, dt, robot.num_dofs
        self.K, self.width = steps + 1, 4 * robot.num_dofs

    def split(self, z):
        blocks = z.reshape(self.K, 4, self.n)
        return blocks[:, 0], blocks[:, 1], blocks[:, 2], blocks[:, 3]

    def index(self, k: int, part: int) -> np.ndarray:
        return k * self.width + part * self.n + np.arange(self.n)

    def cost(self, z) -> float:
        _, _, a, tau = self.split(z)
        return 0.5 * EFFORT * self.h * float(np.sum(tau ** 2)) + \
            0.5 * SMOOTHNESS * self.h * float(np.sum((np.diff(a, axis=0) / self.h) ** 2))

    def cost_gradient(self, z) -> np.ndarray:
        _, _, a, tau = self.split(z)
        g = np.zeros((self.K, 4, self.n))
        g[:, 3] = EFFORT * self.h * tau
        d = SMOOTHNESS * np.diff(a, axis=0) / self.h
        g[1:, 2] += d
        g[:-1, 2] -= d
        return g.ravel()

    def constraints(self, z) -> np.ndarray:
        q, v, a, tau = self.split(z)
        h = self.h
        dynamics = [tau[k] - self.pin.rnea(q[k], v[k], a[k]) for k in range(self.K)]
        position = q[1:] - q[:-1] - h / 2 * (v[1:] + v[:-1])
        velocity = v[1:] - v[:-1] - h / 2 * (a[1:] + a[:-1])
        ends = [q[0] - Q0, v[0], q[-1] - GOAL, v[-1]]
        return np.concatenate([np.ravel(dynamics), position.ravel(), velocity.ravel(), np.ravel(ends)])

    def jacobian(self, z) -> sp.csr_matrix:
        q, v, a, _ = self.split(z)
        n, h = self.n, self.h
        J = sp.lil_matrix((self.K * n + 2 * self.N * n + 4 * n, self.K * self.width))
        eye = np.eye(n)
        for k in range(self.K):
            dq, dv, da = self.pin.rnea_derivatives(q[k], v[k], a[k])
            r = k * n + np.arange(n)
            for part, block in ((0, -dq), (1, -dv), (2, -da), (3, eye)):
                J[np.ix_(r, self.index(k, part))] = block
        first = self.K * n
        for k in range(self.N):
            rp, rv = first + k * n + np.arange(n), first + self.N * n + k * n + np.arange(n)
            J[np.ix_(rp, self.index(k + 1, 0))], J[np.ix_(rp, self.index(k, 0))] = eye, -eye
            J[np.ix_(rp, self.index(k + 1, 1))], J[np.ix_(rp, self.index(k, 1))] = -h / 2 * eye, -h / 2 * eye
            J[np.ix_(rv, self.index(k + 1, 1))], J[np.ix_(rv, self.index(k, 1))] = eye, -eye
            J[np.ix_(rv, self.index(k + 1, 2))], J[np.ix_(rv, self.index(k, 2))] = -h / 2 * eye, -h / 2 * eye
        last = first + 2 * self.N * n
        for j, (k, part) in enumerate(((0, 0), (0, 1), (self.N, 0), (self.N, 1))):
            J[np.ix_(last + j * n + np.arange(n), self.index(k, part))] = eye
        return J.tocsr()

    def bounds(self) -> so.Bounds:
        joints = self.robot.joints
        lower = np.concatenate([[j.lower for j in joints], [-j.velocity for j in joints], np.full(self.n, -np.inf),
                                [-j.effort for j in joints]])
        upper = np.concatenate([[j.upper for j in joints], [j.velocity for j in joints], np.full(self.n, np.inf),
                                [j.effort for j in joints]])
        return so.Bounds(np.tile(lower, self.K), np.tile(upper, self.K))

    def start(self) -> np.ndarray:
        """gtdyn's own starting point: a cubic rest-to-rest path and its inverse dynamics."""
        T, t = self.N * self.h, self.h * np.arange(self.K)[:, None]
        change = GOAL - Q0
        q = Q0 + (3 * (t / T) ** 2 - 2 * (t / T) ** 3) * change
        v = (6 * t / T ** 2 - 6 * t ** 2 / T ** 3) * change
        a = (6 / T ** 2 - 12 * t / T ** 3) * change
        tau = np.array([self.pin.rnea(q[k], v[k], a[k]) for k in range(self.K)])
        return np.stack([q, v, a, tau], axis=1).ravel()

    def violation(self, z) -> float:
        b = self.bounds()
        over = np.maximum(0, np.maximum(b.lb - z, z - b.ub))
        return float(max(np.max(np.abs(self.constraints(z))), np.max(over)))


def solve_scipy(problem: Collocation, method: str, z0: np.ndarray, max_iterations: int) -> dict:
    constraint = so.NonlinearConstraint(problem.constraints, 0.0, 0.0, jac=problem.jacobian)
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method == "SLSQP":
            result = so.minimize(problem.cost, z0, jac=problem.cost_gradient, method="SLSQP",
                                 bounds=problem.bounds(), options={"maxiter": max_iterations, "ftol": 1e-12},
                                 constraints=[{"type": "eq", "fun": problem.constraints,
                                               "jac": lambda z: problem.jacobian(z).toarray()}])
        else:
            result = so.minimize(problem.cost, z0, jac=problem.cost_gradient, method="trust-constr",
                                 hess=lambda z: sp.csr_matrix((len(z), len(z))), bounds=problem.bounds(),
                                 constraints=[constraint],
                                 options={"maxiter": max_iterations, "gtol": 1e-8, "xtol": 1e-12})
    seconds = time.perf_counter() - started
    iterations = getattr(result, "nit", 0) or getattr(result, "niter", 0)
    return {"method": f"scipy {method}", "seconds": seconds, "iterations": int(iterations),
            "cost": problem.cost(result.x), "violation": problem.violation(result.x),
            "converged": bool(result.success)}


def main() -> None:
    robot = gtdyn.load_robot("puma560")
    pin = PinocchioModel(robot.source, robot)
    problem = Collocation(robot, pin, STEPS, DURATION / STEPS)
    gtdyn.compile(robot, "inverse", derivatives=True)  # compiled once, outside the timing
    plan = gtdyn.optimize_trajectory(robot, q0=Q0, goal_q=GOAL, goal_v=np.zeros(6), steps=STEPS,
                                     dt=DURATION / STEPS)
    ours = np.stack([plan.q, plan.v, plan.qdd, plan.tau], axis=1).ravel()
    rows = [{"method": "gtdyn.optimize_trajectory", "seconds": plan.seconds, "iterations": plan.iterations,
             "cost": problem.cost(ours), "violation": problem.violation(ours), "converged": plan.converged}]
    z0 = problem.start()
    for method, budget in (("SLSQP", 200), ("trust-constr", 500)):
        rows.append(solve_scipy(problem, method, z0, budget))
        print(rows[-1], flush=True)
    lines = ["# Trajectory optimization against a SciPy direct-collocation baseline (issue 22)", "",
             "`python -m benchmarks.planning_baseline`; " + machine_description(1, 1, 0).split("; medians")[0], "",
             f"PUMA 560 rest to rest in {DURATION:g} s, {STEPS + 1} knots, trapezoidal collocation, effort "
             f"{EFFORT:g}, smoothness {SMOOTHNESS:g}, the model's limits. Cost and violation are evaluated on "
             "each answer by the same function, with Pinocchio's RNEA for the dynamics. SciPy is given gtdyn's "
             "starting point and exact constraint Jacobians (`computeRNEADerivatives`); its Hessian of the "
             "Lagrangian is quasi-Newton (SLSQP) or zero beyond the cost (trust-constr).", "",
             "| optimizer | converged | iterations | seconds | cost | largest violation |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['method']} | {'yes' if r['converged'] else '**no**'} | {r['iterations']} | "
                     f"{r['seconds']:.2f} | {r['cost']:.4g} | {r['violation']:.1e} |")
    with open(os.path.join(RESULTS, "planning_baseline.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
