"""The centre of mass, its Jacobian and the centroidal momentum as compiled code: ``gtdyn.compile_center_of_mass``.

The kinematics pass of ``gtdyn.compiled.frames`` stores every moving body's pose (and twist); one function then
writes the reference functions' formulas (``gtdyn.center_of_mass``, ``center_of_mass_jacobian``,
``centroidal_momentum``): c = Σ mᵢ pᵢ / m; each coordinate's column (m_s v + ω × Σ_s mₖ pₖ) / m for its world
screw ξ = [ω; v] and the subtree s it moves, the subtrees accumulated leaves to root; h_G, each body's G_i V_i
in world axes about c. A floating base's pass starts at its rotation, the base's translation t left out: c adds
it, and the columns and h_G do not need it (m_s t × ω + ω × m_s t = 0; pᵢ − c).

Nothing is solved, so nothing falls back: the status is 1 when every input is finite, every revolute angle within
±``MAX_ANGLE`` and a floating base's pose a rigid transform; otherwise the boundary's checks run on the inputs and
raise the reference functions' error.
"""

from __future__ import annotations

import itertools
import threading

import numpy as np

from gtdyn.arguments import (
    finite_vector,
    joint_positions,
    joint_vector,
    pose_argument,
    robot_argument,
    state_batch,
    whole_number,
)
from gtdyn.arguments.base import base_rows, base_state, refuse_on_fixed_base
from gtdyn.compiled import native, parallel, trace
from gtdyn.compiled.frames import POSE, KinematicsPlan, Module, kinematics_pass, plain_array, stored_body
from gtdyn.dynamics.quantities import moving_bodies
from gtdyn.model.limits import MAX_ANGLE
from gtdyn.model.robot import Robot
from gtdyn.spatial import skew

_IDENTITY = np.eye(4)
_PREFIXES = itertools.count()


