"""Time loops in native code (issue 24, item 2): the explicit integrators of ``integrators.py`` — Euler,
semi-implicit Euler, RK4 — on a fixed-base tree with torques held over each step (a vector or one row per step),
written in LLVM IR around the compiled forward solver's own entry, sample by sample into the run's arrays.

The same IEEE operations in the same order as the numpy steps (``dt / 2 * r1``, ``((r1 + 2 r2) + 2 r3) + r4``),
so the trajectories are bit for bit those of the Python loop. A loop is generated per (joints, method), compiled
once per process. An evaluation whose certificate does not pass (status ≠ 1) stops the loop before that step:
the caller takes the step through the Python stepper, which asks the reference path (answers, warns or raises as
always), and resumes.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from gtdyn.compiled import native

METHODS = ("euler", "semi_implicit_euler", "rk4")
# the plan the loop reads (int64 words): workspace, solver entry, status index, answer index, first and end step,
# Δt's bits, the Q, V, QDD, TAU rows, the torque rows and their count, the state (x then y, read and written back)
_FIELDS = ("ws", "run", "status", "out", "first", "end", "dt", "Q", "V", "QDD", "TAU", "torques", "rows", "state")
_lock = threading.Lock()
_loops: dict = {}


def _loop_ir(n: int, method: str) -> str:
    """``rollout(plan) -> i64``: steps first … end−1; returns end, or the step whose evaluation did not pass."""
    body: list[str] = []
    emit = body.append
    field = {name: i for i, name in enumerate(_FIELDS)}
    emit("define i64 @rollout(ptr %plan) {")
    emit("entry:")
    for name in _FIELDS:
        emit(f"  %{name}_at = getelementptr i64, ptr %plan, i64 {field[name]}")
        emit(f"  %{name}_word = load i64, ptr %{name}_at")
    for name in ("ws", "run", "Q", "V", "QDD", "TAU", "torques", "state"):
        emit(f"  %{name} = inttoptr i64 %{name}_word to ptr")
    emit("  %dt = bitcast i64 %dt_word to double")
    emit("  %half_dt = fmul double %dt, 0.5")  # dt / 2 and dt / 6 as Python computes them (x / 2 is exact)
    emit("  %sixth_dt = fdiv double %dt, 6.0")
    emit("  %last_row = sub i64 %rows_word, 1")
    for i in range(n):
        emit(f"  %state_x{i} = getelementptr double, ptr %state, i64 {i}")
        emit(f"  %x0_{i} = load double, ptr %state_x{i}")
        emit(f"  %state_y{i} = getelementptr double, ptr %state, i64 {n + i}")
        emit(f"  %y0_{i} = load double, ptr %state_y{i}")
    emit("  br label %head")
    emit("head:")
    emit("  %k = phi i64 [ %first_word, %entry ], [ %k_next, %tail ]")
    for i in range(n):
        emit(f"  %x{i} = phi double [ %x0_{i}, %entry ], [ %xn{i}, %tail ]")
        emit(f"  %y{i} = phi double [ %y0_{i}, %entry ], [ %yn{i}, %tail ]")
    emit("  %more = icmp slt i64 %k, %end_word")
    emit("  br i1 %more, label %step, label %exit")
    emit("step:")
    emit(f"  %row = mul i64 %k, {n}")
    emit("  %past = icmp sgt i64 %k, %last_row")
    emit("  %torque_row = select i1 %past, i64 %last_row, i64 %k")
    emit(f"  %torque_first = mul i64 %torque_row, {n}")
    for i in range(n):
        for array, value in (("Q", f"%x{i}"), ("V", f"%y{i}")):
            emit(f"  %{array}i{i} = add i64 %row, {i}")
            emit(f"  %{array}p{i} = getelementptr double, ptr %{array}, i64 %{array}i{i}")
            emit(f"  store double {value}, ptr %{array}p{i}")
        emit(f"  %ti{i} = add i64 %torque_first, {i}")
        emit(f"  %tp{i} = getelementptr double, ptr %torques, i64 %ti{i}")
        emit(f"  %tau{i} = load double, ptr %tp{i}")
        emit(f"  %TAUp{i} = getelementptr double, ptr %TAU, i64 %Qi{i}")
        emit(f"  store double %tau{i}, ptr %TAUp{i}")
    count = [0]

    def accel(xs: list[str], ys: list[str]) -> list[str]:
        """Store (x, y, τ) into the workspace, run the solver, leave for %exit unless its status is 1."""
        count[0] += 1
        c = count[0]
        for i in range(n):
            for offset, value in ((i, xs[i]), (n + i, ys[i]), (2 * n + i, f"%tau{i}")):
                emit(f"  %w{c}_{offset} = getelementptr double, ptr %ws, i64 {offset}")
                emit(f"  store double {value}, ptr %w{c}_{offset}")
        emit("  call void %run(ptr %ws)")
        emit(f"  %sp{c} = getelementptr double, ptr %ws, i64 %status_word")
        emit(f"  %s{c} = load double, ptr %sp{c}")
        emit(f"  %ok{c} = fcmp oeq double %s{c}, 1.0")
        emit(f"  br i1 %ok{c}, label %passed{c}, label %exit")
        emit(f"passed{c}:")
        out = []
        for i in range(n):
            emit(f"  %ai{c}_{i} = add i64 %out_word, {i}")
            emit(f"  %ap{c}_{i} = getelementptr double, ptr %ws, i64 %ai{c}_{i}")
            emit(f"  %a{c}_{i} = load double, ptr %ap{c}_{i}")
            out.append(f"%a{c}_{i}")
        return out

    def combine(name: str, base: list[str], scale: str, terms: list[str]) -> list[str]:
        """base + scale · terms, elementwise, as ``base + scale * terms`` in numpy."""
        result = []
        for i in range(n):
            emit(f"  %{name}m{i} = fmul double {scale}, {terms[i]}")
            emit(f"  %{name}{i} = fadd double {base[i]}, %{name}m{i}")
            result.append(f"%{name}{i}")
        return result

    x, y = [f"%x{i}" for i in range(n)], [f"%y{i}" for i in range(n)]
    a1 = accel(x, y)
    for i in range(n):
        emit(f"  %QDDp{i} = getelementptr double, ptr %QDD, i64 %Qi{i}")
        emit(f"  store double {a1[i]}, ptr %QDDp{i}")
    if method == "euler":
        xn, yn = combine("ex", x, "%dt", y), combine("ey", y, "%dt", a1)
    elif method == "semi_implicit_euler":
        yn = combine("sy", y, "%dt", a1)
        xn = combine("sx", x, "%dt", yn)
    else:  # rk4, ẋ = y
        x2, y2 = combine("x2_", x, "%half_dt", y), combine("y2_", y, "%half_dt", a1)
        a2 = accel(x2, y2)
        x3, y3 = combine("x3_", x, "%half_dt", y2), combine("y3_", y, "%half_dt", a2)
        a3 = accel(x3, y3)
        x4, y4 = combine("x4_", x, "%dt", y3), combine("y4_", y, "%dt", a3)
        a4 = accel(x4, y4)

        def weighted(name, r1, r2, r3, r4):
            out = []
            for i in range(n):
                emit(f"  %{name}b{i} = fmul double 2.0, {r2[i]}")
                emit(f"  %{name}c{i} = fadd double {r1[i]}, %{name}b{i}")
                emit(f"  %{name}d{i} = fmul double 2.0, {r3[i]}")
                emit(f"  %{name}e{i} = fadd double %{name}c{i}, %{name}d{i}")
                emit(f"  %{name}f{i} = fadd double %{name}e{i}, {r4[i]}")
                out.append(f"%{name}f{i}")
            return out

        xn = combine("rx", x, "%sixth_dt", weighted("wx", y, y2, y3, y4))
        yn = combine("ry", y, "%sixth_dt", weighted("wy", a1, a2, a3, a4))
    for i in range(n):
        emit(f"  %xn{i} = fadd double {xn[i]}, -0.0")  # named for the phis: x + (−0) is x
        emit(f"  %yn{i} = fadd double {yn[i]}, -0.0")
    emit("  br label %tail")
    emit("tail:")
    emit("  %k_next = add i64 %k, 1")
    emit("  br label %head")
    emit("exit:")  # the end, or a step that did not pass: its start state back, and k
    for i in range(n):
        emit(f"  store double %x{i}, ptr %state_x{i}")
        emit(f"  store double %y{i}, ptr %state_y{i}")
    emit("  ret i64 %k")
    emit("}")
    return "\n".join(body)


def _rollout(n: int, method: str):
    """The compiled loop for n joints and ``method`` (kept for the process's life, with its code)."""
    with _lock:
        if (n, method) not in _loops:
            loaded = native.Loaded(native.compile_object(_loop_ir(n, method)), "", entries=(), extra=["rollout"])
            function = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p)(loaded.extra["rollout"])
            _loops[n, method] = (loaded, function)
        return _loops[n, method][1]


