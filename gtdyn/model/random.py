"""Seeded random robots for tests and benchmarks."""

from __future__ import annotations

import numpy as np

from gtdyn.model.build import build_robot
from gtdyn.model.description import JointSpec, LinkSpec, RobotDescription
from gtdyn.model.robot import Robot


def serial_chain(n: int, seed: int = 0) -> Robot:
    """An n-joint revolute chain with random link inertias and joint axes (a seeded generator)."""
    rng = np.random.default_rng(seed)
    links = [LinkSpec("base")]
    joints = []
    for i in range(1, n + 1):
        R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        inertia = R @ np.diag(rng.uniform(0.02, 0.1, 3) + 0.05) @ R.T
        com = np.eye(4)
        com[:3, 3] = [0.15, 0.0, 0.0]
        links.append(LinkSpec(f"link{i}", float(rng.uniform(0.5, 3.0)), inertia, com, True))
        origin = np.eye(4)
        origin[:3, 3] = [0.3 if i > 1 else 0.0, 0.0, 0.0]
        axis = rng.normal(size=3)
        joints.append(JointSpec(f"j{i}", "revolute", links[-2].name, f"link{i}", origin, axis / np.linalg.norm(axis)))
    return build_robot(RobotDescription(f"chain{n}", tuple(links), tuple(joints)))
