"""Pinocchio on the same URDF file, with vectors in a gtdyn robot's joint order: the one adapter the benchmarks
and the tests compare against.

Pinocchio is optional (the ``test`` extra installs it) and imported only when a ``PinocchioModel`` is made,
so ``import gtdyn.bench`` does not need it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from gtdyn.bench.orderings import Row, State
from gtdyn.bench.timing import measure
from gtdyn.equations import GRAVITY
from gtdyn.model.robot import Robot


class PinocchioModel:
    """Pinocchio's model of the URDF file at ``path``, which gtdyn read as ``robot``.

    Every method takes and returns vectors in ``robot.joint_names`` order: a continuous joint's q is its angle
    (Pinocchio stores (cos q, sin q)), velocity-sized vectors are permuted by each joint's ``idx_v``.
    ``external_wrenches`` maps a link or frame name to the wrench [m; f] on it, in that frame — as in
    ``gtdyn.inverse_dynamics``. Closed loops are not covered (URDF has none).
    """

    def __init__(self, path: str, robot: Robot, gravity=GRAVITY):
        import pinocchio

        self.pin = pinocchio
        self.model = self._build(path)
        self.model.gravity.linear = np.asarray(gravity, float)
        self.data = self.model.createData()
        names = [self.model.names[i] for i in range(self.first_joint, self.model.njoints)]
        if sorted(names) != sorted(robot.joint_names) or self.model.nv != robot.num_dofs + 6 * (self.first_joint - 1):
            raise ValueError(f"{path}: Pinocchio reads joints {names}, gtdyn {robot.joint_names}")
        self.joint_names = list(robot.joint_names)
        joints = [self.model.joints[self.model.getJointId(n)] for n in robot.joint_names]
        self.idx_v = np.array([j.idx_v for j in joints], dtype=int)  # gtdyn joint k -> Pinocchio velocity index
        self.idx_q = [(j.idx_q, j.nq) for j in joints]

    first_joint = 1  # Pinocchio's joint 0 is the universe

    def _build(self, path: str):
        return self.pin.buildModelFromUrdf(path)

    # -- gtdyn order <-> Pinocchio order ---------------------------------------------------------------

    def configuration(self, q) -> np.ndarray:
        """Pinocchio's configuration vector for joint values ``q``."""
        out = self.pin.neutral(self.model)
        for (i, nq), qk in zip(self.idx_q, np.asarray(q, float)):
            out[i:i + nq] = [qk] if nq == 1 else [np.cos(qk), np.sin(qk)]
        return out

    def tangent(self, x) -> np.ndarray:
        """A velocity-sized vector (v, q̈, τ) in Pinocchio's order."""
        out = np.zeros(self.model.nv)
        out[self.idx_v] = x
        return out

    def joint_order(self, x) -> np.ndarray:
        """A velocity-sized Pinocchio vector in gtdyn's joint order."""
        return np.asarray(x)[self.idx_v]

    def fext(self, external_wrenches: Mapping[str, object] | None = None) -> list:
        """Pinocchio's per-joint external forces (each in its joint's frame) for wrenches [m; f] on frames."""
        forces = [self.pin.Force.Zero() for _ in range(self.model.njoints)]
        for frame, wrench in (external_wrenches or {}).items():
            placed = self.model.frames[self.model.getFrameId(frame)]
            wrench = np.asarray(wrench, float)
            forces[placed.parentJoint] += placed.placement.act(self.pin.Force(wrench[3:], wrench[:3]))
        return forces

    # -- the algorithms, in gtdyn order --------------------------------------------------------------

    def rnea(self, q, v, qdd, external_wrenches=None) -> np.ndarray:
        """Inverse dynamics τ = M(q) q̈ + h(q, v) − Σ Jᵀ f (Pinocchio's RNEA)."""
        tau = self.pin.rnea(self.model, self.data, self.configuration(q), self.tangent(v), self.tangent(qdd),
                            self.fext(external_wrenches))
        return self.joint_order(tau)

    def aba(self, q, v, tau, external_wrenches=None) -> np.ndarray:
        """Forward dynamics q̈ (Pinocchio's articulated-body algorithm)."""
        qdd = self.pin.aba(self.model, self.data, self.configuration(q), self.tangent(v), self.tangent(tau),
                           self.fext(external_wrenches))
        return self.joint_order(qdd)

    def aba_derivatives(self, q, v, tau) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """∂q̈/∂q, ∂q̈/∂q̇, ∂q̈/∂τ (= M⁻¹) by Pinocchio's ``computeABADerivatives``, in gtdyn's joint order."""
        out = self.pin.computeABADerivatives(self.model, self.data, self.configuration(q), self.tangent(v),
                                             self.tangent(tau))
        return tuple(self._ordered(d) for d in out)

    def rnea_derivatives(self, q, v, qdd) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """∂τ/∂q, ∂τ/∂q̇, ∂τ/∂q̈ (= M) by Pinocchio's ``computeRNEADerivatives``, in gtdyn's joint order."""
        dq, dv, M = self.pin.computeRNEADerivatives(self.model, self.data, self.configuration(q), self.tangent(v),
                                                    self.tangent(qdd))
        return self._ordered(dq), self._ordered(dv), self._ordered(np.triu(M) + np.triu(M, 1).T)

    def _ordered(self, D) -> np.ndarray:
        """A Pinocchio (nv × nv) derivative with rows and columns in gtdyn's order."""
        order = self.velocity_order()
        return np.asarray(D)[np.ix_(order, order)]

    def velocity_order(self) -> np.ndarray:
        """Pinocchio's velocity index of each of gtdyn's tangent coordinates."""
        return self.idx_v

    def mass_matrix(self, q) -> np.ndarray:
        """M(q), symmetric (Pinocchio's CRBA fills the upper triangle)."""
        M = self._mass_matrix(self.configuration(q))
        return M[np.ix_(self.idx_v, self.idx_v)]

    def nonlinear_effects(self, q, v) -> np.ndarray:
        """h(q, v): Coriolis, centrifugal and gravity torques (τ at q̈ = 0)."""
        h = self.pin.nonLinearEffects(self.model, self.data, self.configuration(q), self.tangent(v))
        return self.joint_order(h)

    def forward_by_crba(self, q, v, tau) -> np.ndarray:
        """Forward dynamics as M⁻¹(τ − h), from CRBA and the nonlinear effects."""
        return self.joint_order(self._forward_by_crba(self.configuration(q), self.tangent(v), self.tangent(tau)))

    def hybrid(self, q, v, qdd: Mapping[str, float], tau: Mapping[str, float], external_wrenches=None):
        """Hybrid dynamics by three passes (as Featherstone's method): q̈ given at the joints in ``qdd`` and τ
        at those in ``tau`` (dicts by joint name, together every joint); returns full (q̈, τ) vectors."""
        if sorted([*qdd, *tau]) != sorted(self.joint_names):
            raise ValueError(f"hybrid: give each of {', '.join(self.joint_names)} once, in qdd or in tau")
        given = self.tangent([name in qdd for name in self.joint_names]).astype(bool)
        a = self.tangent([qdd.get(name, 0.0) for name in self.joint_names])
        t = self.tangent([tau.get(name, 0.0) for name in self.joint_names])
        fext = self.fext(external_wrenches)
        qdd_out, tau_out = self._hybrid(self.configuration(q), self.tangent(v), a, t, given, fext)
        return self.joint_order(qdd_out), self.joint_order(tau_out)

    # -- kernels on Pinocchio-ordered vectors (what the benchmark times) --------------------------------

    def _mass_matrix(self, q) -> np.ndarray:
        M = self.pin.crba(self.model, self.data, q)
        return np.triu(M) + np.triu(M, 1).T

    def _forward_by_crba(self, q, v, tau) -> np.ndarray:
        h = self.pin.nonLinearEffects(self.model, self.data, q, v)
        return np.linalg.solve(self._mass_matrix(q), tau - h)  # LAPACK (Cholesky would need SciPy; M is small)

    def _hybrid(self, q, v, a, tau, given, fext=None):
        """Pass 1: the bias τ of the given q̈ (unknown q̈ = 0); pass 2: M_ff q̈_f = τ_f − bias_f; pass 3: τ."""
        fext = fext if fext is not None else self.fext()
        bias = self.pin.rnea(self.model, self.data, q, v, np.where(given, a, 0.0), fext)
        M = self._mass_matrix(q)
        free = ~given
        qdd = np.where(given, a, 0.0)
        qdd[free] = np.linalg.solve(M[np.ix_(free, free)], tau[free] - bias[free])
        return qdd, np.array(self.pin.rnea(self.model, self.data, q, v, qdd, fext))


