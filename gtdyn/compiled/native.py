"""Machine code for the generated functions, through llvmlite (numba's own LLVM binding, a PyPI wheel; no
compiler on the user's machine).

Each operation becomes one LLVM instruction on doubles — no fast-math, so the arithmetic is exactly the IEEE
arithmetic the Python rendering describes. Why not numba: its type inference and lowering grow faster than
linearly with function size, LLVM alone does not (benchmarks/results/design_measurements.md,
``python -m benchmarks.engine_compile_time``). This module writes the functions as LLVM IR (``module_ir``, or
a big program in parts: ``module_parts``) and loads object code (``Loaded``); ``gtdyn.compiled.objects`` turns IR
into object code, which is what the on-disk cache keeps.
"""

from __future__ import annotations

import ctypes
import struct

from gtdyn.compiled import dataflow, objects, trace
from gtdyn.compiled.objects import compile_object, llvm, llvm_lock, target_machine

_INFIX = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv"}
_INTRINSIC = {"sin": "llvm.sin.f64", "cos": "llvm.cos.f64", "sqrt": "llvm.sqrt.f64", "abs": "llvm.fabs.f64"}


def target_id() -> str:
    """The host CPU this machine code is for: part of the cache key."""
    binding = llvm()
    return f"{binding.get_process_triple()}|{binding.get_host_cpu_name()}|{binding.get_host_cpu_features().flatten()}"


def constant(x: float) -> str:
    """A double as LLVM IR writes it exactly: its bits in hex."""
    return f"0x{struct.unpack('<Q', struct.pack('<d', float(x)))[0]:016X}"


RELOAD_AFTER = 100  # operations: a value in ws read again after so many is loaded again (``Reloads``)


class Reloads:
    """A value that a function without calls stores (early: ``dataflow.early_stores``), or loads from an entry it
    never writes, and reads again more than ``RELOAD_AFTER`` operations after its last read is loaded again from
    its ``ws`` entry there: a volatile load, so that LLVM neither forwards the stored value nor merges the load
    into the first, either of which would keep the value in a register or spill it to the stack (the same bits).
    Only entries stored once and never loaded count as stored. ``load(name, entry)``: the IR lines that load
    ``entry`` as ``name``; ``position``: the operation being written."""

    def __init__(self, fn: trace.Function, early: dict, load):
        self.home = {} if not RELOAD_AFTER or any(op[0] in ("call", "call_unless") for op in fn.ops) else \
            {value: index for value, index in dataflow.stored_once(fn).items() if value in early} \
            | dataflow.loaded_unwritten(fn)
        self.load, self.position = load, 0
        self.seen: dict[int, tuple[str, int]] = {}  # value → (its name now, the operation that last read it)

    def name(self, a: trace.Sym, body: list[str]) -> str:
        """The name to read traced value ``a`` by at ``position``, loading it again into ``body`` if far."""
        if a.id not in self.home:
            return f"%r{a.id}"
        name, last = self.seen.get(a.id, (f"%r{a.id}", a.id))
        if self.position - last > RELOAD_AFTER:
            name = f"%v{a.id}_{self.position}"
            body.extend(self.load(name, self.home[a.id]))
        self.seen[a.id] = (name, self.position)
        return name


def function_ir(fn: trace.Function, prefix: str) -> str:
    """``fn`` as an LLVM function on ``ws`` (values read far from their last read: ``Reloads``)."""
    body = [f"define void @{prefix}{fn.name}(double* noalias nocapture %ws) noinline nounwind {{", "entry:"]
    early = dataflow.early_stores(fn)
    moved = {i for stores in early.values() for i in stores}
    reloads = Reloads(fn, early, lambda name, entry: [
        f"  {name}p = getelementptr inbounds double, double* %ws, i64 {entry}",
        f"  {name} = load volatile double, double* {name}p, align 8"])

    def operand(a) -> str:
        return reloads.name(a, body) if type(a) is trace.Sym else constant(a)

    def store(i: int, op) -> list[str]:
        return [f"  %p{i} = getelementptr inbounds double, double* %ws, i64 {op[1]}",
                f"  store double {operand(op[2])}, double* %p{i}, align 8"]

    for i, (op, keep) in enumerate(zip(fn.ops, fn.live())):
        kind = op[0]
        if kind == "#" or not keep or i in moved:
            continue
        reloads.position = i
        if kind == "store":
            body += store(i, op)
            continue
        _op_ir(body, i, op, operand, prefix)
        for j in early.get(i, ()):
            body += store(j, fn.ops[j])
    body += ["  ret void", "}"]
    return "\n".join(body)


