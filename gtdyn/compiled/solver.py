"""``gtdyn.compile``: a robot, a problem and an ordering → a solver that runs the elimination as machine code.

The symbolic pass (``plan``, ``codegen``) happens once; each call only runs the numbers. The graph and the
ordering are exactly the reference path's: the ordering is resolved on the reference graph at a sample state
(named strategies, lists and callables alike), so ``solver.dag()`` is the reference path's DAG.

Each call returns the compiled answer when the code's own checks certify it (see ``gtdyn.compiled.codegen``);
otherwise — a singular or ill-conditioned system, an open loop, non-finite input, an answer not accurate to
1e-10 — it asks the reference path, which answers, warns or raises exactly as ``gtdyn.solve`` does.
``solver.fallbacks`` counts those calls.
"""

from __future__ import annotations

import numbers
import threading
from threading import get_ident
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Iterable

import numpy as np

from gtdyn import keys
from gtdyn.arguments import gravity_vector, real_array, robot_argument
from gtdyn.compiled import base_inputs, cache, native
from gtdyn.compiled.base_inputs import base_state, base_states, write_base
from gtdyn.compiled.codegen import generate
from gtdyn.compiled.states import qdd_joint_names, sample_kinematics, sample_states, template_problem
from gtdyn.compiled.render import render
from gtdyn.dynamics.graph import dynamics_graph
from gtdyn.dynamics.solve import solve as reference_solve
from gtdyn.dynamics.solve import with_loop_factors
from gtdyn.equations import GRAVITY
from gtdyn.errors import GTDYN_ERRORS, ArgumentError
from gtdyn.model.robot import Robot
from gtdyn.orderings import resolve_ordering
from gtdyn.problem import PROBLEM_KINDS, Problem, place_contacts

_ARRAY, _FLOAT = np.ndarray, np.dtype(float)


def compile(robot: Robot, problem: str, *, ordering=None, qdd_joints: Iterable[str] | None = None, gravity=GRAVITY,
            contacts=None, checks: bool = True, use_cache: bool = True) -> CompiledSolver:
    """A compiled solver for ``problem`` ("inverse", "forward" or "hybrid"; hybrid: ``qdd_joints`` names the
    joints whose q̈ is given, τ is given at the others) in ``ordering`` (a strategy name, a list of labels or
    keys, or a callable, as everywhere; default "colamd"). See ``CompiledSolver`` for calling it.

    A floating base is given its pose and twist at each call (and its acceleration in inverse dynamics; in
    forward and hybrid dynamics it is free). ``contacts`` (a list of ``gtdyn.Contact``, fixed at compile time)
    make forward and hybrid dynamics constrained dynamics; inverse dynamics with contacts, whose forces are
    least-norm, stays with the reference path.

    ``checks=False`` skips the refinement, the condition estimate and the backward error: an answer without a
    verdict, as Pinocchio gives (ill-conditioned states are not flagged); non-finite answers still go to the
    reference path.

    The first compile of a robot, problem and ordering writes the machine code to an on-disk cache
    (``gtdyn.compiled.cache``); later compiles, in any process, load it.
    """
    started = time.perf_counter()
    robot_argument(robot)
    if problem not in PROBLEM_KINDS:
        raise ArgumentError(f"problem: '{problem}' is not one of {', '.join(PROBLEM_KINDS)}")
    gravity = gravity_vector(gravity)
    qdd_joints = qdd_joint_names(robot, problem, qdd_joints)
    if robot.floating_base and robot.loop_joints:  # a planar loop's plane would turn with the base
        raise ArgumentError(f"robot: '{robot.name}' has a floating base and closed loops, which compiled solvers do "
                            "not cover; use the reference path (gtdyn.forward_dynamics etc.)")
    placed = place_contacts(robot, contacts)
    if placed and problem == "inverse":
        raise ArgumentError("contacts: inverse dynamics with contacts (least-norm contact forces) is not compiled; "
                            "use gtdyn.inverse_dynamics(..., contacts=...)")
    samples = sample_states(robot, problem, qdd_joints, count=1)  # sample 0 of the SAMPLES a build looks at
    template = template_problem(robot, problem, qdd_joints, samples, 0, placed)
    kin = sample_kinematics(robot, samples, 0)
    template = with_loop_factors(robot, kin, template)
    graph = dynamics_graph(robot, kin, template, gravity)
    gtsam_order = resolve_ordering(ordering, robot, template, graph)
    order = [gtsam_order.at(i) for i in range(gtsam_order.size())]
    name = cache.key(cache.code_fingerprint(), cache.FORMAT, native.target_id(), cache.robot_fingerprint(robot), problem,
                     sorted(qdd_joints), sorted((j, tuple(np.round(n, 12))) for j, n in template.planar.items()),
                     order, tuple(gravity), [(c.body, c.contact.kind, c.iTc.matrix().tobytes()) for c in placed])
    record = cache.load(name) if use_cache else None
    cached = record is not None
    if record is None:
        samples = sample_states(robot, problem, qdd_joints)
        with np.errstate(all="ignore"):  # a singular robot's samples divide by zero pivots; its calls fall back
            record = _build(robot, template, order, gravity, samples, name)
    solver = CompiledSolver(robot, problem, qdd_joints, gravity, order, record, name, checks, placed)
    if not cached:
        solver._self_check(samples)
        if use_cache:  # only code that passed its self-check is kept
            cache.store(name, record)
    solver.compile_seconds = time.perf_counter() - started
    solver.from_cache = cached
    return solver


