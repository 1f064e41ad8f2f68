"""``gtdyn plan``: a trajectory from a start to a goal by ``gtdyn.optimize_trajectory``, written as CSV (t and
q, q̇, q̈, τ of every joint at each knot) with a plot of q(t) and τ(t)."""

from __future__ import annotations

import os

import numpy as np

import gtdyn
from gtdyn.cli.inputs import load, output_prefix, vector, writable_directory, writing
from gtdyn.cli.messages import CLIError
from gtdyn.cli.state import default_state
from gtdyn.cli.table import base_text

DEFAULT_OUT = "plan"
DEFAULT_STEPS, DEFAULT_DT = 40, 0.05
OPTIONS = ("steps", "dt", "collocation", "q0", "goal_q", "goal_v", "v0")  # optimize_trajectory's, as options


def cmd_plan(args) -> None:
    from gtdyn.plot.plan import draw_plan

    robot = load(args.robot, args.base, args.transmissions)
    if args.passive:
        unknown = [name for name in args.passive.split(",") if name not in robot.joint_names]
        if unknown:
            raise CLIError(f"--passive: unknown joints {', '.join(unknown)} (joints: {', '.join(robot.joint_names)})")
        robot = robot.with_actuated([n for n in robot.joint_names if n not in args.passive.split(",")])
    q0 = vector(args.q0, "q0", robot, default_state(robot)[0])
    goal = vector(args.goal, "goal", robot, None)
    if goal is None:
        raise CLIError("--goal: the joint positions to reach, comma-separated (one per joint, or one for all)")
    prefix = output_prefix(args.out, robot.name, DEFAULT_OUT)
    writable_directory(os.path.dirname(os.path.abspath(prefix)), "--out")
    try:
        plan = gtdyn.optimize_trajectory(robot, q0=q0, goal_q=goal, goal_v=np.zeros(robot.num_dofs),
                                         steps=args.steps, dt=args.dt, collocation=args.collocation,
                                         limits=not args.no_limits)
    except gtdyn.ArgumentError as e:  # the library names goal_q=; the command's option is --goal
        name = str(e).split(":", 1)[0]
        if name not in OPTIONS:
            raise
        raise CLIError(f"--{'goal' if name == 'goal_q' else name}:{str(e).split(':', 1)[1]}") from None
    written = [f"{prefix}.csv", f"{prefix}.{args.format}"]
    header = ["t"] + [f"{x}_{n}" for x in ("q", "v", "qdd", "tau") for n in robot.joint_names]
    with writing(written[0]):
        np.savetxt(written[0], np.column_stack([plan.t, plan.q, plan.v, plan.qdd, plan.tau]), fmt="%.17g",
                   delimiter=",", header=",".join(header), comments="")
    with writing(written[1]):
        draw_plan(plan, written[1], format=args.format)
    print(f"planned {robot.name} ({base_text(robot)}): {len(plan.t)} knots of {args.dt:g} s, {plan.collocation} "
          f"collocation, limits {'off' if args.no_limits else 'kept'}")
    print(f"  {'converged' if plan.converged else 'NOT converged'} after {plan.iterations} iterations in "
          f"{plan.seconds:.3g} s: cost {plan.cost:.6g}, largest constraint violation {plan.violation:.2g}")
    print(f"  peak |τ| = ({', '.join(f'{x:.4g}' for x in np.max(np.abs(plan.tau), axis=0))})")
    print("wrote " + ", ".join(written))
