"""Rigid contacts: constrained forward dynamics against the KKT system written here from Pinocchio's CRBA,
nonlinear effects and frame Jacobians; the contact points' classical acceleration read back from Pinocchio;
least-norm contact forces of inverse dynamics against the pseudo-inverse of the base rows; round trips."""

import warnings

import numpy as np
import pytest
from references import erd_path, rel_err

import gtdyn
from gtdyn.bench.pinocchio import FreeFlyerPinocchio, PinocchioModel
from gtdyn.orderings import applicable

TOL = 1e-9  # the relative accuracy; these solves reach ~1e-13 (the KKT reference is an LU solve)
FEET = ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"]


@pytest.fixture(scope="module")
def solo():
    path = erd_path("solo_description/robots/solo12.urdf")
    robot = gtdyn.load_robot(path, base="floating")
    return robot, FreeFlyerPinocchio(path, robot)


def frame_terms(ref, qp, vp, frames, rows):
    """Stacked frame Jacobians (LOCAL, ``rows`` of each: 3 linear or 6) and the matching acceleration at
    q̈ = 0: classical for points, spatial for surfaces (J̇q̇ and the velocity-product term)."""
    pin, model, data = ref.pin, ref.model, ref.data
    pin.forwardKinematics(model, data, qp, vp, np.zeros(model.nv))
    pin.computeJointJacobians(model, data, qp)
    pin.updateFramePlacements(model, data)
    J, drift = [], []
    for name in frames:
        fid = model.getFrameId(name)
        Jf = pin.getFrameJacobian(model, data, fid, pin.LOCAL)
        if rows == 3:
            J.append(Jf[:3])
            drift.append(pin.getFrameClassicalAcceleration(model, data, fid, pin.LOCAL).linear)
        else:
            J.append(np.vstack([Jf[3:], Jf[:3]]))  # gtdyn order [angular; linear]
            a = pin.getFrameAcceleration(model, data, fid, pin.LOCAL)
            drift.append(np.concatenate([a.angular, a.linear]))
    return np.vstack(J), np.concatenate(drift)


def kkt_forward(ref, qp, vp, taup, frames, rows=3):
    """[M Jᵀ; J 0] [a; −f] = [τ − h; −γ]: accelerations and the forces f the environment applies."""
    pin, model, data = ref.pin, ref.model, ref.data
    M = pin.crba(model, data, qp)
    M = np.triu(M) + np.triu(M, 1).T
    h = pin.nonLinearEffects(model, data, qp, vp)
    J, drift = frame_terms(ref, qp, vp, frames, rows)
    K = np.block([[M, J.T], [J, np.zeros((len(J), len(J)))]])
    solution = np.linalg.solve(K, np.concatenate([taup - h, -drift]))
    return solution[:model.nv], -solution[model.nv:]


def random_state(robot, rng):
    q, v, tau = rng.uniform(-1, 1, (3, robot.num_dofs))
    return q, v, tau, rng.normal(size=6)


@pytest.mark.parametrize("feet", [2, 3, 4])
def test_forward_dynamics_with_feet_on_the_ground_matches_the_kkt_system(solo, feet):
    robot, ref = solo
    rng = np.random.default_rng(feet)
    contacts = [gtdyn.Contact(name) for name in FEET[:feet]]
    for _ in range(2):
        q, v, tau, twist = random_state(robot, rng)
        qp, vp = ref.configuration(q), ref.tangent(v, twist)
        a, forces = kkt_forward(ref, qp, vp, ref.tangent(tau), FEET[:feet])
        expected = np.concatenate([ref.base_part(a), ref.joint_order(a), forces])
        for ordering in [None, *applicable("forward")]:
            r = gtdyn.forward_dynamics(robot, q, v, tau, base_twist=twist, contacts=contacts, ordering=ordering)
            got = np.concatenate([r.base_accel, r.qdd, *[c.local[3:] for c in r.contact_wrenches]])
            assert rel_err(got, expected) < TOL, ordering
        # Pinocchio, given the motion gtdyn found, sees every foot with zero classical acceleration
        r = gtdyn.forward_dynamics(robot, q, v, tau, base_twist=twist, contacts=contacts)
        pin = ref.pin
        pin.forwardKinematics(ref.model, ref.data, qp, vp, ref.tangent(r.qdd, r.base_accel))
        pin.updateFramePlacements(ref.model, ref.data)
        for name in FEET[:feet]:
            accel = pin.getFrameClassicalAcceleration(ref.model, ref.data, ref.model.getFrameId(name), pin.LOCAL)
            assert np.max(np.abs(accel.linear)) < 1e-9 * (1 + np.max(np.abs(r.qdd)))


