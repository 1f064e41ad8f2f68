"""Plumbing shared by the factor classes: hard noise, reading values, filling Jacobians."""

from __future__ import annotations

from collections.abc import Callable

import gtsam
import numpy as np

# evaluate(values) -> (error, {key: Jacobian})
Evaluate = Callable[[gtsam.Values], tuple[np.ndarray, dict[int, np.ndarray]]]


def hard(dim: int) -> gtsam.noiseModel.Base:
    """The noise model of an equality constraint."""
    return gtsam.noiseModel.Constrained.All(dim)


def scalar(values: gtsam.Values, key: int) -> float:
    return float(values.atVector(key)[0])


def vector(values: gtsam.Values, key: int | None, dim: int = 6) -> np.ndarray:
    """A vector variable, or zeros for the fixed base (key None)."""
    return np.zeros(dim) if key is None else values.atVector(key)


def error_function(keys: list[int], evaluate: Evaluate):
    """Wrap ``evaluate`` in GTSAM's CustomFactor callback contract (fill H[i] only when asked)."""

    def error(this, values, H):
        e, jacobians = evaluate(values)
        if H is not None:
            for i, key in enumerate(keys):
                H[i] = np.atleast_2d(jacobians[key])
        return e

    return error


def present(*keys: int | None) -> list[int]:
    """The keys that are variables (dropping None, the fixed base)."""
    return [k for k in keys if k is not None]