class FreeFlyerPinocchio(PinocchioModel):
    """Pinocchio's model of a URDF with a free-flyer root joint, for a gtdyn robot loaded with
    ``base="floating"``. Vectors in gtdyn's conventions: joints in ``robot.joint_names`` order, base twists,
    accelerations and wrenches [angular; linear] in the root link frame (Pinocchio's are [linear; angular])."""

    first_joint = 2  # after the universe and the free flyer

    def _build(self, path: str):
        return self.pin.buildModelFromUrdf(path, self.pin.JointModelFreeFlyer())

    def configuration(self, q, base_pose=None) -> np.ndarray:
        """Pinocchio's configuration: the base pose (4×4, world ← root link; identity if None), then joints."""
        out = super().configuration(q)
        if base_pose is not None:
            T = np.asarray(base_pose, float)
            out[:3] = T[:3, 3]
            out[3:7] = self.pin.Quaternion(T[:3, :3]).coeffs()  # x, y, z, w
        return out

    def tangent(self, x, base=None) -> np.ndarray:
        """A velocity-sized vector: the base part from gtdyn's [angular; linear] (zero if None), then joints."""
        out = super().tangent(x)
        if base is not None:
            out[:3], out[3:6] = base[3:], base[:3]
        return out

    def velocity_order(self) -> np.ndarray:
        """The base's [ω; v] (Pinocchio's 3:6, 0:3), then the joints."""
        return np.concatenate([[3, 4, 5, 0, 1, 2], self.idx_v])

    def aba_derivatives(self, q, v, tau, base_pose=None, base_twist=None, base_wrench=None) -> tuple:
        """∂[base accel; q̈]/∂[ξ; q], /∂[base twist; q̇], /∂[base wrench; τ] (= M⁻¹), gtdyn's order and axes."""
        out = self.pin.computeABADerivatives(self.model, self.data, self.configuration(q, base_pose),
                                             self.tangent(v, base_twist), self.tangent(tau, base_wrench))
        return tuple(self._ordered(d) for d in out)

    def rnea_derivatives(self, q, v, qdd, base_pose=None, base_twist=None, base_accel=None) -> tuple:
        """∂[base wrench; τ]/∂[ξ; q], /∂[base twist; q̇], /∂[base accel; q̈] (= M), gtdyn's order and axes."""
        dq, dv, M = self.pin.computeRNEADerivatives(self.model, self.data, self.configuration(q, base_pose),
                                                    self.tangent(v, base_twist), self.tangent(qdd, base_accel))
        return self._ordered(dq), self._ordered(dv), self._ordered(np.triu(M) + np.triu(M, 1).T)

    def base_part(self, x) -> np.ndarray:
        """The base part of a Pinocchio velocity-sized vector, as gtdyn's [angular; linear]."""
        return np.concatenate([x[3:6], x[:3]])

    def rnea(self, q, v, qdd, base_pose=None, base_twist=None, base_accel=None):
        """(base wrench, joint torques) that produce the motion (Pinocchio's RNEA)."""
        tau = self.pin.rnea(self.model, self.data, self.configuration(q, base_pose), self.tangent(v, base_twist),
                            self.tangent(qdd, base_accel))
        return self.base_part(tau), self.joint_order(tau)

    def aba(self, q, v, tau, base_pose=None, base_twist=None):
        """(base acceleration, joint accelerations) of the free robot under joint torques (Pinocchio's ABA)."""
        a = self.pin.aba(self.model, self.data, self.configuration(q, base_pose), self.tangent(v, base_twist),
                         self.tangent(tau))
        return self.base_part(a), self.joint_order(a)


