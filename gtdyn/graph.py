"""The transcriber: a Robot, its kinematic state and which variables are known → a linear factor graph.

Given q and q̇ (and so every pose and twist), eq. 5–7 are linear in V̇, F, q̈ and τ. Each equation becomes one
``gtsam.JacobianFactor``; variables that the problem gives (q̈ of inverse-dynamics joints, τ of
forward-dynamics joints) move to the right-hand side. The result is the paper's *simplified* graph
(Fig. 4a, 6a, 9a): only unknowns are nodes.

Every equation is exact. The system is square (13 equations and 13 unknowns per joint), so a determined
system is solved exactly whatever the row weights; ``constrained=True`` marks the rows as GTSAM hard
constraints (``noiseModel.Constrained``), ``False`` gives them unit weight so that they can be eliminated
by Householder QR, which is backward stable in every variable ordering (see ``gtdyn.dynamics.eliminate``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import gtsam
import numpy as np

from gtdyn import keys
from gtdyn.equations import (LinearEquation, gravity_wrench, minimum_torque_equation, planar_equation, torque_equation,
                             twist_accel_equation, wrench_equation)
from gtdyn.factors.base import hard
from gtdyn.kinematics import KinematicState
from gtdyn.robot import Robot


@dataclass(frozen=True)
class Problem:
    """Which joint quantities are given: ``known_qdd[j]`` / ``known_tau[j]`` by joint index (1..m).

    On a tree every joint has exactly one of the two given. Passive joints of closed loops have τ = 0 given;
    in inverse dynamics of a loop their q̈ is given too (the motion is prescribed for every joint).
    ``planar[j]`` is the plane normal (world) of a planar loop closed by joint j: its planar factor;
    ``minimum_torque`` lists joints whose unknown τ gets a soft minimum-torque factor. ``kind`` is what the
    user asked for; left empty, it is read off the known sets (all q̈ given: inverse; no q̈: forward).
    """

    known_qdd: Mapping[int, float] = field(default_factory=dict)
    known_tau: Mapping[int, float] = field(default_factory=dict)
    planar: Mapping[int, np.ndarray] = field(default_factory=dict)
    minimum_torque: tuple[int, ...] = ()
    problem_kind: str = ""

    @property
    def kind(self) -> str:
        if self.problem_kind:
            return self.problem_kind
        if not self.known_tau:
            return "inverse"
        if not self.known_qdd:
            return "forward"
        return "hybrid"


class Key(int):
    """Marks an equation role as an unknown variable (a gtsam key) rather than a known value."""


def noise(dim: int, constrained: bool) -> gtsam.noiseModel.Base:
    """GTSAM's hard-constraint model, or unit weights for an exact equation in a square system."""
    return hard(dim) if constrained else gtsam.noiseModel.Unit.Create(dim)


def linear_factor(terms: list[tuple[int, np.ndarray]], rhs: np.ndarray, constrained: bool = False) -> gtsam.JacobianFactor:
    """A JacobianFactor Σ A_k x_k = rhs on any number of keys.

    GTSAM's Python constructors stop at three keys; beyond that (a link with several child joints) the
    factor is made by linearising a CustomFactor with the same constant blocks, which is exact.
    """
    model = noise(len(rhs), constrained)
    if len(terms) <= 3:
        flat = [x for key, A in terms for x in (key, A)]
        return gtsam.JacobianFactor(*flat, rhs, model)

    blocks = [A for _, A in terms]

    def error(this, values, H):
        if H is not None:
            for k, A in enumerate(blocks):
                H[k] = A
        return sum(A @ values.atVector(key) for key, A in terms) - rhs

    factor = gtsam.CustomFactor(model, [key for key, _ in terms], error)
    at_zero = gtsam.Values()
    for key, A in terms:
        at_zero.insert(key, np.zeros(A.shape[1]))
    return gtsam.JacobianFactor(factor.linearize(at_zero))


