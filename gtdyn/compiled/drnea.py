"""Paper 004's discrete Euler–Lagrange residual (DRNEA, its Algorithm 2) and the discrete Legendre transform as
compiled code, for the variational integrator of ``gtdyn.simulation.variational`` on a tree, its base fixed or
floating.

The same equations as ``VariationalIntegrator.residual`` and ``step``, written once on traced values:

    ΔT_i = T_{λ(i),i}(q_k)⁻¹ ΔT_{λ(i)} T_{λ(i),i}(q_{k+1}),   ξ_i = log ΔT_i                 (forward pass)
    μ_i  = dlog_{ξ_i}ᵀ G_i ξ_i / Δt                                                       (discrete momentum)
    e    = Sᵀ(backward pass of μ − Π − W) − impulse                                         (residual)
    Π_i' = [Ad_{ΔT_i}]ᵀ μ_i + W_i(q_{k+1}),   p' = Sᵀ(backward pass of Π') + (Δt/2) τ_k        (Legendre transform)

with W_i the link's weight as a wrench times Δt/2. On a floating base the unknowns are u = [ξ₀; q_{k+1}]: the
forward pass starts from the base's displacement ΔT₀ = exp ξ₀ (in its CoM frame) with μ₀ = dlog_{ξ₀}ᵀ G₀ ξ₀ / Δt,
e starts with the whole wrench left on the base, and the Legendre transform takes the weights at the next poses,
from the base's T₀ · ΔT₀ (T₀ an input, the next one an output). The logarithm takes the angle by atan2 (accurate
to round-off at any angle below π, where acos loses digits at the small angles of a time step) and, for sin θ
below 1e-3, the series of its two ratios instead of their 0/0 forms (``trace.select``); the exponential likewise
below θ = 1e-3. On duals the same residual gives its exact Jacobian-vector products (``CompiledDEL.jacobian``:
Newton's method).
"""

from __future__ import annotations

import itertools
import threading

import numpy as np

from gtdyn.compiled import dual, entry, native, trace
from gtdyn.compiled.cache import robot_fingerprint
from gtdyn.compiled.kinematics import TRACED, TracedPose, parent_T_child
from gtdyn.compiled.validity import finite
from gtdyn.equations import gravity_wrench
from gtdyn.kinematics.forward import kinematic_pass, subtree_projections
from gtdyn.model.robot import Robot
from gtdyn.spatial import dlog_transpose_times, skew

SMALL_SINE = 1e-3  # below it (and cos θ > 0), the series in sin²θ of θ / sin θ and of (1 − (θ/2) cot(θ/2)) / θ²
SMALL_ANGLE = 1e-3  # below it, the series in θ² of sin θ / θ, (1 − cos θ) / θ² and (θ − sin θ) / θ³
_PREFIXES = itertools.count()


def _dot(a, b):
    return sum((x * y for x, y in zip(a, b)), 0.0)


def log_pose(T: TracedPose) -> np.ndarray:
    """ξ = [ω; v] = log T for a traced rigid transform of angle below π (gtsam's ``Pose3.Logmap`` convention), on
    traced values or on duals (``gtdyn.compiled.dual``: its exact tangents too). Near the identity the series
    use sin²θ alone, so the tangents stay finite at θ = 0."""
    R, p = T.R, T.p
    half_skew = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]], dtype=object) * 0.5  # sin θ·axis
    s2 = _dot(half_skew, half_skew)
    c = (R[0, 0] + R[1, 1] + R[2, 2] - 1.0) * 0.5
    small = dual.le(s2, SMALL_SINE ** 2) * dual.le(0.0, c)
    s = dual.sqrt(s2)
    theta = dual.atan2(s, c)
    # θ / sin θ = 1 + s²/6 + 3s⁴/40 + …, and with θ² = s² + s⁴/3 + …, (1 − (θ/2) cot(θ/2)) / θ² = 1/12 + θ²/720 + …
    ratio = dual.select(small, 1.0 + s2 * (1.0 / 6.0 + s2 * (3.0 / 40.0)), theta / s)
    beta = dual.select(small, 1.0 / 12.0 + s2 * (1.0 / 720.0 + s2 * (1.0 / 2160.0 + 1.0 / 30240.0)),
                       (1.0 - theta * (1.0 + c) / (2.0 * s)) / (theta * theta))
    omega = half_skew * ratio
    Omega = skew(omega)
    Op = Omega @ p
    v = p - 0.5 * Op + beta * (Omega @ Op)
    return np.concatenate([omega, v])


