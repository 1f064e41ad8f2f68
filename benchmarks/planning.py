"""Trajectory optimization (issue 22, first part): time, iterations, cost and violation of ``optimize_trajectory``
rest to rest, and how the time per iteration grows with the number of knots (linearly: each iteration is one
batch of compiled derivatives and one banded elimination).

    python -m benchmarks.planning

Writes benchmarks/results/planning.md and planning_scaling.png.
"""

from __future__ import annotations

import os
import sys
import tempfile
import warnings

import numpy as np

import gtdyn
from gtdyn.bench.report import machine_description
from gtdyn.progress import Progress

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
CASES = {"rr": (np.zeros(2), np.array([1.0, -0.5]), 1.5),
         "puma560": (np.array([0, 0.5, -2.0, 0, 0.5, 0]), np.array([1.0, 0.2, -1.5, 0.5, 1.0, 0.3]), 2.0)}
KNOTS = (25, 40, 50, 100, 200)
MAX_ITERATIONS = 400
ISSUE_CASE, ISSUE_RUNS = ("puma560", 40), 5  # issue 22's PUMA 560 rest to rest (40 steps): a median of runs


def main() -> None:
    rows = []
    with Progress("planning", len(CASES) * len(KNOTS), enabled=True) as progress:
        for name, (q0, goal, duration) in CASES.items():
            robot = gtdyn.load_robot(name)
            gtdyn.compile(robot, "inverse", derivatives=True)  # compiled once, outside the timings
            for steps in KNOTS:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", gtdyn.ConvergenceWarning)
                    plan = gtdyn.optimize_trajectory(robot, q0=q0, goal_q=goal, goal_v=np.zeros(robot.num_dofs),
                                                     steps=steps, dt=duration / steps, max_iterations=MAX_ITERATIONS)
                rows.append((name, steps, plan))
                progress.step(f"{name} {steps} knots")
    issue_case = issue_case_seconds()
    swing_up = cart_pole_swing_up()
    leap = jump()
    lines = ["# Trajectory optimization: rest to rest", "", "`python -m benchmarks.planning`; "
             + machine_description(1, 1, 0).split("; medians")[0], "",
             f"Trapezoidal collocation, effort 1, smoothness 1e-4, the model's limits, tolerance 1e-8, at most "
             f"{MAX_ITERATIONS} iterations; the rr arm over 1.5 s, the PUMA 560 over 2 s.", "",
             "| robot | knots | converged | iterations | seconds | ms per iteration | cost | violation |",
             "|---|---|---|---|---|---|---|---|"]
    for name, steps, plan in rows:
        lines.append(f"| {name} | {steps + 1} | {'yes' if plan.converged else '**no**'} | {plan.iterations} | "
                     f"{plan.seconds:.2f} | {1e3 * plan.seconds / plan.iterations:.1f} | {plan.cost:.4g} | "
                     f"{plan.violation:.1e} |")
    name, steps = ISSUE_CASE
    lines += ["", f"Issue 22's case, the {name} rest to rest over {steps + 1} knots: median of {ISSUE_RUNS} runs "
              f"{np.median(issue_case):.3f} s (each {', '.join(f'{x:.3f}' for x in issue_case)} s)."]
    lines += ["", "Cart-pole swing-up (tests/test_planning.py's cart-pole: the cart pushed within ±30 N and ±2 m, "
              "the pole on a passive hinge, from hanging to upright at rest in 3 s):", "",
              "| knots | converged | iterations | seconds | cost | violation |", "|---|---|---|---|---|---|",
              f"| {len(swing_up.t)} | {'yes' if swing_up.converged else '**no**'} | {swing_up.iterations} | "
              f"{swing_up.seconds:.2f} | {swing_up.cost:.4g} | {swing_up.violation:.1e} |"]
    lines += ["", "Quadruped jump (urdf/quadruped.urdf on a floating base, tests/test_planning_contacts.py): from "
              "standing, four feet in contact over knots 0–7, in flight over 8–12, landing over 13–20 and back at "
              "rest in the start pose; 21 knots of 0.03 s, friction 0.7, the model's limits:", "",
              "| knots | converged | iterations | seconds | cost | violation | apex (m above start) |",
              "|---|---|---|---|---|---|---|",
              f"| {len(leap.t)} | {'yes' if leap.converged else '**no**'} | {leap.iterations} | {leap.seconds:.2f} | "
              f"{leap.cost:.4g} | {leap.violation:.1e} | "
              f"{np.max(leap.base_pose[:, 2, 3]) - leap.base_pose[0, 2, 3]:.3f} |"]
    lines += ["", "Replanning: `python -m benchmarks.replanning` (results in replanning.md)."]
    with open(os.path.join(RESULTS, "planning.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    plot(rows)
    for name, steps, plan in rows:
        print(f"{name} {steps + 1} knots: {plan.iterations} iterations, {plan.seconds:.2f} s "
              f"({1e3 * plan.seconds / plan.iterations:.1f} ms each), converged {plan.converged}")
    print(f"wrote {os.path.join(RESULTS, 'planning.md')}")




def issue_case_seconds() -> list[float]:
    """The seconds of ``ISSUE_RUNS`` runs of the issue's case (the solver compiled before, as above)."""
    name, steps = ISSUE_CASE
    q0, goal, duration = CASES[name]
    robot = gtdyn.load_robot(name)
    plans = [gtdyn.optimize_trajectory(robot, q0=q0, goal_q=goal, goal_v=np.zeros(robot.num_dofs), steps=steps,
                                       dt=duration / steps) for _ in range(ISSUE_RUNS)]
    print(f"{name} rest to rest, {steps + 1} knots: median {np.median([p.seconds for p in plans]):.3f} s, "
          f"{plans[0].iterations} iterations, converged {all(p.converged for p in plans)}")
    return [p.seconds for p in plans]


def jump():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
    from test_planning_contacts import FEET, standing

    robot = gtdyn.load_robot("quadruped", base="floating")
    q0, T0 = standing(robot)
    gtdyn.compile(robot, "inverse", derivatives=True, wrench_frames=FEET, wrench_axes="world_aligned")  # untimed
    plan = gtdyn.optimize_trajectory(robot, q0=q0, goal_q=q0, goal_v=np.zeros(12), steps=20, dt=0.03, base_pose=T0,
                                     goal_base_pose=T0, goal_base_twist=np.zeros(6),
                                     contacts={foot: [(0, 8), (13, 21)] for foot in FEET})
    print(f"quadruped jump, 21 knots: {plan.iterations} iterations, {plan.seconds:.2f} s, converged {plan.converged}")
    return plan


def cart_pole_swing_up():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
    from test_planning import CART_POLE

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "cart_pole.urdf")
        with open(path, "w") as f:
            f.write(CART_POLE)
        robot = gtdyn.load_robot(path).with_actuated(["slider"])
    gtdyn.compile(robot.with_actuated(robot.joint_names), "inverse", derivatives=True)  # outside the timing
    plan = gtdyn.optimize_trajectory(robot, q0=[0, 0], goal_q=[0, np.pi], goal_v=[0, 0], steps=60, dt=0.05)
    print(f"cart-pole swing-up, 61 knots: {plan.iterations} iterations, {plan.seconds:.2f} s, converged "
          f"{plan.converged}")
    return plan


def plot(rows) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for name in CASES:
        knots = [steps + 1 for n, steps, _ in rows if n == name]
        per = [1e3 * plan.seconds / plan.iterations for n, _, plan in rows if n == name]
        ax.plot(knots, per, "o-", label=name)
    ax.set_xlabel("knots")
    ax.set_ylabel("ms per iteration")
    ax.set_title("optimize_trajectory: time per iteration against knots")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(RESULTS, "planning_scaling.png"), dpi=120)


if __name__ == "__main__":
    main()
