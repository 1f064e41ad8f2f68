"""The robot model: immutable links and joints of a mechanism (a tree, or a tree closed into loops by extra
joints) whose base is fixed to the world or floating, built from a ``RobotDescription`` by
``gtdyn.model.build.build_robot``.

Frames (names say the frame, as ``aTb`` = pose of frame b in frame a):

* every moving link's dynamics quantities live in its **CoM frame** (``lTcom`` places it in the link frame);
* a fixed base's dynamics frame is the world frame, which is the base link frame; a floating base is a body
  like the others, with six free degrees of freedom: its dynamics frame is its CoM frame;
* joint ``j`` moves its child relative to its parent: ``pTc(q) = rest_pose · exp([S] q)``, with ``S`` the
  screw axis expressed in the child's CoM frame and ``p``/``c`` the parent's/child's dynamics frames.

URDF ``fixed`` joints are merged into their parent link (inertias composed), as Pinocchio does; every
original link name stays reachable as a *frame* of the moving link it was merged into.

Closed loops: the joints found depth-first from the base form a spanning tree (joints 1..n, joint j's child
is link j); every other joint closes a loop (joints n+1..m). ``joint_names`` lists them all, tree joints first.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field

import gtsam
import numpy as np

from gtdyn.errors import ArgumentError
from gtdyn.model.description import RobotDescription
from gtdyn.spatial import screw_exp, spatial_inertia


@dataclass(frozen=True, eq=False)
class Link:
    """A rigid body. ``index`` 0 is the base (fixed or floating); moving links are numbered 1..n like their
    joints."""

    name: str
    index: int
    mass: float
    inertia: np.ndarray  # 3×3 about the CoM, in the CoM frame
    lTcom: gtsam.Pose3  # CoM frame in the link frame
    G: np.ndarray = field(init=False, repr=False)  # spatial inertia diag(I_com, m·I3) in the CoM frame

    def __post_init__(self):  # derived once from mass and inertia, read-only like them
        G = spatial_inertia(self.mass, self.inertia)
        G.flags.writeable = False
        object.__setattr__(self, "G", G)


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
    actuated: bool = True  # False: a passive joint, τ = 0
    closes_loop: bool = False  # not in the spanning tree
    armature: float = 0.0  # reflected rotor inertia on the mass matrix's diagonal (transmissions="approximate")

    def parent_T_child(self, q: float) -> gtsam.Pose3:
        """pTc(q) = rest_pose · exp([S] q), between the parent's and child's dynamics frames."""
        return self.rest_pose.compose(screw_exp(self.screw_axis, q))

    def child_T_parent(self, q: float) -> gtsam.Pose3:
        """cTp(q), the pose of the parent's dynamics frame in the child's: the T_{i,i-1}(θ_i) of eq. 4–6."""
        return self.parent_T_child(q).inverse()


@dataclass(frozen=True)
class Transmission:
    """A joint driven through a transmission: q_dependent = Σ ratio_k · q_k + offset over the ``terms``
    (joint index, ratio), and so q̇ and q̈ likewise. Its constraint force, λ, acts on the dependent joint (−λ in
    its torque balance) and, scaled by each ratio, on the driving joints (by virtual work). A URDF ``<mimic>``
    is the one-term case."""

    name: str
    dependent: int
    terms: tuple[tuple[int, float], ...]
    offset: float = 0.0

    def follow(self, x, position: bool = True):
        """What the dependent joint's entry of ``x`` (joint order along the first axis: q, q̇ or q̈, one state or
        a column per state) must be: Σ ratio_k x_k, plus the offset for positions."""
        return sum(ratio * x[j - 1] for j, ratio in self.terms) + (self.offset if position else 0.0)


@dataclass(frozen=True)
class _Topology:
    """Name → object maps, the parent array λ and the joints around each link: what look-ups need, computed
    once per Robot so that no query scans the joint list."""

    joint_names: tuple[str, ...]
    joint_by_name: dict[str, Joint]
    link_by_name: dict[str, Link]
    parents: tuple[int, ...]
    tree_joints: tuple[Joint, ...]
    loop_joints: tuple[Joint, ...]
    parent_joint: dict[str, Joint]
    child_joints: dict[str, tuple[Joint, ...]]
    joints_into: dict[str, tuple[Joint, ...]]
    joints_out_of: dict[str, tuple[Joint, ...]]
    lower: np.ndarray  # each joint's limits, read-only: position (±inf where it has none), speed and effort (inf)
    upper: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray

    @staticmethod
    def of(robot: Robot) -> _Topology:
        link_by_name = {robot.base.name: robot.base, **{link.name: link for link in robot.links}}
        tree = tuple(j for j in robot.joints if not j.closes_loop)
        parents = [-1] * (len(robot.links) + 1)
        for j in tree:
            parents[link_by_name[j.child].index] = link_by_name[j.parent].index

        def group(attribute: str, joints) -> dict[str, tuple[Joint, ...]]:
            out: dict[str, list[Joint]] = {}
            for j in joints:
                out.setdefault(getattr(j, attribute), []).append(j)
            return {name: tuple(js) for name, js in out.items()}

        return _Topology(tuple(j.name for j in robot.joints), {j.name: j for j in robot.joints}, link_by_name,
                         tuple(parents), tree, tuple(j for j in robot.joints if j.closes_loop),
                         {j.child: j for j in tree}, group("parent", tree), group("child", robot.joints),
                         group("parent", robot.joints), *(_read_only([getattr(j, bound) for j in robot.joints])
                                                          for bound in ("lower", "upper", "velocity", "effort")))


def _read_only(values) -> np.ndarray:
    array = np.array(values, float)
    array.flags.writeable = False
    return array


@dataclass(frozen=True, eq=False)
class Robot:
    """An immutable mechanism: a base link, moving links, and joints (spanning tree root→leaf, then
    loop-closing joints). ``floating_base``: the base moves freely (six degrees of freedom, its state given
    apart from the joints'); otherwise it is welded to the world.

    Build one with ``gtdyn.load_robot(path)`` or ``gtdyn.model.build.build_robot(description)``, which keeps the
    ``description`` it was built from and how its transmissions were ``reading`` ("exact", "approximate",
    "independent"): what ``locked`` rebuilds from (neither is compared or shown).
    """

    name: str
    base: Link
    links: tuple[Link, ...]  # moving links, links[i-1].index == i
    joints: tuple[Joint, ...]  # joints[j-1].index == j; tree joint j's child is link j
    frames: dict  # every original link name -> (moving or base link name, Pose3 of that frame in the link)
    source: str = "<memory>"
    floating_base: bool = False
    transmissions: tuple[Transmission, ...] = ()
    description: RobotDescription | None = field(default=None, repr=False, compare=False)
    reading: str = field(default="independent", repr=False, compare=False)
    _topology: _Topology = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        # derived once from the fields above (also for dataclasses.replace copies); never changed afterwards
        object.__setattr__(self, "_topology", _Topology.of(self))

    # -- names and sizes -------------------------------------------------------------------------------
    @property
    def joint_names(self) -> list[str]:
        """The order of every q, v, q̈, τ array: spanning-tree joints root→leaf, then loop-closing joints."""
        return list(self._topology.joint_names)

    @property
    def link_names(self) -> list[str]:
        return [link.name for link in self.links]

    @property
    def num_dofs(self) -> int:
        """The number of joints (= length of q); a closed chain has fewer independent coordinates."""
        return len(self.joints)

    @property
    def nv(self) -> int:
        """The tangent dimension (Pinocchio's nv): a floating base's six, then one per joint."""
        return self.num_dofs + (6 if self.floating_base else 0)

    @property
    def lower_limits(self) -> np.ndarray:
        """Each joint's lower position limit, in ``joint_names`` order (−inf where it has none; Pinocchio's
        ``lowerPositionLimit``); read-only."""
        return self._topology.lower

    @property
    def upper_limits(self) -> np.ndarray:
        """Each joint's upper position limit, as ``lower_limits``."""
        return self._topology.upper

    @property
    def velocity_limits(self) -> np.ndarray:
        """Each joint's speed limit (inf where it has none; Pinocchio's ``velocityLimit``), as ``lower_limits``."""
        return self._topology.velocity

    @property
    def effort_limits(self) -> np.ndarray:
        """Each joint's torque or force limit (inf where it has none; Pinocchio's ``effortLimit``), as
        ``lower_limits``."""
        return self._topology.effort

    @property
    def parents(self) -> tuple[int, ...]:
        """λ: ``parents[i]`` is the index of moving link i's parent link along the spanning tree (0: the base);
        ``parents[0]`` is −1."""
        return self._topology.parents

    # -- look-ups --------------------------------------------------------------------------------------
    def joint(self, name: str) -> Joint:
        try:
            return self._topology.joint_by_name[name]
        except (KeyError, TypeError):
            raise KeyError(f"robot '{self.name}' has no joint '{name}' "
                           f"(joints: {', '.join(self.joint_names)})") from None

    def link(self, name: str) -> Link:
        try:
            return self._topology.link_by_name[name]
        except (KeyError, TypeError):
            raise KeyError(f"robot '{self.name}' has no moving link '{name}' "
                           f"(links: {', '.join(self.link_names)})") from None

    def is_base(self, link_name: str) -> bool:
        return link_name == self.base.name

    def follow_drives(self, q, v=None, qdd=None) -> None:
        """Set each driven joint's entry of q, q̇ and q̈ (arrays in joint order along their first axis; None: skip)
        to what its transmission's drives make it, in place: how a state is made to keep every coupling."""
        for t in self.transmissions:
            for x, position in ((q, True), (v, False), (qdd, False)):
                if x is not None:
                    x[t.dependent - 1] = t.follow(x, position)

    def transmission_shares(self, j: int) -> list[tuple[int, float]]:
        """(transmission number, joint j's share of its constraint force λ) for each transmission joint j takes part
        in: 1 for the driven joint, −ratio for a driving one (virtual work of q_dependent − Σ ratio_k q_k)."""
        out = []
        for number, transmission in enumerate(self.transmissions, start=1):
            if transmission.dependent == j:
                out.append((number, 1.0))
            out += [(number, -ratio) for k, ratio in transmission.terms if k == j]
        return out

    def frame_in_body(self, frame: str) -> tuple[int, gtsam.Pose3]:
        """(i, iTf): the index of the body a link or merged frame is fixed in (0: the base) and the frame's pose in
        that body's dynamics frame — its CoM frame, or a fixed base's link frame (the world)."""
        body, bTf = self.frames[frame]
        if self.is_fixed(body):
            return 0, bTf
        link = self.link(body)
        return link.index, link.lTcom.inverse().compose(bTf)

    def is_fixed(self, link_name: str) -> bool:
        """Whether a link (or the body a frame was merged into) is welded to the world: a fixed base."""
        return self.is_base(link_name) and not self.floating_base

    # -- topology --------------------------------------------------------------------------------------
    @property
    def tree_joints(self) -> tuple[Joint, ...]:
        """The spanning tree, root→leaf."""
        return self._topology.tree_joints

    @property
    def loop_joints(self) -> tuple[Joint, ...]:
        """The joints that close loops, one per independent loop."""
        return self._topology.loop_joints

    @property
    def loops(self) -> list[list[str]]:
        """Each independent loop as the joint names around it: the tree path from the loop joint's parent
        link up to the common ancestor, back down to its child link, then the loop joint."""
        out = []
        for closing in self.loop_joints:
            up, down = self._path_to_base(closing.parent), self._path_to_base(closing.child)
            shared = set(up) & set(down)
            out.append([j for j in up if j not in shared] + [j for j in reversed(down) if j not in shared]
                       + [closing.name])
        return out

    def _path_to_base(self, link_name: str) -> list[str]:
        path = []
        joint = self.parent_joint(link_name)
        while joint is not None:
            path.append(joint.name)
            joint = self.parent_joint(joint.parent)
        return path

    def parent_joint(self, link_name: str) -> Joint | None:
        """The spanning-tree joint whose child is this link (None for the base)."""
        return self._topology.parent_joint.get(link_name)

    def child_joints(self, link_name: str) -> tuple[Joint, ...]:
        """Spanning-tree joints whose parent is this link, in root→leaf order."""
        return self._topology.child_joints.get(link_name, ())

    def joints_into(self, link_name: str) -> tuple[Joint, ...]:
        """Every joint whose child is this link (its tree joint first, then loop-closing ones)."""
        return self._topology.joints_into.get(link_name, ())

    def joints_out_of(self, link_name: str) -> tuple[Joint, ...]:
        """Every joint whose parent is this link."""
        return self._topology.joints_out_of.get(link_name, ())

    # -- actuation -------------------------------------------------------------------------------------
    @property
    def actuated_joint_names(self) -> list[str]:
        return [j.name for j in self.joints if j.actuated]

    def with_actuated(self, names: Iterable[str]) -> Robot:
        """A copy of this robot in which exactly the named joints are actuated (the others passive, τ = 0)."""
        names = list(names)
        unknown = [n for n in names if n not in self.joint_names]
        if unknown:
            raise ArgumentError(f"with_actuated: unknown joints {', '.join(unknown)} "
                                f"(joints: {', '.join(self.joint_names)})")
        joints = tuple(dataclasses.replace(j, actuated=j.name in names) for j in self.joints)
        return dataclasses.replace(self, joints=joints)

    # -- reduction -------------------------------------------------------------------------------------
    def locked(self, values) -> Robot:
        """This robot with the joints in ``values`` (joint name → q) welded at those values: Pinocchio's
        ``buildReducedModel``. See ``gtdyn.model.reduce.lock_joints``."""
        from gtdyn.model.reduce import lock_joints  # reduce builds Robots: imported here, not at the top

        return lock_joints(self, values)

    def __repr__(self) -> str:
        loops = f", {len(self.loop_joints)} loops" if self.loop_joints else ""
        base = ", floating base" if self.floating_base else ""
        return f"Robot('{self.name}', {self.num_dofs} joints{loops}{base}: {', '.join(self.joint_names)})"
