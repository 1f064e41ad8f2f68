"""Plumbing shared by the factor classes: hard noise, reading values, handing Jacobians to GTSAM.

GTSAM's ``CustomFactor`` contract: ``error(this, values, H)`` returns the error vector and fills ``H[i]``
(the Jacobian for the factor's i-th key) only when ``H`` is not None, so each factor computes its Jacobians
behind ``if H is not None``.
"""

from __future__ import annotations

import gtsam
import numpy as np


def hard(dim: int) -> gtsam.noiseModel.Base:
    """The noise model of an equality constraint."""
    return gtsam.noiseModel.Constrained.All(dim)


def scalar(values: gtsam.Values, key: int) -> float:
    return float(values.atVector(key)[0])


def vector(values: gtsam.Values, key: int | None, dim: int = 6) -> np.ndarray:
    """A vector variable, or zeros for the fixed base (key None)."""
    return np.zeros(dim) if key is None else values.atVector(key)


def fill(H: list, keys: list[int], jacobians: dict) -> None:
    """H[i] = ∂e/∂keys[i]; a 1-D array is the column of a scalar variable. ``jacobians`` may also hold an entry
    for None (the fixed base), which is not a key."""
    for i, key in enumerate(keys):
        J = np.asarray(jacobians[key], dtype=float)
        H[i] = J.reshape(-1, 1) if J.ndim == 1 else J


def present(*keys: int | None) -> list[int]:
    """The keys that are variables (dropping None, the fixed base)."""
    return [k for k in keys if k is not None]
