"""``gtdyn.compile``: a robot, a problem and an ordering → a solver that runs the elimination as machine code.

The symbolic pass (``plan``, ``codegen``) happens once; each call only runs the numbers. The graph and the
ordering are exactly the reference path's: the ordering is resolved on the reference graph of a sample query
(named strategies, lists and callables alike), so ``solver.dag()`` is the reference path's DAG. Fresh code is
checked against the reference path at sample states before it is cached.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Iterable

import numpy as np

from gtdyn import keys
from gtdyn.arguments import choice, covered, flag, gravity_vector, robot_argument
from gtdyn.arguments.asked import place_contacts, qdd_joint_names
from gtdyn.arguments.query import Query
from gtdyn.arguments.wrenches import compiled_wrench_frames
from gtdyn.compiled import background, cache, lanes, native, split, trace
from gtdyn.compiled.codegen import generate
from gtdyn.compiled.fallback import self_check
from gtdyn.compiled.rescue import Rescue
from gtdyn.compiled.solver import CompiledSolver
from gtdyn.compiled.states import build_states, sample_query, sample_states
from gtdyn.dynamics.memory import check_solve_memory
from gtdyn.dynamics.reference import template_graph
from gtdyn.equations import GRAVITY
from gtdyn.errors import ArgumentError
from gtdyn.kinematics import loop_closure
from gtdyn.model.robot import Robot
from gtdyn.orderings import resolve_ordering
from gtdyn.problem import PROBLEM_KINDS, Problem

LOG = logging.getLogger("gtdyn")  # cold compiles take seconds: say so to whoever listens (logging.INFO)

# the fastest named orderings of compiled plans, measured (benchmarks/results/results.md)
DEFAULT_ORDERINGS = {"inverse": "rnea", "forward": "aba", "hybrid": "aba"}


def compile(robot: Robot, problem: str, *, ordering=None, qdd_joints: Iterable[str] | None = None, gravity=GRAVITY,
            contacts=None, wrench_frames: Iterable[str] | None = None, wrench_axes: str = "local",
            derivatives: bool = False, independent_joints: Iterable[str] | None = None, checks: bool = True,
            use_cache: bool = True, lanes: bool | None = None, quick: bool = False,
            reference_pivots: bool = False) -> CompiledSolver:
    """A compiled solver for ``problem`` ("inverse", "forward" or "hybrid"; hybrid: ``qdd_joints`` names the
    joints whose q̈ is given, τ is given at the others) in ``ordering`` (a strategy name, a list of labels or
    keys, or a callable, as everywhere; default ``DEFAULT_ORDERINGS``: RNEA for inverse dynamics, ABA for forward
    and hybrid, the fastest named orderings in ``python -m benchmarks.run_all``; the reference path's default stays
    COLAMD). See ``CompiledSolver`` for calling it.

    A floating base is given its pose and twist at each call (and its acceleration in inverse dynamics; in
    forward and hybrid dynamics it is free). ``contacts`` (a list of ``gtdyn.Contact``, fixed at compile time)
    make forward and hybrid dynamics constrained dynamics; inverse dynamics with contacts, whose forces are
    least-norm, stays with the reference path.

    ``wrench_frames`` (links or frames) take an external wrench [m; f] each at every call
    (``solver(..., external_wrenches={frame: wrench})``), in the frames' own axes (``wrench_axes="local"``) or in
    world-aligned axes at their origins (``"world_aligned"``), as ``gtdyn.forward_dynamics`` takes them.

    ``derivatives=True`` also compiles the exact sensitivities of the answer (``solver.derivatives``,
    ``solver.batch_derivatives``; ``gtdyn.compiled.derivatives``). On closed loops they are taken along the
    loops, with respect to the independent joints (``solver.independent_joints``: ``independent_joints`` in the
    order given, default the actuated joints first, ``gtdyn.kinematics.loop_closure.independent_joints``).

    ``checks=False`` skips the certificate (the condition bound or estimate, the backward error): an answer without
    a verdict, as Pinocchio gives (ill-conditioned states are not flagged); non-finite answers still go to the
    reference path.

    ``lanes``: ``solver.batch`` in SIMD lanes (``gtdyn.compiled.lanes``), ``solver.lanes`` states per pass, bit
    for bit as one by one. None (the default): the lane code is compiled in the background, in a worker process,
    once the solver's batches have run ``lanes.LANES_AFTER`` states (or when ``solver.compile_lanes()`` asks),
    and kept in the cache with the solver; batches run state by state until it is ready. True: compiled now (the
    compile takes about twice as long). False: never (batches state by state).

    ``quick=True`` compiles several times faster and runs slower (LLVM's -O0 code generator, no optimization
    pipeline; the same bits): for trying models, and for robots whose optimized compile is long
    (benchmarks/results/quick_compile.md).

    ``reference_pivots=True`` chooses pivots that do not vanish at the robot's reference configuration (every
    joint at zero: a straight leg zeroes its foot's contact rows, which random states alone make its pivots), at
    the cost of smaller pivots elsewhere. A solver compiled without it whose pivots vanish there guards them, and
    near there asks that twin, compiled at the first such call, before the reference path (``solver.rescues``
    counts its answers; ``gtdyn.compiled.rescue``).

    The first compile of a robot, problem and ordering writes the machine code to an on-disk cache
    (``gtdyn.compiled.cache``); later compiles, in any process, load it.
    """
    started = time.perf_counter()
    robot_argument(robot)
    choice("problem", problem, PROBLEM_KINDS)
    gravity = gravity_vector(gravity)
    qdd_joints = qdd_joint_names(robot, problem, qdd_joints)
    frames = compiled_wrench_frames(robot, wrench_frames, wrench_axes)
    derivatives = flag("derivatives", derivatives)
    lanes = None if lanes is None else flag("lanes", lanes)
    quick = flag("quick", quick)
    reference_pivots = flag("reference_pivots", reference_pivots)
    if derivatives and problem == "inverse":
        covered(robot, "gtdyn.compile(\"inverse\", derivatives=True)", loops=False,
                advice="the dependent joints' given q̈ would have to follow q along the loops' acceleration "
                       "constraint, which takes second derivatives of the loop kinematics; forward and hybrid "
                       "derivatives cover closed loops")
    independent = None
    if independent_joints is not None or (derivatives and robot.loop_joints):
        independent = loop_closure.independent_joints(
            robot, robot.actuated_joint_names if independent_joints is None else independent_joints,
            exactly=independent_joints is not None, argument="independent_joints")
    if robot.loop_joints:  # a planar loop's plane would turn with the base
        covered(robot, "gtdyn.compile with closed loops", floating_base=False,
                advice="use the reference path: gtdyn.forward_dynamics etc.")
    if problem == "inverse" and place_contacts(robot, contacts):
        raise ArgumentError("contacts: inverse dynamics with contacts (least-norm contact forces) is not compiled; "
                            "use gtdyn.inverse_dynamics(..., contacts=...)")
    samples = sample_states(robot, problem, qdd_joints, count=1, wrench_frames=len(frames))  # sample 0 of a build's
    template, graph = template_graph(sample_query(robot, problem, qdd_joints, samples, 0, contacts, gravity, frames,
                                                  wrench_axes))
    gtsam_order = resolve_ordering(DEFAULT_ORDERINGS[problem] if ordering is None else ordering, robot,
                                   template.problem, graph)
    order = [gtsam_order.at(i) for i in range(gtsam_order.size())]
    name = cache.key(cache.code_fingerprint(), cache.FORMAT, native.target_id(), cache.robot_fingerprint(robot),
                     cache.problem_signature(template.problem), order, tuple(gravity),
                     [(f.name, f.body, f.fTcom.matrix().tobytes()) for f in frames], wrench_axes, derivatives,
                     quick, reference_pivots)  # with lanes or not, one entry: lane code, now or later, joins it
    record = cache.load(name) if use_cache else None
    cached = record is not None
    if record is None:
        check_solve_memory(template, graph, gtsam_order,
                           DEFAULT_ORDERINGS[problem] if ordering is None else ordering, compiling=True)
        LOG.info("compiling %s dynamics of '%s' (ordering %s): cold, into machine code", problem, robot.name,
                 " ".join(keys.label(k) for k in order[:6]) + (" …" if len(order) > 6 else ""))
        samples = build_states(robot, problem, qdd_joints, wrench_frames=len(frames))
        with np.errstate(all="ignore"):  # a singular robot's samples divide by zero pivots; its calls fall back
            record = _build(robot, template.problem, order, gravity, samples, name, frames, wrench_axes, derivatives,
                            lanes is True, quick, reference_pivots)
    if lanes is False:
        record = {k: v for k, v in record.items() if k != "lanes_object"}
    later = (None, None)
    if lanes is not False:  # lane code compiled later: traced again, checked, kept in the cache entry
        trace_again = functools.partial(background.lane_code_elsewhere if lanes is None else _lane_code, robot,
                                        template, order, gravity, qdd_joints, frames, wrench_axes, derivatives, quick,
                                        record["prefix"], reference_pivots)
        later = (functools.partial(_cached_lanes, name, trace_again) if use_cache else trace_again,
                 functools.partial(cache.store, name) if use_cache else None)
    solver = CompiledSolver(template, qdd_joints, order, record, name, checks, frames, wrench_axes, independent,
                            later, rescue_of(record, template, qdd_joints, order, frames, wrench_axes, use_cache))
    if not cached:
        self_check(solver, samples)
        if use_cache:  # only code that passed its self-check is kept
            cache.store(name, record)
    if lanes is True and not solver.lanes:  # a cached solver without lane code gets it now: compiled, not loaded
        solver.compile_lanes(wait=True)
        cached = False
    solver.compile_seconds = time.perf_counter() - started
    LOG.info("%s dynamics of '%s' ready in %.3g s (%s)", problem, robot.name, solver.compile_seconds,
             "from the cache" if cached else "compiled")
    solver.from_cache = cached
    return solver


def _build(robot: Robot, template: Problem, order: list[int], gravity, samples, name: str, wrench_frames,
           wrench_axes: str, derivatives: bool, in_lanes: bool = False, quick: bool = False,
           reference_pivots: bool = False) -> dict:
    program = generate(robot, template, order, gravity, samples, wrench_frames, wrench_axes, derivatives,
                       reference_pivots=reference_pivots)
    prefix = f"g{name[:12]}_"
    functions, rare = split.split_large(program.functions, program.layout, program.rare)
    obj = native.compile_module(functions, prefix, quick=quick, rare=rare)
    layout = program.layout
    lane_object = [lanes.compile_module(functions, prefix, quick, _batch_copies(layout))] if in_lanes else []
    record = {"object": obj, "prefix": prefix, "size": layout.size, "start": dict(layout.start),
              "status": layout.status, "outputs": len(program.outputs),  # no source: rendered when asked for
              "entries": native.entries_of(program.functions), "derivative_columns": layout.derivative_columns,
              "parents": {k: sorted(p) for k, p in program.plan.parents.items()},
              "operations": _operations(program),
              "quick": quick, "reference_pivots": reference_pivots, "vanishing": program.plan.vanishing,
              **({"lanes_object": lane_object[0]} if lane_object else {})}
    trace.release(*program.functions.values(), *functions.values())  # not left to a full collection
    return record


def _batch_copies(layout) -> set[int]:
    """What a lane batch copies out of the workspace: the answer, its verdicts, and how it was certified."""
    return set(range(layout.start["out"], layout.status + 3)) | {layout.start["bounded"]}


def _operations(program) -> dict[str, int]:
    """The operations of each generated function: with the workspace's size, what says that lane code compiled
    later is of the solver's own program (``lanes.Batches``)."""
    return {fn.name: fn.count() for fn in program.functions.values()}


