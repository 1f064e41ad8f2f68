"""Machine code for the generated functions, through llvmlite (numba's own LLVM binding, a PyPI wheel; no
compiler on the user's machine).

Each operation becomes one LLVM instruction on doubles — no fast-math, so the arithmetic is exactly the IEEE
arithmetic the Python rendering describes. Why not numba: its type inference and lowering grow faster than
linearly with function size, LLVM alone does not (benchmarks/results/design_measurements.md,
``python -m benchmarks.engine_compile_time``). The object code is what the on-disk cache keeps.
"""

from __future__ import annotations

import ctypes
import re
import struct
import threading

from gtdyn.compiled import trace

_INFIX = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv"}
_INTRINSIC = {"sin": "llvm.sin.f64", "cos": "llvm.cos.f64", "sqrt": "llvm.sqrt.f64", "abs": "llvm.fabs.f64"}
_lock = threading.RLock()
_llvm = None
# LLVM's post-register-allocation list scheduler took half of the code generator's time on generated dynamics
# (huge straight-line blocks) and bought nothing measurable on out-of-order CPUs: compile 20–30 % faster, calls
# as fast (benchmarks/results/design_measurements.md, ``python -m benchmarks.codegen_options``). LLVM has no
# per-function switch for it, so it is an option of the process's LLVM, set once, when gtdyn first loads it.
CODEGEN_OPTIONS: tuple[str, ...] = ("-post-RA-scheduler=false",)
# LLVM's optimization pipeline before the code generator, as its -O level: -O1 compiles 10–25 % faster than -O2
# and its code is as fast (the traced code is already folded and free of common subexpressions;
# benchmarks/results/design_measurements.md, ``python -m benchmarks.codegen_options``)
PIPELINE_SPEED_LEVEL = 1


def llvm():
    """llvmlite.binding, initialised once (imported only when a solver is compiled or loaded)."""
    global _llvm
    with _lock:
        if _llvm is None:
            import llvmlite.binding as binding

            binding.initialize_native_target()
            binding.initialize_native_asmprinter()
            for option in CODEGEN_OPTIONS:
                binding.set_option("gtdyn", option)
            _llvm = binding
    return _llvm


def target_id() -> str:
    """The host CPU this machine code is for: part of the cache key."""
    binding = llvm()
    return f"{binding.get_process_triple()}|{binding.get_host_cpu_name()}|{binding.get_host_cpu_features().flatten()}"


def constant(x: float) -> str:
    """A double as LLVM IR writes it exactly: its bits in hex."""
    return f"0x{struct.unpack('<Q', struct.pack('<d', float(x)))[0]:016X}"


def function_ir(fn: trace.Function, prefix: str) -> str:
    def operand(a) -> str:
        return f"%r{a.id}" if trace.is_sym(a) else constant(a)

    body = [f"define void @{prefix}{fn.name}(double* noalias nocapture %ws) noinline nounwind {{", "entry:"]
    early = trace.early_stores(fn)
    moved = {i for stores in early.values() for i in stores}

    def store(i: int, op) -> list[str]:
        return [f"  %p{i} = getelementptr inbounds double, double* %ws, i64 {op[1]}",
                f"  store double {operand(op[2])}, double* %p{i}, align 8"]

    for i, (op, keep) in enumerate(zip(fn.ops, fn.live())):
        kind = op[0]
        if kind == "#" or not keep or i in moved:
            continue
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
    head = [f"declare double @{name}(double)" for name in _INTRINSIC.values()]
    head.append("declare double @atan2(double, double)")
    loops = [batch_ir(prefix, entry) for entry in (entries_of(functions) if entries is None else entries)]
    bodies = [lanes_ir(fn, prefix) if isinstance(fn, trace.Lanes) else function_ir(fn, prefix)
              for fn in functions.values()]
    return "\n".join(head + bodies + loops)


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