def _op_ir(body: list[str], i: int, op, operand, prefix: str) -> None:
    """Operation i (not a store) as LLVM IR, appended to ``body``."""
    kind = op[0]
    if kind == "load":
        body += [f"  %p{i} = getelementptr inbounds double, double* %ws, i64 {op[1]}",
                 f"  %r{i} = load double, double* %p{i}, align 8"]
    elif kind == "call":
        body.append(f"  call void @{prefix}{op[1]}(double* %ws)")
    elif kind == "call_unless":
        body += [f"  %c{i} = fcmp oeq double {operand(op[1])}, 1.0",
                 f"  br i1 %c{i}, label %after{i}, label %call{i}", f"call{i}:",
                 f"  call void @{prefix}{op[2]}(double* %ws)", f"  br label %after{i}", f"after{i}:"]
    elif kind in _INFIX:
        body.append(f"  %r{i} = {_INFIX[kind]} double {operand(op[1])}, {operand(op[2])}")
    elif kind == "neg":
        body.append(f"  %r{i} = fneg double {operand(op[1])}")
    elif kind == "copy":  # x + (−0) is x for every x, −0 included; LLVM folds it away
        body.append(f"  %r{i} = fadd double {operand(op[1])}, {constant(-0.0)}")
    elif kind == "le":
        body += [f"  %c{i} = fcmp ole double {operand(op[1])}, {operand(op[2])}",
                 f"  %r{i} = uitofp i1 %c{i} to double"]
    elif kind == "select":
        body += [f"  %c{i} = fcmp one double {operand(op[1])}, 0.0",
                 f"  %r{i} = select i1 %c{i}, double {operand(op[2])}, double {operand(op[3])}"]
    elif kind == "atan2":  # libm's, as math.atan2
        body.append(f"  %r{i} = call double @atan2(double {operand(op[1])}, double {operand(op[2])})")
    else:
        body.append(f"  %r{i} = call double @{_INTRINSIC[kind]}(double {operand(op[1])})")


def lanes_ir(lanes: trace.Lanes, prefix: str) -> str:
    """A ``trace.Lanes``: its function's operations on <width x double> vectors where a lane load feeds them,
    on doubles elsewhere (the shared values: multipliers, pivots), a shared value splatted where it meets a
    vector."""
    fn, width = lanes.fn, lanes.width
    vt = f"<{width} x double>"
    vectors: set[int] = set()
    splats: dict[str, str] = {}
    body = [f"define void @{prefix}{lanes.name}(double* noalias nocapture %ws) noinline nounwind {{", "entry:"]

    def scalar(a) -> str:
        return f"%r{a.id}" if trace.is_sym(a) else constant(a)

    def vector(a) -> str:
        if trace.is_sym(a) and a.id in vectors:
            return f"%r{a.id}"
        value = scalar(a)
        if not trace.is_sym(a):
            return "<" + ", ".join([f"double {value}"] * width) + ">"
        if value not in splats:
            n = len(splats)
            body.extend([f"  %one{n} = insertelement {vt} undef, double {value}, i32 0",
                         f"  %splat{n} = shufflevector {vt} %one{n}, {vt} undef, <{width} x i32> zeroinitializer"])
            splats[value] = f"%splat{n}"
        return splats[value]

    def pointer(i: int, index: int, typed: str) -> list[str]:
        return [f"  %p{i} = getelementptr inbounds double, double* %ws, i64 {index}",
                f"  %q{i} = bitcast double* %p{i} to {typed}*"]

    for i, (op, keep) in enumerate(zip(fn.ops, fn.live())):
        kind = op[0]
        if kind == "#" or not keep:
            continue
        if kind == "load" and op[1] in lanes.loads:
            body += pointer(i, lanes.loads[op[1]], vt) + [f"  %r{i} = load {vt}, {vt}* %q{i}, align 8"]
            vectors.add(i)
        elif kind == "load":
            body += [f"  %p{i} = getelementptr inbounds double, double* %ws, i64 {op[1]}",
                     f"  %r{i} = load double, double* %p{i}, align 8"]
        elif kind == "store":
            if op[1] not in lanes.stores:
                raise ValueError(f"{lanes.name}: a store to ws[{op[1]}] outside the lanes")
            value = vector(op[2])
            body += pointer(i, lanes.stores[op[1]], vt) + [f"  store {vt} {value}, {vt}* %q{i}, align 8"]
        elif kind in _INFIX or kind in ("neg", "copy"):
            operands = op[1:]
            if any(trace.is_sym(a) and a.id in vectors for a in operands):
                vectors.add(i)
                args, typed = [vector(a) for a in operands], vt
            else:
                args, typed = [scalar(a) for a in operands], "double"
            if kind == "neg":
                body.append(f"  %r{i} = fneg {typed} {args[0]}")
            elif kind == "copy":
                zero = vector(-0.0) if typed == vt else constant(-0.0)
                body.append(f"  %r{i} = fadd {typed} {args[0]}, {zero}")
            else:
                body.append(f"  %r{i} = {_INFIX[kind]} {typed} {args[0]}, {args[1]}")
        else:
            raise ValueError(f"{lanes.name}: operation {kind} has no lane form")
    body += ["  ret void", "}"]
    return "\n".join(body)


