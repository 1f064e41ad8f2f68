"""The a-priori backward error of plans that eliminate by substitution alone (RNEA's): with it a checked call
certifies without a residual (``gtdyn.compiled.certificate``)."""

from __future__ import annotations

from gtdyn.compiled import trace
from gtdyn.compiled.plan import Plan

UNIT_ROUNDOFF = 2.0 ** -53


def substitution_backward_error(plan: Plan) -> float | None:
    """For a plan that eliminates by substitution alone — no row operations, every row a pivot row, as RNEA's
    does — an a-priori bound on the backward error of every answer its solve computes; None for other plans.

    Back-substitution computes each unknown from its pivot row, x_c = (b_p − Σ_j a_pj x_j) / a_pc, on the rows of
    A themselves. In IEEE arithmetic without fused operations (the generated code has none), in any order of the
    sum, the computed x satisfies Σ_j a_pj (1 + θ_pj) x_j = b_p with |θ_pj| ≤ γ_k = k u / (1 − k u), k the row's
    entries and u the unit roundoff (Higham, Accuracy and Stability of Numerical Algorithms, Lemma 8.4): so
    |b − A x| ≤ γ_m |A| |x|, m the longest row, and

        ‖b − A x‖ / (‖A‖_F ‖x‖ + ‖b‖) ≤ γ_m ‖ |A| |x| ‖ / (‖A‖_F ‖x‖) ≤ γ_m.

    Underflow adds absolute errors the lemma leaves out: ``certificate.checked_call`` uses the bound only where
    ‖b‖₁ ≥ ``SMALLEST_RHS``, and only where x is finite."""
    if plan.tape or len(plan.pivots) != len(plan.rows):  # a row operation changes b too, and A's rows
        return None
    longest = 0
    for _, _, p in plan.pivots:
        solved = _entries(plan.work[p])
        if [(key, k) for key, k, _ in solved] != [(key, k) for key, k, _ in _entries(plan.rows[p].coef)] or \
                any(e is not plan.rows[p].coef[key][k] for key, k, e in solved):
            return None  # the solve's row is not the residual's: the lemma says nothing of b − A x
        longest = max(longest, len(solved))
    return longest * UNIT_ROUNDOFF / (1 - longest * UNIT_ROUNDOFF)


def _entries(row: dict) -> list:
    """(variable, component, coefficient) of a row's entries that are not zero by structure."""
    return [(key, k, e) for key, block in row.items() for k, e in enumerate(block) if trace.is_sym(e) or e != 0]
