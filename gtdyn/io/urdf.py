"""URDF → RobotDescription, through yourdfpy's element parser on a strictly parsed XML tree.

The root link is taken as fixed to the world. ``floating`` and ``planar`` joints are reported as
unsupported by ``build_robot``.
"""

from __future__ import annotations

import numpy as np
import yourdfpy

from gtdyn.description import JointSpec, LinkSpec, RobotDescription
from gtdyn.errors import ModelError
from gtdyn.io.xml import parse_xml

_REQUIRED_JOINT_PARTS = ("parent", "child")


def read_urdf(path: str) -> RobotDescription:
    root = parse_xml(path)
    if root.tag != "robot":
        raise ModelError(f"{path}: the root element is <{root.tag}>, expected <robot>")
    if not root.get("name"):
        raise ModelError(f"{path}: <robot> has no name")
    if root.find("link") is None:
        raise ModelError(f"{path}: <robot name='{root.get('name')}'> has no <link>")
    _check_required_parts(root, path)
    try:
        urdf_robot = yourdfpy.URDF._parse_robot(xml_element=root)
    except Exception as e:  # yourdfpy raises assorted ValueError/TypeError on bad numbers
        raise ModelError(f"{path}: cannot read URDF element values: {e}") from None
    links = tuple(_link_spec(link, path) for link in urdf_robot.links)
    joints = tuple(_joint_spec(joint) for joint in urdf_robot.joints)
    return RobotDescription(urdf_robot.name or "robot", links, joints, source=path)


def _check_required_parts(root, path: str) -> None:
    """Check what yourdfpy would silently default: names, joint types, parent and child links."""
    for element in root.iter("link", "joint"):
        if element.getparent() is not root:
            continue
        name = element.get("name")
        if not name:
            raise ModelError(f"{path}: a <{element.tag}> on line {element.sourceline} has no name")
        if element.tag == "joint":
            if not element.get("type"):
                raise ModelError(f"{path}: joint '{name}' has no type")
            for part in _REQUIRED_JOINT_PARTS:
                node = element.find(part)
                if node is None or not node.get("link"):
                    raise ModelError(f"{path}: joint '{name}' has no <{part} link=...>")
        else:
            inertial = element.find("inertial")
            if inertial is not None:
                for part in ("mass", "inertia"):
                    if inertial.find(part) is None:
                        raise ModelError(f"{path}: link '{name}' <inertial> has no <{part}>")


def _link_spec(link, path: str) -> LinkSpec:
    inertial = link.inertial
    if inertial is None:
        return LinkSpec(link.name)
    origin = np.eye(4) if inertial.origin is None else np.asarray(inertial.origin, float)
    inertia = np.zeros((3, 3)) if inertial.inertia is None else np.asarray(inertial.inertia, float)
    mass = 0.0 if inertial.mass is None else float(inertial.mass)
    return LinkSpec(link.name, mass, inertia, origin, has_inertial=True)


def _joint_spec(joint) -> JointSpec:
    origin = np.eye(4) if joint.origin is None else np.asarray(joint.origin, float)
    axis = np.array([1.0, 0.0, 0.0]) if joint.axis is None else np.asarray(joint.axis, float)
    limit = joint.limit
    lower = upper = None
    effort = velocity = None
    if limit is not None and joint.type != "continuous":
        lower, upper = limit.lower, limit.upper
    if limit is not None:
        effort, velocity = limit.effort, limit.velocity
    return JointSpec(
        joint.name, joint.type, joint.parent, joint.child, origin, axis,
        -np.inf if lower is None else float(lower), np.inf if upper is None else float(upper),
        np.inf if effort is None else float(effort), np.inf if velocity is None else float(velocity),
    )
