"""SDFormat → RobotDescription: one model's links, joints and frames, closed kinematic loops allowed.

Poses follow SDFormat's pose-frame semantics (1.7+): every link, joint and ``<frame>`` is a named frame whose
``<pose>`` is written relative to another frame (``relative_to``, else a per-element default), and all of them
are resolved to poses in the model frame ``__model__``. Files older than 1.7 have no ``relative_to``: there,
link poses are relative to the model and joint poses to the child link, the same defaults as in 1.7.

The world frame is taken to coincide with the model frame (the model's own ``<pose>`` is ignored), so a joint
whose parent is ``world`` welds or hinges its child to a massless ``world`` link, which becomes the base.
"""

from __future__ import annotations

import math

import numpy as np
from lxml import etree

from gtdyn.model.description import JOINT_TYPES, JointSpec, LinkSpec, RobotDescription
from gtdyn.errors import ModelError
from gtdyn.io.xml import (MAX_INERTIA, MAX_LENGTH, MAX_MASS, at, check_magnitude, element_text, numbers, only_child,
                          parse_xml, unit_vector)

MODEL_FRAME = "__model__"
WORLD = "world"
FRAME_SEMANTICS_VERSION = (1, 7)  # relative_to, expressed_in and <frame attached_to> first appear in 1.7
_FRAME_TAGS = ("link", "joint", "frame")
_BOOLEANS = {"true": True, "1": True, "false": False, "0": False}
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
    frames = _ModelFrames(path, version, _frame_elements(model, path))
    links = [_link_spec(element, frames) for element in frames.elements_of("link")]
    joints = [_joint_spec(element, frames) for element in frames.elements_of("joint")]
    base = WORLD if any(joint.parent == WORLD for joint in joints) else None
    if base is not None:
        links.insert(0, LinkSpec(WORLD, 0.0, np.zeros((3, 3)), np.eye(4), has_inertial=False))
    return RobotDescription(model.get("name"), tuple(links), tuple(joints), source=path, allow_loops=True,
                            base=base)


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


# -- frames and poses ------------------------------------------------------------------------------------


