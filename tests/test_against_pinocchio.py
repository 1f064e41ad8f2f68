"""inverse_dynamics and forward_dynamics against Pinocchio's rnea and aba, to 1e-9 relative (max norm).

1e-9: both sides are direct solvers on the same equations in double precision; the torques we see differ by
~1e-13 relative. A modelling error (a frame, a sign, a missing term) shows up at ≥1e-3.
"""

import numpy as np
import pytest
from references import PinocchioReference, erd_path, rel_err

import gtdyn

TOL = 1e-9
STATES = 50

# name -> (path, frame to push with an external wrench)
ROBOTS = {
    "puma560": (lambda: gtdyn.bundled_path("puma560"), "flange"),
    "ur5": (lambda: erd_path("ur_description/urdf/ur5_robot.urdf"), "tool0"),
    "panda": (lambda: erd_path("panda_description/urdf/panda.urdf"), "panda_hand"),
}


def random_state(rng, n):
    return rng.uniform(-np.pi, np.pi, n), rng.uniform(-2, 2, n), rng.uniform(-5, 5, n)


@pytest.fixture(params=sorted(ROBOTS), scope="module")
def setup(request):
    path_fn, frame = ROBOTS[request.param]
    path = path_fn()
    robot = gtdyn.load_robot(path)
    return robot, PinocchioReference(path, robot), frame


@pytest.mark.parametrize("with_wrench", [False, True], ids=["gravity", "gravity+wrench"])
def test_inverse_dynamics_matches_rnea(setup, with_wrench):
    robot, ref, frame = setup
    rng = np.random.default_rng(1)
    for _ in range(STATES):
        q, v, a = random_state(rng, robot.num_dofs)
        wrench = rng.normal(size=6) * 10 if with_wrench else None
        ext = {frame: wrench} if with_wrench else None
        tau = gtdyn.inverse_dynamics(robot, q, v, a, external_wrenches=ext).tau
        assert rel_err(tau, ref.rnea(q, v, a, frame if with_wrench else None, wrench)) < TOL


@pytest.mark.parametrize("with_wrench", [False, True], ids=["gravity", "gravity+wrench"])
def test_forward_dynamics_matches_aba(setup, with_wrench):
    robot, ref, frame = setup
    rng = np.random.default_rng(2)
    for _ in range(STATES):
        q, v, _ = random_state(rng, robot.num_dofs)
        tau = rng.uniform(-20, 20, robot.num_dofs)
        wrench = rng.normal(size=6) * 10 if with_wrench else None
        ext = {frame: wrench} if with_wrench else None
        qdd = gtdyn.forward_dynamics(robot, q, v, tau, external_wrenches=ext).qdd
        assert rel_err(qdd, ref.aba(q, v, tau, frame if with_wrench else None, wrench)) < TOL


def test_custom_gravity_and_none(setup):
    robot, _, _ = setup
    rng = np.random.default_rng(3)
    for g in [(0.0, 0.0, 0.0), tuple(rng.normal(size=3) * 9.81)]:
        ref = PinocchioReference(robot.source, robot, gravity=g)
        q, v, a = random_state(rng, robot.num_dofs)
        assert rel_err(gtdyn.inverse_dynamics(robot, q, v, a, gravity=g).tau, ref.rnea(q, v, a)) < TOL


def test_large_tree_talos():
    """A 32-joint branching humanoid (legs, arms, torso, head, grippers), root fixed."""
    path = erd_path("talos_data/robots/talos_reduced.urdf")
    robot = gtdyn.load_robot(path)
    ref = PinocchioReference(path, robot)
    rng = np.random.default_rng(4)
    for _ in range(10):
        q, v, a = random_state(rng, robot.num_dofs)
        r = gtdyn.inverse_dynamics(robot, q, v, a)
        assert rel_err(r.tau, ref.rnea(q, v, a)) < TOL
        f = gtdyn.forward_dynamics(robot, q, v, r.tau)
        assert rel_err(f.qdd, a) < TOL
