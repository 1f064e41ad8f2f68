"""URDF → RobotDescription, read straight from a strictly parsed XML tree.

Every element and number gtdyn reads is checked as it is read, with the file, element and line in each
message; visuals, collisions, transmissions, Gazebo tags and the like are ignored. (gtdyn reads URDF itself rather
than through yourdfpy, whose import pulled in trimesh and scipy: see benchmarks/results/design_measurements.md.)
The root link is taken as fixed to the world. ``floating`` and ``planar`` joints are reported as unsupported by
``build_robot``; ``<mimic>`` joints are read with their coupling (``JointSpec.mimic``), which ``load_robot``
enforces unless asked for ``transmissions="independent"``: then they are independent joints, with a
``ModelWarning``.
"""

from __future__ import annotations

import warnings

import numpy as np

from gtdyn.errors import ModelError, ModelWarning
from gtdyn.io.transmissions import read_transmissions
from gtdyn.io.xml import at, numbers, only_child, parse_xml, unit_vector
from gtdyn.model.description import JointSpec, LinkSpec, RobotDescription
from gtdyn.model.limits import MAX_INERTIA, MAX_LENGTH, MAX_MASS, check_limit_order
from gtdyn.spatial import rpy_matrix

_REQUIRED_JOINT_PARTS = ("parent", "child")
_JOINT_PARTS = ("parent", "child", "origin", "axis", "limit", "mimic")
_INERTIAL_PARTS = ("origin", "mass", "inertia")
_INERTIA_ATTRIBUTES = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
_LIMIT_ATTRIBUTES = ("lower", "upper", "effort", "velocity")
# What gtdyn reads: under each (plain) element, the child elements it looks at.
READ_ELEMENTS = {"robot": {"link", "joint"}, "link": {"inertial"}, "inertial": set(_INERTIAL_PARTS),
                 "joint": set(_JOINT_PARTS)}


def read_urdf(path: str, warn_mimic: bool = True) -> RobotDescription:
    """``warn_mimic``: warn that ``<mimic>`` joints will be independent (when the caller does not couple them)."""
    root = parse_xml(path, READ_ELEMENTS)
    if root.tag != "robot":
        raise ModelError(f"{path}: the root element is <{root.tag}>, expected <robot>")
    if not root.get("name"):
        raise ModelError(f"{path}: <robot> has no name")
    if root.find("link") is None:
        raise ModelError(f"{path}: <robot name='{root.get('name')}'> has no <link>")
    _check_required_parts(root, path)
    if warn_mimic:
        _warn_about_mimic_joints(root, path)
    links = tuple(_link_spec(link, path) for link in root.iterchildren("link"))
    joints = tuple(_joint_spec(joint, path) for joint in root.iterchildren("joint"))
    return RobotDescription(root.get("name"), links, joints, source=path,
                            transmissions=read_transmissions(root, path))


