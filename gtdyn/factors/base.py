"""Plumbing shared by the factor classes: hard noise, reading values, evaluating an equation of
``gtdyn.equations`` at them and handing Jacobians to GTSAM.

GTSAM's ``CustomFactor`` contract: ``error(this, values, H)`` returns the error vector and fills ``H[i]``
(the Jacobian for the factor's i-th key) only when ``H`` is not None, so each factor computes its Jacobians
behind ``if H is not None``.

A factor evaluates its equation's ``LinearEquation`` (coefficient blocks and right-hand side at the current q,
q̇, V and poses): its error is ``LinearEquation.error`` at the values of the equation's variable roles, and its
Jacobians are the coefficient blocks for those roles plus the derivatives of the blocks and the right-hand side
in the nonlinear variables, which each factor adds.
"""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.equations import LinearEquation
from gtdyn.spatial import ad


def hard(dim: int) -> gtsam.noiseModel.Base:
    """The noise model of an equality constraint."""
    return gtsam.noiseModel.Constrained.All(dim)


def scalar(values: gtsam.Values, key: int) -> float:
    return float(values.atVector(key)[0])


def vector(values: gtsam.Values, key: int | None, dim: int = 6) -> np.ndarray:
    """A vector variable, or zeros for the fixed base (key None)."""
    return np.zeros(dim) if key is None else values.atVector(key)


def pose(values: gtsam.Values, key: int | None) -> gtsam.Pose3:
    """A pose variable, or the identity for the fixed base (key None)."""
    return gtsam.Pose3() if key is None else values.atPose3(key)


def evaluate(equation: LinearEquation, roles: dict[str, int | None],
             values: gtsam.Values) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(Σ coefficient · x − rhs, x): the equation's error at the values of its roles (role name → key; None is
    the fixed base's zero), and the values read."""
    x = {name: vector(values, key, equation.coefficients[name].shape[1]) for name, key in roles.items()}
    return equation.error(x), x


def coefficient_jacobians(equation: LinearEquation, roles: dict[str, int | None]) -> dict[int, np.ndarray]:
    """∂e/∂x of each role's variable: its coefficient block (the fixed base, None, is no variable)."""
    out: dict[int, np.ndarray] = {}
    for name, key in roles.items():
        add(out, key, equation.coefficients[name])
    return out


def constant_equation_error(equation: LinearEquation, roles: dict[str, int | None], keys: list[int], name: str):
    """The ``CustomFactor`` error function of an equation whose coefficients are constants (eq. 7, a
    transmission, a minimum norm): its error at the values, its coefficient blocks as the Jacobians. ``name``
    names the function after its equation."""
    jacobians = coefficient_jacobians(equation, roles)

    def error(this, values, H):
        e, _ = evaluate(equation, roles, values)
        if H is not None:
            fill(H, keys, jacobians)
        return e

    error.__name__ = error.__qualname__ = name
    return error


def add(jacobians: dict, key: int | None, block) -> None:
    """jacobians[key] += block (a variable met in two places sums its parts); nothing for None."""
    if key is not None:
        block = np.asarray(block, dtype=float)
        jacobians[key] = jacobians[key] + block.reshape(jacobians[key].shape) if key in jacobians else block


def fill(H: list, keys: list[int], jacobians: dict) -> None:
    """H[i] = ∂e/∂keys[i]; a 1-D array is the column of a scalar variable. ``jacobians`` may also hold an entry
    for None (the fixed base), which is not a key."""
    for i, key in enumerate(keys):
        J = np.asarray(jacobians[key], dtype=float)
        H[i] = J.reshape(-1, 1) if J.ndim == 1 else J


def present(*keys: int | None) -> list[int]:
    """The keys that are variables (dropping None, the fixed base)."""
    return [k for k in keys if k is not None]


def turned_by_joint(S: np.ndarray, y: np.ndarray) -> np.ndarray:
    """∂y/∂q for y = c·[Ad_cTp(q)] x with x fixed: moving q by δ turns cTp into exp(−[S]δ)·cTp, so
    [Ad_cTp] into (I − δ [ad_S]) [Ad_cTp] and ∂y/∂q = −[ad_S] y."""
    return -ad(S) @ y
