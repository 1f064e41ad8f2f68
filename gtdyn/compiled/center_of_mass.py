"""The centre of mass, its Jacobian, the centroidal momentum and the energies as compiled code:
``gtdyn.compile_center_of_mass``.

The kinematics pass of ``gtdyn.compiled.frames`` stores every moving body's pose (and twist); one function then
writes the reference functions' formulas (``gtdyn.center_of_mass``, ``center_of_mass_jacobian``,
``centroidal_momentum``): c = Σ mᵢ pᵢ / m; each coordinate's column (m_s v + ω × Σ_s mₖ pₖ) / m for its world
screw ξ = [ω; v] and the subtree s it moves, the subtrees accumulated leaves to root; h_G, each body's G_i V_i
in world axes about c, and the kinetic energy Σ ½ Vᵢᵀ Gᵢ Vᵢ beside it; the potential energy is −m g · c. A
floating base's pass starts at its rotation, the base's translation t left out: c adds
it, and the columns and h_G do not need it (m_s t × ω + ω × m_s t = 0; pᵢ − c).

Nothing is solved, so nothing falls back: the status is 1 when every input is finite, every revolute angle within
±``MAX_ANGLE`` and a floating base's pose a rigid transform; otherwise the boundary's checks run on the inputs and
raise the reference functions' error.
"""

from __future__ import annotations

import itertools

import numpy as np

from gtdyn.arguments import gravity_vector, joint_positions, robot_argument
from gtdyn.compiled import native, trace
from gtdyn.compiled.frames import KinematicsPlan, kinematics_pass, stored_body
from gtdyn.compiled.kinematic_calls import POSE, CompiledKinematics, Module, arrived_modules
from gtdyn.dynamics.quantities import moving_bodies
from gtdyn.equations import GRAVITY
from gtdyn.model.limits import MAX_ANGLE
from gtdyn.model.robot import Robot
from gtdyn.spatial import skew

_PREFIXES = itertools.count()


class CompiledCenterOfMass(CompiledKinematics):
    """c(q) (3, world frame; Pinocchio's ``centerOfMass``), J_c(q) (3 × nv, ċ = J_c [base twist; q̇];
    ``jacobianCenterOfMass``), the centroidal momentum h_G(q, q̇) (6, [angular; linear] about c in world axes;
    ``computeCentroidalMomentum``) and the kinetic and potential energies (J; ``computeKineticEnergy``,
    ``computePotentialEnergy``), as ``gtdyn.center_of_mass``, ``center_of_mass_jacobian``,
    ``centroidal_momentum``, ``kinetic_energy`` and ``potential_energy`` give them: ``com(q, base_pose=None)``,
    ``com.jacobian(q, base_pose=None)`` (both: ``com.with_jacobian``), ``com.momentum(q, v, base_pose=None,
    base_twist=None)``, ``com.kinetic_energy(q, v, ...)``, ``com.potential_energy(q, gravity=GRAVITY,
    base_pose=None)``, and ``com.batch(Q, base_pose=None, threads=1)``, ``com.batch_jacobian(...)``,
    ``com.batch_momentum(Q, V, ...)``, ``com.batch_kinetic_energy(Q, V, ...)``, ``com.batch_potential_energy(Q,
    gravity=GRAVITY, ...)`` for N states (base poses (N, 4, 4) or a list of ``gtsam.Pose3``, twists (N, 6)). The
    code at q is compiled at once, the code at (q, q̇) when first called. Bad arguments raise the reference
    functions' ``ArgumentError`` (in a batch, naming the row). It pickles (the machine code travels with the CPU it
    was made for)."""

    QUANTITIES = {"center_of_mass": ("at_q", "fast", 0), "jacobian": ("at_q", "main", 1),
                  "with_jacobian": ("at_q", "main", None), "potential_energy": ("at_q", "fast", 2),
                  "momentum": ("motion", "fast", 0), "kinetic_energy": ("motion", "main", 1)}

    def __init__(self, robot: Robot, modules: dict | None = None):
        super().__init__(robot_argument(robot), modules)
        self._module("at_q")
        self.mass = sum(body.mass for body in moving_bodies(self.robot))
        self._default_weight = minus_weight(self.mass, GRAVITY)  # under the default gravity, worked out once

    def check_q(self, robot: Robot, name: str, q) -> np.ndarray:
        return joint_positions(robot, name, q)  # as the reference functions: angles beyond ±MAX_ANGLE refused

    def __call__(self, q, base_pose=None) -> np.ndarray:
        return self._calls["center_of_mass"](self, q, None, base_pose, None)

    def jacobian(self, q, base_pose=None) -> np.ndarray:
        return self._calls["jacobian"](self, q, None, base_pose, None)

    def with_jacobian(self, q, base_pose=None) -> tuple[np.ndarray, np.ndarray]:
        return self._calls["with_jacobian"](self, q, None, base_pose, None)

    def momentum(self, q, v, base_pose=None, base_twist=None) -> np.ndarray:
        return self._calls["momentum"](self, q, v, base_pose, base_twist)

    def kinetic_energy(self, q, v, base_pose=None, base_twist=None) -> float:
        return float(self._calls["kinetic_energy"](self, q, v, base_pose, base_twist))

    def potential_energy(self, q, gravity=GRAVITY, base_pose=None) -> float:
        """−m g · c(q): the reference's −Σ mᵢ g · pᵢ; compiled for the default gravity."""
        if gravity is GRAVITY:
            return float(self._calls["potential_energy"](self, q, None, base_pose, None))
        return float(self(q, base_pose).dot(self._minus_weight(gravity)))  # ndarray.dot: half the time of @ here

    def batch_kinetic_energy(self, Q, V, base_pose=None, base_twist=None, threads: int = 1) -> np.ndarray:
        return self._batch("kinetic_energy", Q, V, base_pose, base_twist, threads)

    def batch_potential_energy(self, Q, gravity=GRAVITY, base_pose=None, threads: int = 1) -> np.ndarray:
        return self.batch(Q, base_pose, threads) @ self._minus_weight(gravity)

    def _minus_weight(self, gravity) -> np.ndarray:
        """−m g: the default gravity's as checked once, any other gravity checked now."""
        return self._default_weight if gravity is GRAVITY else minus_weight(self.mass, gravity)

    def batch(self, Q, base_pose=None, threads: int = 1) -> np.ndarray:
        return self._batch("center_of_mass", Q, None, base_pose, None, threads)

    def batch_jacobian(self, Q, base_pose=None, threads: int = 1) -> np.ndarray:
        return self._batch("jacobian", Q, None, base_pose, None, threads)

    def batch_momentum(self, Q, V, base_pose=None, base_twist=None, threads: int = 1) -> np.ndarray:
        return self._batch("momentum", Q, V, base_pose, base_twist, threads)

    def _shapes(self, name: str) -> list[tuple[int, ...]]:
        return [(6,), ()] if name == "motion" else [(3,), (3, self.nv), ()]

    def _compile(self, name: str) -> Module:
        return _compile(self.robot, name == "motion")

    def __reduce__(self):
        return _unpickled, (self.robot, self._modules_to_send(), native.target_id())

    def __repr__(self) -> str:
        return f"CompiledCenterOfMass('{self.robot.name}', nv {self.nv})"


