"""Forward kinematics on traced values: the pass of ``gtdyn.kinematics.forward`` written as code.

``TracedPose`` offers the few ``gtsam.Pose3`` methods the equations use (``AdjointMap``, ``rotation().unrotate``,
``compose``, ``inverse``), on 3×3 and 3-vector object arrays whose entries are constants or ``Sym``s, so
``gtdyn.equations`` builds the same eq. 4–7 blocks from them as from numbers.
"""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.compiled import trace
from gtdyn.equations import twist_equation
from gtdyn.kinematics.forward import KinematicState
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

    def compose(self, other: TracedPose) -> TracedPose:
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
    # ∫₀^θ exp([ω]t) dt · v = (I θ + (1 − cos θ) [ω] + (θ − sin θ) [ω]²) v
    p = v * theta + (K @ v) * one_minus_c + (K2 @ v) * (theta - s)
    return TracedPose(R.astype(object), np.asarray(p, dtype=object))


def parent_T_child(joint, q) -> TracedPose:
    """pTc(q) = rest_pose · exp([S] q) (``Joint.parent_T_child``)."""
    return TracedPose.constant(joint.rest_pose).compose(screw_exp(joint.screw_axis, q))


def traced_kinematics(robot: Robot, q, v, base_rotation=None, base_twist=None) -> tuple[KinematicState, dict[str, tuple]]:
    """Poses and twists of every link root → leaves (``gtdyn.kinematics.forward.forward_kinematics``), and per
    loop joint the traced closure residuals: (pose mismatch entries, twist mismatch entries).

    A floating base starts at ``base_rotation`` (3×3, world ← root link; its position does not enter the
    dynamics, gravity being uniform) with ``base_twist`` (6, root link frame)."""
    n_links = len(robot.links)
    identity = TracedPose(np.eye(3), np.zeros(3))
    wT: list = [identity] * (n_links + 1)
    cTp: list = [None] * (robot.num_dofs + 1)
    V: list = [np.zeros(6)] * (n_links + 1)
    if robot.floating_base:  # as forward_kinematics: the base's dynamics frame is its CoM frame
        lTcom = robot.base.lTcom
        wT[0] = TracedPose(base_rotation, np.zeros(3)).compose(TracedPose.constant(lTcom))
        V[0] = _matmul(lTcom.inverse().AdjointMap(), base_twist)
    for joint in robot.tree_joints:
        j, p = joint.index, robot.link(joint.parent).index
        pTc = parent_T_child(joint, q[j - 1])
        cTp[j] = pTc.inverse()
        wT[j] = wT[p].compose(pTc)
        eq = twist_equation(cTp[j], joint.screw_axis)
        V[j] = eq.rhs - _matmul(eq.coefficients["V_p"], V[p]) - eq.coefficients["v"][:, 0] * v[j - 1]
    closure = {}
    for joint in robot.loop_joints:
        j, p, c = joint.index, robot.link(joint.parent).index, robot.link(joint.child).index
        cTp[j] = parent_T_child(joint, q[j - 1]).inverse()
        wTc = wT[p].compose(cTp[j].inverse())  # the child's pose reached through the loop joint
        pose_gap = list((wTc.R - wT[c].R).ravel()) + list(wTc.p - wT[c].p)
        twist_gap = twist_equation(cTp[j], joint.screw_axis).error({"V_c": V[c], "V_p": V[p], "v": v[j - 1]})
        closure[joint.name] = (pose_gap, list(twist_gap))
    return KinematicState(q, v, wT, cTp, V, {}, {}), closure
