"""Verify ``gtdyn.compile`` on real robots: for every named ordering of every problem kind, the compiled solver
against Pinocchio and against the reference path (``gtdyn.solve``, same ordering) at random states within the
joint limits, with the compile time cold and from the on-disk cache in a second process; and the verdicts on
singular and ill-conditioned systems (a chain with massless or nearly massless links) against the reference's.

    python -m benchmarks.verify_compiled                       # 1,000 states; PUMA 560, UR5, Panda, Talos
    python -m benchmarks.verify_compiled --quick               # 20 states, PUMA 560 only (seconds)
    python -m benchmarks.verify_compiled --states 200 --robots puma560,ur5
    python -m benchmarks.verify_compiled --robots talos --kinds inverse --orderings nd,natural --no-verdicts

Per robot × kind (inverse; forward; hybrid with q̈ given at the first half of the actuated joints) × ordering:

* compile cold, into a fresh empty cache directory (``GTDYN_CACHE_DIR``): ``solver.compile_seconds``;
* compile again in a separate Python process against that now-filled cache: its ``compile()`` time, whether it
  came from the cache, and the whole process's wall time (interpreter start, imports, robot load, compile);
* all states through ``solver.batch``, ``solver.batch(threads=4)`` and single calls (which must give the same
  numbers), against Pinocchio (rnea / aba / the adapter's three-pass hybrid) at all states and the reference
  path at ``--reference-states`` of them (default: all);
* relative error of a state: max|compiled − ref| / max(max|ref|, 1), over the whole output vector (q̈ and τ
  for hybrid); the table gives the max over states and the 99th percentile against Pinocchio;
* verdicts per state: the reference path answers, warns (``IllConditionedWarning``) or raises; the compiled
  solver must do the same at that state.

Writes ``verify_compiled.md`` and ``verify_compiled.csv`` to ``--out`` (default ``benchmarks/results``) and
exits 1 if any error exceeds ``--tolerance`` (1e-9), a verdict differs, a second process misses the cache, or
anything crashes.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass, field

import numpy as np

import gtdyn
from gtdyn.bench import report
from gtdyn.bench.pinocchio import PinocchioModel
from gtdyn.compiled import cache
from gtdyn.compiled.states import sample_states
from gtdyn.orderings import applicable

KINDS = ("inverse", "forward", "hybrid")
DEFAULT_ROBOTS = ("puma560", "ur5", "panda", "talos")
TOLERANCE = 1e-9
SEED = 2024  # compile()'s own sample states use seed 0: these are different states
SAME = 1e-12  # single calls against batch: the same machine code on the same numbers
THREADS = 4  # batch(threads=THREADS) must equal batch()
RETRIES = 3  # cached timings redone when gtdyn's source changes under the run

ERD_PATHS = {"ur5": "ur_description/urdf/ur5_robot.urdf", "panda": "panda_description/urdf/panda.urdf",
             "talos": "talos_data/robots/talos_reduced.urdf"}

# The second process: import gtdyn, load the robot, compile against the filled cache, say how long it took.
CHILD = r"""
import json, sys, time, warnings
started = time.perf_counter()
import gtdyn
from gtdyn.compiled import cache
imported = time.perf_counter()
args = json.loads(sys.argv[1])
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    robot = gtdyn.load_robot(args["robot"], transmissions="independent")
loaded = time.perf_counter()
solver = gtdyn.compile(robot, args["kind"], ordering=args["ordering"], qdd_joints=args["qdd_joints"])
done = time.perf_counter()
print(json.dumps({"compile_seconds": solver.compile_seconds, "call_seconds": done - loaded,
                  "import_seconds": imported - started, "load_seconds": loaded - imported,
                  "from_cache": solver.from_cache, "key": solver.cache_key, "code": cache.code_fingerprint()}))
