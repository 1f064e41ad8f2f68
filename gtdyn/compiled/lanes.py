"""Batches in the SIMD lanes of one core: the checked and the unchecked call lowered to ``<WIDTH x double>``, so
one pass of the straight-line code solves ``WIDTH`` states, where ``pin.abaInParallel`` runs one state per
thread.

Every operation becomes the same IEEE operation on a vector (no fast-math, no fused multiply-add: LLVM keeps
them apart), so each lane's answer is bit for bit the scalar code's; sin and cos become calls of the same libm
functions. The workspace interleaves the lanes: value ``i`` of lane ``w`` lives at ``ws[i · WIDTH + w]``.

The certificate's branches (``measured`` where the a-priori backward error cannot certify, ``schur`` where u
cannot, ``exact`` where no bound can) are taken by a lane group when any of its lanes asks: the branch runs on
all four, and the lanes that did not ask get back the answer and status they had, so each lane ends as the
scalar ``main`` would. A state whose lane still says 0 is solved again by the scalar ``main`` (and then by the
reference path). The verdicts are the scalar code's.

A default solver compiles its lane module once its batches have run ``LANES_AFTER`` states, in the background
(``Batches``); ``gtdyn.compile(..., lanes=True)`` compiles it with the solver (in parts side by side, as the
scalar one). Either way it joins the solver's record and cache entry, and batches then run whole lane groups in
lanes.
"""

from __future__ import annotations

import logging
import threading

import numpy as np

from gtdyn.compiled import dataflow, native, parallel, trace

LOG = logging.getLogger("gtdyn")

WIDTH = 4  # AVX2: four doubles per instruction; narrower vector units split each operation, still correct
ENTRIES = ("main", "fast")
_INFIX = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv"}
_INTRINSIC = {"sin": "sin", "cos": "cos", "sqrt": "sqrt", "abs": "fabs"}


def reachable(functions: dict, entries=ENTRIES) -> list[str]:
    """The functions the entries call, directly or not (``call_unless``'s too), callees first (the derivatives'
    are left out)."""
    order: list[str] = []

    def visit(name: str) -> None:
        if name in order:
            return
        for op in functions[name].ops:
            if op[0] in ("call", "call_unless"):
                visit(op[1] if op[0] == "call" else op[2])
        order.append(name)

    for entry in entries:
        visit(entry)
    return order


def _vector(width: int) -> str:
    return f"<{width} x double>"


def _splat(x: float, width: int) -> str:
    return "<" + ", ".join([f"double {native.constant(x)}"] * width) + ">"


def function_ir(fn: trace.Function, prefix: str, width: int = WIDTH, functions: dict | None = None,
                visible: set[int] | None = None) -> str:
    """``fn`` on ``width`` interleaved lanes: ``{prefix}{name}_x{width}(ws)`` (``functions``: the program's, for
    the callee of a ``call_unless``; ``visible``: the indices whose values matter once the entry returns, None
    for all: ``restored``)."""
    vt = _vector(width)

    def operand(a) -> str:
        return reloads.name(a, body) if trace.is_sym(a) else _splat(a, width)

    def access(i: int, op) -> list[str]:
        return [f"  %p{i} = getelementptr inbounds double, ptr %ws, i64 {op[1] * width}",
                f"  %r{i} = load {vt}, ptr %p{i}, align 8" if op[0] == "load" else
                f"  store {vt} {operand(op[2])}, ptr %p{i}, align 8"]

    body = [f"define void @{prefix}{fn.name}_x{width}(ptr noalias nocapture %ws) noinline nounwind {{", "entry:"]
    early = dataflow.early_stores(fn)  # as the scalar code writes them
    moved = {i for stores in early.values() for i in stores}
    reloads = native.Reloads(fn, early, lambda name, entry: [
        f"  {name}p = getelementptr inbounds double, ptr %ws, i64 {entry * width}",
        f"  {name} = load volatile {vt}, ptr {name}p, align 8"])
    for i, (op, keep) in enumerate(zip(fn.ops, fn.live())):
        kind = op[0]
        if kind == "#" or not keep or i in moved:
            continue
        reloads.position = i
        if kind in ("load", "store"):
            body += access(i, op)
        elif kind == "call":
            body.append(f"  call void @{prefix}{op[1]}_x{width}(ptr %ws)")
        elif kind == "call_unless":
            body += _call_unless(fn, i, restored(functions, fn, i, visible), prefix, width, operand)
        elif kind in _INFIX:
            body.append(f"  %r{i} = {_INFIX[kind]} {vt} {operand(op[1])}, {operand(op[2])}")
        elif kind == "neg":
            body.append(f"  %r{i} = fneg {vt} {operand(op[1])}")
        elif kind == "copy":
            body.append(f"  %r{i} = fadd {vt} {operand(op[1])}, {_splat(-0.0, width)}")
        elif kind == "le":
            body += [f"  %c{i} = fcmp ole {vt} {operand(op[1])}, {operand(op[2])}",
                     f"  %r{i} = uitofp <{width} x i1> %c{i} to {vt}"]
        elif kind == "select":  # as the scalar code: the first where the condition is not 0
            body += [f"  %c{i} = fcmp one {vt} {operand(op[1])}, {_splat(0.0, width)}",
                     f"  %r{i} = select <{width} x i1> %c{i}, {vt} {operand(op[2])}, {vt} {operand(op[3])}"]
        elif kind in _INTRINSIC:
            body.append(f"  %r{i} = call {vt} @llvm.{_INTRINSIC[kind]}.v{width}f64({vt} {operand(op[1])})")
        else:
            raise ValueError(f"{fn.name}: operation {kind} has no lane form")
        for j in early.get(i, ()):
            body += access(j, fn.ops[j])
    body += ["  ret void", "}"]
    return "\n".join(body)


