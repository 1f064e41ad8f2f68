"""Featherstone's three-pass hybrid dynamics (paper 001 §VI-A; Featherstone, RBDA §9.2), built from three
eliminations of our own graphs, as the baseline that a single hybrid elimination is compared with.

With I the joints whose q̈ is given (inverse-dynamics joints) and F those whose τ is given:

1. inverse dynamics with q̈_I as given and q̈_F = 0 gives the bias torques τ⁰ (velocity, gravity and the
   prescribed accelerations' effect);
2. forward dynamics of the F joints with the I joints locked: M_FF q̈_F = τ_F − τ⁰_F, i.e. the hybrid graph at
   q̇ = 0, without gravity or external wrenches, with q̈_I = 0 and τ_F − τ⁰_F given (ABA ordering);
3. inverse dynamics with every q̈ known gives τ_I.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from gtdyn.arguments import covered, robot_argument
from gtdyn.arguments.query import ask
from gtdyn.dynamics.reference import solve_query
from gtdyn.dynamics.result import DynamicsResult
from gtdyn.equations import GRAVITY
from gtdyn.model.robot import Robot
from gtdyn.problem import Problem


@dataclass(frozen=True, eq=False)
class ThreePassResult:
    """q̈ and τ in ``robot.joint_names`` order, and the three DynamicsResults that produced them."""

    qdd: np.ndarray
    tau: np.ndarray
    passes: tuple[DynamicsResult, DynamicsResult, DynamicsResult]
    problem: str = "hybrid"


def featherstone_hybrid_dynamics(robot: Robot, q, v, qdd, tau, *, gravity=GRAVITY, external_wrenches=None,
                                 inverse_ordering="rnea", forward_ordering="aba") -> ThreePassResult:
    """Same arguments and answer as ``hybrid_dynamics`` (q̈ given for some joints, τ for the others), for
    fixed-base trees without transmissions: its passes lock and free joints one by one, which a loop, a
    coupling or a free base would tie together (``hybrid_dynamics`` covers those)."""
    robot = robot_argument(robot)
    covered(robot, "featherstone_hybrid_dynamics (it locks and frees joints one by one)", loops=False,
            floating_base=False, transmissions=False, advice="gtdyn.hybrid_dynamics covers them")
    # the user's arguments checked once; each pass below asks its own question of the same state
    asked = ask(robot, "hybrid", q, v, qdd=qdd, tau=tau, gravity=gravity, external_wrenches=external_wrenches)
    given_qdd, given_tau = asked.problem.known_qdd, asked.problem.known_tau  # passive joints: τ = 0 given
    n = robot.num_dofs
    all_joints = range(1, n + 1)

    # 1. bias torques: prescribed q̈ on I, zero on F
    bias = solve_query(asked.with_problem(Problem("inverse", known_qdd={j: given_qdd.get(j, 0.0) for j in all_joints})),
                       ordering=inverse_ordering)
    # 2. forward dynamics of the F joints with the I joints locked, at rest, without gravity or external wrenches
    locked = solve_query(dataclasses.replace(
        asked, v=np.zeros(n), gravity=np.zeros(3), external_wrenches={},
        problem=Problem("hybrid", known_qdd={j: 0.0 for j in given_qdd},
                        known_tau={j: t - bias.tau[j - 1] for j, t in given_tau.items()})), ordering=forward_ordering)
    qdd_full = np.array([given_qdd.get(j, locked.qdd[j - 1]) for j in all_joints])
    # 3. torques of the I joints
    final = solve_query(asked.with_problem(Problem("inverse", known_qdd={j: qdd_full[j - 1] for j in all_joints})),
                        ordering=inverse_ordering)
    tau_full = np.array([given_tau.get(j, final.tau[j - 1]) for j in all_joints])
    return ThreePassResult(qdd_full, tau_full, (bias, locked, final))