"""


# -- robots ------------------------------------------------------------------------------------------------


def erd_root() -> str | None:
    try:
        from importlib.metadata import distribution

        return str(distribution("example-robot-data").locate_file("cmeel.prefix/share/example-robot-data/robots"))
    except Exception:
        return None


def robot_source(name: str) -> str:
    """What ``gtdyn.load_robot`` takes for ``name``: a bundled name or a URDF path from example-robot-data."""
    if name not in ERD_PATHS:
        return name
    root = erd_root()
    if root is None:
        raise SystemExit(f"{name}: example-robot-data is not installed (pip install -e '.[test]')")
    path = os.path.join(root, ERD_PATHS[name])
    if not os.path.isfile(path):
        raise SystemExit(f"{name}: {path} not found")
    return path


def load(source) -> gtdyn.Robot:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gtdyn.ModelWarning)
        return gtdyn.load_robot(source, transmissions="independent")  # as Pinocchio reads <mimic>


def hybrid_joints(robot: gtdyn.Robot) -> list[str]:
    """The issue's hybrid setting: q̈ given at the first half of the actuated joints, τ at the others."""
    actuated = [j.name for j in robot.joints if j.actuated]
    return actuated[:len(actuated) // 2]


# -- one call, its verdict -----------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What one call did: its return value, the categories of the warnings it gave, or the exception it raised."""

    value: object = None
    warned: tuple[str, ...] = ()
    raised: Exception | None = None

    @property
    def verdict(self) -> str:
        if self.raised is not None:
            return f"raise {type(self.raised).__name__}"
        return "warn " + ",".join(sorted(set(self.warned))) if self.warned else "ok"


def run(fn) -> Outcome:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = fn()
        except Exception as e:  # the verdict is what is compared
            return Outcome(raised=e, warned=tuple(w.category.__name__ for w in caught))
    return Outcome(value=value, warned=tuple(w.category.__name__ for w in caught))


def flat(out) -> np.ndarray:
    """A solver's answer as one vector: q̈ then τ for hybrid."""
    return np.concatenate([np.asarray(a, float) for a in out]) if isinstance(out, tuple) else np.asarray(out, float)


def rel_error(got, want) -> float:
    """max|got − want| / max(max|want|, 1); inf if either is missing or not finite."""
    if got is None or want is None or not (np.all(np.isfinite(got)) and np.all(np.isfinite(want))):
        return float("inf")
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1.0)) if len(want) else 0.0


def split(robot: gtdyn.Robot, qdd_joints, x):
    """Hybrid inputs as the reference path and Pinocchio take them: dicts of the given q̈ and τ by joint name."""
    qdd = {name: x[i] for i, name in enumerate(robot.joint_names) if name in qdd_joints}
    tau = {j.name: x[j.index - 1] for j in robot.joints if j.name not in qdd_joints and j.actuated}
    return qdd, tau


def reference(robot, kind, qdd_joints, ordering, q, v, x) -> Outcome:
    """``gtdyn.solve`` in ``ordering``; ``value`` is (answer vector, result)."""
    if kind == "inverse":
        call = lambda: gtdyn.solve(robot, kind, q, v, qdd=x, ordering=ordering)  # noqa: E731
    elif kind == "forward":
        call = lambda: gtdyn.solve(robot, kind, q, v, tau=x, ordering=ordering)  # noqa: E731
    else:
        qdd, tau = split(robot, qdd_joints, x)
        call = lambda: gtdyn.solve(robot, kind, q, v, qdd=qdd, tau=tau, ordering=ordering)  # noqa: E731
    out = run(call)
    if out.raised is None:
        r = out.value
        out.value = (flat({"inverse": r.tau, "forward": r.qdd}.get(kind, (r.qdd, r.tau))), r)
    return out


def pinocchio(pin: PinocchioModel, robot, kind, qdd_joints, q, v, x) -> np.ndarray:
    if kind == "inverse":
        return pin.rnea(q, v, x)
    if kind == "forward":
        return pin.aba(q, v, x)
    qdd, tau = split(robot, qdd_joints, x)
    tau.update({j.name: 0.0 for j in robot.joints if j.name not in qdd and not j.actuated})
    return flat(pin.hybrid(q, v, qdd, tau))


def fresh_cache(root: str, label: str) -> str:
    """A new empty cache directory, made current for this process."""
    path = tempfile.mkdtemp(prefix=label.replace(" ", "_") + "-", dir=root)
    os.environ["GTDYN_CACHE_DIR"] = path
    return path