def stored(fn: trace.Function) -> set[int]:
    """The workspace indices ``fn`` stores to."""
    return {op[1] for op in fn.ops if op[0] == "store"}


def written(functions: dict, name: str) -> set[int]:
    """The workspace indices function ``name`` stores to, itself or through the functions it calls."""
    indices = set()
    for callee in reachable(functions, (name,)):
        indices |= stored(functions[callee])
    return indices


def read(functions: dict, name: str) -> set[int]:
    """The workspace indices function ``name`` loads, itself or through the functions it calls."""
    return {op[1] for callee in reachable(functions, (name,)) for op in functions[callee].ops if op[0] == "load"}


def restored(functions: dict, fn: trace.Function, i: int, visible: set[int] | None) -> set[int]:
    """What lanes that did not ask get back after ``fn``'s ``call_unless`` at operation ``i``: what the callee
    writes (``written``) that a branching function stores (``observed``) and that matters afterwards: read by
    ``fn`` or a function it calls later, or ``visible`` once the entry returns (the answer, its status and
    verdicts; None: every index)."""
    indices = written(functions, fn.ops[i][2]) & observed(functions)
    if visible is None:
        return indices
    later = set(visible)
    for op in fn.ops[i + 1:]:
        if op[0] == "load":
            later.add(op[1])
        elif op[0] in ("call", "call_unless"):
            later |= read(functions, op[1] if op[0] == "call" else op[2])
    return indices & later


def observed(functions: dict) -> set[int]:
    """What a branch must leave as the scalar code does: the indices stored by the functions that branch (the
    answer, its status and verdicts, and what they pass to the functions they call)."""
    return set().union(*(stored(fn) for fn in functions.values()
                         if isinstance(fn, trace.Function) and any(op[0] == "call_unless" for op in fn.ops)))