def _check_required_parts(root, path: str) -> None:
    """Check what a lax reader would silently default: names, joint types, parent and child links, masses, and
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


def _origin(origin, path: str, owner: str) -> np.ndarray:
    """The 4×4 pose an ``<origin xyz rpy>`` describes (identity where absent)."""
    transform = np.eye(4)
    if origin is None:
        return transform
    if origin.get("xyz") is not None:
        transform[:3, 3] = numbers(origin.get("xyz"), path, origin, f"{owner} <origin xyz>", 3, "x y z", MAX_LENGTH,
                                   "a length of")
    if origin.get("rpy") is not None:
        transform[:3, :3] = rpy_matrix(*numbers(origin.get("rpy"), path, origin, f"{owner} <origin rpy>", 3,
                                                "roll pitch yaw"))
    return transform


def _warn_about_mimic_joints(root, path: str) -> None:
    mimics = [joint for joint in root.findall("joint") if joint.find("mimic") is not None]
    if mimics:
        named = ", ".join(f"'{joint.get('name')}' (line {joint.sourceline}, mimics "
                          f"'{joint.find('mimic').get('joint')}')" for joint in mimics)
        which = f"joint {named} has" if len(mimics) == 1 else f"joints {named} have"
        warnings.warn(f"{path}: {which} a <mimic>; with transmissions='independent' gtdyn treats "
                      f"{'it as an independent joint' if len(mimics) == 1 else 'each as an independent joint'} "
                      "(the default, 'exact', couples it)", ModelWarning, stacklevel=4)


def _link_spec(link, path: str) -> LinkSpec:
    inertial = link.find("inertial")
    if inertial is None:
        return LinkSpec(link.get("name"))
    owner = f"link '{link.get('name')}' <inertial>"
    mass = link.find("inertial/mass")
    value = numbers(mass.get("value"), path, mass, f"{owner} <mass value>", 1, "one number", MAX_MASS, "mass")[0]
    element = inertial.find("inertia")
    i = {a: numbers(element.get(a), path, element, f"{owner} <inertia {a}>", 1, "one number", MAX_INERTIA,
                    "an inertia of")[0] for a in _INERTIA_ATTRIBUTES}
    inertia = np.array([[i["ixx"], i["ixy"], i["ixz"]], [i["ixy"], i["iyy"], i["iyz"]], [i["ixz"], i["iyz"], i["izz"]]])
    return LinkSpec(link.get("name"), value, inertia, _origin(inertial.find("origin"), path, owner))


def _joint_spec(joint, path: str) -> JointSpec:
    owner, kind = f"joint '{joint.get('name')}'", joint.get("type")
    axis = np.array([1.0, 0.0, 0.0])  # URDF's default
    element = joint.find("axis")
    if element is not None and element.get("xyz") is not None:
        axis = np.array(numbers(element.get("xyz"), path, element, f"{owner} <axis xyz>", 3, "x y z"))
        unit = unit_vector(axis)  # a unit vector, as JointSpec wants; a zero axis stays zero for build to report
        axis = axis if unit is None else unit
    limits = dict.fromkeys(_LIMIT_ATTRIBUTES)
    element = joint.find("limit")
    for attribute in _LIMIT_ATTRIBUTES if element is not None else ():
        if element.get(attribute) is not None:
            limits[attribute] = numbers(element.get(attribute), path, element, f"{owner} <limit {attribute}>", 1,
                                        "one number")[0]
    if kind == "continuous":  # a continuous joint has no position limits, whatever the file says
        limits["lower"] = limits["upper"] = None
    elif kind != "fixed" and None not in (limits["lower"], limits["upper"]):  # a fixed joint's are never used
        check_limit_order(limits["lower"], limits["upper"], at(path, element), f"{owner} <limit>")
    lower, upper, effort, velocity = (limits[a] for a in _LIMIT_ATTRIBUTES)
    return JointSpec(joint.get("name"), kind, joint.find("parent").get("link"), joint.find("child").get("link"),
                     _origin(joint.find("origin"), path, owner), axis,
                     -np.inf if lower is None else lower, np.inf if upper is None else upper,
                     np.inf if effort is None else effort, np.inf if velocity is None else velocity,
                     mimic=_mimic(joint.find("mimic"), path, owner))


def _mimic(element, path: str, owner: str) -> tuple[str, float, float] | None:
    """``<mimic joint multiplier offset>`` (multiplier 1 and offset 0 by default, as in URDF)."""
    if element is None:
        return None
    if not element.get("joint"):
        raise ModelError(f"{at(path, element)}: {owner} <mimic> names no joint")
    factor = 1.0 if element.get("multiplier") is None else numbers(
        element.get("multiplier"), path, element, f"{owner} <mimic multiplier>", 1, "one number")[0]
    offset = 0.0 if element.get("offset") is None else numbers(
        element.get("offset"), path, element, f"{owner} <mimic offset>", 1, "one number")[0]
    return element.get("joint"), float(factor), float(offset)
