"""The robot model: immutable links and joints of a fixed-base tree, built from a ``RobotDescription``.

Frames (names say the frame, as ``aTb`` = pose of frame b in frame a):

* every moving link's dynamics quantities live in its **CoM frame** (``lTcom`` places it in the link frame);
* the fixed base's dynamics frame is the world frame, which is the base link frame;
* joint ``j`` moves its child relative to its parent: ``pTc(q) = rest_pose · exp([S] q)``, with ``S`` the
  screw axis expressed in the child's CoM frame and ``p``/``c`` the parent's/child's dynamics frames.

URDF ``fixed`` joints are merged into their parent link (inertias composed), as Pinocchio does; every
original link name stays reachable as a *frame* of the moving link it was merged into.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import warnings

import gtsam
import numpy as np

from gtdyn.description import JOINT_TYPES, JointSpec, LinkSpec, RobotDescription
from gtdyn.errors import ModelError, ModelWarning
from gtdyn.spatial import Ad, pose, screw_exp, spatial_inertia

# A moving subtree whose inertia seen along its joint's axis is below this is treated as massless:
# its joint acceleration would be undetermined in forward dynamics (kg·m² or kg).
MASSLESS_TOLERANCE = 1e-12


def _frozen(a) -> np.ndarray:
    a = np.array(a, dtype=float)
    a.flags.writeable = False
    return a


@dataclass(frozen=True, eq=False)
class Link:
    """A rigid body. ``index`` 0 is the fixed base; moving links are numbered 1..n like their joints."""

    name: str
    index: int
    mass: float
    inertia: np.ndarray  # 3×3 about the CoM, in the CoM frame
    lTcom: gtsam.Pose3  # CoM frame in the link frame

    @property
    def G(self) -> np.ndarray:
        """Spatial inertia diag(I_com, m·I3) in the CoM frame."""
        return spatial_inertia(self.mass, self.inertia)


@dataclass(frozen=True, eq=False)
class Joint:
    """A 1-DoF joint between ``parent`` and ``child`` links; numbered 1..n in ``robot.joint_names`` order."""

    name: str
    index: int
    type: str  # "revolute" or "prismatic" ("continuous" is a revolute without limits)
    parent: str
    child: str
    origin: gtsam.Pose3  # joint frame in the parent link frame
    axis: np.ndarray  # unit axis in the joint frame
    screw_axis: np.ndarray  # S: 6-vector [ω; v] in the child's CoM frame
    rest_pose: gtsam.Pose3  # pTc at q = 0, between the parent's and child's dynamics frames
    lower: float = -np.inf
    upper: float = np.inf
    effort: float = np.inf
    velocity: float = np.inf

    def parent_T_child(self, q: float) -> gtsam.Pose3:
        """pTc(q) = rest_pose · exp([S] q), between the parent's and child's dynamics frames."""
        return self.rest_pose.compose(screw_exp(self.screw_axis, q))

    def child_T_parent(self, q: float) -> gtsam.Pose3:
        """cTp(q), the pose of the parent's dynamics frame in the child's: the T_{i,i-1}(θ_i) of eq. 4–6."""
        return self.parent_T_child(q).inverse()


@dataclass(frozen=True, eq=False)
class Robot:
    """An immutable fixed-base robot: a base link, moving links and joints in root→leaf order.

    Build one with ``gtdyn.load_robot(path)`` or ``build_robot(description)``.
    """

    name: str
    base: Link
    links: tuple[Link, ...]  # moving links, links[i-1].index == i
    joints: tuple[Joint, ...]  # joints[j-1].index == j; joint j's child is link j
    frames: dict  # every original link name -> (moving or base link name, Pose3 of that frame in the link)
    source: str = "<memory>"

    # -- names and sizes -------------------------------------------------------------------------------
    @property
    def joint_names(self) -> list[str]:
        """The order of every q, v, q̈, τ array."""
        return [j.name for j in self.joints]

    @property
    def link_names(self) -> list[str]:
        return [link.name for link in self.links]

    @property
    def num_dofs(self) -> int:
        return len(self.joints)

    # -- look-ups --------------------------------------------------------------------------------------
    def joint(self, name: str) -> Joint:
        for j in self.joints:
            if j.name == name:
                return j
        raise KeyError(f"robot '{self.name}' has no joint '{name}' (joints: {', '.join(self.joint_names)})")

    def link(self, name: str) -> Link:
        if name == self.base.name:
            return self.base
        for link in self.links:
            if link.name == name:
                return link
        raise KeyError(f"robot '{self.name}' has no moving link '{name}' (links: {', '.join(self.link_names)})")

    def is_base(self, link_name: str) -> bool:
        return link_name == self.base.name

    def parent_joint(self, link_name: str) -> Joint | None:
        """The joint whose child is this link (None for the base)."""
        for j in self.joints:
            if j.child == link_name:
                return j
        return None

    def child_joints(self, link_name: str) -> list[Joint]:
        """Joints whose parent is this link, in root→leaf order."""
        return [j for j in self.joints if j.parent == link_name]

    def __repr__(self) -> str:
        return f"Robot('{self.name}', {self.num_dofs} joints: {', '.join(self.joint_names)})"


# ----------------------------------------------------------------------------------------------------
# Building a Robot from a description
# ----------------------------------------------------------------------------------------------------


def build_robot(description: RobotDescription) -> Robot:
    """Check a description's topology and inertias, merge fixed joints, and build the immutable Robot."""
    src = description.source
    link_specs = _unique(description.links, "link", src)
    joint_specs = _unique(description.joints, "joint", src)
    for js in joint_specs.values():
        _check_joint_spec(js, link_specs, src)
    for ls in link_specs.values():
        _check_inertial(ls, src)
    root = _find_root(link_specs, joint_specs, src)
    tree_order = _depth_first_joints(root, joint_specs, link_specs, src)

    # Merge fixed joints: each original link belongs to a body (a moving link or the base).
    body_of = {root: (root, np.eye(4))}  # link -> (body link name, bodyTlink 4×4)
    moving: list[JointSpec] = []
    for js in tree_order:
        body, bTp = body_of[js.parent]
        if js.type == "fixed":
            body_of[js.child] = (body, bTp @ js.origin)
        else:
            body_of[js.child] = (js.child, np.eye(4))
            moving.append(_reparent(js, body, bTp @ js.origin))

    members: dict[str, list[tuple[LinkSpec, np.ndarray]]] = {}
    for name, (body, bTl) in body_of.items():
        members.setdefault(body, []).append((link_specs[name], bTl))

    links = {}
    for index, body in enumerate([root] + [js.child for js in moving]):
        mass, inertia, lTcom = _composite_inertial(members[body])
        links[body] = Link(body, index, mass, _frozen(inertia), lTcom)

    joints = [_make_joint(js, index + 1, links, root) for index, js in enumerate(moving)]
    frames = {name: (body, pose(bTl[:3, :3], bTl[:3, 3])) for name, (body, bTl) in body_of.items()}
    robot = Robot(
        name=description.name,
        base=links[root],
        links=tuple(links[js.child] for js in moving),
        joints=tuple(joints),
        frames=frames,
        source=src,
    )
    _check_determined(robot)
    return robot


