"""The baseline of paper 004's Fig. 3: the discrete Euler–Lagrange (DEL) equations in generalized coordinates, as
the scalable variational integrator (SVI, Johnson & Murphey) evaluates them, compiled like DRNEA
(``gtdyn.compiled.drnea``) so that the comparison measures the two evaluations, not Python against native code.

The midpoint discrete Lagrangian of L = ½ q̇ᵀ M(q) q̇ − P(q), P = −Σ mᵢ g·pᵢ (pᵢ: link i's CoM):

    L_d(q_a, q_b) = Δt L(q̄, v̄),   q̄ = (q_a + q_b)/2,   v̄ = (q_b − q_a)/Δt
    D1 L_d = (Δt/2) ∂L/∂q − ∂L/∂q̇,   D2 L_d = (Δt/2) ∂L/∂q + ∂L/∂q̇                     (both at (q̄, v̄))

and the forced DEL residual in DRNEA's sign and impulse convention (``gtdyn.simulation.variational``: torques
held over each step, e ≈ M (u − u*)/Δt), so that RIQN's step u ← u − Δt M⁻¹(q_k) e is the same step on both:

    e(u)    = −D1 L_d(q_k, u) − p_k − (Δt/2) τ_k  = −(D2 L_d(q_{k−1}, q_k) + D1 L_d(q_k, u) + (Δt/2)(τ_{k−1} + τ_k))
    p_{k+1} = D2 L_d(q_k, q_{k+1}) + (Δt/2) τ_k,   p_0 = M(q_0) q̇_0,   q̇_{k+1} = M⁻¹(q_{k+1}) p_{k+1}

∂L/∂q and ∂L/∂q̇ (= M q̇) are forward-mode derivatives (``gtdyn.compiled.dual``) of T = Σ ½ Vᵢᵀ Gᵢ Vᵢ and of P
through the kinematics pass (eq. 4, ``gtdyn.equations.twist_equation``), seeded in the 2n directions of q̄ and v̄:
link i's twist carries a tangent along every joint between it and the base, so an evaluation costs O(n²) on a
chain. That is the SVI's cost class (its recursion carries ∂g_i/∂q_j for every frame i and ancestor j), against
DRNEA's O(n). The DEL's Jacobian would need second derivatives, which the duals do not nest, so there is no
Newton curve for it.

The pass is cut into one generated function per joint, the parent's twist (and pose, under gravity) handed over
in the workspace with its tangents: traced as one function, the code generator's time grew faster than the
square of the chain's length (minutes at 50 joints); cut, it grows with the operations.
"""

from __future__ import annotations

import itertools

import numpy as np

from gtdyn.compiled import dual, native, trace
from gtdyn.compiled.cache import robot_fingerprint
from gtdyn.compiled.drnea import StepCode, largest_magnitude, riqn_update
from gtdyn.compiled.kinematics import TRACED, TracedPose, parent_T_child
from gtdyn.equations import twist_equation
from gtdyn.kinematics.forward import child_twist
from gtdyn.model.robot import Robot
from gtdyn.simulation.variational import VariationalIntegrator, not_converged
from gtdyn.simulation.variational_compiled import CompiledVariationalIntegrator

_PREFIXES = itertools.count()


class _Layout:
    """The workspace: the named vectors of n (``dt`` 1; ``largest`` 3: max |e|, max |Δu|, max |u|), then the
    values and tangents handed from joint to joint, allocated as the code is written."""

    NAMES = ("q", "u", "dt", "momentum", "impulse", "step", "qbar", "vbar", "dLdq", "dLdv", "e", "carried", "largest")

    def __init__(self, n: int):
        self.sizes = {name: 1 if name == "dt" else 3 if name == "largest" else n for name in self.NAMES}
        self.start, self.size = {}, 0
        for name in self.NAMES:
            self.start[name] = self.allocate(self.sizes[name])

    def allocate(self, count: int) -> int:
        start, self.size = self.size, self.size + count
        return start

    def view(self, ws: np.ndarray, name: str) -> np.ndarray:
        return ws[self.start[name]:self.start[name] + self.sizes[name]]

    def slot(self, name: str, joint: int) -> int:
        """Where joint ``joint`` (1-based) of a vector of n lives."""
        return self.start[name] + joint - 1


def _hand_over(fn: trace.Function, layout: _Layout, values) -> list:
    """Store duals for the next joint's function: per value, its index and its tangents' (direction → index)."""
    slots = []
    for x in values:
        index = layout.allocate(1)
        fn.store(index, dual.value(x))
        tangents = {}
        for direction, tangent in dual.tangents(x).items():
            tangents[direction] = layout.allocate(1)
            fn.store(tangents[direction], tangent)
        slots.append((index, tangents))
    return slots


