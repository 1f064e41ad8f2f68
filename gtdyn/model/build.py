"""From a ``RobotDescription`` (what a parser read) to the immutable ``Robot``: check names, topology and
inertias, find the spanning tree and the loop-closing joints, merge fixed joints, and compute each joint's
rest pose and screw axis between dynamics (CoM) frames.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterable

import gtsam
import numpy as np

from gtdyn.errors import ModelError, ModelWarning
from gtdyn.model.description import JOINT_TYPES, JointSpec, LinkSpec, RobotDescription
from gtdyn.model.limits import MAX_INERTIA, MAX_LENGTH, MAX_MASS, MAX_RATIO, check_magnitude
from gtdyn.model.robot import Joint, Link, Robot, Transmission
from gtdyn.spatial import Ad, pose

# A moving subtree whose inertia seen along its joint's axis is below this is treated as massless:
# its joint acceleration would be undetermined in forward dynamics (kg·m² or kg).
MASSLESS_TOLERANCE = 1e-12


def _frozen(a) -> np.ndarray:
    a = np.array(a, dtype=float)
    a.flags.writeable = False
    return a


def build_robot(description: RobotDescription, floating: bool = False, transmissions: str = "independent") -> Robot:
    """Check a description, merge fixed joints and build the Robot (spanning-tree joints, then loop joints).
    ``floating``: the root link moves freely instead of being welded to the world. ``transmissions``: "exact"
    couples each ``<mimic>`` joint to the joint it mimics (it becomes passive: the transmission drives it);
    "approximate" welds each driven joint (a rotor) and adds its reflected inertia to its drives' diagonal
    (``_armature_approximation``); "independent" leaves every joint free."""
    src = description.source
    link_specs = _unique(description.links, "link", src)
    joint_specs = _unique(description.joints, "joint", src)
    for js in joint_specs.values():
        _check_joint_spec(js, link_specs, src)
    if transmissions == "independent":  # couplings ignored, as Pinocchio reads a file by default; so unchecked
        requested = []
        if description.transmissions:
            warnings.warn(f"{src}: {len(description.transmissions)} <gtdyn:transmission> block(s) ignored: with "
                          "transmissions='independent' every joint is free", ModelWarning, stacklevel=3)
    else:
        requested = _requested_transmissions(joint_specs, description.transmissions, src)
    armature: dict[str, float] = {}
    if transmissions == "approximate":
        joint_specs, armature = _armature_approximation(joint_specs, link_specs, requested)
    for ls in link_specs.values():
        _check_inertial(ls, src)
    root = _find_root(description, link_specs, joint_specs, src)
    tree_order, closing = _spanning_tree(root, joint_specs, link_specs, src)

    # Merge fixed joints of the tree: each original link belongs to a body (a moving link or the base).
    body_of = {root: (root, np.eye(4))}  # link -> (body link name, bodyTlink 4×4)
    moving: list[JointSpec] = []
    for js in tree_order:
        body, bTp = body_of[js.parent]
        if js.type == "fixed":
            body_of[js.child] = (body, bTp @ js.origin @ js.child_pose)
        else:
            body_of[js.child] = (js.child, np.eye(4))
            moving.append(_reattach(js, body_of))
    loop_moving = [_reattach(js, body_of) for js in closing]

    members: dict[str, list[tuple[LinkSpec, np.ndarray]]] = {}
    for name, (body, bTl) in body_of.items():
        members.setdefault(body, []).append((link_specs[name], bTl))
    links = {}
    for index, body in enumerate([root] + [js.child for js in moving]):
        mass, inertia, lTcom = _composite_inertial(members[body], src)
        links[body] = Link(body, index, mass, _frozen(inertia), lTcom)

    joints = [_make_joint(js, i + 1, links, root if not floating else None, closes_loop=i >= len(moving))
              for i, js in enumerate(moving + loop_moving)]
    frames = {name: (body, pose(bTl[:3, :3], bTl[:3, 3])) for name, (body, bTl) in body_of.items()}
    coupled = _transmissions(moving + loop_moving, requested) if transmissions == "exact" else ()
    joints = [dataclasses.replace(j, armature=armature[j.name]) if j.name in armature else j for j in joints]
    if coupled:
        dependent = {t.dependent for t in coupled}
        joints = [dataclasses.replace(j, actuated=False) if j.index in dependent else j for j in joints]
    robot = Robot(description.name, links[root], tuple(links[js.child] for js in moving), tuple(joints), frames, src,
                  floating_base=floating, transmissions=coupled, description=description, reading=transmissions)
    if not closing:  # with loops, the closure constraints can determine what a subtree alone would not
        _check_determined(robot)
    return robot


def _armature_approximation(joint_specs: dict, link_specs: dict, requested) -> tuple[dict, dict[str, float]]:
    """The armature approximation of a transmission (what MuJoCo and most simulators do): the driven joint (a
    rotor) is welded at its offset and drops out; each driving joint k gains the rotor's inertia about its own
    axis times ratio_k² on the diagonal of the mass matrix — its "reflected inertia". Exact for a rotor whose
    only motion is its spin and whose spin axis stays fixed in the parent; the gyroscopic and cross terms
    (ratio_i ratio_j between drives of one belt) are what it leaves out. ``requested``: checked transmissions
    (``_requested_transmissions``)."""
    specs, armature = dict(joint_specs), {}
    for name, drives, offset, _ in requested:
        js = specs[name]
        spin = _inertia_about_axis(link_specs[js.child], js.child_pose, js.axis) if js.type != "prismatic" else \
            link_specs[js.child].mass
        for joint, ratio in drives:
            armature[joint] = armature.get(joint, 0.0) + ratio * ratio * spin
        moved = np.eye(4)
        if js.type == "prismatic":
            moved[:3, 3] = np.asarray(js.axis, float) * offset
        else:
            moved[:3, :3] = gtsam.Rot3.Rodrigues(np.asarray(js.axis, float) * offset).matrix()
        specs[name] = dataclasses.replace(js, type="fixed", origin=js.origin @ moved, mimic=None)
    return specs, armature


def _inertia_about_axis(link: LinkSpec, child_pose: np.ndarray, axis: np.ndarray) -> float:
    """A link's moment of inertia about a joint axis through the joint frame's origin (parallel-axis theorem)."""
    T = child_pose @ link.inertial_origin  # CoM frame in the joint frame
    R, p = T[:3, :3], T[:3, 3]
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    return float(a @ R @ np.asarray(link.inertia, float) @ R.T @ a + link.mass * (p @ p - (a @ p) ** 2))


def _requested_transmissions(joint_specs: dict, blocks, src: str) -> list[tuple[str, tuple, float, str]]:
    """Every ``<mimic>`` and ``<gtdyn:transmission>`` of a description as (driven joint, ((drive, ratio), …),
    offset, label), checked once for every reading of them: each names moving joints, drives a joint no other
    transmission drives, names each drive once, is driven only by independent joints, and has finite ratios
    within ±MAX_RATIO. A fixed joint's own transmission is dropped with a warning (it has no coordinate)."""
    wanted = [(js.name, ((js.mimic[0], js.mimic[1]),), js.mimic[2], f"{js.name} mimics {js.mimic[0]}")
              for js in joint_specs.values() if js.mimic is not None]
    wanted += [(b.joint, b.drives, b.offset, f"{b.joint} driven by {', '.join(j for j, _ in b.drives)}")
               for b in blocks]
    unused = [label for name, _, _, label in wanted if joint_specs.get(name) and joint_specs[name].type == "fixed"]
    if unused:  # as in Talos's grippers: a fixed joint has no coordinate to couple, so there is nothing to drive
        warnings.warn(f"{src}: fixed joint(s) with a transmission, ignored: {'; '.join(unused)}", ModelWarning,
                      stacklevel=4)
        wanted = [w for w in wanted if w[3] not in unused]
    driven = [name for name, *_ in wanted]
    for name, drives, offset, label in wanted:
        for joint in (name, *(j for j, _ in drives)):
            if joint not in joint_specs:
                raise ModelError(f"{src}: transmission '{label}' names '{joint}', which is not a joint")
            if joint_specs[joint].type == "fixed":
                raise ModelError(f"{src}: transmission '{label}' names '{joint}', a fixed joint, which has no "
                                 "coordinate to couple")
        if driven.count(name) > 1:
            raise ModelError(f"{src}: joint '{name}' is driven by more than one transmission (<mimic> or "
                             "<gtdyn:transmission>)")
        named = [j for j, _ in drives]
        repeated = sorted({j for j in named if named.count(j) > 1})
        if repeated:
            raise ModelError(f"{src}: transmission '{label}' names drive joint {', '.join(repeated)} more than once; "
                             "give each drive once, with the sum of its ratios")
        chained = [j for j in named if j in driven or j == name]
        if chained:
            raise ModelError(f"{src}: transmission '{label}' is driven by {', '.join(chained)}, which is driven "
                             "itself; write every transmission in terms of independent joints")
        ratios = [ratio for _, ratio in drives]
        if not all(np.isfinite([*ratios, offset])):
            raise ModelError(f"{src}: transmission '{label}' has a non-finite ratio or offset")
        check_magnitude(ratios, MAX_RATIO, "ratio", src, f"transmission '{label}'")
        check_magnitude([offset], MAX_LENGTH, "offset", src, f"transmission '{label}'")
    return wanted


