"""Paper 003's inverse operational-space inertia Λ⁻¹ = J M⁻¹ Jᵀ as compiled code: ``gtdyn.compile_inverse_osim``.

The plan is forward dynamics at rest with an external wrench at each frame: the rows, the ordering and the
factorization of ``gtdyn.compile(robot, "forward", wrench_frames=frames)``. Column j of Λ⁻¹ is the frames'
accelerations X_a = Ad(aTcom) V̇ under the unit wrench e_j at q̇ = 0, τ = 0 and no gravity. That right-hand side
is a constant, so tracing the solve on it keeps only the operations it reaches: the row operations from the
pushed link toward the root, and the back-substitution of the accelerations the frames need. In the
articulated-body ordering ("efpa") this is the extended-force-propagator algorithm: articulated inertias once,
then per unit wrench a sweep up the pushed frame's path and down the frames' paths. In another ordering it is
what that ordering's factorization costs (the comparison of paper 003 §IX, ``benchmarks/paper003.py``).

The verdict is the dynamics': the checked call runs the forward solver's certificate on the same matrix, and a
configuration it does not certify (a singular or ill-conditioned mass matrix, angles out of range) goes to the
reference path, ``gtdyn.operational_space_inverse_inertia``, which raises or warns as forward dynamics do.

Λ⁻¹ in the frames' own axes does not depend on a floating base's pose: gravity does not enter, and M and the
frames' LOCAL Jacobians see only the joints. So a floating base's solver takes q alone.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from gtdyn import keys
from gtdyn.arguments import covered, flag, frame_list, robot_argument
from gtdyn.arguments.wrenches import wrench_frame
from gtdyn.compiled import cache, native, trace
from gtdyn.compiled.build import DEFAULT_ORDERINGS
from gtdyn.compiled.dual import Dual
from gtdyn.compiled.states import build_states, sample_query, sample_states
from gtdyn.compiled.unit_solves import (
    NOT_SOLVED,
    ConfigurationMatrix,
    build,
    reached,
    solve_column,
    unit_right_hand_sides,
    with_entries,
)
from gtdyn.dynamics.operational import EFPA_ORDERINGS, operational_space_inverse_inertia
from gtdyn.dynamics.quantities import NO_GRAVITY
from gtdyn.dynamics.reference import template_graph
from gtdyn.model.robot import Robot
from gtdyn.orderings import resolve_ordering
from gtdyn.spatial import Ad

ENTRIES = ("omain", "ofast")  # the checked call (the forward solver's certificate, then Λ⁻¹) and the unchecked


def compile_inverse_osim(robot: Robot, frames, *, ordering=None, checks: bool = True, use_cache: bool = True,
                         quick: bool = False) -> CompiledInverseOSIM:
    """A compiled ``gtdyn.operational_space_inverse_inertia(robot, q, frames, ordering=ordering)``:
    ``solver(q)`` → Λ⁻¹ (6k × 6k, blocks [ω; v] in each frame's own axes), ``solver.batch(Q, threads=1)`` →
    (N, 6k, 6k). ``ordering``: "efpa" (default: the articulated-body ordering, paper 003's EFPA),
    "cluster_efpa", "lagrange", "projection", or any ordering of forward dynamics; ``checks``, ``use_cache`` and
    ``quick`` as in ``gtdyn.compile``. Trees with or without transmissions, fixed or floating bases, and closed
    loops on a fixed base (whose reference answers come from ``method="forward solves"``: the reference path's
    elimination does not cover loops)."""
    robot = robot_argument(robot)
    names = frame_list(robot, "frames", frames)
    if robot.loop_joints:  # as gtdyn.compile: a planar loop's plane would turn with the base
        covered(robot, "gtdyn.compile_inverse_osim with closed loops", floating_base=False)
    distinct = list(dict.fromkeys(names))  # a frame named twice is solved once and its blocks repeated
    wrench_frames = tuple(wrench_frame(robot, name, "frames") for name in distinct)
    checks, use_cache, quick = flag("checks", checks), flag("use_cache", use_cache), flag("quick", quick)
    chosen = DEFAULT_ORDERINGS["forward"] if ordering is None else EFPA_ORDERINGS.get(ordering, ordering) \
        if isinstance(ordering, str) else ordering
    samples = sample_states(robot, "forward", (), count=1, wrench_frames=len(wrench_frames))
    template, graph = template_graph(sample_query(robot, "forward", (), samples, 0, None, NO_GRAVITY,
                                                  wrench_frames, "local"))
    gtsam_order = resolve_ordering(chosen, robot, template.problem, graph)
    order = [gtsam_order.at(i) for i in range(gtsam_order.size())]
    name = cache.key(cache.code_fingerprint(), cache.FORMAT, native.target_id(), cache.robot_fingerprint(robot),
                     "inverse osim", order, [(f.name, f.body, f.fTcom.matrix().tobytes()) for f in wrench_frames],
                     quick)
    record = cache.load(name) if use_cache else None
    if record is None:
        samples = build_states(robot, "forward", (), wrench_frames=len(wrench_frames))
        with np.errstate(all="ignore"):
            record = _build(robot, template.problem, order, samples, wrench_frames, name, quick)
        solver = CompiledInverseOSIM(robot, names, distinct, chosen, record, checks, order, quick)
        solver.self_check(samples["q"])
        if use_cache:
            cache.store(name, record)
        return solver
    return CompiledInverseOSIM(robot, names, distinct, chosen, record, checks, order, quick)


def _build(robot: Robot, problem, order: list[int], samples, frames, name: str, quick: bool) -> dict:
    header = (f"the inverse operational-space inertia of '{robot.name}' at {', '.join(f.name for f in frames)}, "
              f"ordering {' '.join(keys.label(k) for k in order)}: generated by gtdyn.compile_inverse_osim")
    return build(robot, problem, order, samples, functools.partial(osim_functions, robot, problem, frames),
                 prefix=f"o{name[:12]}_", entries=ENTRIES, header=header, quick=quick, frames=frames)


def unit_wrench_rhs(robot: Robot, problem, frames) -> list[list[float]]:
    """Per frame and wrench component (in the frames' order, [m; f]), the rows' right-hand sides (in
    ``traced_rows`` order) for that unit wrench at rest: q̇ = 0, τ = 0, no gravity. They are constants: the
    wrench enters its link's eq. 6 through the constant frame-to-CoM transform, and nothing else is left."""
    seeds = [[Dual.seed(0.0, (m, c)) for c in range(6)] for m in range(len(frames))]
    at_rest = dataclasses.replace(problem, known_tau={j: 0.0 for j in problem.known_tau},
                                  **({"base_wrench": np.zeros(6)} if robot.floating_base else {}))
    directions = [(m, c) for m in range(len(frames)) for c in range(6)]
    return unit_right_hand_sides(robot, at_rest, directions, frames, seeds)


def osim_functions(robot: Robot, problem, frames, plan, column, layout, slots, functions) -> dict:
    """``osim`` (Λ⁻¹ from the factors ``factor`` left, row-major into ``ws`` from the layout's end, then a
    flag: 1 if the solve before it certified the matrix and Λ⁻¹ is finite) and the entries ``omain`` /
    ``ofast``: the forward solver's checked / unchecked call (at rest its solution is zero; what matters is its
    verdict on the matrix), then ``osim``."""
    fn = trace.Function("osim")
    size = 6 * len(frames)
    start = layout.size
    layout.size += size * size + 1
    pivot_row = {(key, c): p for key, c, p in plan.pivots}
    accelerations = [[(keys.twist_accel_key(f.body), c) for c in range(6)] for f in frames]
    needed = reached(plan, pivot_row, [kc for block in accelerations for kc in block])
    values = []
    for j, rhs in enumerate(unit_wrench_rhs(robot, problem, frames)):
        fn.comment(f"column {j + 1}: a unit {'moment' if j % 6 < 3 else 'force'} on {frames[j // 6].name}")
        x = solve_column(fn, plan, slots, rhs, needed)
        for a, frame in enumerate(frames):
            X = Ad(frame.fTcom) @ np.array([x.get(kc, NOT_SOLVED) for kc in accelerations[a]], dtype=object)
            for r in range(6):
                fn.store(start + (6 * a + r) * size + j, X[r])
                values.append(X[r])
    return with_entries(fn, values, start + size * size, layout, functions, ENTRIES)


class CompiledInverseOSIM(ConfigurationMatrix):
    """``solver(q)`` → Λ⁻¹ (6k × 6k) of ``solver.frames``; ``solver.batch(Q, threads=1)`` → (N, 6k, 6k). A
    configuration the checked call does not certify is answered by the reference path
    (``gtdyn.operational_space_inverse_inertia``), which raises or warns as forward dynamics do; ``fallbacks``
    counts those calls. ``source`` is the generated code, rendered; ``operations`` its size per function. It
    pickles, as compiled solvers do (``__reduce__``)."""

    entries = ENTRIES
    what = "the inverse operational-space inertia"

    def __init__(self, robot: Robot, frames: list[str], distinct: list[str], ordering, record: dict, checks: bool,
                 order: list[int], quick: bool):
        self.frames, self.ordering, self._distinct_frames = list(frames), ordering, list(distinct)
        self._order, self._quick_build = list(order), quick  # what another CPU compiles again (``__reduce__``)
        k = 6 * len(distinct)
        rows = [6 * distinct.index(name) + r for name in frames for r in range(6)]
        self._rows = None if rows == list(range(k)) else np.array(rows)  # a frame named twice: repeat it
        self._first = [rows.index(r) for r in range(k)]  # where each distinct row first appears
        self._method = "forward solves" if robot.loop_joints else "elimination"  # the reference's, for loops
        super().__init__(robot, record, checks, (k, k))

    def __reduce__(self):
        """Pickling (process pools, Dask, Ray), as ``CompiledSolver``'s: the record travels with the CPU it was made
        for; the other side loads its machine code on that CPU, else compiles the same plan (the elimination order
        as keys: an ordering given as a callable need not pickle). ``fallbacks`` starts again at zero."""
        ordering = self.ordering if isinstance(self.ordering, str) else self._order
        return _unpickled, (self.robot, self.frames, ordering, self._order, self._record, self.checks,
                            self._quick_build, native.target_id())

    def _finish(self, L: np.ndarray) -> np.ndarray:
        return L if self._rows is None else L[np.ix_(self._rows, self._rows)]

    def _unfinish(self, L: np.ndarray) -> np.ndarray:
        return L if self._rows is None else L[np.ix_(self._first, self._first)]

    def _finish_batch(self, L: np.ndarray) -> np.ndarray:
        return L if self._rows is None else L[:, self._rows][:, :, self._rows]

    def reference(self, q) -> np.ndarray:
        return operational_space_inverse_inertia(self.robot, q, self._distinct_frames, ordering=self.ordering,
                                                 method=self._method)

    def _fallback(self, q) -> np.ndarray:
        """The reference path on the frames as named (a frame named twice too), as before the compiled code."""
        self.fallbacks += 1
        return operational_space_inverse_inertia(self.robot, q, self.frames, ordering=self.ordering,
                                                 method=self._method)


def _unpickled(robot: Robot, frames: list[str], ordering, order: list[int], record: dict, checks: bool, quick: bool,
               target: str) -> CompiledInverseOSIM:
    """A pickled ``CompiledInverseOSIM``, here: its machine code if it was made for this CPU, else compiled anew."""
    if target == native.target_id():
        return CompiledInverseOSIM(robot, frames, list(dict.fromkeys(frames)), ordering, record, checks, order, quick)
    solver = compile_inverse_osim(robot, frames, ordering=order, checks=checks, quick=quick)
    solver.ordering = ordering
    return solver
