"""``Query``: everything one dynamics call asks, built and checked once at the boundary by ``ask``.

A query holds the robot, the problem (which joints' q̈ and τ are given, the base's given acceleration or wrench,
the contacts), the state (q, q̇, the floating base's pose and twist), gravity and external wrenches (already in
the bodies' CoM frames). The reference path solves it (``gtdyn.dynamics.reference.solve_query``); a compiled solver
is built for its problem's ``structure`` and packs its values into the workspace (``given_vector``, ``base_inputs``),
falling back to the reference path with ``unpacked_query``; simulation, estimation and the CLI build theirs
here too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from gtdyn.arguments import gravity_vector, joint_positions, joint_vector, robot_argument
from gtdyn.arguments.asked import (
    build_problem,
    check_given_contacts,
    check_transmissions,
    place_contacts,
    with_base,
)
from gtdyn.arguments.base import BaseState, base_state
from gtdyn.arguments.wrenches import external_wrenches_in_com
from gtdyn.equations import GRAVITY
from gtdyn.model.robot import Robot
from gtdyn.problem import Problem

# where each floating-base input starts in ``base_inputs``: the pose (row-major 4×4), the twist, the given
# acceleration (inverse dynamics) or wrench (forward, hybrid)
POSE, TWIST, GIVEN = 0, 16, 22
BASE_INPUTS = GIVEN + 6


@dataclass(frozen=True, eq=False)
class Query:
    """One dynamics call's question, checked. ``external_wrenches[i]`` is the wrench on body i from its
    environment, in its CoM frame; ``base`` is None for a fixed base."""

    robot: Robot
    problem: Problem
    q: np.ndarray
    v: np.ndarray
    gravity: np.ndarray
    base: BaseState | None = None
    external_wrenches: Mapping[int, np.ndarray] = field(default_factory=dict)
    aligned_wrenches: tuple = ()  # (link index, fTcom, [m; f] in world axes at the frame): turned once q is known

    @property
    def kind(self) -> str:
        return self.problem.kind

    def with_problem(self, problem: Problem) -> Query:
        return dataclasses.replace(self, problem=problem)

    def inputs(self) -> dict[str, np.ndarray]:
        """The given numbers by argument name, to name the largest when the equations overflow."""
        named = {"q": self.q, "v": self.v, "gravity": self.gravity,
                 "base_twist": None if self.base is None else self.base.twist, "base_accel": self.problem.base_accel,
                 **{f"external_wrenches[{(self.robot.base if i == 0 else self.robot.links[i - 1]).name}]": w
                    for i, w in self.external_wrenches.items()},
                 "qdd": np.array(list(self.problem.known_qdd.values())),
                 "tau": np.array(list(self.problem.known_tau.values()))}
        return {name: x for name, x in named.items() if x is not None}

    # -- a compiled solver's workspace ---------------------------------------------------------------------

    def given_vector(self) -> np.ndarray:
        """x, a compiled solver's joint input in joint order: q̈ where it is given (all of inverse dynamics'), else τ."""
        known_qdd, known_tau = self.problem.known_qdd, self.problem.known_tau
        if self.kind == "inverse":
            return np.array([known_qdd[j] for j in range(1, self.robot.num_dofs + 1)])
        return np.array([known_qdd[j] if j in known_qdd else known_tau[j] for j in range(1, self.robot.num_dofs + 1)])

    def base_inputs(self) -> np.ndarray:
        """A floating base's inputs to a compiled solver: pose (16, row-major), twist (6), and the given
        acceleration (inverse dynamics) or wrench (forward, hybrid); empty for a fixed base."""
        return _packed(self.base, self.problem)


def ask(robot: Robot, kind: str, q, v, *, qdd=None, tau=None, base_pose=None, base_twist=None, base_accel=None,
        base_wrench=None, contacts=None, gravity=GRAVITY, external_wrenches=None, wrench_axes="local",
        q_names=("q", "v")) -> Query:
    """The boundary: a user's arguments checked against the robot and turned into a ``Query``. ``kind`` is
    "inverse" (``qdd``: every joint), "forward" (``tau``: every joint) or "hybrid" (``qdd``, ``tau``: dicts by
    joint name); the rest as ``gtdyn.inverse_dynamics`` documents them. ``q_names``: the names q and q̇ came as
    (``gtdyn.simulate``'s q0 and v0), for the errors."""
    robot = robot_argument(robot)
    return _with_state(robot, build_problem(robot, kind, qdd, tau), q, v, base_pose, base_twist, base_accel,
                       base_wrench, contacts, gravity, external_wrenches, wrench_axes, q_names)


_NO_TORQUES = Problem("forward")  # a run's start: frozen, and its empty mappings are never written


def run_start(robot: Robot, q0, v0, *, base_pose=None, base_twist=None, contacts=None, gravity=GRAVITY,
              external_wrenches=None, wrench_axes="local") -> Query:
    """A run's start (``gtdyn.simulate``'s q0, v0 and the rest) checked as ``ask`` checks a forward-dynamics
    question, its errors naming q0 and v0. Its problem gives no torque: each step brings its own."""
    robot = robot_argument(robot)
    return _with_state(robot, _NO_TORQUES, q0, v0, base_pose, base_twist, None, None, contacts, gravity,
                       external_wrenches, wrench_axes, ("q0", "v0"))


def run_restart(robot: Robot, q0, v0) -> tuple[np.ndarray, np.ndarray]:
    """Another start of a run whose other arguments ``run_start`` checked (``simulate_batch``'s rows): q0 and v0
    checked as it checks them."""
    q, v = joint_positions(robot, "q0", q0), joint_vector(robot, "v0", v0)
    check_transmissions(robot, q, v, _NO_TORQUES.known_qdd, ("q0", "v0"))
    return q, v


def _with_state(robot: Robot, problem: Problem, q, v, base_pose, base_twist, base_accel, base_wrench, contacts,
                gravity, external_wrenches, wrench_axes, q_names) -> Query:
    """``ask``'s checks of everything but the joints' given q̈ and τ (in ``problem``), in its order."""
    q, v = joint_positions(robot, q_names[0], q), joint_vector(robot, q_names[1], v)
    gravity = gravity_vector(gravity)
    wrenches, aligned = external_wrenches_in_com(robot, external_wrenches, wrench_axes)
    base = base_state(robot, base_pose, base_twist)
    if contacts is not None:  # (a problem has none until placed)
        problem = dataclasses.replace(problem, contacts=place_contacts(robot, contacts))
    problem = with_base(robot, problem, base_accel, base_wrench)
    check_transmissions(robot, q, v, problem.known_qdd, q_names)
    if base is not None:
        check_given_contacts(robot, problem, base.twist)
    return Query(robot, problem, q, v, gravity, base, wrenches, aligned)


def packed_base(robot: Robot, kind: str, base_pose=None, base_twist=None, base_accel=None,
                base_wrench=None) -> np.ndarray:
    """``Query.base_inputs`` straight from the user's base arguments, checked as ``ask`` checks them."""
    base = base_state(robot, base_pose, base_twist)
    return _packed(base, with_base(robot, Problem(kind), base_accel, base_wrench))


def _packed(base: BaseState | None, problem: Problem) -> np.ndarray:
    if base is None:
        return np.zeros(0)
    given = problem.base_accel if problem.kind == "inverse" else problem.base_wrench
    return np.concatenate([base.pose.matrix().ravel(), base.twist, given])


def unpacked_query(robot: Robot, kind: str, qdd_joints, q, v, x, base_inputs=(), *, contacts=None,
                   gravity=GRAVITY, external_wrenches=None, wrench_axes="local") -> Query:
    """The query a compiled solver's packed inputs stand for: x as ``Query.given_vector`` (q̈ at ``qdd_joints`` in
    hybrid dynamics, τ at the other actuated joints), the base's as ``Query.base_inputs``; external wrenches as
    ``ask`` takes them."""
    base = {}
    if robot.floating_base:
        base = {"base_pose": np.reshape(base_inputs[POSE:TWIST], (4, 4)), "base_twist": base_inputs[TWIST:GIVEN],
                "base_accel" if kind == "inverse" else "base_wrench": np.asarray(base_inputs[GIVEN:BASE_INPUTS])}
    if kind == "inverse":
        given = {"qdd": x}
    elif kind == "forward":
        given = {"tau": x}
    else:
        given = {"qdd": {name: x[robot.joint_names.index(name)] for name in qdd_joints},
                 "tau": {j.name: x[j.index - 1] for j in robot.joints if j.name not in qdd_joints and j.actuated}}
    return ask(robot, kind, q, v, **given, **base, contacts=contacts, gravity=gravity,
               external_wrenches=external_wrenches, wrench_axes=wrench_axes)