def _transmissions(specs: list[JointSpec], requested) -> tuple[Transmission, ...]:
    """A Transmission per checked request (``_requested_transmissions``), by joint index (specs in joint
    order: every moving joint, loop-closing ones included)."""
    index = {js.name: k + 1 for k, js in enumerate(specs)}
    return tuple(Transmission(label, index[name], tuple((index[j], float(r)) for j, r in drives), float(offset))
                 for name, drives, offset, label in requested)


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
    _check_shape(js.origin, (4, 4), f"{where} <origin>")
    _check_shape(js.child_pose, (4, 4), f"{where} child pose")
    _check_shape(js.axis, (3,), f"{where} <axis>")
    if not (np.all(np.isfinite(js.origin)) and np.all(np.isfinite(js.child_pose))):
        raise ModelError(f"{where} has a non-finite <origin>/<pose>")
    _check_length(js.origin, src, f"joint '{js.name}' <origin>")
    _check_length(js.child_pose, src, f"joint '{js.name}' child link pose")
    if js.type != "fixed":
        n = np.linalg.norm(js.axis)
        if not np.isfinite(n) or n < 1e-12:
            raise ModelError(f"{where} has a zero or non-finite <axis> {list(js.axis)}")


def _check_inertial(ls: LinkSpec, src: str) -> None:
    where = f"{src}: link '{ls.name}' <inertial>"
    if not np.isfinite(ls.mass) or ls.mass < 0:
        raise ModelError(f"{where} has mass {ls.mass}; it must be finite and non-negative")
    check_magnitude(ls.mass, MAX_MASS, "mass", src, f"link '{ls.name}' <inertial>")
    inertia = np.asarray(ls.inertia, dtype=float)
    if inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)):
        raise ModelError(f"{where} has a malformed or non-finite inertia")
    check_magnitude(inertia, MAX_INERTIA, "an inertia of", src, f"link '{ls.name}' <inertial>")
    _check_shape(ls.inertial_origin, (4, 4), f"{where} <origin>")
    eig = np.linalg.eigvalsh(0.5 * (inertia + inertia.T))
    scale = max(1.0, float(np.max(np.abs(eig))))
    if eig[0] < -1e-9 * scale:
        # Real robot files ship such data (Pinocchio accepts it); use it as given, but say so.
        warnings.warn(f"{where} has an inertia that is not positive semi-definite (eigenvalues {eig}); "
                      "it is used as given", ModelWarning, stacklevel=4)
    if not np.all(np.isfinite(ls.inertial_origin)):
        raise ModelError(f"{where} has a non-finite <origin>")
    _check_length(ls.inertial_origin, src, f"link '{ls.name}' <inertial> <origin>")


