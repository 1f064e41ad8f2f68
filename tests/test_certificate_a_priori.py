"""The a-priori backward error of plans that eliminate by substitution alone (RNEA;
``a_priori.substitution_backward_error``): the bound is checked in exact rational arithmetic on the rows the
compiled code solved, its γ_m against the longest row found independently, and the calls it must not certify —
a non-finite answer, a right-hand side small enough to underflow — are shown to measure their backward error or
go to the reference path."""

import ast
import warnings
from fractions import Fraction

import numpy as np
import pytest
from references import random_states

import gtdyn
from gtdyn.bench.compiled import batch_states, chain_with_urdf
from gtdyn.compiled.a_priori import UNIT_ROUNDOFF, substitution_backward_error
from gtdyn.compiled.certificate import A_PRIORI, BY_BOUND
from gtdyn.compiled.plan import Plan, Row
from gtdyn.errors import ArgumentError

pytestmark = pytest.mark.usefixtures("private_cache")


def exact_system(solver) -> tuple[list, list]:
    """(A, b) of the last call's rows, as exact rationals: the generated ``residual`` (r = b − A x on the
    coefficients the call computed, which the test runs as Python) at x = 0 and at each unit vector."""
    namespace: dict = {"Fraction": Fraction}
    exec(compile(ast.fix_missing_locations(_Exact().visit(ast.parse(solver.code("residual")))), "residual", "exec"),
         namespace)
    start = solver._record["start"]
    unknowns, rows = start["res"] - start["xr"], start["sol"] - start["rhs"]
    ws = [Fraction(value) for value in solver._ws]

    def residual(x: list) -> list:
        ws[start["xr"]:start["xr"] + unknowns] = x
        namespace["residual"](ws)
        return ws[start["res"]:start["res"] + rows]

    b = residual([Fraction(0)] * unknowns)
    columns = [[bi - ri for bi, ri in zip(b, residual([Fraction(int(j == k)) for j in range(unknowns)]))]
               for k in range(unknowns)]
    return [list(row) for row in zip(*columns)], b


class _Exact(ast.NodeTransformer):
    """The generated code's float constants as exact rationals: a float meeting a Fraction would round again."""

    def visit_Constant(self, node):
        if isinstance(node.value, float):
            return ast.Call(ast.Name("Fraction", ast.Load()), [node], [])
        return node


def test_the_a_priori_bound_holds_in_exact_arithmetic_row_by_row(puma):
    """At random states the computed x satisfies |b − A x| ≤ γ_m |A| |x| exactly, row by row, and γ_m is that of
    the longest row of A (counted here from A's nonzero entries, not from the plan)."""
    solver = gtdyn.compile(puma, "inverse", lanes=False)
    Q, V, X = random_states(6, 12, seed=21)
    longest, worst = 0, 0.0
    for q, v, x in zip(Q, V, X):
        solver(q, v, x)
        assert solver._ws[solver._bounded] == A_PRIORI
        gamma = solver._ws[solver._status + 2]
        start = solver._record["start"]["sol"]
        A, b = exact_system(solver)
        solved = [Fraction(value) for value in solver._ws[start:start + len(A[0])]]
        for row, bi in zip(A, b):
            longest = max(longest, sum(a != 0 for a in row))
            error = abs(bi - sum(a * xj for a, xj in zip(row, solved)))
            scale = sum(abs(a) * abs(xj) for a, xj in zip(row, solved))
            assert error <= Fraction(gamma) * scale
            worst = max(worst, float(error / scale) / gamma if scale else 0.0)
    assert gamma == longest * UNIT_ROUNDOFF / (1 - longest * UNIT_ROUNDOFF)
    assert 0.0 < worst < 1.0  # rounding happened, and the bound was never met with equality


