"""Benchmarks of compiled solvers (``gtdyn.compile``), per ordering, each measured side by side with Pinocchio in
the same process.

For a robot, a problem and each ordering, one ``Row`` (``gtdyn.bench.orderings.Row``; ``method`` is the
ordering) holds these ``timings`` (``Timing``: per call, or per state for batches):

* ``call_us``: one ``solver(q, v, x)`` call at the benchmark state, its Python wrapper included, with the
  checks that certify the answer (refinement, backward error, condition estimate);
* ``fast_us``: the same with ``checks=False`` (the same object code's unchecked entry: solve only, no verdict,
  as Pinocchio);
* ``pinocchio_us``: Pinocchio on the same state: ``rnea`` (inverse), ``aba`` (forward), rnea + crba + solve
  (hybrid: Featherstone's three passes). These three are interleaved sample by sample;
* ``batch{t}_us``, ``fast_batch{t}_us``: ``solver.batch`` on N random states with ``t`` threads, per state;
* ``pin_parallel{t}_us``: ``pin.rneaInParallel`` / ``pin.abaInParallel`` (on a ``pin.ModelPool``) on the same
  states with the same threads, interleaved with the batches; none for hybrid (Pinocchio has no batch of it);
* ``pin_loop_us``: a Python loop of the single-call Pinocchio baseline over the same states, per state;

and these ``measures``:

* ``call_x_pinocchio``, ``fast_x_pinocchio``: ``call_us`` or ``fast_us`` / ``pinocchio_us`` as the median of
  paired samples; ``batch{t}_x_pinocchio``, ``fast_batch{t}_x_pinocchio`` likewise against
  ``pin_parallel{t}_us``;
* ``compile_cold_s``: ``gtdyn.compile`` into an empty cache (symbolic elimination, code generation, LLVM and
  the self-check); ``compile_cached_s``: the same compile again, loading the cached object code. Each solver
  gets a private temporary cache, so cold is cold whatever the user's cache holds;
* ``executed_ops``: arithmetic operations one call executes: ``main``'s own, plus each generated function's
  count times the calls ``main`` makes to it (read from the generated source: factor once; solve, solve_t and
  residual for the solve, the refinement step and the condition estimate); ``fast_ops``: the same for
  ``checks=False`` (factor and one solve); ``compiled_ops``: the sum of ``solver.operations`` (each function
  once);
* ``edges``, ``fill_in``, ``ops``, ``largest_clique``: the measures of the DAG of the same graph and ordering
  (``gtdyn.analysis.metrics``; ``ops`` there is a dense-block multiply-add estimate);
* ``fallbacks``: calls handed to the reference path while timing (0, or the timing is not the compiled code's);
* ``batch_states``: N; ``batch_max_error``: batch answers against Pinocchio's on the same states.

``max_error`` is the single call's answer against the state's reference solution (relative, max norm).
Compiling happens outside every timed region.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections import Counter
from collections.abc import Iterable
from contextlib import contextmanager

import gtsam
import numpy as np

from gtdyn.analysis.metrics import metrics
from gtdyn.arguments.query import ask
from gtdyn.bench.orderings import Row, State
from gtdyn.bench.timing import Timing, measure_interleaved, paired_ratio
from gtdyn.compiled.guards import BEYOND
from gtdyn.dynamics.reference import template_graph
from gtdyn.equations import GRAVITY
from gtdyn.model.robot import Robot
from gtdyn.orderings import applicable

THREADS = (1, 2)
BATCH_STATES = 1000
PAPER_US = {  # paper 001, Tables I–II: PUMA 560, numerical elimination in GTSAM, µs
    "inverse": {"rnea": 26.6, "colamd": 11.0, "nd": 11.7},
    "forward": {"crba": 51.8, "aba": 25.5, "colamd": 11.2, "nd": 12.1},
}
PAPER_RBDL_RNEA_US = 20.2  # Table I's "RNEA in RBDL": the paper's dedicated-library row


# -- compiling -----------------------------------------------------------------------------------------


@contextmanager
def fresh_cache():
    """An empty, private compiled-solver cache (``GTDYN_CACHE_DIR``) for the duration."""
    old = os.environ.get("GTDYN_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="gtdyn-bench-cache-") as folder:
        os.environ["GTDYN_CACHE_DIR"] = folder
        try:
            yield folder
        finally:
            if old is None:
                os.environ.pop("GTDYN_CACHE_DIR", None)
            else:
                os.environ["GTDYN_CACHE_DIR"] = old


def compile_timed(robot: Robot, kind: str, ordering, qdd_joints=None, lanes: bool = False):
    """(solver, unchecked, cold seconds, cached seconds): ``solver`` compiled into an empty cache, then
    compiled again from it (the cached time), and its ``checks=False`` twin (the same object code). ``lanes``:
    compiled on SIMD lanes too (``gtdyn.compile(..., lanes=True)``: their batches run in lanes)."""
    from gtdyn.compiled import compile as compile_solver

    with fresh_cache():
        solver = compile_solver(robot, kind, ordering=ordering, qdd_joints=qdd_joints, lanes=lanes)
        again = compile_solver(robot, kind, ordering=ordering, qdd_joints=qdd_joints, lanes=lanes)
        unchecked = compile_solver(robot, kind, ordering=ordering, qdd_joints=qdd_joints, checks=False, lanes=lanes)
    cold = solver.compile_seconds if not solver.from_cache else float("nan")
    cached = again.compile_seconds if again.from_cache else float("nan")  # nan: the cache was not writable
    return solver, unchecked, cold, cached


def call_counts(solver, entry: str = "main") -> Counter:
    """How often the entry function (``main``: the checked call; ``fast``: ``checks=False``) calls each
    generated function on its usual path, read from the solver's generated source: its plain calls, and behind a
    guarded plan's guard (``gtdyn.compiled.guards.BEYOND``) the rest of its passes and their calls."""
    lines = solver.source.splitlines()
    calls: Counter = Counter()
    if f"def {entry}(ws):" not in lines:
        return calls
    for line in lines[lines.index(f"def {entry}(ws):") + 1:]:
        if line.startswith("def "):
            break
        match = re.fullmatch(r"\s+(\w+)\(ws\)", line)
        if match and match.group(1) in solver.operations:
            calls[match.group(1)] += 1
        elif line.endswith(f": {BEYOND.get(entry)}(ws)"):
            calls[BEYOND[entry]] += 1
            calls.update(call_counts(solver, BEYOND[entry]))
    return calls


