"""Eliminating a linear graph of exact equations, and deciding — independently of the ordering — whether the
equations determine their unknowns.

Elimination is Householder QR on unit-weighted equations (backward stable in every variable ordering) or, on
request, GTSAM's elimination of hard-constraint factors. Either way the verdict on determinacy comes from one
number that does not depend on the ordering: the condition of the column-equilibrated equations,

    κ = 1 / σ_min(A D⁻¹),   D = diag(column norms of A),

which the Bayes net gives cheaply: QR of A P is Q R, so R D⁻¹ has the singular values of A D⁻¹ whatever the
permutation P. A few steps of inverse iteration on (R D⁻¹)ᵀ(R D⁻¹) — two sparse triangular solves each — from
a start vector fixed per variable (not per elimination position) estimate it. Equilibrated columns have unit
norm, so σ_max lies between 1 and a small multiple of it, and κ is the 2-norm condition number up to that
factor. A pivot test, by contrast, is fooled by fill-in: a round-off-sized pivot can look healthy next to a
column that fill made large.

* κ ≤ ``WARN_CONDITION``: the answer is accurate to about κ·ε in every ordering.
* ``WARN_CONDITION`` < κ ≤ ``SINGULAR_CONDITION``: solved, with an ``IllConditionedWarning`` naming the
  variables (and their links or joints) that carry the near-singular direction.
* κ > ``SINGULAR_CONDITION``, or a zero pivot: ``IndeterminateSystemError`` naming the free variables.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import gtsam
import numpy as np

from gtdyn import keys
from gtdyn.errors import IllConditionedWarning, IndeterminateSystemError

METHODS = ("qr", "constrained")
# κ·ε ≈ 2e-8 here: orderings agree to the 1e-8 relative accuracy gtdyn promises (and tests) below it.
WARN_CONDITION = 1e8
# Within a relative perturbation of 1e-12 of a singular system, e.g. a subtree whose inertia along its joint
# is 1e-12 of the robot's: no digit beyond the fourth can be trusted, and usually none is right.
SINGULAR_CONDITION = 1e12
INVERSE_ITERATIONS = 3  # a lower bound of 1/σ_min, within a small factor; near-singular directions converge in 1–2
WEAK_SHARE = 0.1  # variables whose share of the weakest direction exceeds this are named as its culprits


@dataclass(frozen=True)
class Elimination:
    """A Bayes net with its condition estimate κ and the variables along the weakest direction; ``method``
    is how it was made ("qr": its conditionals are the R of a QR factorization of the unit-weighted graph)."""

    bayes_net: gtsam.GaussianBayesNet
    condition: float
    weakest: list[int]
    method: str = "qr"
    qr_net: gtsam.GaussianBayesNet | None = None  # the QR net of the unit-weighted rows (bayes_net itself for "qr")

    def solve(self, graph: gtsam.GaussianFactorGraph) -> gtsam.VectorValues:
        """Back-substitution; on a QR net followed by one step of iterative refinement by the corrected
        semi-normal equations, x ← x − R⁻¹ R⁻ᵀ Aᵀ(Ax − b) (Björck): it makes the answer as good as the
        problem's componentwise conditioning allows. On iCub (κ ≈ 1e7) it brings every ordering from
        5e-9…2e-7 to ~1e-10 of Pinocchio's ABA. GTSAM raises RuntimeError on non-finite numbers."""
        x = self.bayes_net.optimize()
        if self.method != "qr":
            return x
        correction = self.bayes_net.backSubstitute(self.bayes_net.backSubstituteTranspose(graph.gradient(x)))
        return x.subtract(correction)