class CompiledCenterOfMass:
    """c(q) (3, world frame; Pinocchio's ``centerOfMass``), J_c(q) (3 × nv, ċ = J_c [base twist; q̇];
    ``jacobianCenterOfMass``) and the centroidal momentum h_G(q, q̇) (6, [angular; linear] about c in world axes;
    ``computeCentroidalMomentum``), as ``gtdyn.center_of_mass``, ``center_of_mass_jacobian`` and
    ``centroidal_momentum`` give them: ``com(q, base_pose=None)``, ``com.jacobian(q, base_pose=None)`` (both:
    ``com.with_jacobian``), ``com.momentum(q, v, base_pose=None, base_twist=None)``, and ``com.batch(Q,
    base_pose=None, threads=1)``, ``com.batch_jacobian(...)``, ``com.batch_momentum(Q, V, ...)`` for N states
    (base poses (N, 4, 4) or a list of ``gtsam.Pose3``, twists (N, 6)). The code at q is compiled at once, the
    code at (q, q̇) when first called. Bad arguments raise the reference functions' ``ArgumentError`` (in a
    batch, naming the row). It pickles (the machine code travels with the CPU it was made for)."""

    def __init__(self, robot: Robot, modules: dict | None = None):
        self.robot = robot_argument(robot)
        self.nv = robot.nv
        self._modules: dict[str, Module] = {"at_q": _compile(robot, False)} if modules is None else dict(modules)
        self._lock = threading.Lock()
        self._owner = threading.get_ident()
        self._views: dict[str, tuple] = {}

    def __call__(self, q, base_pose=None) -> np.ndarray:
        return self._call("at_q", "fast", 0, q, None, base_pose, None)

    def jacobian(self, q, base_pose=None) -> np.ndarray:
        return self._call("at_q", "main", 1, q, None, base_pose, None)

    def with_jacobian(self, q, base_pose=None) -> tuple[np.ndarray, np.ndarray]:
        return self._call("at_q", "main", None, q, None, base_pose, None)

    def momentum(self, q, v, base_pose=None, base_twist=None) -> np.ndarray:
        return self._call("motion", "fast", 0, q, v, base_pose, base_twist)

    def batch(self, Q, base_pose=None, threads: int = 1) -> np.ndarray:
        return self._batch("at_q", "fast", Q, None, base_pose, None, threads)[0]

    def batch_jacobian(self, Q, base_pose=None, threads: int = 1) -> np.ndarray:
        return self._batch("at_q", "main", Q, None, base_pose, None, threads)[1]

    def batch_momentum(self, Q, V, base_pose=None, base_twist=None, threads: int = 1) -> np.ndarray:
        return self._batch("motion", "fast", Q, V, base_pose, base_twist, threads)[0]

    def _module(self, name: str) -> Module:
        with self._lock:  # compiled once, whichever thread asks first
            if name not in self._modules:
                self._modules[name] = _compile(self.robot, True)
            return self._modules[name]

    def _workspace(self, name: str) -> tuple:
        """(module, ws, its address, views of q, q̇, the base pose as 4×4, the base twist — None where the module
        has none —, the answer's parts): kept per module by the object's thread, fresh in other threads."""
        views = self._views.get(name) if threading.get_ident() == self._owner else None
        if views is None:
            module, n, floating, motion = self._module(name), self.robot.num_dofs, self.robot.floating_base, \
                name == "motion"
            ws, first, out = np.zeros(module.size), (2 if motion else 1) * n, module.out + 1
            parts = (ws[out:out + 6],) if motion else (ws[out:out + 3], ws[out + 3:out + 3 + 3 * self.nv].reshape(
                3, self.nv))
            views = (module, ws, ws.ctypes.data, ws[:n], ws[n:2 * n] if motion else None,
                     ws[first:first + POSE].reshape(4, 4) if floating else None,
                     ws[first + POSE:first + POSE + 6] if floating and motion else None, parts)
            if threading.get_ident() == self._owner:
                self._views[name] = views
        return views

    def _call(self, name: str, entry: str, part, q, v, base_pose, base_twist):
        """Part ``part`` of the module's answer (all of them if None) at the state given."""
        views = self._views.get(name)
        if views is None or threading.get_ident() != self._owner:
            views = self._workspace(name)
        module, ws, pointer, in_q, in_v, in_pose, in_twist, parts = views
        if not plain_array(q, in_q.shape):
            q = joint_positions(self.robot, "q", q)
        in_q[...] = q  # the generated code checks the numbers
        if in_v is not None:
            in_v[...] = v if plain_array(v, in_v.shape) else joint_vector(self.robot, "v", v)
        if in_pose is not None:
            in_pose[...] = _IDENTITY if base_pose is None else base_pose if plain_array(base_pose, (4, 4)) else \
                base_state(self.robot, base_pose).pose.matrix()
            if in_twist is not None:
                in_twist[...] = 0.0 if base_twist is None else base_twist if plain_array(base_twist, (6,)) else \
                    finite_vector("base_twist", base_twist, 6)
        elif base_pose is not None or base_twist is not None:
            refuse_on_fixed_base(self.robot, base_pose=base_pose, base_twist=base_twist)
        module.loaded.entry[entry](pointer)
        if ws[module.out] != 1.0:  # a non-finite input, an angle out of range, a pose that is not rigid
            joint_positions(self.robot, "q", q)
            if in_v is not None:
                joint_vector(self.robot, "v", v)
            base_state(self.robot, base_pose, base_twist)
            raise AssertionError("gtdyn.compiled.center_of_mass: the code refused inputs the boundary accepts")
        return tuple(p.copy() for p in parts) if part is None else parts[part].copy()

    def _batch(self, name: str, entry: str, Q, V, base_pose, base_twist, threads: int) -> tuple:
        threads = whole_number("threads", threads, 1)
        motion, n = name == "motion", self.robot.num_dofs
        module = self._module(name)
        arrays = state_batch(n, Q=Q, V=V) if motion else state_batch(n, Q=Q)
        count = len(arrays[0])
        if self.robot.floating_base:
            arrays.append(base_rows("base_pose", base_pose, count, (4, 4), _IDENTITY.ravel()))
            if motion:
                arrays.append(base_rows("base_twist", base_twist, count, (6,), np.zeros(6)))
        else:
            refuse_on_fixed_base(self.robot, base_pose=base_pose, base_twist=base_twist)
        inputs = np.ascontiguousarray(np.hstack(arrays))
        outputs = 1 + (6 if motion else 3 + (3 * self.nv if entry == "main" else 0))
        results = parallel.run_states(module.loaded.batch[entry], module.size, inputs, outputs, module.out, threads)
        first = (2 if motion else 1) * n
        for k in np.flatnonzero(results[:, 0] != 1.0):  # the boundary's error, naming the row
            joint_positions(self.robot, f"Q[{k}]", inputs[k, :n])
            if motion:
                joint_vector(self.robot, f"V[{k}]", inputs[k, n:first])
            if self.robot.floating_base:
                pose_argument(f"base_pose[{k}]", inputs[k, first:first + POSE].reshape(4, 4))
                if motion:
                    finite_vector(f"base_twist[{k}]", inputs[k, first + POSE:], 6)
        if motion:
            return (results[:, 1:],)
        return results[:, 1:4], results[:, 4:].reshape(count, 3, self.nv) if entry == "main" else None

    def __reduce__(self):
        with self._lock:
            modules = {name: (m.object, m.prefix, m.out, m.parts, m.size) for name, m in self._modules.items()}
        return _unpickled, (self.robot, modules, native.target_id())

    def __repr__(self) -> str:
        return f"CompiledCenterOfMass('{self.robot.name}', nv {self.nv})"


