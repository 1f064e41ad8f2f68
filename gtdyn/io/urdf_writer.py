"""RobotDescription → URDF text: what the parsers read, written back, so that other tools (Pinocchio, ROS) can
read a robot made in memory (for example ``gtdyn.model.random``).

Numbers are written with ``repr`` (the shortest text that reads back to the same double); rotations as URDF's
roll-pitch-yaw (R = Rz(yaw) Ry(pitch) Rx(roll)), which reads back to within a few ulps. Only what URDF can
say is written: a description URDF cannot express raises ``ArgumentError`` naming the part.
"""

from __future__ import annotations

import math

import numpy as np
from lxml import etree

from gtdyn.errors import ArgumentError
from gtdyn.model.description import JointSpec, LinkSpec, RobotDescription
from gtdyn.spatial import roll_pitch_yaw


def urdf_text(description: RobotDescription) -> str:
    """The URDF document of ``description``.

    URDF cannot express, and this raises ``ArgumentError`` for: closed loops (a link that is the child of two
    joints), a child link frame away from its joint frame (``child_pose``, which SDF allows), passive joints,
    a prismatic joint or a half-limited revolute joint without finite limits, or a limited joint without a
    finite effort and velocity (URDF's <limit> needs all four). A revolute joint without limits is written as
    ``continuous``.
    """
    robot = etree.Element("robot", name=description.name)
    for link in description.links:
        robot.append(_link(link))
    children = [joint.child for joint in description.joints]
    twice = sorted({child for child in children if children.count(child) > 1})
    if twice:
        raise ArgumentError(f"description: links {', '.join(twice)} are the child of several joints (a closed loop), "
                            "which URDF cannot express")
    for joint in description.joints:
        robot.append(_joint(joint))
    return etree.tostring(robot, pretty_print=True, xml_declaration=True, encoding="UTF-8").decode()


def write_urdf(description: RobotDescription, path: str) -> str:
    """Write ``urdf_text(description)`` to ``path``; returns ``path``."""
    text = urdf_text(description)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def _link(link: LinkSpec) -> etree._Element:
    element = etree.Element("link", name=link.name)
    inertia = np.asarray(link.inertia, float)
    if link.mass == 0 and not np.any(inertia) and np.allclose(link.inertial_origin, np.eye(4)):
        return element  # no <inertial>: what a parser reads as massless
    inertial = etree.SubElement(element, "inertial")
    inertial.append(_origin(link.inertial_origin))
    etree.SubElement(inertial, "mass", value=_number(link.mass))
    etree.SubElement(inertial, "inertia", ixx=_number(inertia[0, 0]), ixy=_number(inertia[0, 1]),
                     ixz=_number(inertia[0, 2]), iyy=_number(inertia[1, 1]), iyz=_number(inertia[1, 2]),
                     izz=_number(inertia[2, 2]))
    return element


def _joint(joint: JointSpec) -> etree._Element:
    where = f"joint '{joint.name}'"
    if not np.allclose(joint.child_pose, np.eye(4), rtol=0, atol=1e-12):
        raise ArgumentError(f"description: {where} places its child link away from the joint frame (child_pose), "
                            "which URDF cannot express")
    if not joint.actuated:
        raise ArgumentError(f"description: {where} is passive, which URDF cannot express")
    kind = joint.type
    limited = math.isfinite(joint.lower) and math.isfinite(joint.upper)
    if kind == "revolute" and not limited:
        if math.isfinite(joint.lower) or math.isfinite(joint.upper):
            raise ArgumentError(f"description: {where} is limited on one side only, which URDF cannot express")
        kind = "continuous"
    if kind == "prismatic" and not limited:
        raise ArgumentError(f"description: {where} is prismatic without finite limits, which URDF needs")
    element = etree.Element("joint", name=joint.name, type=kind)
    element.append(_origin(joint.origin))
    etree.SubElement(element, "parent", link=joint.parent)
    etree.SubElement(element, "child", link=joint.child)
    if kind == "fixed":
        return element
    etree.SubElement(element, "axis", xyz=_numbers(joint.axis))
    rates = {"effort": joint.effort, "velocity": joint.velocity}
    if kind in ("revolute", "prismatic"):
        if not all(math.isfinite(x) for x in rates.values()):
            raise ArgumentError(f"description: {where} has limits but no finite effort and velocity, which URDF needs")
        etree.SubElement(element, "limit", lower=_number(joint.lower), upper=_number(joint.upper),
                         **{k: _number(x) for k, x in rates.items()})
    elif all(math.isfinite(x) for x in rates.values()):  # continuous: <limit> optional
        etree.SubElement(element, "limit", **{k: _number(x) for k, x in rates.items()})
    return element


def _origin(T) -> etree._Element:
    T = np.asarray(T, float)
    return etree.Element("origin", xyz=_numbers(T[:3, 3]), rpy=_numbers(roll_pitch_yaw(T[:3, :3])))


def _number(x) -> str:
    return repr(float(x))


def _numbers(values) -> str:
    return " ".join(_number(x) for x in values)
