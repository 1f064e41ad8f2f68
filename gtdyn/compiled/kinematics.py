"""Forward kinematics on traced values: ``gtdyn.kinematics.forward.kinematic_pass`` over the ``TRACED`` algebra.

``TracedPose`` offers the few ``gtsam.Pose3`` methods the equations use (``AdjointMap``, ``rotation().unrotate``,
``compose``, ``inverse``), on 3×3 and 3-vector object arrays whose entries are constants or ``Sym``s, so the pass
and ``gtdyn.equations`` run on them as on numbers and write, operation by operation, the code of the pass.
"""

from __future__ import annotations

import dataclasses

import gtsam
import numpy as np

from gtdyn.compiled import trace
from gtdyn.kinematics.forward import KinematicState, PoseAlgebra, base_in_com, kinematic_pass
from gtdyn.model.robot import Robot
from gtdyn.spatial import skew


def _matmul(A, B):
    return np.asarray(A, dtype=object) @ np.asarray(B, dtype=object)


class TracedRotation:
    def __init__(self, R):
        self.R = np.asarray(R, dtype=object)

    def matrix(self):
        return self.R

    def unrotate(self, p):
        """Rᵀ p."""
        return _matmul(self.R.T, p)


class TracedPose:
    """A rigid transform aTb = (R, p) with constant or traced entries."""

    def __init__(self, R, p):
        self.R = np.asarray(R, dtype=object)
        self.p = np.asarray(p, dtype=object)

    @staticmethod
    def constant(pose: gtsam.Pose3) -> TracedPose:
        return TracedPose(pose.rotation().matrix(), pose.translation())

    def rotation(self) -> TracedRotation:
        return TracedRotation(self.R)

    def translation(self):
        return self.p

    def compose(self, other: TracedPose | gtsam.Pose3) -> TracedPose:
        if isinstance(other, gtsam.Pose3):  # a robot constant, such as a base's lTcom
            other = TracedPose.constant(other)
        return TracedPose(_matmul(self.R, other.R), _matmul(self.R, other.p) + self.p)

    def inverse(self) -> TracedPose:
        Rt = self.R.T
        return TracedPose(Rt, -_matmul(Rt, self.p))

    def AdjointMap(self):
        """[[R, 0], [[p] R, R]] for twists [ω; v] (gtsam's convention)."""
        pR = _matmul(skew(self.p), self.R)
        return np.block([[self.R, np.zeros((3, 3))], [pR, self.R]])


def screw_exp(S: np.ndarray, theta) -> TracedPose:
    """exp([S]θ) for a constant unit screw axis S = [ω; v] and a traced θ (``gtdyn.spatial.screw_exp``)."""
    w, v = np.asarray(S[:3], float), np.asarray(S[3:], float)
    if np.linalg.norm(w) < 1e-12:  # prismatic: a pure translation
        return TracedPose(np.eye(3), v * theta)
    s, c = trace.sin(theta), trace.cos(theta)
    K = skew(w)
    K2 = K @ K
    one_minus_c = 1.0 - c
    R = np.eye(3) + K * s + K2 * one_minus_c
    # ∫₀^θ exp([ω]t) dt · v = (I θ + (1 − cos θ) [ω] + (θ − sin θ) [ω]²) v = ω (ωᵀv) θ + v⊥ sin θ + (ω × v)(1 − cos θ),
    # with v⊥ = v − ω (ωᵀv) ([ω]² v = −v⊥): a revolute joint's axis has no pitch (ωᵀv = 0), and its θ terms,
    # which cancel, are not written (they grew with θ, lost digits at large angles, and left no bound on p)
    pitch = float(w @ v)
    if abs(pitch) <= 1e-12 * (1.0 + float(np.linalg.norm(v))):  # a revolute joint's, but for the rounding in ω × r
        pitch = 0.0
    p = (v - w * pitch) * s + (K @ v) * one_minus_c
    if pitch != 0.0:
        p = p + w * pitch * theta
    return TracedPose(R.astype(object), np.asarray(p, dtype=object))


def parent_T_child(joint, q) -> TracedPose:
    """pTc(q) = rest_pose · exp([S] q) (``Joint.parent_T_child``)."""
    return TracedPose.constant(joint.rest_pose).compose(screw_exp(joint.screw_axis, q))


def _entry_gap(wTc: TracedPose, wTc_reached: TracedPose) -> list:
    """The entries of (R, p) reached through a loop joint minus the tree's: zero when the loop closes (traced
    code keeps to arithmetic, so no Log)."""
    return list((wTc_reached.R - wTc.R).ravel()) + list(wTc_reached.p - wTc.p)


TRACED = PoseAlgebra(identity=lambda: TracedPose(np.eye(3), np.zeros(3)), joint_transform=parent_T_child,
                     matvec=_matmul, pose_gap=_entry_gap)


def traced_kinematics(robot: Robot, q, v, base_rotation=None, base_twist=None,
                      cut=None) -> tuple[KinematicState, dict[str, tuple]]:
    """Poses and twists of every link root → leaves (``gtdyn.kinematics.forward.kinematic_pass`` on traced values),
    and per loop joint the traced closure residuals: (pose mismatch entries, twist mismatch entries).

    A floating base starts at ``base_rotation`` (3×3, world ← root link; its position does not enter the
    dynamics, gravity being uniform) with ``base_twist`` (6, root link frame). ``cut`` (on dual numbers:
    ``gtdyn.compiled.dual.Cuts.cut``) is applied to each link's pose and twist as the pass computes them."""
    algebra = TRACED if cut is None else dataclasses.replace(
        TRACED, checkpoint=lambda wTc, V_c: (TracedPose(cut(wTc.R), cut(wTc.p)), cut(V_c)))
    wTl = None if base_rotation is None else TracedPose(base_rotation, np.zeros(3))
    kin, _ = kinematic_pass(robot, algebra, q, v, *base_in_com(robot, algebra, wTl, base_twist))
    closure = {name: (kin.pose_closure[name], list(kin.twist_closure[name])) for name in kin.pose_closure}
    return dataclasses.replace(kin, pose_closure={}, twist_closure={}), closure
