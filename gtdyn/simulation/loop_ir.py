"""The native time loop's LLVM IR (``rollout``): the explicit integrators of ``integrators.py`` — Euler,
semi-implicit Euler, RK4 — around the compiled forward solver's own entry, with torques held over each step, from
a ``gtdyn.PDController`` written out here, or from a Python controller called back at every stage
(``gtdyn.simulation.native_loop`` runs it).

The same IEEE operations in the same order as the numpy steps (``dt / 2 * r1``, ``((r1 + 2 r2) + 2 r3) + r4``)
and as the controller's ``ff + kp (q_ref − q) + kd (v_ref − q̇)``, its rows picked as ``PDController.row`` picks
them, so the trajectories are bit for bit those of the Python loop. A floating base's pose step and rate are the
Python stepper's own compiled functions (``gtdyn.compiled.pose_step``), called by address; rigid contacts and
external wrenches are the solver's (its answer's forces after the motion; its wrench inputs, written once).
"""

from __future__ import annotations

from gtdyn.compiled import native
from gtdyn.compiled.pose_step import MOVED_AT, RATE_AT, SCRATCH, TWIST_AT, VELOCITY_AT
from gtdyn.simulation.controllers import ROW_OFFSET
from gtdyn.simulation.loop_plan import FIELDS, PER_FLOATING_RUN, PER_RUN, PYTHON

_POSE_ENTRIES = (0, 1, 2, 4, 5, 6, 8, 9, 10, 3, 7, 11)  # R row by row, then p, in the row-major 4×4 pose


