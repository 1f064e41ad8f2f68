"""The bundled quadruped (urdf/quadruped.urdf, our own making): its inertias are the solid-body formulas for
the dimensions its header states, its joints sit where the header says, its floating-base dynamics agree with
Pinocchio's free flyer, and standing still on four feet its least-norm contact forces carry exactly its weight."""

import re
import xml.etree.ElementTree as ET

import gtsam
import numpy as np
import pytest
from references import rel_err

import gtdyn
from gtdyn.bench.pinocchio import FreeFlyerPinocchio

TOL = 1e-9  # relative; these solves reach ~1e-14
G = 9.81
LEGS = {"FL": (1, 1), "FR": (1, -1), "RL": (-1, 1), "RR": (-1, -1)}  # sign of x (forward), of y (left)
FEET = [f"{leg}_foot" for leg in LEGS]
# the bodies as the file's header states them (m, kg): a box torso, cylinders for the legs
TORSO = {"a": 0.4, "b": 0.2, "c": 0.1, "m": 4.0}  # box a (x) × b (y) × c (z)
HIP = {"r": 0.03, "L": 0.05, "m": 0.2}  # cylinder along y, from the HAA axis out to the HFE axis
THIGH = {"r": 0.015, "L": 0.2, "m": 0.3}  # cylinder along z, from the HFE axis down to the knee
SHANK = {"r": 0.01, "L": 0.2, "m": 0.1}  # cylinder along z, from the knee down to the foot
TOTAL_MASS = TORSO["m"] + 4 * (HIP["m"] + THIGH["m"] + SHANK["m"])  # 6.4 kg
# a standing pose with bent knees, the hind legs mirroring the front ones (knees point inwards): each foot
# straight below its hip, so the pose is symmetric front/back and left/right
BEND = 0.8
STAND = {"FL": (0.0, BEND, -2 * BEND), "FR": (0.0, BEND, -2 * BEND),
         "RL": (0.0, -BEND, 2 * BEND), "RR": (0.0, -BEND, 2 * BEND)}
HEIGHT = (THIGH["L"] + SHANK["L"]) * np.cos(BEND)  # of the torso origin above the feet


@pytest.fixture(scope="module")
def quadruped():
    path = gtdyn.bundled_path("quadruped")
    robot = gtdyn.load_robot("quadruped", base="floating")
    return robot, FreeFlyerPinocchio(path, robot)


def standing_q(robot) -> np.ndarray:
    angles = {f"{leg}_{kind}": a for leg, values in STAND.items() for kind, a in zip(("HAA", "HFE", "KFE"), values)}
    return np.array([angles[name] for name in robot.joint_names])


def standing_pose() -> np.ndarray:
    pose = np.eye(4)
    pose[2, 3] = HEIGHT  # feet on the ground z = 0
    return pose


def box_inertia(m, a, b, c):
    return np.diag([m * (b**2 + c**2) / 12, m * (a**2 + c**2) / 12, m * (a**2 + b**2) / 12])


def cylinder_inertia(m, r, L, axis):
    transverse, axial = m * (3 * r**2 + L**2) / 12, m * r**2 / 2
    return np.diag([axial if k == axis else transverse for k in range(3)])


def test_the_file_is_of_our_making_and_states_what_the_test_checks():
    """The header comment gives the provenance and the very dimensions and masses checked below."""
    text = open(gtdyn.bundled_path("quadruped")).read()
    header = text[text.index("<!--"):text.index("-->")]
    assert "our own making" in header and "no third-party source" in header
    assert re.search(r"x forward, y left, z up", header)
    for line in [f"box {TORSO['a']} (x) x {TORSO['b']} (y) x {TORSO['c']} (z), m = {TORSO['m']}",
                 f"cylinder along y, radius {HIP['r']}, length {HIP['L']}, m = {HIP['m']}",
                 f"cylinder along z, radius {THIGH['r']}, length {THIGH['L']}, m = {THIGH['m']}",
                 f"cylinder along z, radius {SHANK['r']}, length {SHANK['L']}, m = {SHANK['m']}",
                 f"Total mass {TOTAL_MASS:g} kg"]:
        assert line in header, line


