"""Contact phases of a floating robot's trajectory: which frames touch the ground over which knots, and what
holds there.

A contact is a point (a frame's origin) on a flat ground at height ``ground`` (world z up) with a force f
(world-aligned axes) from the ground. Over each stance — a run of knots [a, b) — the point lands at a (its height
is the ground's) and stays where it landed (p_k − p_{k−1} = 0, hard); f is unilateral and inside a friction
pyramid (f_z ≥ 0, |f_x|, |f_y| ≤ μ f_z: five inequalities c = A f ≤ 0). Off its stances the point has no force
and stays above the ground (ground − p_z ≤ 0). The inequalities are augmented-Lagrangian terms, as the limits.
"""

from __future__ import annotations

from dataclasses import dataclass

import gtsam
import numpy as np

from gtdyn.planning.limits import AugmentedLagrangian

UP = np.array([0.0, 0.0, 1.0])


@dataclass(frozen=True)
class ContactSchedule:
    """The checked phases: ``frames`` (names), ``stances[c]`` the knot runs [a, b) of frame c, ``friction`` μ,
    ``ground`` the ground's height; ``active[k]`` the frames (indices) in contact at knot k."""

    frames: tuple[str, ...]
    stances: tuple[tuple[tuple[int, int], ...], ...]
    friction: float
    ground: float
    knots: int

    @property
    def active(self) -> list[list[int]]:
        return [[c for c, runs in enumerate(self.stances) if any(a <= k < b for a, b in runs)]
                for k in range(self.knots)]

    def cone(self) -> np.ndarray:
        """A (5 × 3): A f ≤ 0 is the unilateral friction pyramid."""
        mu = self.friction
        return np.array([[0, 0, -1], [1, 0, -mu], [-1, 0, -mu], [0, 1, -mu], [0, -1, -mu]], float)


class ContactInequalities(AugmentedLagrangian):
    """The friction pyramids of the forces in contact and the ground clearance of the points in flight, as
    augmented-Lagrangian terms (one multiplier per row)."""

    def __init__(self, schedule: ContactSchedule):
        super().__init__()
        self.schedule = schedule
        active = schedule.active
        self.cone_rows = sum(5 * len(a) for a in active)
        self.flight = [(k, c) for k in range(schedule.knots) for c in range(len(schedule.frames)) if c not in active[k]]
        self.multipliers = np.zeros(self.cone_rows + len(self.flight))

    def values(self, forces: list[np.ndarray], heights: np.ndarray) -> np.ndarray:
        """c for every row: the pyramids' (knot by knot, contact by contact), then ground − p_z in flight.
        ``forces[k]``: (active contacts, 3); ``heights``: (knots, contacts) of the points."""
        A = self.schedule.cone()
        cones = [(f @ A.T).ravel() for f in forces if len(f)]
        clearance = np.array([self.schedule.ground - heights[k, c] for k, c in self.flight])
        return np.concatenate(cones + [clearance])

    def penalty(self, c: np.ndarray) -> float:
        return self.value(c, self.multipliers)

    def violation(self, c: np.ndarray) -> float:
        return float(np.max(c, initial=0.0))

    def kkt_residual(self, c: np.ndarray) -> float:
        return self.kkt(c, self.multipliers)

    def update_multipliers(self, c: np.ndarray) -> None:
        self.multipliers = self.updated(c, self.multipliers)

    def update(self, c: np.ndarray) -> bool:
        violation = self.violation(c)
        self.update_multipliers(c)
        return self.grow(violation)

    def add_factors(self, graph: gtsam.GaussianFactorGraph, c: np.ndarray, f_keys: dict, s_keys: list,
                    height_rows: dict) -> None:
        """The active rows, linearized (√μ ∂c/∂x δ = −√μ (c + λ/μ)): a pyramid's on its knot's forces, a
        clearance's on its knot's state (``height_rows[k, c]``: ∂p_z/∂s_k)."""
        root, A = np.sqrt(self.mu), self.schedule.cone()
        shifted = c + self.multipliers / self.mu
        row = 0
        for k, contacts in enumerate(self.schedule.active):
            if not contacts:
                continue
            count = 5 * len(contacts)
            active = np.flatnonzero(shifted[row:row + count] > 0.0)
            if active.size:
                J = np.kron(np.eye(len(contacts)), A)[active]
                graph.add(gtsam.JacobianFactor(f_keys[k], root * J, -root * shifted[row + active],
                                               gtsam.noiseModel.Unit.Create(active.size)))
            row += count
        for (k, contact), value in zip(self.flight, shifted[row:], strict=True):
            if value > 0.0:
                graph.add(gtsam.JacobianFactor(s_keys[k], -root * height_rows[k, contact][None, :],
                                               np.array([-root * value]), gtsam.noiseModel.Unit.Create(1)))

    def by_knot(self) -> np.ndarray:
        """The multipliers per knot and frame (knots, frames, 6): a stance's five pyramid rows, then a flight's
        clearance row — a layout a warm start can move along the knots whatever the schedule."""
        out = np.zeros((self.schedule.knots, len(self.schedule.frames), 6))
        row = 0
        for k, contacts in enumerate(self.schedule.active):
            for c in contacts:
                out[k, c, :5] = self.multipliers[row:row + 5]
                row += 5
        for (k, c), lam in zip(self.flight, self.multipliers[row:], strict=True):
            out[k, c, 5] = lam
        return out

    def take(self, by_knot: np.ndarray) -> None:
        """The multipliers from ``by_knot``'s layout (a warm start's; ignored unless its shape is this one's)."""
        if by_knot.shape != (self.schedule.knots, len(self.schedule.frames), 6):
            return
        rows = [by_knot[k, c, :5] for k, contacts in enumerate(self.schedule.active) for c in contacts]
        flight = np.array(self.flight, int).reshape(-1, 2)
        self.multipliers = np.concatenate(rows + [by_knot[flight[:, 0], flight[:, 1], 5]])
