"""SDFormat's pose-frame semantics for one model: every link, joint and ``<frame>`` is a named frame whose
``<pose>`` is written relative to another frame; ``ModelFrames`` resolves them all to poses in ``__model__``."""

from __future__ import annotations

import math

import numpy as np

from gtdyn.errors import ModelError
from gtdyn.io.xml import at, element_text, numbers, only_child, unit_vector
from gtdyn.model.limits import MAX_LENGTH, check_magnitude
from gtdyn.spatial import rpy_matrix

MODEL_FRAME = "__model__"
WORLD = "world"
FRAME_SEMANTICS_VERSION = (1, 7)  # relative_to, expressed_in and <frame attached_to> first appear in 1.7
JOINT_FRAMES_VERSION = (1, 8)  # a joint's <parent> and <child> may name any frame, not only a link, from 1.8
_BOOLEANS = {"true": True, "1": True, "false": False, "0": False}


class ModelFrames:
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
            raw = _pose_matrix(self.pose_of(element), self.path, describe(element))
            self._in_model[frame] = self._in_model[self._reference_of(frame)] @ raw

    def _reference_of(self, name: str) -> str:
        """The frame that ``name``'s pose is written in: relative_to, else the SDFormat default for its element."""
        element = self._elements[name]
        owner = describe(element)
        pose = self.pose_of(element)
        reference = self._relative_to(pose, owner) or self._default_reference(element)
        if reference != MODEL_FRAME and reference not in self._elements:
            raise ModelError(f"{at(self.path, pose)}: {owner} has <pose relative_to='{reference}'>, which is not a"
                             " link, joint or frame of the model")
        return reference

    def pose_of(self, element, owner: str | None = None):
        """The element's one <pose>, or None."""
        return only_child(element, "pose", self.path, owner or describe(element))

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
            return self.joint_frame(element, "child")  # the child frame as named, not the link it is attached to
        if element.tag == "frame":
            return (element.get("attached_to") or "").strip() or MODEL_FRAME
        return MODEL_FRAME

    def joint_link(self, joint, role: str) -> str:
        """The link the joint's <parent> or <child> frame is attached to, or ``world`` for a parent."""
        name = self.joint_frame(joint, role)
        if name == WORLD or self.is_link(name):
            return name
        return self._attached_link(name, f"{describe(joint)} <{role}>", joint.find(role))

    def joint_frame(self, joint, role: str) -> str:
        """The frame named by the joint's <parent> or <child>: a link, or from SDFormat 1.8 any frame of the
        model; only the parent may be the world."""
        owner = describe(joint)
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
        element = self._elements.get(name)
        if element is None:
            raise ModelError(f"{at(self.path, node)}: {owner} names {role} link '{name}', which is not defined")
        if element.tag != "link" and self.version < JOINT_FRAMES_VERSION:
            raise ModelError(f"{at(self.path, node)}: {owner} names {role} '{name}', which is a <{element.tag}>, not a"
                             f" link; a joint's {role} may be a frame only from SDFormat 1.8 (the file is version"
                             f" {self.version[0]}.{self.version[1]})")
        return name

    def _attached_link(self, name: str, named_by: str, element) -> str:
        """The link a frame or joint is attached to: a frame through its attached_to chain, a joint through its
        child frame (SDFormat's attached-to graph)."""
        chain = []
        while not self.is_link(name):
            if name in chain:
                raise ModelError(f"{at(self.path, element)}: {named_by} names '{chain[0]}', whose attached_to chain"
                                 f" {_cycle(chain, name)} is a cycle")
            chain.append(name)
            current = self._elements[name]
            if current.tag == "joint":
                name = self.joint_frame(current, "child")
            else:
                name = (current.get("attached_to") or "").strip() or MODEL_FRAME
            if name == MODEL_FRAME:  # attached to the model frame, which SDFormat attaches to the canonical link
                raise ModelError(f"{at(self.path, element)}: {named_by} names frame '{chain[0]}', which is attached to"
                                 " the model frame, not to a link; attach it to the link it moves with")
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


def describe(element) -> str:
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
        if boolean(pose, "degrees", path, f"{where} degrees"):
            angles = [math.radians(a) for a in angles]
        transform[:3, :3] = rpy_matrix(*angles)
    else:
        transform[:3, :3] = _quaternion_matrix(values[3:], path, pose, where)
    transform[:3, 3] = values[:3]
    return transform


def _quaternion_matrix(xyzw: list[float], path: str, pose, where: str) -> np.ndarray:
    scale = max(abs(v) for v in xyzw)
    if scale == 0 or scale * np.linalg.norm(np.asarray(xyzw) / scale) < 1e-12:
        raise ModelError(f"{at(path, pose)}: {where} has a zero quaternion")
    x, y, z, w = unit_vector(xyzw)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def rigid_inverse(transform: np.ndarray) -> np.ndarray:
    inverse = np.eye(4)
    inverse[:3, :3] = transform[:3, :3].T
    inverse[:3, 3] = -transform[:3, :3].T @ transform[:3, 3]
    return inverse


def boolean(element, attribute: str | None, path: str, where: str) -> bool:
    """An element's text (or one of its attributes): true, false, 1 or 0."""
    text = element.get(attribute, "false") if attribute else element_text(element, path, where)
    value = _BOOLEANS.get((text or "").strip().lower())
    if value is None:
        raise ModelError(f"{at(path, element)}: {where} is '{(text or '').strip()}'; expected true, false, 1 or 0")
    return value
