"""The centre of mass and its Jacobian as compiled code: ``gtdyn.compile_center_of_mass``.

The kinematics pass of ``gtdyn.compiled.frames`` stores every moving body's pose; one function then writes the
reference functions' formulas (``gtdyn.center_of_mass``, ``gtdyn.center_of_mass_jacobian``): c = Σ mᵢ pᵢ / m,
and each coordinate's column (m_s v + ω × Σ_s mₖ pₖ) / m for its world screw ξ = [ω; v] and the subtree s it
moves, the subtrees accumulated leaves to root. A floating base's pass starts at its rotation, the base's
translation t left out: c adds it, and the columns do not need it (m_s t × ω + ω × m_s t = 0).

Nothing is solved, so nothing falls back: the status is 1 when every input is finite, every revolute angle within
±``MAX_ANGLE`` and a floating base's pose a rigid transform; otherwise the boundary's checks run on the inputs and
raise the reference functions' error.
"""

from __future__ import annotations

import itertools
import threading

import numpy as np

from gtdyn.arguments import joint_positions, pose_argument, robot_argument, state_batch, whole_number
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
    """c(q) (3, world frame; Pinocchio's ``centerOfMass``) and J_c(q) (3 × nv, ċ = J_c [base twist; q̇];
    ``jacobianCenterOfMass``), as ``gtdyn.center_of_mass`` and ``gtdyn.center_of_mass_jacobian`` give them:
    ``com(q, base_pose=None)``, ``com.jacobian(q, base_pose=None)`` (both: ``com.with_jacobian``), and
    ``com.batch(Q, base_pose=None, threads=1)``, ``com.batch_jacobian(...)`` for N states (base poses (N, 4, 4)
    or a list of ``gtsam.Pose3``). Bad arguments raise the reference functions' ``ArgumentError`` (in a batch,
    naming the row). It pickles (the machine code travels with the CPU it was made for)."""

    def __init__(self, robot: Robot, module: Module | None = None):
        self.robot = robot_argument(robot)
        self.nv = robot.nv
        self._module = _compile(robot) if module is None else module
        self._owner = threading.get_ident()
        self._views = self._workspace()

    def __call__(self, q, base_pose=None) -> np.ndarray:
        return self._call("fast", q, base_pose)[0]

    def jacobian(self, q, base_pose=None) -> np.ndarray:
        return self._call("main", q, base_pose)[1]

    def with_jacobian(self, q, base_pose=None) -> tuple[np.ndarray, np.ndarray]:
        return self._call("main", q, base_pose)

    def batch(self, Q, base_pose=None, threads: int = 1) -> np.ndarray:
        return self._batch("fast", Q, base_pose, threads)[0]

    def batch_jacobian(self, Q, base_pose=None, threads: int = 1) -> np.ndarray:
        return self._batch("main", Q, base_pose, threads)[1]

    def _workspace(self) -> tuple:
        """(ws, its address, q's view, the base pose's as 4×4 or None, c's and J_c's views)."""
        module, n = self._module, self.robot.num_dofs
        ws = np.zeros(module.size)
        out = module.out + 1
        return (ws, ws.ctypes.data, ws[:n], ws[n:n + POSE].reshape(4, 4) if self.robot.floating_base else None,
                ws[out:out + 3], ws[out + 3:out + 3 + 3 * self.nv].reshape(3, self.nv))

    def _call(self, entry: str, q, base_pose) -> tuple[np.ndarray, np.ndarray]:
        ws, pointer, in_q, in_pose, c, J = self._views if threading.get_ident() == self._owner else self._workspace()
        if not plain_array(q, in_q.shape):
            q = joint_positions(self.robot, "q", q)
        in_q[...] = q  # the generated code checks the numbers
        if in_pose is not None:
            in_pose[...] = _IDENTITY if base_pose is None else base_pose if plain_array(base_pose, (4, 4)) else \
                base_state(self.robot, base_pose).pose.matrix()
        elif base_pose is not None:
            refuse_on_fixed_base(self.robot, base_pose=base_pose)
        self._module.loaded.entry[entry](pointer)
        if ws[self._module.out] != 1.0:  # a non-finite input, an angle out of range, a pose that is not rigid
            joint_positions(self.robot, "q", q)
            base_state(self.robot, base_pose)
            raise AssertionError("gtdyn.compiled.center_of_mass: the code refused inputs the boundary accepts")
        return c.copy(), J.copy()

    def _batch(self, entry: str, Q, base_pose, threads: int) -> tuple[np.ndarray, np.ndarray]:
        threads = whole_number("threads", threads, 1)
        arrays = state_batch(self.robot.num_dofs, Q=Q)
        count = len(arrays[0])
        if self.robot.floating_base:
            arrays.append(base_rows("base_pose", base_pose, count, (4, 4), _IDENTITY.ravel()))
        else:
            refuse_on_fixed_base(self.robot, base_pose=base_pose)
        inputs = np.ascontiguousarray(np.hstack(arrays))
        outputs = 1 + 3 + (3 * self.nv if entry == "main" else 0)
        results = parallel.run_states(self._module.loaded.batch[entry], self._module.size, inputs, outputs,
                                      self._module.out, threads)
        n = self.robot.num_dofs
        for k in np.flatnonzero(results[:, 0] != 1.0):  # the boundary's error, naming the row
            joint_positions(self.robot, f"Q[{k}]", inputs[k, :n])
            pose_argument(f"base_pose[{k}]", inputs[k, n:].reshape(4, 4))
        return results[:, 1:4], results[:, 4:].reshape(count, 3, self.nv) if entry == "main" else None

    def __reduce__(self):
        module = self._module
        return _unpickled, (self.robot, (module.object, module.prefix, module.out, module.parts, module.size),
                            native.target_id())

    def __repr__(self) -> str:
        return f"CompiledCenterOfMass('{self.robot.name}', nv {self.nv})"


