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
import threading
import warnings

import numpy as np

from gtdyn import keys
from gtdyn.arguments import covered, flag, frame_list, joint_positions, robot_argument, state_batch, whole_number
from gtdyn.arguments.query import POSE
from gtdyn.arguments.wrenches import wrench_frame
from gtdyn.compiled import base_inputs, cache, entry, native, parallel, split, trace
from gtdyn.compiled.build import DEFAULT_ORDERINGS
from gtdyn.compiled.codegen import generate, off_pivot
from gtdyn.compiled.dual import Dual, tangents
from gtdyn.compiled.kinematics import traced_kinematics
from gtdyn.compiled.plan import traced_rows
from gtdyn.compiled.render import render
from gtdyn.compiled.states import sample_query, sample_states
from gtdyn.compiled.validity import finite
from gtdyn.compiled.wrench_inputs import traced_wrenches
from gtdyn.dynamics.operational import EFPA_ORDERINGS, operational_space_inverse_inertia
from gtdyn.dynamics.quantities import NO_GRAVITY
from gtdyn.dynamics.reference import template_graph
from gtdyn.errors import GTDYN_ERRORS
from gtdyn.model.robot import Robot
from gtdyn.orderings import resolve_ordering
from gtdyn.spatial import Ad

ENTRIES = ("omain", "ofast")  # the checked call (the forward solver's certificate, then Λ⁻¹) and the unchecked
_NAN = float("nan")  # an unknown without a pivot (structurally singular): NaN fails the finiteness check


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
        samples = sample_states(robot, "forward", (), wrench_frames=len(wrench_frames))
        with np.errstate(all="ignore"):
            record = _build(robot, template.problem, order, samples, wrench_frames, name, quick)
        solver = CompiledInverseOSIM(robot, names, distinct, chosen, record, checks, order, quick)
        solver.self_check(samples["q"])
        if use_cache:
            cache.store(name, record)
        return solver
    return CompiledInverseOSIM(robot, names, distinct, chosen, record, checks, order, quick)


def _build(robot: Robot, problem, order: list[int], samples, frames, name: str, quick: bool) -> dict:
    extra = {}

    def more(plan, column, layout, slots, functions):
        extra["start"] = layout.size
        return osim_functions(robot, problem, frames, plan, column, layout, slots, functions)

    program = generate(robot, problem, order, NO_GRAVITY, samples, frames, "local", more=more)
    prefix = f"o{name[:12]}_"
    functions, rare = split.split_large(program.functions, program.layout, program.rare)
    obj = native.compile_module(functions, prefix, ENTRIES, quick, rare)
    header = (f"the inverse operational-space inertia of '{robot.name}' at {', '.join(f.name for f in frames)}, "
              f"ordering {' '.join(keys.label(k) for k in order)}: generated by gtdyn.compile_inverse_osim")
    record = {"object": obj, "prefix": prefix, "size": program.layout.size, "start": extra["start"],
              "source": render(program.functions, header),
              "operations": {fn.name: fn.count() for fn in program.functions.values()}}
    trace.release(*program.functions.values(), *functions.values())
    return record