def _take_over(fn: trace.Function, slots: list) -> np.ndarray:
    """The duals ``_hand_over`` stored, loaded in ``fn``."""
    return np.array([dual.Dual(fn.load(index), {d: fn.load(k) for d, k in tangents.items()})
                     for index, tangents in slots], dtype=object)


def _joint_function(robot: Robot, joint, gravity: np.ndarray, layout: _Layout, handed: dict) -> trace.Function:
    """One joint's step of the pass: the child's twist (and pose) as duals from the parent's (``handed``), and the
    child's share of ∂L/∂q̄ and ∂L/∂v̄ added to the sums (the first share of a direction is its joint's own)."""
    j, child = joint.index, robot.link(joint.child)
    c, p = child.index, robot.link(joint.parent).index
    fn = trace.Function(f"joint{j}")
    q = dual.Dual.seed(fn.load(layout.slot("qbar", j)), ("q", j))
    v = dual.Dual.seed(fn.load(layout.slot("vbar", j)), ("v", j))
    pTc = parent_T_child(joint, q)
    V_p = _take_over(fn, handed["V", p]) if p else np.zeros(6)
    V = child_twist(TRACED, twist_equation(pTc.inverse(), joint.screw_axis), V_p, v)
    momentum = child.G @ np.array([dual.value(x) for x in V], dtype=object)  # ∂T/∂x = Σ (∂V/∂x)ᵀ G V
    directions = {d for x in V for d in dual.tangents(x)}
    share = {d: trace.dot([dual.tangents(x).get(d, 0.0) for x in V], momentum) for d in directions}
    has_children = any(robot.link(other.parent).index == c for other in robot.tree_joints)
    if np.any(gravity):  # −∂P/∂x = m gᵀ ∂p/∂x
        if p:
            R_p, p_p = np.split(_take_over(fn, handed["T", p]), [9])
            wT = TracedPose(R_p.reshape(3, 3), p_p).compose(pTc)
        else:
            wT = pTc
        for d in {d for x in wT.p for d in dual.tangents(x)}:
            share[d] = share.get(d, 0.0) + trace.dot(child.mass * gravity, [dual.tangents(x).get(d, 0.0)
                                                                          for x in wT.p])
        if has_children:
            handed["T", c] = _hand_over(fn, layout, [*wT.R.ravel(), *wT.p])
    if has_children:
        handed["V", c] = _hand_over(fn, layout, V)
    for kind, name in (("q", "dLdq"), ("v", "dLdv")):
        for a in range(1, robot.num_dofs + 1):
            if a == j:
                fn.store(layout.slot(name, a), share.get((kind, a), 0.0))
            elif (kind, a) in share:
                fn.store(layout.slot(name, a), fn.load(layout.slot(name, a)) + share[kind, a])
    return fn


def _functions(robot: Robot, gravity: np.ndarray, layout: _Layout) -> dict[str, trace.Function]:
    """The joints' functions; ``derivatives`` (∂L/∂q̄, ∂L/∂v̄ at the q̄, v̄ in the workspace); ``residual`` (e and the
    carried D2 L_d at q_k, u); ``update`` (RIQN's u ← u − Δt · step, as DRNEA's)."""

    def loads(fn, name):
        return [fn.load(layout.start[name] + k) for k in range(layout.sizes[name])]

    def store(fn, name, values):
        for k, value in enumerate(values):
            fn.store(layout.start[name] + k, value)

    handed: dict = {}
    functions = {f"joint{joint.index}": _joint_function(robot, joint, gravity, layout, handed)
                 for joint in robot.tree_joints}
    derivatives = trace.Function("derivatives")
    for name in list(functions):
        derivatives.call(functions[name])

    residual = trace.Function("residual")
    q, u, (dt,) = loads(residual, "q"), loads(residual, "u"), loads(residual, "dt")
    inverse_dt = trace.div(1.0, dt)
    store(residual, "qbar", [(a + b) * 0.5 for a, b in zip(q, u)])
    store(residual, "vbar", [(b - a) * inverse_dt for a, b in zip(q, u)])
    residual.call(derivatives)
    dLdq, dLdv = loads(residual, "dLdq"), loads(residual, "dLdv")
    momentum, impulse = loads(residual, "momentum"), loads(residual, "impulse")
    half_dt = dt * 0.5
    e = [pv - half_dt * pq - m - i for pq, pv, m, i in zip(dLdq, dLdv, momentum, impulse)]
    store(residual, "e", e)
    residual.store(layout.start["largest"], largest_magnitude(e))
    store(residual, "carried", [pv + half_dt * pq for pq, pv in zip(dLdq, dLdv)])

    update = riqn_update(layout)
    return {**functions, "derivatives": derivatives, "residual": residual, "update": update}


