"""Joint locking (issue 20, item 2b): ``robot.locked(values)``, gtdyn's ``buildReducedModel``, checked against
Pinocchio's reduced models (fixed and free-flyer bases), against the full robot with the locked joints held
(inverse and hybrid dynamics), on transmissions (every coupling rule) and on each error."""

import dataclasses
import warnings

import numpy as np
import pytest
from references import random_base, rel_err

import gtdyn
from gtdyn.bench.pinocchio import FreeFlyerPinocchio, PinocchioModel
from gtdyn.io.load import documented_state

TOL = 1e-9
FINGERS = {"panda_finger_joint1": 0.02, "panda_finger_joint2": 0.02}
WRIST = {"joint4": 0.3, "joint5": -0.7, "joint6": 1.1}
LEG = {"FL_HAA": 0.1, "FL_HFE": 0.8, "FL_KFE": -1.6}


@pytest.fixture(scope="module")
def panda():
    return gtdyn.load_robot("panda")  # exact transmissions: finger2 mimics finger1


@pytest.fixture(scope="module")
def puma():
    return gtdyn.load_robot("puma560")


@pytest.fixture(scope="module")
def solo():
    return gtdyn.load_robot("solo12", base="floating")


def full_configuration(robot, values) -> np.ndarray:
    """q of the full robot: the locked joints at their values, the others at 0."""
    return np.array([values.get(name, 0.0) for name in robot.joint_names])


def reduced_pinocchio(adapter, robot, reduced, values):
    """Pinocchio's ``buildReducedModel`` of the file ``robot`` was read from, with the joints in ``values`` locked
    there, behind the project's adapter (``adapter``: PinocchioModel or FreeFlyerPinocchio) in ``reduced``'s
    joint order."""
    full = adapter(robot.source, robot)
    ids = [full.model.getJointId(name) for name in values]
    q_ref = full.configuration(full_configuration(robot, values))

    class Reduced(adapter):
        def _build(self, path):
            return self.pin.buildReducedModel(full.model, ids, q_ref)

    return Reduced(robot.source, reduced)


def held(robot, reduced, x) -> np.ndarray:
    """A full robot's vector from a reduced one's: zero at the locked joints."""
    return np.array([x[reduced.joint_names.index(n)] if n in reduced.joint_names else 0.0 for n in robot.joint_names])


# -- against Pinocchio ---------------------------------------------------------------------------------------------


def test_the_panda_without_its_gripper_matches_pinocchios_reduced_model(panda):
    """Locking finger1 locks finger2 through its <mimic>: 7 joints, no transmission left, and RNEA, ABA and the
    fingers' frames as Pinocchio's reduced model (both fingers locked) has them."""
    reduced = panda.locked({"panda_finger_joint1": 0.02})
    assert reduced.joint_names == panda.joint_names[:7] and reduced.transmissions == ()
    types = {js.name: js.type for js in reduced.description.joints}
    assert reduced.reading == "exact" and types["panda_finger_joint1"] == types["panda_finger_joint2"] == "fixed"
    pin = reduced_pinocchio(PinocchioModel, panda, reduced, FINGERS)
    rng = np.random.default_rng(1)
    for _ in range(5):
        q, v, qdd = rng.uniform(-1, 1, (3, 7))
        tau = pin.rnea(q, v, qdd)
        assert rel_err(gtdyn.inverse_dynamics(reduced, q, v, qdd).tau, tau) < TOL
        assert rel_err(gtdyn.forward_dynamics(reduced, q, v, tau).qdd, pin.aba(q, v, tau)) < TOL
    for finger in ("panda_leftfinger", "panda_rightfinger"):  # welded onto link 7 (joint 7's frame is link 7's)
        body, pose = reduced.frames[finger]
        frame = pin.model.frames[pin.model.getFrameId(finger)]
        assert body == "panda_link7" and pin.model.names[frame.parentJoint] == "panda_joint7"
        assert np.allclose(pose.matrix(), frame.placement.homogeneous, atol=1e-12)


def test_the_reduced_panda_is_the_full_one_with_its_fingers_held(panda):
    """Inverse dynamics of the full robot with the fingers held (q at their values, q̇ = q̈ = 0): its τ at the arm
    joints is the reduced robot's τ."""
    reduced = panda.locked({"panda_finger_joint1": 0.02})
    rng = np.random.default_rng(2)
    for _ in range(3):
        q, v, qdd = rng.uniform(-1, 1, (3, 7))
        full = gtdyn.inverse_dynamics(panda, held(panda, reduced, q) + full_configuration(panda, FINGERS),
                                      held(panda, reduced, v), held(panda, reduced, qdd))
        assert rel_err(gtdyn.inverse_dynamics(reduced, q, v, qdd).tau, full.tau[:7]) < TOL