class _ModelFrames:
    """Every named frame of one model, resolved to its pose in the model frame by following relative_to."""

    def __init__(self, path: str, version: tuple[int, int], elements: dict):
        self.path = path
        self.version = version
        self._elements = elements
        self._check_attachments()
        self._in_model = {MODEL_FRAME: np.eye(4)}
        for name in elements:
            self._resolve(name)

    def elements_of(self, tag: str) -> list:
        return [element for element in self._elements.values() if element.tag == tag]

    def is_link(self, name: str) -> bool:
        element = self._elements.get(name)
        return element is not None and element.tag == "link"

    def pose_in_model(self, name: str, named_by: str, element=None) -> np.ndarray:
        """Pose of frame ``name`` (a link, joint, frame or __model__) in the model frame; ``element`` names it."""
        if name not in self._in_model:
            raise ModelError(f"{at(self.path, element)}: {named_by} names frame '{name}', which is not a link,"
                             " joint or frame of the model")
        return self._in_model[name]

    def pose_element_in_model(self, pose, default_frame: str, owner: str) -> np.ndarray:
        """Model-frame pose of an unnamed element (an <inertial>) whose <pose> defaults to ``default_frame``."""
        reference = self._relative_to(pose, owner) or default_frame
        return self.pose_in_model(reference, f"{owner} <pose relative_to>", pose) @ _pose_matrix(pose, self.path, owner)

    def require_1_7(self, feature: str, element=None) -> None:
        if self.version < FRAME_SEMANTICS_VERSION:
            raise ModelError(f"{at(self.path, element)}: {feature} needs SDFormat 1.7 or later; the file is version"
                             f" {self.version[0]}.{self.version[1]}")

    def _resolve(self, name: str) -> None:
        """Walk the relative_to chain from ``name`` to a resolved frame, then compose back down it."""
        chain = []
        frame = name
        while frame not in self._in_model:
            if frame in chain:
                raise ModelError(f"{at(self.path, self._elements[frame])}: the <pose relative_to> chain"
                                 f" {_cycle(chain, frame)} is a cycle")
            chain.append(frame)
            frame = self._reference_of(frame)
        for frame in reversed(chain):
            element = self._elements[frame]
            raw = _pose_matrix(self.pose_of(element), self.path, _describe(element))
            self._in_model[frame] = self._in_model[self._reference_of(frame)] @ raw

    def _reference_of(self, name: str) -> str:
        """The frame that ``name``'s pose is written in: relative_to, else the SDFormat default for its element."""
        element = self._elements[name]
        owner = _describe(element)
        pose = self.pose_of(element)
        reference = self._relative_to(pose, owner) or self._default_reference(element)
        if reference != MODEL_FRAME and reference not in self._elements:
            raise ModelError(f"{at(self.path, pose)}: {owner} has <pose relative_to='{reference}'>, which is not a"
                             " link, joint or frame of the model")
        return reference

    def pose_of(self, element, owner: str | None = None):
        """The element's one <pose>, or None."""
        return only_child(element, "pose", self.path, owner or _describe(element))

    def _relative_to(self, pose, owner: str) -> str:
        if pose is None:
            return ""
        if pose.get("frame"):  # the SDFormat 1.5/1.6 attribute, with semantics never settled; 1.7 replaced it
            raise ModelError(f"{at(self.path, pose)}: {owner} <pose frame='{pose.get('frame')}'> is not supported;"
                             " use relative_to (SDFormat 1.7)")
        reference = (pose.get("relative_to") or "").strip()
        if reference:
            self.require_1_7(f"{owner} <pose relative_to>", pose)
        return reference

    def _default_reference(self, element) -> str:
        if element.tag == "joint":
            return self.joint_link(element, "child")
        if element.tag == "frame":
            return (element.get("attached_to") or "").strip() or MODEL_FRAME
        return MODEL_FRAME

    def joint_link(self, joint, role: str) -> str:
        """The link named by the joint's <parent> or <child>; only the parent may be the world."""
        owner = _describe(joint)
        node = only_child(joint, role, self.path, owner)
        name = (node.text or "").strip() if node is not None else ""
        if not name:
            raise ModelError(f"{at(self.path, joint)}: {owner} has no <{role}>")
        if len(node):  # child elements, e.g. an unexpanded entity: the text alone is not the whole name
            raise ModelError(f"{at(self.path, node)}: {owner} <{role}> contains elements; expected a link name")
        if name == WORLD:
            if role == "parent":
                return name
            raise ModelError(f"{at(self.path, node)}: {owner} has the world as its child; only a parent may be the"
                             " world")
        if not self.is_link(name):
            raise ModelError(f"{at(self.path, node)}: {owner} names {role} link '{name}', which is not defined")
        return name

    def _check_attachments(self) -> None:
        """Each <frame attached_to> names a link, joint, frame or __model__, and no frames attach in a circle."""
        for frame in self.elements_of("frame"):
            self.require_1_7(f"<frame name='{frame.get('name')}'>", frame)
            seen = []
            current = frame
            while current is not None and current.tag == "frame":
                name = current.get("name")
                if name in seen:
                    raise ModelError(f"{at(self.path, current)}: the attached_to chain {_cycle(seen, name)} is a cycle")
                seen.append(name)
                target = (current.get("attached_to") or "").strip() or MODEL_FRAME
                if target != MODEL_FRAME and target not in self._elements:
                    raise ModelError(f"{at(self.path, current)}: frame '{name}' is attached_to '{target}', which is not"
                                     " a link, joint or frame of the model")
                current = self._elements.get(target)


def _describe(element) -> str:
    return f"{element.tag} '{element.get('name')}'"


def _cycle(chain: list[str], repeated: str) -> str:
    """'a → b → a': the part of a walked chain that came back to ``repeated``."""
    return " → ".join(chain[chain.index(repeated):] + [repeated])


def _pose_matrix(pose, path: str, owner: str) -> np.ndarray:
    """The 4×4 transform a <pose> element writes: x y z roll pitch yaw, or x y z qx qy qz qw."""
    if pose is None:
        return np.eye(4)
    where = f"{owner} <pose>"
    rotation_format = pose.get("rotation_format", "euler_rpy").strip()
    if rotation_format == "euler_rpy":
        count, layout = 6, "x y z roll pitch yaw"
    elif rotation_format == "quat_xyzw":
        count, layout = 7, "x y z qx qy qz qw"
    else:
        raise ModelError(f"{at(path, pose)}: {where} has rotation_format '{rotation_format}'; expected euler_rpy"
                         " or quat_xyzw")
    text = element_text(pose, path, where)
    if not text.split():  # an empty <pose/> is SDFormat's default, the identity
        return np.eye(4)
    values = numbers(text, path, pose, where, count, layout)
    check_magnitude(values[:3], MAX_LENGTH, "a length of", at(path, pose), where)
    transform = np.eye(4)
    if rotation_format == "euler_rpy":
        angles = values[3:]
        if _boolean(pose, "degrees", path, f"{where} degrees"):
            angles = [math.radians(a) for a in angles]
        transform[:3, :3] = _rpy_matrix(*angles)
    else:
        transform[:3, :3] = _quaternion_matrix(values[3:], path, pose, where)
    transform[:3, 3] = values[:3]
    return transform


