"""Priors that make known quantities known: hard priors on joint scalars, vectors and poses."""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.factors.base import hard


def joint_prior(key: int, value: float) -> gtsam.PriorFactorVector:
    """Fix a scalar joint quantity (q, q̇, q̈ or τ), stored as a 1-vector."""
    return gtsam.PriorFactorVector(key, np.array([float(value)]), hard(1))


def vector_prior(key: int, value) -> gtsam.PriorFactorVector:
    """Fix a twist, acceleration or wrench."""
    value = np.asarray(value, float)
    return gtsam.PriorFactorVector(key, value, hard(len(value)))


def pose_prior(key: int, value: gtsam.Pose3) -> gtsam.PriorFactorPose3:
    return gtsam.PriorFactorPose3(key, value, hard(6))