def executed_operations(solver, entry: str = "main") -> int:
    """Arithmetic operations one call executes: the entry function's own and those of every call it makes
    (``entry``: "main", the checked call, or "fast", ``checks=False``). The plain sum of ``solver.operations``
    if the source does not show the calls."""
    calls = call_counts(solver, entry)
    if not calls:
        return int(sum(solver.operations.values()))
    return int(solver.operations.get(entry, 0) + sum(n * solver.operations[name] for name, n in calls.items()))


# -- inputs ----------------------------------------------------------------------------------------------


def qdd_joints_of(kind: str, state: State):
    """The joints whose q̈ is given: the state's hybrid split (first half of the actuated joints)."""
    return list(state.known_qdd) if kind == "hybrid" else None


def given_vector(robot: Robot, kind: str, state: State) -> np.ndarray:
    """The solver's x at the benchmark state: q̈ (inverse), τ (forward, 0 at passive joints), or q̈ at the
    hybrid split's joints and τ elsewhere."""
    tau = np.where([j.actuated for j in robot.joints], state.tau, 0.0)
    given = {"inverse": {"qdd": state.qdd}, "forward": {"tau": tau}, "hybrid": state.given("hybrid")}[kind]
    return ask(robot, kind, state.q, state.v, **given).given_vector()


def batch_states(robot: Robot, kind: str, qdd_joints, count: int, seed: int = 1):
    """Q, V, X of shape (count, n): random states within the joint limits (``gtdyn.compiled.states.sample_states``).
    On closed loops, 16 states that close every loop, repeated."""
    from gtdyn.compiled.states import sample_states

    distinct = min(count, 16) if robot.loop_joints else count
    s = sample_states(robot, kind, tuple(qdd_joints or ()), count=distinct, seed=seed)
    index = np.arange(count) % distinct
    return tuple(np.ascontiguousarray(s[k][:, index].T) for k in ("q", "v", "x"))


def _relative_error(got, want) -> float:
    got, want = (np.concatenate(a, axis=-1) if isinstance(a, tuple) else np.asarray(a) for a in (got, want))
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-300))


# -- Pinocchio -------------------------------------------------------------------------------------------


