"""The verdicts of a reference solve: overflowed equations, and the typed error that explains over-determined data
(a motion that breaks a contact or a loop, q̈ prescribed where the actuators cannot produce it)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import gtsam
import numpy as np

from gtdyn.equations import contact_equation
from gtdyn.errors import ArgumentError, IndeterminateSystemError, LoopClosureError
from gtdyn.kinematics.forward import KinematicState
from gtdyn.kinematics.frames import link_accelerations
from gtdyn.kinematics.loop_closure import acceleration_residuals
from gtdyn.kinematics.loops import CLOSURE_TOLERANCE
from gtdyn.model.robot import Robot
from gtdyn.problem import Problem

# ‖Ax − b‖ / (‖A‖ ‖x‖ + ‖b‖) above this: the given data are inconsistent. A consistent system solved by QR
# leaves ~1e-15; states that close loops to close_loops' accuracy leave < 1e-10.
BACKWARD_ERROR_TOLERANCE = 1e-8



def row_count(graph: gtsam.GaussianFactorGraph) -> int:
    return sum(graph.at(i).rows() for i in range(graph.size()))


def check_finite(arrays: dict, inputs: dict[str, np.ndarray]) -> None:
    """ArgumentError naming the largest input if the equations (their column norms, or the solution)
    overflowed double precision."""
    if not arrays or np.all(np.isfinite(np.concatenate([np.ravel(a) for a in arrays.values()]))):
        return
    name, value = max(((n, float(np.max(np.abs(x)))) for n, x in inputs.items() if np.size(x)), key=lambda t: t[1])
    raise ArgumentError(f"{name}: the dynamics equations overflow double precision at this state (largest input "
                        f"value {value:.3g}, in {name}); are the units right?")


def backward_error(hard: gtsam.GaussianFactorGraph, norms: dict, x: gtsam.VectorValues) -> float:
    """‖Ax − b‖ / (‖A‖_F ‖x‖ + ‖b‖) of the unit-weighted exact equations: the relative change of the data that
    would make x exact."""
    residual, b = np.sqrt(2 * hard.error(x)), np.sqrt(2 * hard.error(gtsam.VectorValues.Zero(x)))
    A = np.sqrt(sum(float(np.sum(n)) for n in norms.values()))
    return float(residual / max(A * np.linalg.norm(x.vector()) + b, np.finfo(float).tiny))


def inconsistent(robot: Robot, kin: KinematicState, problem: Problem, backward_error: float,
                 solve_free: Callable[[Problem], np.ndarray]) -> ValueError:
    """The typed error for over-determined data: q̈ that violates a loop's acceleration constraint
    (LoopClosureError), or q̈ prescribed at passive joints that the actuated joints cannot produce
    (ArgumentError naming them, with the q̈ the dynamics give there). ``solve_free(problem)``: the q̈ of the problem
    with those passive joints' q̈ unknown."""
    qdd = np.array([problem.known_qdd.get(j.index, np.nan) for j in robot.joints])
    if problem.contacts and not np.any(np.isnan(qdd)) and (problem.base_accel is not None or not robot.floating_base):
        for contact, residual in contact_residuals(robot, kin, problem, qdd):
            if residual > 1e-8 * (1 + np.max(np.abs(qdd), initial=0.0)):
                return ArgumentError(f"qdd: the motion breaks contact {contact.number} ({contact.contact.kind} on "
                                     f"'{contact.contact.link}'): its acceleration constraint is off by "
                                     f"{residual:.3g}; "
                                     "a contact must not accelerate (use forward dynamics with the contacts to find "
                                     "a motion that keeps them)")
    if robot.loop_joints and not np.any(np.isnan(qdd)):
        for name, residual in acceleration_residuals(robot, kin.q, kin.v, qdd).items():
            if residual > CLOSURE_TOLERANCE * (1 + np.max(np.abs(qdd))):
                return LoopClosureError(f"qdd: the joint accelerations violate the loop closed by joint '{name}' by "
                                        f"{residual:.3g}; compute consistent ones with gtdyn.close_loops")
    prescribed = [j for j in problem.known_qdd if j in problem.known_tau]  # passive joints with q̈ given
    if prescribed:
        free = dataclasses.replace(problem,
                                   known_qdd={j: a for j, a in problem.known_qdd.items() if j not in prescribed},
                                   kind="hybrid")
        try:
            achievable = solve_free(free)
        except (IndeterminateSystemError, ValueError):
            achievable = None
        if achievable is not None:
            wrong = [j for j in prescribed
                     if abs(achievable[j - 1] - problem.known_qdd[j]) > 1e-8 * (1 + abs(achievable[j - 1]))]
            if wrong:
                detail = ", ".join(f"{robot.joints[j - 1].name} (asked {problem.known_qdd[j]:.6g}, the dynamics give "
                                   f"{achievable[j - 1]:.6g})" for j in wrong)
                return ArgumentError(f"qdd: the actuated joints cannot produce the requested q̈ of passive joints "
                                     f"{detail}, given the other joints' q̈; prescribe passive joints' q̈ only as the "
                                     "dynamics give it, or use hybrid_dynamics to solve for it")
    reasons = []  # what can make given values inconsistent, for this robot and problem
    if robot.floating_base and problem.contacts and problem.base_accel is not None:
        names = ", ".join(f"{c.contact.kind} on '{c.contact.link}'" for c in problem.contacts)
        reasons.append("the base has no joint to the world, so with its acceleration prescribed (base_accel, zero by "
                       f"default) the contact forces alone must move it, and these contacts ({names}) cannot produce "
                       "that motion (add contacts, or find a motion they support with forward dynamics)")
    if robot.loop_joints:
        reasons.append("on closed loops q̈ must satisfy the loops' acceleration constraints (see gtdyn.close_loops)")
    if robot.transmissions:
        reasons.append("q̈ must keep each transmission's coupling")
    if any(not j.actuated for j in robot.joints):
        reasons.append("passive joints have τ = 0")
    return ArgumentError(f"qdd, tau: the given values are inconsistent with the dynamics equations (backward error "
                         f"{backward_error:.3g}); {'; '.join(reasons) or 'no exact solution exists'}")


def contact_residuals(robot: Robot, kin: KinematicState, problem: Problem, qdd: np.ndarray):
    """(contact, max |residual| of its acceleration constraint) for a fully given motion: every body's V̇ by eq. 5
    (``link_accelerations``), then each contact's equation."""
    A = link_accelerations(robot, kin, qdd, problem.base_accel)
    for contact in problem.contacts:
        eq = contact_equation(contact.iTc, contact.dim, kin.V[contact.body])
        yield contact, float(np.max(np.abs(eq.error({"A": A[contact.body]}))))