def compile_center_of_mass(robot: Robot) -> CompiledCenterOfMass:
    """Compiled c(q) and J_c(q) of ``robot`` (fixed or floating base): see ``CompiledCenterOfMass``."""
    return CompiledCenterOfMass(robot)


def _unpickled(robot: Robot, modules: dict, target: str) -> CompiledCenterOfMass:
    """A pickled ``CompiledCenterOfMass``, here: its machine code if it was made for this CPU, else compiled anew."""
    here = target == native.target_id()
    return CompiledCenterOfMass(robot, {name: Module(*m) for name, m in modules.items()} if here else None)


# -- the generated code ------------------------------------------------------------------------------------------

@trace.tracing
def _compile(robot: Robot, motion: bool) -> Module:
    """The code at q (``fast``: c; ``main``: c and J_c) or at (q, q̇) (both entries: h_G)."""
    n, nv = robot.num_dofs, robot.nv
    inputs = (2 if motion else 1) * n + ((POSE + (6 if motion else 0)) if robot.floating_base else 0)
    parts = [6] if motion else [3, 3 * nv]
    stored = [body.index for body in moving_bodies(robot) if body.index > 0 or robot.floating_base]
    first_slot, stride = inputs + 1 + sum(parts), 18 if motion else 12  # R, p (and V) of each stored body
    plan = KinematicsPlan(robot, [], "local", motion, inputs, stride,
                          {i: first_slot + stride * s for s, i in enumerate(stored)})
    functions = {"pass": kinematics_pass(plan, "pass", accelerations=False)}
    if motion:
        functions["momentum"] = _momentum(plan, inputs + 1)
    else:
        functions.update(com=_center(plan, inputs + 1), com_jacobian=_jacobian(plan, inputs + 4))
    for entry in native.ENTRIES:
        fn = functions[entry] = trace.Function(entry)
        fn.call(functions["pass"])
        fn.call(functions["momentum" if motion else "com"])
        if entry == "main" and not motion:
            fn.call(functions["com_jacobian"])
    prefix = f"com{next(_PREFIXES)}_{'motion' if motion else 'at_q'}_"
    obj = native.compile_object(native.module_ir(functions, prefix))
    trace.release(*functions.values())
    return Module(obj, prefix, inputs, parts, first_slot + stride * len(stored))


def _angles_in_range(plan: KinematicsPlan, fn: trace.Function) -> None:
    """The status the pass stored, times every revolute angle within ±``MAX_ANGLE`` (as ``joint_positions``)."""
    ok = fn.load(plan.inputs)
    for joint in plan.robot.joints:
        if joint.type == "revolute":
            ok = ok * trace.le(trace.fabs(fn.load(joint.index - 1)), MAX_ANGLE)
    fn.store(plan.inputs, ok)


