"""Compiled frame kinematics: ``gtdyn.kinematics.frames``'s placements, Jacobians, velocities and J̇ q̇ of a fixed
list of frames, for the loops that ask for them at every state (inverse kinematics, operational-space control,
contact constraints).

The kinematics pass is traced once (``gtdyn.compiled.kinematics``) and stores the poses (twists, accelerations)
of the bodies the frames need in the workspace; one small function per frame and quantity (small functions
compile fast) reads them and writes the reference functions' formulas; ``gtdyn.compiled.native`` makes machine
code of it. Two modules, each compiled when first called: at q, the placements (entry ``fast``) or with the
Jacobians (``main``); at (q, q̇), the velocities (``fast``) or with J̇ q̇ (``main``).

Nothing is solved, so nothing falls back: the status is 1 when every input is finite and a floating base's pose
is a rigid transform (as ``gtdyn.arguments.pose_argument`` accepts it); otherwise the boundary's checks run on
the inputs and raise the reference functions' error. Closed loops are read as the reference functions read them:
the spanning tree's kinematics at the q given (``gtdyn.close_loops`` gives a state that closes them).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from gtdyn.arguments import choice, robot_argument
from gtdyn.compiled import native, trace
from gtdyn.compiled.kinematic_calls import POSE, TWIST, CompiledKinematics, Module, arrived_modules
from gtdyn.compiled.kinematics import TracedPose, traced_kinematics
from gtdyn.compiled.validity import finite
from gtdyn.kinematics.frames import REFERENCES, acceleration_of_frame, ancestors, frame_on_body, link_accelerations
from gtdyn.model.robot import Robot
from gtdyn.spatial import skew

# each quantity: its module, the entry that computes it, and its part of the module's answer
QUANTITIES = {"placement": ("at_q", "fast", 0), "jacobian": ("at_q", "main", 1),
              "placement_jacobian": ("at_q", "main", None), "velocity": ("motion", "fast", 0),
              "bias_acceleration": ("motion", "main", 1)}
_PREFIXES = itertools.count()


class CompiledFrames(CompiledKinematics):
    """``frames`` of ``robot`` (names in ``robot.frames``; one name alone gives answers without the frame axis) in
    ``reference``'s axes ("local" or "world_aligned"), as compiled code. Each method takes the arguments of the
    reference function of the same name and gives its answer for every frame, equal to round-off:

    * ``placement(q, base_pose=None)``: wTf as 4×4 matrices, (k, 4, 4) (``frame_placement``, a Pose3 each);
    * ``jacobian(q, base_pose=None)``: (k, 6, nv), ``frame_jacobian``;
    * ``placement_jacobian(q, base_pose=None)``: both, from one run of the code;
    * ``velocity(q, v, base_pose=None, base_twist=None)``: (k, 6), ``frame_velocity``;
    * ``bias_acceleration(q, v, base_pose=None, base_twist=None)``: J̇ q̇, (k, 6), ``frame_bias_acceleration``.

    ``batch_<method>(Q[, V], base_pose=None[, base_twist=None], threads=1)``: N states, Q and V of shape (N, n),
    base poses (N, 4, 4) or a list of ``gtsam.Pose3``, base twists (N, 6); answers with a leading axis N;
    ``threads`` > 1 splits the states among native threads. Bad arguments raise the reference functions'
    ``ArgumentError`` (in a batch, naming the row: ``Q[3]``, ``base_pose[3]``). Calls from several threads are
    safe: a thread other than the one that made the object takes a fresh workspace per call. It pickles with the
    modules compiled so far, whose code another CPU compiles again when first called (process pools, Dask)."""

    QUANTITIES = QUANTITIES

    def __init__(self, robot: Robot, frames, reference: str = "local", modules: dict | None = None):
        super().__init__(robot_argument(robot), modules)
        self.reference = choice("reference", reference, REFERENCES)
        self.single = isinstance(frames, str)
        self.frames = [frames] if self.single or not hasattr(frames, "__iter__") else list(frames)
        self.bodies = [frame_on_body(robot, name) for name in self.frames]  # each name checked as the reference does

    # -- one state -------------------------------------------------------------------------------------------

    def placement(self, q, base_pose=None) -> np.ndarray:
        return self._calls["placement"](self, q, None, base_pose, None)

    def jacobian(self, q, base_pose=None) -> np.ndarray:
        return self._calls["jacobian"](self, q, None, base_pose, None)

    def placement_jacobian(self, q, base_pose=None) -> tuple[np.ndarray, np.ndarray]:
        return self._calls["placement_jacobian"](self, q, None, base_pose, None)

    def velocity(self, q, v, base_pose=None, base_twist=None) -> np.ndarray:
        return self._calls["velocity"](self, q, v, base_pose, base_twist)

    def bias_acceleration(self, q, v, base_pose=None, base_twist=None) -> np.ndarray:
        return self._calls["bias_acceleration"](self, q, v, base_pose, base_twist)

    # -- N states --------------------------------------------------------------------------------------------

    def batch_placement(self, Q, base_pose=None, threads: int = 1) -> np.ndarray:
        return self._batch("placement", Q, None, base_pose, None, threads)

    def batch_jacobian(self, Q, base_pose=None, threads: int = 1) -> np.ndarray:
        return self._batch("jacobian", Q, None, base_pose, None, threads)

    def batch_placement_jacobian(self, Q, base_pose=None, threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
        return self._batch("placement_jacobian", Q, None, base_pose, None, threads)

    def batch_velocity(self, Q, V, base_pose=None, base_twist=None, threads: int = 1) -> np.ndarray:
        return self._batch("velocity", Q, V, base_pose, base_twist, threads)

    def batch_bias_acceleration(self, Q, V, base_pose=None, base_twist=None, threads: int = 1) -> np.ndarray:
        return self._batch("bias_acceleration", Q, V, base_pose, base_twist, threads)

    # -- calling ---------------------------------------------------------------------------------------------

    def _shapes(self, name: str) -> list[tuple[int, ...]]:
        """Per frame (the frame axis left out for one name alone): [ω; v] twists, or a pose and a Jacobian."""
        frames = () if self.single else (len(self.frames),)
        return [(*frames, *shape) for shape in ([(6,), (6,)] if name == "motion" else [(4, 4), (6, self.nv)])]

    def _compile(self, name: str) -> Module:
        return _compile(self.robot, self.bodies, self.reference, name)

    def __reduce__(self):
        return _unpickled, (self.robot, self.frames[0] if self.single else self.frames, self.reference,
                            self._modules_to_send(), native.target_id())

    def __repr__(self) -> str:
        frames = repr(self.frames[0]) if self.single else self.frames
        return f"CompiledFrames('{self.robot.name}', {frames}, reference='{self.reference}')"


def compile_frames(robot: Robot, frames, *, reference: str = "local") -> CompiledFrames:
    """Compiled placements, Jacobians, velocities and J̇ q̇ of ``frames`` (a name in ``robot.frames``, or a list
    of them) in ``reference``'s axes, for fixed and floating bases: see ``CompiledFrames``. The code at q and the
    code at (q, q̇) are each generated and compiled when first called."""
    return CompiledFrames(robot, frames, reference)


def _unpickled(robot: Robot, frames, reference: str, modules: dict, target: str) -> CompiledFrames:
    """A pickled ``CompiledFrames``, here: with its modules' machine code if it was made for this CPU."""
    return CompiledFrames(robot, frames, reference, arrived_modules(modules, target))


