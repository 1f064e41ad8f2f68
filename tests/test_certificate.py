"""Each of the compiled certificate's checks, where a state exists that it alone rejects (issue 25, item 6;
``python -m benchmarks.mutate_certificate`` switches each off and reports the checks no test catches)."""

import warnings

import numpy as np
import pytest
from references import rel_err
from test_compiled import STATE, load_chain
from test_planning import CART_POLE

import gtdyn
from gtdyn.compiled.certificate import CONDITION_LIMIT, ERROR_BOUND

pytestmark = pytest.mark.usefixtures("private_cache")


def test_the_condition_limit_alone_sends_a_state_to_the_reference_path(tmp_path):
    """Tip links 1e-6 of the first link's mass: κ ≈ 1.3e7, just above the limit, while κ · backward error stays
    under the error bound — only the condition check rejects the answer (the reference path does not warn yet)."""
    chain = load_chain(tmp_path, 1e-6)
    q, v, tau = STATE
    solver = gtdyn.compile(chain, "forward", ordering="colamd")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # below the reference path's warning threshold: no warning at all
        got = solver(q, v, tau)
    assert solver.condition > CONDITION_LIMIT and solver.condition * solver.backward_error < ERROR_BOUND
    assert solver.fallbacks == 1
    assert np.array_equal(got, gtdyn.forward_dynamics(chain, q, v, tau, ordering="colamd").qdd)


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