def compile_center_of_mass(robot: Robot) -> CompiledCenterOfMass:
    """Compiled c(q) and J_c(q) of ``robot`` (fixed or floating base): see ``CompiledCenterOfMass``."""
    return CompiledCenterOfMass(robot)


def _unpickled(robot: Robot, module: tuple, target: str) -> CompiledCenterOfMass:
    """A pickled ``CompiledCenterOfMass``, here: its machine code if it was made for this CPU, else compiled anew."""
    return CompiledCenterOfMass(robot, Module(*module) if target == native.target_id() else None)


# -- the generated code ------------------------------------------------------------------------------------------

@trace.tracing
def _compile(robot: Robot) -> Module:
    n, nv = robot.num_dofs, robot.nv
    inputs = n + (POSE if robot.floating_base else 0)
    parts = [3, 3 * nv]
    stored = [body.index for body in moving_bodies(robot) if body.index > 0 or robot.floating_base]
    first_slot, stride = inputs + 1 + sum(parts), 12
    plan = KinematicsPlan(robot, [], "local", False, inputs, stride,
                          {i: first_slot + stride * s for s, i in enumerate(stored)})
    functions = {"pass": kinematics_pass(plan, "pass", accelerations=False),
                 "com": _center(plan, inputs + 1), "com_jacobian": _jacobian(plan, inputs + 4)}
    for entry in native.ENTRIES:
        fn = functions[entry] = trace.Function(entry)
        fn.call(functions["pass"])
        fn.call(functions["com"])
        if entry == "main":
            fn.call(functions["com_jacobian"])
    prefix = f"com{next(_PREFIXES)}_"
    obj = native.compile_object(native.module_ir(functions, prefix))
    trace.release(*functions.values())
    return Module(obj, prefix, inputs, parts, first_slot + stride * len(stored))


def _masses(plan: KinematicsPlan, fn: trace.Function) -> tuple[float, dict]:
    """(m, {body index: (mᵢ, mᵢ pᵢ)}) over the moving bodies, pᵢ from the pass (without a floating base's t)."""
    bodies = moving_bodies(plan.robot)
    return (sum(body.mass for body in bodies),
            {body.index: (body.mass, body.mass * stored_body(plan, fn, body.index).pose.p) for body in bodies})


def _center(plan: KinematicsPlan, at: int) -> trace.Function:
    """c = Σ mᵢ pᵢ / m (+ t), and the status: the pass's, and every revolute angle within ±``MAX_ANGLE``."""
    robot = plan.robot
    fn = trace.Function("com")
    ok = fn.load(plan.inputs)
    for joint in robot.joints:
        if joint.type == "revolute":
            ok = ok * trace.le(trace.fabs(fn.load(joint.index - 1)), MAX_ANGLE)
    fn.store(plan.inputs, ok)
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
