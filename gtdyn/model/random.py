"""Seeded random robots for tests and benchmarks: chains and trees with random masses, rotated inertias
(off-diagonal terms) in rotated and offset inertial frames, random joint frames and axes, revolute and
prismatic joints, and fixed joints for ``build_robot`` to merge.

Every function takes ``seed``: an int, or a ``numpy.random.Generator`` to draw from (and advance), so a test
can go on drawing states from the same stream.
"""

from __future__ import annotations

import numpy as np

from gtdyn.model.build import build_robot
from gtdyn.model.description import JointSpec, LinkSpec, RobotDescription
from gtdyn.model.robot import Robot

# Finite limits, so that a random robot can be written to URDF (which needs them on revolute and prismatic
# joints); they cover the states the tests draw (q in [−π, π]). Dynamics never reads them.
LIMITS = {"lower": -np.pi, "upper": np.pi, "effort": 100.0, "velocity": 10.0}


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    """A rotation matrix (QR of a Gaussian matrix, signs fixed so that it is a proper rotation)."""
    Q, R = np.linalg.qr(rng.normal(size=(3, 3)))
    Q = Q @ np.diag(np.sign(np.diag(R)))
    return Q if np.linalg.det(Q) > 0 else -Q


def random_pose(rng: np.random.Generator, scale: float = 0.5) -> np.ndarray:
    """A 4×4 pose: a random rotation and a translation uniform in [−scale, scale]³."""
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = random_rotation(rng), rng.uniform(-scale, scale, 3)
    return T


def random_inertia(rng: np.random.Generator) -> np.ndarray:
    """A physically valid inertia (principal moments obey the triangle inequality), rotated: off-diagonal terms."""
    while True:
        d = rng.uniform(0.01, 0.5, 3)
        if d[0] + d[1] > d[2] and d[1] + d[2] > d[0] and d[0] + d[2] > d[1]:
            break
    R = random_rotation(rng)
    inertia = R @ np.diag(d) @ R.T
    return (inertia + inertia.T) / 2  # exactly symmetric, as a file stores it


def random_link(rng: np.random.Generator, name: str) -> LinkSpec:
    """Mass in [0.5, 5] kg, a random inertia, its CoM frame rotated and up to 0.3 m from the link frame."""
    return LinkSpec(name, mass=float(rng.uniform(0.5, 5.0)), inertia=random_inertia(rng),
                    inertial_origin=random_pose(rng, 0.3))


def random_description(seed: int | np.random.Generator = 0, n: int = 5, *, tree: bool = False, prismatic: float = 0.3,
                       fixed: float = 0.0, name: str = "random") -> RobotDescription:
    """A robot with ``n`` moving joints (links ``l1``, ``l2``… on a massless ``base``; joints ``j1``, ``j2``…).

    Each new link hangs from a random earlier link (``tree``) or from the last one (a chain), by a joint in a
    random frame (up to 0.5 m away) with a random unit axis; the joint is fixed with probability ``fixed``
    (those do not count towards ``n``), else prismatic with probability ``prismatic``, else revolute.
    """
    rng = np.random.default_rng(seed)
    links = [LinkSpec("base")]
    joints: list[JointSpec] = []
    moving = 0
    while moving < n:
        parent = links[int(rng.integers(0, len(links)))].name if tree else links[-1].name
        child = f"l{len(links)}"
        is_fixed = rng.uniform() < fixed
        kind = "fixed" if is_fixed else ("prismatic" if rng.uniform() < prismatic else "revolute")
        axis = rng.normal(size=3)
        links.append(random_link(rng, child))
        origin, axis = random_pose(rng), axis / np.linalg.norm(axis)
        joints.append(JointSpec(f"j{len(joints) + 1}", kind, parent, child, origin, axis, **LIMITS))
        moving += not is_fixed
    return RobotDescription(name, tuple(links), tuple(joints))


def random_robot(seed: int | np.random.Generator = 0, n: int = 5, *, tree: bool = False, prismatic: float = 0.3,
                 fixed: float = 0.0, name: str = "random") -> Robot:
    """``build_robot`` of ``random_description`` (same arguments): fixed joints merged."""
    return build_robot(random_description(seed, n, tree=tree, prismatic=prismatic, fixed=fixed, name=name))


def serial_chain(n: int, seed: int = 0) -> Robot:
    """The benchmarks' scaling robot: a seeded chain of ``n`` revolute joints, named ``chain{n}``."""
    return random_robot(seed, n, tree=False, prismatic=0.0, fixed=0.0, name=f"chain{n}")


def uniform_chain_description(n: int, length: float = 0.1, mass: float = 0.1) -> RobotDescription:
    """A long serial chain of ``n`` identical links (``length`` m, ``mass`` kg, each a thin rod about its own
    axis), revolute axes alternating y and z: the case in which a chain's q̈ become sensitive to rounding
    (``DynamicsResult.error_estimate``), named ``uniform_chain{n}``."""
    inertia = mass * length ** 2 * np.diag([1 / 12, 1 / 12, 1 / 200])
    links, joints = [LinkSpec("base")], []
    for k in range(1, n + 1):
        center = np.eye(4)
        center[2, 3] = length / 2
        links.append(LinkSpec(f"l{k}", mass=mass, inertia=inertia, inertial_origin=center))
        origin = np.eye(4)
        origin[2, 3] = length if k > 1 else 0.0
        axis = np.array([0.0, 1.0, 0.0]) if k % 2 else np.array([0.0, 0.0, 1.0])
        joints.append(JointSpec(f"j{k}", "revolute", links[k - 1].name, f"l{k}", origin, axis, **LIMITS))
    return RobotDescription(f"uniform_chain{n}", tuple(links), tuple(joints))