def cached_in_new_process(source: str, kind: str, compile_args: dict, cache_dir: str) -> dict:
    """Compile again in a separate Python process against ``cache_dir``: its report plus its wall time."""
    args = json.dumps({"robot": str(source), "kind": kind, **compile_args})
    env = {**os.environ, "GTDYN_CACHE_DIR": cache_dir}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, args], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        return {"error": lines[-1] if lines else f"exit status {done.returncode}"}
    try:
        out = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": f"unreadable output {done.stdout!r}"}
    return {**out, "process_seconds": wall}


# -- one robot × kind × ordering ---------------------------------------------------------------------------


@dataclass
class Row:
    robot: str
    dofs: int
    kind: str
    ordering: str
    states: int = 0
    reference_states: int = 0
    cold_s: float = float("nan")
    cached_compile_s: float = float("nan")
    cached_process_s: float = float("nan")
    cached_from_cache: bool = False
    ops: int = 0
    err_pin: float = float("nan")
    p99_pin: float = float("nan")
    err_ref: float = float("nan")
    p99_ref: float = float("nan")
    ref_vs_pin: float = float("nan")
    single_vs_batch: float = float("nan")
    threads_vs_batch: float = float("nan")
    fallbacks: int = 0
    single_fallbacks: int = 0
    raised: int = 0
    warned: int = 0
    verdict_mismatches: int = 0
    order_differs: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify(robot, source, kind, qdd_joints, ordering, states, pin_answers, reference_count, tolerance,
           cache_root) -> Row:
    started = time.perf_counter()
    n = robot.num_dofs
    row = Row(robot.name, n, kind, ordering)
    try:
        _verify(row, robot, source, kind, qdd_joints, ordering, states, pin_answers, reference_count, tolerance,
                cache_root)
    except Exception as e:  # a crash is a finding: keep going, report it
        row.problems.append(f"crashed: {type(e).__name__}: {e}")
        traceback.print_exc(file=sys.stderr)
    row.seconds = time.perf_counter() - started
    return row