def unit_wrench_rhs(robot: Robot, problem, frames) -> list[list[float]]:
    """Per frame and wrench component (in the frames' order, [m; f]), the rows' right-hand sides (in
    ``traced_rows`` order) for that unit wrench at rest: q̇ = 0, τ = 0, no gravity. They are constants: the
    wrench enters its link's eq. 6 through the constant frame-to-CoM transform, and nothing else is left."""
    scratch = trace.Function("rest")
    n = robot.num_dofs
    q = [scratch.load(j) for j in range(n)]
    rotation, twist = (np.eye(3), np.zeros(6)) if robot.floating_base else (None, None)
    kin, _ = traced_kinematics(robot, q, [0.0] * n, rotation, twist)
    seeds = [[Dual.seed(0.0, (m, c)) for c in range(6)] for m in range(len(frames))]
    external = traced_wrenches(frames, "local", seeds, kin)
    at_rest = dataclasses.replace(problem, known_tau={j: 0.0 for j in problem.known_tau},
                                  **({"base_wrench": np.zeros(6)} if robot.floating_base else {}))
    rows = traced_rows(robot, kin, at_rest, np.zeros(3), external)
    columns = [[tangents(row.rhs).get((m, c), 0.0) for row in rows] for m in range(len(frames)) for c in range(6)]
    trace.release(scratch)  # its values are thrown away
    if any(trace.is_sym(b) for column in columns for b in column):
        raise AssertionError("gtdyn.compiled.operational: a unit wrench's right-hand side depends on the state")
    return columns


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
    needed = _reached(plan, pivot_row, [kc for block in accelerations for kc in block])
    values = []
    for j, rhs in enumerate(unit_wrench_rhs(robot, problem, frames)):
        fn.comment(f"column {j + 1}: a unit {'moment' if j % 6 < 3 else 'force'} on {frames[j // 6].name}")
        t = list(rhs)
        for i, p, multiplier in plan.tape:  # the row operations where the push reaches
            if _nonzero(t[p]):
                t[i] = t[i] - slots.use(fn, multiplier) * t[p]
        x = {}
        for key, c, p in reversed(plan.pivots):  # back-substitution of what the frames' accelerations need
            if (key, c) in needed:
                total = t[p]
                for other, coefficient in off_pivot(plan.work[p], key, c):
                    if _nonzero(value := x.get(other, _NAN)):
                        total = total - slots.use(fn, coefficient) * value
                x[key, c] = trace.div(total, slots.use(fn, plan.work[p][key][c]))
        for a, frame in enumerate(frames):
            X = Ad(frame.fTcom) @ np.array([x.get(kc, _NAN) for kc in accelerations[a]], dtype=object)
            for r in range(6):
                fn.store(start + (6 * a + r) * size + j, X[r])
                values.append(X[r])
    # 1 when the solve before certified the matrix (its status) and every entry is finite
    fn.store(start + size * size, finite(values) * fn.load(layout.status))
    out = {"osim": fn}
    for name, solve in zip(ENTRIES, ("main", "fast"), strict=True):
        out[name] = trace.Function(name)
        out[name].call(functions[solve])
        out[name].call(fn)
    return out


def _nonzero(x) -> bool:
    return trace.is_sym(x) or x != 0.0


def _reached(plan, pivot_row: dict, wanted: list) -> set:
    """The unknowns whose back-substitution ``wanted`` depends on (themselves included)."""
    needed, stack = set(), list(wanted)
    while stack:
        kc = stack.pop()
        if kc in needed or kc not in pivot_row:
            continue
        needed.add(kc)
        stack += [other for other, _ in off_pivot(plan.work[pivot_row[kc]], *kc)]
    return needed


