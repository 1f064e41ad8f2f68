"""The on-disk cache of compiled solvers: object code and what the solver needs around it, keyed by everything
that decides the code — robot content, problem, ordering, gravity, gtdyn version and the host CPU.

The directory is ``$GTDYN_CACHE_DIR``, else the platform's user cache folder (``platformdirs``: on Linux
``$XDG_CACHE_HOME/gtdyn`` or ``~/.cache/gtdyn``, on macOS ``~/Library/Caches/gtdyn``, on Windows under
``%LOCALAPPDATA%``) with ``compiled`` inside. An unwritable directory only means no cache. The cache keeps at
most ``$GTDYN_CACHE_MAX_MB`` (default ``MAX_MB``) megabytes: storing a solver beyond that removes the least
recently used ones.

Trust: a cached solver is a pickle, and loading a pickle runs code, so only a folder and files the user alone
can write are used. The folder is created private (0700); a folder or file that another user owns, or that
the group or others may write, is neither loaded from nor stored to — a ``CacheWarning`` says so, once per
folder, and solvers compile in memory instead. (Windows has no such mode bits: there the folder's ACLs decide.)
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import pathlib
import pickle
import stat
import tempfile
import warnings
import weakref

import numpy as np

from gtdyn.errors import CacheWarning
from gtdyn.model.robot import Robot

FORMAT = 2  # bump when the generated code or the cached record changes meaning (2: the object code in parts)


MAX_MB = 512  # a Talos solver takes a few MB; hundreds of solvers fit


def directory() -> pathlib.Path:
    if os.environ.get("GTDYN_CACHE_DIR"):
        return pathlib.Path(os.environ["GTDYN_CACHE_DIR"])
    from platformdirs import user_cache_dir

    return pathlib.Path(user_cache_dir("gtdyn", appauthor=False)) / "compiled"


def limit_bytes() -> float:
    """The most the cache folder may hold: ``$GTDYN_CACHE_MAX_MB`` megabytes (default ``MAX_MB``)."""
    try:
        return float(os.environ.get("GTDYN_CACHE_MAX_MB", MAX_MB)) * 2**20
    except ValueError:  # a malformed setting keeps the default rather than failing a compile
        return MAX_MB * 2**20


def robot_fingerprint(robot: Robot) -> bytes:
    """Every number and name of the robot that the dynamics use (not the file's formatting); worked out once per
    robot, which is immutable (its arrays read-only): every ``simulate`` asks for it, to find its solver."""
    known = _FINGERPRINTS.get(robot)
    if known is None:
        known = _FINGERPRINTS[robot] = _fingerprint(robot)
    return known


_FINGERPRINTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a Robot hashes by identity


def _fingerprint(robot: Robot) -> bytes:
    parts: list[bytes] = [robot.name.encode(), b"floating" if robot.floating_base else b"fixed"]
    for link in (robot.base, *robot.links):
        parts += [link.name.encode(), np.float64(link.mass).tobytes(), np.asarray(link.inertia, float).tobytes(),
                  link.lTcom.matrix().tobytes()]
    for joint in robot.joints:  # the limits bound the sample states that choose the pivots
        parts += [(f"{joint.name}|{joint.type}|{joint.parent}|{joint.child}|{joint.actuated}|"
                   f"{joint.closes_loop}").encode(),
                  np.asarray(joint.screw_axis, float).tobytes(), joint.rest_pose.matrix().tobytes(),
                  np.array([joint.armature, joint.lower, joint.upper], float).tobytes()]
    for t in robot.transmissions:
        parts += [f"{t.name}|{t.dependent}|{[j for j, _ in t.terms]}".encode(),
                  np.array([r for _, r in t.terms] + [t.offset], float).tobytes()]
    return b"\0".join(parts)


# The modules whose source decides the generated code (the ordering is part of the key by value).
CODE = ("compiled", "equations.py", "spatial.py", "keys.py", "problem.py", "arguments", "dynamics/graph.py",
        "dynamics/reference.py", "kinematics", "linear/elimination.py", "linear/system.py", "model")


@functools.cache
def _installed_version() -> str:
    """gtdyn's installed version, read once: reading the package metadata took a third of a compile from the
    cache."""
    from importlib import metadata

    try:
        return metadata.version("gtdyn")
    except metadata.PackageNotFoundError:
        return "unknown"


def code_fingerprint() -> str:
    """gtdyn's version and a hash of the source that writes the code (``CODE``): a change there invalidates."""
    version = _installed_version()
    global _CODE
    if _CODE is None:
        digest = hashlib.sha256()
        root = pathlib.Path(__file__).parents[1]
        for part in CODE:
            for path in sorted((root / part).rglob("*.py")) if (root / part).is_dir() else [root / part]:
                digest.update(path.read_bytes())
        _CODE = digest.hexdigest()
    return f"{version}|{_CODE}"


_CODE = None


def problem_signature(problem) -> tuple:
    """A ``Problem``'s structure as a stable, printable key, with the values the generated code bakes in: the
    planar loops' normals (rounded) and where each contact sits."""
    return (problem.kind, sorted(problem.known_qdd), sorted(problem.known_tau),
            sorted((j, tuple(np.round(n, 12))) for j, n in problem.planar.items()), problem.minimum_torque,
            problem.base_accel is None, problem.base_wrench is None,
            [(c.body, c.contact.kind, c.iTc.matrix().tobytes()) for c in problem.contacts])


def key(*parts) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part if isinstance(part, bytes) else repr(part).encode())
        digest.update(b"\1")
    return digest.hexdigest()