def _verify(row, robot, source, kind, qdd_joints, ordering, states, pin_answers, reference_count, tolerance,
            cache_root) -> None:
    Q, V, X = (np.ascontiguousarray(states[s].T) for s in ("q", "v", "x"))
    count = len(Q)
    row.states, row.reference_states = count, min(reference_count, count)
    compile_args = {"ordering": ordering, "qdd_joints": list(qdd_joints) if kind == "hybrid" else None}

    # cold: into a fresh, empty cache directory
    cache_dir = fresh_cache(cache_root, f"{robot.name}-{kind}-{ordering}")
    compiled = run(lambda: gtdyn.compile(robot, kind, **compile_args))
    if compiled.raised is not None:
        row.problems.append(f"compile() raised {type(compiled.raised).__name__}: {compiled.raised}")
        return
    solver = compiled.value
    row.cold_s = solver.compile_seconds
    row.ops = int(sum(solver.operations.values()))
    if solver.from_cache:
        row.problems.append("the cold compile came from the cache")
    if compiled.warned:
        row.problems.append(f"compile() warned: {', '.join(sorted(set(compiled.warned)))}")

    # cached: a second process against the now-filled cache
    child = cached_in_new_process(source, kind, compile_args, cache_dir)
    filled_by = cache.code_fingerprint()
    for _ in range(RETRIES):
        if "error" in child or child["from_cache"] or child["code"] == filled_by:
            break
        # gtdyn's source changed between the process that filled the cache and this one (the cache key
        # includes its hash; other work on the checkout): fill a new cache from a process with the current
        # source, then time another process against it
        note = "gtdyn's source changed during the run: cached time from two new processes"
        row.notes += [] if note in row.notes else [note]
        refill = tempfile.mkdtemp(prefix="refill-", dir=cache_root)
        filler = cached_in_new_process(source, kind, compile_args, refill)
        if "error" in filler:
            child = filler
            break
        filled_by = filler["code"]
        child = cached_in_new_process(source, kind, compile_args, refill)
    if "error" in child:
        row.problems.append(f"the second process failed: {child['error']}")
    else:
        row.cached_compile_s, row.cached_process_s = child["compile_seconds"], child["process_seconds"]
        row.cached_from_cache = bool(child["from_cache"])
        if not row.cached_from_cache:
            why = (f" (gtdyn's source kept changing: {RETRIES} retries)" if child["code"] != filled_by else "")
            row.problems.append(f"the second process did not load the cache{why}")

    # every state through batch, then through single calls
    solver.fallbacks = 0
    batch = run(lambda: solver.batch(Q, V, X))
    row.fallbacks = solver.fallbacks
    solver.fallbacks = 0
    singles = [run(lambda k=k: solver(Q[k], V[k], X[k])) for k in range(count)]
    row.single_fallbacks = solver.fallbacks
    row.raised = sum(s.raised is not None for s in singles)
    row.warned = sum(bool(s.warned) for s in singles)
    answers = [None if s.raised is not None else flat(s.value) for s in singles]
    expected_batch = ("raise" if row.raised else "warn" if row.warned else "ok")
    if batch.verdict.split()[0] != expected_batch:
        row.problems.append(f"batch: {batch.verdict}, single calls: {row.raised} raised, {row.warned} warned")
    if batch.raised is None:
        batch_answers = np.hstack(batch.value) if kind == "hybrid" else batch.value
        row.single_vs_batch = max((rel_error(a, batch_answers[k]) for k, a in enumerate(answers) if a is not None),
                                  default=0.0)
        if not row.single_vs_batch <= SAME:
            row.problems.append(f"single calls differ from batch by {row.single_vs_batch:.3g}")
        if row.fallbacks != row.single_fallbacks:
            row.problems.append(f"batch fell back {row.fallbacks} times, single calls {row.single_fallbacks} times")
        threaded = run(lambda: solver.batch(Q, V, X, threads=THREADS))
        if threaded.raised is not None:
            row.problems.append(f"batch(threads={THREADS}) raised {type(threaded.raised).__name__}: {threaded.raised}")
        else:
            threaded_answers = np.hstack(threaded.value) if kind == "hybrid" else threaded.value
            row.threads_vs_batch = max((rel_error(threaded_answers[k], batch_answers[k]) for k in range(count)),
                                       default=0.0)
            if not row.threads_vs_batch <= SAME:
                row.problems.append(f"batch(threads={THREADS}) differs from batch by {row.threads_vs_batch:.3g}")

    # against Pinocchio at every state
    errors = np.array([rel_error(a, pin_answers[k]) for k, a in enumerate(answers) if a is not None])
    if len(errors):
        row.err_pin, row.p99_pin = float(errors.max()), float(np.percentile(errors, 99))

    # against the reference path (same ordering) at the first reference_count states
    errors, ref_pin = [], []
    for k in range(row.reference_states):
        ref = reference(robot, kind, qdd_joints, ordering, Q[k], V[k], X[k])
        mine = singles[k]
        if ref.raised is None and ref.value[1].ordering != solver.ordering:
            row.order_differs += 1
        same = ref.verdict == mine.verdict and (
            ref.raised is None
            or getattr(ref.raised, "free_variables", None) == getattr(mine.raised, "free_variables", None))
        if not same:
            row.verdict_mismatches += 1
            if row.verdict_mismatches <= 3:
                row.problems.append(f"state {k}: reference {ref.verdict}, compiled {mine.verdict} "
                                    f"(q={Q[k].tolist()}, v={V[k].tolist()}, x={X[k].tolist()})")
        if ref.raised is None and answers[k] is not None:
            errors.append(rel_error(answers[k], ref.value[0]))
            ref_pin.append(rel_error(ref.value[0], pin_answers[k]))
    if errors:
        row.err_ref, row.p99_ref, row.ref_vs_pin = (float(max(errors)), float(np.percentile(errors, 99)),
                                                    float(max(ref_pin)))
    if row.order_differs:
        row.problems.append(f"the reference path resolved '{ordering}' to another ordering at {row.order_differs} "
                            "states")

    for name, value in (("Pinocchio", row.err_pin), ("the reference path", row.err_ref)):
        if not value <= tolerance:
            row.problems.append(f"max relative error against {name}: {value:.3g} > {tolerance:g}")


