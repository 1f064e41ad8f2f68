"""``gtdyn plan``: a trajectory from a start to a goal by ``gtdyn.optimize_trajectory``, written as CSV (t and
q, q̇, q̈, τ of every joint at each knot; a floating robot's base pose and twist and its contact forces after
them) with a plot of q(t) and τ(t).

A floating robot (``--base floating``) starts at rest at ``--base-pose`` (default the identity) and ends at rest,
at ``--goal-base-pose`` if given; ``--stance`` names the frames that stand on the ground at every knot (where
they start: the ground is under them), their forces inside friction pyramids of ``--friction``."""

from __future__ import annotations

import os

import gtsam
import numpy as np

import gtdyn
from gtdyn.cli.inputs import base_pose, load, output_prefix, vector, writable_directory, writing
from gtdyn.cli.messages import CLIError
from gtdyn.cli.state import default_state
from gtdyn.cli.table import base_text

DEFAULT_OUT = "plan"
DEFAULT_STEPS, DEFAULT_DT = 40, 0.05
# optimize_trajectory's arguments that are options, by the option's name (the library names goal_q=, the
# command --goal; contacts=, --stance)
OPTIONS = {"steps": "steps", "dt": "dt", "collocation": "collocation", "q0": "q0", "goal_q": "goal",
           "base_pose": "base-pose", "goal_base_pose": "goal-base-pose", "contacts": "stance", "friction": "friction"}
FLOATING_OPTIONS = ("base_pose", "goal_base_pose", "stance", "friction")


def _floating(args, robot: gtdyn.Robot) -> dict:
    """``optimize_trajectory``'s floating-base arguments from the options: {} on a fixed base (which must not be
    given them)."""
    given = [name for name in FLOATING_OPTIONS if getattr(args, name) is not None]
    if not robot.floating_base:
        if given:
            option = given[0].replace("_", "-")
            raise CLIError(f"--{option}: '{robot.name}' has a fixed base (plan it with --base floating)")
        return {}
    start = base_pose(args.base_pose) or gtsam.Pose3()
    goal = base_pose(args.goal_base_pose, "goal-base-pose")
    out = {"base_pose": start.matrix(), "goal_base_twist": np.zeros(6)}
    if args.friction is not None:
        out["friction"] = args.friction
    if goal is not None:
        out["goal_base_pose"] = goal.matrix()
    if args.stance is not None:
        frames = [name.strip() for name in args.stance.split(",")]
        if not all(frames) or len(set(frames)) != len(frames):
            raise CLIError(f"--stance: expected distinct frame names, comma-separated, got '{args.stance}'")
        out["contacts"] = {name: [(0, args.steps + 1)] for name in frames}
    return out


def _columns(plan) -> tuple[list[str], list[np.ndarray]]:
    """A floating plan's extra CSV columns: the base pose (x, y, z, qx, qy, qz, qw), its twist in its own frame,
    each contact's force from the ground (world axes)."""
    if plan.base_pose is None:
        return [], []
    quaternions = [gtsam.Rot3(T[:3, :3]).toQuaternion() for T in plan.base_pose]
    pose = np.column_stack([plan.base_pose[:, :3, 3], [[q.x(), q.y(), q.z(), q.w()] for q in quaternions]])
    names = [f"base_{x}" for x in ("x", "y", "z", "qx", "qy", "qz", "qw", "wx", "wy", "wz", "vx", "vy", "vz")]
    names += [f"f_{frame}_{axis}" for frame in plan.contact_forces for axis in "xyz"]
    return names, [pose, plan.base_twist, *plan.contact_forces.values()]


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
    floating = _floating(args, robot)
    if goal is None and "goal_base_pose" not in floating:
        raise CLIError("--goal: the joint positions to reach, comma-separated (one per joint, or one for all)"
                       + ("; or --goal-base-pose, the base pose to reach" if floating else ""))
    prefix = output_prefix(args.out, robot.name, DEFAULT_OUT)
    writable_directory(os.path.dirname(os.path.abspath(prefix)), "--out")
    try:
        plan = gtdyn.optimize_trajectory(robot, q0=q0, goal_q=goal, goal_v=np.zeros(robot.num_dofs),
                                         steps=args.steps, dt=args.dt, collocation=args.collocation,
                                         limits=not args.no_limits, **floating)
    except gtdyn.ArgumentError as e:  # the library names its arguments; the command's options may differ
        name, rest = str(e).split(":", 1)
        option = OPTIONS.get(name.split("[")[0])
        if option is None:
            raise
        raise CLIError(f"--{option}{name[len(name.split('[')[0]):]}:{rest}") from None
    written = [f"{prefix}.csv", f"{prefix}.{args.format}"]
    names, extra = _columns(plan)
    header = ["t"] + [f"{x}_{n}" for x in ("q", "v", "qdd", "tau") for n in robot.joint_names] + names
    with writing(written[0]):
        np.savetxt(written[0], np.column_stack([plan.t, plan.q, plan.v, plan.qdd, plan.tau, *extra]), fmt="%.17g",
                   delimiter=",", header=",".join(header), comments="")
    with writing(written[1]):
        draw_plan(plan, written[1], format=args.format)
    print(f"planned {robot.name} ({base_text(robot)}): {len(plan.t)} knots of {args.dt:g} s, {plan.collocation} "
          f"collocation, limits {'off' if args.no_limits else 'kept'}")
    print(f"  {'converged' if plan.converged else 'NOT converged'} after {plan.iterations} iterations in "
          f"{plan.seconds:.3g} s: cost {plan.cost:.6g}, largest constraint violation {plan.violation:.2g}")
    print(f"  peak |τ| = ({', '.join(f'{x:.4g}' for x in np.max(np.abs(plan.tau), axis=0))})")
    if plan.base_pose is not None:
        ends = (", ".join(f"{x:.4g}" for x in plan.base_pose[k, :3, 3]) for k in (0, -1))
        print(f"  base from ({next(ends)}) to ({next(ends)}) m")
        if plan.contact_forces:
            print("  peak ground force f_z: " + ", ".join(f"{frame} {np.max(f[:, 2]):.4g} N"
                                                        for frame, f in plan.contact_forces.items()))
    print("wrote " + ", ".join(written))
