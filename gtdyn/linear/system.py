"""Exact linear equations as GTSAM factors: a ``LinearEquation`` (``gtdyn.equations``) with each of its roles
either an unknown (a ``Key``) or a known value, which moves to the right-hand side."""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.equations import LinearEquation
from gtdyn.factors.base import hard


class Key(int):
    """Marks an equation role as an unknown variable (a gtsam key) rather than a known value."""


def noise(dim: int, constrained: bool) -> gtsam.noiseModel.Base:
    """GTSAM's hard-constraint model, or unit weights for an exact equation in a square system."""
    return hard(dim) if constrained else gtsam.noiseModel.Unit.Create(dim)


def linear_factor(terms: list[tuple[int, np.ndarray]], rhs: np.ndarray, constrained: bool = False) -> gtsam.JacobianFactor:
    """A JacobianFactor Σ A_k x_k = rhs on any number of keys.

    GTSAM's Python constructors stop at three keys; beyond that (a link with several child joints) the
    factor is made by linearising a CustomFactor with the same constant blocks, which is exact.
    """
    model = noise(len(rhs), constrained)
    if len(terms) <= 3:
        flat = [x for key, A in terms for x in (key, A)]
        return gtsam.JacobianFactor(*flat, rhs, model)

    blocks = [A for _, A in terms]

    def error(this, values, H):
        if H is not None:
            for k, A in enumerate(blocks):
                H[k] = A
        return sum(A @ values.atVector(key) for key, A in terms) - rhs

    factor = gtsam.CustomFactor(model, [key for key, _ in terms], error)
    at_zero = gtsam.Values()
    for key, A in terms:
        at_zero.insert(key, np.zeros(A.shape[1]))
    return gtsam.JacobianFactor(factor.linearize(at_zero))


def add_equation(graph: gtsam.GaussianFactorGraph, eq: LinearEquation, roles: dict, constrained: bool,
                  column_norms: dict | None, soft: bool = False) -> None:
    """Add eq as a linear factor. ``roles`` maps each coefficient name to a ``Key`` (an unknown) or to a known
    value, which moves to the right-hand side. Squared column norms of the unknowns accumulate in
    ``column_norms`` (for the condition estimate of ``gtdyn.linear.elimination``)."""
    rhs = np.array(eq.rhs, dtype=float)
    terms = []
    for name, coefficient in eq.coefficients.items():
        role = roles[name]
        if isinstance(role, Key):
            block = np.asarray(coefficient, dtype=float)
            terms.append((int(role), block))
            if column_norms is not None:
                column_norms[int(role)] = column_norms.get(int(role), 0.0) + np.einsum("ij,ij->j", block, block)
        else:
            rhs = rhs - coefficient @ np.atleast_1d(role)
    if soft:  # a least-squares preference, never a constraint
        flat = [x for key, A in terms for x in (key, A)]
        graph.push_back(gtsam.JacobianFactor(*flat, rhs, gtsam.noiseModel.Unit.Create(len(rhs))))
    else:
        graph.push_back(linear_factor(terms, rhs, constrained))
