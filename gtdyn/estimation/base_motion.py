"""A floating base's measured motion in trajectory estimation: the measured poses checked, and the base's
kinematic part of the graph — pose priors, integration factors on SE(3), snap priors on its acceleration —
solved for the start."""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn import keys as K
from gtdyn.arguments import pose_argument
from gtdyn.errors import ArgumentError
from gtdyn.estimation.snap import SnapFactor
from gtdyn.estimation.steps import BaseState
from gtdyn.factors import base_integration_factors
from gtdyn.model import base_frame
from gtdyn.model.robot import Robot


def measured_base_poses(robot: Robot, base_pose, N: int) -> list[gtsam.Pose3]:
    """The measured poses of a floating base's root link, one per sample."""
    if not robot.floating_base:
        raise ArgumentError(f"base_pose: '{robot.name}' has a fixed base (load it with base=\"floating\")")
    if base_pose is None:
        raise ArgumentError(f"base_pose: '{robot.name}' has a floating base, whose motion must be measured: give its "
                            f"root link's pose at each sample, an array ({N}, 4, 4)")
    if isinstance(base_pose, np.ndarray) or not isinstance(base_pose, (list, tuple)):
        poses = np.asarray(base_pose, dtype=float) if not isinstance(base_pose, str) else np.empty(0)
        if poses.shape != (N, 4, 4):
            raise ArgumentError(f"base_pose: expected an array ({N}, 4, 4), one pose per time in t, got shape "
                                f"{poses.shape}")
        base_pose = list(poses)
    if len(base_pose) != N:
        raise ArgumentError(f"base_pose: expected {N} poses, one per time in t, got {len(base_pose)}")
    return [pose_argument(f"base_pose[{k}]", T) for k, T in enumerate(base_pose)]


def base_motion(robot: Robot, t: np.ndarray, poses: list[gtsam.Pose3], sigma: np.ndarray, s: np.ndarray,
                rule: str, solve) -> tuple[gtsam.NonlinearFactorGraph, list[BaseState]]:
    """The base's kinematic part — pose priors, integration factors (pose on SE(3), twist) and snap priors on its
    acceleration, on body 0's CoM frame — and its solution by Gauss–Newton (QR) from the measured poses, with
    twists from their differences (``solve``: the linear least-squares solver, QR): each sample's ``BaseState``
    in the root link frame."""
    graph, values = gtsam.NonlinearFactorGraph(), gtsam.Values()
    h = np.diff(t)
    com = [base_frame.pose_to_com(robot, T) for T in poses]
    at = [[K.at_step(key(0), k) for k in range(len(t))] for key in (K.pose_key, K.twist_key, K.twist_accel_key)]
    for k in range(len(t)):
        graph.add(gtsam.PriorFactorPose3(at[0][k], com[k], gtsam.noiseModel.Diagonal.Sigmas(sigma)))
        if k + 1 < len(t):
            for factor in base_integration_factors(k, float(h[k]), rule):
                graph.add(factor)
        if 0 < k < len(t) - 1:
            graph.add(SnapFactor(at[2][k - 1], at[2][k], at[2][k + 1], float(h[k - 1]), float(h[k]), s))
        values.insert(at[0][k], com[k])
        step = min(k, len(t) - 2)
        values.insert(at[1][k], gtsam.Pose3.Logmap(com[step].between(com[step + 1])) / h[step])
        values.insert(at[2][k], np.zeros(6))
    for _ in range(50):
        delta = solve(graph.linearize(values))
        values = values.retract(delta)
        if np.max(np.abs(delta.vector())) < 1e-13:
            break
    to_link = base_frame.twist_to_link(robot)
    return graph, [BaseState(base_frame.pose_to_link(robot, values.atPose3(at[0][k])),
                             to_link @ values.atVector(at[1][k]), to_link @ values.atVector(at[2][k]))
                   for k in range(len(t))]
