"""SDFormat → RobotDescription: one model's links, joints and frames, closed kinematic loops allowed.

Poses follow SDFormat's pose-frame semantics (1.7+): every link, joint and ``<frame>`` is a named frame whose
``<pose>`` is written relative to another frame (``relative_to``, else a per-element default), and all of them
are resolved to poses in the model frame ``__model__``. Files older than 1.7 have no ``relative_to``: there,
link poses are relative to the model and joint poses to the child link, the same defaults as in 1.7.

The world frame is taken to coincide with the model frame (the model's own ``<pose>`` is ignored), so a joint
whose parent is ``world`` welds or hinges its child to a massless ``world`` link, which becomes the base.
"""

from __future__ import annotations

import numpy as np
from lxml import etree

from gtdyn.errors import ModelError
from gtdyn.io.sdf_frames import (
    FRAME_SEMANTICS_VERSION,
    MODEL_FRAME,
    WORLD,
    ModelFrames,
    boolean,
    describe,
    rigid_inverse,
)
from gtdyn.io.transmissions import read_transmissions
from gtdyn.io.xml import at, element_text, numbers, only_child, parse_xml, unit_vector
from gtdyn.model.description import JOINT_TYPES, JointSpec, LinkSpec, RobotDescription
from gtdyn.model.limits import MAX_INERTIA, MAX_MASS

_FRAME_TAGS = ("link", "joint", "frame")
_DEFAULT_AXIS = (0.0, 0.0, 1.0)
_INERTIA_TAGS = ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")
_LIMIT_TAGS = ("lower", "upper", "effort", "velocity")
# What gtdyn reads: under each (plain) element, the child elements it looks at (``<ns:actuated>`` is read in
# any namespace).
READ_ELEMENTS = {
    "sdf": {"model", "world"}, "world": {"model"}, "model": {"link", "joint", "frame", "model", "include"},
    "link": {"pose", "inertial"}, "frame": {"pose"}, "inertial": {"pose", "mass", "inertia"},
    "inertia": set(_INERTIA_TAGS), "joint": {"parent", "child", "pose", "axis"},
    "axis": {"xyz", "limit", "use_parent_model_frame"}, "limit": set(_LIMIT_TAGS),
}


def read_sdf(path: str) -> RobotDescription:
    root = parse_xml(path, READ_ELEMENTS)
    version = _sdf_version(root, path)
    model = _the_model(root, path)
    frames = ModelFrames(path, version, _frame_elements(model, path))
    links = [_link_spec(element, frames) for element in frames.elements_of("link")]
    joints = [_joint_spec(element, frames) for element in frames.elements_of("joint")]
    base = WORLD if any(joint.parent == WORLD for joint in joints) else None
    if base is not None:
        links.insert(0, LinkSpec(WORLD, 0.0, np.zeros((3, 3)), np.eye(4)))
    return RobotDescription(model.get("name"), tuple(links), tuple(joints), source=path, allow_loops=True,
                            base=base, transmissions=read_transmissions(model, path))


# -- the document ----------------------------------------------------------------------------------------


def _sdf_version(root, path: str) -> tuple[int, int]:
    if root.tag != "sdf":
        raise ModelError(f"{path}: the root element is <{root.tag}>, expected <sdf>")
    text = root.get("version")
    if not text:
        raise ModelError(f"{at(path, root)}: <sdf> has no version attribute")
    try:
        major, minor = (int(part) for part in text.strip().split("."))
    except ValueError:
        raise ModelError(f"{at(path, root)}: <sdf version='{text}'> is not a version like '1.7'") from None
    if major != 1:
        raise ModelError(f"{at(path, root)}: SDFormat version {text} is not supported (1.x only)")
    return major, minor


