"""The ``gtdyn`` command: solve, draw and benchmark dynamics problems.

    gtdyn solve [ROBOT] [--problem inverse|forward|hybrid|all] [--q ...] [--v ...] [--qdd ...] [--tau ...]
    gtdyn dag   [ROBOT] --problem P --ordering O [--out PREFIX] [--steps]
    gtdyn bench [ROBOT] [--problem P|all] [--orderings a,b] [--repeat N] [--scaling] [--out DIR]
    gtdyn info  [ROBOT]

ROBOT is a .urdf path or a bundled name (puma560, rrr, rr); default puma560. Vectors are comma-separated
numbers in joint order; for hybrid dynamics --qdd and --tau take name=value pairs (e.g. --qdd joint1=0.5).
A bare ``gtdyn solve`` solves all three problems for the PUMA 560 at its documented default state.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import gtdyn
from gtdyn.orderings import STRATEGIES

PUMA_STATE = (
    np.array([0.0, np.pi / 4, np.pi, 0.0, np.pi / 4, 0.0]),  # the Robotics Toolbox's nominal pose qn
    np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6]),
    np.array([1.0, -1.0, 0.5, -0.5, 0.25, -0.25]),
)
DEFAULT_STATE_DOC = """default state: for the PUMA 560 q = (0, π/4, π, 0, π/4, 0) rad (the toolbox's nominal pose qn),
q̇ = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6) rad/s, q̈ = (1, −1, 0.5, −0.5, 0.25, −0.25) rad/s²; for other robots
q_k = 0.1·k, q̇_k = 0.1, q̈_k = 0.5 (on closed loops: for the actuated joints, the others closing the loops).
Forward dynamics is given the torques inverse dynamics finds for that q̈; hybrid dynamics is given q̈ for the
first half of the actuated joints and those torques for the rest."""


class CLIError(Exception):
    """A user error: printed as one line, exit status 1."""


def default_state(robot: gtdyn.Robot) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if robot.name == "puma560" and robot.num_dofs == 6:
        return PUMA_STATE
    if robot.loop_joints:  # the actuated joints at the values below; the others close the loops
        act = robot.actuated_joint_names
        s = gtdyn.close_loops(robot, {n: 0.1 * (k + 1) for k, n in enumerate(act)}, {n: 0.1 for n in act},
                              {n: 0.5 for n in act})
        return s.q, s.v, s.qdd
    k = np.arange(1, robot.num_dofs + 1)
    return 0.1 * k, np.full(robot.num_dofs, 0.1), np.full(robot.num_dofs, 0.5)


# -- argument parsing helpers -----------------------------------------------------------------------------


def _vector(text: str | None, name: str, robot: gtdyn.Robot, default: np.ndarray) -> np.ndarray:
    if text is None:
        return default
    try:
        values = np.array([float(x) for x in text.split(",") if x.strip()])
    except ValueError:
        raise CLIError(f"--{name}: expected comma-separated numbers, got '{text}'") from None
    if len(values) != robot.num_dofs:
        raise CLIError(f"--{name}: expected {robot.num_dofs} values (joints {', '.join(robot.joint_names)}), "
                       f"got {len(values)}")
    return values


def _pairs(text: str | None, name: str) -> dict[str, float]:
    if not text:
        return {}
    out = {}
    for item in text.split(","):
        if "=" not in item:
            raise CLIError(f"--{name}: for hybrid dynamics give joint=value pairs, got '{item}'")
        joint, value = item.split("=", 1)
        try:
            out[joint.strip()] = float(value)
        except ValueError:
            raise CLIError(f"--{name}: '{value}' is not a number (in '{item}')") from None
    return out


def _ordering(text: str | None):
    if text is None or text in STRATEGIES:
        return text
    if "," in text:
        return [x.strip() for x in text.split(",") if x.strip()]
    raise CLIError(f"--ordering: unknown ordering '{text}'; use one of {', '.join(STRATEGIES)} "
                   "or a comma-separated list of labels such as t3,t2,t1,F1,F2,F3,A3,A2,A1")


# -- solve ----------------------------------------------------------------------------------------------


def solve_problem(robot: gtdyn.Robot, problem: str, args) -> gtdyn.DynamicsResult:
    q0, v0, qdd0 = default_state(robot)
    q, v = _vector(args.q, "q", robot, q0), _vector(args.v, "v", robot, v0)
    ordering, common = _ordering(args.ordering), {"gravity": args.gravity, "elimination": args.elimination}
    if problem == "inverse":
        return gtdyn.inverse_dynamics(robot, q, v, _vector(args.qdd, "qdd", robot, qdd0), ordering=ordering, **common)
    reference_tau = gtdyn.inverse_dynamics(robot, q, v, qdd0, gravity=args.gravity).tau
    if problem == "forward":
        return gtdyn.forward_dynamics(robot, q, v, _vector(args.tau, "tau", robot, reference_tau), ordering=ordering, **common)
    act = robot.actuated_joint_names
    half, index = len(act) // 2, robot.joint_names.index
    given_qdd = _pairs(args.qdd, "qdd") if args.qdd else {n: qdd0[index(n)] for n in act[:half]}
    given_tau = _pairs(args.tau, "tau") if args.tau else {n: reference_tau[index(n)] for n in act[half:]}
    return gtdyn.hybrid_dynamics(robot, q, v, qdd=given_qdd, tau=given_tau, ordering=ordering, **common)


def format_result(r: gtdyn.DynamicsResult) -> str:
    robot = r.robot
    width = max(len(n) for n in robot.joint_names + ["joint"])
    lines = [f"{r.problem} dynamics of {robot.name} ({robot.num_dofs} joints), ordering {','.join(r.ordering)}",
             f"  {'joint':<{width}}  {'q [rad]':>10}  {'q̇ [rad/s]':>10}  {'q̈ [rad/s²]':>12}  {'τ [N·m]':>12}"]
    for i, name in enumerate(robot.joint_names):
        lines.append(f"  {name:<{width}}  {r.q[i]:10.4f}  {r.v[i]:10.4f}  {r.qdd[i]:12.6f}  {r.tau[i]:12.6f}")
    m = r.metrics()
    lines.append(f"  DAG: {m['edges']} edges, fill-in {m['fill_in']}, ~{m['ops']:.0f} multiply-adds")
    return "\n".join(lines)


def cmd_solve(args) -> None:
    robot = gtdyn.load_robot(args.robot)
    problems = ("inverse", "forward", "hybrid") if args.problem == "all" else (args.problem,)
    if args.problem == "all" and (args.qdd or args.tau):
        raise CLIError("--qdd/--tau: choose one --problem (inverse, forward or hybrid) to give them")
    results = [solve_problem(robot, problem, args) for problem in problems]  # all errors before any output
    print(f"{robot.name} from {robot.source}")
    for r in results:
        print()
        print(format_result(r))


# -- dag ------------------------------------------------------------------------------------------------


def cmd_dag(args) -> None:
    from gtdyn.dag import draw_elimination_steps

    robot = gtdyn.load_robot(args.robot)
    r = solve_problem(robot, args.problem, args)
    name = args.ordering if args.ordering in STRATEGIES else ("custom" if args.ordering else "colamd")
    prefix = args.out or f"{robot.name}_{args.problem}_{name}"
    os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)
    r.draw(f"{prefix}.{args.format}")
    with open(f"{prefix}.dot", "w") as f:
        f.write(r.to_dot())
    written = [f"{prefix}.{args.format}", f"{prefix}.dot"]
    if args.steps:
        draw_elimination_steps(r.graph, r.elimination_ordering, f"{prefix}_steps.{args.format}")
        written.append(f"{prefix}_steps.{args.format}")
    m = r.metrics()
    print(f"{args.problem} dynamics of {robot.name}, ordering {','.join(r.ordering)}: {m['edges']} DAG edges, "
          f"fill-in {m['fill_in']}, ~{m['ops']:.0f} multiply-adds, largest clique {m['largest_clique']}")
    print("wrote " + ", ".join(written))


# -- bench ----------------------------------------------------------------------------------------------


def cmd_bench(args) -> None:
    from gtdyn import benchmark as B
    from gtdyn.orderings import applicable

    robot = gtdyn.load_robot(args.robot)
    problems = B.PROBLEMS if args.problem == "all" else (args.problem,)
    chosen = [x.strip() for x in args.orderings.split(",")] if args.orderings else None
    if chosen:
        unknown = [x for x in chosen if x not in STRATEGIES]
        if unknown:
            raise CLIError(f"--orderings: unknown {', '.join(unknown)}; known: {', '.join(STRATEGIES)}")
    state = B.benchmark_state(robot)
    plan = {k: [o for o in (chosen or applicable(k)) if o in applicable(k)] for k in problems}
    sizes = [3, 6, 12, 24, 48] if args.scaling else []
    total = sum(len(v) + (k == "hybrid") for k, v in plan.items()) + len(sizes) * 2 * len(STRATEGIES)
    progress = B.Progress(total)
    rows = []
    for kind in problems:
        rows += B.bench_orderings(robot, kind, state, plan[kind], repeat=args.repeat, inner=args.inner,
                                  warmup=args.warmup, progress=progress)
        rows += B.bench_pinocchio(robot, robot.source, kind, state, repeat=args.repeat, warmup=args.warmup)
    scaling = B.bench_scaling([B.serial_chain(n) for n in sizes], repeat=max(3, args.repeat // 2),
                              progress=progress) if sizes else []
    progress.done = progress.total - 1
    progress("done")
    about = B.machine_description(args.repeat, args.inner, args.warmup)
    text = [f"# gtdyn benchmark: {robot.name}", "", about, ""] + [B.markdown_table(rows, k) for k in problems]
    print("\n".join(text))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "results.md"), "w") as f:
            f.write("\n".join(text))
        B.write_csv(rows + scaling, os.path.join(args.out, "results.csv"), os.path.join(args.out, "samples.csv"))
        B.bar_chart(rows, os.path.join(args.out, "orderings.png"), f"{robot.name}: {about}")
        if scaling:
            B.scaling_plot(scaling, os.path.join(args.out, "scaling.png"), about)
        print(f"wrote {args.out}/results.md, results.csv, samples.csv, orderings.png"
              + (", scaling.png" if scaling else ""))


def cmd_info(args) -> None:
    robot = gtdyn.load_robot(args.robot)
    print(f"{robot.name} from {robot.source}: {robot.num_dofs} joints, base '{robot.base.name}'")
    for j in robot.joints:
        link = robot.link(j.child)
        print(f"  {j.index:>3} {j.name:<24} {j.type:<9} {j.parent} -> {j.child} (mass {link.mass:g} kg)")


# -- entry point ----------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gtdyn", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="{solve,dag,bench,info}")

    def robot_arg(p):
        p.add_argument("robot", nargs="?", default="puma560", help="a .urdf path or bundled name (default puma560)")

    def problem_args(p, allow_all: bool, default: str):
        choices = ["inverse", "forward", "hybrid"] + (["all"] if allow_all else [])
        p.add_argument("--problem", choices=choices, default=default, help=f"which problem (default {default})")
        p.add_argument("--q", help="joint positions, comma-separated (default: the documented state)")
        p.add_argument("--v", help="joint velocities, comma-separated")
        p.add_argument("--qdd", help="joint accelerations (inverse: a vector; hybrid: joint=value pairs)")
        p.add_argument("--tau", help="joint torques (forward: a vector; hybrid: joint=value pairs)")
        p.add_argument("--ordering", help=f"one of {', '.join(STRATEGIES)}, or comma-separated labels")
        p.add_argument("--gravity", type=float, nargs=3, default=gtdyn.GRAVITY, metavar=("GX", "GY", "GZ"))
        p.add_argument("--elimination", choices=["qr", "constrained"], default="qr")

    p = sub.add_parser("solve", help="solve inverse, forward and/or hybrid dynamics", description=DEFAULT_STATE_DOC)
    robot_arg(p)
    problem_args(p, allow_all=True, default="all")
    p.set_defaults(run=cmd_solve)

    p = sub.add_parser("dag", help="draw the elimination DAG (PNG/SVG) and write DOT", description=DEFAULT_STATE_DOC)
    robot_arg(p)
    problem_args(p, allow_all=False, default="inverse")
    p.add_argument("--out", help="output path prefix (default ROBOT_PROBLEM_ORDERING)")
    p.add_argument("--format", choices=["png", "svg", "pdf"], default="png")
    p.add_argument("--steps", action="store_true", help="also draw the graph after each batch (paper Fig. 5)")
    p.set_defaults(run=cmd_dag)

    p = sub.add_parser("bench", help="time every ordering against each other and against Pinocchio")
    robot_arg(p)
    p.add_argument("--problem", choices=["inverse", "forward", "hybrid", "all"], default="all")
    p.add_argument("--orderings", help="comma-separated strategy names (default: every applicable one)")
    p.add_argument("--repeat", type=int, default=30, help="samples per measurement (default 30)")
    p.add_argument("--inner", type=int, default=5, help="calls per sample (default 5)")
    p.add_argument("--warmup", type=int, default=5, help="warm-up calls (default 5)")
    p.add_argument("--scaling", action="store_true", help="also time serial chains of 3 to 48 joints")
    p.add_argument("--out", help="directory for results.md, results.csv, samples.csv and plots")
    p.set_defaults(run=cmd_bench)

    p = sub.add_parser("info", help="list a robot's joints and links")
    robot_arg(p)
    p.set_defaults(run=cmd_info)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    for name in ("repeat", "inner"):
        if getattr(args, name, 1) < 1:
            print(f"gtdyn: error: --{name} must be at least 1", file=sys.stderr)
            return 1
    try:
        args.run(args)
    except BrokenPipeError:  # e.g. `gtdyn solve | head`: the reader left, nothing to report
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (CLIError, gtdyn.ModelError, gtdyn.IndeterminateSystemError, ValueError, KeyError, OSError) as e:
        message = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"gtdyn: error: {message}", file=sys.stderr)
        return 1
    return 0