# -- singular and ill-conditioned systems ------------------------------------------------------------------

CHAINS = {"massless tip links": None, "tip links 1e-16": 1e-16, "tip links 1e-10": 1e-10}


def determinacy_tests():
    """tests/test_determinacy.py, whose spatial 3R chain (``chain_urdf``) and state (``STATE``) these checks reuse."""
    tests = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    import test_determinacy

    return test_determinacy


@dataclass
class VerdictRow:
    chain: str
    kind: str
    ordering: str
    states: int = 0
    reference: str = ""
    compiled: str = ""
    where: str = "call"
    compile_warnings: int = 0
    max_err: float = float("nan")
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def summarize(verdicts: list[str]) -> str:
    counts: dict[str, int] = {}
    for v in verdicts:
        counts[v] = counts.get(v, 0) + 1
    return "; ".join(f"{v} ×{c}" for v, c in counts.items())


def verify_verdicts(chain_name, robot, kind, qdd_joints, ordering, states, tolerance, cache_root) -> VerdictRow:
    row = VerdictRow(chain_name, kind, ordering)
    try:
        _verify_verdicts(row, robot, kind, qdd_joints, ordering, states, tolerance, cache_root)
    except Exception as e:
        row.problems.append(f"crashed: {type(e).__name__}: {e}")
        traceback.print_exc(file=sys.stderr)
    return row


def _verify_verdicts(row, robot, kind, qdd_joints, ordering, states, tolerance, cache_root) -> None:
    Q, V, X = (np.ascontiguousarray(states[s].T) for s in ("q", "v", "x"))
    row.states = len(Q)
    refs = [reference(robot, kind, qdd_joints, ordering, Q[k], V[k], X[k]) for k in range(len(Q))]
    row.reference = summarize([r.verdict for r in refs])
    fresh_cache(cache_root, f"chain-{kind}-{ordering}")
    compile_args = {"ordering": ordering, "qdd_joints": list(qdd_joints) if kind == "hybrid" else None}
    compiled = run(lambda: gtdyn.compile(robot, kind, **compile_args))
    row.compile_warnings = len(compiled.warned)
    if compiled.raised is not None:
        # compile() checks its code at sample states through the solver, so a system singular everywhere
        # can raise there already: the same verdict if every reference call raised the same error
        row.where = "compile()"
        e = compiled.raised
        row.compiled = f"raise {type(e).__name__}"
        if not isinstance(e, gtdyn.IndeterminateSystemError):
            row.problems.append(f"compile() crashed: {type(e).__name__}: {e}")
        free = getattr(e, "free_variables", None)
        if any(r.verdict != row.compiled or getattr(r.raised, "free_variables", None) != free for r in refs):
            row.problems.append(f"compile() raised {type(e).__name__} (free: {free}) where the reference path gives "
                                f"{row.reference}")
        return
    solver = compiled.value
    mine = [run(lambda k=k: solver(Q[k], V[k], X[k])) for k in range(len(Q))]
    row.compiled = summarize([m.verdict for m in mine])
    errors = []
    for k, (r, m) in enumerate(zip(refs, mine)):
        if (r.verdict != m.verdict
                or getattr(r.raised, "free_variables", None) != getattr(m.raised, "free_variables", None)):
            row.problems.append(f"state {k}: reference {r.verdict}, compiled {m.verdict}")
        elif r.raised is None:
            errors.append(rel_error(flat(m.value), r.value[0]))
    batch = run(lambda: solver.batch(Q, V, X))
    worst = "raise" if any(r.raised for r in refs) else "warn" if any(r.warned for r in refs) else "ok"
    if batch.verdict.split()[0] != worst:
        row.problems.append(f"batch: {batch.verdict}, reference at its states: {row.reference}")
    if errors:
        row.max_err = max(errors)
        if not row.max_err <= tolerance:
            row.problems.append(f"max relative error against the reference path {row.max_err:.3g}")


