"""A floating base's block in the certificate's passes on magnitudes (``solve_abs``, ``solve_t_abs``).

Those passes take each step of the solve on magnitudes, |l|, |c| and |pivot|, so their Ŝ ≥ |S| entry by entry.
Where a floating base's six coupled unknowns are eliminated last (ABA's root: the whole robot's articulated
inertia B, a dense 6 × 6 block), the steps within the block — its own row operations L_B and its triangle U_B —
taken on magnitudes give |U_B⁻¹|-like products far above |B⁻¹|: on Talos (floating) they made u and Schur's u_S
4–15 times looser than the same passes with the block's exact inverse (benchmarks/results/design_measurements.md).
So the passes take the block whole: y_B = |B⁻¹| r_B (and its transpose), with B⁻¹ = U_B⁻¹ L_B⁻¹ computed from
the plan's own factors, one unit right-hand side at a time. Every other step stays as it was, so Ŝ still bounds
|S| entry by entry (|B⁻¹ r| ≤ |B⁻¹| |r|), and the transposed pass stays Ŝ's transpose.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gtdyn import keys
from gtdyn.compiled import trace
from gtdyn.compiled.plan import Plan, off_pivot


@dataclass(frozen=True)
class RootBlock:
    """The block's pivots ((key, component, row), in elimination order), their rows, and the positions in
    ``plan.tape`` of the block's own row operations (pivot and target both among those rows)."""

    pivots: tuple
    rows: frozenset
    internal: frozenset


def root_block(plan: Plan) -> RootBlock | None:
    """The floating base's block, when its unknowns (the root link's twist acceleration or wrench, six
    components) are the last the plan eliminates; None otherwise (fixed bases, other orderings)."""
    if not plan.pivots:
        return None
    key = plan.pivots[-1][0]
    if key not in (keys.twist_accel_key(0), keys.wrench_key(0)):
        return None
    pivots = tuple(plan.pivots[-keys.dim(key):])
    if any(k != key for k, _, _ in pivots):
        return None
    rows = frozenset(p for _, _, p in pivots)
    if any(set(plan.work[p]) != {key} for p in rows):  # eliminated last, its rows hold nothing else
        return None
    internal = frozenset(t for t, (i, p, _) in enumerate(plan.tape) if p in rows)
    if any(plan.tape[t][1] not in rows for t in internal) or any(plan.tape[t][0] not in rows for t in internal):
        return None
    return RootBlock(pivots, rows, internal)


def inverse_magnitudes(plan: Plan, block: RootBlock, coefficient_of) -> np.ndarray:
    """|B⁻¹| as traced values: entry (j, e) for the block's unknown j (pivot order) and row e (pivot order), B⁻¹'s
    column e being the block's solve (its row operations, then back-substitution) of the unit vector at row e,
    in signed arithmetic on ``coefficient_of`` the plan's values."""
    row_of = [p for _, _, p in block.pivots]
    operations = [plan.tape[t] for t in sorted(block.internal)]
    columns = []
    for e in range(len(row_of)):
        t = {p: 1.0 if j == e else 0.0 for j, p in enumerate(row_of)}
        for i, p, multiplier in operations:
            t[i] = t[i] - coefficient_of(multiplier) * t[p]
        y: dict = {}
        for key, c, p in reversed(block.pivots):
            total = t[p]
            for (other, k), coefficient in off_pivot(plan.work[p], key, c):
                total = total - coefficient_of(coefficient) * y[other, k]
            y[key, c] = trace.div(total, coefficient_of(plan.work[p][key][c]))
        columns.append([y[key, c] for key, c, _ in block.pivots])
    return np.array([[trace.fabs(columns[e][j]) for e in range(len(row_of))] for j in range(len(row_of))],
                    dtype=object)


def times(matrix: np.ndarray, vector: list) -> list:
    """``matrix`` (traced values, as ``inverse_magnitudes`` gives; its transpose for the transposed pass) times
    ``vector``, each entry summed in column order."""
    return [sum((row[e] * vector[e] for e in range(1, len(vector))), row[0] * vector[0]) for row in matrix]