class PinocchioBaseline:
    """Pinocchio's single-call and batched baseline of one problem, on vectors in Pinocchio's order.
    ``PinocchioBaseline.make`` returns None where Pinocchio does not apply (not installed, not a URDF file,
    closed loops)."""

    def __init__(self, path: str, robot: Robot, kind: str, qdd_joints=None, threads: Iterable[int] = THREADS):
        from gtdyn.bench.pinocchio import PinocchioModel

        self.ref = ref = PinocchioModel(path, robot)
        self.pin, self.model, self.data, self.kind = ref.pin, ref.model, ref.data, kind
        self.given = ref.tangent([name in (qdd_joints or ()) for name in robot.joint_names]).astype(bool)
        self.fext = ref.fext()
        self.pool = self.pin.ModelPool(self.model, max([1, *threads])) if kind != "hybrid" else None

    @classmethod
    def make(cls, path, robot: Robot, kind: str, qdd_joints=None, threads: Iterable[int] = THREADS):
        if not path or not str(path).lower().endswith(".urdf") or robot.loop_joints:
            return None
        try:
            return cls(str(path), robot, kind, qdd_joints, threads)
        except ImportError:
            return None

    def vectors(self, q, v, x):
        """Pinocchio-ordered q, v, x (one state: vectors; several: (n, N) arrays in gtdyn order → columns)."""
        ref = self.ref
        if np.ndim(q) == 1:
            return ref.configuration(q), ref.tangent(v), ref.tangent(x)
        Q = np.repeat(self.pin.neutral(self.model)[:, None], q.shape[0], axis=1)
        for (i, nq), column in zip(ref.idx_q, q.T):
            if nq == 1:
                Q[i] = column
            else:
                Q[i], Q[i + 1] = np.cos(column), np.sin(column)
        V, X = np.zeros((self.model.nv, q.shape[0])), np.zeros((self.model.nv, q.shape[0]))
        V[ref.idx_v], X[ref.idx_v] = v.T, x.T
        return tuple(np.asfortranarray(a) for a in (Q, V, X))

    def single(self, q, v, x):
        """The single-call baseline, a closure over Pinocchio-ordered vectors."""
        pin, model, data = self.pin, self.model, self.data
        if self.kind == "inverse":
            return lambda: pin.rnea(model, data, q, v, x)
        if self.kind == "forward":
            return lambda: pin.aba(model, data, q, v, x)
        a, t = np.where(self.given, x, 0.0), np.where(self.given, 0.0, x)
        return lambda: self.ref._hybrid(q, v, a, t, self.given, self.fext)

    def parallel(self, Q, V, X, threads: int):
        """``rneaInParallel`` / ``abaInParallel`` on (n, N) Pinocchio-ordered arrays, or None for hybrid."""
        pin, pool = self.pin, self.pool
        if self.kind == "inverse":
            return lambda: pin.rneaInParallel(threads, pool, Q, V, X)
        if self.kind == "forward":
            return lambda: pin.abaInParallel(threads, pool, Q, V, X)
        return None

    def loop(self, Q, V, X):
        """The single-call baseline over the columns, in a Python loop; returns the answers as a list."""
        columns = [(Q[:, k], V[:, k], X[:, k]) for k in range(Q.shape[1])]
        calls = [self.single(*c) for c in columns]
        return lambda: [call() for call in calls]

    def answers(self, results) -> np.ndarray:
        """Pinocchio's answers (a (nv, N) array or a loop's list) → (N, n) or (N, 2n) in gtdyn order, laid out
        as ``solver.batch``'s (hybrid: q̈ then τ)."""
        ref = self.ref
        if isinstance(results, list):
            if self.kind == "hybrid":
                return np.array([np.concatenate([ref.joint_order(a), ref.joint_order(t)]) for a, t in results])
            return np.array([ref.joint_order(r) for r in results])
        return np.asarray(results)[ref.idx_v].T


# -- the benchmark -----------------------------------------------------------------------------------------


def _dag_measures(robot: Robot, kind: str, state: State, order, gravity=GRAVITY) -> dict[str, float]:
    _, graph = template_graph(ask(robot, kind, state.q, state.v, **state.given(kind), gravity=gravity))
    m = metrics(graph, gtsam.Ordering(list(order)))
    return {k: float(m[k]) for k in ("edges", "fill_in", "ops", "largest_clique")}