_LANE_CODE = ("lanes_object", "size", "operations")  # lane code, and what says which program it is of (the record's)


def _cached_lanes(name: str, trace_again) -> dict:
    """The lane code of cache entry ``name`` if another solver or process has stored it since this one loaded
    (its ``checks=False`` twin, say), else ``trace_again()``; as ``_lane_code`` gives it."""
    record = cache.load(name)
    if record is not None and "lanes_object" in record:
        return {key: record[key] for key in _LANE_CODE}
    return trace_again()


def _lane_code(robot: Robot, template: Query, order: list[int], gravity, qdd_joints, frames, wrench_axes: str,
               derivatives: bool, quick: bool, prefix: str, reference_pivots: bool = False) -> dict:
    """The lane code of a solver compiled before without it: its program traced again from the same samples (so
    the same plan and workspace) and compiled (``lanes.compile_module``; in the background, in a worker process:
    ``background.lane_code_elsewhere``). Returned with the program's workspace size and operations, which the
    solver checks against its own before it runs the code: a process whose settings differ (another gtdyn on its
    path, a changed constant) traces another program, which would write past the workspace."""
    samples = build_states(robot, template.kind, qdd_joints, wrench_frames=len(frames))
    with np.errstate(all="ignore"):
        program = generate(robot, template.problem, order, gravity, samples, frames, wrench_axes, derivatives,
                           reference_pivots=reference_pivots)
    functions, _ = split.split_large(program.functions, program.layout, program.rare)
    code = dict(zip(_LANE_CODE, (lanes.compile_module(functions, prefix, quick, _batch_copies(program.layout)),
                                  program.layout.size, _operations(program))))
    trace.release(*program.functions.values(), *functions.values())
    return code


