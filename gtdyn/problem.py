"""What a dynamics call asks for, as data: which joint quantities are given (``Problem``) and the contacts it
holds. Built and checked only at the input boundary (``gtdyn.arguments.asked``); every path reads it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import gtsam
import numpy as np

from gtdyn.errors import ArgumentError

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


@dataclass(frozen=True)
class FrameGoal:
    """Where ``frame`` (a link or a frame merged into one) must be at ``knot`` of a planned trajectory (default the
    last; negative counts from the end): ``position`` (3, world, m) and/or ``rotation`` (3×3, world ← frame); at
    least one (``gtdyn.optimize_trajectory(..., frame_goals=[...])``)."""

    frame: str
    position: object = None
    rotation: object = None
    knot: int = -1


@dataclass(frozen=True, eq=False)
class PlacedContact:
    """A Contact on a robot: its number k, its dimension (3 or 6), the index of the body it is on (0: a
    floating base) and ``iTc``, the contact frame in that body's dynamics frame."""

    contact: Contact
    number: int
    dim: int
    body: int
    iTc: gtsam.Pose3


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

    @property
    def structure(self) -> tuple:
        """What fixes the graph's structure, hashable: the kind, which joints have q̈ and τ given, the planar and
        minimum-norm factors, which of a floating base's acceleration and wrench is given, and the contacts. Two
        problems with one structure have the same unknowns, equations and sparsity, whatever the values: the key
        of remembered orderings and of compiled plans."""
        return (self.kind, frozenset(self.known_qdd), frozenset(self.known_tau), frozenset(self.planar),
                self.minimum_torque, self.base_accel is None, self.base_wrench is None,
                tuple((c.body, c.dim, c.iTc.matrix().tobytes()) for c in self.contacts), self.minimum_contact)


def answer_layout(num_dofs: int, floating_base: bool, problem: Problem) -> tuple[tuple[str, int], ...]:
    """The parts of a compiled solver's answer, in order, with their lengths: a floating base's solved quantity
    ("base_wrench" when its acceleration is given, else "base_accel"; root link frame), then "qdd" (forward,
    hybrid) and "tau" (inverse, hybrid) by joint, then "contacts" (each contact's force or wrench in its own
    frame, in contact order). The generated code, the solver and ``DynamicsResult.packed`` all follow it."""
    parts = [("base_wrench" if problem.base_accel is not None else "base_accel", 6)] if floating_base else []
    parts += [(name, num_dofs)
              for name in {"inverse": ("tau",), "forward": ("qdd",), "hybrid": ("qdd", "tau")}[problem.kind]]
    if problem.contacts:
        parts.append(("contacts", sum(c.dim for c in problem.contacts)))
    return tuple(parts)