def _masses(plan: KinematicsPlan, fn: trace.Function) -> tuple[float, dict]:
    """(m, {body index: (mᵢ, mᵢ pᵢ)}) over the moving bodies, pᵢ from the pass (without a floating base's t)."""
    bodies = moving_bodies(plan.robot)
    return (sum(body.mass for body in bodies),
            {body.index: (body.mass, body.mass * stored_body(plan, fn, body.index).pose.p) for body in bodies})


def _center(plan: KinematicsPlan, at: int) -> trace.Function:
    """c = Σ mᵢ pᵢ / m (+ t), and the status: the pass's, and every revolute angle within ±``MAX_ANGLE``."""
    robot = plan.robot
    fn = trace.Function("com")
    _angles_in_range(plan, fn)
    mass, moments = _masses(plan, fn)
    c = sum((moment for _, moment in moments.values()), np.zeros(3)) / mass
    if robot.floating_base:
        c = c + np.array([fn.load(robot.num_dofs + 4 * r + 3) for r in range(3)], dtype=object)
    for k in range(3):
        fn.store(at + k, c[k])
    return fn


def _jacobian(plan: KinematicsPlan, at: int) -> trace.Function:
    """J_c, row-major: per coordinate, (m_s v + ω × Σ_s mₖ pₖ) / m for its world screw [ω; v] (the pass's
    positions: the base's translation cancels) and its subtree s, accumulated leaves to root."""
    robot = plan.robot
    fn = trace.Function("com_jacobian")
    mass, moments = _masses(plan, fn)
    subtree_mass = {i: 0.0 for i in range(len(robot.links) + 1)}
    subtree_moment = {i: np.zeros(3) for i in range(len(robot.links) + 1)}
    for i, (m, moment) in moments.items():
        subtree_mass[i], subtree_moment[i] = m, moment
    for i in range(len(robot.links), 0, -1):  # a parent's index is below its children's
        subtree_mass[robot.parents[i]] = subtree_mass[robot.parents[i]] + subtree_mass[i]
        subtree_moment[robot.parents[i]] = subtree_moment[robot.parents[i]] + subtree_moment[i]
    columns = []
    if robot.floating_base:
        R = stored_body(plan, fn, 0).pose.R  # the root link frame's axes: its twist's
        columns += [np.cross(R[:, c], subtree_moment[0]) / mass for c in range(3)]
        columns += [R[:, c] * (subtree_mass[0] / mass) for c in range(3)]
    for joint in robot.tree_joints:
        pose, S = stored_body(plan, fn, joint.index).pose, joint.screw_axis  # the child's CoM frame
        w = pose.R @ S[:3]
        v = skew(pose.p) @ w + pose.R @ S[3:]
        i = joint.index
        columns.append((subtree_mass[i] * v + np.cross(w, subtree_moment[i])) / mass)
    columns += [np.zeros(3)] * len(robot.loop_joints)
    J = np.column_stack(columns)
    for r in range(3):
        for c in range(robot.nv):
            fn.store(at + r * robot.nv + c, J[r, c])
    return fn


def _momentum(plan: KinematicsPlan, at: int) -> trace.Function:
    """h_G: each body's momentum G_i V_i (CoM frame) in world axes, its angular part moved from the body's CoM to
    the robot's (the pass's positions: a floating base's translation cancels in pᵢ − c)."""
    robot = plan.robot
    fn = trace.Function("momentum")
    _angles_in_range(plan, fn)
    mass, moments = _masses(plan, fn)
    c = sum((moment for _, moment in moments.values()), np.zeros(3)) / mass
    angular, linear = np.zeros(3), np.zeros(3)
    for body in moving_bodies(robot):
        stored = stored_body(plan, fn, body.index)
        momentum = body.G @ stored.V
        body_linear = stored.pose.R @ momentum[3:]
        angular = angular + stored.pose.R @ momentum[:3] + np.cross(stored.pose.p - c, body_linear)
        linear = linear + body_linear
    for k, x in enumerate(np.concatenate([angular, linear])):
        fn.store(at + k, x)
    return fn
