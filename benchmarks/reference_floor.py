"""What the reference path's GTSAM calls cost by themselves, on one robot's forward dynamics (ABA ordering):
the floor under ``python -m benchmarks.per_call`` that no Python-side tuning can go below.

    python -m benchmarks.reference_floor [ROBOT]

Every equation block is computed once, before timing; each timed step then only makes GTSAM calls:

* ``factors``: 18 (PUMA) ``JacobianFactor``s from ready numpy blocks, into a ``GaussianFactorGraph``;
* ``+ QR elimination``: ``eliminateSequential(ordering, gtsam.EliminateQR)``. GTSAM's Python wheel can run
  Householder QR only through that argument, which pybind11 calls back through Python once per variable;
* ``+ solve, refinement, condition``: back-substitution, one refinement step and the three inverse-iteration
  steps of the condition estimate (``gtdyn.linear.elimination``);
* for comparison, ``factors + default elimination``: the same graph eliminated by GTSAM's C++ default
  (Cholesky of the normal equations, no callback), which gtdyn does not use: it squares the condition number.

Medians of 30 samples × 100 calls after 100 warm-up calls.
"""

from __future__ import annotations

import sys
import warnings

import gtsam
import numpy as np

import gtdyn
from gtdyn.arguments.query import ask
from gtdyn.bench import measure
from gtdyn.dynamics.graph import dynamics_equations
from gtdyn.equations import GRAVITY
from gtdyn.kinematics.forward import forward_kinematics
from gtdyn.linear.system import Key, noise
from gtdyn.orderings import resolve_ordering


def main(robot_name: str = "puma560") -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gtdyn.ModelWarning)
        robot = gtdyn.load_robot(robot_name)
    q, v, tau = np.random.default_rng(0).uniform(-1, 1, (3, robot.num_dofs))
    problem = ask(robot, "forward", q, v, tau=tau).problem
    factors = []  # (key, block, key, block, …, rhs, noise model) per equation
    for eq, roles, _ in dynamics_equations(robot, forward_kinematics(robot, q, v), problem, np.array(GRAVITY)):
        rhs, args = eq.rhs, []
        for name, block in eq.coefficients.items():
            if isinstance(roles[name], Key):
                args += [int(roles[name]), np.array(block, float)]
            else:
                rhs = rhs - block @ np.atleast_1d(roles[name])
        if len(args) > 6:
            raise SystemExit(f"{robot.name}: an equation with more than three unknowns; pick a serial arm")
        factors.append((*args, np.asarray(rhs, float), noise(len(rhs), False)))

    def build() -> gtsam.GaussianFactorGraph:
        graph = gtsam.GaussianFactorGraph()
        for args in factors:
            graph.push_back(gtsam.JacobianFactor(*args))
        return graph

    order = resolve_ordering("aba", robot, problem, build())

    def qr():
        graph = build()
        return graph, graph.eliminateSequential(order, gtsam.EliminateQR)

    def everything():
        graph, net = qr()
        x = net.optimize()
        x = x.subtract(net.backSubstitute(net.backSubstituteTranspose(graph.gradient(x))))
        for _ in range(3):
            x = net.backSubstitute(net.backSubstituteTranspose(x))

    steps = {"factors": build, "+ QR elimination": qr, "+ solve, refinement, condition": everything,
             "factors + default elimination (Cholesky)": lambda: build().eliminateSequential(order)}
    print(f"{robot.name}: GTSAM calls of one forward-dynamics solve ({len(factors)} factors, {order.size()} variables)")
    for name, step in steps.items():
        print(f"  {name:42s} {measure(step, 30, 100, 100).median_us:6.0f} µs")


if __name__ == "__main__":
    main(*sys.argv[1:])