def _unique(items: Iterable, kind: str, src: str) -> dict:
    out = {}
    for item in items:
        if not item.name:
            raise ModelError(f"{src}: a <{kind}> has no name")
        if item.name in out:
            raise ModelError(f"{src}: duplicate {kind} name '{item.name}'")
        out[item.name] = item
    return out


def _check_joint_spec(js: JointSpec, links: dict, src: str) -> None:
    where = f"{src}: joint '{js.name}'"
    if js.type not in JOINT_TYPES:
        raise ModelError(f"{where} has type '{js.type}'; supported types are {', '.join(JOINT_TYPES)}")
    for role, name in (("parent", js.parent), ("child", js.child)):
        if name not in links:
            raise ModelError(f"{where} names {role} link '{name}', which is not defined")
    if js.parent == js.child:
        raise ModelError(f"{where} connects link '{js.parent}' to itself")
    if not np.all(np.isfinite(js.origin)):
        raise ModelError(f"{where} has a non-finite <origin>")
    if js.type != "fixed":
        n = np.linalg.norm(js.axis)
        if not np.isfinite(n) or n < 1e-12:
            raise ModelError(f"{where} has a zero or non-finite <axis> {list(js.axis)}")


def _check_inertial(ls: LinkSpec, src: str) -> None:
    where = f"{src}: link '{ls.name}' <inertial>"
    if not np.isfinite(ls.mass) or ls.mass < 0:
        raise ModelError(f"{where} has mass {ls.mass}; it must be finite and non-negative")
    inertia = np.asarray(ls.inertia, dtype=float)
    if inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)):
        raise ModelError(f"{where} has a malformed or non-finite inertia")
    eig = np.linalg.eigvalsh(0.5 * (inertia + inertia.T))
    scale = max(1.0, float(np.max(np.abs(eig))))
    if eig[0] < -1e-9 * scale:
        # Real robot files ship such data (Pinocchio accepts it); use it as given, but say so.
        warnings.warn(f"{where} has an inertia that is not positive semi-definite (eigenvalues {eig}); "
                      "it is used as given", ModelWarning, stacklevel=4)
    if not np.all(np.isfinite(ls.inertial_origin)):
        raise ModelError(f"{where} has a non-finite <origin>")


def _find_root(links: dict, joints: dict, src: str) -> str:
    children: dict[str, list[str]] = {}
    for js in joints.values():
        children.setdefault(js.child, []).append(js.name)
    for link, names in children.items():
        if len(names) > 1:
            raise ModelError(
                f"{src}: link '{link}' is the child of several joints ({', '.join(names)}); "
                "a tree needs exactly one parent joint per link (closed loops are described in SDF)"
            )
    roots = [name for name in links if name not in children]
    if len(roots) > 1:
        raise ModelError(f"{src}: several root links ({', '.join(roots)}); a robot needs exactly one base link")
    if not roots:
        raise ModelError(f"{src}: every link is the child of a joint, so the joints form a cycle and there is no base")
    return roots[0]