def test_inertias_are_the_solid_body_formulas_of_the_stated_dimensions():
    """Every link's mass, CoM (the middle of its solid) and inertia about the CoM, read from the XML,
    against the box and cylinder formulas computed here from the stated dimensions."""
    root = ET.parse(gtdyn.bundled_path("quadruped")).getroot()
    expected = {"torso": (TORSO["m"], (0, 0, 0), box_inertia(TORSO["m"], TORSO["a"], TORSO["b"], TORSO["c"]))}
    for leg, (_, sy) in LEGS.items():
        expected[f"{leg}_hip"] = (HIP["m"], (0, sy * HIP["L"] / 2, 0),
                                  cylinder_inertia(HIP["m"], HIP["r"], HIP["L"], 1))
        for name, body in [("thigh", THIGH), ("shank", SHANK)]:
            expected[f"{leg}_{name}"] = (body["m"], (0, 0, -body["L"] / 2),
                                         cylinder_inertia(body["m"], body["r"], body["L"], 2))
        expected[f"{leg}_foot"] = None  # massless: a frame at the shank's end
    links = {link.get("name"): link for link in root.iter("link")}
    assert sorted(links) == sorted(expected)
    for name, want in expected.items():
        inertial = links[name].find("inertial")
        if want is None:
            assert inertial is None, name
            continue
        mass, com, inertia = want
        origin = inertial.find("origin")
        assert float(inertial.find("mass").get("value")) == mass, name
        assert np.allclose([float(x) for x in origin.get("xyz").split()], com, rtol=0, atol=1e-15), name
        assert np.array_equal([float(x) for x in origin.get("rpy").split()], [0, 0, 0]), name
        got = inertial.find("inertia")
        written = np.array([[float(got.get(f"i{a}{b}" if f"i{a}{b}" in got.attrib else f"i{b}{a}")) for b in "xyz"]
                            for a in "xyz"])
        assert rel_err(written, inertia) < 1e-14, (name, written, inertia)  # written to 15 significant digits
    assert sum(float(m.get("value")) for m in root.iter("mass")) == pytest.approx(TOTAL_MASS, rel=1e-15)


def test_the_joints_sit_where_the_header_says(quadruped):
    """At q = 0 (legs straight down), in the torso frame, read by Pinocchio: HAA at the torso's corners, HFE
    0.05 m outwards, the knee 0.2 m below, the foot 0.2 m below that; and the axes x, y, y."""
    robot, ref = quadruped
    pin = ref.pin
    pin.framesForwardKinematics(ref.model, ref.data, ref.configuration(np.zeros(12)))
    for leg, (sx, sy) in LEGS.items():
        hip = np.array([sx * TORSO["a"] / 2, sy * TORSO["b"] / 2, 0.0])
        out = hip + [0, sy * HIP["L"], 0]
        places = {f"{leg}_hip": hip, f"{leg}_thigh": out, f"{leg}_shank": out - [0, 0, THIGH["L"]],
                  f"{leg}_foot": out - [0, 0, THIGH["L"] + SHANK["L"]]}
        for frame, want in places.items():
            assert np.allclose(ref.data.oMf[ref.model.getFrameId(frame)].translation, want, rtol=0, atol=1e-15), frame
        assert ([tuple(robot.joint(f"{leg}_{kind}").axis) for kind in ("HAA", "HFE", "KFE")]
                == [(1, 0, 0), (0, 1, 0), (0, 1, 0)])
    assert pin.computeTotalMass(ref.model) == pytest.approx(TOTAL_MASS, rel=1e-15)


def test_inverse_and_forward_dynamics_match_pinocchio_free_flyer(quadruped):
    robot, ref = quadruped
    rng = np.random.default_rng(7)
    for _ in range(3):
        q, v, qdd = rng.uniform(-1, 1, (3, 12))
        pose = gtsam.Pose3(gtsam.Rot3.Expmap(rng.normal(size=3)), rng.normal(size=3)).matrix()
        twist, accel = rng.normal(size=(2, 6))
        wrench, tau = ref.rnea(q, v, qdd, pose, twist, accel)
        r = gtdyn.inverse_dynamics(robot, q, v, qdd, base_pose=pose, base_twist=twist, base_accel=accel)
        assert rel_err(np.concatenate([r.base_wrench, r.tau]), np.concatenate([wrench, tau])) < TOL
        base_accel, qdd_ref = ref.aba(q, v, tau, pose, twist)
        for ordering in (None, "aba", "crba"):
            f = gtdyn.forward_dynamics(robot, q, v, tau, base_pose=pose, base_twist=twist, ordering=ordering)
            assert rel_err(np.concatenate([f.base_accel, f.qdd]), np.concatenate([base_accel, qdd_ref])) < TOL, ordering


