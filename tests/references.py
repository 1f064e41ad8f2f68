"""Helpers for comparing with independent references: example-robot-data paths and the relative error.

The Pinocchio adapter is ``gtdyn.bench.pinocchio.PinocchioModel`` (one adapter for tests and benchmarks)."""

from __future__ import annotations

import os
from importlib.metadata import PackageNotFoundError, distribution

import gtsam
import numpy as np

from gtdyn.compiled.fallback import as_vector, reference_answer


def erd_path(relative: str) -> str:
    """Path of a URDF shipped by the example-robot-data wheel (data only, under cmeel.prefix/share)."""
    try:
        root = distribution("example-robot-data").locate_file("cmeel.prefix/share/example-robot-data/robots")
    except PackageNotFoundError:  # pragma: no cover - the test extra installs it
        raise RuntimeError("example-robot-data is not installed: pip install -e '.[test]'") from None
    path = os.path.join(str(root), relative)
    if not os.path.isfile(path):
        raise FileNotFoundError(path)
    return path


def erd_root() -> str:
    return os.path.dirname(erd_path("ur_description/urdf/ur5_robot.urdf")).rsplit("/ur_description", 1)[0]


def rel_err(x, ref) -> float:
    """max|x − ref| / max|ref| (max norm), the issue's relative error."""
    x, ref = np.asarray(x, float), np.asarray(ref, float)
    return float(np.max(np.abs(x - ref)) / max(np.max(np.abs(ref)), 1e-300))


def load_quietly(path: str):
    """gtdyn.load_robot with every joint independent, as Pinocchio reads the file by default (its grippers'
    ``<mimic>`` joints free), without the ModelWarning that says so; tests/test_urdf.py checks that warning, and
    tests/test_transmissions.py the coupled reading."""
    import warnings

    import gtdyn

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*<mimic>", category=gtdyn.ModelWarning)
        return gtdyn.load_robot(path, transmissions="independent")


def random_base(rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A 4×4 base pose (random rotation and position), a base twist and a base acceleration."""
    quaternion = rng.normal(size=4)
    T = np.eye(4)
    T[:3, :3] = gtsam.Rot3.Quaternion(*(quaternion / np.linalg.norm(quaternion))).matrix()
    T[:3, 3] = rng.normal(size=3)
    return T, rng.normal(size=6), rng.normal(size=6)


def central_differences(solver, q, v, x, h=1e-6):
    """∂(reference answer)/∂(q, q̇, x) by central differences of the reference path (``reference_answer``: the
    solver's answer layout, computed by the reference path alone); driven joints follow their drives and their
    own columns are zero, as the compiled derivatives define them, and so are a passive joint's τ columns."""
    robot = solver.robot
    driven = {t.dependent - 1 for t in robot.transmissions}
    passive = {j.index - 1 for j in robot.joints if not j.actuated}

    def value(q, v, x):
        return as_vector(reference_answer(solver, q, v, x))

    columns = []
    for which in range(3):
        block = []
        for j in range(robot.num_dofs):
            if (j in driven and (which < 2 or solver.problem == "inverse")) or \
                    (which == 2 and j in passive and solver.problem != "inverse"):
                block.append(np.zeros_like(value(q, v, x)))
                continue
            sides = []
            for sign in (1, -1):
                args = [np.array(a, float) for a in (q, v, x)]
                args[which][j] += sign * h
                robot.follow_drives(*args[:2], args[2] if solver.problem == "inverse" else None)
                sides.append(value(*args))
            block.append((sides[0] - sides[1]) / (2 * h))
        columns.append(np.array(block).T)
    return columns
