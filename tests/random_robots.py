"""Seeded random robots for tests: chains and trees with random inertias (off-diagonal terms), rotated
inertial frames, revolute and prismatic joints, and fixed joints to merge."""

from __future__ import annotations

import numpy as np

from gtdyn.model.description import JointSpec, LinkSpec, RobotDescription
from gtdyn.model.build import build_robot
from gtdyn.model.robot import Robot


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    Q, R = np.linalg.qr(rng.normal(size=(3, 3)))
    Q = Q @ np.diag(np.sign(np.diag(R)))
    return Q if np.linalg.det(Q) > 0 else -Q


def random_pose(rng: np.random.Generator, scale: float = 0.5) -> np.ndarray:
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
    return R @ np.diag(d) @ R.T


def random_link(rng: np.random.Generator, name: str) -> LinkSpec:
    return LinkSpec(name, float(rng.uniform(0.5, 5.0)), random_inertia(rng), random_pose(rng, 0.3), True)


def random_robot(rng: np.random.Generator, n: int = 5, tree: bool = False, prismatic: float = 0.3,
                 fixed: float = 0.0) -> Robot:
    """n moving joints; a tree attaches each new link to a random earlier one, a chain to the last."""
    links = [LinkSpec("base")]
    joints: list[JointSpec] = []
    moving = 0
    while moving < n:
        parent = links[int(rng.integers(0, len(links)))].name if tree else links[-1].name
        name = f"l{len(links)}"
        is_fixed = rng.uniform() < fixed
        kind = "fixed" if is_fixed else ("prismatic" if rng.uniform() < prismatic else "revolute")
        axis = rng.normal(size=3)
        links.append(random_link(rng, name))
        joints.append(JointSpec(f"j{len(joints) + 1}", kind, parent, name, random_pose(rng), axis / np.linalg.norm(axis)))
        moving += not is_fixed
    return build_robot(RobotDescription("random", tuple(links), tuple(joints)))
