"""``gtdyn solve``: inverse, forward and/or hybrid dynamics at the given or default state, printed as tables.
``solve_problem`` also serves ``gtdyn dag``."""

from __future__ import annotations

from dataclasses import dataclass

import gtsam
import numpy as np

import gtdyn
from gtdyn.arguments.query import ask
from gtdyn.cli.inputs import (
    base_pose,
    base_vector,
    contacts,
    load,
    ordering_argument,
    ordering_name,
    pairs,
    vector,
    wrenches,
)
from gtdyn.cli.messages import CLIError
from gtdyn.cli.state import default_state
from gtdyn.cli.table import base_text, format_result, gravity_text
from gtdyn.dynamics.reference import solve_query

BASE_OPTIONS = ("base_pose", "base_twist", "base_accel")


class NeedsTwoActuatedJoints(CLIError):
    """The default hybrid split is impossible: fewer than two actuated joints."""


@dataclass
class Base:
    """A floating base's state as the problem was given it: pose (world ← root link frame), twist [ω; v] and,
    if given, acceleration [ω̇; v̇] (None: the base is free and its acceleration is solved for)."""

    pose: gtsam.Pose3
    twist: np.ndarray
    accel: np.ndarray | None


@dataclass
class Solved:
    """A result with what the command asked for: the problem, which quantities were given and which solved
    for, the ordering's name and, for a floating base, its given state."""

    problem: str
    result: gtdyn.DynamicsResult
    given: str
    solved: str
    ordering: str
    base: Base | None = None


def _names(names) -> str:
    return ", ".join(names)


def _check_given(args, problem: str) -> None:
    """--qdd/--tau that the chosen problem would ignore are errors."""
    if problem == "inverse" and args.tau:
        raise CLIError("--tau: inverse dynamics solves for τ; give --qdd, or choose --problem forward or hybrid")
    if problem == "forward" and args.qdd:
        raise CLIError("--qdd: forward dynamics solves for q̈; give --tau, or choose --problem inverse or hybrid")


def _option(name: str) -> str:
    return "--" + name.replace("_", "-")


def check_base_options(robot: gtdyn.Robot, args) -> None:
    """--base-pose/--base-twist/--base-accel need a floating base."""
    given = [_option(name) for name in BASE_OPTIONS if getattr(args, name, None) is not None]
    if given and not robot.floating_base:
        raise CLIError(f"{'/'.join(given)}: {robot.name} has a fixed base, which has no state of its own; give "
                       "--base floating to float it")


def _base(robot: gtdyn.Robot, problem: str, args) -> Base | None:
    """The floating base's state from the command line: the identity pose and zero twist unless given; the
    acceleration given (inverse: zero unless given; hybrid: only if given) or free (forward; hybrid by default)."""
    check_base_options(robot, args)
    if not robot.floating_base:
        return None
    if problem == "forward" and args.base_accel is not None:
        raise CLIError("--base-accel: forward dynamics solves for the base acceleration (the base is free); give "
                       "it with --problem inverse or hybrid")
    pose = base_pose(args.base_pose)
    twist = base_vector(args.base_twist, "base-twist", "ωx,ωy,ωz in rad/s, vx,vy,vz in m/s")
    accel = base_vector(args.base_accel, "base-accel", "ω̇x,ω̇y,ω̇z in rad/s², v̇x,v̇y,v̇z in m/s²")
    if accel is None and problem == "inverse":
        accel = np.zeros(6)
    return Base(gtsam.Pose3() if pose is None else pose, np.zeros(6) if twist is None else twist, accel)


def _base_arguments(base: Base | None) -> dict:
    """The library's base_* arguments for ``base`` (none for a fixed base)."""
    if base is None:
        return {}
    return {"base_pose": base.pose, "base_twist": base.twist, "base_accel": base.accel}


def _hybrid_split(robot: gtdyn.Robot, args, q, v, qdd0, base: Base | None) -> tuple[dict[str, float], dict[str, float]]:
    """The q̈ and τ a hybrid problem is given: --qdd and --tau pairs, completed from the default state (q̈0 and
    the torques inverse dynamics finds for it); by default q̈ of the first half of the actuated joints and τ
    of the rest."""
    act = robot.actuated_joint_names
    given_qdd, given_tau = pairs(args.qdd, "qdd", robot), pairs(args.tau, "tau", robot)
    if given_qdd is None and given_tau is None and len(act) < 2:
        raise NeedsTwoActuatedJoints(
            f"--problem hybrid: {robot.name} has {len(act)} actuated joint{'s' if len(act) != 1 else ''}"
            f"{' (' + _names(act) + ')' if act else ''}; a hybrid problem gives q̈ at some actuated joints and τ at "
            "the others, so it needs at least two (or give --qdd and --tau as joint=value pairs)")
    index = robot.joint_names.index
    if given_qdd is None or given_tau is None:
        reference_tau = gtdyn.inverse_dynamics(robot, q, v, qdd0, gravity=args.gravity, **_base_arguments(base),
                                               **_wrench_arguments(args, robot)).tau
        if given_qdd is None and given_tau is None:
            half = len(act) // 2
            given_qdd = {n: qdd0[index(n)] for n in act[:half]}
            given_tau = {n: reference_tau[index(n)] for n in act[half:]}
        elif given_qdd is None:
            given_qdd = {n: qdd0[index(n)] for n in act if n not in given_tau}
        else:
            given_tau = {n: reference_tau[index(n)] for n in act if n not in given_qdd}
    return given_qdd, given_tau