def exp_pose(xi) -> TracedPose:
    """T = exp ξ for a traced twist ξ = [ω; v] (gtsam's ``Pose3.Expmap`` convention), on traced values or on duals:
    Rodrigues' R = I + A [ω] + B [ω]² and p = (I + B [ω] + C [ω]²) v, with A = sin θ / θ, B = (1 − cos θ) / θ² and
    C = (θ − sin θ) / θ³ at θ = |ω|. 1 − cos θ is 2 sin²(θ/2), without cancellation; θ − sin θ cancels, but C
    multiplies [ω]² ~ θ², so its error stays ε |v|. Below θ = SMALL_ANGLE the three ratios are their series in θ²
    (to θ⁴: the next terms are below 1e-21 there) rather than their 0/0 forms: accurate to round-off down to θ = 0,
    with finite tangents."""
    omega, v = np.asarray(xi[:3], dtype=object), np.asarray(xi[3:], dtype=object)
    t = _dot(omega, omega)
    small = dual.le(t, SMALL_ANGLE ** 2)
    theta = dual.sqrt(t)
    half_sine, half_cosine = trace.sin(theta * 0.5), trace.cos(theta * 0.5)
    sine = 2.0 * half_sine * half_cosine
    # sin θ / θ = 1 − θ²/6 + θ⁴/120 − …, (1 − cos θ) / θ² = 1/2 − θ²/24 + θ⁴/720 − …, (θ − sin θ) / θ³ = 1/6 − θ²/120
    # + θ⁴/5040 − …
    A = dual.select(small, 1.0 - t * (1.0 / 6.0 - t * (1.0 / 120.0)), sine / theta)
    B = dual.select(small, 0.5 - t * (1.0 / 24.0 - t * (1.0 / 720.0)), 2.0 * half_sine * half_sine / t)
    C = dual.select(small, 1.0 / 6.0 - t * (1.0 / 120.0 - t * (1.0 / 5040.0)), (theta - sine) / (theta * t))
    W = skew(omega)
    Wv = W @ v
    return TracedPose(np.eye(3) + A * W + B * (W @ W), v + B * Wv + C * (W @ Wv))


class _Layout:
    """Where the inputs and outputs live in the workspace: n joints, ``bodies`` moving bodies (6 numbers each per
    wrench: the links, and first a floating base), m = n + 6 unknowns on a floating base (else n). A floating base's
    poses are 12 numbers, R row by row then p: its CoM frame's T₀ (input), the step's ΔT₀ (the residual's) and
    T₀ · ΔT₀ (the finish's)."""

    def __init__(self, n: int, bodies: int, floating: bool = False):
        m = n + 6 * floating
        sizes = {"q": n, "u": m, "dt": 1, "momentum": 6 * bodies, "weight": 6 * bodies, "impulse": m, "tau": n,
                 "step": m, "direction": m, "e": m, "jvp": m, "largest": 3, "transported": 6 * bodies,
                 "momentum_next": 6 * bodies, "weight_next": 6 * bodies, "p": m}
        # largest: max |e|, max |Δu|, max |u| (inf if not finite)
        if floating:
            sizes.update(T0=12, displacement=12, T0_next=12)
        self.start, self.size = {}, 0
        for name, size in sizes.items():
            self.start[name] = self.size
            self.size += size
        self.sizes = sizes

    def view(self, ws: np.ndarray, name: str) -> np.ndarray:
        return ws[self.start[name]:self.start[name] + self.sizes[name]]


def largest_magnitude(values: list):
    """max |v| over ``values``, or inf if any is not finite (a NaN must not pass a convergence test)."""
    largest = 0.0
    for value in values:
        magnitude = trace.fabs(value)
        largest = trace.select(trace.le(largest, magnitude), magnitude, largest)
    return trace.select(finite(values), largest, float("inf"))


def riqn_update(layout) -> trace.Function:
    """RIQN's step, u ← u − Δt · step (step = M⁻¹(q_k) e, given), then max |Δt · step| and max |u| after max |e|
    in "largest"; ``layout`` has ``start`` and ``sizes`` of "u", "dt", "step" and "largest"."""
    fn = trace.Function("update")
    u, dt = (fn.load(layout.start["u"] + k) for k in range(layout.sizes["u"])), fn.load(layout.start["dt"])
    change = [dt * fn.load(layout.start["step"] + k) for k in range(layout.sizes["step"])]
    u = [a - b for a, b in zip(u, change)]
    for k, value in enumerate(u):
        fn.store(layout.start["u"] + k, value)
    fn.store(layout.start["largest"] + 1, largest_magnitude(change))
    fn.store(layout.start["largest"] + 2, largest_magnitude(u))
    return fn


