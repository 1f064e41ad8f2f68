"""What a dynamics call asks for: which joint quantities are given (``Problem``), and the builders that check
a user's inverse, forward or hybrid request against the robot and turn it into one."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

import gtsam
import numpy as np

from gtdyn.arguments import finite_vector, joint_dict, joint_vector
from gtdyn.errors import ArgumentError
from gtdyn.model.robot import Robot
from gtdyn.model.limits import MAX_LENGTH

PROBLEM_KINDS = ("inverse", "forward", "hybrid")


CONTACT_KINDS = {"point": 3, "surface": 6}


@dataclass(frozen=True)
class Contact:
    """A rigid bilateral contact of a link with the environment, for ``contacts=[...]`` of the dynamics calls.

    ``link``: a link name, or any frame merged into one (a URDF foot link behind a fixed joint); ``point``:
    the contact point in that frame's coordinates; the contact frame sits there with that frame's axes.
    ``kind``: "point" — the point's classical acceleration is zero (3 constraints) and the environment
    pushes with a force (variable ``c<k>``, 3); "surface" — the contact frame's spatial acceleration is zero
    (6 constraints) and the environment applies a wrench (``C<k>``, 6). Contacts are numbered 1, 2, … in the
    order given.
    """

    link: str
    point: tuple[float, float, float] = (0.0, 0.0, 0.0)
    kind: str = "point"


@dataclass(frozen=True, eq=False)
class PlacedContact:
    """A Contact on a robot: its number k, its dimension (3 or 6), the index of the body it is on (0: a
    floating base) and ``iTc``, the contact frame in that body's dynamics frame."""

    contact: Contact
    number: int
    dim: int
    body: int
    iTc: gtsam.Pose3


def place_contacts(robot: Robot, contacts) -> tuple[PlacedContact, ...]:
    """Check ``contacts`` (a list of ``Contact``) against the robot and place each on its body."""
    if contacts is None:
        return ()
    if isinstance(contacts, Contact) or not isinstance(contacts, (list, tuple)):
        raise ArgumentError(f"contacts: expected a list of gtdyn.Contact, got {type(contacts).__name__}")
    placed = []
    for k, contact in enumerate(contacts, start=1):
        where = f"contacts[{k - 1}]"
        if not isinstance(contact, Contact):
            raise ArgumentError(f"{where}: expected a gtdyn.Contact, got {type(contact).__name__}")
        # names first: a list would fail the look-ups below as unhashable
        if not isinstance(contact.link, str):
            raise ArgumentError(f"{where}.link: expected a link or frame name (a string), got {contact.link!r}")
        if not isinstance(contact.kind, str):
            raise ArgumentError(f"{where}.kind: expected one of {', '.join(CONTACT_KINDS)}, got {contact.kind!r}")
        if contact.kind not in CONTACT_KINDS:
            raise ArgumentError(f"{where}: kind '{contact.kind}' is not one of {', '.join(CONTACT_KINDS)}")
        if contact.link not in robot.frames:
            raise ArgumentError(f"{where}: unknown link or frame '{contact.link}' (links: {', '.join(robot.frames)})")
        body, bTf = robot.frames[contact.link]
        if robot.is_fixed(body):
            raise ArgumentError(f"{where}: '{contact.link}' is welded to the world, so a contact on it constrains nothing")
        point = finite_vector(f"{where}.point", contact.point, 3)
        if np.max(np.abs(point)) > MAX_LENGTH:  # else the dynamics overflow, and the error names another input
            raise ArgumentError(f"{where}.point: {np.max(np.abs(point)):g} m from the frame is beyond the ±{MAX_LENGTH:g} "
                                "m gtdyn accepts for any length")
        link = robot.link(body)
        iTc = link.lTcom.inverse().compose(bTf).compose(gtsam.Pose3(gtsam.Rot3(), point))
        placed.append(PlacedContact(contact, k, CONTACT_KINDS[contact.kind], link.index, iTc))
    return tuple(placed)


@dataclass(frozen=True)
class Problem:
    """Which joint quantities are given, for which kind of problem: ``known_qdd[j]`` / ``known_tau[j]`` by joint
    index (1..m). ``kind`` ("inverse", "forward" or "hybrid") is what the user asked for; it decides which
    orderings apply and is never guessed from the known sets.

    On a tree every joint has exactly one of the two given, except passive joints (τ = 0) whose q̈ is
    prescribed too in inverse dynamics. Passive joints of closed loops have τ = 0 given; in inverse dynamics
    of a loop their q̈ is given too (the motion is prescribed for every joint). ``planar[j]`` is the plane
    normal (world) of a planar loop closed by joint j: its planar factor; ``minimum_torque`` lists joints whose
    unknown τ gets a soft minimum-torque factor.

    A floating base has exactly one of ``base_accel`` (its acceleration given: the base wrench is solved
    for) and ``base_wrench`` (the wrench its environment applies, given: its acceleration is solved for), both
    [angular; linear] in the root link frame; a fixed base has neither (with contacts, both: the contacts
    carry the robot). ``contacts`` are rigid contacts with the environment, their forces unknown;
    ``minimum_contact`` lists those whose force gets a soft minimum-norm factor.
    """

    kind: str
    known_qdd: Mapping[int, float] = field(default_factory=dict)
    known_tau: Mapping[int, float] = field(default_factory=dict)
    planar: Mapping[int, np.ndarray] = field(default_factory=dict)
    minimum_torque: tuple[int, ...] = ()
    base_accel: np.ndarray | None = None
    base_wrench: np.ndarray | None = None
    contacts: tuple[PlacedContact, ...] = ()
    minimum_contact: tuple[int, ...] = ()  # contact numbers whose unknown gets a soft minimum-norm factor

    def __post_init__(self):
        if self.kind not in PROBLEM_KINDS:
            raise ArgumentError(f"problem: '{self.kind}' is not one of {', '.join(PROBLEM_KINDS)}")