def eliminate(graph: gtsam.GaussianFactorGraph, order: gtsam.Ordering, *, method: str = "qr",
              column_norms: dict[int, np.ndarray] | None = None, owner: Callable[[int], str] | None = None,
              warn: bool = True) -> Elimination:
    """Sequential elimination into a Bayes net, with the determinacy verdict of the module docstring.

    ``column_norms``: squared column norms per key of the exact equations (``squared_column_norms``; computed
    here if not given). ``owner(key)`` names the joint or link of a variable in messages.
    """
    norms = column_norms if column_norms is not None else squared_column_norms(graph)
    try:
        if method == "qr":
            bayes_net = graph.eliminateSequential(order, gtsam.EliminateQR)
            qr_net = bayes_net
        else:
            bayes_net = graph.eliminateSequential(order)
            qr_net = unit_weighted(graph).eliminateSequential(order, gtsam.EliminateQR)
    except RuntimeError as e:  # GTSAM's constrained path reports a singular system itself
        if "ndetermin" not in str(e):
            raise
        raise _indeterminate(graph, norms, owner, float("inf"), []) from None
    condition, weakest = condition_estimate(qr_net, norms)
    if not condition <= SINGULAR_CONDITION:  # also NaN: a zero pivot
        raise _indeterminate(graph, norms, owner, condition, weakest)
    if condition > WARN_CONDITION and warn:
        warnings.warn(IllConditionedWarning(
            f"the dynamics equations are ill-conditioned (condition estimate {condition:.2g}): results may differ "
            f"between orderings in digits beyond the {int(np.log10(1 / (condition * np.finfo(float).eps)))}th; "
            "the weak "
            f"direction involves {_named(weakest, owner)}"), stacklevel=_user_stacklevel())
    return Elimination(bayes_net, condition, weakest, method, qr_net)


def condition_estimate(bayes_net: gtsam.GaussianBayesNet, squared_norms: dict[int, np.ndarray],
                       iterations: int = INVERSE_ITERATIONS) -> tuple[float, list[int]]:
    """κ = 1/σ_min(R D⁻¹) for the QR Bayes net R, by inverse iteration; and the variables whose share of the
    weakest direction exceeds ``WEAK_SHARE``. ``inf`` (or NaN) for a zero pivot."""
    key_list = sorted(squared_norms)  # a start vector per variable, not per elimination position
    if not key_list:  # nothing unknown (a robot without moving joints)
        return 1.0, []
    columns = [np.atleast_1d(squared_norms[k]) for k in key_list]
    dims = [n.size for n in columns]
    scale = np.sqrt(np.concatenate(columns))
    starts = np.cumsum([0] + dims)
    if not np.all(scale > 0):  # an unknown in no equation
        return float("inf"), [k for k, smallest in zip(key_list, np.minimum.reduceat(scale, starts[:-1]))
                              if not smallest > 0]
    w = _start_vector(len(scale))  # same start in every ordering: same estimate
    x = _values(key_list, starts.tolist(), w / scale)  # D⁻¹ w, as GTSAM's VectorValues
    growth = 0.0
    with np.errstate(all="ignore"):
        for _ in range(iterations):
            try:
                y = bayes_net.backSubstitute(bayes_net.backSubstituteTranspose(x))  # R⁻¹ R⁻ᵀ D⁻¹ w
            except RuntimeError:  # GTSAM refuses an exactly zero pivot
                return float("inf"), []
            z = scale * y.vector()  # B⁻¹ B⁻ᵀ w with B = R D⁻¹ (VectorValues are ordered by key, like scale)
            growth = float(np.linalg.norm(z))
            if not np.isfinite(growth) or growth == 0.0:
                return float("inf"), []
            w = z / growth
            x = y.scale(1.0 / growth)  # D⁻¹ w for the next step, without leaving GTSAM
    share = np.sqrt(np.add.reduceat(w * w, starts[:-1]))
    cutoff = WEAK_SHARE * share.max()
    return float(np.sqrt(growth)), [k for k, s in zip(key_list, share.tolist()) if s > cutoff]


