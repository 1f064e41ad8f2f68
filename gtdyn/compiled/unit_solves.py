"""Matrices of the configuration alone, compiled from a plan at rest: ``gtdyn.compile_inverse_osim``'s Λ⁻¹ and
``gtdyn.compile_mass_matrix``'s M.

At rest (q̇ = 0, no gravity, every other input zero) a unit input — a wrench at a frame, one joint's q̈, one
component of a floating base's acceleration — enters the rows' right-hand side through constants alone. So the
plan's row operations and back-substitution, traced on that constant right-hand side, keep only the operations
the push reaches: one column of the matrix for each unit input, after the factorization the plan already does.

``ConfigurationMatrix`` is what both compile into: a checked call (the plan's own solve at rest, whose
certificate is the verdict on the matrix, then the columns) and an unchecked one, one state or a batch, a
fallback to the reference path for what the certificate does not settle, and pickling.
"""

from __future__ import annotations

import threading
import warnings

import numpy as np

from gtdyn.arguments import joint_positions, state_batch, whole_number
from gtdyn.arguments.query import POSE
from gtdyn.compiled import base_inputs, entry, native, parallel, split, trace
from gtdyn.compiled.codegen import generate
from gtdyn.compiled.dual import tangents
from gtdyn.compiled.kinematics import traced_kinematics
from gtdyn.compiled.plan import off_pivot, traced_rows
from gtdyn.compiled.render import render
from gtdyn.compiled.small_batches import few_states
from gtdyn.compiled.validity import finite
from gtdyn.compiled.wrench_inputs import traced_wrenches
from gtdyn.dynamics.quantities import NO_GRAVITY
from gtdyn.errors import GTDYN_ERRORS

NOT_SOLVED = float("nan")  # an unknown without a pivot (structurally singular): NaN fails the finiteness check


def unit_right_hand_sides(robot, at_rest, directions: list, frames=(), wrench_seeds=(),
                          fn: trace.Function | None = None) -> list[list]:
    """Per direction (a seed of ``gtdyn.compiled.dual``), the rows' right-hand sides (``traced_rows`` order) for a
    unit input along it at rest. ``at_rest``: the plan's problem with its given values zero or seeded dual
    numbers; ``wrench_seeds``: the external wrenches on ``frames`` (local axes), likewise.

    Without ``fn`` they must be constants (AssertionError if one depends on the state). With ``fn`` the
    kinematics are traced in it, on q from ``ws``, and a right-hand side may depend on q: a floating base's
    acceleration enters its children's eq. 5 through their joints' transforms. What the columns do not use of
    those kinematics is left out of the code (``trace.Function.live``)."""
    scratch = trace.Function("rest") if fn is None else fn
    n = robot.num_dofs
    q = [scratch.load(j) for j in range(n)]
    rotation, twist = (np.eye(3), np.zeros(6)) if robot.floating_base else (None, None)
    kin, _ = traced_kinematics(robot, q, [0.0] * n, rotation, twist)
    external = traced_wrenches(frames, "local", wrench_seeds, kin)
    rows = traced_rows(robot, kin, at_rest, np.zeros(3), external)
    columns = [[tangents(row.rhs).get(d, 0.0) for row in rows] for d in directions]
    if fn is None:
        trace.release(scratch)  # its values are thrown away
        if any(trace.is_sym(b) for column in columns for b in column):
            raise AssertionError("gtdyn.compiled.unit_solves: a unit input's right-hand side depends on the state")
    return columns