def _wrench_arguments(args, robot: gtdyn.Robot) -> dict:
    """--wrench and --wrench-axes as the library takes them."""
    return {"external_wrenches": wrenches(args.wrench, robot), "wrench_axes": args.wrench_axes}


def solve_problem(robot: gtdyn.Robot, problem: str, args) -> Solved:
    """Solve ``problem`` ('inverse', 'forward' or 'hybrid') with the command's arguments and defaults."""
    _check_given(args, problem)
    if not np.all(np.isfinite(args.gravity)):
        raise CLIError(f"--gravity: expected three finite numbers, got {' '.join(map(str, args.gravity))}")
    q0, v0, qdd0 = default_state(robot)
    q, v = vector(args.q, "q", robot, q0), vector(args.v, "v", robot, v0)
    base = _base(robot, problem, args)
    options = {"elimination": args.elimination, "ordering": ordering_argument(args.ordering, problem)}
    passive = [j.name for j in robot.joints if not j.actuated]
    at_passive = f"; τ = 0 at passive {_names(passive)}" if passive else ""
    if problem == "inverse":
        qdd, tau = vector(args.qdd, "qdd", robot, qdd0), None
        given = "q, q̇, q̈" + at_passive
        solved = f"τ of {_names(robot.actuated_joint_names)}" if passive else "τ"
    elif problem == "forward":
        qdd = None
        tau = vector(args.tau, "tau", robot, None) if args.tau else \
            gtdyn.inverse_dynamics(robot, q, v, qdd0, gravity=args.gravity, **_base_arguments(base),
                                   **_wrench_arguments(args, robot)).tau
        given = "q, q̇, τ" + (f" (0 at passive {_names(passive)})" if passive else "")
        solved = "q̈"
    else:
        qdd, tau = _hybrid_split(robot, args, q, v, qdd0, base)
        unknown_qdd = [n for n in robot.joint_names if n not in qdd]
        given = "q, q̇" + (f"; q̈ of {_names(qdd)}" if qdd else "") + (f"; τ of {_names(tau)}" if tau else "") + \
            at_passive
        solved = "; ".join(x for x in ((f"τ of {_names(qdd)}" if qdd else ""),
                                       (f"q̈ of {_names(unknown_qdd)}" if unknown_qdd else "")) if x)
    if base is not None:
        given += "; base pose, twist" + (", acceleration" if base.accel is not None else " (free: no wrench)")
        solved += "; base " + ("wrench" if base.accel is not None else "acceleration")
    try:
        query = ask(robot, problem, q, v, qdd=qdd, tau=tau, gravity=args.gravity, **_base_arguments(base),
                    **_wrench_arguments(args, robot), contacts=contacts(args.contacts, robot))
        result = solve_query(query, **options)
    except gtdyn.ArgumentError as e:  # one --ordering serves every problem of --problem all: say which it failed for
        if not str(e).startswith("ordering: "):
            raise
        error = CLIError(f"{problem} dynamics: --{e}")
        for note in getattr(e, "__notes__", ()):
            error.add_note(note)
        raise error from None
    return Solved(problem, result, given, solved, ordering_name(args.ordering), base)


def cmd_solve(args) -> None:
    robot = load(args.robot, args.base, args.transmissions)
    check_base_options(robot, args)
    if args.problem == "all" and (args.qdd or args.tau):
        raise CLIError("--qdd/--tau: choose one --problem (inverse, forward or hybrid) to give them")
    if args.problem == "all" and args.base_accel is not None:
        raise CLIError("--base-accel: choose --problem inverse or hybrid to give it (forward dynamics solves for it)")
    problems = ("inverse", "forward", "hybrid") if args.problem == "all" else (args.problem,)
    results: list[Solved | str] = []  # all errors before any output
    for problem in problems:
        try:
            results.append(solve_problem(robot, problem, args))
        except NeedsTwoActuatedJoints:
            if args.problem != "all":
                raise
            act = robot.actuated_joint_names
            results.append(f"hybrid: skipped, needs at least two actuated joints ({robot.name} has {len(act)}"
                           f"{': ' + _names(act) if act else ''})")
    print(f"{robot.name} from {robot.source}, {base_text(robot)}")
    print(f"gravity {gravity_text(args.gravity)}, elimination {args.elimination}")
    for s in results:
        print()
        print(s if isinstance(s, str) else format_result(s))