def _check_shape(value, shape: tuple[int, ...], where: str) -> None:
    if np.shape(value) != shape:
        raise ModelError(f"{where} has shape {np.shape(value)}; expected {shape}")


def _check_length(transform, src: str, what: str) -> None:
    """The translation of a 4×4 transform is within gtdyn.model.limits.MAX_LENGTH (it keeps the dynamics finite)."""
    check_magnitude(np.asarray(transform, dtype=float)[:3, 3], MAX_LENGTH, "a length of", src, what)


def _find_root(description: RobotDescription, links: dict, joints: dict, src: str) -> str:
    children: dict[str, list[str]] = {}
    for js in joints.values():
        children.setdefault(js.child, []).append(js.name)
    if not description.allow_loops:
        for link, names in children.items():
            if len(names) > 1:
                raise ModelError(
                    f"{src}: link '{link}' is the child of several joints ({', '.join(names)}); "
                    "a tree needs exactly one parent joint per link (closed loops are described in SDF)")
    if description.base is not None:
        if description.base not in links:
            raise ModelError(f"{src}: the base link '{description.base}' is not defined")
        return description.base
    roots = [name for name in links if name not in children]
    if len(roots) > 1:
        raise ModelError(f"{src}: several root links ({', '.join(roots)}); a robot needs exactly one base link")
    if not roots and description.allow_loops and description.links:
        # SDFormat: a model not attached to the world is rooted at its canonical link, by default the first
        return description.links[0].name
    if not roots:
        raise ModelError(f"{src}: every link is the child of a joint, so the joints form a cycle and there is no base")
    return roots[0]


