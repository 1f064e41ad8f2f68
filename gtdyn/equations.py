"""The Newton–Euler equations of paper 001 (eq. 4–7), as linear forms in their unknowns.

The named blocks — ``Ad(cTp)`` (``gtdyn.spatial.Ad``), the screw axis ``S``, the bias acceleration
``[ad_Vc] S q̇``, the Coriolis wrench ``[ad_V]ᵀ G V``, the weight — are the one source of truth for the physics:
the ``CustomFactor`` classes (``gtdyn.factors``) write each equation's error with them, and the functions
below arrange them as a ``LinearEquation`` ``Σ coefficient[name] · x[name] = rhs`` (coefficients and right-hand
side evaluated at the known configuration q, velocity v and twists V) for the fast linear path, which turns
them straight into ``JacobianFactor`` rows. A test linearises the factors and compares the blocks.

Frames: every link quantity is in that link's CoM frame; ``cTp`` is the pose of the parent's dynamics frame
in the child's (the T_{i,i-1}(θ_i) of the paper); ``S`` is the joint's screw axis in the child's frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import gtsam
import numpy as np

from gtdyn.spatial import Ad, ad

I6 = np.eye(6)
_MINUS_I6 = -I6  # shared constant blocks (GTSAM copies every block into its factor); read-only
_MINUS_ONE = -np.ones((1, 1))
for _block in (I6, _MINUS_I6, _MINUS_ONE):
    _block.flags.writeable = False
GRAVITY = (0.0, 0.0, -9.81)  # m/s² in the world frame: every function's default (Pinocchio's too)


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


def bias_acceleration(V_c: np.ndarray, S: np.ndarray, v: float) -> np.ndarray:
    """[ad_Vc] S q̇: the velocity-product term of eq. 5 (the joint's axis turning with the child)."""
    return ad(V_c) @ S * v


def coriolis_wrench(G: np.ndarray, V: np.ndarray) -> np.ndarray:
    """[ad_V]ᵀ G V: the velocity-product (Coriolis and centrifugal) wrench of eq. 6."""
    return ad(V).T @ G @ V


def twist_accel_equation(cTp: gtsam.Pose3, S: np.ndarray, V_c: np.ndarray, v: float) -> LinearEquation:
    """Eq. 5:  V̇_c − [Ad_cTp] V̇_p − S q̈ = [ad_Vc] S q̇."""
    return LinearEquation({"A_c": I6, "A_p": -Ad(cTp), "a": -_column(S)}, bias_acceleration(V_c, S, v))


def gravity_wrench(mass: float, wTi: gtsam.Pose3, gravity: np.ndarray) -> np.ndarray:
    """The weight of a link as a wrench [0; m·Rᵀg] in its CoM frame (paper 001, end of §II)."""
    return np.concatenate([np.zeros(3), mass * wTi.rotation().unrotate(np.asarray(gravity, float))])


def external_wrench(fTi: gtsam.Pose3, F: np.ndarray, wTf: gtsam.Pose3 | None = None) -> np.ndarray:
    """A wrench [m; f] applied at frame f, as the wrench on its body in the body's CoM frame i:
    F_i = [Ad_fTi]ᵀ F_f. Given in world-aligned axes at f's origin (``wTf``, f's pose in the world, given),
    it is first turned into f's own axes, F_f = [Rᵀ m; Rᵀ f]."""
    if wTf is not None:
        R = wTf.rotation()
        F = np.concatenate([R.unrotate(F[:3]), R.unrotate(F[3:])])
    return Ad(fTi).T @ F


def wrench_equation(G: np.ndarray, V: np.ndarray, out_poses: list[gtsam.Pose3], gravity_term: np.ndarray,
                    external: np.ndarray, joints_in: int = 1, contact_maps: list[np.ndarray] = ()) -> LinearEquation:
    """Eq. 6 for one link, with any number of joints on it, explicit gravity, an external wrench and contacts:

        G V̇ − Σ_in F_in + Σ_out [Ad_cTi]ᵀ F_out − Σ_k W_k C_k = [ad_V]ᵀ G V + F_gravity + F_ext

    The link is the child of the ``joints_in`` joints "F_in0", "F_in1", … (its tree joint and any loop joints
    closing on it) and the parent of the joints "F_out0", …; ``out_poses[k]`` is the pose cTi of this link's
    frame in out-joint k's child frame. ``contact_maps[k]`` is ``contact_wrench_map`` of the link's contact
    "C{k}", whose force or wrench its environment applies to it.
    """
    coefficients = {"A": G}
    for k in range(joints_in):
        coefficients[f"F_in{k}"] = _MINUS_I6
    for k, cTi in enumerate(out_poses):
        coefficients[f"F_out{k}"] = Ad(cTi).T
    for k, W in enumerate(contact_maps):
        coefficients[f"C{k}"] = -W
    return LinearEquation(coefficients, coriolis_wrench(G, V) + gravity_term + external)


def contact_selector(dim: int) -> np.ndarray:
    """B: the contact variable's place in a wrench [m; f] of the contact frame — a point contact's force is
    the linear part (6×3), a surface contact's wrench is all of it (6×6)."""
    return np.vstack([np.zeros((3, 3)), np.eye(3)]) if dim == 3 else I6


def contact_wrench_map(iTc: gtsam.Pose3, dim: int) -> np.ndarray:
    """W = [Ad_cTi]ᵀ B: the wrench on link i (in its frame) of a contact variable in contact frame c."""
    return Ad(iTc.inverse()).T @ contact_selector(dim)


def contact_equation(iTc: gtsam.Pose3, dim: int, V_i: np.ndarray) -> LinearEquation:
    """A rigid contact, with the contact frame's twist V_c = [Ad_cTi] V_i = [ω_c; v_c]:

        point (3 rows):   [0 I] [Ad_cTi] V̇_i = −ω_c × v_c     the point's classical acceleration is zero
        surface (6 rows):       [Ad_cTi] V̇_i = 0             the contact frame's spatial acceleration is zero
    """
    Ad_cTi = Ad(iTc.inverse())
    if dim == 6:
        return LinearEquation({"A": Ad_cTi}, np.zeros(6))
    V_c = Ad_cTi @ V_i
    return LinearEquation({"A": contact_selector(3).T @ Ad_cTi}, -np.cross(V_c[:3], V_c[3:]))


def torque_equation(S: np.ndarray, transmission_shares: tuple[float, ...] = (),
                    armature: float = 0.0) -> LinearEquation:
    """Eq. 7:  Sᵀ F − τ − Σ_k c_k λ_k + J q̈ = 0, where λ_k are the constraint forces of the transmissions the
    joint takes part in ("L0", "L1", …) with its share c_k by virtual work (+1 for the driven joint, −ratio for
    a driving one: ``transmission_equation``), and J an armature (a rotor's reflected inertia, role "a")."""
    coefficients = {"F": _column(S).T, "tau": _MINUS_ONE}
    for k, share in enumerate(transmission_shares):
        coefficients[f"L{k}"] = np.array([[-share]])
    if armature:
        coefficients["a"] = np.array([[armature]])
    return LinearEquation(coefficients, np.zeros(1))


def transmission_equation(ratios: tuple[float, ...]) -> LinearEquation:
    """A transmission at the acceleration level:  q̈_dependent − Σ_k ratio_k q̈_k = 0 (roles "a", "a0", "a1", …);
    the relation q = Σ ratio_k q_k + offset is linear, so q̇ and q̈ obey it with no velocity term."""
    coefficients = {"a": np.ones((1, 1))}
    for k, ratio in enumerate(ratios):
        coefficients[f"a{k}"] = np.array([[-ratio]])
    return LinearEquation(coefficients, np.zeros(1))


def planar_directions(wTc: gtsam.Pose3, normal: np.ndarray) -> np.ndarray:
    """3×6 selector of the out-of-plane wrench components in a link frame: the force along the plane normal
    and the moments about two in-plane axes. In a planar loop these circulate around the loop without
    affecting the motion, so they are indeterminate; the subspace they span is the same at every reference
    point, so the link's CoM frame serves."""
    n = np.asarray(normal, float) / np.linalg.norm(normal)
    u1 = np.cross(n, [1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.cross(n, [0.0, 1.0, 0.0])
    u1 /= np.linalg.norm(u1)
    u2 = np.cross(n, u1)
    R = wTc.rotation()
    P = np.zeros((3, 6), dtype=np.asarray(R.unrotate(n)).dtype)  # object on traced poses (gtdyn.compiled)
    P[0, 3:] = R.unrotate(n)
    P[1, :3] = R.unrotate(u1)
    P[2, :3] = R.unrotate(u2)
    return P


def planar_equation(wTc: gtsam.Pose3, normal: np.ndarray) -> LinearEquation:
    """The planar factor of paper 001 §VII on a loop joint's wrench:  P F = 0, P = planar_directions."""
    return LinearEquation({"F": planar_directions(wTc, normal)}, np.zeros(3))


def minimum_norm_equation(dim: int) -> LinearEquation:
    """A soft (least-squares) x = 0 on a dim-vector: with the exact equations hard, the least-norm x among the
    solutions — the minimum-torque factor of paper 001 §VII, and the least-norm contact forces of a robot
    standing on more contacts than its motion determines."""
    return LinearEquation({"x": np.eye(dim)}, np.zeros(dim))