def module_ir(functions: dict, prefix: str, entries: tuple[str, ...] | None = None) -> str:
    """One module: the functions (``trace.Function`` or ``trace.Lanes``), and ``batch_<entry>`` running each entry
    (``entries``; None: those of ``entries_of``) state by state."""
    return module_parts(functions, prefix, entries, parts=1)[0]


def module_parts(functions: dict, prefix: str, entries: tuple[str, ...] | None = None, parts: int = 1,
                 above: int = 0, rare: frozenset = frozenset()) -> list[str]:
    """``module_ir``'s program as ``parts`` modules (``assemble``)."""
    head = [f"declare double @{name}(double)" for name in _INTRINSIC.values()]
    head.append("declare double @atan2(double, double)")
    entries = entries_of(functions) if entries is None else entries
    bodies = {name: lanes_ir(fn, prefix) if isinstance(fn, trace.Lanes) else function_ir(fn, prefix)
              for name, fn in functions.items()}
    return assemble(head, bodies, [batch_ir(prefix, entry) for entry in entries], functions, entries,
                    lambda name: f"declare void @{prefix}{name}(ptr)", parts, above, rare)


def assemble(head: list[str], bodies: dict[str, str], loops: list[str], functions: dict, entries, declare,
             parts: int = 1, above: int = 0, rare: frozenset = frozenset()) -> list[str]:
    """A program's IR (``head`` declarations, the functions' ``bodies`` by name, the batch ``loops`` that call
    ``entries``) as ``parts`` modules of about equal compile weight if it is larger than ``above`` (else one):
    each function in one, the loops in the first, and each module declaring (``declare(name)``) the functions it
    calls in the others (the loader links them). The functions named in ``rare`` then go to one more module,
    last, which ``compile_parts`` compiles quickly."""
    if parts == 1 or sum(map(len, bodies.values())) <= above:
        return ["\n".join(head + list(bodies.values()) + loops)]
    rare = sorted(rare & set(bodies))
    share: list[list[str]] = [[] for _ in range(parts)] + ([rare] if rare else [])
    size = [0] * parts
    weight = {name: _compile_weight(functions[name]) for name in bodies}
    for name in sorted(set(bodies) - set(rare), key=lambda n: (-weight[n], n)):  # the largest first (equals by
        k = size.index(min(size))  # name, so every process makes the same parts), each to the lightest part
        share[k].append(name)
        size[k] += weight[name]
    modules = []
    for k, names in enumerate(share):
        called = {op[1] if op[0] == "call" else op[2] for name in names for op in _ops(functions[name])
                  if op[0] in ("call", "call_unless")} | (set(entries) if k == 0 else set())
        declared = [declare(name) for name in sorted(called - set(names))]
        modules.append("\n".join(head + declared + [bodies[name] for name in names] + (loops if k == 0 else [])))
    return modules