def bench_compiled(robot: Robot, path, kind: str, state: State, orderings: Iterable[str] | None = None, *,
                   repeat: int = 30, inner: int = 5, warmup: int = 5, batch: int = BATCH_STATES,
                   threads: Iterable[int] = THREADS, batch_repeat: int = 7, progress=None,
                   lanes: bool = False) -> list[Row]:
    """One Row per ordering (default: every applicable one) for one problem; see the module's docstring.
    ``path``: the URDF file Pinocchio reads (None: no Pinocchio columns); ``batch``: N (0: no batch timing);
    ``lanes``: solvers compiled with ``lanes=True``, so that their batches run in SIMD lanes."""
    orderings = list(orderings) if orderings is not None else applicable(kind)
    threads = tuple(threads)
    qdd_joints = qdd_joints_of(kind, state)
    pin = PinocchioBaseline.make(path, robot, kind, qdd_joints, threads)
    x = given_vector(robot, kind, state)
    expected = {"inverse": state.tau, "forward": state.qdd, "hybrid": (state.qdd, state.tau)}[kind]
    if batch:
        Q, V, X = batch_states(robot, kind, qdd_joints, batch)
        if pin:
            QP, VP, XP = pin.vectors(Q, V, X)
    rows = []
    for name in orderings:
        if progress:
            progress(f"{robot.name} {kind} {name}")
        solver, unchecked, cold, cached = compile_timed(robot, kind, name, qdd_joints, lanes)
        row = Row(robot.name, robot.num_dofs, kind, name)
        row.max_error = max(_relative_error(solver(state.q, state.v, x), expected),
                            _relative_error(unchecked(state.q, state.v, x), expected))
        row.measures.update(_dag_measures(robot, kind, state, solver.order))
        row.measures.update(compiled_ops=float(sum(solver.operations.values())),
                            executed_ops=float(executed_operations(solver, "main")),
                            fast_ops=float(executed_operations(solver, "fast")),
                            compile_cold_s=cold, compile_cached_s=cached)
        fns = {"call_us": lambda: solver(state.q, state.v, x), "fast_us": lambda: unchecked(state.q, state.v, x)}
        if pin:
            fns["pinocchio_us"] = pin.single(*pin.vectors(state.q, state.v, x))
        row.timings.update(measure_interleaved(fns, repeat, inner, warmup))
        if pin:
            for key in ("call", "fast"):
                row.measures[f"{key}_x_pinocchio"] = paired_ratio(row.timings[f"{key}_us"], row.timings["pinocchio_us"])
        if batch:
            row.measures["batch_states"] = float(batch)
            for t in threads:
                fns = {f"batch{t}_us": lambda t=t: solver.batch(Q, V, X, threads=t),
                       f"fast_batch{t}_us": lambda t=t: unchecked.batch(Q, V, X, threads=t)}
                parallel = pin.parallel(QP, VP, XP, t) if pin else None
                if parallel:
                    fns[f"pin_parallel{t}_us"] = parallel
                if pin and t == threads[0]:
                    fns["pin_loop_us"] = pin.loop(QP, VP, XP)
                timed = measure_interleaved(fns, batch_repeat, 1, 1)
                row.timings.update({k: Timing(tuple(s / batch for s in v.samples)) for k, v in timed.items()})
                for key in ("batch", "fast_batch") if parallel else ():
                    row.measures[f"{key}{t}_x_pinocchio"] = paired_ratio(row.timings[f"{key}{t}_us"],
                                                                        row.timings[f"pin_parallel{t}_us"])
            if pin:
                theirs = pin.answers(pin.parallel(QP, VP, XP, threads[0])() if kind != "hybrid"
                                     else pin.loop(QP, VP, XP)())
                for ours in (solver.batch(Q, V, X), unchecked.batch(Q, V, X)):
                    ours = np.concatenate(ours, axis=1) if kind == "hybrid" else ours
                    row.measures["batch_max_error"] = max(row.measures.get("batch_max_error", 0.0),
                                                          _relative_error(ours, theirs))
        row.measures["fallbacks"] = float(solver.fallbacks + unchecked.fallbacks)
        rows.append(row)
    return rows


def chain_with_urdf(n: int, folder: str):
    """The robot of ``gtdyn.model.random.serial_chain(n)`` (built from the same description) and that description
    written to a URDF file in ``folder``, for Pinocchio."""
    from gtdyn.io.urdf_writer import write_urdf
    from gtdyn.model.build import build_robot
    from gtdyn.model.random import random_description

    description = random_description(0, n, tree=False, prismatic=0.0, fixed=0.0, name=f"chain{n}")
    return build_robot(description), write_urdf(description, os.path.join(folder, f"chain{n}.urdf"))


# -- which orderings run where ----------------------------------------------------------------------------

CHAIN_SIZES = (6, 12, 24, 48, 96)
QUICK_CHAIN_SIZES = (6,)


def chain_orderings(kind: str, joints: int) -> list[str]:
    """The orderings timed on a serial chain of ``joints`` joints: compiling grows faster than linearly with
    the size of the generated code (benchmarks/results/design_measurements.md), so larger chains get fewer
    orderings. Up to 24 joints: RNEA and COLAMD
    (inverse), ABA, CRBA and COLAMD (forward); 48: CRBA dropped (its DAG grows quadratically on chains);
    beyond: the paper's baselines RNEA and ABA alone."""
    if kind == "inverse":
        return ["rnea", "colamd"] if joints <= 48 else ["rnea"]
    if joints <= 24:
        return ["aba", "crba", "colamd"]
    return ["aba", "colamd"] if joints <= 48 else ["aba"]