@trace.tracing
def _functions(robot: Robot, gravity, layout: _Layout, jacobian: bool = False) -> dict[str, trace.Function]:
    """The step's functions (residual, update, finish), or with ``jacobian`` the residual's product with a direction
    alone (a module of its own, compiled only for Newton's method: twice the residual's code)."""
    n, floating = robot.num_dofs, robot.floating_base
    bodies = (robot.base, *robot.links) if floating else robot.links

    def loads(fn, name):
        return [fn.load(layout.start[name] + k) for k in range(layout.sizes[name])]

    def wrenches(values):
        return {body.index: np.array(values[6 * k:6 * k + 6], dtype=object) for k, body in enumerate(bodies)}

    def store(fn, name, values):
        for k, value in enumerate(values):
            fn.store(layout.start[name] + k, value)

    def pose(values):
        return TracedPose(np.array(values[:9], dtype=object).reshape(3, 3), np.array(values[9:], dtype=object))

    def residual_of(fn, u):
        """e(u), the momenta carried to the next step ([Ad_ΔT]ᵀ μ per body) and ΔT₀, written into ``fn``."""
        q, (dt,) = loads(fn, "q"), loads(fn, "dt")
        momentum, weight = wrenches(loads(fn, "momentum")), wrenches(loads(fn, "weight"))
        impulse = loads(fn, "impulse")
        inverse_dt = trace.div(1.0, dt)
        dT, mu = {0: TracedPose(np.eye(3), np.zeros(3))}, {}
        if floating:  # the base's displacement ξ₀ = log ΔT₀ leads the unknowns
            xi0, u = np.array(u[:6], dtype=object), u[6:]
            dT[0], mu[0] = exp_pose(xi0), dlog_transpose_times(xi0, robot.base.G @ xi0 * inverse_dt)
        pTc = {j.index: parent_T_child(j, q[j.index - 1]) for j in robot.joints}
        pTc_next = {j.index: parent_T_child(j, u[j.index - 1]) for j in robot.joints}
        for joint in robot.tree_joints:
            j, p = joint.index, robot.link(joint.parent).index
            dT[j] = pTc[j].inverse().compose(dT[p]).compose(pTc_next[j])
            xi = log_pose(dT[j])
            mu[j] = dlog_transpose_times(xi, robot.link(joint.child).G @ xi * inverse_dt)
        body = {i: mu[i] - momentum[i] - weight[i] for i in mu}
        e = [a - b for a, b in zip(subtree_projections(robot, body, pTc), impulse)]
        return e, [x for b in bodies for x in dT[b.index].AdjointMap().T @ mu[b.index]], dT[0]

    if jacobian:
        jvp = trace.Function("jvp")  # J(u) · direction, exactly: the residual on duals seeded by the direction
        directions = loads(jvp, "direction")
        e, _, _ = residual_of(jvp, [dual.Dual(u, {"d": d}) for u, d in zip(loads(jvp, "u"), directions)])
        store(jvp, "jvp", [dual.tangents(x).get("d", 0.0) for x in e])
        return {"jvp": jvp}

    residual = trace.Function("residual")
    e, transported, displacement = residual_of(residual, loads(residual, "u"))
    store(residual, "e", e)
    residual.store(layout.start["largest"], largest_magnitude(e))
    store(residual, "transported", transported)
    if floating:
        store(residual, "displacement", [*displacement.R.ravel(), *displacement.p])

    update = riqn_update(layout)

    finish = trace.Function("finish")  # the Legendre transform at the next poses, from the base's T₀ · ΔT₀
    u, (dt,), tau = loads(finish, "u"), loads(finish, "dt"), loads(finish, "tau")
    carried = wrenches(loads(finish, "transported"))
    wT0 = TRACED.identity()
    if floating:
        u, wT0 = u[6:], pose(loads(finish, "T0")).compose(pose(loads(finish, "displacement")))
        store(finish, "T0_next", [*wT0.R.ravel(), *wT0.p])
    kin, pTc_next = kinematic_pass(robot, TRACED, u, [0.0] * n, wT0, np.zeros(6))
    half_dt = 0.5 * dt
    weight_next = {b.index: half_dt * gravity_wrench(b.mass, kin.wT[b.index], gravity) for b in bodies}
    momentum_next = {i: carried[i] + weight_next[i] for i in carried}
    p_next = subtree_projections(robot, momentum_next, pTc_next)
    store(finish, "momentum_next", [x for b in bodies for x in momentum_next[b.index]])
    store(finish, "weight_next", [x for b in bodies for x in weight_next[b.index]])
    store(finish, "p", [a + half_dt * t for a, t in zip(p_next, [0.0] * (6 * floating) + tau)])
    return {"residual": residual, "update": update, "finish": finish}


