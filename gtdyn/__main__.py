"""``python -m gtdyn [ROBOT]``: inverse, forward and hybrid dynamics of a robot at a documented state.

The default robot is the bundled PUMA 560 at the Robotics Toolbox's nominal pose ``qn``:

    q   = (0, π/4, π, 0, π/4, 0)              rad
    q̇   = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6)       rad/s
    q̈   = (1, −1, 0.5, −0.5, 0.25, −0.25)      rad/s²
    gravity (0, 0, −9.81) m/s²

Inverse dynamics gives τ for that q̈; forward dynamics with that τ gives q̈ back; hybrid dynamics is given q̈
for the first half of the joints and τ for the rest, and recovers the other halves. Any other robot (a path or
a bundled name) is solved at q_k = 0.1·k, q̇_k = 0.1, q̈_k = 0.5 (k = 1..n).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import gtdyn

PUMA_STATE = (
    np.array([0.0, np.pi / 4, np.pi, 0.0, np.pi / 4, 0.0]),
    np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6]),
    np.array([1.0, -1.0, 0.5, -0.5, 0.25, -0.25]),
)


def default_state(robot: gtdyn.Robot) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if robot.name == "puma560" and robot.num_dofs == 6:
        return PUMA_STATE
    k = np.arange(1, robot.num_dofs + 1)
    return 0.1 * k, np.full(robot.num_dofs, 0.1), np.full(robot.num_dofs, 0.5)


def solve_all(robot: gtdyn.Robot, ordering=None) -> list[tuple[str, gtdyn.DynamicsResult, float]]:
    """The three problems at the default state, each with its wall time in seconds."""
    q, v, qdd = default_state(robot)
    out = []
    t = time.perf_counter()
    inverse = gtdyn.inverse_dynamics(robot, q, v, qdd, ordering=ordering)
    out.append(("inverse", inverse, time.perf_counter() - t))
    t = time.perf_counter()
    out.append(("forward", gtdyn.forward_dynamics(robot, q, v, inverse.tau, ordering=ordering), time.perf_counter() - t))
    half = robot.num_dofs // 2
    names = robot.joint_names
    t = time.perf_counter()
    hybrid = gtdyn.hybrid_dynamics(robot, q, v, qdd={n: qdd[i] for i, n in enumerate(names[:half])},
                                   tau={n: inverse.tau[half + i] for i, n in enumerate(names[half:])}, ordering=ordering)
    out.append(("hybrid", hybrid, time.perf_counter() - t))
    return out


def report(robot: gtdyn.Robot, results) -> str:
    q, v, _ = default_state(robot)
    lines = [f"{robot.name}: {robot.num_dofs} joints, from {robot.source}"]
    width = max(len(n) for n in robot.joint_names)
    for problem, r, seconds in results:
        given = {"inverse": "q̈ given, τ solved", "forward": "τ given, q̈ solved",
                 "hybrid": f"q̈ given for {', '.join(robot.joint_names[: robot.num_dofs // 2])}; τ for the rest"}[problem]
        lines.append(f"\n{problem} dynamics ({given}): solved in {seconds * 1e3:.2f} ms, "
                     f"eliminating {len(r.ordering)} variables in COLAMD order")
        lines.append(f"  {'joint':<{width}}  {'q [rad]':>10}  {'q̇ [rad/s]':>10}  {'q̈ [rad/s²]':>12}  {'τ [N·m]':>12}")
        for i, name in enumerate(robot.joint_names):
            lines.append(f"  {name:<{width}}  {q[i]:10.4f}  {v[i]:10.4f}  {r.qdd[i]:12.6f}  {r.tau[i]:12.6f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gtdyn", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("robot", nargs="?", default="puma560",
                        help="a .urdf path or a bundled name (puma560, rrr, rr); default puma560")
    args = parser.parse_args(argv)
    try:
        robot = gtdyn.load_robot(args.robot)
        print(report(robot, solve_all(robot)))
    except (gtdyn.ModelError, gtdyn.IndeterminateSystemError, ValueError) as e:
        print(f"gtdyn: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