def compiled_ir(ir: str, target: str, compile_ir) -> bytes:
    """``compile_ir(ir)``'s object code for the CPU ``target``, kept under the IR text's own hash: for small
    programs written the same way every time (the native time loop, a floating base's pose step), so a new process
    loads them rather than compiling them again."""
    name = key("object code", hashlib.sha256(ir.encode()).digest(), target, code_fingerprint())
    record = load(name)
    if record is not None and isinstance(record.get("object"), bytes):
        return record["object"]
    obj = compile_ir(ir)
    store(name, {"object": obj})
    return obj


def trusted(path: pathlib.Path) -> bool:
    """Whether ``path`` belongs to this user and neither group nor others may write it (True where the platform
    has no such notion)."""
    if not hasattr(os, "getuid"):
        return True
    try:
        status = path.stat()
    except OSError:
        return False
    return status.st_uid == os.getuid() and not status.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


_WARNED: set[str] = set()


def _distrust(folder: pathlib.Path, path: pathlib.Path) -> None:
    """A CacheWarning naming ``path`` (the folder or a file in it), once per folder."""
    if str(folder) not in _WARNED:
        _WARNED.add(str(folder))
        warnings.warn(f"{path}: the compile cache is writable by others or belongs to someone else; gtdyn does not "
                      "load or store compiled solvers there (a cached solver is a pickle: loading one runs code) "
                      "and compiles in memory instead; make it private (chmod 700) or set GTDYN_CACHE_DIR",
                      CacheWarning, stacklevel=4)


def entry(name: str) -> pathlib.Path:
    """The file that holds (or would hold) the cached solver ``name``."""
    return directory() / f"{name}.pkl"


def load(name: str) -> dict | None:
    folder, path = directory(), entry(name)
    if not path.exists():
        return None
    if not (trusted(folder) and trusted(path)):
        _distrust(folder, path if trusted(folder) else folder)
        return None
    try:
        with open(path, "rb") as f:
            record = pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError):
        return None
    if not (isinstance(record, dict) and record.get("format") == FORMAT):
        return None
    with contextlib.suppress(OSError):  # used now: the last to be pruned
        os.utime(path)
    return record


def store(name: str, record: dict) -> pathlib.Path | None:
    folder = directory()
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        folder.mkdir(mode=0o700, exist_ok=True)
        if not trusted(folder):
            _distrust(folder, folder)
            return None
        with tempfile.NamedTemporaryFile("wb", dir=folder, delete=False, suffix=".tmp") as f:
            pickle.dump({**record, "format": FORMAT}, f)
        os.replace(f.name, entry(name))  # atomic: a concurrent reader sees all or nothing
    except OSError:
        return None
    prune(folder, keep=entry(name))
    return entry(name)


def usage() -> tuple[int, int]:
    """How many solvers the cache folder holds, and their bytes (0, 0 before the first is stored)."""
    folder = directory()
    sizes = [path.stat().st_size for path in folder.glob("*.pkl")] if folder.is_dir() else []
    return len(sizes), sum(sizes)


def prune(folder: pathlib.Path, keep: pathlib.Path | None = None) -> list[pathlib.Path]:
    """Remove the least recently used solvers (by the time they were last stored or loaded) until the folder
    holds at most ``$GTDYN_CACHE_MAX_MB``; ``keep`` (the one just stored) stays. Returns what was removed."""
    entries = []
    for path in folder.glob("*.pkl"):
        with contextlib.suppress(OSError):  # another process may prune at the same time
            status = path.stat()
            entries.append((status.st_mtime, status.st_size, path))
    total, limit, removed = sum(size for _, size, _ in entries), limit_bytes(), []
    for _, size, path in sorted(entries, key=lambda entry: entry[0]):
        if total <= limit:
            break
        if path == keep:
            continue
        with contextlib.suppress(OSError):
            path.unlink()
            removed.append(path)
        total -= size
    return removed
