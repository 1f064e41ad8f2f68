"""Helpers for comparing with independent references: example-robot-data paths and the relative error.

The Pinocchio adapter is ``gtdyn.bench.pinocchio.PinocchioModel`` (one adapter for tests and benchmarks)."""

from __future__ import annotations

import os
from importlib.metadata import PackageNotFoundError, distribution

import gtsam
import numpy as np

from gtdyn.compiled.fallback import as_vector, reference_answer
from gtdyn.kinematics.loop_closure import close_loops


def erd_path(relative: str) -> str:
    """Path of a URDF shipped by the example-robot-data wheel (data only, under cmeel.prefix/share)."""
    try:
        root = distribution("example-robot-data").locate_file("cmeel.prefix/share/example-robot-data/robots")
    except PackageNotFoundError:  # pragma: no cover - the test extra installs it
        raise RuntimeError("example-robot-data is not installed: pip install -e '.[test]'") from None
    path = os.path.join(str(root), relative)
    if not os.path.isfile(path):
        raise FileNotFoundError(path)
    return path


def erd_root() -> str:
    return os.path.dirname(erd_path("ur_description/urdf/ur5_robot.urdf")).rsplit("/ur_description", 1)[0]


def rel_err(x, ref) -> float:
    """max|x − ref| / max|ref| (max norm), the issue's relative error."""
    x, ref = np.asarray(x, float), np.asarray(ref, float)
    return float(np.max(np.abs(x - ref)) / max(np.max(np.abs(ref)), 1e-300))


def load_quietly(path: str):
    """gtdyn.load_robot with every joint independent, as Pinocchio reads the file by default (its grippers'
    ``<mimic>`` joints free), without the ModelWarning that says so; tests/test_urdf.py checks that warning, and
    tests/test_transmissions.py the coupled reading."""
    import warnings

    import gtdyn

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*<mimic>", category=gtdyn.ModelWarning)
        return gtdyn.load_robot(path, transmissions="independent")


def random_states(n, count, seed=0):
    """(Q, V, X): ``count`` random states of n joints, entries in ±1."""
    return np.random.default_rng(seed).uniform(-1, 1, (3, count, n))


def random_base(rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A 4×4 base pose (random rotation and position), a base twist and a base acceleration."""
    quaternion = rng.normal(size=4)
    T = np.eye(4)
    T[:3, :3] = gtsam.Rot3.Quaternion(*(quaternion / np.linalg.norm(quaternion))).matrix()
    T[:3, 3] = rng.normal(size=3)
    return T, rng.normal(size=6), rng.normal(size=6)


def central_differences(solver, q, v, x, h=1e-6, blocks=(0, 1, 2)):
    """∂(reference answer)/∂(q, q̇, x) by central differences of the reference path (``reference_answer``: the
    solver's answer layout, computed by the reference path alone); driven joints follow their drives and their
    own columns are zero, as the compiled derivatives define them, and so are a passive joint's τ columns.
    ``blocks``: which of the three (0: q, 1: q̇, 2: x)."""
    robot = solver.robot
    driven = {t.dependent - 1 for t in robot.transmissions}
    passive = {j.index - 1 for j in robot.joints if not j.actuated}

    def value(q, v, x):
        return as_vector(reference_answer(solver, q, v, x))

    columns = []
    for which in blocks:
        block = []
        for j in range(robot.num_dofs):
            if (j in driven and (which < 2 or solver.problem == "inverse")) or \
                    (which == 2 and j in passive and solver.problem != "inverse"):
                block.append(np.zeros_like(value(q, v, x)))
                continue
            sides = []
            for sign in (1, -1):
                args = [np.array(a, float) for a in (q, v, x)]
                args[which][j] += sign * h
                robot.follow_drives(*args[:2], args[2] if solver.problem == "inverse" else None)
                sides.append(value(*args))
            block.append((sides[0] - sides[1]) / (2 * h))
        columns.append(np.array(block).T)
    return columns


def closed_state(robot, independent, seed):
    """A state that closes the loops (random independent joints' values and rates) and random actuated torques."""
    rng = np.random.default_rng(seed)
    state = close_loops(robot, {name: rng.uniform(-0.3, 0.3) for name in independent},
                        {name: rng.uniform(-1, 1) for name in independent})
    tau = np.zeros(robot.num_dofs)
    for name in robot.actuated_joint_names:
        tau[robot.joint_names.index(name)] = rng.uniform(-1, 1)
    return state.q, state.v, tau


def differences_along_loops(solver, q, v, x, h=1e-6):
    """``central_differences`` on a mechanism with closed loops, along them: ∂/∂q and ∂/∂q̇ over the independent
    joints (``solver.independent_joints``), each side a state that closes the loops again (``close_loops`` from
    the independent joints' values and rates, on the assembly branch of q); ∂/∂x as ``central_differences``."""
    robot, names = solver.robot, list(solver.independent_joints)
    at = [robot.joint_names.index(name) for name in names]

    def value(q_independent, v_independent):
        state = close_loops(robot, dict(zip(names, q_independent)), dict(zip(names, v_independent)), guess=q)
        return as_vector(reference_answer(solver, state.q, state.v, x))

    blocks = []
    for which in range(2):
        columns = []
        for step in np.eye(len(names)) * h:
            args = [np.asarray(q, float)[at], np.asarray(v, float)[at]]
            plus, minus = list(args), list(args)
            plus[which], minus[which] = args[which] + step, args[which] - step
            columns.append((value(*plus) - value(*minus)) / (2 * h))
        blocks.append(np.array(columns).T)
    return blocks + central_differences(solver, q, v, x, h, blocks=(2,))


def coupling(names, transmissions) -> tuple[np.ndarray, np.ndarray]:
    """G = ∂q/∂q_ind and the offset of linear transmissions written as tests/test_transmissions.py's tables
    ((driven joint, ((driving joint, ratio), …), offset), …), by hand: the independent coordinates are the joints
    no transmission drives, each its own column; a driven joint's row holds its ratios."""
    driven = {joint for joint, _, _ in transmissions}
    independent = [name for name in names if name not in driven]
    G, offset = np.zeros((len(names), len(independent))), np.zeros(len(names))
    for column, name in enumerate(independent):
        G[names.index(name), column] = 1.0
    for joint, drives, shift in transmissions:
        for driver, ratio in drives:
            G[names.index(joint), independent.index(driver)] = ratio
        offset[names.index(joint)] = shift
    return G, offset


def elementary_rpy(roll, pitch, yaw) -> np.ndarray:
    """Rz(yaw)·Ry(pitch)·Rx(roll), URDF's fixed-axis angles, from numpy's cos and sin (independent of
    ``gtdyn.spatial``)."""
    c, s = np.cos, np.sin
    Rx = np.array([[1, 0, 0], [0, c(roll), -s(roll)], [0, s(roll), c(roll)]])
    Ry = np.array([[c(pitch), 0, s(pitch)], [0, 1, 0], [-s(pitch), 0, c(pitch)]])
    Rz = np.array([[c(yaw), -s(yaw), 0], [s(yaw), c(yaw), 0], [0, 0, 1]])
    return Rz @ Ry @ Rx