class CompiledInverseOSIM:
    """``solver(q)`` → Λ⁻¹ (6k × 6k) of ``solver.frames``; ``solver.batch(Q, threads=1)`` → (N, 6k, 6k). A
    configuration the checked call does not certify is answered by the reference path
    (``gtdyn.operational_space_inverse_inertia``), which raises or warns as forward dynamics do; ``fallbacks``
    counts those calls. ``source`` is the generated code, rendered; ``operations`` its size per function. It
    pickles, as compiled solvers do (``__reduce__``)."""

    def __init__(self, robot: Robot, frames: list[str], distinct: list[str], ordering, record: dict, checks: bool,
                 order: list[int], quick: bool):
        self.robot, self.frames, self.ordering, self.checks = robot, list(frames), ordering, checks
        self._order, self._quick_build = list(order), quick  # what another CPU compiles again (``__reduce__``)
        self.source, self.operations = record["source"], record["operations"]
        self.fallbacks = 0
        self._record = record
        self._native = native.Loaded(record["object"], record["prefix"], ENTRIES)
        self._entry = ENTRIES[0] if checks else ENTRIES[1]
        self._size, self._start = record["size"], record["start"]
        self._k = 6 * len(distinct)
        rows = [6 * distinct.index(name) + r for name in frames for r in range(6)]
        self._rows = None if rows == list(range(self._k)) else np.array(rows)  # a frame named twice: repeat it
        self._method = "forward solves" if robot.loop_joints else "elimination"  # the reference's, for loops
        self._ws = self._workspace()
        self._owner = threading.get_ident()
        flag = self._start + self._k ** 2
        self._bound = entry.bind(self._ws, self._native.address[self._entry], flag,  # keeps its plan alive
                                 [entry.Argument(entry.IN, 0, (robot.num_dofs,)),
                                  entry.Argument(entry.OUT, self._start, (self._k, self._k))], owner=self._owner)
        self._quick = self._bound.call

    def __reduce__(self):
        """Pickling (process pools, Dask, Ray), as ``CompiledSolver``'s: the record travels with the CPU it was made
        for; the other side loads its machine code on that CPU, else compiles the same plan (the elimination order
        as keys: an ordering given as a callable need not pickle). ``fallbacks`` starts again at zero."""
        ordering = self.ordering if isinstance(self.ordering, str) else self._order
        return _unpickled, (self.robot, self.frames, ordering, self._order, self._record, self.checks,
                            self._quick_build, native.target_id())

    def _workspace(self) -> np.ndarray:
        ws = np.zeros(self._size)  # q̇, τ, the wrenches and a base's twist and given wrench stay zero
        if self.robot.floating_base:
            ws[3 * self.robot.num_dofs + POSE:][:16] = np.eye(4).ravel()  # any pose: Λ⁻¹ does not depend on it
        return ws

    def __call__(self, q) -> np.ndarray:
        out = np.empty((self._k, self._k))  # one native entry: the owner's thread, float64 q of the right
        if self._quick(q, out):              # length, certified
            return self._repeated(out)
        q = joint_positions(self.robot, "q", q)
        ws = self._ws if threading.get_ident() == self._owner else self._workspace()  # a thread's own
        ws[:self.robot.num_dofs] = q
        self._native.entry[self._entry](ws.ctypes.data)
        if ws[self._start + self._k ** 2] == 1.0:
            return self._repeated(ws[self._start:self._start + self._k ** 2].reshape(self._k, self._k).copy())
        return self._reference(q)

    def batch(self, Q, threads: int = 1) -> np.ndarray:
        """Λ⁻¹ at each row of ``Q`` (N × n), on ``threads`` native threads."""
        (Q,) = state_batch(self.robot.num_dofs, Q=Q)
        threads = whole_number("threads", threads, minimum=1)
        n = self.robot.num_dofs
        inputs = np.tile(self._ws[:3 * n + base_inputs.input_count(self.robot)], (len(Q), 1))
        inputs[:, :n] = Q
        results = parallel.run_states(self._native.batch[self._entry], self._size, inputs, self._k ** 2 + 1,
                                      self._start, threads)
        out = results[:, :-1].reshape(len(Q), self._k, self._k)
        for i in np.flatnonzero(results[:, -1] != 1.0):  # the entry's status is not in its outputs: ask again
            out[i] = self._distinct(Q[i])
        return out if self._rows is None else out[:, self._rows][:, :, self._rows]

    def _distinct(self, q) -> np.ndarray:
        """Λ⁻¹ of the distinct frames at one configuration, by the checked call."""
        L = self(q)
        if self._rows is None:
            return L
        first = [self._rows.tolist().index(r) for r in range(self._k)]
        return L[np.ix_(first, first)]

    def _repeated(self, L: np.ndarray) -> np.ndarray:
        return L if self._rows is None else L[np.ix_(self._rows, self._rows)]

    def _reference(self, q) -> np.ndarray:
        self.fallbacks += 1
        return operational_space_inverse_inertia(self.robot, q, self.frames, ordering=self.ordering,
                                                 method=self._method)

    def self_check(self, Q) -> None:
        """Fresh code against the reference path at the build's sample configurations (columns of ``Q``)."""
        for q in np.asarray(Q).T:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    got = self(q)
                    if self.fallbacks:  # the reference path answered: nothing of ours to check
                        continue
                    want = operational_space_inverse_inertia(self.robot, q, self.frames, ordering=self.ordering,
                                                             method=self._method)
            except GTDYN_ERRORS:  # a singular robot raises at call time, as the reference path does
                continue
            finally:
                self.fallbacks = 0
            error = np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-300)
            if not error <= 1e-8:
                raise RuntimeError(f"gtdyn.compile_inverse_osim: the generated code for '{self.robot.name}' "
                                   f"disagrees with the reference path by {error:.3g}; please report this")


def _unpickled(robot: Robot, frames: list[str], ordering, order: list[int], record: dict, checks: bool, quick: bool,
               target: str) -> CompiledInverseOSIM:
    """A pickled ``CompiledInverseOSIM``, here: its machine code if it was made for this CPU, else compiled anew."""
    if target == native.target_id():
        return CompiledInverseOSIM(robot, frames, list(dict.fromkeys(frames)), ordering, record, checks, order, quick)
    solver = compile_inverse_osim(robot, frames, ordering=order, checks=checks, quick=quick)
    solver.ordering = ordering
    return solver
