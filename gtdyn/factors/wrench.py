"""Wrench factor (eq. 6) of one link: Newton–Euler balance with any number of joints into and out of it,
explicit gravity and an optional external wrench."""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.equations import GRAVITY, coriolis_wrench, gravity_wrench
from gtdyn.factors.base import fill, hard, scalar
from gtdyn.model.robot import Joint, Link
from gtdyn.spatial import Ad, ad, skew


def coadjoint_jacobian(w: np.ndarray) -> np.ndarray:
    """∂([ad_V]ᵀ w)/∂V for fixed w = [w1; w2]:  [[ŵ1, ŵ2], [ŵ2, 0]]."""
    J = np.zeros((6, 6))
    J[:3, :3], J[:3, 3:], J[3:, :3] = skew(w[:3]), skew(w[3:]), skew(w[3:])
    return J


class WrenchFactor(gtsam.CustomFactor):
    """Eq. 6:  e = G V̇ − [ad_V]ᵀ G V − Σ_in F_in + Σ_c [Ad_cTi(q_c)]ᵀ F_c − F_gravity(wTi) − F_ext.

    Keys: V̇, V, wTi (pose of the link's CoM frame, for gravity), the wrenches F_in of the joints into the link
    (one, or several where loops close on it), then (F_c, q_c) per joint out of the link.
    ``gravity`` is in the world frame; ``external`` is a wrench on the link in its CoM frame.
    """

    def __init__(self, link: Link, A: int, V: int, pose: int, F_in: int | list[int],
                 children: list[tuple[Joint, int, int]], gravity=GRAVITY, external=None):
        G, g = link.G, np.asarray(gravity, float)
        external = np.zeros(6) if external is None else np.asarray(external, float)
        F_in = [F_in] if isinstance(F_in, int) else list(F_in)
        keys = [A, V, pose] + F_in + [k for _, F_c, q_c in children for k in (F_c, q_c)]

        def error(this, values, H):
            Vi, wTi = values.atVector(V), values.atPose3(pose)
            AdT = [Ad(joint.child_T_parent(scalar(values, q_c))).T for joint, _, q_c in children]  # [Ad_cTi]ᵀ
            F_out = [values.atVector(F_c) for _, F_c, _ in children]
            e = (G @ values.atVector(A) - coriolis_wrench(G, Vi) - sum(values.atVector(F) for F in F_in)
                 + sum(a @ F for a, F in zip(AdT, F_out)) - gravity_wrench(link.mass, wTi, g) - external)
            if H is not None:
                H_pose = np.zeros((6, 6))
                H_pose[3:, :3] = -link.mass * skew(wTi.rotation().unrotate(g))  # ∂(Rᵀg)/∂ω = [Rᵀg]
                jacobians = {A: G, V: -(ad(Vi).T @ G + coadjoint_jacobian(G @ Vi)), pose: H_pose}
                jacobians.update({F: -np.eye(6) for F in F_in})
                for (joint, F_c, q_c), a, F in zip(children, AdT, F_out):
                    jacobians[F_c] = a
                    jacobians[q_c] = -a @ ad(joint.screw_axis).T @ F
                fill(H, keys, jacobians)
            return e

        super().__init__(hard(6), keys, error)