def run(solver, method: str, dt: float, torque_rows: np.ndarray, samples, state: np.ndarray, first: int,
        end: int) -> int:
    """Steps ``first`` … ``end``−1 in native code, from ``state`` (x then y, written back); returns ``end``, or the
    step whose evaluation did not pass (its sample row holds its q and q̇; the state is its start)."""
    n = solver.robot.num_dofs
    plan = np.array([solver._ws.ctypes.data, solver._native.address[solver._entry], solver._status, solver._out,
                     first, end, np.float64(dt).view(np.int64), samples.q.ctypes.data, samples.v.ctypes.data,
                     samples.qdd.ctypes.data, samples.tau.ctypes.data, torque_rows.ctypes.data, len(torque_rows),
                     state.ctypes.data], dtype=np.int64)
    return int(_rollout(n, method)(plan.ctypes.data))


CHUNK = 4096  # steps between progress reports


def applies(robot, method: str, torque, forward) -> bool:
    """Whether a run can loop natively: a fixed-base tree, an explicit method of ``METHODS``, held torques (not a
    controller), and the plain compiled solver (no wrenches or contacts around it) of this thread."""
    from threading import get_ident

    from gtdyn.compiled.solver import CompiledSolver

    return (not robot.floating_base and not robot.loop_joints and method in METHODS
            and getattr(torque, "rows", None) is not None and type(forward) is CompiledSolver
            and not forward.wrench_frames and forward._owner == get_ident())


def run_loop(stepper, samples, report, solver, method: str, dt: float, torque) -> None:
    """``simulate``'s time loop in native code, chunk by chunk; a step whose evaluation does not pass goes through
    ``stepper`` (the Python path: the reference path answers, warns or raises), and the loop resumes after it."""
    steps = len(samples.t) - 1
    rows = np.ascontiguousarray(torque.rows, dtype=float)
    state = np.concatenate([stepper.x, stepper.y]).astype(float)
    n = len(stepper.x)
    k = 0
    while k < steps:
        end = min(k + CHUNK, steps)
        k = run(solver, method, dt, rows, samples, state, k, end)
        if k < end:  # the Python step, from the state the loop stopped at
            stepper.x, stepper.y = state[:n].copy(), state[n:].copy()
            stepper.record(k, samples.t[k], samples)
            stepper.advance(k, samples.t[k])
            state = np.concatenate([stepper.x, stepper.y]).astype(float)
            k += 1
        report.at(k)
    stepper.x, stepper.y = state[:n].copy(), state[n:].copy()
    stepper.record(steps, samples.t[steps], samples)
    report.at(steps)
