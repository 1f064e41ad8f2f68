"""Building blocks of graphs over time steps: one step's dynamics factors, the integration factors between two
steps, and a step's values from a dynamics solve.

A floating base is body 0 of the full graph: its pose, twist and acceleration (of its CoM frame) are variables
joined across steps by ``base_integration_factors``, and the wrench F0 its environment applies is held at zero
(free flight). Users give and get the base's quantities in its root link frame; ``gtdyn.model.base_frame`` moves
them. Transmissions: the full graph's coupling factors carry the driven joints, so only the others are
integrated."""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn import keys as K
from gtdyn.arguments import choice, covered, robot_argument
from gtdyn.arguments.base import BaseState
from gtdyn.compiled import compile
from gtdyn.dynamics.quantities import rigid_bodies
from gtdyn.dynamics.solve import forward_dynamics, hybrid_dynamics, inverse_dynamics
from gtdyn.equations import torque_equation
from gtdyn.errors import ArgumentError
from gtdyn.factors import base_integration_factors, integration_factors, joint_prior
from gtdyn.factors.dynamics import DynamicsFactor
from gtdyn.factors.full_graph import full_dynamics_graph
from gtdyn.kinematics.forward import forward_kinematics
from gtdyn.kinematics.loop_closure import independent_joints
from gtdyn.kinematics.loops import loop_plane_normal
from gtdyn.model import base_frame
from gtdyn.model.robot import Robot


def check_robot(robot) -> Robot:
    robot_argument(robot)
    if robot.floating_base and robot.loop_joints:
        raise ArgumentError(f"robot: estimation covers floating bases on trees; '{robot.name}' floats and has "
                            "closed loops")
    return robot


def planar_normals(robot: Robot, q: np.ndarray) -> dict[int, np.ndarray]:
    """Loop joint index → plane normal, for each planar loop at configuration q (``loop_plane_normal``): the
    planar factor that fixes the loop joint's out-of-plane wrench, which the dynamics leave free. The normals
    are found once and held over a whole run, which assumes the loops' planes do not turn (true of loops
    whose joints outside the loop, if any, turn about the same normal)."""
    kin = forward_kinematics(robot, q, np.zeros(robot.num_dofs))
    out = {}
    for joint, loop in zip(robot.loop_joints, robot.loops, strict=True):
        normal = loop_plane_normal(robot, kin, loop)
        if normal is not None:
            out[joint.index] = normal
    return out


def integrated_joints(robot: Robot, q: np.ndarray) -> list[int]:
    """Indices of the joints that carry integration factors: every joint of a tree but those a transmission
    drives (its coupling factors carry them); on closed loops the independent joints only (actuated ones
    first), the loops' pose, twist and acceleration factors carrying the others. Integrating every joint of a
    loop (or a driven joint too) would over-determine the step: the integrators' q_{k+1} would have to close
    the loops too, which no one-step rule does exactly."""
    driven = {t.dependent for t in robot.transmissions}
    if not robot.loop_joints:
        return [j.index for j in robot.joints if j.index not in driven]
    return [robot.joint(name).index for name in independent_joints(robot, robot.actuated_joint_names, q)
            if robot.joint(name).index not in driven]


DYNAMICS = ("auto", "compiled", "full")


