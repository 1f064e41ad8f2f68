"""Loading robots: from a file path (.urdf or .sdf) or a bundled model name; the bundled models' documented
states."""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources

import numpy as np

from gtdyn.arguments import choice
from gtdyn.errors import ArgumentError, ModelError
from gtdyn.model.build import build_robot
from gtdyn.model.robot import Robot

# bundled name -> (folder in the source tree, package it installs as, file)
BUNDLED = {
    "puma560": ("urdf", "gtdyn.models_urdf", "puma560.urdf"),
    "rrr": ("urdf", "gtdyn.models_urdf", "rrr.urdf"),
    "rr": ("urdf", "gtdyn.models_urdf", "rr.urdf"),
    "quadruped": ("urdf", "gtdyn.models_urdf", "quadruped.urdf"),
    "five_bar": ("sdf", "gtdyn.models_sdf", "five_bar.sdf"),
    "four_bar": ("sdf", "gtdyn.models_sdf", "four_bar.sdf"),
    "six_bar": ("sdf", "gtdyn.models_sdf", "six_bar.sdf"),
}




@dataclass(frozen=True)
class DocumentedState:
    """A bundled robot's documented state: joint positions ``q``, velocities ``v`` and accelerations ``qdd``
    in ``robot.joint_names`` order (rad, rad/s, rad/s²: these robots' joints are revolute). Examples and
    the ``gtdyn`` command solve there by default; ``title`` names the robot and ``about`` says where ``q``
    comes from, for people."""

    title: str
    q: tuple[float, ...]
    v: tuple[float, ...]
    qdd: tuple[float, ...]
    about: str = ""

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """q, q̇, q̈ as new arrays."""
        return np.array(self.q), np.array(self.v), np.array(self.qdd)


# bundled name -> its documented state (bundled robots not listed have none)
DOCUMENTED_STATES = {
    "puma560": DocumentedState(
        "PUMA 560",
        # the Robotics Toolbox's nominal pose qn, joint 3 at −π: the toolbox's π is the same angle, but outside the
        # joint's limits [−225°, 45°] (every state gtdyn generates keeps the limits)
        q=(0.0, np.pi / 4, -np.pi, 0.0, np.pi / 4, 0.0),
        v=(0.1, 0.2, 0.3, 0.4, 0.5, 0.6),
        qdd=(1.0, -1.0, 0.5, -0.5, 0.25, -0.25),
        about="the toolbox's nominal pose qn, joint 3 at −π inside its limits",
    ),
}


def documented_state(robot: Robot) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """q, q̇, q̈ of the documented state if ``robot`` was read from a bundled file that has one
    (``DOCUMENTED_STATES``), else None. The file decides, not the robot's name: an edited copy of a bundled
    model elsewhere has no documented state."""
    source = os.path.realpath(robot.source)
    for name, state in DOCUMENTED_STATES.items():
        if source == os.path.realpath(bundled_path(name)):
            return state.arrays()
    return None


def bundled_path(name: str) -> str:
    """Path of a bundled model file (works from a source checkout and after ``pip install .``)."""
    if name not in BUNDLED:
        raise ModelError(f"no bundled robot '{name}' (bundled: {', '.join(BUNDLED)})")
    folder, package, filename = BUNDLED[name]
    try:  # installed: the urdf/ and sdf/ folders ship as packages
        return str(resources.files(package).joinpath(filename))
    except ModuleNotFoundError:  # a source checkout on sys.path without installing
        checkout = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        return os.path.join(checkout, folder, filename)


