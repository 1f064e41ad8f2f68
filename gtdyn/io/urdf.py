"""URDF → RobotDescription, through yourdfpy's element parser on a strictly parsed and checked XML tree.

Every element and number gtdyn reads is checked here on the XML tree first, with the file, element and line
in each message (yourdfpy would silently default, drop or mis-shape them); yourdfpy then sees only those
elements. Visuals, collisions, transmissions, Gazebo tags and the like are ignored. The root link is taken
as fixed to the world. ``floating`` and ``planar`` joints are reported as unsupported by ``build_robot``;
``<mimic>`` joints are read as independent joints, with a ``ModelWarning``.
"""

from __future__ import annotations

import copy
import io
import warnings

import numpy as np
import yourdfpy
from lxml import etree

from gtdyn.model.description import JointSpec, LinkSpec, RobotDescription
from gtdyn.errors import ModelError, ModelWarning
from gtdyn.io.xml import at, numbers, only_child, parse_xml, unit_vector
from gtdyn.model.limits import MAX_INERTIA, MAX_LENGTH, MAX_MASS

_REQUIRED_JOINT_PARTS = ("parent", "child")
_JOINT_PARTS = ("parent", "child", "origin", "axis", "limit", "mimic")
_INERTIAL_PARTS = ("origin", "mass", "inertia")
_INERTIA_ATTRIBUTES = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
_LIMIT_ATTRIBUTES = ("lower", "upper", "effort", "velocity")
# What gtdyn reads: under each (plain) element, the child elements it looks at.
READ_ELEMENTS = {"robot": {"link", "joint"}, "link": {"inertial"}, "inertial": set(_INERTIAL_PARTS),
                 "joint": set(_JOINT_PARTS)}


def read_urdf(path: str) -> RobotDescription:
    root = parse_xml(path, READ_ELEMENTS)
    if root.tag != "robot":
        raise ModelError(f"{path}: the root element is <{root.tag}>, expected <robot>")
    if not root.get("name"):
        raise ModelError(f"{path}: <robot> has no name")
    if root.find("link") is None:
        raise ModelError(f"{path}: <robot name='{root.get('name')}'> has no <link>")
    _check_required_parts(root, path)
    _check_values(root, path)
    _warn_about_mimic_joints(root, path)
    # After the checks above, yourdfpy cannot fail on these elements: if it does, that is a gtdyn bug to fix here.
    # (through yourdfpy's public loader: the checked tree goes back to text and is read with no scene graph)
    urdf_robot = yourdfpy.URDF.load(io.BytesIO(etree.tostring(_read_parts_only(root))), build_scene_graph=False,
                                    load_meshes=False).robot
    links = tuple(_link_spec(link, path) for link in urdf_robot.links)
    joints = tuple(_joint_spec(joint) for joint in urdf_robot.joints)
    return RobotDescription(urdf_robot.name or "robot", links, joints, source=path)


def _check_required_parts(root, path: str) -> None:
    """Check what yourdfpy would silently default: names, joint types, parent and child links, masses, and
    that each part gtdyn reads appears at most once."""
    for element in root.iterchildren("link", "joint"):
        name = element.get("name")
        if not name:
            raise ModelError(f"{at(path, element)}: a <{element.tag}> has no name")
        owner = f"{element.tag} '{name}'"
        if element.tag == "joint":
            if not element.get("type"):
                raise ModelError(f"{at(path, element)}: joint '{name}' has no type")
            for part in _JOINT_PARTS:
                only_child(element, part, path, owner)
            for part in _REQUIRED_JOINT_PARTS:
                node = element.find(part)
                if node is None or not node.get("link"):
                    raise ModelError(f"{at(path, element)}: joint '{name}' has no <{part} link=...>")
        else:
            inertial = only_child(element, "inertial", path, owner)
            if inertial is None:
                continue
            for part in _INERTIAL_PARTS:
                only_child(inertial, part, path, f"{owner} <inertial>")
            for part in ("mass", "inertia"):
                if inertial.find(part) is None:
                    raise ModelError(f"{at(path, inertial)}: link '{name}' <inertial> has no <{part}>")
            mass = inertial.find("mass")
            if mass.get("value") is None:
                raise ModelError(f"{at(path, mass)}: link '{name}' <inertial> <mass> has no value attribute")
            inertia = inertial.find("inertia")
            missing = [attribute for attribute in _INERTIA_ATTRIBUTES if inertia.get(attribute) is None]
            if missing:
                raise ModelError(f"{at(path, inertia)}: link '{name}' <inertial> <inertia> has no "
                                 f"{', '.join(missing)}; URDF needs all six of {' '.join(_INERTIA_ATTRIBUTES)}")


