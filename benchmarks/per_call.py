"""Per-call time of the reference path (one ``*_dynamics`` call: kinematics, graph, ordering, elimination with
the determinacy verdict, refinement and result) for one robot: medians of 30 samples × 10 calls after 20
warm-up calls.

    python -m benchmarks.per_call [ROBOT]

To compare two versions, run it alternately with PYTHONPATH pointing at each checkout.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

import gtdyn
from gtdyn.bench import measure


def main(robot_name: str = "puma560") -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gtdyn.ModelWarning)
        robot = gtdyn.load_robot(robot_name)
    q, v, a = np.random.default_rng(0).uniform(-1, 1, (3, robot.num_dofs))
    tau = gtdyn.inverse_dynamics(robot, q, v, a).tau
    forward = measure(lambda: gtdyn.forward_dynamics(robot, q, v, tau, ordering="aba"), 30, 10, 20).median_us
    inverse = measure(lambda: gtdyn.inverse_dynamics(robot, q, v, a, ordering="rnea"), 30, 10, 20).median_us
    print(f"{robot.name}: forward (aba) {forward:.0f} µs, inverse (rnea) {inverse:.0f} µs per call")


if __name__ == "__main__":
    main(*sys.argv[1:])
