"""The ``gtdyn`` command: solve, draw, benchmark and simulate the dynamics of URDF and SDF robots, closed loops
and floating bases included.

    gtdyn solve [ROBOT] [--base fixed|floating] [--problem inverse|forward|hybrid|all] [--q ..] [--v ..] [--qdd ..]
                [--tau ..] [--base-pose ..] [--base-twist ..] [--base-accel ..] [--ordering O] [--gravity GX GY GZ]
                [--elimination qr|constrained]
    gtdyn dag   [ROBOT] [--base B] [--problem P] [--ordering O] [--out PREFIX] [--format png|svg|pdf] [--steps]
    gtdyn bench [ROBOT] [--base fixed] [--problem P|all] [--orderings a,b] [--repeat N] [--batch N] [--threads 1,2]
                [--lanes] [--scaling] [--out DIR] [--reference]
    gtdyn simulate [ROBOT] [--dt DT] [--steps N] [--method M] [--q0 ..] [--v0 ..] [--tau ..] [--gravity GX GY GZ]
                   [--out PREFIX] [--format png|svg|pdf] [--base B]
    gtdyn info  [ROBOT] [--base B]
    gtdyn compile [ROBOT] [--base B] [--problem P|all] [--ordering O] [--qdd-joints J,..] [--gravity GX GY GZ]
                  [--derivatives] [--lanes] [--quick]

ROBOT is a .urdf or .sdf path or a bundled model's name (the list is at the end of ``gtdyn --help``: the
PUMA 560, planar arms and closed-loop linkages); default puma560. Vectors are comma-separated numbers in
joint order (``gtdyn info ROBOT`` lists it); for hybrid dynamics --qdd and --tau take joint=value pairs
(e.g. --qdd joint1=0.5). O is a strategy name or a comma-separated list of variable labels. A bare
``gtdyn solve`` solves all three problems for the PUMA 560 at its documented default state
(``gtdyn solve --help``).

--base floating gives the root link six free degrees of freedom (default: as the file says: a URDF is fixed,
an SDF model floats unless a joint attaches it to the world). A floating base's state is comma-separated too:
--base-pose x,y,z,qx,qy,qz,qw (m; a unit quaternion) or x,y,z,roll,pitch,yaw (m; rad, as a URDF origin), in the
world; --base-twist ωx,ωy,ωz,vx,vy,vz (rad/s, m/s) and --base-accel ω̇x,ω̇y,ω̇z,v̇x,v̇y,v̇z (rad/s², m/s²) in its
own frame. gtdyn bench covers fixed bases only (python -m benchmarks.floating times floating ones); simulate
covers trees and closed loops on a fixed base, and trees on a floating one.
--transmissions exact|approximate|independent (every command; default exact) reads URDF <mimic> joints and
<gtdyn:transmission> blocks coupled, as the armature approximation, or as free joints.

Bad input gives one line on stderr (``gtdyn: error: …``) and exit status 1; each warning is one line
(``gtdyn: warning: …``). Any other exception is a bug in gtdyn: its traceback is shown, exit status 2.
"""

# The package: this module (the parser and main), one module per command (solve, dag, bench, simulate, plan,
# info, compile), and what they share: inputs (checked arguments and files), state (default states), table
# (result tables), messages (errors and warnings).

from __future__ import annotations

import argparse
import os
import sys
import traceback

import gtdyn
from gtdyn.cli.bench import cmd_bench
from gtdyn.cli.compile import cmd_compile
from gtdyn.cli.dag import cmd_dag
from gtdyn.cli.info import cmd_info
from gtdyn.cli.inputs import attach_negative_values
from gtdyn.cli.messages import CLIError, one_line, readable_warnings
from gtdyn.cli.plan import DEFAULT_DT as PLAN_DT
from gtdyn.cli.plan import DEFAULT_STEPS as PLAN_STEPS
from gtdyn.cli.plan import cmd_plan
from gtdyn.cli.simulate import DEFAULT_DT, DEFAULT_OUT, DEFAULT_STEPS, cmd_simulate
from gtdyn.cli.solve import cmd_solve
from gtdyn.cli.state import DEFAULT_STATE_DOC, default_state
from gtdyn.errors import GTDYN_ERRORS
from gtdyn.io.load import BASES, BUNDLED, TRANSMISSIONS
from gtdyn.orderings import STRATEGIES
from gtdyn.simulation import METHODS