def verdict_checks(count: int, tolerance: float, cache_root: str, progress) -> list[VerdictRow]:
    rows = []
    folder = tempfile.mkdtemp(prefix="chains-", dir=cache_root)
    for chain_name, scale in CHAINS.items():
        path = os.path.join(folder, f"chain_{scale}.urdf")
        with open(path, "w") as f:
            f.write(determinacy_tests().chain_urdf(scale))
        robot = load(path)
        for kind in KINDS:
            qdd_joints = ["j1"] if kind == "hybrid" else []
            states = sample_states(robot, kind, qdd_joints, count=count, seed=SEED)
            q, v, x = determinacy_tests().STATE  # the state first
            if kind == "hybrid":
                x = np.array([1.0, x[1], x[2]])
            for s, value in zip(("q", "v", "x"), (q, v, x)):
                states[s] = np.column_stack([value, states[s]])
            for ordering in applicable(kind):
                started = time.perf_counter()
                row = verify_verdicts(chain_name, robot, kind, qdd_joints, ordering, states, tolerance, cache_root)
                rows.append(row)
                progress(f"{chain_name} {kind} {ordering}: reference {row.reference}; compiled {row.compiled} "
                         f"(at {row.where}){'' if row.ok else '  ** ' + ' | '.join(row.problems)}",
                         time.perf_counter() - started)
    return rows


# -- report ------------------------------------------------------------------------------------------------


def machine() -> str:
    from importlib.metadata import PackageNotFoundError, version

    parts = []
    for dist in ("gtsam", "gtdyn", "llvmlite", "pin"):
        try:
            parts.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            pass
    return report.machine(parts)


def fmt(x: float, digits: int = 2) -> str:
    return "–" if x is None or np.isnan(x) else f"{x:.{digits}e}" if digits < 0 else f"{x:.{digits}f}"


def err(x: float) -> str:
    return "–" if np.isnan(x) else "0" if x == 0 else f"{x:.1e}"