def _build(robot: Robot, template: Problem, order: list[int], gravity, samples, name: str) -> dict:
    program = generate(robot, template, order, gravity, samples)
    prefix = f"g{name[:12]}_"
    ir = native.module_ir(program.functions, prefix)
    obj = native.compile_object(ir)
    layout = program.layout
    header = (f"{template.kind} dynamics of '{robot.name}', ordering {' '.join(keys.label(k) for k in order)}: "
              f"generated by gtdyn.compile")
    return {"object": obj, "prefix": prefix, "size": layout.size, "start": dict(layout.start), "status": layout.status,
            "outputs": len(program.outputs), "source": render(program.functions, header),
            "parents": {k: sorted(p) for k, p in program.plan.parents.items()},
            "operations": {fn.name: fn.count() for fn in program.functions.values()}}


_POOLS: dict[int, ThreadPoolExecutor] = {}


def _pool(threads: int) -> ThreadPoolExecutor:
    """One pool per thread count for the process: starting threads per batch cost more than 1,000 PUMA states."""
    with _POOL_LOCK:
        if threads not in _POOLS:
            _POOLS[threads] = ThreadPoolExecutor(threads, thread_name_prefix="gtdyn-batch")
        return _POOLS[threads]


_POOL_LOCK = threading.Lock()


