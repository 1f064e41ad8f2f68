"""``gtdyn compile``: compile a robot's solvers ahead of time into the on-disk cache, the warm-up step of a
deployment (a container's entry point, a cluster's workers): later processes on this machine load them in
milliseconds instead of compiling for seconds. Says what each solver cost and where the cache is."""

from __future__ import annotations

import time

import gtdyn
from gtdyn.cli.inputs import load, ordering_argument
from gtdyn.cli.messages import CLIError
from gtdyn.compiled import cache
from gtdyn.progress import Progress


def problems(problem: str, qdd_joints: list[str] | None) -> list[str]:
    """The problems --problem names: "all" is inverse and forward dynamics, and hybrid when --qdd-joints says
    which joints' q̈ are given."""
    if problem != "all":
        return [problem]
    return ["inverse", "forward"] + (["hybrid"] if qdd_joints else [])


def cmd_compile(args) -> None:
    robot = load(args.robot, args.base, args.transmissions)
    qdd_joints = [name.strip() for name in args.qdd_joints.split(",") if name.strip()] if args.qdd_joints else None
    if args.problem == "hybrid" and not qdd_joints:
        raise CLIError("--problem hybrid needs --qdd-joints J1,J2,..: the joints whose q̈ is given")
    if qdd_joints and args.problem not in ("hybrid", "all"):
        raise CLIError(f"--qdd-joints: only hybrid dynamics takes them, not {args.problem}")
    asked = problems(args.problem, qdd_joints)
    with Progress("compile", len(asked), after=1.0) as progress:  # a cold compile of a big robot takes seconds
        for problem in asked:
            started = time.perf_counter()
            solver = gtdyn.compile(robot, problem, ordering=ordering_argument(args.ordering, problem),
                                   qdd_joints=qdd_joints if problem == "hybrid" else None, gravity=args.gravity,
                                   derivatives=args.derivatives, lanes=True if args.lanes else None, quick=args.quick)
            seconds = time.perf_counter() - started
            progress.step(problem)
            if solver.from_cache:
                how = "loaded from the cache"
            elif cache.entry(solver.cache_key).exists():
                how = "compiled into the cache"
            else:
                how = "compiled, not cached (a warning above says why)"
            order = " ".join(solver.ordering[:6]) + (" …" if len(solver.ordering) > 6 else "")
            print(f"{problem} dynamics of '{robot.name}' (ordering {order}): {how} in {seconds:.3g} s, "
                  f"{sum(solver.operations.values()):,} operations", flush=True)
    count, size = cache.usage()
    print(f"cache: {cache.directory()}, {count} solvers in {size / 2**20:.1f} MB (at most "
          f"{cache.limit_bytes() / 2**20:.0f} MB: $GTDYN_CACHE_MAX_MB); the machine code is for this CPU")
