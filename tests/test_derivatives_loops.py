"""Compiled derivatives on closed loops (issue 21): along the loops, over the independent joints, against
central differences of the reference path that close the loops again on each side (``differences_along_loops``);
the choice of independent joints, batches, pickling, and what is not covered."""

import pickle

import numpy as np
import pytest
from references import closed_state, differences_along_loops, rel_err

import gtdyn

# against central differences along the loops: their own error at h = 1e-6 is ~1e-9 of the Jacobian's scale
FD_TOL = 1e-6

pytestmark = pytest.mark.usefixtures("private_cache")


def jacobian(d):
    """The three blocks side by side: the error is read against the Jacobian's scale (the parallelogram
    four-bar's q̈ do not depend on q̇, so that block is zero and only the differences' rounding is left)."""
    return np.hstack([d.dq, d.dv, d.dx])


@pytest.mark.parametrize("name, problem", [("four_bar", "forward"), ("five_bar", "forward"), ("six_bar", "forward"),
                                           ("five_bar", "hybrid")])
def test_loop_derivatives_follow_the_loops(name, problem):
    robot = gtdyn.load_robot(name)
    qdd_joints = ["j1"] if problem == "hybrid" else None
    solver = gtdyn.compile(robot, problem, qdd_joints=qdd_joints, derivatives=True)
    assert list(solver.independent_joints) == robot.actuated_joint_names  # the actuated joints, by default
    q, v, x = closed_state(robot, solver.independent_joints, seed=2)
    if problem == "hybrid":
        x[0] = 0.7  # j1's given q̈
    d = solver.derivatives(q, v, x)
    k = len(solver.independent_joints)
    assert d.dq.shape == d.dv.shape == (len(d.value), k) and d.dx.shape == (len(d.value), robot.num_dofs)
    expected = differences_along_loops(solver, q, v, x)
    assert rel_err(jacobian(d), np.hstack(expected)) < FD_TOL
    assert rel_err(d.dq, expected[0]) < FD_TOL  # the q block alone: the loops' curvature (the q̇ term) is in it


def test_the_independent_joints_can_be_chosen_and_travel():
    """The five-bar driven at j3 and j1 (rather than its motors j1, j2): columns in the order given; batches
    and a pickled copy give the same numbers."""
    robot = gtdyn.load_robot("five_bar")
    solver = gtdyn.compile(robot, "forward", derivatives=True, independent_joints=["j3", "j1"])
    assert solver.independent_joints == ("j3", "j1")
    q, v, x = closed_state(robot, ["j1", "j2"], seed=4)
    d = solver.derivatives(q, v, x)
    assert rel_err(jacobian(d), np.hstack(differences_along_loops(solver, q, v, x))) < FD_TOL
    batch = solver.batch_derivatives(np.array([q, q]), np.array([v, v]), np.array([x, x]))
    copy = pickle.loads(pickle.dumps(solver)).derivatives(q, v, x)
    for single, many, travelled in zip(d, batch, copy):
        assert np.array_equal(many[1], single) and np.array_equal(travelled, single)


def test_on_a_tree_chosen_joints_order_the_columns():
    robot = gtdyn.load_robot("rrr")
    default = gtdyn.compile(robot, "forward", derivatives=True)
    chosen = gtdyn.compile(robot, "forward", derivatives=True, independent_joints=["j3", "j1", "j2"])
    q, v, x = np.random.default_rng(6).uniform(-1, 1, (3, 3))
    a, b = default.derivatives(q, v, x), chosen.derivatives(q, v, x)
    assert np.array_equal(b.dq, a.dq[:, [2, 0, 1]]) and np.array_equal(b.dv, a.dv[:, [2, 0, 1]])


def test_what_loops_do_not_cover_says_so():
    five_bar = gtdyn.load_robot("five_bar")
    with pytest.raises(gtdyn.ArgumentError, match="^independent_joints: j3 are not independent coordinates of "
                                                  "'five_bar', which has 2"):
        gtdyn.compile(five_bar, "forward", derivatives=True, independent_joints=["j3"])
    with pytest.raises(gtdyn.ArgumentError, match="^independent_joints: unknown joints j9"):
        gtdyn.compile(five_bar, "forward", derivatives=True, independent_joints=["j9"])
    with pytest.raises(gtdyn.ArgumentError, match="does not cover closed loops.*given q̈ would have to follow q"):
        gtdyn.compile(five_bar, "inverse", derivatives=True)
    solver = gtdyn.compile(five_bar, "forward", derivatives=True)
    q, v, x = closed_state(five_bar, ["j1", "j2"], seed=1)
    q[2] += 0.1  # the loop no longer closes: the derivative call raises as the value does
    with pytest.raises(gtdyn.LoopClosureError) as plain:
        solver(q, v, x)
    with pytest.raises(gtdyn.LoopClosureError) as derivative:
        solver.derivatives(q, v, x)
    assert str(derivative.value) == str(plain.value)
