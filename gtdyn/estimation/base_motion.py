"""A floating base's measured motion in trajectory estimation: the measured poses checked, and the base's
kinematic part of the graph — pose priors, integration factors on SE(3), snap priors on its acceleration —
solved for the start."""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn import keys as K
from gtdyn.arguments.base import BaseState
from gtdyn.estimation.snap import SnapFactor
from gtdyn.factors import base_integration_factors
from gtdyn.model import base_frame
from gtdyn.model.robot import Robot


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