def _rpy_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """R = Rz(yaw)·Ry(pitch)·Rx(roll), the fixed-axis X-Y-Z convention of SDFormat and URDF."""
    cr, sr, cp, sp, cy, sy = (math.cos(roll), math.sin(roll), math.cos(pitch), math.sin(pitch), math.cos(yaw),
                              math.sin(yaw))
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def _quaternion_matrix(xyzw: list[float], path: str, pose, where: str) -> np.ndarray:
    scale = max(abs(v) for v in xyzw)
    if scale == 0 or scale * np.linalg.norm(np.asarray(xyzw) / scale) < 1e-12:
        raise ModelError(f"{at(path, pose)}: {where} has a zero quaternion")
    x, y, z, w = unit_vector(xyzw)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _rigid_inverse(transform: np.ndarray) -> np.ndarray:
    inverse = np.eye(4)
    inverse[:3, :3] = transform[:3, :3].T
    inverse[:3, 3] = -transform[:3, :3].T @ transform[:3, 3]
    return inverse


# -- links and joints ------------------------------------------------------------------------------------


def _link_spec(link, frames: _ModelFrames) -> LinkSpec:
    name = link.get("name")
    owner = f"link '{name}' <inertial>"
    inertial = only_child(link, "inertial", frames.path, f"link '{name}'")
    if inertial is None:  # SDFormat's default inertial: 1 kg, unit inertia, at the link origin
        return LinkSpec(name, 1.0, np.eye(3), np.eye(4), has_inertial=True)
    mass = _scalar(inertial, "mass", 1.0, frames.path, owner, MAX_MASS, "mass")
    inertia = _inertia_matrix(only_child(inertial, "inertia", frames.path, owner), frames.path, owner)
    model_T_inertial = frames.pose_element_in_model(frames.pose_of(inertial, owner), name, owner)
    link_T_inertial = _rigid_inverse(frames.pose_in_model(name, owner)) @ model_T_inertial
    return LinkSpec(name, mass, inertia, link_T_inertial, has_inertial=True)


def _inertia_matrix(inertia, path: str, owner: str) -> np.ndarray:
    """The symmetric 3×3 inertia; SDFormat's defaults are unit moments and zero products."""
    if inertia is None:
        return np.eye(3)
    where = f"{owner} <inertia>"
    ixx, iyy, izz, ixy, ixz, iyz = (_scalar(inertia, tag, 1.0 if tag in ("ixx", "iyy", "izz") else 0.0, path, where,
                                            MAX_INERTIA, "an inertia of") for tag in _INERTIA_TAGS)
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


def _joint_spec(joint, frames: _ModelFrames) -> JointSpec:
    name, kind = joint.get("name"), joint.get("type")
    owner = _describe(joint)
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
        origin=_rigid_inverse(model_T_parent) @ model_T_joint,
        axis=_axis_in_joint_frame(axis, kind, model_T_joint, frames, owner),
        lower=lower, upper=upper, effort=effort, velocity=velocity,
        child_pose=_rigid_inverse(model_T_joint) @ model_T_child,
        actuated=_is_actuated(joint, frames.path, owner),
    )


def _axis_in_joint_frame(axis, kind: str, model_T_joint: np.ndarray, frames: _ModelFrames, owner: str):
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


def _axis_frame(axis, xyz, frames: _ModelFrames, owner: str) -> str | None:
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
    return MODEL_FRAME if _boolean(flag, None, frames.path, f"{owner} <use_parent_model_frame>") else None


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
    return _boolean(marks[0], None, path, f"{owner} <{etree.QName(marks[0]).localname}>")


# -- text values -----------------------------------------------------------------------------------------


def _scalar(parent, tag: str, default: float, path: str, where: str, bound: float | None = None,
            quantity: str = "") -> float:
    """The number in child element <tag>, or ``default`` when the element is absent."""
    element = only_child(parent, tag, path, where)
    if element is None:
        return default
    what = f"{where} <{tag}>"
    return numbers(element_text(element, path, what), path, element, what, 1, "one number", bound, quantity)[0]


def _boolean(element, attribute: str | None, path: str, where: str) -> bool:
    """An element's text (or one of its attributes): true, false, 1 or 0."""
    text = element.get(attribute, "false") if attribute else element_text(element, path, where)
    value = _BOOLEANS.get((text or "").strip().lower())
    if value is None:
        raise ModelError(f"{at(path, element)}: {where} is '{(text or '').strip()}'; expected true, false, 1 or 0")
    return value
