"""Compiled solvers of floating-base robots and of contacts: against the reference path and Pinocchio's free
flyer, batches against single calls, and the base inputs checked as the reference path checks them."""

import dataclasses

import gtsam
import numpy as np
import pytest
from references import erd_path, random_base, rel_err

import gtdyn
from gtdyn.bench.pinocchio import FreeFlyerPinocchio

TOL = 1e-9  # the relative accuracy; the compiled answers reach ~1e-13 here
FEET = ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"]
PATH = "solo_description/robots/solo12.urdf"


@pytest.fixture(scope="module")
def solo(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GTDYN_CACHE_DIR", str(tmp_path_factory.mktemp("gtdyn_floating_cache")))
        path = erd_path(PATH)
        robot = gtdyn.load_robot(path, base="floating")
        yield robot, FreeFlyerPinocchio(path, robot)


@pytest.mark.heavy  # Solo-12 compiles; the suite keeps the small biped
def test_forward_and_inverse_match_the_reference_and_pinocchio(solo):
    robot, pin = solo
    forward = gtdyn.compile(robot, "forward", ordering="aba")
    inverse = gtdyn.compile(robot, "inverse", ordering="rnea")
    rng = np.random.default_rng(21)
    for _ in range(5):
        T, twist, accel = random_base(rng)
        q, v, x = rng.uniform(-1, 1, (3, robot.num_dofs))
        base_accel, qdd = forward(q, v, x, base_pose=T, base_twist=twist)
        r = gtdyn.forward_dynamics(robot, q, v, x, base_pose=T, base_twist=twist, ordering="aba")
        assert rel_err(np.concatenate([base_accel, qdd]), np.concatenate([r.base_accel, r.qdd])) < TOL
        assert rel_err(np.concatenate([base_accel, qdd]), np.concatenate(pin.aba(q, v, x, T, twist))) < TOL
        base_wrench, tau = inverse(q, v, x, base_pose=T, base_twist=twist, base_accel=accel)
        assert rel_err(np.concatenate([base_wrench, tau]), np.concatenate(pin.rnea(q, v, x, T, twist, accel))) < TOL
    assert forward.fallbacks == inverse.fallbacks == 0


def test_batch_is_a_loop_of_single_calls(solo):
    robot, _ = solo
    solver = gtdyn.compile(robot, "inverse", ordering="rnea")
    rng = np.random.default_rng(22)
    count, n = 7, robot.num_dofs
    bases = [random_base(rng) for _ in range(count)]
    T, twist, accel = (np.array([b[i] for b in bases]) for i in range(3))
    Q, V, X = rng.uniform(-1, 1, (3, count, n))
    wrench, tau = solver.batch(Q, V, X, base_pose=T, base_twist=twist, base_accel=accel)
    for k in range(count):
        single = solver(Q[k], V[k], X[k], base_pose=T[k], base_twist=twist[k], base_accel=accel[k])
        assert np.array_equal(wrench[k], single[0]) and np.array_equal(tau[k], single[1])


BIPED = """<robot name="biped"><link name="body"><inertial><origin xyz="0.02 0 0.05"/><mass value="3"/>
  <inertia ixx="0.05" ixy="0" ixz="0" iyy="0.07" iyz="0" izz="0.04"/></inertial></link>
  {legs}</robot>"""
LEG = """<joint name="hip_{side}" type="revolute"><parent link="body"/><child link="leg_{side}"/>
  <origin xyz="0 {y} 0"/><axis xyz="0 1 0"/><limit lower="-2" upper="2" effort="10" velocity="10"/></joint>
  <link name="leg_{side}"><inertial><origin xyz="0 0 -0.15"/><mass value="0.5"/>
  <inertia ixx="0.004" ixy="0" ixz="0" iyy="0.004" iyz="0" izz="0.0005"/></inertial></link>
  <joint name="foot_{side}_fixed" type="fixed"><parent link="leg_{side}"/><child link="foot_{side}"/>
  <origin xyz="0 0 -0.3"/></joint><link name="foot_{side}"/>"""


def test_contacts_compile_into_constrained_dynamics_of_a_small_biped(tmp_path, monkeypatch):
    """The default run's representative of the Solo-12 case below (heavy): a floating body on two one-joint legs
    with the left foot in contact. Forward dynamics against the reference path; hybrid dynamics with q̈ given at
    the leg in the air gives forward dynamics' torque at the other back, and the same motion and force."""
    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "biped.urdf"
    path.write_text(BIPED.format(legs="".join(LEG.format(side=side, y=y) for side, y in (("l", 0.1), ("r", -0.1)))))
    robot = gtdyn.load_robot(str(path), base="floating")
    compiled_contact_dynamics_agree(robot, [gtdyn.Contact("foot_l")], ["hip_r"], seed=25)


def compiled_contact_dynamics_agree(robot, contacts, air_joints, seed: int) -> None:
    """Compiled constrained forward dynamics (ABA) against the reference path at a random state; compiled hybrid
    dynamics with q̈ given at ``air_joints`` (legs in the air) and τ elsewhere then gives the same motion, forces
    and the torques at the air joints. (q̈ given at legs in contact would leave the squeeze between their feet
    free: the reference path's least-norm case.)"""
    rng = np.random.default_rng(seed)
    T, twist, _ = random_base(rng)
    q, v, tau = rng.uniform(-1, 1, (3, robot.num_dofs))
    forward = gtdyn.compile(robot, "forward", ordering="aba", contacts=contacts)
    base_accel, qdd, forces = forward(q, v, tau, base_pose=T, base_twist=twist)
    r = gtdyn.forward_dynamics(robot, q, v, tau, base_pose=T, base_twist=twist, contacts=contacts, ordering="aba")
    want = np.concatenate([r.base_accel, r.qdd, *[w.local[3:] for w in r.contact_wrenches]])
    assert rel_err(np.concatenate([base_accel, qdd, forces]), want) < TOL and forward.fallbacks == 0
    hybrid = gtdyn.compile(robot, "hybrid", ordering="aba", qdd_joints=air_joints, contacts=contacts)
    x = np.where([name in air_joints for name in robot.joint_names], qdd, tau)
    h_accel, h_qdd, h_tau, h_forces = hybrid(q, v, x, base_pose=T, base_twist=twist)
    got = np.concatenate([h_accel, h_qdd, h_tau, h_forces])
    assert rel_err(got, np.concatenate([base_accel, qdd, tau, forces])) < TOL and hybrid.fallbacks == 0


def test_a_stance_symmetric_left_to_right_is_certified(solo):
    """Solo-12 on its four feet, its legs bent alike and its abduction joints at zero: a stance symmetric left to
    right, where the coupling of the base's rotation and translation through the legs vanishes. A pivot on that
    coupling (large at the build's random states, of either sign) was exactly zero there, so every such state went
    to the reference path, and the unchecked code lost four digits a nanoradian away. Pivots that keep their sign
    over the samples now come first (``gtdyn.compiled.plan``): checked and unchecked, the stance and its
    neighbours match Pinocchio's constraintDynamics, with no fallback."""
    stance = np.array([0.0, 0.8, -1.6] * 2 + [0.0, -0.8, 1.6] * 2)
    certified_on_four_feet(solo, (stance, stance + 1e-9, stance + np.tile([0.0, 0.1, -0.2], 4)))


def test_straight_legs_on_the_ground_are_certified(solo):
    """Solo-12 on its four feet with every joint at zero (straight legs, the robot's reference configuration and a
    common first state): a straight leg zeroes its contact Jacobian's knee entries, which the build's random
    states had made the legs' q̈ pivots, so a run from there took the reference path at every step (gravity
    keeps straight legs straight). The reference configuration is among the build's states now
    (``gtdyn.compiled.states.build_states``): it and its neighbours match Pinocchio, with no fallback."""
    straight = np.zeros(12)
    certified_on_four_feet(solo, (straight, straight + 1e-9, straight + np.tile([0.0, 0.05, -0.1], 4)))


def test_a_plan_whose_pivots_vanish_at_q0_asks_its_twin_there(solo):
    """The default plan keeps the pivots the random states like best (a straight leg zeroes them); its twin, built
    with ``reference_pivots=True``, answers at straight legs, the same bits as that solver called directly, and a
    pickled solver keeps its twin. Near straight legs the plan's guard hands the call to the twin too."""
    import pickle

    robot, _ = solo
    feet = [gtdyn.Contact(name) for name in FEET]
    plain = gtdyn.compile(robot, "forward", ordering="aba", contacts=feet)
    direct = gtdyn.compile(robot, "forward", ordering="aba", contacts=feet, reference_pivots=True)
    zeros = np.zeros(12)
    for solver in (plain, pickle.loads(pickle.dumps(plain))):
        for q in (zeros, zeros + 1e-9):
            assert np.array_equal(np.concatenate(solver(q, zeros, zeros)), np.concatenate(direct(q, zeros, zeros)))
            # the call's verdicts are the twin's (the plan's own code stopped at its guard with NaN)
            assert (solver.condition, solver.backward_error) == (direct.condition, direct.backward_error)
            assert np.isfinite(solver.condition) and solver.backward_error < 1e-12
        assert solver.rescues == 2 and solver.fallbacks == 0
    assert direct.rescues == direct.fallbacks == 0
    bent = np.array([0.0, 0.8, -1.6] * 2 + [0.0, -0.8, 1.6] * 2)
    plain(bent, zeros, zeros)
    assert plain.rescues == 2  # away from it, its own
    namespace: dict = {}  # the plan's own code a nanoradian from straight legs (Python's floats do not divide by
    exec(plain.source, namespace)  # zero), rendered and run: status 0 and NaN, as the machine code's
    plain._ws[:12] = 1e-9  # q; the rest of the inputs the last call's (at rest, the base at the identity)
    plain._main(plain._pointer)
    ws = plain._ws.copy()
    ws[plain._out:plain._status + 3] = 7.0
    namespace["main"](ws)
    region = slice(plain._out, plain._status + 3)
    assert np.array_equal(ws[region], plain._ws[region], equal_nan=True) and ws[plain._status] == 0.0
    assert np.isnan(ws[plain._out:plain._status]).all()


def certified_on_four_feet(solo, stances) -> None:
    """Compiled constrained forward dynamics (ABA) on Solo-12's four feet, checked and unchecked, at rest at each
    of ``stances``: within ``TOL`` of Pinocchio's constraintDynamics, and no call falls back."""
    from gtdyn.bench.pinocchio import PinocchioContacts

    robot, pin = solo
    feet = [gtdyn.Contact(name) for name in FEET]
    solvers = [gtdyn.compile(robot, "forward", ordering="aba", contacts=feet, checks=checks)
               for checks in (True, False)]
    reference = PinocchioContacts(pin, FEET, "point")
    zeros = np.zeros(12)
    for q in stances:
        base_accel, qdd, _ = reference(q, zeros, zeros)
        want = np.concatenate([base_accel, qdd])
        for solver in solvers:
            got_base, got_qdd, _ = solver(q, zeros, zeros)
            assert rel_err(np.concatenate([got_base, got_qdd]), want) < TOL and solver.fallbacks == 0


@pytest.mark.heavy  # ~8 s (two Solo-12 compiles); the small biped above is the default run's representative
def test_contacts_compile_into_constrained_dynamics(solo):
    robot, _ = solo
    contacts = [gtdyn.Contact(name) for name in FEET[:3]]
    compiled_contact_dynamics_agree(robot, contacts, robot.joint_names[9:], seed=23)  # HR in the air
    with pytest.raises(gtdyn.ArgumentError, match="inverse dynamics with contacts"):
        gtdyn.compile(robot, "inverse", contacts=contacts)


def test_base_inputs_are_checked_as_the_reference_path_checks_them(solo):
    robot, _ = solo
    solver = gtdyn.compile(robot, "forward", ordering="aba")
    zeros = np.zeros(robot.num_dofs)
    squashed = np.diag([2.0, 1.0, 1.0, 1.0])
    with pytest.raises(gtdyn.ArgumentError, match="base_pose.*not a rigid transform"):
        solver(zeros, zeros, zeros, base_pose=squashed)
    with pytest.raises(gtdyn.ArgumentError, match="base_twist"):
        solver(zeros, zeros, zeros, base_twist=[1.0, 2.0])
    with pytest.raises(gtdyn.ArgumentError, match="base_twist: non-finite"):
        solver(zeros, zeros, zeros, base_twist=[np.nan, 0, 0, 0, 0, 0])
    for complex_input in ({"base_twist": np.array([1j, 0, 0, 0, 0, 0])}, {"base_wrench": [0, 0, 0, 0, 0, 2j]},
                          {"base_pose": np.eye(4) + 0j}):  # numpy would keep the real part, with a warning only
        with pytest.raises(gtdyn.ArgumentError, match=f"{next(iter(complex_input))}: expected real numbers"):
            solver(zeros, zeros, zeros, **complex_input)
    with pytest.raises(gtdyn.ArgumentError, match="base_accel"):
        solver(zeros, zeros, zeros, base_accel=np.zeros(6))
    pose = gtsam.Pose3(gtsam.Rot3.Ypr(0.1, 0.2, 0.3), np.ones(3))
    as_matrix = solver(zeros, zeros, zeros, base_pose=pose.matrix())
    assert all(np.array_equal(a, b) for a, b in zip(solver(zeros, zeros, zeros, base_pose=pose), as_matrix))
    fixed = gtdyn.compile(gtdyn.load_robot("rr"), "forward")
    with pytest.raises(gtdyn.ArgumentError, match="fixed base"):
        fixed(np.zeros(2), np.zeros(2), np.zeros(2), base_twist=np.zeros(6))
    floating_loop = dataclasses.replace(gtdyn.load_robot("four_bar"), floating_base=True)  # what the guard reads
    with pytest.raises(gtdyn.ArgumentError, match="with closed loops does not cover a floating base"):
        gtdyn.compile(floating_loop, "forward")


def test_a_wrench_on_the_free_base_is_an_input(solo):
    """``base_wrench`` (forward dynamics): what the environment applies to the free base, as the reference path's
    external wrench on the root link; inverse dynamics refuses it (it solves for the base wrench)."""
    robot, _ = solo
    forward = gtdyn.compile(robot, "forward", ordering="aba")
    rng = np.random.default_rng(24)
    T, twist, wrench = random_base(rng)
    q, v, tau = rng.uniform(-1, 1, (3, robot.num_dofs))
    got = np.concatenate(forward(q, v, tau, base_pose=T, base_twist=twist, base_wrench=wrench))
    r = gtdyn.forward_dynamics(robot, q, v, tau, base_pose=T, base_twist=twist,
                               external_wrenches={robot.base.name: wrench})
    assert rel_err(got, np.concatenate([r.base_accel, r.qdd])) < TOL and forward.fallbacks == 0
    with pytest.raises(gtdyn.ArgumentError, match="base_wrench: inverse dynamics solves for the base wrench"):
        gtdyn.compile(robot, "inverse", ordering="rnea")(q, v, tau, base_wrench=wrench)


def test_a_moved_contact_frame_is_a_different_compiled_solver(tmp_path, monkeypatch):
    """A contact is cached by where it is on its body, not by its frame's name: moving a massless foot frame
    (only the fixed joint's origin changes; the body stays the same) must compile anew."""
    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path / "cache"))
    text = """<robot name="footed"><link name="body"><inertial><origin xyz="0.1 0 0"/><mass value="2"/>
      <inertia ixx="0.3" ixy="0" ixz="0" iyy="0.5" iyz="0" izz="0.7"/></inertial></link>
      <joint name="foot_fixed" type="fixed"><parent link="body"/><child link="foot"/><origin xyz="0 0 -{depth}"/>
      </joint><link name="foot"/></robot>"""
    contacts = [gtdyn.Contact("foot")]
    rng = np.random.default_rng(5)
    for depth in ("0.2", "0.25"):
        path = tmp_path / f"footed_{depth}.urdf"
        path.write_text(text.format(depth=depth))
        robot = gtdyn.load_robot(str(path), base="floating")
        solver = gtdyn.compile(robot, "forward", ordering="aba", contacts=contacts)
        T, twist, _ = random_base(rng)
        r = gtdyn.forward_dynamics(robot, [], [], [], base_pose=T, base_twist=twist, contacts=contacts)
        base_accel, forces = solver([], [], [], base_pose=T, base_twist=twist)[0::2]
        assert not solver.from_cache, depth
        assert rel_err(np.concatenate([base_accel, forces]),
                       np.concatenate([r.base_accel, r.contact_wrenches[0].local[3:]])) < TOL
