"""``CompiledSolver``: the machine code of one compiled plan, called on numbers.

Each call writes its inputs into a workspace (views made once per workspace), runs the generated code and
returns the compiled answer when the code's own checks certify it (see ``gtdyn.compiled.codegen``); otherwise —
a singular or ill-conditioned system, an open loop, non-finite input, an answer not accurate to 1e-10 — it asks
the reference path (``gtdyn.compiled.fallback``), which answers, warns or raises exactly as ``gtdyn.solve``
does. ``solver.fallbacks`` counts those calls.
"""

from __future__ import annotations

import operator
from functools import cached_property
from threading import get_ident

import gtsam
import numpy as np

from gtdyn import keys
from gtdyn.arguments import joint_vector, real_array, state_arrays, whole_number
from gtdyn.arguments.asked import check_passive_torques
from gtdyn.arguments.query import BASE_INPUTS, GIVEN, TWIST, Query
from gtdyn.arguments.wrenches import packed_wrenches, wrench_rows
from gtdyn.compiled import base_inputs, entry, lanes, listing, native, parallel, verdicts
from gtdyn.compiled.base_inputs import base_states, pose_converted, write_base
from gtdyn.compiled.derivatives import Derivatives, along_loops
from gtdyn.compiled.fallback import as_vector, fallback_answer, reference_result
from gtdyn.compiled.small_batches import by_calls
from gtdyn.dynamics.reference import template_graph
from gtdyn.errors import ArgumentError
from gtdyn.problem import answer_layout

_ARRAY, _FLOAT = np.ndarray, np.dtype(float)
_DERIVATIVES = tuple.__new__  # a named tuple made without its Python-level __new__: a third of a µs per call