def revision() -> str:
    """The git commit of the checkout, and the hash of gtdyn's source this process runs (the cache key's part)."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10,
                                cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"commit {commit or 'unknown'}, gtdyn source hash {cache.code_fingerprint().rsplit('|', 1)[-1][:12]}"


def markdown(rows: list[Row], verdict_rows: list[VerdictRow], args, command: str, seconds: float, where: str) -> str:
    lines = ["# gtdyn.compile against Pinocchio and the reference path", "",
             f"Produced by `{command}` on {datetime.date.today().isoformat()} ({where}), {machine()}; {seconds:.0f} s "
             "in all.", "",
             f"Random states within the joint limits (clipped to [−π, π]; v ∈ [−1, 1], q̈ ∈ [−2, 2], τ ∈ [−5, 5]; "
             f"`gtdyn.compiled.solver.sample_states`, seed {args.seed}), {args.states} per robot and kind, the same "
             f"for every ordering. Hybrid: q̈ given at the first half of the actuated joints, τ at the others.", "",
             "Relative error of a state: max|compiled − ref| / max(max|ref|, 1) over the output (q̈ and τ for hybrid). "
             "Pinocchio: `rnea` (inverse), `aba` (forward), the adapter's three-pass hybrid; at every state. "
             "Reference: `gtdyn.solve` in the same ordering"
             + ("" if args.reference_states >= args.states else f", at the first {args.reference_states} states")
             + ". p99: 99th percentile of the error against Pinocchio. Compile cold: `compile_seconds` into an empty "
             "cache. Cached: a second Python process against the filled cache — its `compile()` call / the whole "
             "process (interpreter, imports, robot load, compile). Ops: operations in the generated code. "
             "Fallbacks: states the generated code did not certify, answered by the reference path (batch). "
             "Verdicts: states where the compiled solver raised / warned, and where its verdict differs from the "
             "reference path's.", "",
             "| robot | kind | ordering | compile cold s | cached s: compile() / process | ops | max rel err vs "
             "Pinocchio | vs reference | p99 | fallbacks | raised / warned / differ | ok |",
             "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|:-:|"]
    for r in rows:
        cached = (f"{fmt(r.cached_compile_s, 3)} / {fmt(r.cached_process_s, 2)}"
                  + ("" if r.cached_from_cache else " (miss)"))
        lines.append(f"| {r.robot} | {r.kind} | {r.ordering} | {fmt(r.cold_s)} | {cached} | {r.ops} | {err(r.err_pin)} "
                     f"| {err(r.err_ref)} | {err(r.p99_pin)} | {r.fallbacks} | {r.raised} / {r.warned} / "
                     f"{r.verdict_mismatches} | {'✓' if r.ok else '✗'} |")
    ok_rows = [r for r in rows if not np.isnan(r.cold_s)]
    hits = [r for r in ok_rows if r.cached_from_cache]
    if ok_rows:
        lines += ["", f"Worst over all rows: {err(max(r.err_pin for r in ok_rows))} against Pinocchio, "
                      f"{err(np.nanmax([r.err_ref for r in ok_rows]))} against the reference path (which itself is "
                      f"within {err(np.nanmax([r.ref_vs_pin for r in ok_rows]))} of Pinocchio); single calls and "
                      f"batch(threads={THREADS}) equal batch "
                      f"to {err(np.nanmax([r.single_vs_batch for r in ok_rows]))} and "
                      f"{err(np.nanmax([r.threads_vs_batch for r in ok_rows]))}; cold compile "
                      f"{min(r.cold_s for r in ok_rows):.2f}–{max(r.cold_s for r in ok_rows):.2f} s; cached compile() "
                      f"≤ {max([r.cached_compile_s for r in hits], default=np.nan):.3f} s, whole second process "
                      f"≤ {max([r.cached_process_s for r in hits], default=np.nan):.2f} s "
                      f"({len(hits)} of {len(ok_rows)} second processes loaded the cache); "
                      f"{sum(r.fallbacks for r in ok_rows)} fallbacks in {sum(r.states for r in ok_rows)} states."]
    if verdict_rows:
        lines += ["", "## Singular and ill-conditioned systems", "",
                  "tests/test_determinacy.py's spatial 3R chain with massless or nearly massless tip links; "
                  "the issue's "
                  f"state and {verdict_rows[0].states - 1} random ones; hybrid gives q̈ at j1. Every ordering: the "
                  "compiled solver's verdict (answer / `IllConditionedWarning` / `IndeterminateSystemError`, with the "
                  "same free variables) against the reference path's at each state, and its answers where both answer.",
                  "", "| chain | kind | ordering | reference path | compiled | verdict given by "
                  "| warnings in compile() | max rel err | ok |", "|---|---|---|---|---|---|--:|--:|:-:|"]
        for r in verdict_rows:
            lines.append(f"| {r.chain} | {r.kind} | {r.ordering} | {r.reference} | {r.compiled} | {r.where} | "
                         f"{r.compile_warnings} | {err(r.max_err)} | {'✓' if r.ok else '✗'} |")
    failures = [(f"{r.robot} {r.kind} {r.ordering}", p) for r in rows for p in r.problems] + \
               [(f"{r.chain} {r.kind} {r.ordering}", p) for r in verdict_rows for p in r.problems]
    lines += ["", "## Problems", ""] + ([f"* {where}: {p}" for where, p in failures] or ["None."])
    notes = [f"* {r.robot} {r.kind} {r.ordering}: {n}" for r in rows for n in r.notes]
    if notes:
        lines += ["", "## Notes", ""] + notes
    return "\n".join(lines) + "\n"


def write_csv(rows: list, path: str) -> None:
    if not rows:
        return
    names = [f for f in rows[0].__dataclass_fields__]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(names + ["ok"])
        for r in rows:
            w.writerow([("; ".join(v) if isinstance(v, list) else v) for v in (getattr(r, n) for n in names)] + [r.ok])


# -- main --------------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--states", type=int, default=None, help="random states per robot and kind (1000; --quick 20)")
    parser.add_argument("--robots", default=None, help=f"comma-separated, of {', '.join(DEFAULT_ROBOTS)} "
                                                       "(default: all; --quick: puma560)")
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated problem kinds (default: all)")
    parser.add_argument("--orderings", default=None, help="comma-separated ordering names (default: every one "
                                                          "applicable to the kind)")
    parser.add_argument("--no-verdicts", action="store_true", help="skip the singular / ill-conditioned chain checks")
    parser.add_argument("--reference-states", type=int, default=None,
                        help="states compared with the reference path (default: all)")
    parser.add_argument("--verdict-states", type=int, default=None,
                        help="random states per chain check (20; --quick 5)")
    parser.add_argument("--tolerance", type=float, default=TOLERANCE)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    parser.add_argument("--quick", action="store_true", help="20 states, PUMA 560 only: a smoke run")
    args = parser.parse_args(argv)
    args.states = args.states or (20 if args.quick else 1000)
    args.reference_states = args.states if args.reference_states is None else args.reference_states
    verdict_states = args.verdict_states or (5 if args.quick else 20)
    names = (args.robots or ("puma560" if args.quick else ",".join(DEFAULT_ROBOTS))).split(",")
    unknown = [n for n in names if n not in DEFAULT_ROBOTS]
    if unknown:
        parser.error(f"--robots: unknown {', '.join(unknown)} (known: {', '.join(DEFAULT_ROBOTS)})")
    kinds = args.kinds.split(",")
    if any(k not in KINDS for k in kinds):
        parser.error(f"--kinds: expected some of {', '.join(KINDS)}, got {args.kinds}")
    wanted = args.orderings.split(",") if args.orderings else None

    def orderings(kind: str) -> list[str]:
        return [o for o in applicable(kind) if wanted is None or o in wanted]
    command = ("python -m benchmarks.verify_compiled"
               + (" " + " ".join(argv if argv is not None else sys.argv[1:])).rstrip())

    began = time.perf_counter()
    where = revision()

    def progress(text: str, seconds: float) -> None:
        print(f"[{time.perf_counter() - began:7.1f} s] {text}  ({seconds:.1f} s)", file=sys.stderr, flush=True)

    rows: list[Row] = []
    saved_cache = os.environ.get("GTDYN_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="gtdyn-verify-") as cache_root:
        try:
            for name in names:
                source = robot_source(name)
                robot = load(source)
                pin = PinocchioModel(robot.source if name == "puma560" else source, robot)
                for kind in kinds:
                    if not orderings(kind):
                        continue
                    qdd_joints = hybrid_joints(robot) if kind == "hybrid" else []
                    states = sample_states(robot, kind, qdd_joints, count=args.states, seed=args.seed)
                    pin_answers = np.array([pinocchio(pin, robot, kind, qdd_joints, states["q"][:, k],
                                                      states["v"][:, k], states["x"][:, k])
                                            for k in range(args.states)])
                    for ordering in orderings(kind):
                        row = verify(robot, source, kind, qdd_joints, ordering, states, pin_answers,
                                     args.reference_states, args.tolerance, cache_root)
                        rows.append(row)
                        progress(f"{name} {kind} {ordering}: cold {fmt(row.cold_s)} s, "
                                 f"cached {fmt(row.cached_compile_s, 3)} s "
                                 f"({fmt(row.cached_process_s)} s process), err vs pin {err(row.err_pin)}, "
                                 f"vs ref {err(row.err_ref)} ({row.reference_states} states), fallbacks {row.fallbacks}"
                                 + ("" if row.ok else "  ** " + " | ".join(row.problems)), row.seconds)
            verdict_rows = [] if args.no_verdicts else verdict_checks(verdict_states, args.tolerance, cache_root,
                                                                      progress)
        finally:
            if saved_cache is None:
                os.environ.pop("GTDYN_CACHE_DIR", None)
            else:
                os.environ["GTDYN_CACHE_DIR"] = saved_cache

    seconds = time.perf_counter() - began
    report = markdown(rows, verdict_rows, args, command, seconds, where)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "verify_compiled.md"), "w") as f:
        f.write(report)
    write_csv(rows, os.path.join(args.out, "verify_compiled.csv"))
    write_csv(verdict_rows, os.path.join(args.out, "verify_compiled_verdicts.csv"))
    print(report)
    failed = sum(not r.ok for r in rows) + sum(not r.ok for r in verdict_rows)
    print(f"wrote {args.out}/verify_compiled.md, verify_compiled.csv, verify_compiled_verdicts.csv; "
          f"{failed} failing rows; {seconds:.0f} s", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
