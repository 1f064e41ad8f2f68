"""Loading robots: from a file path (.urdf; .sdf in the loops issue) or a bundled model name."""

from __future__ import annotations

import os
from importlib import resources

from gtdyn.errors import ModelError
from gtdyn.build import build_robot
from gtdyn.robot import Robot

BUNDLED = {"puma560": "puma560.urdf", "rrr": "rrr.urdf", "rr": "rr.urdf"}


def bundled_path(name: str) -> str:
    """Path of a bundled model file (works from a source checkout and after ``pip install .``)."""
    if name not in BUNDLED:
        raise ModelError(f"no bundled robot '{name}' (bundled: {', '.join(BUNDLED)})")
    filename = BUNDLED[name]
    try:  # installed: the urdf/ folder ships as the package gtdyn.models_urdf
        return str(resources.files("gtdyn.models_urdf").joinpath(filename))
    except ModuleNotFoundError:  # a source checkout on sys.path without installing
        return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "urdf", filename)


def load_robot(path_or_name: str | os.PathLike) -> Robot:
    """Load a robot from a ``.urdf`` file or a bundled name ('puma560', 'rrr', 'rr'); ModelError on bad input."""
    path = os.fspath(path_or_name)
    if path in BUNDLED:
        path = bundled_path(path)
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".urdf":
        from gtdyn.io.urdf import read_urdf

        return build_robot(read_urdf(path))
    raise ModelError(f"{path}: unsupported robot file type '{suffix or '(none)'}'; expected .urdf "
                     f"or a bundled name ({', '.join(BUNDLED)})")
