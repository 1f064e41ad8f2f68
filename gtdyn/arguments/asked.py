"""What a dynamics call asks, checked against the robot: the builders of ``Problem`` (which joints' q̈ and τ are
given; the base; the contacts), transmission couplings of a state, and external wrenches moved into the
dynamics frames. Every entry point (reference, compiled, simulation, estimation, CLI) builds through these."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import gtsam
import numpy as np

from gtdyn.arguments import bounded_wrench, choice, finite_vector, joint_dict, joint_vector
from gtdyn.arguments.base import refuse_on_fixed_base
from gtdyn.equations import contact_equation
from gtdyn.errors import ArgumentError
from gtdyn.model import base_frame
from gtdyn.model.limits import MAX_LENGTH
from gtdyn.model.robot import Robot
from gtdyn.problem import CONTACT_KINDS, PROBLEM_KINDS, Contact, PlacedContact, Problem


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
        raise ArgumentError(f"qdd, tau: joints {', '.join(both)} are given in both; give each joint's q̈ or its τ, "
                            "not both")
    passive_qdd = [robot.joints[j - 1].name for j in known_qdd if not robot.joints[j - 1].actuated]
    if passive_qdd:
        raise ArgumentError(f"qdd: joints {', '.join(passive_qdd)} are passive (τ = 0), so their q̈ is solved for")
    passive_tau = [robot.joints[j - 1].name for j, t in known_tau.items()
                   if not robot.joints[j - 1].actuated and t != 0]
    if passive_tau:
        raise ArgumentError(f"tau: joints {', '.join(passive_tau)} are passive, so their torque is 0")
    known_tau.update({j.index: 0.0 for j in robot.joints if not j.actuated})
    neither = [joint.name for joint in robot.joints if joint.index not in known_qdd and joint.index not in known_tau]
    if neither:
        raise ArgumentError(f"qdd, tau: joints {', '.join(neither)} are in neither; give each joint's q̈ or its τ")
    return Problem("hybrid", known_qdd, known_tau)


def with_base(robot: Robot, problem: Problem, base_accel=None, base_wrench=None) -> Problem:
    """The base's part of a problem. A floating base has its acceleration ``base_accel`` given (inverse dynamics,
    where it defaults to zero, and hybrid dynamics on request: its wrench is then solved for) or moves under the
    wrench ``base_wrench`` its environment applies (forward dynamics, and hybrid by default; zero: free), both
    [angular; linear] in the root link frame. With contacts (placed on the problem first) the contacts carry the
    robot: a given acceleration leaves the base wrench zero, and the contact forces are solved for."""
    if not robot.floating_base:
        refuse_on_fixed_base(robot, base_accel=base_accel, base_wrench=base_wrench)
        return problem
    given = [name for name, value in (("base_accel", base_accel), ("base_wrench", base_wrench)) if value is not None]
    if len(given) == 2:
        raise ArgumentError("base_accel, base_wrench: give the base's acceleration (its wrench is then solved for) "
                            "or the wrench on it (its acceleration is then solved for), not both")
    if base_accel is None and base_wrench is None and problem.kind == "inverse":
        base_accel = np.zeros(6)
    if base_accel is not None:
        if problem.kind == "forward":
            raise ArgumentError("base_accel: forward dynamics solves for the base acceleration (the base is free); "
                                "use hybrid_dynamics to prescribe it")
        return dataclasses.replace(problem, base_accel=finite_vector("base_accel", base_accel, 6),
                                   base_wrench=np.zeros(6) if problem.contacts else None)
    if problem.kind == "inverse":
        raise ArgumentError("base_wrench: inverse dynamics solves for the base wrench")
    return dataclasses.replace(problem, base_wrench=np.zeros(6) if base_wrench is None else
                               bounded_wrench("base_wrench", base_wrench))


def build_problem(robot: Robot, kind: str, qdd=None, tau=None) -> Problem:
    """The one dispatch over problem kinds: "inverse" (``qdd``: every joint), "forward" (``tau``: every
    joint) or "hybrid" (``qdd`` and ``tau``: dicts by joint name)."""
    given = {"inverse": ("qdd",), "forward": ("tau",), "hybrid": ("qdd", "tau")}
    choice("kind", kind, PROBLEM_KINDS)
    extra = [name for name, value in (("qdd", qdd), ("tau", tau)) if value is not None and name not in given[kind]]
    if extra:
        raise ArgumentError(f"{', '.join(extra)}: not given in {kind} dynamics (it solves for {' and '.join(extra)})")
    if kind == "inverse":
        return inverse_problem(robot, qdd)
    if kind == "forward":
        return forward_problem(robot, tau)
    return hybrid_problem(robot, {} if qdd is None else qdd, {} if tau is None else tau)


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
            raise ArgumentError(f"{where}: '{contact.link}' is welded to the world, so a contact on it constrains "
                                "nothing")
        point = finite_vector(f"{where}.point", contact.point, 3)
        if np.max(np.abs(point)) > MAX_LENGTH:  # else the dynamics overflow, and the error names another input
            raise ArgumentError(f"{where}.point: {np.max(np.abs(point)):g} m from the frame is beyond the "
                                f"±{MAX_LENGTH:g} m gtdyn accepts for any length")
        i, iTf = robot.frame_in_body(contact.link)
        iTc = iTf.compose(gtsam.Pose3(gtsam.Rot3(), point))
        placed.append(PlacedContact(contact, k, CONTACT_KINDS[contact.kind], i, iTc))
    return tuple(placed)


# |q_dependent − Σ ratio·q − offset| (and the same for q̇, q̈) accepted, relative to the joints' magnitude
TRANSMISSION_TOLERANCE = 1e-9


def check_transmissions(robot: Robot, q, v, known_qdd: Mapping[int, float] | None = None, names=("q", "v")) -> None:
    """ArgumentError naming the joint if (q, q̇) — or the given q̈ (by joint index), where every q̈ of a
    transmission is given — break a transmission: the dynamics are only defined on the coupled motions.
    ``names``: the arguments q and q̇ came as (``gtdyn.simulate``'s q0 and v0)."""
    for t in robot.transmissions:
        joints = [t.dependent, *(k for k, _ in t.terms)]
        checks = [(names[0], q, True), (names[1], v, False)]
        if known_qdd and all(j in known_qdd for j in joints):
            checks.append(("qdd", np.array([known_qdd.get(j, 0.0) for j in range(1, robot.num_dofs + 1)]), False))
        for name, x, position in checks:
            expected = t.follow(x, position)
            if abs(x[t.dependent - 1] - expected) > TRANSMISSION_TOLERANCE * (1.0 + abs(expected)):
                raise ArgumentError(
                    f"{name}: joint '{robot.joints[t.dependent - 1].name}' is coupled ({t.name}) and must be "
                    f"{expected:.9g}, got {x[t.dependent - 1]:.9g}")


def qdd_joint_names(robot: Robot, problem: str, qdd_joints) -> tuple[str, ...]:
    if problem != "hybrid":
        if qdd_joints:
            raise ArgumentError(f"qdd_joints: only hybrid dynamics takes qdd_joints, not {problem}")
        return ()
    if qdd_joints is None or isinstance(qdd_joints, str):
        raise ArgumentError("qdd_joints: hybrid dynamics needs the names of the joints whose q̈ is given (a list)")
    try:
        names = tuple(qdd_joints)
    except TypeError:  # as hybrid_dynamics names a qdd that is not a dict
        raise ArgumentError(f"qdd_joints: expected a list of joint names, got {type(qdd_joints).__name__}") from None
    unknown = [n for n in names if n not in robot.joint_names]
    if unknown:
        raise ArgumentError(f"qdd_joints: unknown joints {', '.join(map(str, unknown))} "
                            f"(joints: {', '.join(robot.joint_names)})")
    return names


def check_given_contacts(robot: Robot, problem: Problem, base_twist) -> None:
    """A contact on a floating base whose acceleration is given constrains only given data (its equation has no
    unknown left, ``gtdyn.dynamics.graph.constrained_contacts``): the base's motion must keep the contact still,
    its acceleration constraint holding to 1e-9 relative, or it is an ArgumentError."""
    if problem.base_accel is None:
        return
    for contact in problem.contacts:
        if contact.body != 0:
            continue
        eq = contact_equation(contact.iTc, contact.dim, base_frame.twist_to_com(robot) @ base_twist)
        A0 = base_frame.twist_to_com(robot) @ problem.base_accel
        gap = float(np.max(np.abs(eq.error({"A": A0}))))
        if not gap <= 1e-9 * (1.0 + float(np.max(np.abs(eq.rhs))) + float(np.max(np.abs(A0)))):
            raise ArgumentError(f"base_accel: contact {contact.number} holds the floating base at "
                                f"'{contact.contact.link}', but the given base acceleration and twist move that "
                                f"point (acceleration off by {gap:.3g}); give a base motion that keeps it still, or "
                                "leave the base acceleration to be solved for (hybrid_dynamics)")