def minus_weight(mass: float, gravity) -> np.ndarray:
    """−m g, the vector the potential energy −m g · c is read along (``gravity`` checked)."""
    return -mass * gravity_vector(gravity)


def compile_center_of_mass(robot: Robot) -> CompiledCenterOfMass:
    """Compiled c(q) and J_c(q) of ``robot`` (fixed or floating base): see ``CompiledCenterOfMass``."""
    return CompiledCenterOfMass(robot)


def _unpickled(robot: Robot, modules: dict, target: str) -> CompiledCenterOfMass:
    """A pickled ``CompiledCenterOfMass``, here: its machine code if it was made for this CPU, else compiled anew."""
    return CompiledCenterOfMass(robot, arrived_modules(modules, target))


# -- the generated code ------------------------------------------------------------------------------------------

@trace.tracing
def _compile(robot: Robot, motion: bool) -> Module:
    """The code at q (``fast``: c; ``main``: c and J_c) or at (q, q̇) (both entries: h_G and T)."""
    n, nv = robot.num_dofs, robot.nv
    inputs = (2 if motion else 1) * n + ((POSE + (6 if motion else 0)) if robot.floating_base else 0)
    parts = [6, 1] if motion else [3, 3 * nv, 1]  # at q: c, J_c and the potential energy
    stored = [body.index for body in moving_bodies(robot) if body.index > 0 or robot.floating_base]
    first_slot, stride = inputs + 1 + sum(parts), 18 if motion else 12  # R, p (and V) of each stored body
    plan = KinematicsPlan(robot, [], "local", motion, inputs, stride,
                          {i: first_slot + stride * s for s, i in enumerate(stored)})
    functions = {"pass": kinematics_pass(plan, "pass", accelerations=False)}
    if motion:
        functions["momentum"] = _momentum(plan, inputs + 1)
    else:
        functions.update(com=_center(plan, inputs + 1, inputs + 4 + 3 * nv), com_jacobian=_jacobian(plan, inputs + 4))
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


def _center(plan: KinematicsPlan, at: int, energy_at: int) -> trace.Function:
    """c = Σ mᵢ pᵢ / m (+ t) at ``at``, the potential energy −m g · c under the default gravity at ``energy_at``
    (the uncompiled call's dot product, term by term), and the status: the pass's, and every revolute angle within
    ±``MAX_ANGLE``."""
    robot = plan.robot
    fn = trace.Function("com")
    _angles_in_range(plan, fn)
    mass, moments = _masses(plan, fn)
    c = sum((moment for _, moment in moments.values()), np.zeros(3)) / mass
    if robot.floating_base:
        c = c + np.array([fn.load(robot.num_dofs + 4 * r + 3) for r in range(3)], dtype=object)
    for k in range(3):
        fn.store(at + k, c[k])
    weight = minus_weight(mass, GRAVITY)
    fn.store(energy_at, c[0] * weight[0] + c[1] * weight[1] + c[2] * weight[2])
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
    the robot's (the pass's positions: a floating base's translation cancels in pᵢ − c); then T = Σ ½ Vᵢ · G_i V_i."""
    robot = plan.robot
    fn = trace.Function("momentum")
    _angles_in_range(plan, fn)
    mass, moments = _masses(plan, fn)
    c = sum((moment for _, moment in moments.values()), np.zeros(3)) / mass
    angular, linear, kinetic = np.zeros(3), np.zeros(3), 0.0
    for body in moving_bodies(robot):
        stored = stored_body(plan, fn, body.index)
        momentum = body.G @ stored.V
        body_linear = stored.pose.R @ momentum[3:]
        angular = angular + stored.pose.R @ momentum[:3] + np.cross(stored.pose.p - c, body_linear)
        linear = linear + body_linear
        kinetic = kinetic + 0.5 * (stored.V @ momentum)
    for k, x in enumerate([*angular, *linear, kinetic]):
        fn.store(at + k, x)
    return fn
