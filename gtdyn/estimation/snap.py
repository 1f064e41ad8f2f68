"""The snap prior of trajectory estimation: a weak prior on the change of a rate over two steps."""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn import keys as K


class SnapFactor(gtsam.CustomFactor):
    """e = (x_{k+1} − x_k)/h₁ − (x_k − x_{k−1})/h₀ for x a scalar (here q̈) or a vector (a base's acceleration,
    of ``keys.dim`` entries): the change of its rate over two steps h₀, h₁, with standard deviation
    s (h₀ + h₁)/2 (s one number, or one per entry) — a prior N(0, s²) on the rate's derivative."""

    def __init__(self, previous: int, current: int, following: int, h0: float, h1: float, s):
        c = (1.0 / h0, -1.0 / h0 - 1.0 / h1, 1.0 / h1)
        keys = [previous, current, following]
        dim = K.dim(current)
        J = [ci * np.eye(dim) for ci in c]

        def snap_error(this, values, H):
            if H is not None:
                H[0], H[1], H[2] = J
            return sum(ci * values.atVector(key) for ci, key in zip(c, keys, strict=True))

        sigmas = np.broadcast_to(np.asarray(s, float) * (h0 + h1) / 2, (dim,))
        super().__init__(gtsam.noiseModel.Diagonal.Sigmas(np.array(sigmas)), keys, snap_error)
