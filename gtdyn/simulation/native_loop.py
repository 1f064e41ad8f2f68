"""Time loops in native code (issue 24, item 2): the explicit integrators of ``integrators.py`` — Euler,
semi-implicit Euler, RK4 — on a fixed-base tree with torques held over each step (a vector or one row per step)
or from a ``gtdyn.PDController`` (evaluated at every stage, as the Python stepper asks a controller), written in
LLVM IR around the compiled forward solver's own entry, sample by sample into the run's arrays.

The same IEEE operations in the same order as the numpy steps (``dt / 2 * r1``, ``((r1 + 2 r2) + 2 r3) + r4``)
and as the controller's ``ff + kp (q_ref − q) + kd (v_ref − q̇)``, its rows picked as ``PDController.row`` picks
them, so the trajectories are bit for bit those of the Python loop. A loop is generated per (joints, method,
torque source), compiled once per process. An evaluation whose certificate does not pass (status ≠ 1), or a
controller's torque that is not finite, stops the loop before that step: the caller takes the step through the
Python stepper, which asks the reference path and the controller's checks (answers, warns or raises as always),
and resumes.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from gtdyn.compiled import native
from gtdyn.simulation.controllers import ROW_OFFSET, PDController

METHODS = ("euler", "semi_implicit_euler", "rk4")
# the plan the loop reads (int64 words): workspace, solver entry, status index, answer index, first and end step,
# Δt's bits, the Q, V, QDD, TAU rows, the torque rows and their count, the state (x then y, read and written back);
# for a PD controller the samples' times, its gains, its reference rows (q, q̇, τ_ff) with their strides (0 when
# held, n when sampled), its Δt's bits and its last row
_FIELDS = ("ws", "run", "status", "out", "first", "end", "dt", "Q", "V", "QDD", "TAU", "torques", "rows", "state",
           "times", "kp", "kd", "qr", "qr_stride", "vr", "vr_stride", "ff", "ff_stride", "cdt", "clast")
_PER_RUN = ("Q", "V", "QDD", "TAU", "state")  # a lane loop's plan points to one address per run for these
_lock = threading.Lock()
_loops: dict = {}


def _loop_ir(n: int, method: str, passive: tuple[bool, ...] | None = None, width: int = 1) -> str:
    """``rollout(plan) -> i64``: steps first … end−1; returns end, or the step whose evaluation did not pass.
    ``passive``: None for held torques, else the loop evaluates a PD controller (zero at the passive joints).
    ``width`` > 1: that many runs side by side through a lane solver's entry (``gtdyn.compiled.lanes``: value i
    of lane w at ws[i · width + w]); the plan's per-run fields (``_PER_RUN``) then point to ``width`` addresses,
    and a step that does not pass in any lane stops every lane before it."""
    body: list[str] = ["declare double @llvm.floor.f64(double)", "declare double @llvm.fabs.f64(double)"]
    emit = body.append
    field = {name: i for i, name in enumerate(_FIELDS)}
    lanes = range(width)
    emit("define i64 @rollout(ptr %plan) {")
    emit("entry:")
    for name in _FIELDS:
        emit(f"  %{name}_at = getelementptr i64, ptr %plan, i64 {field[name]}")
        emit(f"  %{name}_word = load i64, ptr %{name}_at")
    for name in ("ws", "run", "torques", "times", "kp", "kd", "qr", "vr", "ff", *_PER_RUN):
        emit(f"  %{name} = inttoptr i64 %{name}_word to ptr")
    for name in _PER_RUN:  # each run's own array: the word itself, or the w-th of the addresses it points to
        for w in lanes:
            if width == 1:
                emit(f"  %{name}_0 = getelementptr i8, ptr %{name}, i64 0")
            else:
                emit(f"  %{name}_a{w} = getelementptr i64, ptr %{name}, i64 {w}")
                emit(f"  %{name}_i{w} = load i64, ptr %{name}_a{w}")
                emit(f"  %{name}_{w} = inttoptr i64 %{name}_i{w} to ptr")
    emit("  %dt = bitcast i64 %dt_word to double")
    emit("  %cdt = bitcast i64 %cdt_word to double")
    emit("  %clast = sitofp i64 %clast_word to double")
    emit(f"  %out_first = mul i64 %out_word, {width}")  # the answer's and the status's places in ws
    emit(f"  %status_first = mul i64 %status_word, {width}")
    active = [i for i in range(n) if passive is not None and not passive[i]]
    for i in active:
        for gain in ("kp", "kd"):
            emit(f"  %{gain}p{i} = getelementptr double, ptr %{gain}, i64 {i}")
            emit(f"  %{gain}{i} = load double, ptr %{gain}p{i}")
    emit("  %half_dt = fmul double %dt, 0.5")  # dt / 2 and dt / 6 as Python computes them (x / 2 is exact)
    emit("  %sixth_dt = fdiv double %dt, 6.0")
    emit("  %last_row = sub i64 %rows_word, 1")
    for w in lanes:
        for i in range(n):
            emit(f"  %state_x{w}_{i} = getelementptr double, ptr %state_{w}, i64 {i}")
            emit(f"  %x0_{w}_{i} = load double, ptr %state_x{w}_{i}")
            emit(f"  %state_y{w}_{i} = getelementptr double, ptr %state_{w}, i64 {n + i}")
            emit(f"  %y0_{w}_{i} = load double, ptr %state_y{w}_{i}")
    emit("  br label %head")
    emit("head:")
    emit("  %k = phi i64 [ %first_word, %entry ], [ %k_next, %tail ]")
    for w in lanes:
        for i in range(n):
            emit(f"  %x{w}_{i} = phi double [ %x0_{w}_{i}, %entry ], [ %xn{w}_{i}, %tail ]")
            emit(f"  %y{w}_{i} = phi double [ %y0_{w}_{i}, %entry ], [ %yn{w}_{i}, %tail ]")
    emit("  %more = icmp slt i64 %k, %end_word")
    emit("  br i1 %more, label %step, label %exit")
    emit("step:")
    emit(f"  %row = mul i64 %k, {n}")
    emit("  %past = icmp sgt i64 %k, %last_row")
    emit("  %torque_row = select i1 %past, i64 %last_row, i64 %k")
    emit(f"  %torque_first = mul i64 %torque_row, {n}")
    emit("  %tkp = getelementptr double, ptr %times, i64 %k")
    emit("  %tk = load double, ptr %tkp")  # the sample's time, as the Python loop reads it
    emit("  %t_half = fadd double %tk, %half_dt")  # t + dt / 2 and t + dt, RK4's stage times
    emit("  %t_full = fadd double %tk, %dt")
    count = [0]

    def pd(t: str, xs: list[str], ys: list[str]) -> list[str]:
        """``PDController.__call__`` at (t, x, y): the row ⌊t/Δt + ¼⌋ clipped to [0, last], then per joint
        ff + kp (q_ref − x) + kd (v_ref − y), zero at passive joints; leave for %exit unless every torque is
        finite (the Python stepper then raises the boundary's error)."""
        count[0] += 1
        c = count[0]
        emit(f"  %pds{c} = fdiv double {t}, %cdt")
        emit(f"  %pdq{c} = fadd double %pds{c}, {native.constant(ROW_OFFSET)}")
        emit(f"  %pdf{c} = call double @llvm.floor.f64(double %pdq{c})")
        emit(f"  %pdn{c} = fcmp olt double %pdf{c}, 0.0")
        emit(f"  %pdl{c} = select i1 %pdn{c}, double 0.0, double %pdf{c}")
        emit(f"  %pdo{c} = fcmp ogt double %pdl{c}, %clast")
        emit(f"  %pdh{c} = select i1 %pdo{c}, double %clast, double %pdl{c}")
        emit(f"  %pdj{c} = fptosi double %pdh{c} to i64")
        for ref in ("qr", "vr", "ff"):
            emit(f"  %{ref}o{c} = mul i64 %pdj{c}, %{ref}_stride_word")
        taus, finite = [], "true"
        for i in range(n):
            if i not in active:
                taus.append(native.constant(0.0))
                continue
            for ref in ("qr", "vr", "ff"):
                emit(f"  %{ref}i{c}_{i} = add i64 %{ref}o{c}, {i}")
                emit(f"  %{ref}p{c}_{i} = getelementptr double, ptr %{ref}, i64 %{ref}i{c}_{i}")
                emit(f"  %{ref}{c}_{i} = load double, ptr %{ref}p{c}_{i}")
            emit(f"  %pe{c}_{i} = fsub double %qr{c}_{i}, {xs[i]}")
            emit(f"  %pp{c}_{i} = fmul double %kp{i}, %pe{c}_{i}")
            emit(f"  %ve{c}_{i} = fsub double %vr{c}_{i}, {ys[i]}")
            emit(f"  %vp{c}_{i} = fmul double %kd{i}, %ve{c}_{i}")
            emit(f"  %su{c}_{i} = fadd double %ff{c}_{i}, %pp{c}_{i}")
            emit(f"  %tq{c}_{i} = fadd double %su{c}_{i}, %vp{c}_{i}")
            emit(f"  %ab{c}_{i} = call double @llvm.fabs.f64(double %tq{c}_{i})")
            emit(f"  %fi{c}_{i} = fcmp olt double %ab{c}_{i}, {native.constant(float('inf'))}")
            emit(f"  %al{c}_{i} = and i1 {finite}, %fi{c}_{i}")
            finite = f"%al{c}_{i}"
            taus.append(f"%tq{c}_{i}")
        emit(f"  br i1 {finite}, label %pdok{c}, label %exit")
        emit(f"pdok{c}:")
        return taus

    held = [f"%tau{i}" for i in range(n)]  # the step's torque row, the same for every run
    x = [[f"%x{w}_{i}" for i in range(n)] for w in lanes]
    y = [[f"%y{w}_{i}" for i in range(n)] for w in lanes]
    if passive is None:
        for i in range(n):
            emit(f"  %ti{i} = add i64 %torque_first, {i}")
            emit(f"  %tp{i} = getelementptr double, ptr %torques, i64 %ti{i}")
            emit(f"  %tau{i} = load double, ptr %tp{i}")
        tau1 = [held for _ in lanes]
    else:
        tau1 = [pd("%tk", x[w], y[w]) for w in lanes]
    for w in lanes:
        for i in range(n):
            for array, value in (("Q", x[w][i]), ("V", y[w][i]), ("TAU", tau1[w][i])):
                emit(f"  %{array}i{w}_{i} = add i64 %row, {i}")
                emit(f"  %{array}p{w}_{i} = getelementptr double, ptr %{array}_{w}, i64 %{array}i{w}_{i}")
                emit(f"  store double {value}, ptr %{array}p{w}_{i}")

    def stage(t: str, xs: list, ys: list) -> list:
        """The torques of a later RK4 stage, per run: held, or the controller's at (t, x, y)."""
        return [held if passive is None else pd(t, xs[w], ys[w]) for w in lanes]

    def accel(xs: list, ys: list, taus: list) -> list:
        """Store each run's (x, y, τ) into the workspace, run the solver, leave for %exit unless every run's
        status is 1; each run's q̈."""
        count[0] += 1
        c = count[0]
        for w in lanes:
            for i in range(n):
                for offset, value in ((i, xs[w][i]), (n + i, ys[w][i]), (2 * n + i, taus[w][i])):
                    emit(f"  %w{c}_{w}_{offset} = getelementptr double, ptr %ws, i64 {offset * width + w}")
                    emit(f"  store double {value}, ptr %w{c}_{w}_{offset}")
        emit("  call void %run(ptr %ws)")
        passed = "true"
        for w in lanes:
            emit(f"  %si{c}_{w} = add i64 %status_first, {w}")
            emit(f"  %sp{c}_{w} = getelementptr double, ptr %ws, i64 %si{c}_{w}")
            emit(f"  %s{c}_{w} = load double, ptr %sp{c}_{w}")
            emit(f"  %ok{c}_{w} = fcmp oeq double %s{c}_{w}, 1.0")
            emit(f"  %all{c}_{w} = and i1 {passed}, %ok{c}_{w}")
            passed = f"%all{c}_{w}"
        emit(f"  br i1 {passed}, label %passed{c}, label %exit")
        emit(f"passed{c}:")
        out = []
        for w in lanes:
            out.append([])
            for i in range(n):
                emit(f"  %ai{c}_{w}_{i} = add i64 %out_first, {i * width + w}")
                emit(f"  %ap{c}_{w}_{i} = getelementptr double, ptr %ws, i64 %ai{c}_{w}_{i}")
                emit(f"  %a{c}_{w}_{i} = load double, ptr %ap{c}_{w}_{i}")
                out[w].append(f"%a{c}_{w}_{i}")
        return out

    def combine(name: str, base: list, scale: str, terms: list) -> list:
        """base + scale · terms, elementwise per run, as ``base + scale * terms`` in numpy."""
        result = []
        for w in lanes:
            result.append([])
            for i in range(n):
                emit(f"  %{name}m{w}_{i} = fmul double {scale}, {terms[w][i]}")
                emit(f"  %{name}{w}_{i} = fadd double {base[w][i]}, %{name}m{w}_{i}")
                result[w].append(f"%{name}{w}_{i}")
        return result

    a1 = accel(x, y, tau1)
    for w in lanes:
        for i in range(n):
            emit(f"  %QDDp{w}_{i} = getelementptr double, ptr %QDD_{w}, i64 %Qi{w}_{i}")
            emit(f"  store double {a1[w][i]}, ptr %QDDp{w}_{i}")
    if method == "euler":
        xn, yn = combine("ex", x, "%dt", y), combine("ey", y, "%dt", a1)
    elif method == "semi_implicit_euler":
        yn = combine("sy", y, "%dt", a1)
        xn = combine("sx", x, "%dt", yn)
    else:  # rk4, ẋ = y
        x2, y2 = combine("x2_", x, "%half_dt", y), combine("y2_", y, "%half_dt", a1)
        a2 = accel(x2, y2, stage("%t_half", x2, y2))
        x3, y3 = combine("x3_", x, "%half_dt", y2), combine("y3_", y, "%half_dt", a2)
        a3 = accel(x3, y3, stage("%t_half", x3, y3))
        x4, y4 = combine("x4_", x, "%dt", y3), combine("y4_", y, "%dt", a3)
        a4 = accel(x4, y4, stage("%t_full", x4, y4))

        def weighted(name, r1, r2, r3, r4):
            out = []
            for w in lanes:
                out.append([])
                for i in range(n):
                    v = f"%{name}{w}_{i}"
                    emit(f"  {v}b = fmul double 2.0, {r2[w][i]}")
                    emit(f"  {v}c = fadd double {r1[w][i]}, {v}b")
                    emit(f"  {v}d = fmul double 2.0, {r3[w][i]}")
                    emit(f"  {v}e = fadd double {v}c, {v}d")
                    emit(f"  {v}f = fadd double {v}e, {r4[w][i]}")
                    out[w].append(f"{v}f")
            return out

        xn = combine("rx", x, "%sixth_dt", weighted("wx", y, y2, y3, y4))
        yn = combine("ry", y, "%sixth_dt", weighted("wy", a1, a2, a3, a4))
    for w in lanes:
        for i in range(n):
            emit(f"  %xn{w}_{i} = fadd double {xn[w][i]}, -0.0")  # named for the phis: x + (−0) is x
            emit(f"  %yn{w}_{i} = fadd double {yn[w][i]}, -0.0")
    emit("  br label %tail")
    emit("tail:")
    emit("  %k_next = add i64 %k, 1")
    emit("  br label %head")
    emit("exit:")  # the end, or a step that did not pass: its start state back, and k
    for w in lanes:
        for i in range(n):
            emit(f"  store double %x{w}_{i}, ptr %state_x{w}_{i}")
            emit(f"  store double %y{w}_{i}, ptr %state_y{w}_{i}")
    emit("  ret i64 %k")
    emit("}")
    return "\n".join(body)


def _rollout(n: int, method: str, passive: tuple[bool, ...] | None, width: int = 1):
    """The compiled loop for n joints, ``method`` and held torques (``passive`` None) or a PD controller, over
    ``width`` runs (kept for the process's life, with its code)."""
    key = (n, method, passive, width)
    with _lock:
        if key not in _loops:
            loaded = native.Loaded(native.compile_object(_loop_ir(n, method, passive, width)), "", entries=(),
                                   extra=["rollout"])
            function = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p)(loaded.extra["rollout"])
            _loops[key] = (loaded, function)
        return _loops[key][1]