def output_error_estimate(qr_net: gtsam.GaussianBayesNet, graph: gtsam.GaussianFactorGraph, x: gtsam.VectorValues,
                          groups: list[list[int]], samples: int = 2) -> float:
    """The relative error of the asked quantities that rounding leaves: max over ``groups`` (lists of keys, e.g. the
    q̈'s, the τ's, the contact forces) of ‖δx_group‖ / ‖x_group‖.

    κ speaks for the equations as a whole; an answer can be far less accurate than κ·ε when it is small beside
    the other unknowns — q̈ of a long chain beside the wrenches at its base (a 200-link chain: κ ≈ 4e5, yet q̈
    good to 1e-7 only, in every ordering and in Pinocchio). A backward-stable solve (QR, one
    refinement step) perturbs equation i by about ε fᵢ, f = |A||x| + |b|; the answer then moves by
    δx = A⁺ δr. Random signs δr = ε f ∘ ξ give a sample of that error (its variance is exactly the componentwise
    bound's square sum), ``samples`` of them — two solves each with the QR net — the largest kept. On uniform
    chains of 25–2,000 links it read 0.65–6.3× the worst error of the ABA and COLAMD orderings
    (``python -m benchmarks.verify_long_chains``).
    A group whose answer is smaller than its own estimated error (an exact equilibrium: all q̈ or all τ zero)
    is not judged — relative accuracy means nothing there; one whose error reaches its size would be missed
    with it (an answer with no correct digit at all).

    Why an estimate to read and not a warning: relative to the answer, a robot settling at rest is as "sensitive"
    as a long chain — its q̈ shrinks towards zero beside the gravity forces — and a warning on the estimate fired
    3,762 times in 20,000 steps of a PUMA settling under computed-torque control.
    """
    rows, columns, entries = graph.sparseJacobian_()  # 1-based, whitened (hard rows as they are); last column b
    key_list, starts = _columns(graph)
    rows, columns = rows.astype(np.intp) - 1, columns.astype(np.intp) - 1
    in_a = columns < starts[-1]
    solution = x.vector()  # VectorValues are ordered by key
    count = int(rows.max()) + 1 if rows.size else 0
    magnitude = np.bincount(rows, weights=np.abs(entries) * np.where(in_a, np.abs(solution[np.where(in_a, columns, 0)]),
                                                                     1.0), minlength=count)
    group_of = np.zeros(starts[-1], np.intp)  # each column's group, 0 for the unknowns not asked
    position = dict(zip(key_list, starts))
    for number, group in enumerate(groups, start=1):
        for key in group:
            group_of[position[key]:position[key] + keys.dim(key)] = number
    sizes = np.bincount(group_of, weights=solution * solution, minlength=len(groups) + 1)[1:]
    worst = 0.0
    with np.errstate(all="ignore"):
        for sign in _signs(count, samples):
            perturbation = np.finfo(float).eps * magnitude * sign
            gradient = np.bincount(columns[in_a], weights=entries[in_a] * perturbation[rows[in_a]],
                                   minlength=starts[-1])  # Aᵀ δr
            try:
                moved = qr_net.backSubstitute(qr_net.backSubstituteTranspose(_values(key_list, starts, gradient)))
            except RuntimeError:
                return float("inf")
            delta = moved.vector()
            errors = np.bincount(group_of, weights=delta * delta, minlength=len(groups) + 1)[1:]
            # a part whose answer is zero to within its own rounding (an equilibrium: q̈ = 0, τ = 0) has no
            # relative accuracy to speak of, and is not judged
            judged = sizes > errors
            ratios = np.sqrt(errors[judged] / sizes[judged])
            worst = max(worst, float(np.max(ratios, initial=0.0)))
    return float(worst)


@lru_cache(maxsize=64)
def _signs(n: int, samples: int) -> np.ndarray:
    """Fixed random signs (read-only), ``samples`` rows of n: the same estimate in every ordering and call."""
    drawn = np.random.default_rng(1).choice([-1.0, 1.0], (samples, n))
    drawn.flags.writeable = False
    return drawn


@lru_cache(maxsize=64)
def _start_vector(n: int) -> np.ndarray:
    """A fixed random unit vector of length n (read-only): drawing it costs a tenth of the estimate."""
    w = np.random.default_rng(0).standard_normal(n)
    w /= np.linalg.norm(w)
    w.flags.writeable = False
    return w


def _columns(graph: gtsam.GaussianFactorGraph) -> tuple[list[int], list[int]]:
    """The graph's unknowns in key order and where each one's columns start, as GTSAM's sparse Jacobian numbers
    them (and VectorValues order them)."""
    key_list = sorted(graph.keyVector())
    return key_list, np.cumsum([0] + [keys.dim(k) for k in key_list]).tolist()


