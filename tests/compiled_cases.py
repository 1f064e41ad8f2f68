"""Robots and compiled solvers for tests/test_compiled.py, and its warm-up process.

A case is (robot name, problem, ordering); hybrid cases take q̈ at the robot's first ``HYBRID_GIVEN`` joints.

Compiling is most of that module's time (LLVM, one core), so while the tests compile their solvers in the
order they use them, ``python tests/compiled_cases.py CASES_JSON`` compiles the same cases in reverse order
into the same cache directory (``GTDYN_CACHE_DIR``) on the other core: each side finds in the cache what the
other has already done, and they meet in the middle. The warm-up only fills the cache; every answer the tests
check comes from a solver loaded in the test process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

HYBRID_GIVEN = 3  # hybrid dynamics: q̈ given at the first three joints, τ at the others
ERD = {"ur5": "ur_description/urdf/ur5_robot.urdf", "panda": "panda_description/urdf/panda.urdf"}

_ROBOTS: dict = {}


def robot_path(name: str) -> str:
    """The file of a bundled robot or of an example-robot-data one (LookupError when that is not installed)."""
    import gtdyn

    if name in ERD:
        from references import erd_path

        try:
            return erd_path(ERD[name])
        except (RuntimeError, FileNotFoundError) as e:
            raise LookupError(f"example-robot-data: {e}") from None
    return gtdyn.bundled_path(name)


def robot(name: str):
    from references import load_quietly

    import gtdyn

    if name not in _ROBOTS:
        _ROBOTS[name] = load_quietly(robot_path(name)) if name in ERD else gtdyn.load_robot(name)
    return _ROBOTS[name]


def qdd_joints(name: str, problem: str):
    return robot(name).joint_names[:HYBRID_GIVEN] if problem == "hybrid" else None


def compile_case(case):
    import gtdyn

    name, problem, ordering = case
    return gtdyn.compile(robot(name), problem, ordering=ordering, qdd_joints=qdd_joints(name, problem))


def start_warm_up(cases) -> subprocess.Popen | None:
    """Compile ``cases`` into the cache in another process, last first; None when there is nothing to do."""
    if len(cases) < 2:
        return None
    return subprocess.Popen([sys.executable, os.path.abspath(__file__), json.dumps([list(c) for c in reversed(cases)])],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ))


def stop_warm_up(process: subprocess.Popen | None) -> None:
    if process is not None and process.poll() is None:
        process.kill()
    if process is not None:
        process.wait()


def _warm(cases) -> None:
    for case in cases:
        try:
            compile_case(tuple(case))
        except Exception:  # noqa: BLE001 - the test process compiles it again and reports what goes wrong
            pass


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    _warm(json.loads(sys.argv[1]))