def _bits(x: float) -> int:
    return int(np.float64(x).view(np.int64))


def plan_of(solver, dt: float, torque, samples, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The plan words of a run (``_FIELDS``; first and end are set per chunk). ``torque``: ``HeldTorques`` or a
    controller of a ``PDController``. Returns the plan and the torque rows it points to (keep both alive while the
    loop runs; the controller's arrays live with it)."""
    n = solver.robot.num_dofs
    law = getattr(torque, "law", None)
    rows = np.ascontiguousarray(torque.rows, dtype=float) if law is None else np.zeros((1, n))
    controller = [0] * 10
    if law is not None:
        stride = [0 if len(r) == 1 else n for r in (law.q_rows, law.v_rows, law.ff_rows)]
        controller = [law.kp.ctypes.data, law.kd.ctypes.data, law.q_rows.ctypes.data, stride[0], law.v_rows.ctypes.data,
                      stride[1], law.ff_rows.ctypes.data, stride[2], _bits(1.0 if law.dt is None else law.dt),
                      law.last_row]
    return np.array([solver._ws.ctypes.data, solver._native.address[solver._entry], solver._status, solver._out,
                     0, 0, _bits(dt), samples.q.ctypes.data, samples.v.ctypes.data, samples.qdd.ctypes.data,
                     samples.tau.ctypes.data, rows.ctypes.data, len(rows), state.ctypes.data, samples.t.ctypes.data,
                     *controller], dtype=np.int64), rows


def run(plan: np.ndarray, n: int, method: str, passive, first: int, end: int, width: int = 1) -> int:
    """Steps ``first`` … ``end``−1 in native code, from the plan's state (x then y, written back); returns ``end``,
    or the step whose evaluation did not pass (the state is its start)."""
    plan[_FIELDS.index("first")], plan[_FIELDS.index("end")] = first, end
    return int(_rollout(n, method, passive, width)(plan.ctypes.data))


CHUNK = 4096  # steps between progress reports


def law_of(torque) -> tuple[bool, ...] | None:
    """The passive joints of the ``PDController`` behind a run's controller ``torque``, or None."""
    law = getattr(torque, "law", None)
    return tuple(bool(p) for p in law.passive) if isinstance(law, PDController) else None


def applies(robot, method: str, torque, forward) -> bool:
    """Whether a run can loop natively: a fixed-base tree, an explicit method of ``METHODS``, held torques or a
    ``PDController`` (not another controller), and the plain compiled solver (no wrenches or contacts around it)
    of this thread."""
    from threading import get_ident

    from gtdyn.compiled.solver import CompiledSolver

    return (not robot.floating_base and not robot.loop_joints and method in METHODS
            and (getattr(torque, "rows", None) is not None or law_of(torque) is not None)
            and type(forward) is CompiledSolver and not forward.wrench_frames and forward._owner == get_ident())


def run_loop(stepper, samples, report, solver, method: str, dt: float, torque, start: int = 0) -> None:
    """``simulate``'s time loop in native code, chunk by chunk, from step ``start`` (the stepper's state is that
    step's start); a step whose evaluation does not pass goes through ``stepper`` (the Python path: the reference
    path answers, warns or raises), and the loop resumes after it."""
    state = np.concatenate([stepper.x, stepper.y]).astype(float)
    plan, rows = plan_of(solver, dt, torque, samples, state)
    _loop(plan, [(stepper, samples, state)], method, law_of(torque), report, start)
    del rows  # alive until here: the plan points to them


class GroupStopped(Exception):
    """A run of a lane group raised ``error`` in its Python step ``step``: the group's runs before it (``run``,
    its index) have taken that step, the others have not."""

    def __init__(self, run: int, step: int, error: BaseException):
        super().__init__(f"run {run} of a lane group failed at step {step}")
        self.run, self.step, self.error = run, step, error


def run_group(runs: list, lane_solver, report=None) -> None:
    """Runs side by side in one lane loop (``simulate_batch``): ``gtdyn.simulation.simulate.Run``s, as many as a
    lane group's states (``gtdyn.compiled.lanes.WIDTH``), of the same solver, method, Δt, steps and torque source,
    each looping natively, through the lane code of ``lane_solver`` (any thread's solver of the same cache entry:
    the code keeps its state in the workspace the group brings). A step that does not pass in one run goes
    through every run's Python stepper (the others' certified steps give the same bits there), and the loop
    resumes after it; a run that raises there stops the group (``GroupStopped``)."""
    first = runs[0]
    solver, width = first.forward, len(runs)
    states = [np.concatenate([r.stepper.x, r.stepper.y]).astype(float) for r in runs]
    plan, rows = plan_of(solver, first.dt, first.torque, first.samples, states[0])
    ws = np.zeros(solver._size * width)  # the lanes' workspace, interleaved
    plan[_FIELDS.index("ws")] = ws.ctypes.data
    plan[_FIELDS.index("run")] = lane_solver._batches.lanes.address[lane_solver._entry]
    arrays = {"state": states} | {name: [getattr(r.samples, name.lower()) for r in runs]
                                  for name in _PER_RUN if name != "state"}
    addresses = {name: np.array([a.ctypes.data for a in arrays[name]], dtype=np.int64) for name in _PER_RUN}
    for name, words in addresses.items():
        plan[_FIELDS.index(name)] = words.ctypes.data
    _loop(plan, [(r.stepper, r.samples, state) for r, state in zip(runs, states)], first.method,
          law_of(first.torque), report)
    del rows, ws, addresses  # alive until here: the plan points to them


def _loop(plan: np.ndarray, runs: list, method: str, passive, report, start: int = 0) -> None:
    """Chunks of the native loop over ``runs`` ((stepper, samples, state) each, the state x then y, which the plan
    points to) from step ``start``, each step the loop stops at taken by the runs' Python steppers."""
    stepper, samples, state = runs[0]
    steps, n = len(samples.t) - 1, len(stepper.x)
    k = start
    while k < steps:
        end = min(k + CHUNK, steps)
        k = run(plan, n, method, passive, k, end, len(runs))
        if k < end:  # the Python step, from the state the loop stopped at
            for j, (stepper, samples, state) in enumerate(runs):
                stepper.x, stepper.y = state[:n].copy(), state[n:].copy()
                try:
                    stepper.record(k, samples.t[k], samples)
                    stepper.advance(k, samples.t[k])
                except Exception as error:
                    if len(runs) == 1:
                        raise
                    raise GroupStopped(j, k, error) from error
                state[:n], state[n:] = stepper.x, stepper.y  # in place: the plan points to it
            k += 1
        if report is not None:
            report.at(k)
    for stepper, samples, state in runs:
        stepper.x, stepper.y = state[:n].copy(), state[n:].copy()
        stepper.record(steps, samples.t[steps], samples)
    if report is not None:
        report.at(steps)