class StepDynamics:
    """How each time step's dynamics enter a graph: ``"full"``, the full graph (every link's pose, twist,
    acceleration and wrench as variables, one factor per Newton–Euler equation), or ``"compiled"``, one
    ``DynamicsFactor`` per step over a compiled inverse-dynamics solver with derivatives (four scalar variables
    per joint and step, and a floating base's pose, twist and acceleration), which covers trees without
    transmissions; ``"auto"`` takes the compiled form where it covers the robot, as it is faster for the same
    answers (``benchmarks/verify_estimation.py``)."""

    def __init__(self, robot: Robot, gravity, planar: dict[int, np.ndarray], mode: str = "auto"):
        self.robot, self.gravity, self.planar = robot, gravity, planar
        self.mode = dynamics_mode(robot, mode)
        # every joint actuated: the factor's τ are generalized forces, a passive joint's held at zero by its prior
        self.solver = compile(rigid_bodies(robot), "inverse", gravity=gravity, derivatives=True) \
            if self.mode == "compiled" else None

    def graph(self, k: int) -> gtsam.NonlinearFactorGraph:
        """Step k's dynamics, with hard priors τ = 0 on the passive joints."""
        if self.solver is None:
            return step_graph(self.robot, k, self.gravity, self.planar)
        graph = gtsam.NonlinearFactorGraph()
        joints, base = self._keys(k)
        graph.add(DynamicsFactor(self.solver, *joints, base=base))
        _passive_torques(graph, self.robot, k)
        return graph

    def _keys(self, k: int) -> tuple[list[list[int]], tuple[int, ...] | None]:
        """The compiled form's variables at step k: q, q̇, q̈, τ by joint, and a floating base's pose, twist and
        acceleration (body 0's, as in the full graph; None on a fixed base)."""
        joints = [[joint_key(kind, j.index, k) for j in self.robot.joints] for kind in _JOINT_QUANTITIES]
        base = tuple(K.at_step(kind(0), k) for kind in _BASE_QUANTITIES) if self.robot.floating_base else None
        return joints, base

    def values(self, k: int, q, v, *, qdd=None, tau=None, base: BaseState | None = None) -> gtsam.Values:
        """Step k's variables at a state (``state_values``); the compiled form's are the joints' (and a floating
        base's pose, twist and acceleration) alone, taken from ``state_values``' where the dynamics decide them."""
        robot = self.robot
        if self.solver is None:
            return state_values(robot, k, q, v, qdd=qdd, tau=tau, gravity=self.gravity, base=base)
        values = gtsam.Values()
        joints, base_keys = self._keys(k)
        if robot.floating_base or (qdd is not None and not all(joint.actuated for joint in robot.joints)):
            # the base's state in its CoM frame, a passive joint's q̈: as the dynamics decide them
            solved = state_values(robot, k, q, v, qdd=qdd, tau=tau, gravity=self.gravity, base=base)
            for key in [key for keys in joints for key in keys] + list(base_keys or ()):
                values.insert(key, solved.atPose3(key) if K.kind(key) == "pose" else solved.atVector(key))
            return values
        if qdd is None:
            qdd = forward_dynamics(robot, q, v, tau, gravity=self.gravity).qdd
        else:
            tau = self.solver(np.asarray(q, float), np.asarray(v, float), np.asarray(qdd, float))
        for keys, x in zip(joints, (q, v, qdd, tau), strict=True):
            for key, value in zip(keys, x, strict=True):
                values.insert(key, np.array([float(value)]))
        return values


_JOINT_QUANTITIES = (K.joint_angle_key, K.joint_vel_key, K.joint_accel_key, K.torque_key)
_BASE_QUANTITIES = (K.pose_key, K.twist_key, K.twist_accel_key)  # of body 0, the floating base's CoM frame


def dynamics_mode(robot: Robot, mode: str) -> str:
    """The ``dynamics`` argument checked: "compiled" or "full" ("auto": compiled where it covers the robot)."""
    choice("dynamics", mode, DYNAMICS)
    if mode == "compiled":
        covered(robot, 'dynamics="compiled"', loops=False, transmissions=False, advice='use dynamics="full"')
    coverable = not (robot.loop_joints or robot.transmissions)
    return "compiled" if mode == "compiled" or (mode == "auto" and coverable) else "full"


def step_graph(robot: Robot, k: int, gravity, planar: dict[int, np.ndarray]) -> gtsam.NonlinearFactorGraph:
    """The full dynamics graph at step k, with hard priors τ = 0 on the passive joints; a floating base is in
    free flight (no wrench from the environment, so no F0 variable)."""
    graph = full_dynamics_graph(robot, gravity, planar=planar, step=k, free_flight=True)
    _passive_torques(graph, robot, k)
    return graph


def _passive_torques(graph: gtsam.NonlinearFactorGraph, robot: Robot, k: int) -> None:
    for joint in robot.joints:
        if not joint.actuated:
            graph.add(joint_prior(K.at_step(K.torque_key(joint.index), k), 0.0))


def between_steps(joints: list[int], k: int, dt: float, rule: str, model=None,
                  floating_base: bool = False) -> gtsam.NonlinearFactorGraph:
    """The integration factors (position and velocity level) of ``joints`` between steps k and k + 1, and of a
    floating base (pose on SE(3) and twist) if ``floating_base``."""
    graph = gtsam.NonlinearFactorGraph()
    for j in joints:
        for factor in integration_factors(j, k, dt, rule, model):
            graph.add(factor)
    if floating_base:
        for factor in base_integration_factors(k, dt, rule, model):
            graph.add(factor)
    return graph


def joint_key(kind, j: int, k: int) -> int:
    """``kind`` is a key function such as ``keys.joint_angle_key``."""
    return K.at_step(kind(j), k)


