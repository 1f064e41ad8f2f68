"""Each of the compiled certificate's checks, where a state exists that it alone rejects (issue 25, item 6;
``python -m benchmarks.mutate_certificate`` switches each off and reports the checks no test catches)."""

import warnings

import numpy as np
import pytest
from references import rel_err
from test_compiled import STATE, load_chain
from test_planning import CART_POLE

import gtdyn
from gtdyn.compiled.certificate import BOUND_LIMIT, BY_SCHUR, CONDITION_LIMIT, ERROR_BOUND

pytestmark = pytest.mark.usefixtures("private_cache")


def light_tips_without_a_warning(tmp_path, ordering: str, q=None):
    """The 3R chain with tip links 1e-6 of the first link's mass, compiled in ``ordering`` and called at ``STATE``
    (q replaced by ``q`` if given) with every warning an error: these states are below the reference path's
    warning threshold. (chain, solver, (q, v, τ), the answer.)"""
    chain = load_chain(tmp_path, 1e-6)
    q0, v, tau = STATE
    state = (q0 if q is None else q, v, tau)
    solver = gtdyn.compile(chain, "forward", ordering=ordering)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = solver(*state)
    return chain, solver, state, got


def test_the_condition_limit_alone_sends_a_state_to_the_reference_path(tmp_path):
    """Tip links 1e-6 of the first link's mass: κ ≈ 1.3e7, just above the limit, while κ · backward error stays
    under the error bound — only the condition check rejects the answer (the reference path does not warn yet)."""
    chain, solver, (q, v, tau), got = light_tips_without_a_warning(tmp_path, "colamd")
    assert solver.condition > CONDITION_LIMIT and solver.condition * solver.backward_error < ERROR_BOUND
    assert solver.fallbacks == 1
    assert np.array_equal(got, gtdyn.forward_dynamics(chain, q, v, tau, ordering="colamd").qdd)


def test_a_bound_certifies_up_to_its_own_limit_above_the_estimates(tmp_path):
    """u (or Schur's u_S) ≥ ‖D S‖₂ ≥ the reference path's κ, so a bound proves that path would not warn up to its
    warning threshold: a bound's limit is ``BOUND_LIMIT`` (half that threshold), not the estimate's
    ``CONDITION_LIMIT`` (a tenth, for an estimate that rounds differently from the reference path's). Tip links
    1e-6 of the first link's mass, ABA: κ ≈ 1.3e7 and u_S ≈ 2.8e7, certified in the compiled code, as the
    reference path's answer confirms. (Over its limit a bound certifies nothing: the 1e-10 tips of
    ``test_compiled.test_ill_conditioned_robot_warns_like_the_reference`` would lose their warning.)"""
    chain, solver, (q, v, tau), got = light_tips_without_a_warning(tmp_path, "aba")
    bound = solver._ws[solver._status + 1]
    assert solver.fallbacks == 0 and solver._ws[solver._bounded] == BY_SCHUR
    assert CONDITION_LIMIT < solver.condition <= bound <= BOUND_LIMIT
    assert rel_err(got, gtdyn.forward_dynamics(chain, q, v, tau, ordering="aba").qdd) < 1e-9  # the promise


def test_the_error_bound_alone_stops_a_bound_under_its_limit(tmp_path):
    """The same chain at another state: u_S ≈ 4.1e7 is under ``BOUND_LIMIT``, but u_S · backward error ≈ 2.7e-10
    is over ``ERROR_BOUND`` (backward error 6.6e-18), so only the error bound keeps the bound from certifying; the
    estimate (κ ≈ 1.9e7) is over its own limit, and the reference path answers, without a warning."""
    chain, solver, (q, v, tau), got = light_tips_without_a_warning(tmp_path, "aba", q=np.array([-2.4, -0.7, -0.3]))
    assert solver.fallbacks == 1 and CONDITION_LIMIT < solver.condition < BOUND_LIMIT
    assert np.array_equal(got, gtdyn.forward_dynamics(chain, q, v, tau, ordering="aba").qdd)


def test_refinement_makes_a_moderately_ill_conditioned_answer_exact(tmp_path):
    """κ ≈ 1.3e6 (tip links 1e-5): one step of iterative refinement brings the compiled answer to the reference
    path's within 1e-13 relative; without it the error is of order κ · ε."""
    chain = load_chain(tmp_path, 1e-5)
    q, v, tau = STATE
    solver = gtdyn.compile(chain, "forward", ordering="colamd")
    got = solver(q, v, tau)
    assert solver.fallbacks == 0 and solver.condition > 1e6
    assert rel_err(got, gtdyn.forward_dynamics(chain, q, v, tau, ordering="colamd").qdd) < 1e-13


def test_an_input_the_equations_never_read_must_still_be_finite(tmp_path):
    """The cart-pole's cart position: the rail is straight and gravity uniform, so nothing depends on it and the
    generated code never reads it — only the finite-input check sees a NaN there (a revolute angle would also
    meet the angle bound), and the reference path names it."""
    path = tmp_path / "cart_pole.urdf"
    path.write_text(CART_POLE)
    robot = gtdyn.load_robot(str(path))
    solver = gtdyn.compile(robot, "inverse")
    q = np.array([np.nan, 0.3])
    with pytest.raises(gtdyn.ArgumentError) as reference:
        gtdyn.inverse_dynamics(robot, q, np.zeros(2), np.zeros(2))
    with pytest.raises(gtdyn.ArgumentError) as compiled:
        solver(q, np.zeros(2), np.zeros(2))
    assert str(compiled.value) == str(reference.value)


def test_every_mutation_of_the_certificate_finds_its_line():
    """``benchmarks.mutate_certificate`` switches checks off by replacing their lines: each line must be there, once,
    in its file, or the mutation pass stops (it did, when the input checks moved to ``validity.py``)."""
    import pathlib

    from benchmarks.mutate_certificate import CERTIFICATE, MUTATIONS

    root = pathlib.Path(__file__).parents[1]
    for name, before, after, *source in MUTATIONS:
        text = (root / (source[0] if source else CERTIFICATE)).read_text()
        assert text.count(before) == 1, name
        compile(text.replace(before, after), name, "exec")