def _values(key_list: list[int], starts: list[int], flat: np.ndarray) -> gtsam.VectorValues:
    """VectorValues from a flat vector in which key k's block starts at ``starts[k's position]``."""
    out = gtsam.VectorValues()
    for key, start, end in zip(key_list, starts[:-1], starts[1:]):
        out.insert(key, flat[start:end])
    return out


def squared_column_norms(graph: gtsam.GaussianFactorGraph) -> dict[int, np.ndarray]:
    """Squared column norms of every unknown of a linear graph (hard, i.e. unit-weighted, rows), from its sparse
    Jacobian in one pass: GTSAM numbers the columns by key, each key's block as wide as its variable."""
    key_list, starts = _columns(graph)
    rows_cols_values = graph.sparseJacobian_()  # 1-based, whitened (which leaves hard rows as they are); last column b
    with np.errstate(over="ignore"):  # an overflowing state: its inf is the overflow check's, which names the input
        squares = np.bincount(rows_cols_values[1].astype(np.intp) - 1, weights=rows_cols_values[2] ** 2,
                              minlength=starts[-1] + 1)
    return {key: squares[start:end] for key, start, end in zip(key_list, starts[:-1], starts[1:])}


def unit_weighted(graph: gtsam.GaussianFactorGraph) -> gtsam.GaussianFactorGraph:
    """A copy of the graph with unit weights (hard constraints become ordinary rows), for Householder QR."""
    out = gtsam.GaussianFactorGraph()
    for i in range(graph.size()):
        factor = gtsam.JacobianFactor(graph.at(i))  # a copy
        factor.setModel(False, np.ones(factor.rows()))
        out.push_back(factor)
    return out


def free_variables(graph: gtsam.GaussianFactorGraph, squared_norms: dict[int, np.ndarray] | None = None,
                   condition_limit: float = SINGULAR_CONDITION) -> list[int]:
    """Keys of the unknowns with a component in the (near) null space of the column-equilibrated Jacobian:
    right singular vectors whose σ is below σ_max / ``condition_limit``. Dense: for error messages only."""
    A, _ = graph.jacobian()
    ordered = sorted(set(graph.keyVector()))  # GaussianFactorGraph.jacobian() orders its columns by key
    norms = squared_norms if squared_norms is not None else squared_column_norms(graph)
    scale = np.sqrt(np.concatenate([np.atleast_1d(norms[k]) for k in ordered]))
    with np.errstate(all="ignore"):
        B = np.where(scale > 0, A / np.where(scale > 0, scale, 1.0), 0.0)
    try:
        _, s, Vt = np.linalg.svd(B)
    except np.linalg.LinAlgError:
        # numbers too wild for an SVD (an overflowing state): the caller's estimate names them
        return []
    rank = int(np.sum(s > s[0] / condition_limit)) if s.size and s[0] > 0 else 0
    null = Vt[rank:]
    out, col = [], 0
    for key in ordered:
        d = keys.dim(key)
        if np.any(scale[col:col + d] == 0) or (null.size and np.max(np.abs(null[:, col:col + d])) > 1e-6):
            out.append(key)
        col += d
    return out


def _indeterminate(graph, norms, owner, condition: float, weakest: list[int]) -> IndeterminateSystemError:
    free = free_variables(graph, norms) or weakest
    labels = [keys.label(k) for k in free]
    how = "exactly singular" if not np.isfinite(condition) else f"condition estimate {condition:.2g}"
    return IndeterminateSystemError(
        f"the dynamics equations do not determine {_named(free, owner) if free else 'every unknown'} ({how}: a "
        "massless or nearly massless link, or a mechanism that needs more constraints)", labels, condition)


def _named(key_list: list[int], owner: Callable[[int], str] | None) -> str:
    return ", ".join(f"{keys.label(k)} ({owner(k)})" if owner else keys.label(k) for k in key_list)


def _user_stacklevel() -> int:
    """The stack level of the first frame outside gtdyn, so a warning points at the user's call."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith("gtdyn"):
        frame, level = frame.f_back, level + 1
    return level