# -- the generated code ------------------------------------------------------------------------------------------

@dataclass
class KinematicsPlan:
    """What one module's functions share: the robot and its frames (i, iTf), the reference, whether it is the
    module at (q, q̇), the inputs (the status is stored right after them) and the bodies' slots: body index → the
    first of R (9, row-major), p (3), and at (q, q̇) V (6) and A (6), ``stride`` in all."""

    robot: Robot
    bodies: list
    reference: str
    motion: bool
    inputs: int
    stride: int
    slot: dict


@trace.tracing
def _compile(robot: Robot, bodies: list, reference: str, name: str) -> Module:
    motion, n, k = name == "motion", robot.num_dofs, len(bodies)
    inputs = (2 if motion else 1) * n + ((POSE + (TWIST if motion else 0)) if robot.floating_base else 0)
    parts = [6 * k, 6 * k] if motion else [16 * k, 6 * robot.nv * k]
    needed = {i for i, _ in bodies} | (set() if motion else {j for i, _ in bodies for j in ancestors(robot, i)})
    stored = sorted(i for i in needed if i > 0 or robot.floating_base)  # a fixed base's pose is the identity
    first_slot, stride = inputs + 1 + sum(parts), 24 if motion else 12
    plan = KinematicsPlan(robot, bodies, reference, motion, inputs, stride,
                 {i: first_slot + stride * s for s, i in enumerate(stored)})
    functions = {"pass": kinematics_pass(plan, "pass", accelerations=False)}
    if motion:
        functions["pass_accel"] = kinematics_pass(plan, "pass_accel", accelerations=True)
    first_part, second_part = ("velocity", "bias") if motion else ("placement", "jacobian")
    for f in range(k):
        functions[f"a{f}"] = _frame_function(plan, f"a{f}", f, first_part, inputs + 1 + f * parts[0] // k)
        functions[f"b{f}"] = _frame_function(plan, f"b{f}", f, second_part, inputs + 1 + parts[0] + f * parts[1] // k)
    for entry in native.ENTRIES:
        fn = functions[entry] = trace.Function(entry)
        fn.call(functions["pass_accel" if motion and entry == "main" else "pass"])
        for f in range(k):
            fn.call(functions[f"a{f}"])
            if entry == "main":
                fn.call(functions[f"b{f}"])
    prefix = f"frames{next(_PREFIXES)}_{name}_"
    obj = native.compile_object(native.module_ir(functions, prefix))
    trace.release(*functions.values())
    return Module(obj, prefix, inputs, parts, first_slot + stride * len(stored))


def kinematics_pass(plan: KinematicsPlan, name: str, accelerations: bool) -> trace.Function:
    """The kinematics pass (and at (q, q̇) for J̇ q̇ the bodies' accelerations at q̈ = 0): the status, then each
    stored body's pose (twist, acceleration) into its slots."""
    robot, n = plan.robot, plan.robot.num_dofs
    fn = trace.Function(name)
    values = [fn.load(i) for i in range(plan.inputs)]
    q, v = values[:n], values[n:2 * n] if plan.motion else [0.0] * n
    rotation = twist = None
    ok = finite(values)
    if robot.floating_base:
        first = (2 if plan.motion else 1) * n
        T = np.array(values[first:first + POSE], dtype=object).reshape(4, 4)
        rotation = T[:3, :3]
        twist = np.array(values[first + POSE:], dtype=object) if plan.motion else None
        ok = ok * _rigid(T)
    fn.store(plan.inputs, ok)
    kin, _ = traced_kinematics(robot, q, v, rotation, twist)
    A = link_accelerations(robot, kin, np.zeros(n), None) if accelerations else None
    for i, at in plan.slot.items():
        stored = list(kin.wT[i].R.ravel()) + list(kin.wT[i].p)
        if plan.motion:
            stored += list(kin.V[i]) + (list(A[i]) if accelerations else [])
        for offset, x in enumerate(stored):
            fn.store(at + offset, x)
    return fn


def stored_body(plan: KinematicsPlan, fn: trace.Function, i: int) -> SimpleNamespace:
    """Body i's pose (and twist, acceleration) loaded from its slots; a fixed base's are constants."""
    if i == 0 and not plan.robot.floating_base:
        return SimpleNamespace(pose=TracedPose(np.eye(3), np.zeros(3)), V=np.zeros(6), A=np.zeros(6))
    at = plan.slot[i]
    loaded = np.array([fn.load(at + k) for k in range(plan.stride)], dtype=object)
    return SimpleNamespace(pose=TracedPose(loaded[:9].reshape(3, 3), loaded[9:12]), V=loaded[12:18], A=loaded[18:])


def _frame_function(plan: KinematicsPlan, name: str, f: int, quantity: str, at: int) -> trace.Function:
    """One frame's ``quantity``, written from ``at``."""
    robot = plan.robot
    fn = trace.Function(name)
    i, iTf = plan.bodies[f]
    body = stored_body(plan, fn, i)
    wTf = body.pose.compose(iTf)
    first = robot.num_dofs * (2 if plan.motion else 1)
    base = np.array([fn.load(first + k) for k in range(12)], dtype=object).reshape(3, 4) \
        if robot.floating_base else None  # the base pose's first three rows: the pass starts at its rotation
    if quantity == "placement":
        p = wTf.p if base is None else wTf.p + base[:, 3]
        values = list(np.column_stack([wTf.R, p]).ravel()) + [0.0, 0.0, 0.0, 1.0]
    elif quantity == "jacobian":
        poses = {j: stored_body(plan, fn, j).pose for j in ancestors(robot, i)}
        values = list(_jacobian(robot, poses, i, wTf, None if base is None else base[:, :3], plan.reference).ravel())
    elif quantity == "velocity":
        V_f = iTf.inverse().AdjointMap() @ body.V
        values = list(V_f if plan.reference == "local" else _rotated(wTf.R, V_f))
    else:  # J̇ q̇: the spatial acceleration at q̈ = 0 in the frame's axes, the classical one in world-aligned axes
        kin = SimpleNamespace(wT={i: body.pose}, V={i: body.V})
        values = list(acceleration_of_frame(kin, body.A, i, iTf, plan.reference, plan.reference == "world_aligned"))
    for offset, x in enumerate(values):
        fn.store(at + offset, x)
    return fn


def _jacobian(robot: Robot, poses: dict, i: int, wTf, base_rotation, reference: str) -> np.ndarray:
    """``frame_jacobian``'s columns Ad(fTc) S_j, written in world axes at the frame's origin — the angular part
    ω = R_c S_ω, the linear part (p_c − p_f) × ω + R_c S_v; a floating base's from its root link frame, where the
    pass starts (the origin) — then turned into the frame's own axes for "local"."""
    base = 6 if robot.floating_base else 0
    J = np.zeros((6, base + robot.num_dofs), dtype=object)
    p_f = wTf.p
    if robot.floating_base:
        for c in range(3):
            w = base_rotation[:, c]
            J[:3, c], J[3:, c], J[3:, 3 + c] = w, skew(w) @ p_f, w  # (0 − p_f) × ω = ω × p_f
    for j in ancestors(robot, i):
        S, wTc = robot.joints[j - 1].screw_axis, poses[j]
        w = wTc.R @ S[:3]
        J[:3, base + j - 1] = w
        J[3:, base + j - 1] = skew(wTc.p - p_f) @ w + wTc.R @ S[3:]
    return _rotated(wTf.R.T, J) if reference == "local" else J


def _rotated(R, x) -> np.ndarray:
    """A 6-vector (or 6-row matrix) [ω; v] in other axes: [R ω; R v]."""
    return np.concatenate([R @ x[:3], R @ x[3:]])


def _rigid(T: np.ndarray):
    """1.0 if the 4×4 ``T`` is what ``pose_argument`` accepts (RᵀR = I to 1e-9 per entry, det R ≥ 0, last row
    exactly 0 0 0 1), else 0.0."""
    R = T[:3, :3]
    ok = 1.0
    for g in (R.T @ R - np.eye(3)).ravel():
        ok = ok * trace.le(trace.fabs(g), 1e-9)
    ok = ok * trace.le(-trace.dot(R[0], skew(R[1]) @ R[2]), 0.0)  # det R ≥ 0
    last = [T[3, c] - expected for c, expected in enumerate((0.0, 0.0, 0.0, 1.0))]
    ok = ok * trace.le(trace.dot(last, last), 0.0)
    return ok