def test_a_floating_solo_with_one_leg_locked_matches_pinocchios_reduced_free_flyer(solo):
    reduced = solo.locked(LEG)
    assert reduced.floating_base and reduced.num_dofs == 9 and reduced.joint_names == solo.joint_names[3:]
    assert reduced.frames["FL_FOOT"][0] == reduced.base.name  # the leg is part of the base now
    pin = reduced_pinocchio(FreeFlyerPinocchio, solo, reduced, LEG)
    rng = np.random.default_rng(3)
    for _ in range(3):
        T, twist, accel = random_base(rng)
        q, v, qdd = rng.uniform(-1, 1, (3, 9))
        r = gtdyn.inverse_dynamics(reduced, q, v, qdd, base_pose=T, base_twist=twist, base_accel=accel)
        wrench, tau = pin.rnea(q, v, qdd, T, twist, accel)
        assert rel_err(np.concatenate([r.base_wrench, r.tau]), np.concatenate([wrench, tau])) < TOL
        f = gtdyn.forward_dynamics(reduced, q, v, tau, base_pose=T, base_twist=twist)
        assert rel_err(np.concatenate([f.base_accel, f.qdd]), np.concatenate(pin.aba(q, v, tau, T, twist))) < TOL


# -- against the full robot ----------------------------------------------------------------------------------------


def test_the_puma_with_its_wrist_locked_is_the_full_puma_with_the_wrist_held(puma):
    """Forward dynamics of the reduced PUMA = hybrid dynamics of the full one with q̈ = 0 prescribed at the locked
    joints (q̇ = 0 there too) and τ given at the others."""
    reduced = puma.locked(WRIST)
    assert reduced.joint_names == ["joint1", "joint2", "joint3"]
    assert reduced.source == f"{puma.source} with joint4, joint5, joint6 locked"
    assert documented_state(puma) is not None and documented_state(reduced) is None  # the file's state has 6 joints
    rng = np.random.default_rng(4)
    for _ in range(3):
        q, v, tau = rng.uniform(-1, 1, (3, 3))
        r = gtdyn.hybrid_dynamics(puma, held(puma, reduced, q) + full_configuration(puma, WRIST),
                                  held(puma, reduced, v), qdd=dict.fromkeys(WRIST, 0.0),
                                  tau=dict(zip(reduced.joint_names, tau)))
        assert rel_err(gtdyn.forward_dynamics(reduced, q, v, tau).qdd, r.qdd[:3]) < TOL


def test_a_five_bar_with_a_tree_joint_locked_is_a_four_bar():
    """A tree joint of a loop can be locked (only loop-closing ones cannot): forward dynamics of the reduced
    five-bar = hybrid dynamics of the full one with q̈ = 0 at the locked joint."""
    five_bar = gtdyn.load_robot("five_bar")
    reduced = five_bar.locked({"j1": 0.1})
    assert reduced.num_dofs == 4 and len(reduced.loop_joints) == 1
    state = gtdyn.close_loops(reduced, {"j3": 0.2})
    tau = dict.fromkeys(reduced.actuated_joint_names, 0.3)
    r = gtdyn.hybrid_dynamics(five_bar, [0.1, *state.q], [0.0, *state.v], qdd={"j1": 0.0}, tau=tau)
    assert five_bar.joint_names[1:] == reduced.joint_names
    qdd = gtdyn.forward_dynamics(reduced, state.q, state.v, [tau.get(n, 0.0) for n in reduced.joint_names]).qdd
    assert rel_err(qdd, r.qdd[1:]) < TOL


def test_locking_every_joint_leaves_a_rigid_body(puma, solo):
    """A robot with no joints is valid: the fixed PUMA keeps every frame on its base; the floating Solo falls."""
    arm = puma.locked(dict.fromkeys(puma.joint_names, 0.1))
    assert arm.num_dofs == 0 and {body for body, _ in arm.frames.values()} == {"base_link"}
    body = solo.locked(dict.fromkeys(solo.joint_names, 0.1))
    assert body.floating_base and body.num_dofs == 0
    f = gtdyn.forward_dynamics(body, [], [], [])  # at rest, base at the origin: free fall
    assert rel_err(f.base_accel, [0, 0, 0, 0, 0, -9.81]) < TOL