def _call_unless(fn: trace.Function, i: int, indices: set[int], prefix: str, width: int, operand) -> list[str]:
    """``call_unless(flag, callee)`` on lanes: the callee runs when any lane's flag is not 1 (NaN included, as the
    scalar ``!= 1``); afterwards each lane whose flag was 1 gets back, at each of ``indices`` (``restored``: what
    the callee writes that the branching functions store and that matters afterwards), the value it had before the
    call — so every lane's answer and status are the scalar code's. Other scratch the callee writes is the
    callee's in every lane; no call reads scratch it did not write first."""
    flag, callee = fn.ops[i][1], fn.ops[i][2]
    vt, mask = _vector(width), f"<{width} x i1>"
    body = [f"  %ask{i} = fcmp une {vt} {operand(flag)}, {_splat(1.0, width)}",
            f"  %any{i} = call i1 @llvm.vector.reduce.or.v{width}i1({mask} %ask{i})",
            f"  br i1 %any{i}, label %call{i}, label %after{i}", f"call{i}:"]
    for index in sorted(indices):
        body += [f"  %kp{i}_{index} = getelementptr inbounds double, ptr %ws, i64 {index * width}",
                 f"  %ko{i}_{index} = load {vt}, ptr %kp{i}_{index}, align 8"]
    body.append(f"  call void @{prefix}{callee}_x{width}(ptr %ws)")
    for index in sorted(indices):
        name = f"{i}_{index}"
        body += [f"  %kn{name} = load {vt}, ptr %kp{name}, align 8",
                 f"  %ks{name} = select {mask} %ask{i}, {vt} %kn{name}, {vt} %ko{name}",
                 f"  store {vt} %ks{name}, ptr %kp{name}, align 8"]
    return body + [f"  br label %after{i}", f"after{i}:"]


def module_ir(functions: dict, prefix: str, width: int = WIDTH, visible: set[int] | None = None) -> str:
    """The lane module of a program's functions: each function the entries reach, and a batch loop per entry
    (``visible``: as ``function_ir``'s)."""
    return module_parts(functions, prefix, width, visible=visible)[0]


def module_parts(functions: dict, prefix: str, width: int = WIDTH, parts: int = 1, above: int = 0,
                 visible: set[int] | None = None) -> list[str]:
    """``module_ir`` as ``parts`` modules (``native.assemble``)."""
    vt = _vector(width)
    head = [f"declare {vt} @llvm.{name}.v{width}f64({vt})" for name in _INTRINSIC.values()]
    head.append(f"declare i1 @llvm.vector.reduce.or.v{width}i1(<{width} x i1>)")
    bodies = {name: function_ir(functions[name], prefix, width, functions, visible) for name in reachable(functions)}
    return native.assemble(head, bodies, [native.batch_ir(prefix, entry, width) for entry in ENTRIES],
                           functions, ENTRIES, lambda name: f"declare void @{prefix}{name}_x{width}(ptr)", parts,
                           above)


def compile_module(functions: dict, prefix: str, quick: bool = False, visible: set[int] | None = None) -> list[bytes]:
    """The lane module's object code, in parts side by side as ``native.compile_parts`` compiles a big program's
    scalar code; ``exact`` stays optimized here: a lane group takes it when any of its lanes asks. ``visible``:
    the indices a batch copies out (``function_ir``)."""
    return native.compile_parts(lambda parts, above: module_parts(functions, prefix, WIDTH, parts, above, visible),
                                quick, native.operation_count(functions))


# States a solver batches before it compiles its lanes in the background (``Batches``). A lane compile costs
# seconds of one core (Talos: about the scalar compile again) and saves microseconds per state, so it pays back
# after some hundreds of thousands of states in one process, and at once in every later one, which loads it from
# the cache (benchmarks/results/design_measurements.md).
LANES_AFTER = 10_000
CHECKED_ROWS = 64  # random input rows the lane code compiled later must solve bit for bit as the scalar code
STRIDE = 4096  # a long batch that started before its lanes were ready runs in chunks of these, to take them up


