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
    """GTSAM's hard-constraint model, or unit weights for an exact equation in a square system. Noise models are
    immutable, so one per (dim, constrained) serves every factor."""
    model = _NOISE.get((dim, constrained))
    if model is None:
        model = _NOISE[dim, constrained] = hard(dim) if constrained else gtsam.noiseModel.Unit.Create(dim)
    return model


_NOISE: dict[tuple[int, bool], gtsam.noiseModel.Base] = {}


def linear_factor(terms: list[tuple[int, np.ndarray]], rhs: np.ndarray,
                  constrained: bool = False) -> gtsam.JacobianFactor:
    """A JacobianFactor Σ A_k x_k = rhs on any number of keys.

    GTSAM's Python constructors stop at three keys; beyond that (a link with several child joints) the
    factor is made by linearising a CustomFactor with the same constant blocks, which is exact.
    """
    model = noise(len(rhs), constrained)
    if len(terms) == 1:
        return gtsam.JacobianFactor(terms[0][0], terms[0][1], rhs, model)
    if len(terms) == 2:
        return gtsam.JacobianFactor(terms[0][0], terms[0][1], terms[1][0], terms[1][1], rhs, model)
    if len(terms) == 3:
        return gtsam.JacobianFactor(terms[0][0], terms[0][1], terms[1][0], terms[1][1], terms[2][0], terms[2][1], rhs,
                                    model)

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
                 soft: bool = False) -> None:
    """Add eq as a linear factor. ``roles`` maps each coefficient name to a ``Key`` (an unknown) or to a known
    value, which moves to the right-hand side. (``gtdyn.linear.elimination.squared_column_norms`` gives the
    unknowns' column norms of the finished graph.)"""
    rhs = eq.rhs
    terms = []
    for name, coefficient in eq.coefficients.items():
        role = roles[name]
        if isinstance(role, Key):
            terms.append((role, coefficient))
        else:
            rhs = rhs - coefficient @ np.atleast_1d(role)
    graph.push_back(linear_factor(terms, np.asarray(rhs, dtype=float), constrained and not soft))