def coupled(robot: Robot, q: np.ndarray, v: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q, q̇, q̈) with each driven joint's entries set from its drives: q = Σ ratio q_k + offset, and so q̇, q̈.
    Rows may be samples (arrays (N, n)) or one state (n,)."""
    q, v, a = (np.array(x, dtype=float) for x in (q, v, a))
    for t in robot.transmissions:
        d = t.dependent - 1
        for x, offset in ((q, t.offset), (v, 0.0), (a, 0.0)):
            x[..., d] = sum(ratio * x[..., j - 1] for j, ratio in t.terms) + offset
    return q, v, a


def state_values(robot: Robot, k: int, q, v, *, qdd=None, tau=None, gravity,
                 base: BaseState | None = None) -> gtsam.Values:
    """Every variable of step k at a state that closes the loops: inverse dynamics when ``qdd`` is given (on
    an underactuated robot, whose passive joints' q̈ the dynamics decide, hybrid dynamics with the actuated
    joints' q̈ and the passive joints' τ = 0), else forward dynamics with torques ``tau``. A floating base's
    state is ``base`` (root link frame): inverse dynamics with its acceleration given (the graph's free flight
    may then violate eq. 6 of the base, for the optimiser to restore), forward dynamics its acceleration in free
    flight."""
    passive = [joint.name for joint in robot.joints if not joint.actuated and not _driven(robot, joint.index)]
    on_base = {} if base is None else {"base_pose": base.pose, "base_twist": base.twist}
    if qdd is not None and passive and len(independent_joints(robot, robot.actuated_joint_names, q)) > \
            len(robot.actuated_joint_names):
        names = robot.joint_names
        r = hybrid_dynamics(robot, q, v, qdd={n: qdd[names.index(n)] for n in robot.actuated_joint_names},
                            tau={n: 0.0 for n in passive}, gravity=gravity, **on_base)
    elif qdd is not None:
        r = inverse_dynamics(robot, q, v, qdd, gravity=gravity, **on_base,
                             **({} if base is None else {"base_accel": base.accel}))
    else:
        r = forward_dynamics(robot, q, v, tau, gravity=gravity, **on_base)
    kin = forward_kinematics(robot, q, v, *((base.pose, base.twist) if base is not None else ()))
    values = gtsam.Values()

    def put(key: int, value) -> None:
        values.insert(K.at_step(key, k), np.asarray(value, float))

    for joint in robot.joints:
        j = joint.index
        for key, x in ((K.joint_angle_key(j), q), (K.joint_vel_key(j), v), (K.joint_accel_key(j), r.qdd),
                       (K.torque_key(j), r.tau)):
            put(key, [x[j - 1]])
        put(K.wrench_key(j), r.wrenches[joint.name])
    for body in ((robot.base,) if robot.floating_base else ()) + robot.links:
        i = body.index
        values.insert(K.at_step(K.pose_key(i), k), kin.wT[i])
        put(K.twist_key(i), r.twists[body.name])
        put(K.twist_accel_key(i), r.twist_accels[body.name])
    for number, t in enumerate(robot.transmissions, start=1):  # λ from the driven joint's eq. 7 (its share is 1)
        d = t.dependent
        joint = robot.joints[d - 1]
        eq = torque_equation(joint.screw_axis, (1.0,), joint.armature)
        x = {"F": r.wrenches[joint.name], "tau": r.tau[d - 1], "L0": 0.0, "a": r.qdd[d - 1]}
        put(K.transmission_key(number), eq.error({name: x[name] for name in eq.coefficients}))
    return values


def _driven(robot: Robot, j: int) -> bool:
    return any(t.dependent == j for t in robot.transmissions)


def joint_series(values: gtsam.Values, robot: Robot, kind, steps) -> np.ndarray:
    """A joint quantity (``kind``: e.g. ``keys.torque_key``) over ``steps``: rows in time, columns by joint."""
    return np.array([[values.atVector(K.at_step(kind(j.index), k))[0] for j in robot.joints] for k in steps])


def base_series(values: gtsam.Values, robot: Robot, steps) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A floating base's pose (4×4, world ← root link), twist and acceleration (root link frame) over ``steps``."""
    to_link = base_frame.twist_to_link(robot)
    poses = np.array([base_frame.pose_to_link(robot, values.atPose3(K.at_step(K.pose_key(0), k))).matrix()
                      for k in steps])
    twists, accels = (np.array([to_link @ values.atVector(K.at_step(key, k)) for k in steps])
                      for key in (K.twist_key(0), K.twist_accel_key(0)))
    return poses, twists, accels
