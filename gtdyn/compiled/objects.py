"""LLVM IR text → object code for this machine, through llvmlite (numba's own LLVM binding, a PyPI wheel).

llvmlite serialises every call into LLVM within a process, so threads cannot compile side by side. A big module
is compiled in parts instead: the first in this process, the others at the same time in worker processes
(``compile_objects``), whose object files the loader links (``gtdyn.compiled.native.Loaded``). This file imports
nothing from gtdyn, so a worker runs it by path (``serve``) without loading the package.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import re
import subprocess
import sys
import threading

llvm_lock = threading.RLock()  # llvmlite is not thread-safe where it builds engines: ours take this too
_llvm = None
LOG = logging.getLogger("gtdyn")
# LLVM's post-register-allocation list scheduler took half of the code generator's time on generated dynamics
# (huge straight-line blocks) and bought nothing measurable on out-of-order CPUs: compile 20–30 % faster, calls
# as fast (benchmarks/results/design_measurements.md, ``python -m benchmarks.codegen_options``). LLVM has no
# per-function switch for it, so it is an option of the process's LLVM, set once, when gtdyn first loads it.
CODEGEN_OPTIONS: tuple[str, ...] = ("-post-RA-scheduler=false",)
# LLVM's optimization pipeline before the code generator, as its -O level: -O1 compiles 10–25 % faster than -O2
# and its code is as fast (the traced code is already folded and free of common subexpressions;
# benchmarks/results/design_measurements.md, ``python -m benchmarks.codegen_options``)
PIPELINE_SPEED_LEVEL = 1
# A program of more operations than this skips that pipeline (the code generator still optimizes): on Talos's
# forward dynamics and the 48-joint chain it took 40-45 % of LLVM's time and bought 0-2 % of the code's speed;
# on Talos's inverse dynamics (35,000 operations, a quicker compile) it buys about 2 %
# (benchmarks/results/design_measurements.md)
PIPELINE_BELOW = 60_000
# A program of more operations than this (Talos-sized and up) goes through LLVM's fast instruction selector and
# skips its pre-register-allocation machine scheduler: on Talos and a 96-joint chain its compile took a quarter
# less time and its calls ran as fast; the PUMA's ran 5-12 % slower, so smaller programs keep both
# (benchmarks/results/design_measurements.md). LLVM takes them as options of the process, so each compile sets them.
FAST_CODEGEN_ABOVE = 30_000
BLOCK = 1000
SPLIT_ABOVE = 5_000  # smaller functions compile fast whole; above it, blocks compile 2-3x faster and run as
# fast (benchmarks/results/design_measurements.md)
# A program of more IR text than this (a Talos-sized robot's) is compiled in parts on ``workers()`` processes.
# Smaller ones gain less on an idle machine, and on a busy one (a test suite on every core) a worker only adds
# processes (benchmarks/results/design_measurements.md)
PARALLEL_ABOVE = 2_000_000


def llvm():
    """llvmlite.binding, initialised once (imported only when a solver is compiled or loaded)."""
    global _llvm
    with llvm_lock:
        if _llvm is None:
            import llvmlite.binding as binding

            binding.initialize_native_target()
            binding.initialize_native_asmprinter()
            for option in CODEGEN_OPTIONS:
                binding.set_option("gtdyn", option)
            _llvm = binding
    return _llvm


def target_machine(codegen_level: int = 2):
    binding = llvm()
    target = binding.Target.from_triple(binding.get_process_triple())
    return target.create_target_machine(cpu=binding.get_host_cpu_name(),
                                        features=binding.get_host_cpu_features().flatten(), opt=codegen_level)


def compile_object(ir: str, quick: bool = False, operations: int = 0) -> bytes:
    """LLVM IR text → relocatable object code for this machine (-O1 pipeline, ``PIPELINE_SPEED_LEVEL``; IEEE
    arithmetic). ``operations``: the whole program's (``ir`` may be one part of it), which chooses how much is
    optimized: no pipeline from ``PIPELINE_BELOW``, the fast code generator above ``FAST_CODEGEN_ABOVE``; the
    same IEEE operations either way, so the same bits.

    Optimised functions of over ``SPLIT_ABOVE`` instructions are cut into blocks of ``BLOCK`` before the code
    generator sees them: its instruction scheduling grows faster than linearly with the size of a basic block,
    and a whole robot is one block. Blocks cost a few per cent of the code's speed (the trade-off measured in
    benchmarks/results/design_measurements.md).

    ``quick``: no optimization pipeline and LLVM's -O0 code generator (fast instruction selection and register
    allocation): several times faster to compile, the same IEEE operations so the same bits, slower code
    (benchmarks/results/quick_compile.md).

    Each call parses into an LLVM context of its own, which goes with it: a process that compiles many solvers
    does not keep every module's types and constants."""
    binding = llvm()
    context = binding.create_context()
    if quick:
        return _emit(target_machine(codegen_level=0), _parsed(binding, ir, context), fast=True)
    machine = target_machine()
    if operations < PIPELINE_BELOW:
        module = _parsed(binding, ir, context)
        tuning = binding.create_pipeline_tuning_options(speed_level=PIPELINE_SPEED_LEVEL)
        builder = binding.create_pass_builder(machine, tuning)
        builder.getModulePassManager().run(module, builder)
        ir = str(module)  # cut after the pipeline, which would otherwise optimize across the cuts (slower)
    return _emit(machine, _parsed(binding, split_blocks(ir, BLOCK), context), fast=operations > FAST_CODEGEN_ABOVE)


