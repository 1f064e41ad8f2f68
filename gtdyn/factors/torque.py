"""Torque factor (eq. 7): the joint torque is the wrench projected on the screw axis."""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.factors.base import fill, hard, scalar
from gtdyn.model.robot import Joint


class TorqueFactor(gtsam.CustomFactor):
    """Eq. 7:  e = Sᵀ F − τ.  Keys: F, τ."""

    def __init__(self, joint: Joint, F: int, tau: int):
        S = joint.screw_axis
        keys = [F, tau]

        def error(this, values, H):
            e = np.array([S @ values.atVector(F) - scalar(values, tau)])
            if H is not None:
                fill(H, keys, {F: S.reshape(1, 6), tau: -np.ones((1, 1))})
            return e

        super().__init__(hard(1), keys, error)