class CompiledSolver:
    """``solver(q, v, x)``: x is q̈ (inverse), τ (forward) or, for hybrid, a full-length vector with q̈ at ``qdd_joints``
    and τ elsewhere. Returns τ, q̈, or ``(qdd, tau)``, in ``robot.joint_names`` order.

    A floating base: ``solver(q, v, x, base_pose=None, base_twist=None, base_accel=None, base_wrench=None)`` as the
    reference path takes them — ``base_accel`` in inverse dynamics; ``base_wrench`` ([m; f], root link frame: what the
    environment applies to the free base, as ``external_wrenches`` on it) in forward and hybrid dynamics — and the
    answer starts with the base's part — ``(base_wrench, tau)``, ``(base_accel, qdd)`` or ``(base_accel, qdd, tau)``.
    With contacts the answer ends with their forces, concatenated in contact order (3 per point contact, 6 per surface
    contact, in the contact frames). One output alone is returned bare, as on a fixed base.

    External wrenches on the links or frames compiled in (``gtdyn.compile(..., wrench_frames=[...], wrench_axes=...)``):
    ``solver(q, v, x, external_wrenches={"hand": [mx, my, mz, fx, fy, fz]})``, in the compiled axes (the frame's own or
    world-aligned); a compiled frame not named gets zero.

    ``solver.batch(Q, V, X, threads=1, base_pose=None, base_twist=None, base_accel=None, base_wrench=None,
    external_wrenches=None)``: N states at once (arrays of shape (N, n); base poses (N, 4, 4), the others (N, 6); per
    wrench frame (N, 6) or one (6,) for all); returns arrays with the same leading axis. Calls from several threads are
    safe: calls from a thread other than the one that compiled the solver use a fresh workspace each; ``batch`` runs its
    threads on separate workspaces.

    Compiled with derivatives: ``solver.derivatives(...)`` and ``solver.batch_derivatives(...)``
    (``gtdyn.compiled.derivatives.Derivatives``); on closed loops their q and q̇ columns are
    ``solver.independent_joints``'.
    """

    def __init__(self, template: Query, qdd_joints, order, record: dict, name: str, checks: bool = True,
                 wrench_frames=(), wrench_axes: str = "local", independent_joints=None, lanes_later=(None, None),
                 rescue=None):
        robot, problem = template.robot, template.kind
        # the joints dq's and dv's columns are over: every joint on a tree, the independent ones on loops
        self.independent_joints = tuple(robot.joint_names if independent_joints is None else independent_joints)
        self._along = None if self.independent_joints == tuple(robot.joint_names) and not robot.loop_joints else \
            [robot.joint(name).index for name in self.independent_joints]
        self.wrench_frames, self.wrench_axes = tuple(wrench_frames), wrench_axes
        self.template = template  # the sample query the plan was built from: its structure is the plan's
        self.robot, self.problem, self.qdd_joints, self.gravity = robot, problem, qdd_joints, template.gravity
        self.contacts = template.problem.contacts
        self._base_inputs = base_inputs.input_count(robot)
        self._wrench_inputs = slice(3 * robot.num_dofs + self._base_inputs,
                                    3 * robot.num_dofs + self._base_inputs + 6 * len(self.wrench_frames))
        self.layout = answer_layout(robot.num_dofs, robot.floating_base, template.problem)
        ends = np.cumsum([size for _, size in self.layout]).tolist()
        self._parts = list(zip([0] + ends[:-1], ends))
        self.order = list(order)
        self.operations: dict[str, int] = record["operations"]
        self.cache_key = name
        self.fallbacks = 0  # calls the reference path answered; ``rescues``: calls the twin answered
        self._rescue = rescue  # the twin for what the reference configuration zeroes (``gtdyn.compiled.rescue``)
        self.compile_seconds = float("nan")
        self.from_cache = False
        self._record = record
        self.quick = bool(record.get("quick"))  # compile(..., quick=True): -O0, slower code, the same bits
        self._native = native.Loaded(record["object"], record["prefix"], record.get("entries", native.ENTRIES))
        # ``lanes_later``: how lane code is compiled later and kept (``lanes.Batches``), or (None, None)
        self._batches = lanes.Batches(record, self._native, record["size"], record["outputs"], *lanes_later)
        self._size, self._n = record["size"], robot.num_dofs
        self._out, self._status = record["start"]["out"], record["status"]
        self._bounded = record["start"]["bounded"]  # not 0: a bound settled the call (certificate.BY_BOUND, BY_SCHUR)
        self._outputs = record["outputs"]
        self._ws = np.zeros(self._size)
        self._pointer = self._ws.ctypes.data
        self.checks = bool(checks)
        self._entry = "main" if self.checks else "fast"
        self._main = self._native.entry[self._entry]
        self._columns = record.get("derivative_columns", 0)
        self._derivative_entry = ("dmain" if self.checks else "dfast") if self._columns else None
        torqued = [j for j in robot.joints if problem == "forward" or problem == "hybrid" and j.name not in qdd_joints]
        self._passive = np.array([j.index - 1 for j in torqued if not j.actuated], int)  # given τ, and passive
        self._owner = get_ident()
        self._last = self._ws
        self._views = self._workspace_views(self._ws)
        self._inverse = problem == "inverse"
        self._single = len(self._parts) == 1
        self._parts_of = operator.itemgetter(*[slice(a, b) for a, b in self._parts])  # views, in one C call
        self._empty = np.empty
        self._quick = self._quick_entry(self._entry, [(self._out, (self._outputs,))])  # keeps the entry's plan alive
        self._quick_call = None if self._quick is None else self._quick.call
        blocks = [(start, (self._outputs, robot.nv)) for start in self._block_starts()]
        self._quick_derivatives = None if self._derivative_entry is None else self._quick_entry(
            self._derivative_entry, [(self._out, (self._outputs,))] + blocks)

    def _block_starts(self) -> list[int]:
        """Where a derivative call's dq, dv and dx blocks (outputs × nv each) start in the workspace."""
        return [self._record["start"]["jac"] + k * self._outputs * self.robot.nv for k in range(3)]

    def _quick_entry(self, name: str, outputs: list):
        """The call's one native entry for generated function ``name`` (``gtdyn.compiled.entry.call_plan``); None
        where compiled wrench frames need the Python path to zero or pack them."""
        if self.wrench_frames:
            return None
        arguments = entry.call_plan(self._n, bool(self._base_inputs), self._inverse, outputs)
        passive = [2 * self._n + p for p in self._passive]  # the passive joints' x
        return entry.bind(self._ws, self._native.address[name], self._status, arguments, passive, self._owner)

    def _workspace_views(self, ws: np.ndarray) -> tuple:
        """Views of ``ws`` a call writes and reads, made once per workspace: q, q̇, x; the base inputs (pose as
        4×4, twist, given) or None; the answer's parts; the external wrenches; the value and the dq, dv, dx
        blocks of a derivative call (``gtdyn.compiled.derivatives.jacobian_index``). (Slicing at every call would
        cost Python time on every call.)"""
        n, first = self._n, 3 * self._n
        base = None
        if self._base_inputs:
            base = (ws[first:first + TWIST].reshape(4, 4), ws[first + TWIST:first + GIVEN],
                    ws[first + GIVEN:first + BASE_INPUTS])
        parts = tuple(ws[self._out + a:self._out + b] for a, b in self._parts)
        outputs, nv = self._outputs, self.robot.nv
        blocks = tuple(ws[start:start + outputs * nv].reshape(outputs, nv)
                       for start in self._block_starts()) if self._columns else ()
        return ws[:n], ws[n:2 * n], ws[2 * n:first], base, parts, ws[self._wrench_inputs], \
            (ws[self._out:self._out + outputs], *blocks)

    # -- calling ---------------------------------------------------------------------------------------------

    def __call__(self, q, v, x, base_pose=None, base_twist=None, base_accel=None, base_wrench=None,
                 external_wrenches=None):
        call = self._quick_call
        if call is not None and external_wrenches is None:  # the entry checks the thread, and fills in defaults
            out = self._empty(self._outputs)
            done = call(q, v, x, base_pose, base_twist, base_accel, base_wrench, out) or pose_converted(
                call, q, v, x, base_pose, base_twist, base_accel, base_wrench, out)
            if done:
                self._last = self._ws
                return out if self._single else self._parts_of(out)
        ws, pointer, views = self._written(q, v, x, base_pose, base_twist, base_accel, base_wrench, external_wrenches)
        self._main(pointer)
        parts = views[4]
        self._last = ws
        if ws[self._status] != 1.0:
            return self._fallback(ws, q, v, x)
        return parts[0].copy() if len(parts) == 1 else tuple([part.copy() for part in parts])

    def _vector(self, q, v, x, base_pose=None, base_twist=None, base_accel=None, base_wrench=None) -> np.ndarray:
        """The call's answer as one vector, its parts side by side (a floating base's first): what
        ``compile_bias_forces`` returns, written straight into one array by the native entry where it can."""
        call = self._quick_call
        if call is not None:
            out = self._empty(self._outputs)
            if call(q, v, x, base_pose, base_twist, base_accel, base_wrench, out) or pose_converted(
                    call, q, v, x, base_pose, base_twist, base_accel, base_wrench, out):
                self._last = self._ws
                return out
        return as_vector(self(q, v, x, base_pose, base_twist, base_accel, base_wrench))

    def derivatives(self, q, v, x, base_pose=None, base_twist=None, base_accel=None, base_wrench=None,
                    external_wrenches=None) -> Derivatives:
        """The answer and its exact derivatives (``gtdyn.compiled.derivatives.Derivatives``: ``value``, ``dq``,
        ``dv``, ``dx``) at one state, the arguments as ``solver(...)`` takes them. Forward dynamics: ``dx`` is
        M⁻¹; inverse: M. A state the checked call would send to the reference path gets the reference path's
        value, warning or error; the derivatives are then the plan's (as accurate as its condition allows)."""
        self._need_derivatives()
        quick = self._quick_derivatives
        if quick is not None and external_wrenches is None and self._along is None:  # the entry checks the thread
            outputs, nv, empty = self._outputs, self.robot.nv, self._empty
            value, dq, dv, dx = empty(outputs), empty((outputs, nv)), empty((outputs, nv)), empty((outputs, nv))
            arguments = (base_twist, base_accel, base_wrench, value, dq, dv, dx)
            if quick.call(q, v, x, base_pose, *arguments) or pose_converted(quick.call, q, v, x, base_pose, *arguments):
                self._last = self._ws
                return _DERIVATIVES(Derivatives, (value, dq, dv, dx))
        ws, pointer, views = self._written(q, v, x, base_pose, base_twist, base_accel, base_wrench, external_wrenches)
        self._native.entry[self._derivative_entry](pointer)
        self._last = ws
        value, dq, dv, dx = views[6]
        value = value.copy() if ws[self._status] == 1.0 else as_vector(self._fallback(ws, q, v, x))
        if self._along is not None:
            return along_loops(self.robot, self._along, Derivatives(value, dq.copy(), dv.copy(), dx.copy()), q, v)
        return _DERIVATIVES(Derivatives, (value, dq.copy(), dv.copy(), dx.copy()))

    def batch_derivatives(self, Q, V, X, threads: int = 1, base_pose=None, base_twist=None, base_accel=None,
                          base_wrench=None, external_wrenches=None) -> Derivatives:
        """``derivatives`` at N states (arguments as ``batch`` takes them): each array of the result gets a leading
        axis of N."""
        self._need_derivatives()
        Q, V, X, base, wrenches, inputs = self._batch_inputs(Q, V, X, threads, base_pose, base_twist, base_accel,
                                                             base_wrench, external_wrenches)
        results = parallel.run_states(self._native.batch[self._derivative_entry], self._size, inputs,
                                    self._outputs + 3 + self._outputs * self._columns, self._out, threads)
        values = self._certified(results, Q, V, X, base, wrenches)
        blocks = results[:, self._outputs + 3:].reshape(len(Q), 3, self._outputs, self.robot.nv)
        if self._along is not None:
            states = [along_loops(self.robot, self._along, Derivatives(*parts), Q[k], V[k])
                      for k, parts in enumerate(zip(values, *(blocks[:, k] for k in range(3))))]
            return Derivatives(*(np.array(part) for part in zip(*states)))
        return Derivatives(values, *(blocks[:, k] for k in range(3)))

    def _need_derivatives(self):
        if self._derivative_entry is None:
            raise ArgumentError("derivatives: compiled without them; compile with gtdyn.compile(..., derivatives=True)")

    def error_estimate(self, q, v, x, base_pose=None, base_twist=None, base_accel=None, base_wrench=None,
                       external_wrenches=None) -> float:
        """``DynamicsResult.error_estimate()`` at this state (arguments as ``solver(...)`` takes them): the relative
        error that rounding leaves in the answer, a property of the equations, which the compiled code solves as
        the reference path does. It costs a reference solve: read it where it matters (a long chain's q̈ keep
        ~7 digits at 200 links), not in a loop."""
        ws, _, _ = self._written(q, v, x, base_pose, base_twist, base_accel, base_wrench, external_wrenches)
        return reference_result(self, *self._reference_inputs(ws, q, v, x)).error_estimate()

    def _fallback(self, ws: np.ndarray, q, v, x):
        """The twin's or the reference path's answer to the inputs in ``ws`` (the certificate did not pass)."""
        return fallback_answer(self, *self._reference_inputs(ws, q, v, x))

    def _reference_inputs(self, ws: np.ndarray, q, v, x) -> tuple:
        """q, q̇, x and the packed base and wrench inputs in ``ws``, as ``gtdyn.compiled.fallback`` takes them."""
        n = self._n
        return (np.array(q, float), np.array(v, float), np.array(x, float),
                ws[3 * n:3 * n + self._base_inputs].copy(), ws[self._wrench_inputs].copy())

    def _written(self, q, v, x, base_pose, base_twist, base_accel, base_wrench, external_wrenches):
        """The inputs checked into a workspace: (ws, its address, its views: ``_workspace_views``)."""
        # The workspace belongs to the thread that compiled the solver; calls from other threads take a fresh
        # one, so no two calls ever share it.
        if get_ident() == self._owner:
            ws, pointer, views = self._ws, self._pointer, self._views
        else:
            ws = np.zeros(self._size)
            pointer, views = ws.ctypes.data, self._workspace_views(ws)
        n = self._n
        in_q, in_v, in_x, base, _, wrenches, _ = views
        try:  # len() first: a scalar or a wrong length would broadcast silently
            if len(q) != n or len(v) != n or len(x) != n:
                raise ValueError
            if type(q) is type(v) is type(x) is _ARRAY and q.dtype is v.dtype is x.dtype is _FLOAT:
                in_q[...], in_v[...], in_x[...] = q, v, x
            else:  # numpy would cast complex numbers into the workspace with only a warning: look at them first
                in_q[...], in_v[...], in_x[...] = real_array("q", q), real_array("v", v), real_array("x", x)
        except ArgumentError:
            raise
        except (TypeError, ValueError):
            for name, a in (("q", q), ("v", v), ("x", x)):  # the boundary's error for the one that is not n numbers
                joint_vector(self.robot, name, a)
            raise
        if base is not None:
            given, other = (base_accel, base_wrench) if self._inverse else (base_wrench, base_accel)
            if other is None and type(base_pose) is type(base_twist) is type(given) is _ARRAY and \
                    base_pose.dtype is base_twist.dtype is given.dtype is _FLOAT and base_pose.shape == (4, 4) and \
                    base_twist.shape == given.shape == (6,):  # every base input a float64 array: write them
                base[0][...], base[1][...], base[2][...] = base_pose, base_twist, given
            else:
                write_base(self.robot, self.problem, base, base_pose, base_twist, base_accel, base_wrench)
        elif base_pose is not None or base_twist is not None or base_accel is not None or base_wrench is not None:
            write_base(self.robot, self.problem, base, base_pose, base_twist, base_accel, base_wrench)  # the error
        if self.wrench_frames or external_wrenches is not None:
            wrenches[...] = packed_wrenches(self.wrench_frames, external_wrenches)
        if self._passive.size and np.any(in_x[self._passive] != 0.0):
            self._passive_error(in_x)
        return ws, pointer, views

    def _batch_inputs(self, Q, V, X, threads, base_pose, base_twist, base_accel, base_wrench, external_wrenches):
        """A batch's inputs checked: Q, V, X, the base's and the wrenches' rows, and all of them as one array."""
        whole_number("threads", threads, 1)
        Q, V, X = state_arrays(self._n, Q=Q, V=V, X=X)
        if self._passive.size and np.any(X[:, self._passive] != 0.0):
            self._passive_error(X)
        count, n = Q.shape
        base = base_states(self.robot, self.problem, count, base_pose, base_twist, base_accel, base_wrench)
        wrenches = wrench_rows(self.wrench_frames, external_wrenches, count)
        inputs = np.concatenate((Q, V, X, base, wrenches), axis=1)  # the batch's own copy: Q, V, X as views of it
        return inputs[:, :n], inputs[:, n:2 * n], inputs[:, 2 * n:3 * n], base, wrenches, inputs

    def _split(self, out: np.ndarray):
        """The output vector (or rows of them, an array of the caller's own) as the answer's parts, views of it;
        one part alone, bare."""
        return out if self._single else tuple([out[..., a:b] for a, b in self._parts])

    def batch(self, Q, V, X, threads: int = 1, base_pose=None, base_twist=None, base_accel=None, base_wrench=None,
              external_wrenches=None):
        """Many states: Q, V, X of shape (N, n). ``threads`` > 1 splits the states among native threads; a few
        states run as calls (``small_batches``)."""
        others = (base_pose, base_twist, base_accel, base_wrench, external_wrenches)
        if (small := by_calls(self, Q, V, X, threads, others)) is not None:
            return self._split(small)
        Q, V, X, base, wrenches, inputs = self._batch_inputs(Q, V, X, threads, *others)
        results = self._batches.run(self._entry, inputs, self._outputs + 3, self._out, threads)  # status, κ, error
        return self._split(self._certified(results, Q, V, X, base, wrenches))

    def _certified(self, results: np.ndarray, Q, V, X, base, wrenches) -> np.ndarray:
        """A batch's answers (the first outputs of each row of ``results``), the reference path's where the status
        that follows them says the code did not certify its own."""
        out = results[:, :self._outputs].copy()
        for k in np.flatnonzero(results[:, self._outputs] != 1.0):
            out[k] = as_vector(fallback_answer(self, Q[k], V[k], X[k], base[k], wrenches[k]))
        return out

    # -- travelling -----------------------------------------------------------------------------------------

    def __reduce__(self):
        """Pickling (process pools, Dask, Ray): the plan's record travels — its machine code, and the template it
        was built from — and the other side loads that code if its CPU is this one's, else compiles the same plan
        for its own (or loads it from its cache). Counters (``fallbacks``) start again at zero."""
        from gtdyn.compiled.build import unpickled  # here: build imports this module

        return unpickled, (self.template, self.qdd_joints, self.order, self._record, self.cache_key, self.checks,
                            self.wrench_frames, self.wrench_axes, native.target_id(), self.compile_seconds,
                            self.independent_joints)

    @property
    def lanes(self) -> int:
        """States per SIMD lane group of ``batch``; 0 while batches run state by state (``compile``'s ``lanes``)."""
        return 0 if self._batches.lanes is None else lanes.WIDTH

    def compile_lanes(self, wait: bool = True) -> int:
        """Compile the lane code now rather than after ``lanes.LANES_AFTER`` batched states (``wait``: until it is
        ready); ``lanes`` then, 0 where it cannot come (``lanes=False``, or unpickled without it)."""
        self._batches.compile_lanes(wait)
        return self.lanes

    @property
    def rescues(self) -> int:
        return 0 if self._rescue is None else self._rescue.calls

    @property
    def has_derivatives(self) -> bool:
        """Whether ``derivatives`` and ``batch_derivatives`` are compiled in (``compile(..., derivatives=True)``)."""
        return self._derivative_entry is not None

    @property
    def condition(self) -> float:
        """The condition estimate κ of the last single call's equations, or a small batch's last state's (``batch``),
        as ``DynamicsResult.condition`` (``gtdyn.compiled.verdicts``: estimated when read where a bound settled it)."""
        return verdicts.condition(self)

    @property
    def backward_error(self) -> float:
        """‖b − A x‖ / (‖A‖_F ‖x‖ + ‖b‖) of the last single call's answer (``gtdyn.compiled.verdicts``)."""
        return verdicts.backward_error(self)

    # -- what it is ------------------------------------------------------------------------------------------

    @cached_property
    def source(self) -> str:
        """The generated functions as Python source, a line per operation (``gtdyn.compiled.listing``)."""
        return listing.listing(self)

    @property
    def ordering(self) -> list[str]:
        return [keys.label(k) for k in self.order]

    def code(self, function: str = "solve") -> str:
        """One generated function of ``source`` by name (``gtdyn.compiled.listing.function``)."""
        return listing.function(self.source, self.operations, function)

    def dag(self):
        """The elimination DAG of this graph and ordering: the reference path's ``DynamicsResult.dag()``."""
        from gtdyn.analysis.dag import elimination_dag

        return elimination_dag(template_graph(self.template)[1], gtsam.Ordering(self.order))

    def computed_dag(self):
        """What the compiled code computes from what: an edge p → x when x's pivot rows use p. Gaussian
        elimination with identity pivots needs fewer parents than the generic structure of ``dag()``, of which
        this is a subgraph with the same nodes."""
        from gtdyn.analysis.dag import dependency_dag

        return dependency_dag(self.order, self._record["parents"])

    def __repr__(self) -> str:
        return (f"CompiledSolver({self.problem} dynamics of '{self.robot.name}', ordering {' '.join(self.ordering)}; "
                f"{sum(self.operations.values())} operations)")

    def _passive_error(self, x):
        """The boundary's error naming the passive joints given a torque in x (one state or rows of them)."""
        check_passive_torques(self.robot, "x", np.max(np.abs(np.atleast_2d(x)), axis=0))