def unpickled(template: Query, qdd_joints, order, record: dict, name: str, checks: bool, wrench_frames, wrench_axes,
               target: str, compile_seconds: float, independent_joints=None) -> CompiledSolver:
    """A pickled solver, here: its machine code if it was made for this CPU, else the same plan compiled anew."""
    if target == native.target_id():
        solver = CompiledSolver(template, qdd_joints, order, record, name, checks, wrench_frames, wrench_axes,
                                independent_joints, rescue=rescue_of(record, template, qdd_joints, order,
                                                                     wrench_frames, wrench_axes))
        solver.compile_seconds, solver.from_cache = compile_seconds, True
        return solver
    return _same_plan(record, template, qdd_joints, order, wrench_frames, wrench_axes)(
        derivatives=bool(record.get("derivative_columns")), independent_joints=independent_joints, checks=checks,
        lanes=True if "lanes_object" in record else None, reference_pivots=bool(record.get("reference_pivots")))


def rescue_of(record: dict, template: Query, qdd_joints, order, frames, wrench_axes: str,
              use_cache: bool = True) -> Rescue | None:
    """For a plan with a pivot that vanishes at the reference configuration (its record's "vanishing"), the twin
    to ask before the reference path, compiled when first asked (``gtdyn.compiled.rescue``); else None. The twin:
    the same problem and ordering, pivots scored at the reference configuration too, always checked, no lanes."""
    if not record.get("vanishing") or record.get("reference_pivots"):
        return None
    return Rescue(functools.partial(_same_plan(record, template, qdd_joints, order, frames, wrench_axes),
                                    use_cache=use_cache, lanes=False, reference_pivots=True))


def _same_plan(record: dict, template: Query, qdd_joints, order, frames, wrench_axes: str) -> functools.partial:
    """``compile`` of the problem, ordering and frames a solver's ``record`` was built for (what a pickled solver
    compiles on another CPU, and what its twin varies), the rest of its keywords left to the caller."""
    return functools.partial(
        compile, template.robot, template.kind, ordering=list(order), qdd_joints=qdd_joints or None,
        gravity=template.gravity, contacts=[c.contact for c in template.problem.contacts] or None,
        wrench_frames=list(frames) or None, wrench_axes=wrench_axes, quick=bool(record.get("quick")))