def _depth_first_joints(root: str, joints: dict, links: dict, src: str) -> list[JointSpec]:
    """Joints in depth-first pre-order from the root, children in file order (as Pinocchio numbers them)."""
    by_parent: dict[str, list[JointSpec]] = {}
    for js in joints.values():
        by_parent.setdefault(js.parent, []).append(js)
    order: list[JointSpec] = []
    stack = list(reversed(by_parent.get(root, [])))
    while stack:
        js = stack.pop()
        order.append(js)
        stack.extend(reversed(by_parent.get(js.child, [])))
    reached = {root} | {js.child for js in order}
    unreachable = [name for name in links if name not in reached]
    if unreachable:
        raise ModelError(
            f"{src}: links {', '.join(unreachable)} are not connected to the base '{root}' "
            "(their joints form a cycle among themselves)"
        )
    return order


def _reparent(js: JointSpec, body: str, bTj: np.ndarray) -> JointSpec:
    """The joint re-attached to the body its parent link was merged into."""
    return JointSpec(js.name, js.type, body, js.child, bTj, np.asarray(js.axis, float) / np.linalg.norm(js.axis),
                     js.lower, js.upper, js.effort, js.velocity)


def _composite_inertial(members: list[tuple[LinkSpec, np.ndarray]]) -> tuple[float, np.ndarray, gtsam.Pose3]:
    """Mass, inertia about the CoM and CoM frame (in the body link frame) of links rigidly merged together.

    A body made of one link keeps that link's inertial frame (rotated frames included); a merged body uses
    a CoM frame parallel to the body link frame.
    """
    massive = [(ls, bTl) for ls, bTl in members if ls.mass > 0 or np.any(ls.inertia)]
    if len(massive) == 1:
        ls, bTl = massive[0]
        bTcom = bTl @ ls.inertial_origin
        return ls.mass, np.asarray(ls.inertia, float), pose(bTcom[:3, :3], bTcom[:3, 3])
    if not massive:
        return 0.0, np.zeros((3, 3)), gtsam.Pose3()
    mass = sum(ls.mass for ls, _ in massive)
    coms = [(bTl @ ls.inertial_origin) for ls, bTl in massive]
    com = sum(ls.mass * c[:3, 3] for (ls, _), c in zip(massive, coms)) / mass if mass > 0 else np.zeros(3)
    inertia = np.zeros((3, 3))
    for (ls, _), c in zip(massive, coms):
        R, d = c[:3, :3], c[:3, 3] - com
        inertia += R @ ls.inertia @ R.T + ls.mass * (d @ d * np.eye(3) - np.outer(d, d))  # parallel axis
    return mass, inertia, pose(None, com)


def _make_joint(js: JointSpec, index: int, links: dict, root: str) -> Joint:
    parent, child = links[js.parent], links[js.child]
    pTj = pose(js.origin[:3, :3], js.origin[:3, 3])
    # The base's dynamics frame is its link frame (the world); a moving link's is its CoM frame.
    pdynTp = gtsam.Pose3() if js.parent == root else parent.lTcom.inverse()
    rest_pose = pdynTp.compose(pTj).compose(child.lTcom)
    axis = np.asarray(js.axis, float)
    joint_screw = np.concatenate([axis, np.zeros(3)]) if js.type != "prismatic" else np.concatenate([np.zeros(3), axis])
    screw_axis = Ad(child.lTcom.inverse()) @ joint_screw  # from the joint (= child link) frame to the CoM frame
    kind = "prismatic" if js.type == "prismatic" else "revolute"
    return Joint(js.name, index, kind, js.parent, js.child, pTj, _frozen(axis), _frozen(screw_axis), rest_pose,
                 js.lower, js.upper, js.effort, js.velocity)


def _check_determined(robot: Robot) -> None:
    """Warn about joints that move no inertia along their axis: forward dynamics cannot determine their q̈.

    Checked at q = 0 with the subtree's composite inertia, in the child's CoM frame. Inverse dynamics stays
    determined, so such robots load; a solve that leaves those q̈ unknown raises IndeterminateSystemError.
    """
    composite = {link.name: link.G.copy() for link in robot.links}
    massless = []
    for joint in reversed(robot.joints):  # leaves first
        S = joint.screw_axis
        if S @ composite[joint.child] @ S < MASSLESS_TOLERANCE:
            massless.append(joint.name)
        if not robot.is_base(joint.parent):
            Adj = Ad(joint.rest_pose.inverse())  # child's dynamics frame -> parent's
            composite[joint.parent] += Adj.T @ composite[joint.child] @ Adj
    if massless:
        warnings.warn(
            f"{robot.source}: joints {', '.join(reversed(massless))} move only massless links, so forward "
            "dynamics cannot determine their accelerations (inverse dynamics can). Give those links an "
            "<inertial>, or make the joints fixed", ModelWarning, stacklevel=4)
