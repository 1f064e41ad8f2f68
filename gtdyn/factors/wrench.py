"""Wrench factor (eq. 6) of one body: ``wrench_equation`` of ``gtdyn.equations`` — Newton–Euler balance with any
number of joints into and out of it, explicit gravity, an optional external wrench and contacts — evaluated at
the current V, pose and out-joint angles."""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.equations import GRAVITY, contact_wrench_map, gravity_wrench, wrench_equation
from gtdyn.factors.base import add, coefficient_jacobians, evaluate, fill, hard, scalar
from gtdyn.model.robot import Joint, Link
from gtdyn.spatial import ad, skew


def coadjoint_jacobian(w: np.ndarray) -> np.ndarray:
    """∂([ad_V]ᵀ w)/∂V for fixed w = [w1; w2]:  [[ŵ1, ŵ2], [ŵ2, 0]]."""
    J = np.zeros((6, 6))
    J[:3, :3], J[:3, 3:], J[3:, :3] = skew(w[:3]), skew(w[3:]), skew(w[3:])
    return J


def coriolis_jacobian(G: np.ndarray, V: np.ndarray) -> np.ndarray:
    """∂([ad_V]ᵀ G V)/∂V = [ad_V]ᵀ G + ∂([ad_V]ᵀ w)/∂V at w = G V."""
    return ad(V).T @ G + coadjoint_jacobian(G @ V)


def gravity_jacobian(mass: float, wTi: gtsam.Pose3, gravity: np.ndarray) -> np.ndarray:
    """∂ F_gravity(wTi)/∂wTi, the pose perturbed as wTi·Exp(ξ): turning R by exp(ω) changes Rᵀg by [Rᵀg] ω."""
    J = np.zeros((6, 6))
    J[3:, :3] = mass * skew(wTi.rotation().unrotate(gravity))
    return J


class WrenchFactor(gtsam.CustomFactor):
    """Eq. 6:  e = G V̇ − Σ_in F_in + Σ_c [Ad_cTi(q_c)]ᵀ F_c − Σ_k W_k C_k − [ad_V]ᵀ G V − F_gravity(wTi) − F_ext.

    Keys: V̇, V, wTi (pose of the body's CoM frame, for gravity), the wrenches F_in of the joints into the body
    (one, or several where loops close on it; on a floating base the wrench F0 its environment applies), then
    (F_c, q_c) per joint out of the body, then the contact variables C_k. ``gravity`` is in the world frame;
    ``external`` is a wrench on the body in its CoM frame; ``contacts`` lists (iTc, dim, C_k) per contact on the
    body: the contact frame in its CoM frame, 3 (a point contact's force) or 6 (a surface contact's wrench)
    and the key of that variable (``gtdyn.equations.contact_wrench_map``).
    """

    def __init__(self, link: Link, A: int, V: int, pose: int, F_in: int | list[int],
                 children: list[tuple[Joint, int, int]], gravity=GRAVITY, external=None,
                 contacts: list[tuple[gtsam.Pose3, int, int]] = ()):
        G, g = link.G, np.asarray(gravity, float)
        external = np.zeros(6) if external is None else np.asarray(external, float)
        F_in = [F_in] if isinstance(F_in, int) else list(F_in)
        maps = [contact_wrench_map(iTc, dim) for iTc, dim, _ in contacts]  # constant: fixed in the body
        keys = [A, V, pose] + F_in + [k for _, F_c, q_c in children for k in (F_c, q_c)] + [C for *_, C in contacts]
        roles = {"A": A, **{f"F_in{k}": F for k, F in enumerate(F_in)},
                 **{f"F_out{k}": F_c for k, (_, F_c, _) in enumerate(children)},
                 **{f"C{k}": C for k, (*_, C) in enumerate(contacts)}}

        def wrench_error(this, values, H):
            Vi, wTi = values.atVector(V), values.atPose3(pose)
            eq = wrench_equation(G, Vi, [joint.child_T_parent(scalar(values, q_c)) for joint, _, q_c in children],
                                 gravity_wrench(link.mass, wTi, g), external, len(F_in), maps)
            e, x = evaluate(eq, roles, values)
            if H is not None:
                jacobians = coefficient_jacobians(eq, roles)
                add(jacobians, V, -coriolis_jacobian(G, Vi))  # e = … − rhs
                add(jacobians, pose, -gravity_jacobian(link.mass, wTi, g))
                for k, (joint, _, q_c) in enumerate(children):  # ∂([Ad_cTi(q)]ᵀ F)/∂q = −[Ad_cTi]ᵀ [ad_S]ᵀ F
                    add(jacobians, q_c, -eq.coefficients[f"F_out{k}"] @ ad(joint.screw_axis).T @ x[f"F_out{k}"])
                fill(H, keys, jacobians)
            return e

        super().__init__(hard(6), keys, wrench_error)