def test_contact_forces_in_the_world_and_the_dag(solo):
    robot, ref = solo
    q, v, tau, twist = random_state(robot, np.random.default_rng(11))
    r = gtdyn.forward_dynamics(robot, q, v, tau, base_twist=twist, contacts=[gtdyn.Contact(f) for f in FEET],
                               ordering="aba")
    ref.pin.framesForwardKinematics(ref.model, ref.data, ref.configuration(q))
    for name, wrench in zip(FEET, r.contact_wrenches):
        R = ref.data.oMf[ref.model.getFrameId(name)].rotation
        assert np.array_equal(wrench.local[:3], np.zeros(3))  # a point contact pushes, it does not twist
        assert rel_err(wrench.world, np.concatenate([R @ wrench.local[:3], R @ wrench.local[3:]])) < 1e-12
        assert wrench.contact.link == name
    assert r.ordering[-4:] == ["c1", "c2", "c3", "c4"]  # ABA: the contact forces last, after the base
    labels = {d["label"]: d for _, d in r.dag().nodes(data=True)}
    # drawn as written in the API: c for a point contact's force, C for a surface contact's wrench
    assert labels["c1"]["kind"] == "contact_force" and labels["c1"]["pretty"] == "c1"
    assert all(labels[f"c{k}"]["body"] == robot.frame_in_body(foot)[0]  # its leg's column in tree_layout
               for k, foot in enumerate(FEET, start=1))


def test_standing_on_four_feet_gives_the_least_norm_forces(solo):
    """Inverse dynamics on four feet leaves 12 force components for 6 base equations: the answer is the
    least-norm f of the base rows M_b a + h_b = J_bᵀ f (Pinocchio's terms, pseudo-inverse here), with the
    joint torques that go with it; forward dynamics of those torques gives back the motion and the forces."""
    robot, ref = solo
    rng = np.random.default_rng(12)
    contacts = [gtdyn.Contact(name) for name in FEET]
    q, v, tau, twist = random_state(robot, rng)
    motion = gtdyn.forward_dynamics(robot, q, v, tau, base_twist=twist, contacts=contacts)  # keeps the feet
    r = gtdyn.inverse_dynamics(robot, q, v, motion.qdd, base_twist=twist, base_accel=motion.base_accel,
                               contacts=contacts, ordering="rnea")
    assert r.least_norm == ("c1", "c2", "c3", "c4") and np.array_equal(r.base_wrench, np.zeros(6))
    qp, vp, ap = ref.configuration(q), ref.tangent(v, twist), ref.tangent(motion.qdd, motion.base_accel)
    pin = ref.pin
    M = pin.crba(ref.model, ref.data, qp)
    M = np.triu(M) + np.triu(M, 1).T
    h = pin.nonLinearEffects(ref.model, ref.data, qp, vp)
    J, _ = frame_terms(ref, qp, vp, FEET, 3)
    generalized = M @ ap + h  # = Sᵀτ + Jᵀf
    forces = np.linalg.pinv(J[:, :6].T) @ generalized[:6]
    torques = ref.joint_order(generalized - J.T @ forces)
    got = np.concatenate([*[c.local[3:] for c in r.contact_wrenches], r.tau])
    assert rel_err(got, np.concatenate([forces, torques])) < TOL
    back = gtdyn.forward_dynamics(robot, q, v, r.tau, base_twist=twist, contacts=contacts)
    assert rel_err(np.concatenate([back.base_accel, back.qdd]), np.concatenate([motion.base_accel, motion.qdd])) < TOL
    assert rel_err(np.concatenate([c.local for c in back.contact_wrenches]),
                   np.concatenate([c.local for c in r.contact_wrenches])) < TOL


def test_a_motion_that_breaks_a_contact_is_named(solo):
    robot, _ = solo
    q, v, _, twist = random_state(robot, np.random.default_rng(13))
    with pytest.raises(gtdyn.ArgumentError, match="breaks contact 1 \\(point on 'FL_FOOT'\\)"):
        gtdyn.inverse_dynamics(robot, q, v, np.zeros(12), base_twist=twist,
                               contacts=[gtdyn.Contact(name) for name in FEET])