class CompiledSolver:
    """``solver(q, v, x)``: x is q̈ (inverse), τ (forward) or, for hybrid, a full-length vector with q̈ at
    ``qdd_joints`` and τ elsewhere. Returns τ, q̈, or ``(qdd, tau)``, in ``robot.joint_names`` order.

    A floating base: ``solver(q, v, x, base_pose=None, base_twist=None, base_accel=None, base_wrench=None)`` as
    the reference path takes them — ``base_accel`` in inverse dynamics; ``base_wrench`` ([m; f], root link
    frame: what the environment applies to the free base, as ``external_wrenches`` on it) in forward and hybrid
    dynamics — and the answer starts with the base's part —
    ``(base_wrench, tau)``, ``(base_accel, qdd)`` or ``(base_accel, qdd, tau)``. With contacts the answer
    ends with their forces, concatenated in contact order (3 per point contact, 6 per surface contact, in the
    contact frames). One output alone is returned bare, as on a fixed base.

    ``solver.batch(Q, V, X, threads=1, base_pose=None, base_twist=None, base_accel=None, base_wrench=None)``: N
    states at once (arrays of shape (N, n); base poses (N, 4, 4), the others (N, 6)); returns arrays with the
    same leading axis. Calls from several threads are safe: calls from a thread other than the one that
    compiled the solver use a fresh workspace each; ``batch`` runs its threads on separate workspaces.
    """

    def __init__(self, robot: Robot, problem: str, qdd_joints, gravity, order, record: dict, name: str,
                 checks: bool = True, contacts=()):
        self.robot, self.problem, self.qdd_joints, self.gravity = robot, problem, qdd_joints, gravity
        self.contacts = tuple(contacts)
        self._base_inputs = base_inputs.input_count(robot)
        # the answer's parts and their lengths: the base's, the joints' (one or two), the contacts'
        n = robot.num_dofs
        parts = ([6] if robot.floating_base else []) + [n] * (2 if problem == "hybrid" else 1) + \
            ([sum(c.dim for c in self.contacts)] if self.contacts else [])
        ends = np.cumsum(parts).tolist()
        self._parts = list(zip([0] + ends[:-1], ends))
        self.order = list(order)
        self.source: str = record["source"]
        self.operations: dict[str, int] = record["operations"]
        self.cache_key = name
        self.fallbacks = 0
        self.compile_seconds = float("nan")
        self.from_cache = False
        self._record = record
        self._native = native.Loaded(record["object"], record["prefix"])
        self._size, self._n = record["size"], robot.num_dofs
        self._out, self._status = record["start"]["out"], record["status"]
        self._outputs = record["outputs"]
        self._ws = np.zeros(self._size)
        self._pointer = self._ws.ctypes.data
        self.checks = bool(checks)
        self._entry = "main" if self.checks else "fast"
        self._main = self._native.entry[self._entry]
        self._passive = np.array([j.index - 1 for j in robot.joints if not j.actuated
                                  and (problem == "forward" or (problem == "hybrid" and j.name not in qdd_joints))], int)
        self._owner = get_ident()
        self._last = self._ws
        self._views = self._workspace_views(self._ws)
        self._inverse = problem == "inverse"

    def _workspace_views(self, ws: np.ndarray) -> tuple:
        """Views of ``ws`` a call writes and reads, made once per workspace: q, q̇, x; the base inputs (pose as
        4×4, twist, given) or None; the answer's parts. (Slicing at every call cost a microsecond of Python.)"""
        n, first = self._n, 3 * self._n
        base = None
        if self._base_inputs:
            base = (ws[first:first + base_inputs.TWIST].reshape(4, 4),
                    ws[first + base_inputs.TWIST:first + base_inputs.GIVEN],
                    ws[first + base_inputs.GIVEN:first + base_inputs.COUNT])
        parts = tuple(ws[self._out + a:self._out + b] for a, b in self._parts)
        return ws[:n], ws[n:2 * n], ws[2 * n:first], base, parts

    # -- calling ---------------------------------------------------------------------------------------------

    def __call__(self, q, v, x, base_pose=None, base_twist=None, base_accel=None, base_wrench=None):
        # The workspace belongs to the thread that compiled the solver; calls from other threads take a fresh
        # one, so no two calls ever share it.
        if get_ident() == self._owner:
            ws, pointer, views = self._ws, self._pointer, self._views
        else:
            ws = np.zeros(self._size)
            pointer, views = ws.ctypes.data, self._workspace_views(ws)
        n = self._n
        in_q, in_v, in_x, base, parts = views
        try:  # len() first: a scalar or a wrong length would broadcast silently
            if len(q) != n or len(v) != n or len(x) != n:
                raise ValueError
            if type(q) is type(v) is type(x) is _ARRAY and q.dtype is v.dtype is x.dtype is _FLOAT:
                in_q[...] = q
                in_v[...] = v
                in_x[...] = x
            else:  # numpy would cast complex numbers into the workspace with only a warning: look at them first
                in_q[...], in_v[...], in_x[...] = _real("q", q), _real("v", v), _real("x", x)
        except ArgumentError:
            raise
        except (TypeError, ValueError):
            self._shape_error(q, v, x, (n,))
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
        if self._passive.size and np.any(in_x[self._passive] != 0.0):
            self._passive_error(in_x)
        self._main(pointer)
        self._last = ws
        if ws[self._status] != 1.0:
            return self._reference(np.array(q, float), np.array(v, float), np.array(x, float),
                                   ws[3 * n:3 * n + self._base_inputs].copy())
        if len(parts) == 1:
            return parts[0].copy()
        return tuple([part.copy() for part in parts])

    def _split(self, out: np.ndarray):
        """The output vector (or rows of them) as the answer's parts, copied; one part alone, bare."""
        out = out.copy()  # one copy; the parts are views of it, which no later call touches
        if len(self._parts) == 1:
            return out
        return tuple([out[..., a:b] for a, b in self._parts])

    def batch(self, Q, V, X, threads: int = 1, base_pose=None, base_twist=None, base_accel=None, base_wrench=None):
        """Many states: Q, V, X of shape (N, n). ``threads`` > 1 splits the states among native threads."""
        n = self._n
        if isinstance(threads, bool) or not isinstance(threads, numbers.Integral) or threads < 1:
            raise ArgumentError(f"threads: expected a whole number ≥ 1, got {threads!r}")
        Q, V, X = (real_array(name, a, f"an array of shape (N, {n})") for name, a in (("Q", Q), ("V", V), ("X", X)))
        if Q.ndim != 2 or Q.shape[1] != n or V.shape != Q.shape or X.shape != Q.shape:
            raise ArgumentError(f"Q, V, X: expected three arrays of shape (N, {n}), got {Q.shape}, {V.shape}, {X.shape}")
        if self._passive.size and np.any(X[:, self._passive] != 0.0):
            self._passive_error(X)
        count = Q.shape[0]
        base = base_states(self.robot, self.problem, count, base_pose, base_twist, base_accel, base_wrench)
        inputs = np.ascontiguousarray(np.hstack([Q, V, X, base]))
        n_out = self._outputs + 3  # the outputs, then status, κ and backward error
        results = np.empty((count, n_out))
        threads = max(1, min(int(threads), count))
        bounds = np.linspace(0, count, threads + 1).astype(int)
        native_batch = self._native.batch[self._entry]

        def run(a: int, b: int) -> None:  # one workspace per thread; ctypes releases the GIL while it runs
            ws = np.zeros(self._size)
            native_batch(ws.ctypes.data, inputs[a:].ctypes.data, results[a:].ctypes.data, int(b - a), inputs.shape[1],
                         n_out, self._out)

        if threads == 1:
            run(0, count)
        else:
            pool = _pool(threads)
            for done in [pool.submit(run, a, b) for a, b in zip(bounds[:-1], bounds[1:])]:
                done.result()
        out = results[:, :self._outputs].copy()
        for k in np.flatnonzero(results[:, self._outputs] != 1.0):
            answer = self._reference(Q[k], V[k], X[k], base[k])
            out[k] = np.concatenate(answer) if isinstance(answer, tuple) else answer
        return self._split(out)

    @property
    def condition(self) -> float:
        """The condition estimate κ of the last single call's equations (as ``DynamicsResult.condition``)."""
        return float(self._last[self._status + 1])

    @property
    def backward_error(self) -> float:
        """‖b − A x‖ / (‖A‖_F ‖x‖ + ‖b‖) of the last single call, after refinement."""
        return float(self._last[self._status + 2])

    # -- what it is ------------------------------------------------------------------------------------------

    @property
    def ordering(self) -> list[str]:
        return [keys.label(k) for k in self.order]

    def code(self, function: str = "solve") -> str:
        """One generated function of ``source``: "factor" (kinematics, rows, elimination), "solve" (right-hand
        side and back-substitution), "solve_t", "residual", "main" (the checked call) or "fast"."""
        marker = f"def {function}(ws):"
        if marker not in self.source:
            raise ArgumentError(f"function: '{function}' is not one of factor, solve, solve_t, residual, main, fast")
        text = self.source[self.source.index(marker):]
        end = text.find("\ndef ", 1)
        return text if end < 0 else text[:end + 1]

    def dag(self):
        """The elimination DAG of this graph and ordering: the reference path's ``DynamicsResult.dag()``."""
        from gtdyn.analysis.dag import elimination_dag
        import gtsam

        samples = sample_states(self.robot, self.problem, self.qdd_joints, count=1)
        template = template_problem(self.robot, self.problem, self.qdd_joints, samples, 0, self.contacts)
        kin = sample_kinematics(self.robot, samples, 0)
        graph = dynamics_graph(self.robot, kin, with_loop_factors(self.robot, kin, template), self.gravity)
        return elimination_dag(graph, gtsam.Ordering(self.order))

    def computed_dag(self):
        """What the compiled code computes from what: an edge p → x when x's pivot rows use p. Gaussian
        elimination with identity pivots needs fewer parents than the generic structure of ``dag()``, of which
        this is a subgraph with the same nodes."""
        from gtdyn.analysis.dag import dependency_dag

        return dependency_dag(self.order, self._record["parents"])

    def __repr__(self) -> str:
        ops = sum(self.operations.values())
        return (f"CompiledSolver({self.problem} dynamics of '{self.robot.name}', ordering {' '.join(self.ordering)}; "
                f"{ops} operations)")

    # -- the reference path ------------------------------------------------------------------------------------

    def _reference(self, q, v, x, base=()):
        """The reference path's answer, in this solver's shape; ``base``: the base inputs of ``base_state``."""
        self.fallbacks += 1
        state = {}
        if self.robot.floating_base:
            state = {"base_pose": np.reshape(base[:base_inputs.TWIST], (4, 4)),
                     "base_twist": base[base_inputs.TWIST:base_inputs.GIVEN]}
            given = np.asarray(base[base_inputs.GIVEN:base_inputs.COUNT])
            if self.problem == "inverse":
                state["base_accel"] = given
            elif np.any(given != 0.0):  # a wrench on the free base: an external wrench on its link
                state["external_wrenches"] = {self.robot.base.name: given}
        contacts = [c.contact for c in self.contacts] or None
        common = dict(gravity=self.gravity, ordering=self.order, contacts=contacts, **state)
        if self.problem == "inverse":
            r = reference_solve(self.robot, "inverse", q, v, qdd=x, **common)
            parts = [r.tau]
        elif self.problem == "forward":
            r = reference_solve(self.robot, "forward", q, v, tau=x, **common)
            parts = [r.qdd]
        else:
            given_qdd = {name: x[i] for i, name in enumerate(self.robot.joint_names) if name in self.qdd_joints}
            given_tau = {j.name: x[j.index - 1] for j in self.robot.joints if j.name not in self.qdd_joints and j.actuated}
            r = reference_solve(self.robot, "hybrid", q, v, qdd=given_qdd, tau=given_tau, **common)
            parts = [r.qdd, r.tau]
        if self.robot.floating_base:
            parts.insert(0, r.base_wrench if self.problem == "inverse" else r.base_accel)
        if self.contacts:
            parts.append(np.concatenate([w.local[3:] if c.dim == 3 else w.local
                                         for c, w in zip(self.contacts, r.contact_wrenches)]))
        return parts[0] if len(parts) == 1 else tuple(parts)

    def _self_check(self, samples) -> None:
        """The generated code against the reference path at the sample states: a wrong answer here is a bug
        in gtdyn, never the user's."""
        for k in range(samples["q"].shape[1]):
            q, v, x = (samples[s][:, k] for s in ("q", "v", "x"))
            base = {}
            if self.robot.floating_base:
                T = np.eye(4)
                T[:3, :3] = samples["R"][:, k].reshape(3, 3)
                base = {"base_pose": T, "base_twist": samples["twist"][:, k],
                        base_inputs.given_name(self.problem): samples["given"][:, k]}
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    got = self(q, v, x, **base)
                    if self.fallbacks:  # the reference path answered: nothing of ours to check
                        continue
                    want = self._reference(q, v, x, base_state(self.robot, self.problem, **base))
            except GTDYN_ERRORS:  # a singular robot raises at call time, as the reference path does
                continue
            finally:
                self.fallbacks = 0
            got, want = (np.concatenate(a) if isinstance(a, tuple) else a for a in (got, want))
            error = np.max(np.abs(got - want), initial=0.0) / max(np.max(np.abs(want), initial=0.0), 1.0)
            if not error <= 1e-8:
                raise RuntimeError(f"gtdyn.compile: the generated code for '{self.robot.name}' disagrees with the "
                                   f"reference path by {error:.3g} at a sample state; please report this")

    def _shape_error(self, q, v, x, shape):
        for name, a in (("q", q), ("v", v), ("x", x)):
            try:
                got = np.shape(np.asarray(a, dtype=float))
            except (TypeError, ValueError):
                raise ArgumentError(f"{name}: expected {shape[0]} numbers (robot.joint_names order), got {a!r}") from None
            if got != shape:
                raise ArgumentError(f"{name}: expected {shape[0]} values (robot.joint_names order), got shape {got}")

    def _passive_error(self, x):
        x = np.atleast_2d(x)
        names = [self.robot.joints[i].name for i in self._passive if np.any(x[:, i] != 0.0)]
        raise ArgumentError(f"x: joints {', '.join(names)} are passive, so their torque is 0")


def _real(name: str, a) -> np.ndarray:
    """``a`` as an array that is not complex (a single call's slow path: anything but a float64 array)."""
    a = np.asarray(a)
    if a.dtype.kind == "c":
        raise ArgumentError(f"{name}: expected real numbers, got complex values {a.tolist()}")
    return a