def _spanning_tree(root: str, joints: dict, links: dict, src: str) -> tuple[list[JointSpec], list[JointSpec]]:
    """The spanning tree and the joints that close loops.

    Tree joints are chosen breadth-first from the root (each link joins the tree by its shortest path from
    the base, so a loop closes at the joint farthest from it: the five-bar's end-effector joint), then
    numbered depth-first in file order, which for a plain tree is Pinocchio's numbering.
    """
    by_parent: dict[str, list[JointSpec]] = {}
    for js in joints.values():
        by_parent.setdefault(js.parent, []).append(js)
    tree_joint_of: dict[str, JointSpec] = {}
    frontier, reached = [root], {root}
    while frontier:
        next_frontier = []
        for link in frontier:
            for js in by_parent.get(link, []):
                if js.child not in reached:
                    reached.add(js.child)
                    tree_joint_of[js.child] = js
                    next_frontier.append(js.child)
        frontier = next_frontier
    unreachable = [name for name in links if name not in reached]
    if unreachable:
        raise ModelError(f"{src}: links {', '.join(unreachable)} cannot be reached from the base '{root}' by going "
                         "from parent to child (they are disconnected, or their joints form a cycle among themselves)")
    tree = {js.name for js in tree_joint_of.values()}
    order: list[JointSpec] = []
    stack = [js for js in reversed(by_parent.get(root, [])) if js.name in tree]
    while stack:
        js = stack.pop()
        order.append(js)
        stack.extend(c for c in reversed(by_parent.get(js.child, [])) if c.name in tree)
    closing = [js for js in joints.values() if js.name not in tree]
    for js in closing:
        if js.type == "fixed":
            raise ModelError(f"{src}: fixed joint '{js.name}' closes a loop; rigid loops are not supported")
    return order, closing


def _reattach(js: JointSpec, body_of: dict) -> JointSpec:
    """The joint re-attached to the bodies its parent and child links were merged into."""
    parent_body, bTp = body_of[js.parent]
    child_body, bTc = body_of[js.child]
    return JointSpec(js.name, js.type, parent_body, child_body, bTp @ js.origin,
                     np.asarray(js.axis, float) / np.linalg.norm(js.axis), js.lower, js.upper, js.effort,
                     js.velocity, js.child_pose @ np.linalg.inv(bTc), js.actuated, js.mimic)