def example_robot_path(name: str) -> str | None:
    """The URDF of example-robot-data (an optional dependency: ``pip install "gtdyn[robots]"``) whose file name is
    ``name`` or ``name.urdf`` (``"solo12"``, ``"ur5_robot.urdf"``), or a path relative to its robots folder; None
    when it is not installed or has no such file. ModelError when the name fits several files."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        root = str(distribution("example-robot-data").locate_file("cmeel.prefix/share/example-robot-data/robots"))
    except PackageNotFoundError:
        return None
    if os.path.isfile(os.path.join(root, name)):
        return os.path.join(root, name)
    wanted = {name, f"{name}.urdf"}
    found = sorted(os.path.join(folder, f) for folder, _, files in os.walk(root) for f in files if f in wanted)
    if len(found) > 1:
        raise ModelError(f"'{name}' names several example-robot-data files: "
                         f"{', '.join(os.path.relpath(f, root) for f in found)}; give one of these paths")
    return found[0] if found else None


BASES = ("fixed", "floating")


TRANSMISSIONS = ("independent", "exact", "approximate")


def load_robot(path_or_name: str | os.PathLike, base: str | None = None, transmissions: str = "exact") -> Robot:
    """Load a robot from a ``.urdf`` or ``.sdf`` file, a bundled name, or the file name of one of
    example-robot-data's robots when that package is installed (``"solo12"``, ``"panda.urdf"``).

    ``base``: "fixed" welds the root link to the world, "floating" gives it six free degrees of freedom, None
    follows the file: an SDF model with a joint to ``world`` is fixed and one without floats (SDFormat's
    meaning); a URDF is fixed (as in ROS and Pinocchio). ``robot.floating_base`` says which.

    ``transmissions``: "exact" (the default) couples each URDF ``<mimic joint multiplier offset>`` joint, and each
    joint a ``<gtdyn:transmission>`` block drives, to its drives (``robot.transmissions``; the driven joint
    becomes passive); "approximate" welds each driven joint and adds its rotor's reflected inertia to the
    driving joints (the armature approximation, to see its error); "independent" reads every joint as free,
    as Pinocchio does by default, with a ModelWarning for each ``<mimic>``.

    ModelError for a bad or missing file, ArgumentError for an argument that is not a path or name."""
    choice("transmissions", transmissions, TRANSMISSIONS)
    if base is not None:
        choice("base", base, BASES)
    if not isinstance(path_or_name, (str, bytes, os.PathLike)):
        raise ArgumentError(f"path_or_name must be a .urdf/.sdf path or a bundled robot name "
                            f"({', '.join(BUNDLED)}), not {type(path_or_name).__name__} {path_or_name!r:.80}")
    try:
        path = os.fsdecode(path_or_name)
    except (TypeError, UnicodeDecodeError) as e:  # a PathLike whose __fspath__ misbehaves, undecodable bytes
        raise ArgumentError(f"path_or_name {path_or_name!r:.80} is not a usable path: {e}") from None
    if "\0" in path:
        raise ArgumentError(f"path_or_name {path!r:.80} contains a NUL character")
    if path in BUNDLED:
        path = bundled_path(path)
    elif not os.path.isabs(path) and not os.path.exists(path) and (found := example_robot_path(path)):
        path = found  # a robot of example-robot-data by file name, as Pinocchio users load them
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".urdf":
        from gtdyn.io.urdf import read_urdf

        return build_robot(read_urdf(path, warn_mimic=transmissions == "independent"), floating=base == "floating",
                           transmissions=transmissions)
    if suffix == ".sdf":
        from gtdyn.io.sdf import read_sdf

        description = read_sdf(path)
        if base == "floating" and description.base is not None:
            world_joints = [j.name for j in description.joints if j.parent == description.base]
            raise ArgumentError(f"base: {path} attaches its model to the world (joints {', '.join(world_joints)}), "
                                "so it has no free base to float; remove those joints from the file to float it")
        return build_robot(description, floating=base == "floating" or (base is None and description.base is None),
                           transmissions=transmissions)
    raise ModelError(f"{path}: unsupported robot file type '{suffix or '(none)'}'; expected .urdf, .sdf, a bundled "
                     f"name ({', '.join(BUNDLED)}) or the file name of an example-robot-data robot (such as solo12 "
                     "or panda; pip install \"gtdyn[robots]\")")
