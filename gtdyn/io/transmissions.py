"""gtdyn's ``<gtdyn:transmission>`` block, in URDF (under ``<robot>``) and SDF (under ``<model>``): a joint
driven by a fixed linear combination of others — a belt or cable over several joints, one row of a
differential —

    <gtdyn:transmission joint="rotor" offset="0">      <!-- q_rotor = Σ ratio · q_joint + offset -->
      <gtdyn:drive joint="j1" ratio="2.5"/>
      <gtdyn:drive joint="j2" ratio="-1"/>
    </gtdyn:transmission>

(any namespace prefix declared for gtdyn works; ROS's un-namespaced ``<transmission>`` is a different thing
and is not read). A URDF ``<mimic>`` is the one-drive case, read with the joint."""

from __future__ import annotations

from gtdyn.errors import ModelError
from gtdyn.io.xml import at, numbers
from gtdyn.model.description import TransmissionSpec


def read_transmissions(parent, path: str) -> tuple[TransmissionSpec, ...]:
    """Every namespaced ``<transmission>`` block directly under ``parent``."""
    out = []
    for element in parent.iterchildren("{*}transmission"):
        if not element.tag.startswith("{"):  # ROS's <transmission> (actuators for ros_control)
            continue
        joint = element.get("joint")
        if not joint:
            raise ModelError(f"{at(path, element)}: <transmission> names no driven joint (joint=...)")
        owner = f"<transmission joint='{joint}'>"
        offset = 0.0 if element.get("offset") is None else numbers(
            element.get("offset"), path, element, f"{owner} offset", 1, "one number")[0]
        drives = []
        for drive in element.iterchildren("{*}drive"):
            if not drive.get("joint") or drive.get("ratio") is None:
                raise ModelError(f"{at(path, drive)}: {owner} <drive> needs joint=... and ratio=...")
            drives.append((drive.get("joint"), numbers(drive.get("ratio"), path, drive, f"{owner} <drive ratio>", 1,
                                                       "one number")[0]))
        if not drives:
            raise ModelError(f"{at(path, element)}: {owner} has no <drive joint=... ratio=...>")
        out.append(TransmissionSpec(joint, tuple(drives), float(offset)))
    return tuple(out)