def _check_values(root, path: str) -> None:
    """Every number gtdyn reads: the right count, finite, and within the magnitudes of gtdyn.io.xml."""
    for link in root.findall("link"):
        inertial = link.find("inertial")
        if inertial is None:
            continue
        owner = f"link '{link.get('name')}' <inertial>"
        _check_origin(inertial.find("origin"), path, owner)
        mass = inertial.find("mass")
        numbers(mass.get("value"), path, mass, f"{owner} <mass value>", 1, "one number", MAX_MASS, "mass")
        inertia = inertial.find("inertia")
        for attribute in _INERTIA_ATTRIBUTES:
            numbers(inertia.get(attribute), path, inertia, f"{owner} <inertia {attribute}>", 1, "one number",
                    MAX_INERTIA, "an inertia of")
    for joint in root.findall("joint"):
        owner = f"joint '{joint.get('name')}'"
        _check_origin(joint.find("origin"), path, owner)
        axis = joint.find("axis")
        if axis is not None and axis.get("xyz") is not None:
            numbers(axis.get("xyz"), path, axis, f"{owner} <axis xyz>", 3, "x y z")
        limit = joint.find("limit")
        if limit is not None:
            for attribute in _LIMIT_ATTRIBUTES:
                if limit.get(attribute) is not None:
                    numbers(limit.get(attribute), path, limit, f"{owner} <limit {attribute}>", 1, "one number")


def _check_origin(origin, path: str, owner: str) -> None:
    if origin is None:
        return
    if origin.get("xyz") is not None:
        numbers(origin.get("xyz"), path, origin, f"{owner} <origin xyz>", 3, "x y z", MAX_LENGTH, "a length of")
    if origin.get("rpy") is not None:
        numbers(origin.get("rpy"), path, origin, f"{owner} <origin rpy>", 3, "roll pitch yaw")


def _warn_about_mimic_joints(root, path: str) -> None:
    mimics = [joint for joint in root.findall("joint") if joint.find("mimic") is not None]
    if mimics:
        named = ", ".join(f"'{joint.get('name')}' (line {joint.sourceline}, mimics "
                          f"'{joint.find('mimic').get('joint')}')" for joint in mimics)
        which = f"joint {named} has" if len(mimics) == 1 else f"joints {named} have"
        warnings.warn(f"{path}: {which} a <mimic>; gtdyn does not couple joints and treats "
                      f"{'it as an independent joint' if len(mimics) == 1 else 'each as an independent joint'}",
                      ModelWarning, stacklevel=4)


def _read_parts_only(root):
    """A copy of the tree with only the elements gtdyn reads, so that nothing else can trip yourdfpy."""
    pruned = copy.deepcopy(root)
    for element in list(pruned):
        if element.tag not in READ_ELEMENTS["robot"]:
            pruned.remove(element)
            continue
        for child in list(element):
            if child.tag not in READ_ELEMENTS[element.tag] or child.tag == "mimic":
                element.remove(child)
            elif child.tag == "inertial":
                for part in list(child):
                    if part.tag not in READ_ELEMENTS["inertial"]:
                        child.remove(part)
    return pruned


def _link_spec(link, path: str) -> LinkSpec:
    inertial = link.inertial
    if inertial is None:
        return LinkSpec(link.name)
    origin = np.eye(4) if inertial.origin is None else np.asarray(inertial.origin, float)
    inertia = np.zeros((3, 3)) if inertial.inertia is None else np.asarray(inertial.inertia, float)
    mass = 0.0 if inertial.mass is None else float(inertial.mass)
    return LinkSpec(link.name, mass, inertia, origin)


def _joint_spec(joint) -> JointSpec:
    origin = np.eye(4) if joint.origin is None else np.asarray(joint.origin, float)
    axis = np.array([1.0, 0.0, 0.0]) if joint.axis is None else np.asarray(joint.axis, float)
    unit = unit_vector(axis)  # a unit vector, as JointSpec wants; a zero axis stays zero for build to report
    axis = axis if unit is None else unit
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