def build(robot, problem, order: list[int], samples, functions_of, *, prefix: str, entries: tuple[str, str],
          header: str, quick: bool, frames=()) -> dict:
    """The record of a ``ConfigurationMatrix``: the plan of ``problem`` in ``order`` without gravity and at rest (its
    factors need q alone: ``generate``'s ``at_rest``; external wrenches on ``frames`` as inputs), plus
    ``functions_of(plan, column, layout, slots, functions)``'s functions, which write the matrix from
    ``record["start"]`` (the layout's end as they begin); compiled under ``prefix``, with the generated code
    rendered under ``header``."""
    extra = {}

    def more(plan, column, layout, slots, functions):
        extra["start"] = layout.size
        return functions_of(plan, column, layout, slots, functions)

    program = generate(robot, problem, order, NO_GRAVITY, samples, frames, "local", more=more, at_rest=True)
    functions, rare = split.split_large(program.functions, program.layout, program.rare)
    obj = native.compile_module(functions, prefix, entries, quick, rare)
    record = {"object": obj, "prefix": prefix, "size": program.layout.size, "start": extra["start"],
              "source": render(program.functions, header),
              "operations": {fn.name: fn.count() for fn in program.functions.values()}}
    trace.release(*program.functions.values(), *functions.values())
    return record


def reached(plan, pivot_row: dict, wanted) -> set:
    """The unknowns (key, component) whose back-substitution ``wanted`` depends on (themselves included)."""
    needed, stack = set(), list(wanted)
    while stack:
        kc = stack.pop()
        if kc in needed or kc not in pivot_row:
            continue
        needed.add(kc)
        stack += [other for other, _ in off_pivot(plan.work[pivot_row[kc]], *kc)]
    return needed


def solve_column(fn: trace.Function, plan, slots, rhs: list, needed: set) -> dict:
    """The unknowns in ``needed`` (``reached``) for one right-hand side of ``unit_right_hand_sides``: the plan's
    row operations where the push reaches, then back-substitution, on the factors in ``ws`` (``slots``).
    Unknowns left out, or without a pivot, are NaN."""
    t = list(rhs)
    for i, p, multiplier in plan.tape:
        if _nonzero(t[p]):
            t[i] = t[i] - slots.use(fn, multiplier) * t[p]
    x = {}
    for key, c, p in reversed(plan.pivots):
        if (key, c) in needed:
            total = t[p]
            for other, coefficient in off_pivot(plan.work[p], key, c):
                if _nonzero(value := x.get(other, NOT_SOLVED)):
                    total = total - slots.use(fn, coefficient) * value
            x[key, c] = trace.div(total, slots.use(fn, plan.work[p][key][c]))
    return x


def with_entries(fn: trace.Function, values: list, flag: int, layout, functions: dict, entries: tuple) -> dict:
    """``fn``, which wrote the matrix's ``values``, ending with its flag at ``flag`` (1 when the solve before it
    certified the matrix and every value is finite), and the two ``entries``: the plan's checked / unchecked
    solve at rest (its answer is zero; what matters is its verdict on the matrix), then ``fn``."""
    fn.store(flag, finite(values) * fn.load(layout.status))
    out = {fn.name: fn}
    for name, solve in zip(entries, ("main", "fast"), strict=True):
        out[name] = trace.Function(name)
        out[name].call(functions[solve])
        out[name].call(fn)
    return out


def _nonzero(x) -> bool:
    return trace.is_sym(x) or x != 0.0


