"""The ``gtdyn`` command: solve, draw and benchmark the dynamics of URDF and SDF robots, closed loops included.

    gtdyn solve [ROBOT] [--problem inverse|forward|hybrid|all] [--q ..] [--v ..] [--qdd ..] [--tau ..]
                [--ordering O] [--gravity GX GY GZ] [--elimination qr|constrained]
    gtdyn dag   [ROBOT] [--problem P] [--ordering O] [--out PREFIX] [--format png|svg|pdf] [--steps]
    gtdyn bench [ROBOT] [--problem P|all] [--orderings a,b] [--repeat N] [--scaling] [--out DIR]
    gtdyn info  [ROBOT]

ROBOT is a .urdf or .sdf path or a bundled model's name (the list is at the end of ``gtdyn --help``: the
PUMA 560, planar arms and closed-loop linkages); default puma560. Vectors are comma-separated numbers in
joint order (``gtdyn info ROBOT`` lists it); for hybrid dynamics --qdd and --tau take joint=value pairs
(e.g. --qdd joint1=0.5). O is a strategy name or a comma-separated list of variable labels. A bare
``gtdyn solve`` solves all three problems for the PUMA 560 at its documented default state
(``gtdyn solve --help``).

Bad input gives one line on stderr (``gtdyn: error: …``) and exit status 1; each warning is one line
(``gtdyn: warning: …``). Any other exception is a bug in gtdyn: its traceback is shown, exit status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
import traceback
import unicodedata
import warnings
from dataclasses import dataclass

import numpy as np

import gtdyn
from gtdyn.errors import GTDYN_ERRORS
from gtdyn.io.load import BUNDLED
from gtdyn.analysis.metrics import metrics_of
from gtdyn.orderings import APPLIES_TO, STRATEGIES, applicable

PUMA_STATE = (
    np.array([0.0, np.pi / 4, np.pi, 0.0, np.pi / 4, 0.0]),  # the Robotics Toolbox's nominal pose qn
    np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6]),
    np.array([1.0, -1.0, 0.5, -0.5, 0.25, -0.25]),
)
LIMIT_MARGIN = 0.05  # of a joint's range: how far inside its limits a default position stays
DEFAULT_STATE_DOC = f"""default state: for the PUMA 560 q = (0, π/4, π, 0, π/4, 0) rad (the toolbox's nominal pose qn),
q̇ = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6) rad/s, q̈ = (1, −1, 0.5, −0.5, 0.25, −0.25) rad/s². For other robots
q_k = 0.1·k for the k-th joint if that lies inside its limits by {LIMIT_MARGIN:.0%} of the range, else the middle
of the range (or 0.1 inside a one-sided limit); q̇_k = 0.1, q̈_k = 0.5 (rad or m for revolute or prismatic
joints). On closed loops these are the actuated joints' values and the other joints close the loops.
Forward dynamics is given the torques inverse dynamics finds for that q̈; hybrid dynamics is given q̈ for
the first half of the actuated joints and those torques for the rest (so it needs two actuated joints).
Units: rad, rad/s, rad/s², N·m for revolute joints; m, m/s, m/s², N for prismatic ones."""

UNITS = {"revolute": ("rad", "rad/s", "rad/s²", "N·m"), "prismatic": ("m", "m/s", "m/s²", "N")}
SLOW_DRAWING_EDGES = 500  # drawing more DAG edges than this takes seconds: say so first


class CLIError(Exception):
    """A user error: printed as one line, exit status 1."""


class NeedsTwoActuatedJoints(CLIError):
    """The default hybrid split is impossible: fewer than two actuated joints."""


def _bundled_names() -> str:
    by_format: dict[str, list[str]] = {}
    for name, (_, _, filename) in BUNDLED.items():
        by_format.setdefault(os.path.splitext(filename)[1][1:].upper(), []).append(name)
    return "; ".join(f"{', '.join(names)} ({fmt})" for fmt, names in by_format.items())


# -- the default state ----------------------------------------------------------------------------------


def inside_limits(joint: gtdyn.Joint, value: float) -> float:
    """``value`` if it lies inside the joint's limits by LIMIT_MARGIN of the range, else the middle of the
    range; with a one-sided limit, at least 0.1 inside it."""
    lo, hi = joint.lower, joint.upper
    if np.isfinite(lo) and np.isfinite(hi):
        margin = LIMIT_MARGIN * (hi - lo)
        return value if lo + margin <= value <= hi - margin else (lo + hi) / 2
    if np.isfinite(lo):
        return max(value, lo + 0.1)
    if np.isfinite(hi):
        return min(value, hi - 0.1)
    return value


def default_state(robot: gtdyn.Robot) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q, q̇, q̈ as DEFAULT_STATE_DOC says."""
    if robot.name == "puma560" and robot.num_dofs == 6:
        return PUMA_STATE
    q = np.array([inside_limits(j, 0.1 * j.index) for j in robot.joints])
    if robot.loop_joints:  # the actuated joints at the values below; the others close the loops
        act = [j for j in robot.joints if j.actuated]
        s = gtdyn.close_loops(robot, {j.name: q[j.index - 1] for j in act}, {j.name: 0.1 for j in act},
                              {j.name: 0.5 for j in act})
        return s.q, s.v, s.qdd
    return q, np.full(robot.num_dofs, 0.1), np.full(robot.num_dofs, 0.5)


