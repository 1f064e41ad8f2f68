"""inverse_dynamics and forward_dynamics against Pinocchio's rnea and aba, to 1e-9 relative (max norm): the
default orderings at many states, every named ordering (and hybrid dynamics) at a few, and random trees
(prismatic joints, off-diagonal inertias, fixed joints to merge) written to URDF for Pinocchio to read.

1e-9: both sides are direct solvers on the same equations in double precision; the torques we see differ by
~1e-13 relative. A modelling error (a frame, a sign, a missing term) shows up at ≥1e-3.
"""

import numpy as np
import pytest
from references import erd_path, load_quietly, rel_err

import gtdyn
from gtdyn.bench.pinocchio import PinocchioModel
from gtdyn.io.urdf_writer import write_urdf
from gtdyn.model.build import build_robot
from gtdyn.model.random import random_description
from gtdyn.orderings import applicable

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
    robot = load_quietly(path)
    return robot, PinocchioModel(path, robot), frame


@pytest.mark.parametrize("with_wrench", [False, True], ids=["gravity", "gravity+wrench"])
def test_inverse_dynamics_matches_rnea(setup, with_wrench):
    robot, ref, frame = setup
    rng = np.random.default_rng(1)
    for _ in range(STATES):
        q, v, a = random_state(rng, robot.num_dofs)
        wrench = rng.normal(size=6) * 10 if with_wrench else None
        ext = {frame: wrench} if with_wrench else None
        tau = gtdyn.inverse_dynamics(robot, q, v, a, external_wrenches=ext).tau
        assert rel_err(tau, ref.rnea(q, v, a, ext)) < TOL


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
        assert rel_err(qdd, ref.aba(q, v, tau, ext)) < TOL


def test_custom_gravity_and_none(setup):
    robot, _, _ = setup
    rng = np.random.default_rng(3)
    for g in [(0.0, 0.0, 0.0), tuple(rng.normal(size=3) * 9.81)]:
        ref = PinocchioModel(robot.source, robot, gravity=g)
        q, v, a = random_state(rng, robot.num_dofs)
        assert rel_err(gtdyn.inverse_dynamics(robot, q, v, a, gravity=g).tau, ref.rnea(q, v, a)) < TOL


def test_large_tree_talos():
    """A 32-joint branching humanoid (legs, arms, torso, head, grippers), root fixed."""
    path = erd_path("talos_data/robots/talos_reduced.urdf")
    robot = load_quietly(path)
    ref = PinocchioModel(path, robot)
    rng = np.random.default_rng(4)
    for _ in range(10):
        q, v, a = random_state(rng, robot.num_dofs)
        r = gtdyn.inverse_dynamics(robot, q, v, a)
        assert rel_err(r.tau, ref.rnea(q, v, a)) < TOL
        f = gtdyn.forward_dynamics(robot, q, v, r.tau)
        assert rel_err(f.qdd, a) < TOL


@pytest.mark.parametrize("problem", ["inverse", "forward", "hybrid"])
def test_every_ordering_matches_pinocchio(setup, problem):
    """Each named ordering that applies, at 3 states (the last with an external wrench); hybrid against
    Pinocchio's three passes (RNEA bias, CRBA block solve, RNEA)."""
    robot, ref, frame = setup
    rng = np.random.default_rng(5)
    names = robot.joint_names
    for state in range(3):
        q, v, a = random_state(rng, robot.num_dofs)
        tau = rng.uniform(-20, 20, robot.num_dofs)
        ext = {frame: rng.normal(size=6) * 10} if state == 2 else None
        split = rng.uniform(size=robot.num_dofs) < 0.5
        given = {"inverse": {"qdd": a}, "forward": {"tau": tau},
                 "hybrid": {"qdd": {n: a[i] for i, n in enumerate(names) if split[i]},
                            "tau": {n: tau[i] for i, n in enumerate(names) if not split[i]}}}[problem]
        expected = {"inverse": lambda: (a, ref.rnea(q, v, a, ext)), "forward": lambda: (ref.aba(q, v, tau, ext), tau),
                    "hybrid": lambda: ref.hybrid(q, v, given["qdd"], given["tau"], ext)}[problem]()
        for ordering in applicable(problem):
            r = gtdyn.solve(robot, problem, q, v, **given, ordering=ordering, external_wrenches=ext)
            assert rel_err(r.qdd, expected[0]) < TOL and rel_err(r.tau, expected[1]) < TOL, (ordering, state)


@pytest.mark.parametrize("seed", range(6))
def test_random_trees_written_to_urdf_match_pinocchio(tmp_path, seed):
    """Inverse, forward and hybrid dynamics, with a wrench on a random link or merged frame. gtdyn builds the
    robot from the description, Pinocchio reads the URDF written from it: a consistently wrong inertia or frame
    transform (which a round trip through gtdyn alone cannot see) shows up here."""
    description = random_description(200 + seed, 7, tree=True, prismatic=0.3, fixed=0.2)  # off-diagonal inertias
    robot = build_robot(description)
    ref = PinocchioModel(write_urdf(description, str(tmp_path / "random.urdf")), robot)
    rng = np.random.default_rng(seed)
    pushed = [name for name, (body, _) in robot.frames.items() if not robot.is_base(body)]
    n = robot.num_dofs
    for _ in range(3):
        q, v, a = random_state(rng, n)
        ext = {pushed[int(rng.integers(len(pushed)))]: rng.normal(size=6) * 10}
        tau = gtdyn.inverse_dynamics(robot, q, v, a, external_wrenches=ext).tau
        assert rel_err(tau, ref.rnea(q, v, a, ext)) < TOL
        tau = rng.uniform(-20, 20, n)
        qdd = gtdyn.forward_dynamics(robot, q, v, tau, external_wrenches=ext).qdd
        assert rel_err(qdd, ref.aba(q, v, tau, ext)) < TOL
        split = rng.uniform(size=n) < 0.5
        given_qdd = {name: a[i] for i, name in enumerate(robot.joint_names) if split[i]}
        given_tau = {name: tau[i] for i, name in enumerate(robot.joint_names) if not split[i]}
        h = gtdyn.hybrid_dynamics(robot, q, v, given_qdd, given_tau, external_wrenches=ext)
        qdd, tau = ref.hybrid(q, v, given_qdd, given_tau, ext)
        assert rel_err(h.qdd, qdd) < TOL and rel_err(h.tau, tau) < TOL
    assert {"revolute", "prismatic", "fixed"} <= {j.type for j in description.joints}  # all three kinds, merged


def test_joint_limits_are_pinocchios(setup):
    """``robot.lower_limits`` and ``upper_limits``, in ``joint_names`` order, are Pinocchio's lowerPositionLimit
    and upperPositionLimit at each joint's configuration entry, ``velocity_limits`` and ``effort_limits`` its
    velocityLimit and effortLimit at its tangent entry; read-only, since a Robot is immutable."""
    robot, pin, _ = setup
    at = [i for i, _ in pin.idx_q]  # each joint's first configuration entry in Pinocchio's q
    assert np.array_equal(robot.lower_limits, pin.model.lowerPositionLimit[at])
    assert np.array_equal(robot.upper_limits, pin.model.upperPositionLimit[at])
    assert np.array_equal(robot.velocity_limits, pin.model.velocityLimit[pin.idx_v])
    assert np.array_equal(robot.effort_limits, pin.model.effortLimit[pin.idx_v])
    for limits in (robot.lower_limits, robot.upper_limits, robot.velocity_limits, robot.effort_limits):
        with pytest.raises(ValueError):
            limits[0] = 0.0