class PinocchioContacts:
    """Pinocchio's constrained dynamics (``constraintDynamics``, exact: no proximal regularisation) of a
    ``FreeFlyerPinocchio`` with rigid contacts at frames: ``kind`` "point" (3D) or "surface" (6D), each in
    its frame (Pinocchio's LOCAL), as ``gtdyn.Contact(frame, kind=kind)``. ``solve`` takes Pinocchio-ordered
    vectors (what a benchmark times); ``__call__`` takes gtdyn's and returns (base_accel, qdd, forces), the
    forces per contact as gtdyn's contact variables (3: f; 6: [m; f]), concatenated."""

    def __init__(self, ref: FreeFlyerPinocchio, frames: list[str], kind: str = "point"):
        pin, model = ref.pin, ref.model
        self.ref, self.kind = ref, kind
        contact_type = pin.ContactType.CONTACT_3D if kind == "point" else pin.ContactType.CONTACT_6D
        self.models = pin.StdVec_RigidConstraintModel()
        for name in frames:
            frame = model.frames[model.getFrameId(name)]
            self.models.append(pin.RigidConstraintModel(contact_type, model, frame.parentJoint, frame.placement,
                                                        pin.ReferenceFrame.LOCAL))
        self.datas = pin.StdVec_RigidConstraintData()
        for contact in self.models:
            self.datas.append(contact.createData())
        pin.initConstraintDynamics(model, ref.data, self.models, self.datas)
        self.settings = pin.ProximalSettings(1e-14, 1e-14, 0.0, 1)  # mu = 0: the exact KKT solution

    def solve(self, q, v, tau) -> np.ndarray:
        return self.ref.pin.constraintDynamics(self.ref.model, self.ref.data, q, v, tau, self.models, self.datas,
                                               self.settings)

    def __call__(self, q, v, tau, base_pose=None, base_twist=None):
        ref = self.ref
        a = self.solve(ref.configuration(q, base_pose), ref.tangent(v, base_twist), ref.tangent(tau))
        forces = np.asarray(ref.data.lambda_c, float)
        if self.kind == "surface":  # Pinocchio's [f; m] per contact -> gtdyn's [m; f]
            forces = forces.reshape(-1, 6)[:, [3, 4, 5, 0, 1, 2]].ravel()
        return ref.base_part(a), ref.joint_order(a), forces


