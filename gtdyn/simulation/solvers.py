"""The compiled forward solvers simulations step with, remembered across runs (``forward_solver``)."""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from gtdyn.compiled import compile as compile_solver
from gtdyn.compiled.cache import robot_fingerprint
from gtdyn.model.robot import Robot

REMEMBERED_SOLVERS = 16


class Recent:
    """Compiled objects of recent runs by key, at most ``size`` of them, the least recently used dropped first.
    ``get(key, make)`` makes a missing one outside the lock (a compile takes long)."""

    def __init__(self, size: int = REMEMBERED_SOLVERS):
        self.size = size
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key, make):
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items.move_to_end(key)
                return item
        item = make()
        with self._lock:
            self._items[key] = item
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return item


_SOLVERS = Recent()  # the forward solvers of recent runs


def forward_solver(robot: Robot, gravity, checks: bool = True, contacts=None, external_wrenches=None,
                   wrench_axes: str = "local", lanes: bool | None = False):
    """The run's compiled forward solver (ABA; ``lanes``: ``gtdyn.compile``'s, for the plain one: False for
    ``simulate``, None for ``simulate_batch``, whose solver may compile its lane code later), with the run's
    contacts and external wrench frames (their wrenches are inputs). It is remembered across runs, per thread (its
    workspace, and so the native time loop, belongs to the thread that compiled it): loading it from the disk
    cache costs milliseconds, more than a short run's steps."""
    environment = (tuple((c.link, tuple(np.asarray(c.point, float).tolist()), c.kind) for c in contacts or ()),
                   tuple(external_wrenches or ()), wrench_axes if external_wrenches else None)
    key = (robot_fingerprint(robot), tuple(robot.joint_names), tuple(np.asarray(gravity, float).tolist()), bool(checks),
           lanes, environment, threading.get_ident())

    def make():
        if contacts or external_wrenches:
            return compile_solver(robot, "forward", ordering="aba", gravity=gravity, contacts=contacts,
                                  checks=checks, wrench_frames=list(external_wrenches or ()), wrench_axes=wrench_axes)
        return compile_solver(robot, "forward", ordering="aba", gravity=gravity, checks=checks, lanes=lanes)

    return _SOLVERS.get(key, make)
