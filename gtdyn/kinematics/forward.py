"""Kinematic quantities computed before the dynamics: link poses, joint transforms and link twists.

Eliminating the pose and twist factors (eq. 4) of the spanning tree root→leaf is a forward pass; this module
does that pass directly with the same equations, so the dynamics graph that follows is linear in its
unknowns. A loop-closing joint's transform comes from its own q; how far the loop then fails to close (in
pose and in twist) is reported, because the dynamics need a consistent state.

The pass is written once, over a ``PoseAlgebra``: on numbers (``gtsam.Pose3``, ``NUMERIC``) it gives the state
the reference path solves at; on traced symbols (``gtdyn.compiled.kinematics``) the same steps write the code of
a compiled solver; the variational integrator (``gtdyn.simulation.variational``) takes its poses from it too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gtsam
import numpy as np

from gtdyn.equations import twist_equation
from gtdyn.model.base_frame import pose_to_com, twist_to_com
from gtdyn.model.robot import Joint, Robot


@dataclass(frozen=True)
class KinematicState:
    """Everything eq. 5–7 need at one (q, v): indexed by link / joint index (index 0 = base)."""

    q: np.ndarray
    v: np.ndarray
    wT: list[gtsam.Pose3]  # wT[i]: pose of link i's dynamics frame in the world; a fixed base's wT[0] = identity
    cTp: list[gtsam.Pose3 | None]  # cTp[j]: parent's dynamics frame in joint j's child frame; cTp[0] unused
    V: list[np.ndarray]  # V[i]: twist of link i in its dynamics frame; a fixed base's V[0] = 0
    pose_closure: dict[str, np.ndarray]  # loop joint name -> Log of the pose mismatch around its loop
    twist_closure: dict[str, np.ndarray]  # loop joint name -> eq. 4 residual across the loop joint


@dataclass(frozen=True)
class PoseAlgebra:
    """What the kinematics pass needs of a pose type beyond the methods it shares with ``gtsam.Pose3``
    (``compose``, ``inverse``, ``AdjointMap``, ``rotation().unrotate``, which ``gtdyn.equations`` uses too)."""

    identity: Callable[[], Any]  # the identity pose
    joint_transform: Callable[[Joint, Any], Any]  # pTc(q) of a joint at its coordinate q
    matvec: Callable[[np.ndarray, np.ndarray], np.ndarray]  # M x, a matrix times a vector
    pose_gap: Callable[[Any, Any], Any]  # (wTc, wTc reached another way) -> how far apart they are
    # (wTc, V_c) -> the same, as the rest of the pass should see them: unchanged, except where derivatives are
    # written (``gtdyn.compiled.derivatives`` cuts the tangents there, to take them back in reverse mode)
    checkpoint: Callable[[Any, Any], tuple] = lambda wTc, V_c: (wTc, V_c)


def _log_gap(wTc: gtsam.Pose3, wTc_reached: gtsam.Pose3) -> np.ndarray:
    """Log(wTc⁻¹ · wTc_reached): the mismatch as a twist in the child's frame."""
    return gtsam.Pose3.Logmap(wTc.between(wTc_reached))


NUMERIC = PoseAlgebra(identity=gtsam.Pose3, joint_transform=Joint.parent_T_child, matvec=np.matmul,
                      pose_gap=_log_gap)


def base_in_com(robot: Robot, algebra: PoseAlgebra, wTl=None, V_l=None) -> tuple[Any, np.ndarray]:
    """(wT0, V0): where the pass starts, the base's pose and twist in its dynamics frame. A fixed base is the world;
    a floating base's dynamics frame is its CoM frame, its pose ``wTl`` (identity if None) and twist ``V_l``
    (zero if None) are given in its root link frame (``gtdyn.model.base_frame``)."""
    if not robot.floating_base:
        return algebra.identity(), np.zeros(6)
    wT0 = pose_to_com(robot, algebra.identity() if wTl is None else wTl)
    V0 = np.zeros(6) if V_l is None else algebra.matvec(twist_to_com(robot), V_l)
    return wT0, V0