def _the_model(root, path: str):
    """The one <model>, directly under <sdf> or inside a <world>; no nested or included models."""
    models = root.findall("model") + root.findall("world/model")
    if not models:
        raise ModelError(f"{path}: no <model> under <sdf> or <sdf><world>")
    if len(models) > 1:
        names = ", ".join(f"'{m.get('name')}'" for m in models)
        raise ModelError(f"{path}: {len(models)} models ({names}); gtdyn reads a file with exactly one <model>")
    model = models[0]
    if not model.get("name"):
        raise ModelError(f"{at(path, model)}: <model> has no name")
    for tag in ("model", "include"):
        nested = model.find(tag)
        if nested is not None:
            raise ModelError(f"{at(path, nested)}: model '{model.get('name')}' contains a <{tag}> on line"
                             f" {nested.sourceline}; nested models are not supported")
    return model


def _frame_elements(model, path: str) -> dict:
    """The model's links, joints and frames by name, in file order. They share one namespace of frame names."""
    elements = {}
    for element in model:
        if element.tag not in _FRAME_TAGS:
            continue
        name = element.get("name")
        if not name:
            raise ModelError(f"{at(path, element)}: a <{element.tag}> has no name")
        if name == WORLD or (name.startswith("__") and name.endswith("__")):
            raise ModelError(f"{at(path, element)}: {element.tag} '{name}' uses a reserved name")
        if name in elements:
            first = elements[name]
            raise ModelError(f"{at(path, element)}: {element.tag} '{name}' on line {element.sourceline} has the same"
                             f" name as the {first.tag} on line {first.sourceline}")
        elements[name] = element
    return elements


# -- links and joints ------------------------------------------------------------------------------------


def _link_spec(link, frames: ModelFrames) -> LinkSpec:
    name = link.get("name")
    owner = f"link '{name}' <inertial>"
    inertial = only_child(link, "inertial", frames.path, f"link '{name}'")
    if inertial is None:  # SDFormat's default inertial: 1 kg, unit inertia, at the link origin
        return LinkSpec(name, 1.0, np.eye(3), np.eye(4))
    mass = _scalar(inertial, "mass", 1.0, frames.path, owner, MAX_MASS, "mass")
    inertia = _inertia_matrix(only_child(inertial, "inertia", frames.path, owner), frames.path, owner)
    model_T_inertial = frames.pose_element_in_model(frames.pose_of(inertial, owner), name, owner)
    link_T_inertial = rigid_inverse(frames.pose_in_model(name, owner)) @ model_T_inertial
    return LinkSpec(name, mass, inertia, link_T_inertial)


def _inertia_matrix(inertia, path: str, owner: str) -> np.ndarray:
    """The symmetric 3×3 inertia; SDFormat's defaults are unit moments and zero products."""
    if inertia is None:
        return np.eye(3)
    where = f"{owner} <inertia>"
    ixx, iyy, izz, ixy, ixz, iyz = (_scalar(inertia, tag, 1.0 if tag in ("ixx", "iyy", "izz") else 0.0, path, where,
                                            MAX_INERTIA, "an inertia of") for tag in _INERTIA_TAGS)
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


def _joint_spec(joint, frames: ModelFrames) -> JointSpec:
    name, kind = joint.get("name"), joint.get("type")
    owner = describe(joint)
    if kind not in JOINT_TYPES:
        raise ModelError(f"{at(frames.path, joint)}: {owner} has type '{kind}'; supported types are"
                         f" {', '.join(JOINT_TYPES)}")
    parent, child = frames.joint_link(joint, "parent"), frames.joint_link(joint, "child")
    if parent == child:
        raise ModelError(f"{at(frames.path, joint)}: {owner} has link '{child}' as both parent and child")
    model_T_parent = np.eye(4) if parent == WORLD else frames.pose_in_model(parent, owner)
    model_T_joint = frames.pose_in_model(name, owner)
    model_T_child = frames.pose_in_model(child, owner)
    axis = only_child(joint, "axis", frames.path, owner)
    lower, upper, effort, velocity = _limits(axis, kind, frames.path, owner)
    return JointSpec(
        name, kind, parent, child,
        origin=rigid_inverse(model_T_parent) @ model_T_joint,
        axis=_axis_in_joint_frame(axis, kind, model_T_joint, frames, owner),
        lower=lower, upper=upper, effort=effort, velocity=velocity,
        child_pose=rigid_inverse(model_T_joint) @ model_T_child,
        actuated=_is_actuated(joint, frames.path, owner),
    )


