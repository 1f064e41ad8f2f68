"""Spatial algebra, thin over gtsam.Pose3, in the Lynch & Park / GTSAM order: twist [ω; v], wrench [m; f]."""

from __future__ import annotations

import math

import gtsam
import numpy as np


def skew(w: np.ndarray) -> np.ndarray:
    """[w]: the 3×3 matrix with [w] x = w × x."""
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]],
                    dtype=object if np.asarray(w).dtype == object else float)


def Ad(aTb: gtsam.Pose3) -> np.ndarray:
    """Adjoint of aTb: maps a twist expressed in frame b to frame a (V_a = Ad(aTb) V_b)."""
    return aTb.AdjointMap()


def ad(V: np.ndarray) -> np.ndarray:
    """Lie bracket matrix [ad_V] = [[ω], 0; [v], [ω]] (paper 001, §II). On an object array (traced values,
    ``gtdyn.compiled``) the same blocks are assembled element by element."""
    V = np.asarray(V)
    if V.dtype != object:
        return gtsam.Pose3.adjointMap(V.astype(float))
    w, v = skew(V[:3]), skew(V[3:])
    return np.block([[w, np.zeros((3, 3))], [v, w]])


def spatial_inertia(mass: float, inertia: np.ndarray) -> np.ndarray:
    """G = diag(I_com, m·I3), the spatial inertia about and in the centre-of-mass frame."""
    G = np.zeros((6, 6))
    G[:3, :3] = inertia
    G[3:, 3:] = mass * np.eye(3)
    return G


def screw_exp(S: np.ndarray, theta: float) -> gtsam.Pose3:
    """exp([S]θ) for a unit screw axis S = [ω; v]."""
    return gtsam.Pose3.Expmap(np.asarray(S, dtype=float) * theta)


def pose(R: np.ndarray | None = None, p: np.ndarray | None = None) -> gtsam.Pose3:
    """A Pose3 from a rotation matrix and a translation (identity where omitted)."""
    rot = gtsam.Rot3() if R is None else gtsam.Rot3(np.asarray(R, dtype=float))
    return gtsam.Pose3(rot, np.zeros(3) if p is None else np.asarray(p, dtype=float))


def cos_sin(angle: float) -> tuple[float, float]:
    """cos and sin of a model's constant angle, exactly 0 and ±1 where it is a multiple of π/2 to the last bits
    (within 4 ulps): a file's 1.5707963267948966 means a quarter turn, and the 6.1e-17 that the double nearest
    π/2 gives as its cosine would stay in the model as a constant the compiled code multiplies by, where an exact
    zero folds away (benchmarks/results/design_measurements.md)."""
    quarter = round(angle / (math.pi / 2))
    if abs(angle - quarter * (math.pi / 2)) <= 4 * np.finfo(float).eps * max(1.0, abs(angle)):
        return ((1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0))[quarter % 4]
    return math.cos(angle), math.sin(angle)


def rpy_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """R = Rz(yaw)·Ry(pitch)·Rx(roll), the fixed-axis X-Y-Z angles of URDF and SDFormat (quarter turns exact:
    ``cos_sin``)."""
    (cr, sr), (cp, sp), (cy, sy) = cos_sin(roll), cos_sin(pitch), cos_sin(yaw)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def roll_pitch_yaw(R) -> tuple[float, float, float]:
    """The fixed-axis angles of a rotation matrix, R = Rz(yaw) · Ry(pitch) · Rx(roll) (``rpy_matrix``'s inverse)."""
    R = np.asarray(R, float)
    pitch = math.atan2(-R[2, 0], math.hypot(R[0, 0], R[1, 0]))
    if math.hypot(R[0, 0], R[1, 0]) < 1e-12:  # pitch ±90°: only roll ∓ yaw is defined; take yaw = 0
        return math.atan2(-R[1, 2], R[1, 1]), pitch, 0.0
    return math.atan2(R[2, 1], R[2, 2]), pitch, math.atan2(R[1, 0], R[0, 0])


# B_j / j! of dlog_V = Σ B_j / j! [ad_V]^j (paper 004, eq. 12–13), j = 0 … 10: enough for |Δt V| < 1 to double precision
DLOG_SERIES = (1.0, -0.5, 1 / 12, 0.0, -1 / 720, 0.0, 1 / 30240, 0.0, -1 / 1209600, 0.0, 1 / 47900160)


def dlog(V: np.ndarray) -> np.ndarray:
    """[dlog_V] (paper 004, eq. 13), the inverse of the right-trivialised tangent of exp at V."""
    A = ad(V)
    out, power = np.eye(6), np.eye(6)
    for coefficient in DLOG_SERIES[1:]:
        power = power @ A
        if coefficient:
            out = out + coefficient * power
    return out


def dlog_times(xi: np.ndarray, y: np.ndarray) -> np.ndarray:
    """[dlog_ξ] y = Σ c_j [ad_ξ]^j y, by repeated products with [ad_ξ] (no matrix powers: what traced code wants,
    ``gtdyn.compiled.pose_step``); numbers or object arrays."""
    return _dlog_series_times(ad(xi), y)


def dlog_transpose_times(xi: np.ndarray, y: np.ndarray) -> np.ndarray:
    """[dlog_ξ]ᵀ y = Σ c_j ([ad_ξ]ᵀ)^j y, by repeated products with [ad_ξ]ᵀ (``gtdyn.compiled.drnea``); numbers or
    object arrays."""
    return _dlog_series_times(ad(xi).T, y)


def _dlog_series_times(A: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Σ c_j A^j y over ``DLOG_SERIES``, one product with A per term."""
    out = power = np.asarray(y)
    for coefficient in DLOG_SERIES[1:]:
        power = A @ power
        if coefficient:
            out = out + coefficient * power
    return out