# -- argument parsing helpers -----------------------------------------------------------------------------


def _number(text: str, name: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise CLIError(f"--{name}: '{text.strip()}' is not a number (in '{where}')") from None
    if not np.isfinite(value):
        raise CLIError(f"--{name}: '{text.strip()}' is not a finite number")
    return value


def _vector(text: str | None, name: str, robot: gtdyn.Robot, default: np.ndarray) -> np.ndarray:
    if text is None:
        return default
    items = [x for x in text.split(",") if x.strip()]
    try:
        [float(x) for x in items]
    except ValueError:
        raise CLIError(f"--{name}: expected comma-separated numbers, got '{text}'") from None
    values = np.array([_number(x, name, text) for x in items])
    if len(values) != robot.num_dofs:
        raise CLIError(f"--{name}: expected {robot.num_dofs} values (joints {', '.join(robot.joint_names)}), "
                       f"got {len(values)}")
    return values


def _pairs(text: str | None, name: str, robot: gtdyn.Robot) -> dict[str, float] | None:
    """joint=value pairs; None if not given."""
    if not text:
        return None
    out: dict[str, float] = {}
    for item in text.split(","):
        if "=" not in item:
            raise CLIError(f"--{name}: for hybrid dynamics give joint=value pairs, got '{item}'")
        joint, value = (x.strip() for x in item.split("=", 1))
        if joint in out:
            raise CLIError(f"--{name}: joint '{joint}' is given twice (in '{text}')")
        out[joint] = _number(value, name, item)
    unknown = [j for j in out if j not in robot.joint_names]
    if unknown:
        raise CLIError(f"--{name}: unknown joints {', '.join(unknown)} (joints of {robot.name}: "
                       f"{', '.join(robot.joint_names)})")
    return out


def _ordering(text: str | None, problem: str):
    if text is None:
        return None
    if text in STRATEGIES:
        if problem not in APPLIES_TO[text]:
            raise CLIError(f"--ordering: '{text}' applies to {' and '.join(APPLIES_TO[text])} dynamics, not {problem}; "
                           f"for {problem} dynamics use {', '.join(applicable(problem))} or a list of labels")
        return text
    if "," in text:
        return [x.strip() for x in text.split(",") if x.strip()]
    raise CLIError(f"--ordering: unknown ordering '{text}'; use one of {', '.join(STRATEGIES)} "
                   "or a comma-separated list of labels such as t3,t2,t1,F1,F2,F3,A3,A2,A1")


def ordering_name(text: str | None) -> str:
    """How a result names its ordering: the strategy, 'colamd (default)' or 'custom'."""
    if text is None:
        return "colamd (default)"
    return text if text in STRATEGIES else "custom"


def _check_given(args, problem: str) -> None:
    """--qdd/--tau that the chosen problem would ignore are errors."""
    if problem == "inverse" and args.tau:
        raise CLIError("--tau: inverse dynamics solves for τ; give --qdd, or choose --problem forward or hybrid")
    if problem == "forward" and args.qdd:
        raise CLIError("--qdd: forward dynamics solves for q̈; give --tau, or choose --problem inverse or hybrid")


def load(path: str) -> gtdyn.Robot:
    """The robot the command names; an unreadable file is a one-line error."""
    try:
        return gtdyn.load_robot(path)
    except OSError as e:
        raise CLIError(f"{path}: cannot read: {e.strerror or e}") from None


def _writable_directory(path: str, option: str) -> None:
    """Create ``path`` if need be and check that a file can be written there, before any long work."""
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as e:
        raise CLIError(f"{option}: cannot write to '{path}': {e.strerror or e}") from None


@contextlib.contextmanager
def _writing(path: str):
    """OSErrors while writing a file the user named become one-line errors."""
    try:
        yield
    except OSError as e:
        raise CLIError(f"{path}: cannot write: {e.strerror or e}") from None


# -- solve ----------------------------------------------------------------------------------------------


@dataclass
class Solved:
    """A result with what the command asked for: the problem (not the kind the library infers from what is
    known), which quantities were given and which solved for, and the ordering's name."""

    problem: str
    result: gtdyn.DynamicsResult
    given: str
    solved: str
    ordering: str


def _names(names) -> str:
    return ", ".join(names)


def solve_problem(robot: gtdyn.Robot, problem: str, args) -> Solved:
    """Solve ``problem`` ('inverse', 'forward' or 'hybrid') with the command's arguments and defaults."""
    _check_given(args, problem)
    if not np.all(np.isfinite(args.gravity)):
        raise CLIError(f"--gravity: expected three finite numbers, got {' '.join(map(str, args.gravity))}")
    q0, v0, qdd0 = default_state(robot)
    q, v = _vector(args.q, "q", robot, q0), _vector(args.v, "v", robot, v0)
    ordering = _ordering(args.ordering, problem)
    common = {"gravity": args.gravity, "elimination": args.elimination, "ordering": ordering}
    name = ordering_name(args.ordering)
    passive = [j.name for j in robot.joints if not j.actuated]
    at_passive = f"; τ = 0 at passive {_names(passive)}" if passive else ""
    if problem == "inverse":
        r = gtdyn.inverse_dynamics(robot, q, v, _vector(args.qdd, "qdd", robot, qdd0), **common)
        return Solved(problem, r, "q, q̇, q̈" + at_passive,
                      f"τ of {_names(robot.actuated_joint_names)}" if passive else "τ", name)
    if problem == "forward":
        tau = _vector(args.tau, "tau", robot, None) if args.tau else \
            gtdyn.inverse_dynamics(robot, q, v, qdd0, gravity=args.gravity).tau
        return Solved(problem, gtdyn.forward_dynamics(robot, q, v, tau, **common),
                      "q, q̇, τ" + (f" (0 at passive {_names(passive)})" if passive else ""), "q̈", name)
    act = robot.actuated_joint_names
    given_qdd, given_tau = _pairs(args.qdd, "qdd", robot), _pairs(args.tau, "tau", robot)
    if given_qdd is None and given_tau is None and len(act) < 2:
        raise NeedsTwoActuatedJoints(
            f"--problem hybrid: {robot.name} has {len(act)} actuated joint{'s' if len(act) != 1 else ''}"
            f"{' (' + _names(act) + ')' if act else ''}; a hybrid problem gives q̈ at some actuated joints and τ at "
            "the others, so it needs at least two (or give --qdd and --tau as joint=value pairs)")
    index = robot.joint_names.index
    if given_qdd is None or given_tau is None:
        reference_tau = gtdyn.inverse_dynamics(robot, q, v, qdd0, gravity=args.gravity).tau
        if given_qdd is None and given_tau is None:
            half = len(act) // 2
            given_qdd = {n: qdd0[index(n)] for n in act[:half]}
            given_tau = {n: reference_tau[index(n)] for n in act[half:]}
        elif given_qdd is None:
            given_qdd = {n: qdd0[index(n)] for n in act if n not in given_tau}
        else:
            given_tau = {n: reference_tau[index(n)] for n in act if n not in given_qdd}
    r = gtdyn.hybrid_dynamics(robot, q, v, qdd=given_qdd, tau=given_tau, **common)
    unknown_qdd = [n for n in robot.joint_names if n not in given_qdd]
    given = "q, q̇" + (f"; q̈ of {_names(given_qdd)}" if given_qdd else "") + \
        (f"; τ of {_names(given_tau)}" if given_tau else "") + at_passive
    solved = "; ".join(x for x in ((f"τ of {_names(given_qdd)}" if given_qdd else ""),
                                   (f"q̈ of {_names(unknown_qdd)}" if unknown_qdd else "")) if x)
    return Solved(problem, r, given, solved, name)


def _width(text: str) -> int:
    """Columns a string takes on a terminal (combining accents take none)."""
    return sum(0 if unicodedata.combining(c) else 1 for c in text)


def _right(text: str, width: int) -> str:
    return " " * max(0, width - _width(text)) + text


def format_result(s: Solved) -> str:
    r, robot = s.result, s.result.robot
    width = max(len(n) for n in robot.joint_names + ["joint"])
    types = {j.type for j in robot.joints}
    lines = [f"{s.problem} dynamics of {robot.name} ({robot.num_dofs} joints)",
             f"  given: {s.given} · solved: {s.solved}",
             f"  ordering {s.ordering}: {','.join(r.ordering)}"]
    columns = (("q", 10, 4), ("q̇", 10, 4), ("q̈", 12, 6), ("τ", 12, 6))
    if len(types) == 1:  # one kind of joint: units in the header
        units = UNITS.get(types.pop(), ("", "", "", ""))
        header = "  ".join(_right(f"{c} [{u}]", w) for (c, w, _), u in zip(columns, units))
        lines.append(f"  {'joint':<{width}}  {header}")
        for i, name in enumerate(robot.joint_names):
            cells = "  ".join(f"{x[i]:{w}.{p}f}" for x, (_, w, p) in zip((r.q, r.v, r.qdd, r.tau), columns))
            lines.append(f"  {name:<{width}}  {cells}")
    else:  # revolute and prismatic joints: units in every cell
        header = "  ".join(_right(c, w) + " " * 7 for c, w, _ in columns)
        lines.append(f"  {'joint':<{width}}  {header}".rstrip())
        for i, joint in enumerate(robot.joints):
            units = UNITS.get(joint.type, ("", "", "", ""))
            cells = "  ".join(f"{x[i]:{w}.{p}f} {u:<6}"
                              for x, (_, w, p), u in zip((r.q, r.v, r.qdd, r.tau), columns, units))
            lines.append(f"  {joint.name:<{width}}  {cells}".rstrip())
    m = metrics_of(r)
    lines.append(f"  DAG: {m['edges']} edges, fill-in {m['fill_in']}, ~{m['ops']:.0f} multiply-adds")
    return "\n".join(lines)


def _gravity(g) -> str:
    return "(" + ", ".join(f"{x:g}" for x in g) + ") m/s²"


def cmd_solve(args) -> None:
    robot = load(args.robot)
    if args.problem == "all" and (args.qdd or args.tau):
        raise CLIError("--qdd/--tau: choose one --problem (inverse, forward or hybrid) to give them")
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
    print(f"{robot.name} from {robot.source}")
    print(f"gravity {_gravity(args.gravity)}, elimination {args.elimination}")
    for s in results:
        print()
        print(s if isinstance(s, str) else format_result(s))


# -- dag ------------------------------------------------------------------------------------------------


class Progress:
    """Progress lines on stderr, for work that turns out to take more than ``after`` seconds (quick work
    prints nothing)."""

    def __init__(self, what: str, after: float = 1.0, stream=None):
        self.what, self.after, self.start, self.shown = what, after, time.monotonic(), False
        self.stream = stream or sys.stderr

    def __call__(self, done: int, total: int) -> None:
        elapsed = time.monotonic() - self.start
        if self.shown or elapsed >= self.after:
            stage = "saving" if done >= total else f"{done}/{total - 1} panels"
            print(f"gtdyn: {self.what}: {stage} ({elapsed:.0f} s)", file=self.stream, flush=True)
            self.shown = True


def cmd_dag(args) -> None:
    from gtdyn.analysis.dag import to_dot
    from gtdyn.plot.dag import MAX_STEP_VARIABLES, draw_dag, draw_elimination_steps

    robot = load(args.robot)
    name = ordering_name(args.ordering).split(" ")[0]
    prefix = args.out or f"{robot.name}_{args.problem}_{name}"
    _writable_directory(os.path.dirname(os.path.abspath(prefix)), "--out")
    s = solve_problem(robot, args.problem, args)
    r = s.result
    n_vars = r.elimination_ordering.size()
    if args.steps and n_vars > MAX_STEP_VARIABLES:
        raise CLIError(f"--steps: {robot.name}'s {args.problem} dynamics has {n_vars} variables, more than the "
                       f"{MAX_STEP_VARIABLES} the step view can draw legibly; draw the DAG alone (without --steps)")
    m, dag = metrics_of(r), r.dag()
    if dag.number_of_edges() > SLOW_DRAWING_EDGES:
        print(f"gtdyn: drawing {dag.number_of_edges()} edges, a few seconds…", file=sys.stderr, flush=True)
    written = [f"{prefix}.{args.format}", f"{prefix}.dot"]
    title = f"{args.problem} dynamics of {robot.name}, {s.ordering} ordering: {m['edges']} edges, {m['ops']:.0f} ops"
    with _writing(written[0]):
        draw_dag(dag, written[0], title, robot=robot)
    with _writing(written[1]), open(written[1], "w") as f:
        f.write(to_dot(dag, f"{robot.name} {r.problem}"))
    if args.steps:
        written.append(f"{prefix}_steps.{args.format}")
        with _writing(written[-1]):
            draw_elimination_steps(r.graph, r.elimination_ordering, written[-1], robot=robot,
                                   progress=Progress("drawing the elimination steps"))
    print(f"{args.problem} dynamics of {robot.name}, ordering {s.ordering}: {','.join(r.ordering)}")
    print(f"{m['edges']} DAG edges, fill-in {m['fill_in']}, ~{m['ops']:.0f} multiply-adds, "
          f"largest clique {m['largest_clique']}")
    print("wrote " + ", ".join(written))


# -- bench ----------------------------------------------------------------------------------------------


def cmd_bench(args) -> None:
    from gtdyn import bench as B
    from gtdyn.model.random import serial_chain
    from gtdyn.plot.bench import bar_chart, scaling_plot

    if args.out:  # before any timing: a bad directory must not cost a whole benchmark
        _writable_directory(args.out, "--out")
    robot = load(args.robot)
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
    scaling = B.bench_scaling([serial_chain(n) for n in sizes], repeat=max(3, args.repeat // 2),
                              progress=progress) if sizes else []
    progress.done = progress.total - 1
    progress("done")
    about = B.machine_description(args.repeat, args.inner, args.warmup)
    text = [f"# gtdyn benchmark: {robot.name}", "", about, ""] + [B.markdown_table(rows, k) for k in problems]
    print("\n".join(text))
    if args.out:
        with _writing(args.out):
            with open(os.path.join(args.out, "results.md"), "w") as f:
                f.write("\n".join(text))
            B.write_csv(rows + scaling, os.path.join(args.out, "results.csv"), os.path.join(args.out, "samples.csv"))
            bar_chart(rows, os.path.join(args.out, "orderings.png"), f"{robot.name}: {about}")
            if scaling:
                scaling_plot(scaling, os.path.join(args.out, "scaling.png"), about)
        print(f"wrote {args.out}/results.md, results.csv, samples.csv, orderings.png"
              + (", scaling.png" if scaling else ""))


def cmd_info(args) -> None:
    robot = load(args.robot)
    loops = f", {len(robot.loops)} closed loops" if robot.loop_joints else ""
    print(f"{robot.name} from {robot.source}: {robot.num_dofs} joints{loops}, base '{robot.base.name}'")
    for j in robot.joints:
        link = robot.link(j.child)
        unit = UNITS.get(j.type, ("",))[0]
        limits = f"[{j.lower:g}, {j.upper:g}] {unit}" if np.isfinite(j.lower) or np.isfinite(j.upper) else "no limits"
        notes = [x for x in ("passive" if not j.actuated else "", "closes a loop" if j.closes_loop else "") if x]
        print(f"  {j.index:>3} {j.name:<24} {j.type:<9} {j.parent} -> {j.child} (mass {link.mass:g} kg), {limits}"
              + (f", {', '.join(notes)}" if notes else ""))


# -- entry point ----------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gtdyn", description=__doc__.replace("``", "")
                                     + f"\nbundled robots: {_bundled_names()}",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="{solve,dag,bench,info}")
    robot_help = f"a .urdf or .sdf path, or a bundled robot: {', '.join(BUNDLED)} (default puma560)"

    def robot_arg(p):
        p.add_argument("robot", nargs="?", default="puma560", help=robot_help)

    def problem_args(p, allow_all: bool, default: str):
        choices = ["inverse", "forward", "hybrid"] + (["all"] if allow_all else [])
        p.add_argument("--problem", choices=choices, default=default, help=f"which problem (default {default})")
        p.add_argument("--q", help="joint positions, comma-separated (default: the documented state)")
        p.add_argument("--v", help="joint velocities, comma-separated")
        p.add_argument("--qdd", help="joint accelerations (inverse: a vector; hybrid: joint=value pairs)")
        p.add_argument("--tau", help="joint torques/forces (forward: a vector; hybrid: joint=value pairs)")
        p.add_argument("--ordering", help=f"one of {', '.join(STRATEGIES)} (default colamd), or comma-separated "
                                          "labels such as t3,t2,t1,F1,F2,F3,A3,A2,A1")
        p.add_argument("--gravity", type=float, nargs=3, default=gtdyn.GRAVITY, metavar=("GX", "GY", "GZ"),
                       help=f"gravity in the world frame, m/s² (default {' '.join(f'{g:g}' for g in gtdyn.GRAVITY)})")
        p.add_argument("--elimination", choices=["qr", "constrained"], default="qr",
                       help="Householder QR (default) or GTSAM's constrained elimination")

    formatter = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("solve", help="solve inverse, forward and/or hybrid dynamics", description=DEFAULT_STATE_DOC,
                       formatter_class=formatter)
    robot_arg(p)
    problem_args(p, allow_all=True, default="all")
    p.set_defaults(run=cmd_solve)

    p = sub.add_parser("dag", help="draw the elimination DAG (PNG/SVG/PDF) and write DOT",
                       description="Draw the DAG of one elimination, in a layout that follows the kinematic tree, and\n"
                                   "write it as Graphviz DOT; --steps also draws the graph after each batch of\n"
                                   "eliminations (paper Fig. 5), in at most 12 panels. A PNG's long side stays within\n"
                                   "8000 px.\n\n" + DEFAULT_STATE_DOC,
                       formatter_class=formatter)
    robot_arg(p)
    problem_args(p, allow_all=False, default="inverse")
    p.add_argument("--out", help="output path prefix (default ROBOT_PROBLEM_ORDERING in the current directory)")
    p.add_argument("--format", choices=["png", "svg", "pdf"], default="png", help="picture format (default png)")
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

    p = sub.add_parser("info", help="list a robot's joints, links and limits")
    robot_arg(p)
    p.set_defaults(run=cmd_info)
    return parser


def _one_line(text) -> str:
    return " ".join(str(text).split())


@contextlib.contextmanager
def readable_warnings(stream=None):
    """Show each warning once, as one line ``gtdyn: warning: <message>`` (no file, line or source)."""
    seen: set[str] = set()

    def show(message, category, filename, lineno, file=None, line=None):
        text = _one_line(message)
        if not issubclass(category, UserWarning):  # e.g. numpy's RuntimeWarning: say what it is
            text += f" ({category.__name__})"
        if text not in seen:
            seen.add(text)
            print(f"gtdyn: warning: {text}", file=stream or sys.stderr, flush=True)

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = show
        yield


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
        with readable_warnings():
            args.run(args)
    except BrokenPipeError:  # e.g. `gtdyn solve | head`: the reader left, nothing to report
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (CLIError, *GTDYN_ERRORS) as e:
        print(f"gtdyn: error: {_one_line(e)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("gtdyn: interrupted", file=sys.stderr)
        return 130
    except Exception:  # not a user error: a bug, which the traceback helps to find
        traceback.print_exc()
        print("gtdyn: internal error: this is a bug in gtdyn, not a problem with your input; please report it "
              "with the command line and the traceback above", file=sys.stderr)
        return 2
    return 0
