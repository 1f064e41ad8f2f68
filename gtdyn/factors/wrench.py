"""Wrench factor (eq. 6) of one link: Newton–Euler balance with any number of child joints, explicit gravity
and an optional external wrench."""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.equations import gravity_wrench, wrench_equation
from gtdyn.factors.base import error_function, hard, scalar
from gtdyn.robot import Joint, Link
from gtdyn.spatial import ad, skew


def coadjoint_jacobian(w: np.ndarray) -> np.ndarray:
    """∂([ad_V]ᵀ w)/∂V for fixed w = [w1; w2]:  [[ŵ1, ŵ2], [ŵ2, 0]]."""
    J = np.zeros((6, 6))
    J[:3, :3], J[:3, 3:], J[3:, :3] = skew(w[:3]), skew(w[3:]), skew(w[3:])
    return J


class WrenchFactor(gtsam.CustomFactor):
    """Eq. 6:  G V̇ − [ad_V]ᵀ G V − Σ F_in + Σ_c [Ad_cTi(q_c)]ᵀ F_c − F_gravity(wTi) − F_ext = 0.

    Keys: V̇, V, wTi (pose of the link's CoM frame, for gravity), the wrenches F_in of the joints into the link
    (one, or several where loops close on it), then (F_c, q_c) per joint out of the link.
    ``gravity`` is in the world frame; ``external`` is a wrench on the link in its CoM frame.
    """

    def __init__(self, link: Link, A: int, V: int, pose: int, F_in: int | list[int],
                 children: list[tuple[Joint, int, int]], gravity=(0.0, 0.0, -9.81), external=None):
        G, g = link.G, np.asarray(gravity, float)
        external = np.zeros(6) if external is None else np.asarray(external, float)
        F_in = [F_in] if isinstance(F_in, int) else list(F_in)
        keys = [A, V, pose] + F_in + [k for _, F_c, q_c in children for k in (F_c, q_c)]

        def evaluate(values):
            Vi, wTi = values.atVector(V), values.atPose3(pose)
            child_poses = [joint.child_T_parent(scalar(values, q_c)) for joint, _, q_c in children]
            eq = wrench_equation(G, Vi, child_poses, gravity_wrench(link.mass, wTi, g), external, len(F_in))
            x = {"A": values.atVector(A)}
            x.update({f"F_in{k}": values.atVector(F) for k, F in enumerate(F_in)})
            x.update({f"F_out{k}": values.atVector(F_c) for k, (_, F_c, _) in enumerate(children)})
            e = eq.error(x)
            H_pose = np.zeros((6, 6))
            H_pose[3:, :3] = -link.mass * skew(wTi.rotation().unrotate(g))  # ∂(Rᵀg)/∂ω = [Rᵀg]
            H = {A: eq.coefficients["A"], pose: H_pose, V: -(ad(Vi).T @ G + coadjoint_jacobian(G @ Vi))}
            H.update({F: eq.coefficients[f"F_in{k}"] for k, F in enumerate(F_in)})
            for k, (joint, F_c, q_c) in enumerate(children):
                AdT = eq.coefficients[f"F_out{k}"]
                H[F_c] = AdT
                H[q_c] = (-AdT @ ad(joint.screw_axis).T @ x[f"F_out{k}"]).reshape(6, 1)
            return e, H

        super().__init__(hard(6), keys, error_function(keys, evaluate))