def _composite_inertial(members: list[tuple[LinkSpec, np.ndarray]], src: str = "<memory>"
                        ) -> tuple[float, np.ndarray, gtsam.Pose3]:
    """Mass, inertia about the CoM and CoM frame (in the body link frame) of links rigidly merged together.

    A body made of one link keeps that link's inertial frame (rotated frames included); a merged body uses
    a CoM frame parallel to the body link frame. ModelError if the sums overflow (not reachable within the
    bounds ``_check_inertial`` and ``_check_joint_spec`` enforce, but never an inf or NaN inertia).
    """
    massive = [(ls, bTl) for ls, bTl in members if ls.mass > 0 or np.any(ls.inertia)]
    if len(massive) == 1:
        ls, bTl = massive[0]
        bTcom = bTl @ ls.inertial_origin
        return ls.mass, np.asarray(ls.inertia, float), pose(bTcom[:3, :3], bTcom[:3, 3])
    if not massive:
        return 0.0, np.zeros((3, 3)), gtsam.Pose3()
    overflow = ModelError(f"{src}: the links {', '.join(repr(ls.name) for ls, _ in massive)}, merged by fixed joints "
                          "into one body, have a composite mass or inertia that overflows; check their masses, "
                          "inertias and origins")
    try:
        with np.errstate(over="raise", invalid="raise"):
            mass = sum(ls.mass for ls, _ in massive)
            coms = [(bTl @ ls.inertial_origin) for ls, bTl in massive]
            com = sum(ls.mass * c[:3, 3] for (ls, _), c in zip(massive, coms)) / mass if mass > 0 else np.zeros(3)
            inertia = np.zeros((3, 3))
            for (ls, _), c in zip(massive, coms):
                R, d = c[:3, :3], c[:3, 3] - com
                inertia += R @ ls.inertia @ R.T + ls.mass * (d @ d * np.eye(3) - np.outer(d, d))  # parallel axis
    except FloatingPointError:
        raise overflow from None
    if not (np.isfinite(mass) and np.all(np.isfinite(com)) and np.all(np.isfinite(inertia))):
        raise overflow
    return mass, inertia, pose(None, com)


def _make_joint(js: JointSpec, index: int, links: dict, fixed_root: str | None, closes_loop: bool) -> Joint:
    """pTc(q) = origin · exp([axis] q) · child_pose between link frames becomes rest_pose · exp([S] q)
    between dynamics frames, with S the axis seen from the child's CoM frame. ``fixed_root``: the base link
    if it is welded to the world (None for a floating base, whose dynamics frame is its CoM frame)."""
    parent, child = links[js.parent], links[js.child]
    pTj = pose(js.origin[:3, :3], js.origin[:3, 3])
    jTc = pose(js.child_pose[:3, :3], js.child_pose[:3, 3])
    # A fixed base's dynamics frame is its link frame (the world); a moving link's (and a floating base's) is
    # its CoM frame. A loop may close onto the base, so either end can be the base.
    pdynTp = gtsam.Pose3() if js.parent == fixed_root else parent.lTcom.inverse()
    jTcdyn = jTc if js.child == fixed_root else jTc.compose(child.lTcom)
    axis = np.asarray(js.axis, float)
    joint_screw = np.concatenate([axis, np.zeros(3)]) if js.type != "prismatic" else np.concatenate([np.zeros(3), axis])
    kind = "prismatic" if js.type == "prismatic" else "revolute"
    return Joint(js.name, index, kind, js.parent, js.child, pTj, _frozen(axis),
                 _frozen(Ad(jTcdyn.inverse()) @ joint_screw), pdynTp.compose(pTj).compose(jTcdyn), js.lower,
                 js.upper, js.effort, js.velocity, js.actuated, closes_loop)


def _check_determined(robot: Robot) -> None:
    """Warn about joints that move no inertia along their axis: forward dynamics cannot determine their q̈.

    Checked at q = 0 with the subtree's composite inertia, in the child's CoM frame. Inverse dynamics stays
    determined, so such robots load; a solve that leaves those q̈ unknown raises IndeterminateSystemError.
    """
    composite = {link.name: link.G.copy() for link in (robot.base, *robot.links)}
    massless = []
    for joint in reversed(robot.joints):  # leaves first
        S = joint.screw_axis
        if S @ composite[joint.child] @ S < MASSLESS_TOLERANCE:
            massless.append(joint.name)
        if not robot.is_fixed(joint.parent):
            Adj = Ad(joint.rest_pose.inverse())  # child's dynamics frame -> parent's
            composite[joint.parent] += Adj.T @ composite[joint.child] @ Adj
    if massless:
        warnings.warn(
            f"{robot.source}: joints {', '.join(reversed(massless))} move only massless links, so forward "
            "dynamics cannot determine their accelerations (inverse dynamics can). Give those links an "
            "<inertial>, or make the joints fixed", ModelWarning, stacklevel=4)