def inverse_problem(robot: Robot, qdd) -> Problem:
    """Every q̈ given; passive joints' τ = 0 given; the actuated τ unknown."""
    qdd = joint_vector(robot, "qdd", qdd)
    return Problem("inverse", known_qdd={j: qdd[j - 1] for j in range(1, robot.num_dofs + 1)},
                   known_tau={j.index: 0.0 for j in robot.joints if not j.actuated})


def forward_problem(robot: Robot, tau) -> Problem:
    """Every τ given (0 at passive joints); every q̈ unknown."""
    tau = joint_vector(robot, "tau", tau)
    check_passive_torques(robot, "tau", tau)
    return Problem("forward", known_tau={j: tau[j - 1] for j in range(1, robot.num_dofs + 1)})


def check_passive_torques(robot: Robot, name: str, tau: np.ndarray) -> None:
    """ArgumentError naming ``name`` if ``tau`` (one per joint) is not zero at a passive joint."""
    passive = [j.name for j in robot.joints if not j.actuated and tau[j.index - 1] != 0.0]
    if passive:
        raise ArgumentError(f"{name}: joints {', '.join(passive)} are passive, so their torque is 0")


def hybrid_problem(robot: Robot, qdd: Mapping[str, float], tau: Mapping[str, float]) -> Problem:
    """q̈ given at some actuated joints, τ at the others; passive joints have τ = 0 and unknown q̈."""
    known_qdd = joint_dict(robot, "qdd", qdd)
    known_tau = joint_dict(robot, "tau", tau)
    both = [robot.joints[j - 1].name for j in known_qdd if j in known_tau]
    if both:
        raise ArgumentError(f"qdd, tau: joints {', '.join(both)} are given in both; give each joint's q̈ or its τ, not both")
    passive_qdd = [robot.joints[j - 1].name for j in known_qdd if not robot.joints[j - 1].actuated]
    if passive_qdd:
        raise ArgumentError(f"qdd: joints {', '.join(passive_qdd)} are passive (τ = 0), so their q̈ is solved for")
    passive_tau = [robot.joints[j - 1].name for j, t in known_tau.items() if not robot.joints[j - 1].actuated and t != 0]
    if passive_tau:
        raise ArgumentError(f"tau: joints {', '.join(passive_tau)} are passive, so their torque is 0")
    known_tau.update({j.index: 0.0 for j in robot.joints if not j.actuated})
    neither = [joint.name for joint in robot.joints if joint.index not in known_qdd and joint.index not in known_tau]
    if neither:
        raise ArgumentError(f"qdd, tau: joints {', '.join(neither)} are in neither; give each joint's q̈ or its τ")
    return Problem("hybrid", known_qdd, known_tau)


def with_base(robot: Robot, problem: Problem, base_accel=None) -> Problem:
    """The base's part of a problem. A floating base has its acceleration ``base_accel`` given (inverse dynamics,
    where it defaults to zero, and hybrid dynamics on request: its wrench is then solved for) or moves freely
    (forward dynamics, and hybrid by default: no wrench on it but ``external_wrenches``). With contacts
    (placed on the problem first) the contacts carry the robot: a given acceleration leaves the base wrench
    zero, and the contact forces are solved for."""
    if not robot.floating_base:
        if base_accel is not None:
            raise ArgumentError(f"base_accel: robot '{robot.name}' has a fixed base; load it with base='floating' "
                                "to give its base a motion")
        return problem
    if base_accel is None and problem.kind == "inverse":
        base_accel = np.zeros(6)
    if base_accel is not None:
        if problem.kind == "forward":
            raise ArgumentError("base_accel: forward dynamics solves for the base acceleration (the base is free); "
                                "use hybrid_dynamics to prescribe it")
        return dataclasses.replace(problem, base_accel=finite_vector("base_accel", base_accel, 6),
                                   base_wrench=np.zeros(6) if problem.contacts else None)
    return dataclasses.replace(problem, base_wrench=np.zeros(6))


def build_problem(robot: Robot, kind: str, qdd=None, tau=None) -> Problem:
    """The one dispatch over problem kinds: "inverse" (``qdd``: every joint), "forward" (``tau``: every
    joint) or "hybrid" (``qdd`` and ``tau``: dicts by joint name)."""
    given = {"inverse": ("qdd",), "forward": ("tau",), "hybrid": ("qdd", "tau")}
    if not isinstance(kind, str) or kind not in given:
        raise ArgumentError(f"kind: {kind!r} is not one of {', '.join(given)}")
    extra = [name for name, value in (("qdd", qdd), ("tau", tau)) if value is not None and name not in given[kind]]
    if extra:
        raise ArgumentError(f"{', '.join(extra)}: not given in {kind} dynamics (it solves for {' and '.join(extra)})")
    if kind == "inverse":
        return inverse_problem(robot, qdd)
    if kind == "forward":
        return forward_problem(robot, tau)
    return hybrid_problem(robot, qdd or {}, tau or {})