class ConfigurationMatrix:
    """``m(q)`` → a (rows × columns) matrix of the configuration; ``m.batch(Q, threads=1)`` → (N, rows,
    columns). The record's checked entry (``entries[0]``) runs the plan's certified solve at rest and then the
    columns, writing them row-major from ``record["start"]`` and then a flag (1: certified and finite); the
    unchecked one (``entries[1]``) the same without the certificate. A configuration the flag does not pass is
    answered by ``reference(q)``, and counted in ``fallbacks``. ``source`` is the generated code, rendered;
    ``operations`` its size per function."""

    entries: tuple[str, str]
    what = "matrix"  # for the self-check's message

    def __init__(self, robot, record: dict, checks: bool, shape: tuple[int, int]):
        self.robot, self.checks = robot, checks
        self.source, self.operations = record["source"], record["operations"]
        self.fallbacks = 0
        self._record, self._shape = record, shape
        self._native = native.Loaded(record["object"], record["prefix"], self.entries)
        self._entry = self.entries[0] if checks else self.entries[1]
        self._size, self._start = record["size"], record["start"]
        self._ws = self._workspace()
        self._owner = threading.get_ident()
        flag = self._start + shape[0] * shape[1]
        self._bound = entry.bind(self._ws, self._native.address[self._entry], flag,  # keeps its plan alive
                                 [entry.Argument(entry.IN, 0, (robot.num_dofs,)),
                                  entry.Argument(entry.OUT, self._start, shape)], owner=self._owner)
        self._quick = self._bound.call

    def reference(self, q) -> np.ndarray:
        """The reference path's matrix at ``q``, in the compiled shape."""
        raise NotImplementedError

    def _finish(self, matrix: np.ndarray) -> np.ndarray:
        """A compiled matrix as the caller gets it (a subclass may repeat rows); ``_unfinish`` undoes it,
        ``_finish_batch`` does it to a batch."""
        return matrix

    def _unfinish(self, matrix: np.ndarray) -> np.ndarray:
        return matrix

    def _finish_batch(self, matrices: np.ndarray) -> np.ndarray:
        return matrices

    def _fallback(self, q) -> np.ndarray:
        """The reference path's answer, as the caller gets it."""
        self.fallbacks += 1
        return self._finish(self.reference(q))

    def _workspace(self) -> np.ndarray:
        ws = np.zeros(self._size)  # q̇, the given inputs and the wrenches stay zero: at rest
        if self.robot.floating_base:
            ws[3 * self.robot.num_dofs + POSE:][:16] = np.eye(4).ravel()  # any pose: the matrix does not depend on it
        return ws

    def __call__(self, q) -> np.ndarray:
        out = np.empty(self._shape)  # one native entry: the owner's thread, float64 q of the right length,
        if self._quick(q, out):      # certified
            return self._finish(out)
        q = joint_positions(self.robot, "q", q)
        ws = self._ws if threading.get_ident() == self._owner else self._workspace()  # a thread's own
        ws[:self.robot.num_dofs] = q
        self._native.entry[self._entry](ws.ctypes.data)
        entries = self._shape[0] * self._shape[1]
        if ws[self._start + entries] == 1.0:
            return self._finish(ws[self._start:self._start + entries].reshape(self._shape).copy())
        return self._fallback(q)

    def batch(self, Q, threads: int = 1) -> np.ndarray:
        """The matrix at each row of ``Q`` (N × n), on ``threads`` native threads; a few plain states as calls, each
        matrix written into its row (``gtdyn.compiled.small_batches``: cheaper than the batch's own Python)."""
        if few_states(Q):
            whole_number("threads", threads, minimum=1)
            out = np.empty((len(Q), *self._shape))
            if all(self._quick(q, row) for q, row in zip(Q, out)):
                return self._finish_batch(out)
        (Q,) = state_batch(self.robot.num_dofs, Q=Q)
        threads = whole_number("threads", threads, minimum=1)
        n, entries = self.robot.num_dofs, self._shape[0] * self._shape[1]
        inputs = np.tile(self._ws[:3 * n + base_inputs.input_count(self.robot)], (len(Q), 1))
        inputs[:, :n] = Q
        results = parallel.run_states(self._native.batch[self._entry], self._size, inputs, entries + 1,
                                      self._start, threads)
        out = results[:, :-1].reshape(len(Q), *self._shape)
        for i in np.flatnonzero(results[:, -1] != 1.0):  # the entry's status is not in its outputs: ask again
            out[i] = self._unfinish(self(Q[i]))
        return self._finish_batch(out)

    def self_check(self, Q) -> None:
        """Fresh code against the reference path at the build's sample configurations (columns of ``Q``)."""
        for q in np.asarray(Q).T:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    got = self._unfinish(self(q))
                    if self.fallbacks:  # the reference path answered: nothing of ours to check
                        continue
                    want = self.reference(q)
            except GTDYN_ERRORS:  # a singular robot raises at call time, as the reference path does
                continue
            finally:
                self.fallbacks = 0
            error = np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-300)
            if not error <= 1e-8:
                raise RuntimeError(f"gtdyn: the generated code of {self.what} of '{self.robot.name}' disagrees "
                                   f"with the reference path by {error:.3g}; please report this")
