"""Why gtdyn.compile lowers its traced code with llvmlite and not numba: compile time of straight-line
double arithmetic of N statements (random dependencies, as in generated dynamics code).

    python -m benchmarks.engine_compile_time [N ...]      (default 2000 8000 30000; numba only if installed)

numba is timed on a jitted Python function of N assignments; llvmlite on LLVM IR of the same N operations at
-O2 (gtdyn's setting) and -O0. Each measurement runs in a fresh process, so nothing is cached.
"""

from __future__ import annotations

import subprocess
import sys

NUMBA = '''
import random, time, numpy as np
N = {n}
random.seed(0)
lines, names = ["def f(x, out):"], [f"x[{{i}}]" for i in range(20)]
for i in range(N):
    a, b = random.choice(names), random.choice(names)
    lines.append(f"    t{{i}} = {{a}} {{random.choice('+-*')}} {{b}}")
    names.append(f"t{{i}}")
    if len(names) > 200:
        names.pop(20)
lines.append(f"    out[0] = t{{N - 1}}")
import numba
ns = {{}}
exec("\\n".join(lines), ns)
start = time.perf_counter()
numba.njit(ns["f"])(np.random.rand(20), np.zeros(1))
print(time.perf_counter() - start)
'''

LLVM = '''
import random, time
import llvmlite.binding as llvm
llvm.initialize_native_target(); llvm.initialize_native_asmprinter()
N, opt = {n}, {opt}
random.seed(0)
lines = ["define void @f(double* noalias %x, double* noalias %out) {{", "entry:"]
for i in range(20):
    lines += [f"  %p{{i}} = getelementptr double, double* %x, i64 {{i}}", f"  %x{{i}} = load double, double* %p{{i}}"]
names = [f"%x{{i}}" for i in range(20)]
for i in range(N):
    a, b = random.choice(names), random.choice(names)
    lines.append(f"  %t{{i}} = {{random.choice(['fadd', 'fsub', 'fmul'])}} double {{a}}, {{b}}")
    names.append(f"%t{{i}}")
    if len(names) > 200:
        names.pop(20)
lines += [f"  store double %t{{N - 1}}, double* %out", "  ret void", "}}"]
start = time.perf_counter()
module = llvm.parse_assembly("\\n".join(lines))
machine = llvm.Target.from_default_triple().create_target_machine(opt=opt)
builder = llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options(speed_level=opt))
builder.getModulePassManager().run(module, builder)
machine.emit_object(module)
print(time.perf_counter() - start)
'''


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return f"{float(done.stdout):.2f} s" if done.returncode == 0 else "n/a"


def main(argv: list[str]) -> None:
    sizes = [int(a) for a in argv] or [2000, 8000, 30000]
    print("| statements | numba njit | llvmlite -O2 | llvmlite -O0 |\n|---|---|---|---|")
    for n in sizes:
        numba = _run(NUMBA.format(n=n)) if n <= 8000 else "(not run)"
        print(f"| {n} | {numba} | {_run(LLVM.format(n=n, opt=2))} | {_run(LLVM.format(n=n, opt=0))} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