def loop_ir(n: int, method: str, source: tuple[bool, ...] | str | None = None, width: int = 1,
            floating: bool = False, forces: int = 0) -> str:
    """``rollout(plan) -> i64``: steps first … end−1 (step ``last`` records its sample, the run's final one, and
    takes no step); returns end, or the step whose evaluation did not pass.
    ``source``: None for held torques; a PD controller's passive joints (tuple), which the loop evaluates itself
    (zero at the passive joints); or ``PYTHON``: a Python controller, called back at each stage as
    ``callback(t, k) -> 1`` with (q, q̇) in its buffers, its torque read from another (else the loop stops
    there). ``width`` > 1: that many runs side by side through a lane solver's entry (``gtdyn.compiled.lanes``:
    value i of lane w at ws[i · width + w]); the plan's per-run fields (``PER_RUN``) then point to ``width``
    addresses; a lane whose status is not 1 asks the solver's twin for its run (scalar code, as a call asks
    it), and a step that does not pass either way in any lane stops every lane before it. ``floating``: a
    floating base (its fields of ``PER_FLOATING_RUN`` per run too), the state x = [ξ; q], y = [V; q̇] as
    ``FloatingStepper``'s: each sample moves the pose to T · exp ξ and sets ξ to zero; a later RK4 stage's pose
    is T · exp ξ and its ξ̇ is dlog(−ξ) V (both ``gtdyn.compiled.pose_step``, called by address; T and V
    themselves where ξ is zero, as the stepper does); the solver takes the pose and twist, and the samples get
    the base's pose, twist and acceleration too. ``forces``:
    the solver's contact force components after the motion (rigid contacts), each sample's written to its row of
    the samples' contact forces (``CF``, per run)."""
    off = 6 if floating else 0  # where the joints start in x and y
    per_run = PER_RUN + (PER_FLOATING_RUN if floating else ()) + (("CF",) if forces else ())
    m = off + n
    passive = source if isinstance(source, tuple) else None
    body: list[str] = ["declare double @llvm.floor.f64(double)", "declare double @llvm.fabs.f64(double)"]
    emit = body.append
    field = {name: i for i, name in enumerate(FIELDS)}
    lanes = range(width)
    emit("define i64 @rollout(ptr %plan) {")
    emit("entry:")
    for name in FIELDS:
        emit(f"  %{name}_at = getelementptr i64, ptr %plan, i64 {field[name]}")
        emit(f"  %{name}_word = load i64, ptr %{name}_at")
    for name in ("ws", "run", "torques", "times", "kp", "kd", "qr", "vr", "ff", "callback", "cq", "cv", "ctau",
                 "moved", "rate", "mws", *PER_FLOATING_RUN, "CF", *PER_RUN, "tws", "trun"):
        emit(f"  %{name} = inttoptr i64 %{name}_word to ptr")
    for name in per_run:  # each run's own array: the word itself, or the w-th of the addresses it points to
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
    state = [(w, i, part, offset) for w in lanes for i in range(m) for part, offset in (("x", 0), ("y", m))]
    for w, i, part, offset in state:  # the state (x = q, y = q̇) loaded once, carried through the steps by phis
        emit(f"  %state_{part}{w}_{i} = getelementptr double, ptr %state_{w}, i64 {offset + i}")
        emit(f"  %{part}0_{w}_{i} = load double, ptr %state_{part}{w}_{i}")
    pose_entries = [(w, k, entry) for w in lanes for k, entry in enumerate(_POSE_ENTRIES)] if floating else []
    for w, k, entry in pose_entries:  # each run's pose, carried by phis too
        emit(f"  %pose_at{w}_{k} = getelementptr double, ptr %pose_{w}, i64 {entry}")
        emit(f"  %bp0_{w}_{k} = load double, ptr %pose_at{w}_{k}")
    emit("  br label %head")
    emit("head:")
    emit("  %k = phi i64 [ %first_word, %entry ], [ %k_next, %tail ]")
    for w, i, part, _ in state:
        emit(f"  %{part}{w}_{i} = phi double [ %{part}0_{w}_{i}, %entry ], [ %{part}n{w}_{i}, %tail ]")
    for w, k, _ in pose_entries:
        emit(f"  %bp{w}_{k} = phi double [ %bp0_{w}_{k}, %entry ], [ %bpn{w}_{k}, %tail ]")
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

    def called(t: str, xs: list[str], ys: list[str]) -> list[str]:
        """A Python controller at (t, x, y): x and y into its buffers, ``callback(t, k)``, leaving for %exit
        unless it answered 1 (the Python stepper then takes the step, and raises what the controller raised),
        and its torque back from its buffer."""
        count[0] += 1
        c = count[0]
        for i in range(n):
            for buffer, value in (("cq", xs[i]), ("cv", ys[i])):
                emit(f"  %{buffer}p{c}_{i} = getelementptr double, ptr %{buffer}, i64 {i}")
                emit(f"  store double {value}, ptr %{buffer}p{c}_{i}")
        emit(f"  %cr{c} = call i64 %callback(double {t}, i64 %k)")
        emit(f"  %cok{c} = icmp eq i64 %cr{c}, 1")
        emit(f"  br i1 %cok{c}, label %called{c}, label %exit")
        emit(f"called{c}:")
        taus = []
        for i in range(n):
            emit(f"  %ctp{c}_{i} = getelementptr double, ptr %ctau, i64 {i}")
            emit(f"  %ct{c}_{i} = load double, ptr %ctp{c}_{i}")
            taus.append(f"%ct{c}_{i}")
        return taus

    def controlled(t: str, xs: list[str], ys: list[str]) -> list[str]:
        return called(t, xs, ys) if source == PYTHON else pd(t, xs, ys)

    held = [f"%tau{i}" for i in range(n)]  # the step's torque row, the same for every run
    x = [[f"%x{w}_{i}" for i in range(m)] for w in lanes]
    y = [[f"%y{w}_{i}" for i in range(m)] for w in lanes]

    def scratch_call(function: str, inputs: list, outputs: range, names: str) -> list[str]:
        """``function(scratch)`` of ``pose_step`` on ``inputs`` ((index, value)); the values at ``outputs``."""
        count[0] += 1
        c = count[0]
        for k, value in inputs:
            emit(f"  %mi{c}_{k} = getelementptr double, ptr %mws, i64 {k}")
            emit(f"  store double {value}, ptr %mi{c}_{k}")
        emit(f"  call void %{function}(ptr %mws)")
        for k in outputs:
            emit(f"  %mo{c}_{k} = getelementptr double, ptr %mws, i64 {k}")
            emit(f"  %{names}{k - outputs.start} = load double, ptr %mo{c}_{k}")
        return [f"%{names}{k}" for k in range(len(outputs))]

    def moved(T: list, xi: list, names: str) -> list[str]:
        """T · exp ξ (12 values: R row by row, then p)."""
        return scratch_call("moved", list(enumerate(T + xi)), range(MOVED_AT, VELOCITY_AT), names)

    def chosen(name: str, xi: list, nonzero: list, zero: list) -> list[str]:
        """``nonzero`` where some entry of ξ is not zero (NaN included, as numpy's ``any``), else ``zero``."""
        flag = "false"
        for i, value in enumerate(xi):
            emit(f"  %{name}n{i} = fcmp une double {value}, 0.0")
            emit(f"  %{name}a{i} = or i1 {flag}, %{name}n{i}")
            flag = f"%{name}a{i}"
        for i, (a, b) in enumerate(zip(nonzero, zero)):
            emit(f"  %{name}{i} = select i1 {flag}, double {a}, double {b}")
        return [f"%{name}{i}" for i in range(len(zero))]

    poses = [[] for _ in lanes]
    if floating:  # the sample: T ← T · exp ξ (ξ re-centred to zero), as FloatingStepper.record
        for w in lanes:
            poses[w] = moved([f"%bp{w}_{k}" for k in range(12)], x[w][:6], f"bpn{w}_")
            x[w][:6] = [native.constant(0.0)] * 6
    if source is None:
        for i in range(n):
            emit(f"  %ti{i} = add i64 %torque_first, {i}")
            emit(f"  %tp{i} = getelementptr double, ptr %torques, i64 %ti{i}")
            emit(f"  %tau{i} = load double, ptr %tp{i}")
        tau1 = [held for _ in lanes]
    else:
        tau1 = [controlled("%tk", x[w][off:], y[w][off:]) for w in lanes]
    for w in lanes:
        for i in range(n):
            for array, value in (("Q", x[w][off + i]), ("V", y[w][off + i]), ("TAU", tau1[w][i])):
                emit(f"  %{array}i{w}_{i} = add i64 %row, {i}")
                emit(f"  %{array}p{w}_{i} = getelementptr double, ptr %{array}_{w}, i64 %{array}i{w}_{i}")
                emit(f"  store double {value}, ptr %{array}p{w}_{i}")

    def matrix(T: list) -> list[str]:
        """The row-major 4×4 pose of T (R row by row, then p)."""
        return T[:3] + T[9:10] + T[3:6] + T[10:11] + T[6:9] + T[11:12] + [
            native.constant(v) for v in (0.0, 0.0, 0.0, 1.0)]

    def store_rows(array: str, size: int, values: list) -> None:
        """Row k of each run's samples' ``array`` (a floating base's, or the contact forces; ``values``: each
        run's)."""
        emit(f"  %{array}row = mul i64 %k, {size}")
        for w in lanes:
            for j, value in enumerate(values[w]):
                emit(f"  %{array}i{w}_{j} = add i64 %{array}row, {j}")
                emit(f"  %{array}p{w}_{j} = getelementptr double, ptr %{array}_{w}, i64 %{array}i{w}_{j}")
                emit(f"  store double {value}, ptr %{array}p{w}_{j}")

    if floating:
        store_rows("BP", 16, [matrix(T) for T in poses])
        store_rows("BT", 6, [ys[:6] for ys in y])

    def stage(t: str, xs: list, ys: list) -> list:
        """The torques of a later RK4 stage, per run: held, or the controller's at (t, x, y)."""
        return [held if source is None else controlled(t, xs[w][off:], ys[w][off:]) for w in lanes]

    def accel(xs: list, ys: list, taus: list, Ts: list) -> list:
        """Store each run's (x, y, τ) into the workspace (and a floating base's pose, ``Ts``: each run's), run the
        solver; each run's answer (``answer``): q̈ (after a floating base's acceleration), then contact forces."""
        count[0] += 1
        c = count[0]
        inputs = []
        for w in lanes:
            base = matrix(Ts[w]) + ys[w][:6] + [native.constant(0.0)] * 6 if floating else []  # no wrench
            inputs.append([(i, xs[w][off + i]) for i in range(n)] + [(n + i, ys[w][off + i]) for i in range(n)] + [
                (2 * n + i, taus[w][i]) for i in range(n)] + [(3 * n + j, value) for j, value in enumerate(base)])
            for offset, value in inputs[w]:
                emit(f"  %w{c}_{w}_{offset} = getelementptr double, ptr %ws, i64 {offset * width + w}")
                emit(f"  store double {value}, ptr %w{c}_{w}_{offset}")
        emit(f"  br label %solve{c}")
        emit(f"solve{c}:")
        emit("  call void %run(ptr %ws)")
        return [answer(f"{c}_{w}", w, inputs[w]) for w in lanes]

    def answer(tag: str, w: int, inputs: list) -> list[str]:
        """Run w's answer: its lane's where the status is 1, else the solver's twin's (if the plan has one) for
        its ``inputs``, as a call asks it (the twin is scalar code: its answer and status at their own places);
        leave for %exit where neither passes."""
        def passed(name: str, ws: str, index: str) -> str:
            emit(f"  %{name}sp{tag} = getelementptr double, ptr {ws}, i64 {index}")
            emit(f"  %{name}s{tag} = load double, ptr %{name}sp{tag}")
            emit(f"  %{name}ok{tag} = fcmp oeq double %{name}s{tag}, 1.0")
            return f"%{name}ok{tag}"

        def values(name: str, ws: str, first: str, stride: int, lane: int) -> list[str]:
            for i in range(m + forces):
                emit(f"  %{name}i{tag}_{i} = add i64 {first}, {i * stride + lane}")
                emit(f"  %{name}p{tag}_{i} = getelementptr double, ptr {ws}, i64 %{name}i{tag}_{i}")
                emit(f"  %{name}{tag}_{i} = load double, ptr %{name}p{tag}_{i}")
            return [f"%{name}{tag}_{i}" for i in range(m + forces)]

        emit(f"  %si{tag} = add i64 %status_first, {w}")
        own = passed("o", "%ws", f"%si{tag}")
        emit(f"  br i1 {own}, label %own{tag}, label %twin{tag}")
        emit(f"twin{tag}:")
        emit(f"  %has{tag} = icmp ne i64 %trun_word, 0")
        emit(f"  br i1 %has{tag}, label %tcall{tag}, label %exit")
        emit(f"tcall{tag}:")
        for offset, value in inputs:
            emit(f"  %tw{tag}_{offset} = getelementptr double, ptr %tws, i64 {offset}")
            emit(f"  store double {value}, ptr %tw{tag}_{offset}")
        emit("  call void %trun(ptr %tws)")
        theirs = passed("t", "%tws", "%status_word")
        emit(f"  br i1 {theirs}, label %tread{tag}, label %exit")
        emit(f"tread{tag}:")
        twin_values = values("t", "%tws", "%out_word", 1, 0)
        emit(f"  br label %join{tag}")
        emit(f"own{tag}:")
        own_values = values("o", "%ws", "%out_first", width, w)
        emit(f"  br label %join{tag}")
        emit(f"join{tag}:")
        for i, (a, b) in enumerate(zip(own_values, twin_values)):
            emit(f"  %a{tag}_{i} = phi double [{a}, %own{tag}], [{b}, %tread{tag}]")
        return [f"%a{tag}_{i}" for i in range(m + forces)]

    def combine(name: str, base: list, scale: str, terms: list) -> list:
        """base + scale · terms, elementwise per run, as ``base + scale * terms`` in numpy."""
        result = []
        for w in lanes:
            result.append([])
            for i in range(m):
                emit(f"  %{name}m{w}_{i} = fmul double {scale}, {terms[w][i]}")
                emit(f"  %{name}{w}_{i} = fadd double {base[w][i]}, %{name}m{w}_{i}")
                result[w].append(f"%{name}{w}_{i}")
        return result

    a1 = accel(x, y, tau1, poses)
    for w in lanes:
        for i in range(n):
            emit(f"  %QDDp{w}_{i} = getelementptr double, ptr %QDD_{w}, i64 %Qi{w}_{i}")
            emit(f"  store double {a1[w][off + i]}, ptr %QDDp{w}_{i}")
    if floating:
        store_rows("BA", 6, [a[:6] for a in a1])
    if forces:  # the sample's contact forces, after the motion in the answer, before the next solve
        store_rows("CF", forces, [a[m:] for a in a1])
    emit("  %k_after = add i64 %k, 1")
    emit("  %final = icmp eq i64 %k, %last_word")  # the run's final sample is recorded: no step after it
    emit("  br i1 %final, label %recorded, label %integrate")
    emit("integrate:")
    if method == "euler":
        xn, yn = combine("ex", x, "%dt", y), combine("ey", y, "%dt", a1)
    elif method == "semi_implicit_euler":
        yn = combine("sy", y, "%dt", a1)
        xn = combine("sx", x, "%dt", yn)
    else:  # rk4: ẋ = y on a fixed base; on a floating base [dlog(−ξ) V; q̇], each stage's pose T · exp ξ

        def later(name: str, t: str, xs: list, ys: list) -> tuple[list, list]:
            """A later stage's q̈ and ẋ at (x, y)."""
            if not floating:
                return accel(xs, ys, stage(t, xs, ys), poses), ys
            Ts = [chosen(f"{name}T{w}_", xs[w][:6], moved(poses[w], xs[w][:6], f"{name}m{w}_"), poses[w])
                  for w in lanes]
            a = accel(xs, ys, stage(t, xs, ys), Ts)
            rates = []
            for w in lanes:
                xi, V = xs[w][:6], ys[w][:6]
                rate = scratch_call("rate", list(enumerate(xi, TWIST_AT)) + list(enumerate(V, VELOCITY_AT)),
                                    range(RATE_AT, SCRATCH), f"{name}r{w}_")
                rates.append(chosen(f"{name}R{w}_", xi, rate, V) + ys[w][6:])
            return a, rates

        x2, y2 = combine("x2_", x, "%half_dt", y), combine("y2_", y, "%half_dt", a1)
        a2, r2 = later("s2", "%t_half", x2, y2)
        x3, y3 = combine("x3_", x, "%half_dt", r2), combine("y3_", y, "%half_dt", a2)
        a3, r3 = later("s3", "%t_half", x3, y3)
        x4, y4 = combine("x4_", x, "%dt", r3), combine("y4_", y, "%dt", a3)
        a4, r4 = later("s4", "%t_full", x4, y4)

        def weighted(name, r1, r2, r3, r4):
            out = []
            for w in lanes:
                out.append([])
                for i in range(m):
                    v = f"%{name}{w}_{i}"
                    emit(f"  {v}b = fmul double 2.0, {r2[w][i]}")
                    emit(f"  {v}c = fadd double {r1[w][i]}, {v}b")
                    emit(f"  {v}d = fmul double 2.0, {r3[w][i]}")
                    emit(f"  {v}e = fadd double {v}c, {v}d")
                    emit(f"  {v}f = fadd double {v}e, {r4[w][i]}")
                    out[w].append(f"{v}f")
            return out

        xn = combine("rx", x, "%sixth_dt", weighted("wx", y, r2, r3, r4))  # ẋ = y at the sample (ξ = 0)
        yn = combine("ry", y, "%sixth_dt", weighted("wy", a1, a2, a3, a4))
    for w in lanes:
        for i in range(m):
            emit(f"  %xn{w}_{i} = fadd double {xn[w][i]}, -0.0")  # named for the phis: x + (−0) is x
            emit(f"  %yn{w}_{i} = fadd double {yn[w][i]}, -0.0")
    emit("  br label %tail")
    emit("tail:")
    emit("  %k_next = add i64 %k, 1")
    emit("  br label %head")
    for label, returned in (("exit", "%k"), ("recorded", "%k_after")):  # the end, or a step that did not pass
        emit(f"{label}:")  # (then k), or the final sample recorded (then k + 1): the step's start state back
        for w in lanes:
            for i in range(m):
                emit(f"  store double %x{w}_{i}, ptr %state_x{w}_{i}")
                emit(f"  store double %y{w}_{i}, ptr %state_y{w}_{i}")
        for w, k, _ in pose_entries:  # each pose as at that step's start (before its sample moved it)
            emit(f"  store double %bp{w}_{k}, ptr %pose_at{w}_{k}")
        emit(f"  ret i64 {returned}")
    emit("}")
    return "\n".join(body)
