"""The states a compiled solver is built and checked at: random joint states (closing every loop), a floating
base's random rotation, twist and acceleration, and the query each stands for; and, on a robot without closed
loops, its reference configuration (every joint at zero, the base unrotated), where a robot often starts and
where symmetry zeroes entries that random states never do."""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.arguments.query import Query, packed_base, unpacked_query
from gtdyn.compiled.base_inputs import given_name
from gtdyn.compiled.wrench_inputs import unpacked_wrenches
from gtdyn.equations import GRAVITY
from gtdyn.kinematics.loop_closure import close_loops, independent_joints
from gtdyn.model.robot import Robot

SAMPLES = 8  # random states the pivot choice scores (the reference configuration follows: ``build_states``)


def sample_base(robot: Robot, kind: str, samples, k: int) -> dict:
    """A floating base's arguments at sample state k — its pose (a random rotation at the origin, 4×4), twist and
    the quantity ``kind`` gives (acceleration or wrench) —, as a compiled solver's call takes them; {} for a fixed
    base."""
    if not robot.floating_base:
        return {}
    pose = np.eye(4)
    pose[:3, :3] = samples["R"][:, k].reshape(3, 3)
    return {"base_pose": pose, "base_twist": samples["twist"][:, k], given_name(kind): samples["given"][:, k]}


def sample_wrenches(frames, samples, k: int) -> dict:
    """The external wrenches on the compiled ``frames`` at sample state k, as a compiled solver's call takes them;
    {} when it takes none."""
    return {"external_wrenches": unpacked_wrenches(frames, samples["wrench"][:, k])} if frames else {}


def sample_query(robot: Robot, kind: str, qdd_joints, samples, k: int, contacts=None, gravity=GRAVITY,
                 wrench_frames=(), wrench_axes="local") -> Query:
    """The query sample state k stands for (``unpacked_query``): the template a compiled plan is built from."""
    base = packed_base(robot, kind, **sample_base(robot, kind, samples, k)) if robot.floating_base else ()
    return unpacked_query(robot, kind, qdd_joints, samples["q"][:, k], samples["v"][:, k], samples["x"][:, k], base,
                          contacts=contacts, gravity=gravity, wrench_axes=wrench_axes,
                          **sample_wrenches(wrench_frames, samples, k))


def sample_states(robot: Robot, problem: str, qdd_joints=(), count: int = SAMPLES, seed: int = 0,
                  wrench_frames: int = 0) -> dict[str, np.ndarray]:
    """``count`` random states (q, v and the given x), as arrays of shape (n, count); on closed loops they close
    every loop (``close_loops`` from random independent joints); random external wrenches on ``wrench_frames``
    frames ("wrench", (6 · frames, count)). Reproducible."""
    rng = np.random.default_rng(seed)
    n = robot.num_dofs
    q, v = np.empty((n, count)), np.empty((n, count))
    qdd, x = np.empty((n, count)), np.empty((n, count))
    R, twist, accel = np.empty((9, count)), np.empty((6, count)), np.empty((6, count))
    passive = np.array([not j.actuated for j in robot.joints], bool)
    lower, upper = _sampled_range(robot)
    free = independent_joints(robot, robot.actuated_joint_names) if robot.loop_joints else []
    for k in range(count):
        q[:, k] = rng.uniform(lower, upper) if n else []
        v[:, k], qdd[:, k] = rng.uniform(-1, 1, n), rng.uniform(-2, 2, n)
        if robot.loop_joints:
            s = close_loops(robot, {f: rng.uniform(-0.2, 0.2) for f in free}, {f: rng.uniform(-1, 1) for f in free},
                            {f: rng.uniform(-2, 2) for f in free})
            q[:, k], v[:, k], qdd[:, k] = s.q, s.v, s.qdd
        robot.follow_drives(q[:, k], v[:, k], qdd[:, k])
        tau = rng.uniform(-5, 5, n)
        tau[passive] = 0.0
        if robot.floating_base:  # a random rotation (row-major), twist and acceleration of the base
            u = rng.normal(size=4)
            R[:, k] = gtsam.Rot3.Quaternion(*(u / np.linalg.norm(u))).matrix().ravel()
            twist[:, k], accel[:, k] = rng.uniform(-1, 1, 6), rng.uniform(-2, 2, 6)
        if problem == "inverse":
            x[:, k] = qdd[:, k]
        elif problem == "forward":
            x[:, k] = tau
        else:
            x[:, k] = [qdd[j, k] if name in qdd_joints else tau[j] for j, name in enumerate(robot.joint_names)]
    out = {"q": q, "v": v, "x": x}
    if wrench_frames:  # their own stream: the states stay those of a solver without wrenches
        out["wrench"] = np.random.default_rng(seed + 1).uniform(-3, 3, (6 * wrench_frames, count))
    if robot.floating_base:  # "given": the base quantity a problem gives (acceleration, or wrench), any numbers
        out.update(R=R, twist=twist, accel=accel, given=accel)
    return out


def _sampled_range(robot: Robot) -> tuple[np.ndarray, np.ndarray]:
    """Each joint's range, limits beyond ±π cut there: where random states are drawn."""
    return np.maximum(robot.lower_limits, -np.pi), np.minimum(robot.upper_limits, np.pi)


def build_states(robot: Robot, problem: str, qdd_joints=(), wrench_frames: int = 0) -> dict[str, np.ndarray]:
    """The states a compiled solver is built at (its pivots chosen, its certificate's way) and checked at:
    ``SAMPLES`` random states, then — without closed loops, whose joints at zero need not close them — the
    reference configuration: every joint at zero (or its nearest limit), the base unrotated, the rest random.

    Random states never zero an entry that symmetry zeroes there: Solo-12 standing on its four feet with straight
    legs zeroes its contact rows' leg entries, the pivots the random states like best. The pivot choice notes and
    guards such pivots (``gtdyn.compiled.plan``), and a twin answers there (``gtdyn.compiled.rescue``)."""
    states = sample_states(robot, problem, qdd_joints, SAMPLES + 1, wrench_frames=wrench_frames)
    if robot.loop_joints:
        return {name: value[:, :SAMPLES] for name, value in states.items()}
    lower, upper = _sampled_range(robot)
    q = states["q"][:, SAMPLES]  # a view: the state's velocities and given x stay the random draw's
    q[:] = np.clip(0.0, lower, upper)
    robot.follow_drives(q)
    if robot.floating_base:
        states["R"][:, SAMPLES] = np.eye(3).ravel()
    return states