class Batches:
    """How a solver runs its batches: whole lane groups in lanes when it has lane code, the scalar
    ``batch_<entry>`` for the rest.

    A solver compiled without lane code (``gtdyn.compile``'s default) may be given ``later``: a function that
    compiles it (traced and compiled in a worker process, ``background.lane_code_elsewhere``). Once batches have run
    ``LANES_AFTER`` states, a background thread calls it and checks the lane code: traced again, it must be of
    the solver's own program (its workspace's size, its operations) and solve random rows bit for bit as the
    scalar code (whatever they mean, each branch alike). From then on batches run
    in lanes — a long batch already running, from its next chunk of ``STRIDE`` rows — and ``keep(record)`` is
    told the record that holds them (the disk cache). Until then, and for good if anything fails (logged),
    batches run state by state: the same answers either way."""

    def __init__(self, record: dict, scalar: native.Loaded, size: int, status_column: int, later=None, keep=None):
        self.record, self.scalar, self.size, self.status_column = record, scalar, size, status_column
        self.lanes = self._loaded(record["lanes_object"]) if "lanes_object" in record else None
        self.later, self.keep = later, keep
        self.batched = 0  # states run so far, towards ``LANES_AFTER``
        self._compiling: threading.Thread | None = None
        self._lock = threading.Lock()

    def run(self, entry: str, inputs: np.ndarray, n_out: int, out_start: int, threads: int) -> np.ndarray:
        """(count, n_out) results of ``entry`` on the rows of ``inputs``: whole lane groups in lanes, the rest and
        every state whose lane the bound did not certify (``main``: its exact branch) by the scalar code."""
        count = inputs.shape[0]
        if self.lanes is None and self.later is not None:
            self.batched += count
            if self.batched >= LANES_AFTER:
                self.compile_lanes()
            if self._compiling is not None and count > 2 * STRIDE:  # lanes on their way: the chunks after they
                results = np.empty((count, n_out))  # are ready run in them
                for first in range(0, count, STRIDE):
                    results[first:first + STRIDE] = self._run(entry, inputs[first:first + STRIDE], n_out, out_start,
                                                              threads)
                return results
        return self._run(entry, inputs, n_out, out_start, threads)

    def _run(self, entry: str, inputs: np.ndarray, n_out: int, out_start: int, threads: int) -> np.ndarray:
        scalar, lanes, count = self.scalar.batch[entry], self.lanes, inputs.shape[0]
        if lanes is None or count < WIDTH:
            return parallel.run_states(scalar, self.size, inputs, n_out, out_start, threads)
        whole = count - count % WIDTH
        results = np.empty((count, n_out))
        results[:whole] = parallel.run_states(lanes.batch[entry], self.size, inputs[:whole], n_out, out_start,
                                              threads, WIDTH)
        if whole < count:
            results[whole:] = parallel.run_states(scalar, self.size, inputs[whole:], n_out, out_start)
        again = np.flatnonzero(results[:whole, self.status_column] != 1.0)
        if again.size:
            results[again] = parallel.run_states(scalar, self.size, np.ascontiguousarray(inputs[again]), n_out,
                                               out_start, threads)
        return results

    def _loaded(self, obj: list[bytes]) -> native.Loaded:
        """Lane object code loaded: its entries ``main_x4``, ``fast_x4`` and their batch loops."""
        return native.Loaded(obj, self.record["prefix"], ENTRIES, suffix=f"_x{WIDTH}")

    def compile_lanes(self, wait: bool = False) -> bool:
        """Start compiling the lane code in the background (once); ``wait``: until it is done. Whether batches now
        run in lanes."""
        with self._lock:
            if self.lanes is None and self.later is not None and self._compiling is None:
                self._compiling = threading.Thread(target=self._tier_up, daemon=True, name="gtdyn-lanes")
                self._compiling.start()
            compiling = self._compiling
        if wait and compiling is not None:
            compiling.join()
        return self.lanes is not None

    def _tier_up(self) -> None:
        n_out, start = self.status_column + 3, self.record["start"]["out"]
        try:
            made = self.later()  # build._lane_code's answer
            if (made["size"], made["operations"]) != (self.size, self.record["operations"]):
                raise RuntimeError(f"they were traced from another program (a workspace of {made['size']} values, "
                                   f"not {self.size})")
            obj = made["lanes_object"]
            loaded = self._loaded(obj)
            inputs = start - self.record["start"]["inputs"]  # a batch's row: the inputs, which the answer follows
            rows = np.random.default_rng(0).uniform(-1.0, 1.0, (CHECKED_ROWS, inputs))
            for entry in ENTRIES:  # traced again, the lane code must be the scalar code's, bit for bit
                want = parallel.run_states(self.scalar.batch[entry], self.size, rows, n_out, start)
                got = parallel.run_states(loaded.batch[entry], self.size, rows, n_out, start, 1, WIDTH)
                if not np.array_equal(got, want, equal_nan=True):
                    raise RuntimeError(f"the lane code's {entry} disagrees with the scalar code")
        except Exception as error:  # noqa: BLE001 - a background compile that fails leaves batches as they were
            LOG.warning("gtdyn.compiled: lanes for batches were not compiled (%s); batches stay state by state",
                        error)
            return
        self.record["lanes_object"] = obj
        self.lanes = loaded
        if self.keep is not None:
            self.keep(self.record)