def bench_pinocchio(robot: Robot, path: str, kind: str, state: State, repeat: int = 30, inner: int = 50,
                    warmup: int = 20) -> list[Row]:
    """Pinocchio on the same URDF and state; empty if Pinocchio is not installed, or for other files (closed
    loops need constraint dynamics, which this comparison does not cover; transmissions: Pinocchio reads
    <mimic> joints as free).

    Timed: Pinocchio's own calls on vectors already in its order (the conversion from gtdyn's order is not
    part of the algorithm); each row's ``max_error`` is against the state's reference solution."""
    if not path.lower().endswith(".urdf") or robot.loop_joints or robot.transmissions:
        return []  # Pinocchio's aba reads <mimic> joints as free
    try:
        ref = PinocchioModel(path, robot)
    except ImportError:
        return []
    pin, model, data = ref.pin, ref.model, ref.data
    q, v, a, tau = ref.configuration(state.q), ref.tangent(state.v), ref.tangent(state.qdd), ref.tangent(state.tau)
    given = ref.tangent([name in state.known_qdd for name in ref.joint_names]).astype(bool)
    fext = ref.fext()
    cases = {"inverse": [("pinocchio rnea", lambda: pin.rnea(model, data, q, v, a))],
             "forward": [("pinocchio aba", lambda: pin.aba(model, data, q, v, tau)),
                         ("pinocchio crba+solve", lambda: ref._forward_by_crba(q, v, tau))],
             "hybrid": [("pinocchio rnea+crba+solve (3 passes)", lambda: ref._hybrid(q, v, a, tau, given, fext))]}[kind]
    rows = []
    scale = max(np.max(np.abs(state.tau)), np.max(np.abs(state.qdd)), 1e-300)
    for name, fn in cases:
        row = Row(robot.name, robot.num_dofs, kind, name)
        row.timings["solve_us"] = measure(fn, repeat, inner, warmup)
        out = fn()
        qdd_pin, tau_pin = out if isinstance(out, tuple) else ((out, tau) if kind == "forward" else (a, out))
        row.max_error = float(max(np.max(np.abs(ref.joint_order(qdd_pin) - state.qdd)),
                                  np.max(np.abs(ref.joint_order(tau_pin) - state.tau))) / scale)
        rows.append(row)
    return rows
