"""The compiled forward solvers simulations step with, remembered across runs (``forward_solver``)."""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from gtdyn.compiled import compile as compile_solver
from gtdyn.compiled.cache import robot_fingerprint
from gtdyn.model.robot import Robot

_SOLVERS: OrderedDict = OrderedDict()  # the forward solvers of recent runs, most recent last
_SOLVERS_LOCK = threading.Lock()
REMEMBERED_SOLVERS = 16


def forward_solver(robot: Robot, gravity, checks: bool = True, contacts=None, external_wrenches=None,
                   wrench_axes: str = "local", lanes: bool | None = False):
    """The run's compiled forward solver (ABA; ``lanes``: ``gtdyn.compile``'s, for the plain one: False for
    ``simulate``, None for ``simulate_batch``, whose solver may compile its lane code later), with the run's
    contacts and external wrench frames (their wrenches are inputs). It is remembered across runs, per thread (its
    workspace, and so the native time loop, belongs to the thread that compiled it): loading it from the disk
    cache costs milliseconds, more than a short run's steps."""
    environment = (tuple((c.link, tuple(np.asarray(c.point, float).tolist()), c.kind) for c in contacts or ()),
                   tuple(external_wrenches or ()), wrench_axes if external_wrenches else None)
    key = (robot_fingerprint(robot), tuple(robot.joint_names), tuple(np.asarray(gravity, float)), bool(checks),
           lanes, environment, threading.get_ident())
    with _SOLVERS_LOCK:
        solver = _SOLVERS.get(key)
        if solver is not None:
            _SOLVERS.move_to_end(key)
            return solver
    if contacts or external_wrenches:
        solver = compile_solver(robot, "forward", ordering="aba", gravity=gravity, contacts=contacts, checks=checks,
                                wrench_frames=list(external_wrenches or ()), wrench_axes=wrench_axes)
    else:
        solver = compile_solver(robot, "forward", ordering="aba", gravity=gravity, checks=checks, lanes=lanes)
    with _SOLVERS_LOCK:
        _SOLVERS[key] = solver
        while len(_SOLVERS) > REMEMBERED_SOLVERS:
            _SOLVERS.popitem(last=False)
    return solver