def test_the_reduced_robot_keeps_actuation_locks_compose_and_an_empty_lock_is_the_robot(puma):
    passive = puma.with_actuated(["joint1", "joint3", "joint4"])
    assert passive.locked({"joint4": 0.5}).actuated_joint_names == ["joint1", "joint3"]
    assert puma.locked({}) is puma
    twice, once = puma.locked({"joint4": 0.3}).locked({"joint6": 1.1}), puma.locked({"joint4": 0.3, "joint6": 1.1})
    q, v, qdd = np.random.default_rng(8).uniform(-1, 1, (3, 4))
    assert twice.joint_names == once.joint_names == ["joint1", "joint2", "joint3", "joint5"]
    assert rel_err(gtdyn.inverse_dynamics(twice, q, v, qdd).tau, gtdyn.inverse_dynamics(once, q, v, qdd).tau) < 1e-14


# -- transmissions -------------------------------------------------------------------------------------------------

BELT = """<robot name="belt" xmlns:gtdyn="https://gtdyn.dev/urdf">
  <link name="base"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="50" velocity="10"/></joint>
  <link name="l1"><inertial><origin xyz="0.4 0 0"/><mass value="1.5"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.08" iyz="0" izz="0.08"/></inertial></link>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0.8 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="50" velocity="10"/></joint>
  <link name="l2"><inertial><origin xyz="0.3 0 0"/><mass value="0.8"/>
    <inertia ixx="0.005" ixy="0.001" ixz="0" iyy="0.03" iyz="0" izz="0.03"/></inertial></link>
  <joint name="r1" type="revolute"><parent link="base"/><child link="rotor"/><origin xyz="0 0.1 -0.1"/>
    <axis xyz="1 0 0"/><limit lower="-30" upper="30" effort="5" velocity="90"/></joint>
  <link name="rotor"><inertial><origin xyz="0 0 0.02"/><mass value="0.2"/>
    <inertia ixx="0.0004" ixy="0" ixz="0" iyy="0.0002" iyz="0" izz="0.0002"/></inertial></link>
  <gtdyn:transmission joint="r1" offset="0.1"><gtdyn:drive joint="j1" ratio="6"/><gtdyn:drive joint="j2"
    ratio="-2"/></gtdyn:transmission>
</robot>"""  # a rotor driven by both joints through a belt: r1 = 6 j1 − 2 j2 + 0.1


@pytest.fixture(scope="module")
def belt(tmp_path_factory):
    path = tmp_path_factory.mktemp("belt") / "belt.urdf"
    path.write_text(BELT)
    return gtdyn.load_robot(str(path))


def test_a_belt_with_one_drive_locked_keeps_the_other_and_absorbs_the_locked_share(belt):
    reduced = belt.locked({"j1": 0.5})
    (t,) = reduced.transmissions
    names = reduced.joint_names
    assert names == ["j2", "r1"] and [(names[k - 1], r) for k, r in t.terms] == [("j2", -2.0)]
    assert t.offset == pytest.approx(0.1 + 6 * 0.5) and not reduced.joint("r1").actuated
    rng = np.random.default_rng(5)
    for _ in range(3):  # inverse dynamics: the full belt with j1 held
        (q2, v2, a2) = rng.uniform(-1, 1, 3)
        q, v, qdd = np.array([q2, t.offset - 2 * q2]), np.array([v2, -2 * v2]), np.array([a2, -2 * a2])
        full = gtdyn.inverse_dynamics(belt, [0.5, *q], [0.0, *v], [0.0, *qdd])
        assert rel_err(gtdyn.inverse_dynamics(reduced, q, v, qdd).tau, full.tau[1:]) < TOL


def test_a_belt_locked_at_every_drive_locks_its_rotor_and_a_locked_rotor_locks_its_last_free_drive(belt):
    every = belt.locked({"j1": 0.5, "j2": -0.25})
    assert every.num_dofs == 0 and every.frames["rotor"][0] == "base"
    expected_rotor = 6 * 0.5 - 2 * -0.25 + 0.1
    same = belt.locked({"j1": 0.5, "j2": -0.25, "r1": expected_rotor})  # consistent values are accepted
    assert np.allclose(same.frames["rotor"][1].matrix(), every.frames["rotor"][1].matrix(), atol=1e-12)
    rotor_and_j2 = belt.locked({"r1": 2.0, "j2": 0.4})  # j1 = (2 − 0.1 + 2·0.4) / 6
    alone = belt.locked({"j1": (2.0 - 0.1 + 0.8) / 6, "j2": 0.4})
    for name in ("l1", "l2", "rotor"):
        assert np.allclose(rotor_and_j2.frames[name][1].matrix(), alone.frames[name][1].matrix(), atol=1e-12)
    panda = gtdyn.load_robot("panda")
    by_finger2 = panda.locked({"panda_finger_joint2": 0.03})
    assert by_finger2.num_dofs == 7
    assert np.allclose(by_finger2.frames["panda_leftfinger"][1].matrix(),
                       panda.locked({"panda_finger_joint1": 0.03}).frames["panda_leftfinger"][1].matrix(), atol=1e-12)