def add_equation(graph: gtsam.GaussianFactorGraph, eq: LinearEquation, roles: dict, constrained: bool,
                  column_norms: dict | None, soft: bool = False) -> None:
    """Add eq as a linear factor. ``roles`` maps each coefficient name to a ``Key`` (an unknown) or to a known
    value, which moves to the right-hand side. Squared column norms of the unknowns accumulate in
    ``column_norms`` (for the pivot check of ``gtdyn.dynamics.eliminate``)."""
    rhs = np.array(eq.rhs, dtype=float)
    terms = []
    for name, coefficient in eq.coefficients.items():
        role = roles[name]
        if isinstance(role, Key):
            block = np.asarray(coefficient, dtype=float)
            terms.append((int(role), block))
            if column_norms is not None:
                column_norms[int(role)] = column_norms.get(int(role), 0.0) + np.einsum("ij,ij->j", block, block)
        else:
            rhs = rhs - coefficient @ np.atleast_1d(role)
    if soft:  # a least-squares preference, never a constraint
        flat = [x for key, A in terms for x in (key, A)]
        graph.push_back(gtsam.JacobianFactor(*flat, rhs, gtsam.noiseModel.Unit.Create(len(rhs))))
    else:
        graph.push_back(linear_factor(terms, rhs, constrained))


def dynamics_graph(robot: Robot, kin: KinematicState, problem: Problem, gravity: np.ndarray,
                   external_wrenches: Mapping[int, np.ndarray] | None = None,
                   constrained: bool = False, column_norms: dict | None = None) -> gtsam.GaussianFactorGraph:
    """The linear dynamics graph: eq. 5 and 7 per joint, eq. 6 per moving link, a planar factor per planar
    loop and soft minimum-torque factors where the problem asks for them.

    ``external_wrenches[i]`` is a wrench on link i from its environment, in link i's CoM frame. If given,
    ``column_norms`` receives each unknown's squared column norms (hard equations only).
    """
    external_wrenches = external_wrenches or {}
    graph = gtsam.GaussianFactorGraph()
    zero = np.zeros(6)
    for joint in robot.joints:
        j, p = joint.index, robot.link(joint.parent).index
        c = robot.link(joint.child).index
        S = joint.screw_axis
        # eq. 5: the fixed base has V̇_0 = 0 (gravity is explicit in eq. 6); a loop may close onto it (c == 0)
        accel = twist_accel_equation(kin.cTp[j], S, kin.V[c], kin.v[j - 1])
        add_equation(graph, accel, {
            "A_c": zero if c == 0 else Key(keys.twist_accel_key(c)),
            "A_p": zero if p == 0 else Key(keys.twist_accel_key(p)),
            "a": problem.known_qdd[j] if j in problem.known_qdd else Key(keys.joint_accel_key(j)),
        }, constrained, column_norms)
        # eq. 7
        add_equation(graph, torque_equation(S), {
            "F": Key(keys.wrench_key(j)),
            "tau": problem.known_tau[j] if j in problem.known_tau else Key(keys.torque_key(j)),
        }, constrained, column_norms)
    for link in robot.links:
        i = link.index
        into, out_of = robot.joints_into(link.name), robot.joints_out_of(link.name)
        eq = wrench_equation(link.G, kin.V[i], [kin.cTp[c.index] for c in out_of],
                             gravity_wrench(link.mass, kin.wT[i], gravity), external_wrenches.get(i, zero), len(into))
        roles = {"A": Key(keys.twist_accel_key(i))}
        roles.update({f"F_in{k}": Key(keys.wrench_key(jt.index)) for k, jt in enumerate(into)})
        roles.update({f"F_out{k}": Key(keys.wrench_key(jt.index)) for k, jt in enumerate(out_of)})
        add_equation(graph, eq, roles, constrained, column_norms)
    for j, normal in problem.planar.items():
        child = robot.link(robot.joints[j - 1].child).index
        add_equation(graph, planar_equation(kin.wT[child], normal), {"F": Key(keys.wrench_key(j))}, constrained,
                      column_norms)
    for j in problem.minimum_torque:
        add_equation(graph, minimum_torque_equation(), {"tau": Key(keys.torque_key(j))}, constrained, None, soft=True)
    return graph
