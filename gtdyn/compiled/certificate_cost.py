"""Which way a plan's checked call certifies (``gtdyn.compiled.certificate.checked_call``): the estimate alone, the
bound u, or u then Schur's u_S where u cannot certify — whichever makes the average call cheapest, judged at the
build's sample states by operation counts."""

from __future__ import annotations

import numpy as np

from gtdyn.compiled import trace
from gtdyn.compiled.layout import Layout
from gtdyn.compiled.states import SAMPLES
from gtdyn.linear.elimination import INVERSE_ITERATIONS

# What ``cheapest_way`` counts per operation of the estimate where it runs after a bound could not certify, in a
# plan whose passes (factor, the solves, the residual) have over ``LATE_ESTIMATE_ABOVE`` operations: there
# ``exact`` is compiled quickly in a part of its own, and its path runs code that main's does not, in a program
# larger than the CPU's caches. Talos's CRBA ran that way at twice its operations' share of the call, and the
# estimate alone was faster; the 14-link chain's RNEA (13,000 operations) ran it at about its share
# (benchmarks/results/design_measurements.md).
LATE_ESTIMATE_COST, LATE_ESTIMATE_ABOVE = 2.0, 30_000


def sample_bound(functions: dict, layout: Layout, norms: list) -> tuple[list, np.ndarray]:
    """At the build's sample states, from the squared column norms there (``norms``,
    ``certificate._sample_column_norms``): ``solve_abs``'s magnitudes Ŝ1 and the bound u."""
    start, count = layout.start["sol"], len(norms)
    stored = {op[1] - start: op[2] for op in functions["solve_abs"].ops
              if op[0] == "store" and start <= op[1] < start + count}
    with np.errstate(all="ignore"):
        magnitudes = [trace.value(stored[k]) for k in range(count)]
        return magnitudes, np.sqrt(sum((n * m ** 2 for n, m in zip(norms, magnitudes)), 0.0))


def pays(functions: dict, layout: Layout, norms: list, gamma: float, error_bound: float) -> bool:
    """Whether the a-priori backward error certifies (u · γ_m ≤ ``error_bound``, with ``cheapest_way``'s margin of
    2) at half the build's sample states or more: elsewhere its checks and the branch to ``measured`` cost more
    than the residual they save (a 12-link chain's RNEA, u about 1e7, ran slower with them:
    benchmarks/results/design_measurements.md)."""
    return share_under(sample_bound(functions, layout, norms)[1] * gamma, error_bound / 2) >= 0.5


def share_under(values, limit: float) -> float:
    """The share of the build's random states where ``values`` (one per build state) is at most ``limit``: the
    share of calls a bound certifies. The reference configuration, one state users start from, is left out: it
    would count as a ninth of all calls."""
    with np.errstate(invalid="ignore"):
        return float(np.mean(np.atleast_1d(values)[:SAMPLES] <= limit))


def cheapest_way(functions: dict, layout: Layout, norms: list, transposed_abs, bound_limit: float) -> str:
    """"estimate", "bound" (u) or "schur" (u, then u_S where u cannot certify), whichever makes the average call
    cheapest: a bound's passes save the estimate's on the share f of calls it certifies. f is the share of the
    build's random states where the bound is under half ``bound_limit`` (the certificate's ``BOUND_LIMIT``;
    ``share_under``; they are eight: the margin keeps a bound that only just certifies them from counting: at a
    tenth of the warning threshold, u certified 7 of Talos forward dynamics' 8 random ones and 52 % of its random
    states within the joint limits; under ``bound_limit`` it certified all 8 and 96 %). Costs are operations, the
    estimate's after a bound counted ``LATE_ESTIMATE_COST`` times in a big plan. Long chains certify with neither
    bound (benchmarks/results/design_measurements.md). ``norms``: D² at the sample states
    (``certificate._sample_column_norms``)."""
    count, solve_abs = len(norms), functions["solve_abs"]
    magnitudes, u = sample_bound(functions, layout, norms)
    with np.errstate(all="ignore"):
        z = [np.broadcast_to(n * m, np.shape(u)) for n, m in zip(norms, magnitudes)]
    def share(bound) -> float:  # of the samples a bound certifies, with the margin
        return share_under(bound, bound_limit / 2)

    f_u = share(u)
    if f_u == 1.0:  # u alone costs least: u_S would only add its pass
        return "bound"
    solve_t_abs = functions["solve_t_abs"] = transposed_abs(z)
    first = layout.start["yt"]
    g = np.array([np.broadcast_to(trace.value(op[2]), np.shape(u)) for op in solve_t_abs.ops
                  if op[0] == "store" and op[1] >= first])
    with np.errstate(all="ignore"):
        u_schur = np.minimum(np.sqrt(np.max(g, axis=0)), u) if g.size else u  # no rows: a robot without joints
    f_s = share(u_schur)
    solve, residual, solve_t = (functions[name].count() for name in ("solve", "residual", "solve_t"))
    uncertified = (1 + INVERSE_ITERATIONS) * solve + residual + INVERSE_ITERATIONS * solve_t  # exact, after main
    bound_pass = solve + residual + solve_abs.count()
    if functions["factor"].count() + bound_pass + solve_t > LATE_ESTIMATE_ABOVE:  # a big plan
        uncertified *= LATE_ESTIMATE_COST
    cost = {"estimate": (2 + INVERSE_ITERATIONS) * solve + 2 * residual + INVERSE_ITERATIONS * solve_t,
            "bound": bound_pass + (1 - f_u) * uncertified,
            "schur": bound_pass + count + (1 - f_u) * (solve_t_abs.count() + 3 * len(g)) + (1 - f_s) * uncertified}
    return min(cost, key=cost.get)