@pytest.mark.parametrize("links,way", [(6, A_PRIORI), (8, BY_BOUND)])
def test_either_way_the_answer_and_the_readings_are_the_reference_paths(tmp_path, links, way):
    """Chains' RNEA: at 6 links u · γ_m ≤ 1e-10 and the a-priori bound certifies; at 8 links u is some 1e5, so
    at the build's samples the bound would not pay (``certificate_cost.pays``) and the plan measures its backward
    error in ``main``, as before the bound existed. Either way the answer is the reference path's, and
    ``backward_error`` and ``condition`` read measured values (the a-priori call measures them when asked)."""
    robot = chain_with_urdf(links, str(tmp_path))[0]
    solver = gtdyn.compile(robot, "inverse", lanes=False)
    assert ("measured" in solver.operations) == (way == A_PRIORI)
    Q, V, X = batch_states(robot, "inverse", None, 40)
    for q, v, x in zip(Q, V, X):
        tau = solver(q, v, x)
        if solver._ws[solver._bounded] != way:
            continue
        result = gtdyn.inverse_dynamics(robot, q, v, x)
        assert np.allclose(tau, result.tau, rtol=1e-12, atol=1e-12)
        assert solver.condition == pytest.approx(result.condition, rel=1e-6)
        stored = solver._ws[solver._status + 2]  # γ_m, or the measured value
        assert 0.0 < solver.backward_error < 1e-15 and (solver.backward_error < stored) == (way == A_PRIORI)
        break
    else:
        raise AssertionError(f"no state of the {links}-link chain was certified this way")
    assert solver.fallbacks == 0


def test_a_non_finite_answer_is_not_certified_by_the_a_priori_bound(puma):
    """q̈ of 1e308 overflows τ while u stays what it was: the bound alone would certify an infinite τ."""
    solver = gtdyn.compile(puma, "inverse", lanes=False)
    q, v, x = random_states(6, 1, seed=22)
    x = x[0].copy()
    x[1] = 1e308
    ws = solver._ws
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no numpy warning on the way
        with pytest.raises(ArgumentError, match="overflow double precision"):  # the reference path's verdict
            solver(q[0], v[0], x)
    assert not np.all(np.isfinite(ws[solver._out:solver._out + 6])) and ws[solver._status] == 0.0


def test_a_right_hand_side_that_may_underflow_measures_its_backward_error(puma):
    """Without gravity, at states of 1e-300, b's products underflow: the lemma's relative errors do not hold,
    and the call measures its backward error instead (``SMALLEST_RHS``)."""
    solver = gtdyn.compile(puma, "inverse", gravity=[0.0, 0.0, 0.0], lanes=False)
    q, v, x = random_states(6, 1, seed=23)
    solver(q[0], v[0], x[0])
    assert solver._ws[solver._bounded] == A_PRIORI
    tiny = (q[0], 1e-300 * v[0], 1e-300 * x[0])
    tau = solver(*tiny)
    assert solver._ws[solver._bounded] == BY_BOUND and solver.fallbacks == 0  # measured, then certified
    assert np.allclose(tau, gtdyn.inverse_dynamics(puma, *tiny, gravity=[0.0, 0.0, 0.0]).tau, rtol=1e-12, atol=0)


def test_only_a_plan_of_substitutions_on_the_original_rows_gets_the_bound():
    """``substitution_backward_error`` on hand-made plans of two unknowns (x1 + 2 x2 = b1, x2 = b2): γ_2 for
    back-substitution; None with a row operation (which changes b as well), with a row left over, or where the
    solve's row is not the original one."""
    def plan(tape=(), extra_row=False, changed=False) -> Plan:
        def block(a: float) -> np.ndarray:  # as traced rows hold them: objects, each the same on every read
            return np.array([a], dtype=object)

        rows = [Row({1: block(1.0), 2: block(2.0)}, 0.0, "r1"), Row({2: block(1.0)}, 0.0, "r2")]
        rows += [Row({}, 0.0, "r3")] if extra_row else []
        work = [{k: block.copy() for k, block in row.coef.items()} for row in rows]
        if changed:
            work[0][2] = block(2.5)
        return Plan([2, 1], rows, work, list(tape), [(2, 0, 1), (1, 0, 0)])

    gamma_2 = 2 * UNIT_ROUNDOFF / (1 - 2 * UNIT_ROUNDOFF)
    assert substitution_backward_error(plan()) == gamma_2
    assert substitution_backward_error(plan(tape=[(0, 1, 2.0)])) is None
    assert substitution_backward_error(plan(extra_row=True)) is None
    assert substitution_backward_error(plan(changed=True)) is None