def compile_object(ir: str, quick: bool = False) -> bytes:
    """LLVM IR text → relocatable object code for this machine (-O1 pipeline, ``PIPELINE_SPEED_LEVEL``; IEEE
    arithmetic).

    Optimised functions of over ``SPLIT_ABOVE`` instructions are cut into blocks of ``BLOCK`` before the code
    generator sees them: its instruction scheduling grows faster than linearly with the size of a basic block,
    and a whole robot is one block. Blocks cost a few per cent of the code's speed (the trade-off measured in
    benchmarks/results/design_measurements.md).

    ``quick``: no optimization pipeline and LLVM's -O0 code generator (fast instruction selection and register
    allocation): several times faster to compile, the same IEEE operations so the same bits, slower code
    (benchmarks/results/quick_compile.md).

    Each call parses into an LLVM context of its own, which goes with it: a process that compiles many solvers
    does not keep every module's types and constants. (Threads would not compile side by side: llvmlite
    serialises its calls into LLVM with a lock of its own; measured.)"""
    binding = llvm()
    context = binding.create_context()
    module = binding.parse_assembly(ir, context=context)
    module.verify()
    if quick:
        return target_machine(codegen_level=0).emit_object(module)
    machine = target_machine()
    builder = binding.create_pass_builder(machine,
                                          binding.create_pipeline_tuning_options(speed_level=PIPELINE_SPEED_LEVEL))
    builder.getModulePassManager().run(module, builder)
    module = binding.parse_assembly(split_blocks(str(module), BLOCK), context=context)
    module.verify()
    return machine.emit_object(module)


BLOCK = 1000
SPLIT_ABOVE = 20_000  # smaller functions compile fast whole, and whole their code is a few per cent faster
_STRAIGHT_LINE = re.compile(r"^define void @\S+\((ptr|double\*) .*%ws\)")
_LABEL = re.compile(r"^[\w.$-]+:")


def split_blocks(ir: str, every: int) -> str:
    """``ir`` with each straight-line function (one block, one argument ``%ws``) cut every ``every``
    instructions by a branch the code generator cannot merge away: ``%ws`` is never null, so the early
    return is never taken, but only the caller knows that."""
    out: list[str] = []
    body: list[str] | None = None
    pointer = ""
    for line in ir.split("\n"):
        if body is None:
            match = _STRAIGHT_LINE.match(line)
            if match:
                body, pointer = [], match.group(1)
            out.append(line)
            continue
        if line != "}":
            body.append(line)
            continue
        straight = sum(bool(_LABEL.match(b)) for b in body) <= 1 and not any(b.lstrip().startswith("br ") for b in body)
        if not straight or len(body) <= SPLIT_ABOVE:
            out += body  # left whole: a loop, or small enough to schedule as one block
        else:
            count = 0
            for b in body:
                is_instruction = b.startswith("  ") and not b.lstrip().startswith(";")
                if is_instruction and count and count % every == 0:
                    cut = count // every
                    out += [f"  %cut{cut} = icmp eq {pointer} %ws, null",
                            f"  br i1 %cut{cut}, label %never{cut}, label %block{cut}",
                            f"never{cut}:", "  ret void", f"block{cut}:"]
                count += is_instruction
                out.append(b)
        out.append(line)
        body = None
    return "\n".join(out)


def target_machine(codegen_level: int = 2):
    binding = llvm()
    target = binding.Target.from_triple(binding.get_process_triple())
    return target.create_target_machine(cpu=binding.get_host_cpu_name(),
                                        features=binding.get_host_cpu_features().flatten(), opt=codegen_level)


class Loaded:
    """Object code loaded into this process: ``entry[name](ws)`` and ``batch[name](ws, inputs, outputs, count,
    n_in, n_out, out_start)`` for each of ``entries``, as ctypes functions (which release the GIL while they
    run); arguments are addresses of float64 arrays and integers. ``suffix``: the entries' names end with it (a
    lane module's ``main_x4``, ``batch_main_x4``); ``extra``: more functions whose addresses ``extra`` holds."""

    def __init__(self, obj: bytes, prefix: str, entries: tuple[str, ...] = ENTRIES, extra: list[str] = (),
                 suffix: str = ""):
        binding = llvm()
        with _lock:
            self._engine = binding.create_mcjit_compiler(binding.parse_assembly(""), target_machine())
            self._engine.add_object_file(binding.ObjectFileRef.from_data(obj))
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
        with _lock:
            address = self._engine.get_function_address(self._prefix + name)
        if not address:
            raise RuntimeError(f"gtdyn.compiled: the object code does not define {name}")
        return ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)