def _compile_weight(fn) -> float:
    """About what ``fn`` costs the code generator: its operations and 2.5 per store, a quarter more for a function
    with a branch (``objects.split_blocks`` leaves it whole). Fitted to 93 functions compiled alone under the fast
    code generator (Talos, the Panda, chains of 24 to 96 joints; benchmarks/results/design_measurements.md): a
    store keeps its value live for the register allocator, while a load is one the allocator may repeat rather
    than spill, and a computation-heavy ``factor`` took twice a load-heavy solve's time per operation."""
    ops = _ops(fn)
    w = fn.count() + 2.5 * sum(op[0] == "store" for op in ops)
    return w * (1.25 if any(op[0] == "call_unless" for op in ops) else 1.0)


def _ops(fn) -> list:
    return fn.fn.ops if isinstance(fn, trace.Lanes) else fn.ops


def compile_module(functions: dict, prefix: str, entries: tuple[str, ...] | None = None,
                   quick: bool = False, rare: frozenset = frozenset()) -> list[bytes]:
    """``module_ir``'s program as object code (``compile_parts``)."""
    return compile_parts(lambda parts, above: module_parts(functions, prefix, entries, parts, above, rare), quick,
                         operation_count(functions))


def operation_count(functions: dict) -> int:
    """A program's operations, by which ``objects.compile_object`` chooses how far to optimize it."""
    return sum(fn.count() for fn in functions.values())


def compile_parts(modules, quick: bool = False, operations: int = 0) -> list[bytes]:
    """A program (``modules(parts, above)``: its IR as ``assemble`` cuts it) as object code: one object, or for a
    big program (``objects.PARALLEL_ABOVE``) one per part, compiled side by side (``objects.compile_objects``);
    ``Loaded`` takes either. Parts beyond the ``parts`` asked for hold a big program's rare functions (the
    certificate's estimate, run on the few calls no bound certifies): they are compiled quickly, LLVM's -O0 code
    generator, the same IEEE operations so the same bits, slower code (benchmarks/results/design_measurements.md).
    ``operations``: the program's (``operation_count``), for ``objects.compile_object``."""
    with trace.collector_paused():
        workers = objects.workers()
        parts = modules(workers, objects.PARALLEL_ABOVE)
        if len(parts) == 1:
            return [compile_object(parts[0], quick, operations)]
        return objects.compile_objects(parts, [quick] * workers + [True] * (len(parts) - workers), operations)


# the checked and the unchecked solve, and (compiled with derivatives) the same followed by the derivatives;
# each has a batch loop "batch_<entry>"
ENTRIES = ("main", "fast")
DERIVATIVE_ENTRIES = ("dmain", "dfast")


def entries_of(functions) -> tuple[str, ...]:
    """The entry points of a module with these functions (names)."""
    return ENTRIES + (DERIVATIVE_ENTRIES if "dmain" in functions else ())


