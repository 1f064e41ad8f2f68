"""Planar closed-loop mechanisms built directly as descriptions (independent of any file reader), moving in
the x–z plane with joint axes along y, assembled at zero joint values. ``gtdyn.model.build.build_robot`` turns
them into robots; ``loop_references.LagrangeReference`` into an independent reference."""

from __future__ import annotations

import numpy as np

from gtdyn.model.description import JointSpec, LinkSpec, RobotDescription

Y = np.array([0.0, 1.0, 0.0])


def translation(x, y=0.0, z=0.0) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = [x, y, z]
    return T


def rod(name: str, mass: float, start: np.ndarray, end: np.ndarray, thickness: float = 0.04) -> LinkSpec:
    """A slender rod from its link frame origin ``start`` (world, frame axes aligned with the world) to ``end``:
    CoM at the middle, inertia about the CoM in the link frame (off-diagonal for a slanted rod)."""
    d = np.asarray(end, float) - np.asarray(start, float)
    length = np.linalg.norm(d)
    u = d / length
    inertia = mass * length**2 / 12 * (np.eye(3) - np.outer(u, u)) + mass * thickness**2 / 12 * np.eye(3)
    return LinkSpec(name, mass, inertia, translation(*(d / 2)))


def revolute(name, parent, child, origin, child_pose=None, actuated=True) -> JointSpec:
    return JointSpec(name, "revolute", parent, child, origin, Y,
                     child_pose=np.eye(4) if child_pose is None else child_pose, actuated=actuated)


def parallelogram_four_bar(a: float = 1.0, b: float = 2.0, m: float = 1.0, M: float = 2.0):
    """Crank (j1, actuated) and rocker (j4) of length a and mass m on pivots b apart; a coupler of length b and
    mass M; j2 crank→coupler; j3 coupler→rocker closes the loop. At q = 0 crank and rocker point up (+z)."""
    links = (LinkSpec("ground"), rod("crank", m, [0, 0, 0], [0, 0, a]), rod("coupler", M, [0, 0, a], [b, 0, a]),
             rod("rocker", m, [b, 0, 0], [b, 0, a]))
    joints = (revolute("j1", "ground", "crank", np.eye(4)),
              revolute("j2", "crank", "coupler", translation(0, 0, a), actuated=False),
              revolute("j4", "ground", "rocker", translation(b), actuated=False),
              revolute("j3", "coupler", "rocker", translation(b), child_pose=translation(0, 0, -a), actuated=False))
    return RobotDescription("four_bar", links, joints, allow_loops=True)


def five_bar(d: float = 1.0, crank: float = 1.0, distal: float = 1.2):
    """Paper Fig. 11: cranks j1, j2 (actuated) on pivots d apart, distal links from their tips (j3, j4), meeting
    at the end-effector joint j5, which closes the loop. At q = 0 both cranks point up."""
    top = np.sqrt(distal**2 - (d / 2) ** 2)
    P = np.array([d / 2, 0.0, crank + top])
    links = (LinkSpec("base"), rod("link1", 1.0, [0, 0, 0], [0, 0, crank]), rod("link2", 1.0, [d, 0, 0], [d, 0, crank]),
             rod("link3", 0.8, [0, 0, crank], P), rod("link4", 0.8, [d, 0, crank], P))
    joints = (revolute("j1", "base", "link1", np.eye(4)), revolute("j2", "base", "link2", translation(d)),
              revolute("j3", "link1", "link3", translation(0, 0, crank), actuated=False),
              revolute("j4", "link2", "link4", translation(0, 0, crank), actuated=False),
              revolute("j5", "link3", "link4", translation(*(P - [0, 0, crank])),
                       child_pose=translation(*([d, 0, crank] - P)), actuated=False))
    return RobotDescription("five_bar", links, joints, allow_loops=True)
