"""Plain descriptions of links and joints, as parsers read them from a file (no gtsam, no physics).

A parser (URDF, SDF) produces a ``RobotDescription``; ``gtdyn.model.build.build_robot`` turns it into an
immutable ``Robot`` (merging fixed joints, checking topology and inertias).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed")


@dataclass(frozen=True)
class LinkSpec:
    """A link as written in the file.

    ``inertial_origin`` is the 4×4 pose of the inertial (CoM) frame in the link frame, ``inertia`` the 3×3
    inertia about the CoM expressed in that frame. A link without ``<inertial>`` has zero mass and inertia.
    """

    name: str
    mass: float = 0.0
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))
    inertial_origin: np.ndarray = field(default_factory=lambda: np.eye(4))


@dataclass(frozen=True)
class JointSpec:
    """A joint as written in the file.

    ``origin`` is the 4×4 pose of the joint frame in the parent link frame, and ``child_pose`` the pose of the
    child link frame in the joint frame at zero joint value (identity in URDF, where the child link frame *is*
    the joint frame; SDF places link and joint frames independently). The joint moves its child by
    exp([axis] q) in the joint frame: parent_T_child(q) = origin · exp([axis] q) · child_pose. ``axis`` is a
    unit vector in the joint frame. ``actuated`` False marks a passive joint (τ = 0). ``mimic`` (URDF's
    ``<mimic joint multiplier offset>``) couples the joint to another: q = multiplier · q_joint + offset.
    """

    name: str
    type: str
    parent: str
    child: str
    origin: np.ndarray = field(default_factory=lambda: np.eye(4))
    axis: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.0, 0.0]))
    lower: float = -np.inf
    upper: float = np.inf
    effort: float = np.inf
    velocity: float = np.inf
    child_pose: np.ndarray = field(default_factory=lambda: np.eye(4))
    actuated: bool = True
    mimic: tuple[str, float, float] | None = None  # (joint, multiplier, offset): q = multiplier · q_joint + offset


@dataclass(frozen=True)
class TransmissionSpec:
    """A ``<gtdyn:transmission>`` block: ``joint`` driven as q = Σ ratio · q_drive + offset over ``drives``
    ((joint name, ratio), …)."""

    joint: str
    drives: tuple[tuple[str, float], ...]
    offset: float = 0.0


@dataclass(frozen=True)
class RobotDescription:
    """Everything a parser read: the robot's name, its links and joints in file order, and the source.

    ``allow_loops``: the format can describe closed kinematic loops (SDF), so a link may be the child of several
    joints; ``base``: the link fixed to the world, if the file says so (SDF's joint to ``world``), else the one
    link that is no joint's child.
    """

    name: str
    links: tuple[LinkSpec, ...]
    joints: tuple[JointSpec, ...]
    source: str = "<memory>"
    allow_loops: bool = False
    base: str | None = None
    transmissions: tuple[TransmissionSpec, ...] = ()  # <gtdyn:transmission> blocks (a <mimic> is on its joint)