_MODULES: dict = {}
_MODULES_LOCK = threading.Lock()


def _module(robot: Robot, gravity: np.ndarray, jacobian: bool = False) -> tuple[native.Loaded, _Layout]:
    """The loaded code for this robot's numbers and gravity (the step's, or the Jacobian's), compiled once per
    process."""
    key = (robot_fingerprint(robot), tuple(gravity), jacobian)
    with _MODULES_LOCK:
        if key not in _MODULES:
            layout = _Layout(robot.num_dofs, len(robot.links) + robot.floating_base, robot.floating_base)
            functions = _functions(robot, gravity, layout, jacobian)
            prefix = f"del{next(_PREFIXES)}_"
            obj = native.compile_object(native.module_ir(functions, prefix, entries=()))
            _MODULES[key] = native.Loaded(obj, prefix, entries=(), extra=list(functions)), layout
            trace.release(*functions.values())
        return _MODULES[key]


class StepCode:
    """A compiled DEL residual and RIQN step (``residual`` and ``update`` of ``loaded``) on a workspace of its own
    laid out by ``layout`` (with "u", "dt", "step", "largest"): each integrator its own, so runs in several
    threads do not share one."""

    def __init__(self, robot: Robot, loaded: native.Loaded, layout, views: tuple[str, ...]):
        self.robot, self._loaded, self.layout = robot, loaded, layout
        self.ws = np.zeros(layout.size)
        self._address = self.ws.ctypes.data
        self._residual = loaded.function("residual")
        # the step M⁻¹e arrives as an array each iteration: one native entry writes it and runs the update
        self._bound = entry.bind(self.ws, loaded.extra["update"], None,  # keeps its plan alive
                                 [entry.Argument(entry.IN, layout.start["step"], (layout.sizes["step"],))])
        self._update = self._bound.call
        for name in views:
            setattr(self, name, layout.view(self.ws, name))
        self._largest = layout.start["largest"]

    def residual(self) -> float:
        """e at the u in the workspace (``self.e``); returns max |e| (inf if e is not finite)."""
        self._residual(self._address)
        return self.ws[self._largest]

    def update(self, step: np.ndarray) -> tuple[float, float]:
        """u ← u − Δt · ``step`` (M⁻¹e); returns (max |Δt · step|, max |u|), inf where not finite."""
        if not self._update(step):
            self.ws[self.layout.start["step"]:][:self.layout.sizes["step"]] = step
            self._loaded.function("update")(self._address)
        return self.ws[self._largest + 1], self.ws[self._largest + 2]


class CompiledDEL(StepCode):
    """The compiled residual, RIQN step and Legendre transform of one robot under one gravity (a tree without
    transmissions, its base fixed or floating: what ``VariationalIntegrator`` covers). Flat wrench arrays: body by
    body (a floating base first, then the links), 6 each. The workspace's views (``q``, ``u``, ``momentum``, …;
    on a floating base ``T0`` and ``T0_next`` too, 12 numbers: R row by row, then p) are the inputs and outputs."""

    def __init__(self, robot: Robot, gravity):
        self.gravity = np.asarray(gravity, float)
        super().__init__(robot, *_module(robot, self.gravity),
                         ("q", "u", "dt", "momentum", "weight", "impulse", "tau", "e", "momentum_next", "weight_next",
                          "p", *(("T0", "T0_next") if robot.floating_base else ())))
        self._jvp = None
        self._finish = self._loaded.function("finish")

    def jacobian(self) -> np.ndarray:
        """∂e/∂u at the u in the workspace, exactly (forward-mode derivatives of the same residual), column by
        column: m products J e_k (m unknowns), each about twice a residual (their code is compiled on the first
        call)."""
        if self._jvp is None:
            self._jacobian_code = _module(self.robot, self.gravity, jacobian=True)[0]
            self._jvp = self._jacobian_code.function("jvp")
        m = self.layout.sizes["u"]
        direction, jvp = self.layout.view(self.ws, "direction"), self.layout.view(self.ws, "jvp")
        J = np.empty((m, m))
        for k in range(m):
            direction[:] = 0.0
            direction[k] = 1.0
            self._jvp(self._address)
            J[:, k] = jvp
        return J

    def finish(self) -> None:
        """After the iteration, u = [ξ₀;] q_{k+1} and τ_k in ``tau``: the next momentum, weight and p (views), and on a
        floating base T0_next = T0 · ΔT₀ (ΔT₀ the last residual's)."""
        self._finish(self._address)