def kinematic_pass(robot: Robot, algebra: PoseAlgebra, q, v, wT0, V0) -> tuple[KinematicState, list]:
    """Poses and twists of every link, root → leaves along the spanning tree, then each loop joint's closure.

    Starts at the base's dynamics frame: pose ``wT0``, twist ``V0`` (``base_in_com``). Per tree joint j from
    parent p to child c: pTc = pTc(q_j), cTp = pTc⁻¹, wT_c = wT_p · pTc, and V_c from eq. 4 solved for it. Per
    loop joint: its cTp from its own q, the child's pose reached through it against the tree's (``pose_gap``),
    and eq. 4's residual across it. Returns the state (q, v as given) and pTc by joint index (pTc[0] unused)."""
    n_links = len(robot.links)
    wT: list = [algebra.identity()] * (n_links + 1)
    pTc: list = [None] * (robot.num_dofs + 1)
    cTp: list = [None] * (robot.num_dofs + 1)
    V: list = [np.zeros(6)] * (n_links + 1)
    wT[0], V[0] = wT0, V0
    for joint in robot.tree_joints:  # forward pass
        j, p = joint.index, robot.link(joint.parent).index
        pTc[j] = algebra.joint_transform(joint, q[j - 1])
        cTp[j] = pTc[j].inverse()
        wT[j] = wT[p].compose(pTc[j])
        V[j] = child_twist(algebra, twist_equation(cTp[j], joint.screw_axis), V[p], v[j - 1])
        wT[j], V[j] = algebra.checkpoint(wT[j], V[j])
    pose_closure, twist_closure = {}, {}
    for joint in robot.loop_joints:
        j, p, c = joint.index, robot.link(joint.parent).index, robot.link(joint.child).index
        pTc[j] = algebra.joint_transform(joint, q[j - 1])
        cTp[j] = pTc[j].inverse()
        wTc_reached = wT[p].compose(cTp[j].inverse())  # the child's pose reached through the loop joint
        pose_closure[joint.name] = algebra.pose_gap(wT[c], wTc_reached)
        twist_closure[joint.name] = twist_equation(cTp[j], joint.screw_axis).error(
            {"V_c": V[c], "V_p": V[p], "v": v[j - 1]})
    return KinematicState(q, v, wT, cTp, V, pose_closure, twist_closure), pTc


def child_twist(algebra: PoseAlgebra, eq, V_p, v_j):
    """Eliminate V_c from eq. 4: V_c = rhs − coef_Vp V_p − coef_v q̇."""
    return eq.rhs - algebra.matvec(eq.coefficients["V_p"], V_p) - algebra.matvec(eq.coefficients["v"], np.array([v_j]))


def forward_kinematics(robot: Robot, q: np.ndarray, v: np.ndarray, base_pose: gtsam.Pose3 | None = None,
                       base_twist: np.ndarray | None = None) -> KinematicState:
    """Poses and twists of every link, root → leaves along the spanning tree, then loop-closure residuals.

    A floating base starts the pass at ``base_pose`` (world ← root link frame; identity if None) with
    ``base_twist`` ([ω; v] of the root link frame in that frame; zero if None); a fixed base is the world."""
    q, v = np.asarray(q, float), np.asarray(v, float)
    kin, _ = kinematic_pass(robot, NUMERIC, q, v, *base_in_com(robot, NUMERIC, base_pose, base_twist))
    return kin


def subtree_projections(robot: Robot, wrench_of: dict, pTc: dict) -> list:
    """The backward pass of paper 004's DRNEA (and of RNEA): Σ over each joint's subtree of the bodies' wrenches,
    moved across the joints leaf → root, projected on Sⱼ; on a floating base preceded by the whole sum on the base
    (its six). On numbers (``gtsam.Pose3``) or traced values (``gtdyn.compiled``): a list."""
    total = dict(wrench_of)
    out: list = [0.0] * robot.num_dofs
    for joint in reversed(robot.tree_joints):
        j, p = joint.index, robot.link(joint.parent).index
        out[j - 1] = joint.screw_axis @ total[j]
        if p or robot.floating_base:
            total[p] = total[p] + pTc[j].inverse().AdjointMap().T @ total[j]
    return [*total[0], *out] if robot.floating_base else out