_MODULES: dict = {}


def _module(robot: Robot, gravity: np.ndarray) -> tuple[native.Loaded, _Layout, int]:
    """The loaded code for this robot's numbers and gravity, compiled once per process, and the arithmetic
    operations one residual runs."""
    key = (robot_fingerprint(robot), tuple(gravity))
    if key not in _MODULES:
        layout = _Layout(robot.num_dofs)
        functions = _functions(robot, gravity, layout)
        prefix = f"mmdel{next(_PREFIXES)}_"
        obj = native.compile_object(native.module_ir(functions, prefix, entries=()))
        operations = sum(fn.count() for name, fn in functions.items() if name != "update")
        _MODULES[key] = native.Loaded(obj, prefix, entries=(), extra=list(functions)), layout, operations
    return _MODULES[key]


class MassMatrixDEL(StepCode):
    """The compiled mass-matrix DEL residual and RIQN step of one robot (fixed base, a tree) under one gravity,
    with ``CompiledDEL``'s interface where the integrator uses it: ``residual()``, ``update(step)``, the views
    ``q``, ``u``, ``dt``, ``e``; and ``momentum`` (p_k), ``impulse`` ((Δt/2) τ_k), ``carried`` (D2 L_d of the last
    residual)."""

    def __init__(self, robot: Robot, gravity):
        self.gravity = np.asarray(gravity, float)
        loaded, layout, self.operations = _module(robot, self.gravity)  # operations: per residual
        super().__init__(robot, loaded, layout, _Layout.NAMES)
        self._derivatives = loaded.function("derivatives")

    def derivatives(self, q, v) -> tuple[np.ndarray, np.ndarray]:
        """(∂L/∂q, ∂L/∂q̇ = M(q) q̇) at (q, q̇)."""
        self.qbar[:], self.vbar[:] = q, v
        self._derivatives(self._address)
        return self.dLdq.copy(), self.dLdv.copy()


class MassMatrixIntegrator(CompiledVariationalIntegrator):
    """The midpoint variational integrator in generalized coordinates, each step's DEL solved by the RIQN loop of
    ``CompiledVariationalIntegrator.iterate`` (the same code, tolerances and M⁻¹ solve as DRNEA's curve), from
    the same first guess q_k + Δt q̇_k. The convergence scale is the generalized momentum's (max(1, |p_k|,
    |(Δt/2) τ_k|)) where DRNEA's is its bodies' momenta."""

    def __init__(self, robot: Robot, gravity, mass_inverse):
        VariationalIntegrator.__init__(self, robot, gravity, mass_inverse)
        if robot.floating_base:
            raise ValueError("MassMatrixIntegrator: fixed bases only")
        self.compiled = MassMatrixDEL(robot, self.gravity)

    def start(self, q0, v0, tau0, dt: float, T0=None, V0=None) -> dict:
        c, tau = self.compiled, np.asarray(tau0, float)
        c.dt[0] = dt
        c.momentum[:] = c.derivatives(q0, v0)[1]  # p_0 = M(q_0) q̇_0
        c.impulse[:] = dt / 2 * tau
        return {"q": np.array(q0, float), "v": np.array(v0, float), "tau": tau, "dt": dt}

    def step(self, state: dict, tau_next_of) -> tuple[dict, int]:
        c, dt, q = self.compiled, state["dt"], state["q"]
        c.q[:] = q
        c.u[:] = q + dt * state["v"]
        scale = max(1.0, float(np.abs(c.impulse).max(initial=0.0)), float(np.abs(c.momentum).max(initial=0.0)))
        iteration = self.iterate(q, dt, scale)
        if iteration is None:
            not_converged(state, float(np.abs(c.e).max()))
        self.iterations.append(iteration)
        u = c.u.copy()  # q_{k+1}; D2 L_d is the last residual's, as DRNEA carries its momenta
        p = c.carried + dt / 2 * state["tau"]
        v_next = self.mass_inverse(u, p)
        tau_next = np.asarray(tau_next_of(u, v_next), float)
        c.momentum[:] = p
        c.impulse[:] = dt / 2 * tau_next
        return {"q": u, "v": v_next, "tau": tau_next, "dt": dt}, iteration