def test_values_that_break_a_coupling_or_leave_it_undetermined_are_named(belt, panda):
    with pytest.raises(gtdyn.ArgumentError, match=r"values\['panda_finger_joint2'\].*must be 0.02"):
        panda.locked({"panda_finger_joint1": 0.02, "panda_finger_joint2": 0.03})
    with pytest.raises(gtdyn.ArgumentError, match=r"values\['r1'\].*j1, j2 free"):
        belt.locked({"r1": 1.0})
    with pytest.raises(gtdyn.ArgumentError, match=r"values: the transmission 'r1 driven by j1, j2' locks joint "
                                                  r"'j1' at 4.15.*outside the limits \[-3, 3\]"):
        belt.locked({"r1": 25.0, "j2": 0.0})


def test_other_readings_of_the_transmissions(panda):
    """"approximate": finger2 is welded at its offset and finger1's armature goes with it when finger1 is locked
    (the full approximate robot with finger1 held); "independent": finger2 stays free."""
    approximate = gtdyn.load_robot("panda", transmissions="approximate")
    reduced = approximate.locked({"panda_finger_joint1": 0.02})
    assert reduced.joint_names == panda.joint_names[:7] and reduced.reading == "approximate"
    q, v, qdd = np.random.default_rng(6).uniform(-1, 1, (3, 7))
    full = gtdyn.inverse_dynamics(approximate, [*q, 0.02], [*v, 0.0], [*qdd, 0.0])
    assert rel_err(gtdyn.inverse_dynamics(reduced, q, v, qdd).tau, full.tau[:7]) < TOL
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gtdyn.ModelWarning)
        independent = gtdyn.load_robot("panda", transmissions="independent")
    assert independent.locked({"panda_finger_joint1": 0.02}).joint_names == panda.joint_names[:7] + [
        "panda_finger_joint2"]


# -- errors --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("values, message", [
    ([("joint1", 0.1)], r"values: expected a dict from joint name to value, got list"),
    ({"elbow": 0.1}, r"values: unknown joints elbow \(joints: joint1, "),
    ({"joint2": float("nan")}, r"values\['joint2'\]: non-finite value nan"),
    ({"joint2": "0.1"}, r"values\['joint2'\]: expected a real number"),
    ({"joint2": 4.0}, r"values\['joint2'\]: 4 is outside the limits \[-0.785398, 3.92699\] of joint 'joint2'"),
])
def test_bad_values_are_named(puma, values, message):
    with pytest.raises(gtdyn.ArgumentError, match=message):
        puma.locked(values)


def test_locking_a_loop_closing_joint_is_not_supported():
    four_bar = gtdyn.load_robot("four_bar")
    closing = four_bar.loop_joints[0].name
    with pytest.raises(gtdyn.ArgumentError, match=rf"values\['{closing}'\]: .*closes a loop.*not supported"):
        four_bar.locked({closing: 0.1})


def test_a_robot_without_a_description_cannot_be_locked(puma):
    with pytest.raises(gtdyn.ArgumentError, match="not built from a description"):
        dataclasses.replace(puma, description=None).locked({"joint1": 0.1})


# -- compiled solvers ----------------------------------------------------------------------------------------------


def test_a_reduced_robot_has_its_own_compiled_solver(tmp_path, monkeypatch):
    """The compile cache keys robots by content: the reduced robot's solver is compiled, not loaded from the full
    robot's entry, and a second reduction of the same values loads the first's."""
    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path))
    rrr = gtdyn.load_robot("rrr")
    full = gtdyn.compile(rrr, "forward", ordering="aba")
    reduced = rrr.locked({"j2": 0.0})
    solver = gtdyn.compile(reduced, "forward", ordering="aba")
    assert not solver.from_cache and solver.cache_key != full.cache_key
    q, v, tau = np.random.default_rng(7).uniform(-1, 1, (3, 2))
    assert rel_err(solver(q, v, tau), gtdyn.forward_dynamics(reduced, q, v, tau, ordering="aba").qdd) < TOL
    assert gtdyn.compile(rrr.locked({"j2": 0.0}), "forward", ordering="aba").from_cache