__all__ = ["CLIError", "DEFAULT_STATE_DOC", "build_parser", "default_state", "main", "readable_warnings"]


def _bundled_names() -> str:
    """The bundled robots by file format, for the end of ``gtdyn --help``."""
    by_format: dict[str, list[str]] = {}
    for name, (_, _, filename) in BUNDLED.items():
        by_format.setdefault(os.path.splitext(filename)[1][1:].upper(), []).append(name)
    return "; ".join(f"{', '.join(names)} ({fmt})" for fmt, names in by_format.items())


class _Parser(argparse.ArgumentParser):
    """argparse's own errors (an unknown choice, a missing number) as the command's other errors: one line
    ``gtdyn: error: …`` and exit status 1, not a usage block and status 2."""

    def error(self, message: str):
        raise CLIError(f"{message} ({self.prog} --help lists the options)")


def build_parser() -> argparse.ArgumentParser:
    """The parser of every subcommand; each sets ``run`` to its ``cmd_*`` function."""
    parser = _Parser(prog="gtdyn", description=__doc__.replace("``", "")
                                     + f"\nbundled robots: {_bundled_names()}",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="{solve,dag,bench,simulate,plan,info,compile}")
    robot_help = f"a .urdf or .sdf path, or a bundled robot: {', '.join(BUNDLED)} (default puma560)"

    def robot_arg(p):
        p.add_argument("robot", nargs="?", default="puma560", help=robot_help)
        p.add_argument("--base", choices=BASES, help="fixed welds the root link to the world, floating gives it six "
                       "free degrees of freedom (default: as the file says: a URDF is fixed, an SDF model floats "
                       "unless a joint attaches it to the world)")
        p.add_argument("--transmissions", choices=TRANSMISSIONS, default="exact",
                       help="exact (default) couples <mimic> joints and <gtdyn:transmission> blocks; approximate "
                       "welds the driven joints and adds their rotors' reflected inertia (armature); independent "
                       "reads every joint as free, as Pinocchio does by default")

    def problem_args(p, allow_all: bool, default: str):
        choices = ["inverse", "forward", "hybrid"] + (["all"] if allow_all else [])
        p.add_argument("--problem", choices=choices, default=default, help=f"which problem (default {default})")
        p.add_argument("--q", help="joint positions, comma-separated (default: the documented state)")
        p.add_argument("--v", help="joint velocities, comma-separated")
        p.add_argument("--qdd", help="joint accelerations (inverse: a vector; hybrid: joint=value pairs)")
        p.add_argument("--tau", help="joint torques/forces (forward: a vector; hybrid: joint=value pairs)")
        p.add_argument("--base-pose", metavar="X,Y,Z,QX,QY,QZ,QW",
                       help="a floating base's pose in the world: position in m and a unit quaternion, or "
                            "x,y,z,roll,pitch,yaw (m; rad, as a URDF origin) (default: the identity)")
        p.add_argument("--base-twist", metavar="WX,WY,WZ,VX,VY,VZ",
                       help="a floating base's twist in its own frame: angular velocity in rad/s, linear in m/s "
                            "(default 0)")
        p.add_argument("--base-accel", metavar="WX,WY,WZ,VX,VY,VZ",
                       help="a floating base's acceleration (the twist's derivative) in rad/s² and m/s², for inverse "
                            "dynamics (default 0) and hybrid (default: free, solved for); forward dynamics solves for "
                            "it")
        environment_args(p)
        p.add_argument("--ordering", help=f"one of {', '.join(STRATEGIES)} (default colamd), or comma-separated "
                                          "labels such as t3,t2,t1,F1,F2,F3,A3,A2,A1")
        p.add_argument("--gravity", type=float, nargs=3, default=gtdyn.GRAVITY, metavar=("GX", "GY", "GZ"),
                       help=f"gravity in the world frame, m/s² (default {' '.join(f'{g:g}' for g in gtdyn.GRAVITY)})")
        p.add_argument("--elimination", choices=["qr", "constrained"], default="qr",
                       help="Householder QR (default) or GTSAM's constrained elimination")

    def environment_args(p):
        p.add_argument("--wrench", action="append", metavar="FRAME=MX,MY,MZ,FX,FY,FZ",
                       help="a wrench the environment applies to a link or frame: moment in N·m, force in N, in the "
                            "frame's own axes (or see --wrench-axes); repeat for several")
        p.add_argument("--wrench-axes", choices=["local", "world_aligned"], default="local",
                       help="the axes of every --wrench: the frame's own (local, default) or the world's at the "
                            "frame's origin (world_aligned: a weight is 0,0,0,0,0,-m·g)")
        p.add_argument("--contacts", metavar="FRAME[:surface],..",
                       help="rigid contacts at the origins of these links or frames: point contacts (3 force "
                            "components) unless :surface (a whole wrench); their forces are solved for")

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
    p.add_argument("--out", metavar="PREFIX",
                   help="output path prefix: writes PREFIX.FORMAT and PREFIX.dot (default ROBOT_PROBLEM_ORDERING in "
                        "the current directory); a directory (an existing one, or a path ending in /) gets "
                        "ROBOT_PROBLEM_ORDERING.FORMAT and .dot inside it")
    p.add_argument("--format", choices=["png", "svg", "pdf"], default="png", help="picture format (default png)")
    p.add_argument("--steps", action="store_true", help="also draw the graph after each batch (paper Fig. 5)")
    p.set_defaults(run=cmd_dag)

    p = sub.add_parser("bench", help="time each ordering's compiled solver against Pinocchio (--reference: the "
                                     "reference path)",
                       description="Time each ordering's compiled solver (gtdyn.compile) against Pinocchio, sample by\n"
                                   "sample in the same process: single calls (checked, and with checks=False), "
                                   "batches\n"
                                   "against pin.*InParallel on the same threads, compile seconds cold and cached.\n"
                                   "--reference times the reference path's elimination instead (GTSAM, per ordering,\n"
                                   "as the paper's Tables I-II). Progress goes to stderr, tables to stdout.",
                       formatter_class=formatter)
    robot_arg(p)
    p.add_argument("--problem", choices=["inverse", "forward", "hybrid", "all"], default="all")
    p.add_argument("--orderings", help="comma-separated strategy names (default: every applicable one)")
    p.add_argument("--repeat", type=int, default=30, help="samples per measurement (default 30)")
    p.add_argument("--inner", type=int, default=5, help="calls per sample (default 5)")
    p.add_argument("--warmup", type=int, default=5, help="warm-up calls (default 5)")
    p.add_argument("--batch", type=int, default=1000,
                   help="states per batch, timed min(REPEAT, 7) times; 0: no batches (default 1000)")
    p.add_argument("--threads", default="1,2", help="thread counts of the batches, comma-separated (default 1,2)")
    p.add_argument("--lanes", action="store_true",
                   help="compile with lanes=True: batches solve four states per pass in SIMD lanes")
    p.add_argument("--scaling", action="store_true",
                   help="also time serial chains (6 to 24 joints; with --reference 3 to 48)")
    p.add_argument("--reference", action="store_true",
                   help="time the reference path (GTSAM elimination per ordering) instead of compiled solvers")
    p.add_argument("--out", help="directory for results.md, results.csv, samples.csv and plots")
    p.set_defaults(run=cmd_bench)

    p = sub.add_parser("plan", help="optimize a trajectory to a goal; write it (CSV) and a plot",
                       description="Plan a rest-to-rest trajectory from --q0 to --goal with\n"
                                   "gtdyn.optimize_trajectory: the dynamics at every knot, the collocation rule\n"
                                   "between knots, the model's limits on q, q̇ and τ as constraints, least torque\n"
                                   "effort. Writes PREFIX.csv (t, q_*, v_*, qdd_*, tau_* per joint at each knot)\n"
                                   "and a plot of q(t) and τ(t).\n"
                                   "A floating robot (--base floating) moves from --base-pose to --goal-base-pose\n"
                                   "(then --goal may be left out: its joints end where the plan puts them), pushed\n"
                                   "by the ground through the --stance frames, which stand where they start at every\n"
                                   "knot; the CSV adds base_x..base_qw (its pose), base_wx..base_vz (its twist,\n"
                                   "own frame) and f_FRAME_x..z (each stance frame's ground force, world axes, N).",
                       formatter_class=formatter)
    robot_arg(p)
    p.add_argument("--goal", metavar="Q1,Q2,..", help="joint positions to reach at rest (required on a fixed base)")
    p.add_argument("--q0", metavar="Q1,Q2,..", help="start at rest (default: the default state's q)")
    p.add_argument("--steps", type=int, default=PLAN_STEPS, metavar="N", help=f"knots − 1 (default {PLAN_STEPS})")
    p.add_argument("--dt", type=float, default=PLAN_DT, help=f"time between knots, s (default {PLAN_DT:g})")
    p.add_argument("--collocation", choices=["trapezoidal", "euler"], default="trapezoidal",
                   help="the rule between knots (default trapezoidal)")
    p.add_argument("--passive", metavar="JOINT,..", help="joints without an actuator (their torque is zero)")
    p.add_argument("--no-limits", action="store_true", help="ignore the model's limits on q, q̇ and τ")
    p.add_argument("--base-pose", metavar="POSE", help="a floating base's start pose: x,y,z,qx,qy,qz,qw or "
                   "x,y,z,roll,pitch,yaw (default the identity)")
    p.add_argument("--goal-base-pose", metavar="POSE", help="a floating base's pose to reach at rest (as --base-pose)")
    p.add_argument("--stance", metavar="FRAME,..", help="frames standing on the ground at every knot (a floating "
                   "base's only support)")
    p.add_argument("--friction", type=float, help="the stance frames' friction coefficient (default 0.7)")
    p.add_argument("--out", default="plan", metavar="PREFIX", help="output path prefix (default plan); a directory "
                   "gets ROBOT.csv and ROBOT.FORMAT inside it")
    p.add_argument("--format", choices=["png", "svg", "pdf"], default="png", help="plot format (default png)")
    p.set_defaults(run=cmd_plan)

    p = sub.add_parser("simulate", help="integrate forward dynamics in time; write the trajectory (CSV) and a plot",
                       description="Integrate forward dynamics from (q0, v0) under a constant torque (gtdyn.simulate:\n"
                                   "each step calls a compiled solver), write every sample as CSV (t, q_*, v_*,\n"
                                   "qdd_*, tau_* per joint, kinetic, potential, energy; full precision) and plot q(t)\n"
                                   "and E(t) - E(0); print the wall time, steps per second and the energy's drift.\n"
                                   "Trees and closed loops on a fixed base, trees on a floating one (whose base\n"
                                   "position and orientation are plotted too); leaving a joint's limits is warned\n"
                                   "about (limits are not enforced). --wrench acts throughout the run; --contacts\n"
                                   "are rigid and bilateral (their forces are printed at the end).\n\n"
                                   "q0 defaults to the q of gtdyn solve's default state (gtdyn solve --help): a\n"
                                   "bundled robot's documented q, else q_k = 0.1·k inside the joint limits; v0 and\n"
                                   "τ default to 0.",
                       formatter_class=formatter)
    robot_arg(p)
    p.add_argument("--dt", type=float, default=DEFAULT_DT, help=f"time step, s (default {DEFAULT_DT:g})")
    p.add_argument("--steps", type=int, default=DEFAULT_STEPS, metavar="N",
                   help=f"number of steps (default {DEFAULT_STEPS})")
    p.add_argument("--method", choices=METHODS, default=METHODS[0], metavar="M",
                   help=f"integrator: {', '.join(METHODS)} (default {METHODS[0]})")
    p.add_argument("--q0", metavar="Q1,Q2,..",
                   help="initial joint positions, comma-separated (default: the default state's q)")
    p.add_argument("--v0", metavar="V1,V2,..", help="initial joint velocities, comma-separated (default 0)")
    p.add_argument("--tau", metavar="T1,T2,..", help="constant joint torques/forces, comma-separated (default 0)")
    p.add_argument("--gravity", type=float, nargs=3, default=gtdyn.GRAVITY, metavar=("GX", "GY", "GZ"),
                   help=f"gravity in the world frame, m/s² (default {' '.join(f'{g:g}' for g in gtdyn.GRAVITY)})")
    environment_args(p)
    p.add_argument("--out", default=DEFAULT_OUT, metavar="PREFIX",
                   help=f"output path prefix: writes PREFIX.csv and the plot PREFIX.FORMAT (default {DEFAULT_OUT}); "
                        "a directory (an existing one, or a path ending in /) gets ROBOT.csv and ROBOT.FORMAT inside "
                        "it, ROBOT the robot's name")
    p.add_argument("--format", choices=["png", "svg", "pdf"], default="png", help="plot format (default png)")
    p.set_defaults(run=cmd_simulate)

    p = sub.add_parser("info", help="list a robot's joints, links and limits")
    robot_arg(p)
    p.set_defaults(run=cmd_info)

    p = sub.add_parser("compile", help="compile a robot's solvers into the on-disk cache ahead of time",
                       description="Compile a robot's solvers (gtdyn.compile) into the on-disk cache ahead of\n"
                                   "time, the warm-up step of a deployment: later processes on this machine load them\n"
                                   "in milliseconds. Prints each solver's compile time and size, and where the cache\n"
                                   "is ($GTDYN_CACHE_DIR, else the user cache folder). The machine code is for this\n"
                                   "CPU: another CPU compiles again. Each combination of options is an entry of its\n"
                                   "own: pass the ordering, gravity and --derivatives your program passes to\n"
                                   "gtdyn.compile; --lanes adds the SIMD-lane batches to the entry, which default\n"
                                   "solvers then use. --problem all is inverse and forward dynamics, and hybrid with\n"
                                   "--qdd-joints.",
                       formatter_class=formatter)
    robot_arg(p)
    p.add_argument("--problem", choices=["inverse", "forward", "hybrid", "all"], default="all",
                   help="which solvers (default all)")
    p.add_argument("--ordering", help=f"one of {', '.join(STRATEGIES)} or comma-separated labels (default: "
                                      "gtdyn.compile's, RNEA for inverse and ABA for forward and hybrid dynamics)")
    p.add_argument("--qdd-joints", metavar="J1,J2,..", help="hybrid dynamics: the joints whose q̈ is given")
    p.add_argument("--gravity", type=float, nargs=3, default=gtdyn.GRAVITY, metavar=("GX", "GY", "GZ"),
                   help=f"gravity in the world frame, m/s² (default {' '.join(f'{g:g}' for g in gtdyn.GRAVITY)})")
    p.add_argument("--derivatives", action="store_true", help="also the sensitivities (compile(..., derivatives=True))")
    p.add_argument("--lanes", action="store_true",
                   help="also the SIMD-lane batches now (compile(..., lanes=True)), not after a solver's first "
                        "10,000 batched states")
    p.add_argument("--quick", action="store_true", help="LLVM's quick code generator (compile(..., quick=True))")
    p.set_defaults(run=cmd_compile)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(attach_negative_values(parser, sys.argv[1:] if argv is None else list(argv)))
    except CLIError as e:
        print(f"gtdyn: error: {one_line(str(e))}", file=sys.stderr)
        return 1
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
        print(f"gtdyn: error: {one_line(' '.join([str(e), *getattr(e, '__notes__', ())]))}", file=sys.stderr)
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