def batch_ir(prefix: str, entry: str, width: int = 1) -> str:
    """``batch_<entry>(ws, inputs, outputs, count, n_in, n_out, out_start)``: for each state, copy its ``n_in``
    inputs into the one workspace ``ws``, run the entry, copy ``n_out`` values from ``ws[out_start:]`` out. One
    workspace per thread stays in cache; a workspace per state would not (Talos: 50 MB per 1,000 states).

    With ``width`` > 1 (``gtdyn.compiled.lanes``), ``batch_<entry>_x<width>`` over ``count`` groups of ``width``
    states through the interleaved lanes of one workspace (value i of lane w at i · width + w), running
    ``<entry>_x<width>``."""
    suffix = f"_x{width}" if width > 1 else ""
    return f"""
define void @{prefix}batch_{entry}{suffix}(ptr noalias %ws, ptr noalias %inputs, ptr noalias %outputs, i64 %groups,
                                            i64 %n_in, i64 %n_out, i64 %out_start) nounwind {{
entry:
  br label %group
group:
  %g = phi i64 [ 0, %entry ], [ %g_next, %written ]
  %more = icmp slt i64 %g, %groups
  br i1 %more, label %read, label %done
read:
  %first = mul i64 %g, {width}
  br label %lane_in
lane_in:
  %w = phi i64 [ 0, %read ], [ %w_next, %lane_in_done ]
  %state = add i64 %first, %w
  %row = mul i64 %state, %n_in
  br label %copy_in
copy_in:
  %k = phi i64 [ 0, %lane_in ], [ %k_next, %copy_in_body ]
  %more_in = icmp slt i64 %k, %n_in
  br i1 %more_in, label %copy_in_body, label %lane_in_done
copy_in_body:
  %src_i = add i64 %row, %k
  %src = getelementptr inbounds double, ptr %inputs, i64 %src_i
  %value_in = load double, ptr %src, align 8
  %slot_in = mul i64 %k, {width}
  %dst_i = add i64 %slot_in, %w
  %dst = getelementptr inbounds double, ptr %ws, i64 %dst_i
  store double %value_in, ptr %dst, align 8
  %k_next = add i64 %k, 1
  br label %copy_in
lane_in_done:
  %w_next = add i64 %w, 1
  %lanes_left = icmp slt i64 %w_next, {width}
  br i1 %lanes_left, label %lane_in, label %run
run:
  call void @{prefix}{entry}{suffix}(ptr %ws)
  br label %lane_out
lane_out:
  %v = phi i64 [ 0, %run ], [ %v_next, %lane_out_done ]
  %state_out = add i64 %first, %v
  %row_out = mul i64 %state_out, %n_out
  br label %copy_out
copy_out:
  %m = phi i64 [ 0, %lane_out ], [ %m_next, %copy_out_body ]
  %more_out = icmp slt i64 %m, %n_out
  br i1 %more_out, label %copy_out_body, label %lane_out_done
copy_out_body:
  %index = add i64 %out_start, %m
  %slot_out = mul i64 %index, {width}
  %from_i = add i64 %slot_out, %v
  %from = getelementptr inbounds double, ptr %ws, i64 %from_i
  %value_out = load double, ptr %from, align 8
  %to_i = add i64 %row_out, %m
  %to = getelementptr inbounds double, ptr %outputs, i64 %to_i
  store double %value_out, ptr %to, align 8
  %m_next = add i64 %m, 1
  br label %copy_out
lane_out_done:
  %v_next = add i64 %v, 1
  %lanes_out_left = icmp slt i64 %v_next, {width}
  br i1 %lanes_out_left, label %lane_out, label %written
written:
  %g_next = add i64 %g, 1
  br label %group
done:
  ret void
}}"""


class Loaded:
    """Object code (one object file, or a program's parts: ``compile_module``) loaded into this process:
    ``entry[name](ws)`` and ``batch[name](ws, inputs, outputs, count,
    n_in, n_out, out_start)`` for each of ``entries``, as ctypes functions (which release the GIL while they
    run); arguments are addresses of float64 arrays and integers. ``suffix``: the entries' names end with it (a
    lane module's ``main_x4``, ``batch_main_x4``); ``extra``: more functions whose addresses ``extra`` holds."""

    def __init__(self, obj: bytes | list[bytes], prefix: str, entries: tuple[str, ...] = ENTRIES, extra: list[str] = (),
                 suffix: str = ""):
        binding = llvm()
        with llvm_lock:
            self._engine = binding.create_mcjit_compiler(binding.parse_assembly(""), target_machine())
            for part in [obj] if isinstance(obj, bytes) else obj:  # a program compiled in parts: linked here
                self._engine.add_object_file(binding.ObjectFileRef.from_data(part))
            self._engine.finalize_object()
            addresses = {name: self._engine.get_function_address(prefix + name + suffix)
                         for entry in entries for name in (entry, f"batch_{entry}")}
            self.extra = {name: self._engine.get_function_address(prefix + name) for name in extra}
        if not all(addresses.values()) or not all(self.extra.values()):
            raise RuntimeError("gtdyn.compiled: the object code does not define its entry points")
        self._prefix = prefix
        self.address = {e: addresses[e] for e in entries}  # for gtdyn.compiled.entry
        self.entry = {e: ctypes.CFUNCTYPE(None, ctypes.c_void_p)(addresses[e]) for e in entries}
        batch_type = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, *[ctypes.c_int64] * 4)
        self.batch = {e: batch_type(addresses[f"batch_{e}"]) for e in entries}

    def function(self, name: str):
        """Any generated function ``name(ws)`` of the object code, as a ctypes function."""
        with llvm_lock:
            address = self._engine.get_function_address(self._prefix + name)
        if not address:
            raise RuntimeError(f"gtdyn.compiled: the object code does not define {name}")
        return ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)