def _axis_in_joint_frame(axis, kind: str, model_T_joint: np.ndarray, frames: ModelFrames, owner: str):
    """The unit joint axis in the joint frame, converted from the frame <xyz> is expressed in."""
    if axis is None:
        return np.array(_DEFAULT_AXIS)
    where = f"{owner} <axis><xyz>"
    xyz = only_child(axis, "xyz", frames.path, f"{owner} <axis>")
    if xyz is None:
        vector = np.array(_DEFAULT_AXIS)
    else:
        vector = np.array(numbers(element_text(xyz, frames.path, where), frames.path, xyz, where, 3, "x y z"))
    if kind == "fixed":  # a fixed joint has no axis; its <xyz> is checked but not used
        return np.array(_DEFAULT_AXIS)
    frame = _axis_frame(axis, xyz, frames, owner)
    if frame is not None:
        model_R_joint = model_T_joint[:3, :3]
        model_R_frame = frames.pose_in_model(frame, f"{where} expressed_in", xyz)[:3, :3]
        vector = model_R_joint.T @ model_R_frame @ vector
    unit = unit_vector(vector)
    if unit is None:
        raise ModelError(f"{at(frames.path, xyz)}: {where} is the zero vector")
    return unit


def _axis_frame(axis, xyz, frames: ModelFrames, owner: str) -> str | None:
    """The frame the axis is expressed in, or None for the joint frame."""
    expressed_in = (xyz.get("expressed_in") or "").strip() if xyz is not None else ""
    if expressed_in:
        frames.require_1_7(f"{owner} <axis><xyz expressed_in>", xyz)
        return expressed_in
    flag = only_child(axis, "use_parent_model_frame", frames.path, f"{owner} <axis>")
    if flag is None:
        return None
    if frames.version >= FRAME_SEMANTICS_VERSION:
        raise ModelError(f"{at(frames.path, flag)}: {owner} <use_parent_model_frame> was removed in SDFormat 1.7;"
                         " use <xyz expressed_in='__model__'>")
    return MODEL_FRAME if boolean(flag, None, frames.path, f"{owner} <use_parent_model_frame>") else None


def _limits(axis, kind: str, path: str, owner: str) -> tuple[float, float, float, float]:
    """lower, upper, effort, velocity; SDFormat writes a negative effort or velocity for 'no limit'."""
    limit = only_child(axis, "limit", path, f"{owner} <axis>") if axis is not None else None
    if limit is None or kind == "fixed":
        return -np.inf, np.inf, np.inf, np.inf
    where = f"{owner} <axis><limit>"
    lower, upper = -np.inf, np.inf
    if kind != "continuous":
        lower = _scalar(limit, "lower", -np.inf, path, where)
        upper = _scalar(limit, "upper", np.inf, path, where)
    effort = _scalar(limit, "effort", np.inf, path, where)
    velocity = _scalar(limit, "velocity", np.inf, path, where)
    return lower, upper, np.inf if effort < 0 else effort, np.inf if velocity < 0 else velocity


def _is_actuated(joint, path: str, owner: str) -> bool:
    """gtdyn's custom <ns:actuated> element (any namespace); joints are actuated unless it says false."""
    marks = joint.findall("{*}actuated")
    if len(marks) > 1:
        raise ModelError(f"{at(path, marks[1])}: {owner} has {len(marks)} <actuated> elements; gtdyn needs at most"
                         " one")
    if not marks:
        return True
    return boolean(marks[0], None, path, f"{owner} <{etree.QName(marks[0]).localname}>")


# -- text values -----------------------------------------------------------------------------------------


def _scalar(parent, tag: str, default: float, path: str, where: str, bound: float | None = None,
            quantity: str = "") -> float:
    """The number in child element <tag>, or ``default`` when the element is absent."""
    element = only_child(parent, tag, path, where)
    if element is None:
        return default
    what = f"{where} <{tag}>"
    return numbers(element_text(element, path, what), path, element, what, 1, "one number", bound, quantity)[0]