def test_standing_on_four_feet_carries_the_weight(quadruped):
    """At rest on four point contacts the base's six equations are Σ f_i = W ẑ and Σ (p_i − c) × f_i = 0 (c the
    CoM): 12 force components, 6 equations, so gtdyn gives the least-norm forces and says so. Those are of the
    form f_i = λ + μ × (p_i − c); here c is straight above the centroid of the feet (checked with Pinocchio), so
    f_i = W ẑ / 4 (μ = 0) solves the equations and is that least-norm answer. Pinocchio's RNEA, given those
    contact forces as external forces, needs no base wrench and the joint torques gtdyn found."""
    robot, ref = quadruped
    pin = ref.pin
    q, pose = standing_q(robot), standing_pose()
    zeros = np.zeros(12)
    r = gtdyn.inverse_dynamics(robot, q, zeros, zeros, base_pose=pose, base_twist=np.zeros(6),
                               base_accel=np.zeros(6), contacts=[gtdyn.Contact(foot) for foot in FEET])
    assert r.least_norm == ("c1", "c2", "c3", "c4")
    assert np.array_equal(r.base_wrench, np.zeros(6))
    assert [c.contact.link for c in r.contact_wrenches] == FEET
    weight = pin.computeTotalMass(ref.model) * G
    forces = np.array([c.world[3:] for c in r.contact_wrenches])
    assert abs(forces[:, 2].sum() - weight) < TOL * weight
    assert np.max(np.abs(forces[:, :2].sum(axis=0))) < TOL * weight
    # the premise of the least-norm argument, from Pinocchio: feet on the ground, CoM above their centroid
    qp = ref.configuration(q, pose)
    pin.framesForwardKinematics(ref.model, ref.data, qp)
    feet = np.array([ref.data.oMf[ref.model.getFrameId(foot)].translation for foot in FEET])
    com = pin.centerOfMass(ref.model, ref.data, qp)
    assert np.max(np.abs(feet[:, 2])) < 1e-15 and np.max(np.abs(com[:2] - feet[:, :2].mean(axis=0))) < 1e-15
    assert np.max(np.abs(np.cross(feet - com, forces).sum(axis=0))) < TOL * weight  # no moment about the CoM
    assert np.max(np.abs(forces - [0, 0, weight / 4])) < TOL * weight
    assert all(np.array_equal(c.local[:3], np.zeros(3)) for c in r.contact_wrenches)  # points do not twist
    # Pinocchio: the environment's contact wrenches as external forces leave no base wrench and the same torques
    fext = ref.fext({c.contact.link: c.local for c in r.contact_wrenches})
    generalized = pin.rnea(ref.model, ref.data, qp, np.zeros(ref.model.nv), np.zeros(ref.model.nv), fext)
    assert np.max(np.abs(ref.base_part(generalized))) < TOL * weight
    assert rel_err(r.tau, ref.joint_order(generalized)) < TOL
    # and by hand (statics of one leg, its foot pushed up by W/4 straight below the HFE axis, 0.05 m outside
    # the HAA axis; thigh and shank CoMs both 0.1 sin(BEND) behind or ahead of the hip): per leg HAA, HFE, KFE
    s, legs = np.sin(BEND), THIGH["m"] + SHANK["m"]
    haa = weight / 4 * HIP["L"] - G * (HIP["m"] * HIP["L"] / 2 + legs * HIP["L"])
    hfe = G * legs * THIGH["L"] / 2 * s
    kfe = (weight / 4 - G * SHANK["m"] / 2) * SHANK["L"] * s
    by_hand = np.concatenate([[-sy * haa, sx * hfe, sx * kfe] for sx, sy in LEGS.values()])
    assert rel_err(r.tau, by_hand) < TOL


def test_lifting_a_foot_with_the_standing_torques(quadruped):
    """Forward dynamics with the standing torques on three feet: Pinocchio, given the motion gtdyn found, sees
    the three feet in contact with zero classical acceleration and the lifted one accelerating."""
    robot, ref = quadruped
    pin = ref.pin
    q, pose = standing_q(robot), standing_pose()
    zeros = np.zeros(12)
    standing = gtdyn.inverse_dynamics(robot, q, zeros, zeros, base_pose=pose, base_twist=np.zeros(6),
                                      base_accel=np.zeros(6), contacts=[gtdyn.Contact(foot) for foot in FEET])
    lifted = gtdyn.forward_dynamics(robot, q, zeros, standing.tau, base_pose=pose, base_twist=np.zeros(6),
                                    contacts=[gtdyn.Contact(foot) for foot in FEET[1:]])
    assert len(lifted.contact_wrenches) == 3 and lifted.least_norm == ()
    assert np.all(np.isfinite([c.local for c in lifted.contact_wrenches]))
    qp, vp = ref.configuration(q, pose), np.zeros(ref.model.nv)
    pin.forwardKinematics(ref.model, ref.data, qp, vp, ref.tangent(lifted.qdd, lifted.base_accel))
    pin.updateFramePlacements(ref.model, ref.data)
    accel = {foot: pin.getFrameClassicalAcceleration(ref.model, ref.data, ref.model.getFrameId(foot),
                                                     pin.LOCAL_WORLD_ALIGNED).linear for foot in FEET}
    scale = np.max(np.abs(lifted.qdd))
    assert all(np.max(np.abs(accel[foot])) < 1e-9 * scale for foot in FEET[1:])
    assert np.linalg.norm(accel[FEET[0]]) > 1.0