def test_surface_contact_holds_an_arm_still_in_its_frame():
    """The PUMA's flange in surface contact: six constraints on six joints, so q̈ = −J⁻¹ J̇q̇ (Pinocchio's
    LOCAL frame Jacobian and spatial acceleration) whatever the torques, and the contact wrench is the one of
    the KKT system."""
    robot = gtdyn.load_robot("puma560")
    path = gtdyn.bundled_path("puma560")
    ref = PinocchioModel(path, robot)
    rng = np.random.default_rng(14)
    q, v, tau = rng.uniform(-1, 1, (3, 6))
    point = (0.0, 0.0, 0.05)
    r = gtdyn.forward_dynamics(robot, q, v, tau, contacts=[gtdyn.Contact("flange", point, "surface")])
    # the contact frame: the flange frame moved by `point`, as a frame Pinocchio knows
    pin = ref.pin
    flange = ref.model.frames[ref.model.getFrameId("flange")]
    ref.model.addFrame(pin.Frame("contact", flange.parentJoint, flange.placement * pin.SE3(np.eye(3), np.array(point)),
                                 pin.FrameType.OP_FRAME))
    ref.data = ref.model.createData()
    qp, vp = ref.configuration(q), ref.tangent(v)
    a, wrench = kkt_forward(ref, qp, vp, ref.tangent(tau), ["contact"], rows=6)
    assert rel_err(r.qdd, ref.joint_order(a)) < TOL
    assert rel_err(r.contact_wrenches[0].local, wrench) < TOL


def test_contact_arguments_are_checked(solo):
    robot, _ = solo
    zeros = np.zeros(12)
    cases = [([gtdyn.Contact("no_such_foot")], "unknown link or frame 'no_such_foot'"),
             ([gtdyn.Contact("FL_FOOT", kind="line")], "kind 'line' is not one of point, surface"),
             ([gtdyn.Contact("FL_FOOT", point=(0, np.inf, 0))], r"contacts\[0\].point"),
             (gtdyn.Contact("FL_FOOT"), "a list of gtdyn.Contact"),
             (["FL_FOOT"], r"contacts\[0\]: expected a gtdyn.Contact")]
    for contacts, message in cases:
        with pytest.raises(gtdyn.ArgumentError, match=message):
            gtdyn.forward_dynamics(robot, zeros, zeros, zeros, contacts=contacts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gtdyn.ModelWarning)
        fixed = gtdyn.load_robot("puma560")
    with pytest.raises(gtdyn.ArgumentError, match="welded to the world"):
        gtdyn.forward_dynamics(fixed, np.zeros(6), np.zeros(6), np.zeros(6), contacts=[gtdyn.Contact("base_link")])


def test_contact_names_that_are_not_strings_are_named():
    """A list as a link or kind used to escape as 'unhashable type: list' from the look-ups; a point beyond any
    length gtdyn accepts is named too."""
    robot = gtdyn.load_robot("quadruped", base="floating")
    zeros = np.zeros(robot.num_dofs)
    for contact, message in ((gtdyn.Contact(["FL_foot"]), r"^contacts\[0\]\.link: expected a link or frame name"),
                             (gtdyn.Contact("FL_foot", kind=["point"]), r"^contacts\[0\]\.kind: expected one of point"),
                             # a point 1e200 m away overflowed the dynamics, and the error named gravity
                             (gtdyn.Contact("FL_foot", (1e200, 0, 0)), r"^contacts\[0\]\.point: 1e\+200 m from")):
        with pytest.raises(gtdyn.ArgumentError, match=message):
            gtdyn.forward_dynamics(robot, zeros, zeros, zeros, contacts=[contact])
        with pytest.raises(gtdyn.ArgumentError, match=message):
            gtdyn.compile(robot, "forward", contacts=[contact])


def test_contacts_that_cannot_carry_the_base_are_named():
    """Inverse dynamics of a floating quadruped on one foot: no contact force at one point can hold the base
    still against gravity, so the data are inconsistent — and the error says it is the contacts and the base,
    not loops or passive joints (which this robot does not have)."""
    robot = gtdyn.load_robot(gtdyn.bundled_path("quadruped"), base="floating")
    zeros = np.zeros(robot.num_dofs)
    with pytest.raises(gtdyn.ArgumentError, match=r"contacts \(point on 'FL_foot'\) cannot produce that motion") as e:
        gtdyn.inverse_dynamics(robot, zeros, zeros, zeros, contacts=[gtdyn.Contact("FL_foot")])
    assert "closed loops" not in str(e.value) and "passive" not in str(e.value)