def _parsed(binding, ir: str, context):
    """``ir`` parsed and verified: a module of LLVM's own, or an error naming what is malformed."""
    module = binding.parse_assembly(ir, context=context)
    module.verify()
    return module


_codegen_lock = threading.Lock()


def _emit(machine, module, fast: bool) -> bytes:
    """The object code of ``module``, with LLVM's fast instruction selector and no machine scheduler if ``fast``
    (``FAST_CODEGEN_ABOVE``; -O0 selects fast by default, and ``-fast-isel=false`` would undo that). The process's
    LLVM is left as it optimizes by default, since other users of llvmlite (numba) share it."""
    with _codegen_lock:  # the options are the process's: another thread's compile must not change them meanwhile
        _fast_codegen(fast)
        try:
            return machine.emit_object(module)
        finally:
            _fast_codegen(False)


def _fast_codegen(fast: bool) -> None:
    _llvm.set_option("gtdyn", f"-fast-isel={str(fast).lower()}")
    _llvm.set_option("gtdyn", f"-enable-misched={str(not fast).lower()}")


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


def workers() -> int:
    """Processes a module may be compiled on: this machine's cores available to this process, at most 2."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        cores = os.cpu_count() or 1
    return max(1, min(cores, 2))


def compile_objects(parts: list[str], quick: list[bool], operations: int = 0) -> list[bytes]:
    """The object code of each module in ``parts`` (IR text; together one program, each declaring what it calls
    in the others; ``quick``: each one's ``compile_object`` flag; ``operations``: the program's): the first compiled
    in this process, the others meanwhile in worker processes. A worker that fails leaves its part to this process
    (the same code, later)."""
    results: dict[int, bytes | None] = {}

    def in_worker(k: int) -> None:
        results[k] = in_worker_process(parts[k], quick[k], operations)

    threads = [threading.Thread(target=in_worker, args=(k,), daemon=True) for k in range(1, len(parts))]
    for thread in threads:
        thread.start()
    first = compile_object(parts[0], quick[0], operations)
    for thread in threads:
        thread.join()
    return [first] + [results[k] if results.get(k) else compile_object(parts[k], quick[k], operations)
                      for k in range(1, len(parts))]


_WORKERS: set[subprocess.Popen] = set()  # running, so that a process that exits stops them (``_stop_workers``)
_EXITING = False
_WORKERS_LOCK = threading.Lock()


def run_worker(command: list[str], payload: bytes, env: dict | None = None) -> tuple[int, bytes, bytes]:
    """Run ``command`` with ``payload`` on its standard input: (exit code, standard output, standard error). The
    process is stopped if this one exits first (``_stop_workers``); OSError if it cannot start."""
    with _WORKERS_LOCK:  # started and tracked at once: a stop at exit sees it, or it does not start
        if _EXITING:
            raise OSError("the process is exiting")
        worker = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=env)
        _WORKERS.add(worker)
    try:
        out, err = worker.communicate(payload, timeout=3600)
    except subprocess.TimeoutExpired:
        worker.kill()
        out, err = worker.communicate()
    finally:
        with _WORKERS_LOCK:
            _WORKERS.discard(worker)
    return worker.returncode, out, err


def in_worker_process(ir: str, quick: bool, operations: int = 0) -> bytes | None:
    """``compile_object(ir, quick, operations)`` run in a worker process (``serve``); None, with the reason logged,
    if it failed."""
    header = json.dumps({"options": list(CODEGEN_OPTIONS), "level": PIPELINE_SPEED_LEVEL, "block": BLOCK,
                         "split_above": SPLIT_ABOVE, "pipeline_below": PIPELINE_BELOW,
                         "fast_above": FAST_CODEGEN_ABOVE, "quick": quick, "operations": operations})
    try:
        code, out, err = run_worker([sys.executable, "-I", "-c", _BOOT, __file__], (header + "\n" + ir).encode())
    except OSError as error:
        LOG.info("gtdyn.compiled: no compile worker (%s); compiling its part here", error)
        return None
    if code == 0 and out:
        return out
    LOG.info("gtdyn.compiled: a compile worker failed (%s); compiling its part here",
             err.decode(errors="replace").strip().splitlines()[-1:] or code)
    return None


def exiting() -> bool:
    """Whether this process has begun to exit (its workers are stopped: start no compile here)."""
    return _EXITING


@atexit.register
def _stop_workers() -> None:
    """A process that exits stops its compile workers: a background compile's result would have no one to use it."""
    global _EXITING
    with _WORKERS_LOCK:
        _EXITING = True
        for worker in _WORKERS:
            worker.kill()


# a worker: this file run by path (no gtdyn import), ``serve`` called
_BOOT = "import runpy, sys; runpy.run_path(sys.argv[1])['serve']()"


def serve() -> None:
    """A worker's work: a line of settings (JSON) and a module's IR text on standard input, its object code on
    standard output."""
    global CODEGEN_OPTIONS, PIPELINE_SPEED_LEVEL, BLOCK, SPLIT_ABOVE, PIPELINE_BELOW, FAST_CODEGEN_ABOVE
    header, ir = sys.stdin.buffer.read().decode().split("\n", 1)
    settings = json.loads(header)
    CODEGEN_OPTIONS, PIPELINE_SPEED_LEVEL = tuple(settings["options"]), settings["level"]
    BLOCK, SPLIT_ABOVE = settings["block"], settings["split_above"]
    PIPELINE_BELOW, FAST_CODEGEN_ABOVE = settings["pipeline_below"], settings["fast_above"]
    sys.stdout.buffer.write(compile_object(ir, settings["quick"], settings["operations"]))
    sys.stdout.buffer.flush()
