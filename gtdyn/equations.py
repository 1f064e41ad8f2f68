"""The Newton–Euler equations of paper 001 (eq. 4–7), as linear forms in their unknowns.

Each function returns a ``LinearEquation``: ``Σ coefficient[name] · x[name] = rhs``, with coefficients and
right-hand side evaluated at the known configuration q, velocity v and twists V. These are the one source
of truth for the physics: the ``CustomFactor`` classes evaluate them (and differentiate them in q, v, V),
and the fast linear path turns them straight into ``JacobianFactor`` rows.

Frames: every link quantity is in that link's CoM frame; ``cTp`` is the pose of the parent's dynamics frame
in the child's (the T_{i,i-1}(θ_i) of the paper); ``S`` is the joint's screw axis in the child's frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import gtsam
import numpy as np

from gtdyn.spatial import Ad, ad

I6 = np.eye(6)


@dataclass(frozen=True)
class LinearEquation:
    """Σ_k coefficients[k] @ x_k = rhs. Coefficient names are the equation's variable roles."""

    coefficients: dict[str, np.ndarray]
    rhs: np.ndarray

    def error(self, x: dict[str, np.ndarray]) -> np.ndarray:
        """Σ coefficient · x − rhs, the factor's error."""
        return sum(self.coefficients[k] @ np.atleast_1d(x[k]) for k in self.coefficients) - self.rhs


def _column(S: np.ndarray) -> np.ndarray:
    return np.asarray(S, dtype=float).reshape(6, 1)


def twist_equation(cTp: gtsam.Pose3, S: np.ndarray) -> LinearEquation:
    """Eq. 4:  V_c − [Ad_cTp] V_p − S q̇ = 0."""
    return LinearEquation({"V_c": I6, "V_p": -Ad(cTp), "v": -_column(S)}, np.zeros(6))


def twist_accel_equation(cTp: gtsam.Pose3, S: np.ndarray, V_c: np.ndarray, v: float) -> LinearEquation:
    """Eq. 5:  V̇_c − [Ad_cTp] V̇_p − S q̈ = [ad_Vc] S q̇."""
    return LinearEquation({"A_c": I6, "A_p": -Ad(cTp), "a": -_column(S)}, ad(V_c) @ S * v)


def gravity_wrench(mass: float, wTi: gtsam.Pose3, gravity: np.ndarray) -> np.ndarray:
    """The weight of a link as a wrench [0; m·Rᵀg] in its CoM frame (paper 001, end of §II)."""
    return np.concatenate([np.zeros(3), mass * wTi.rotation().unrotate(np.asarray(gravity, float))])


def wrench_equation(G: np.ndarray, V: np.ndarray, child_poses: list[gtsam.Pose3],
                    gravity_term: np.ndarray, external: np.ndarray) -> LinearEquation:
    """Eq. 6 for one link, with any number of child joints, explicit gravity and an external wrench:

        G V̇ − F_parent + Σ_c [Ad_cTi]ᵀ F_c = [ad_V]ᵀ G V + F_gravity + F_ext

    ``child_poses[k]`` is the pose cTi of this link's frame in child joint k's child frame; coefficient
    names are "A", "F_parent" and "F_child0", "F_child1", ….
    """
    coefficients = {"A": G, "F_parent": -I6}
    for k, cTi in enumerate(child_poses):
        coefficients[f"F_child{k}"] = Ad(cTi).T
    return LinearEquation(coefficients, ad(V).T @ G @ V + gravity_term + external)


def torque_equation(S: np.ndarray) -> LinearEquation:
    """Eq. 7:  Sᵀ F − τ = 0."""
    return LinearEquation({"F": _column(S).T, "tau": -np.ones((1, 1))}, np.zeros(1))
