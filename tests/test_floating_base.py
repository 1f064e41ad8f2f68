"""Floating bases: the root link as one more body with six free degrees of freedom, checked against Pinocchio's
free-flyer RNEA and ABA, against a free rigid body's equations derived by hand, and by round trips."""

import warnings

import numpy as np
import pytest
from references import erd_path, random_base, rel_err

import gtdyn
from gtdyn.bench.pinocchio import FreeFlyerPinocchio
from gtdyn.orderings import applicable

# Relative error (max norm) of the issue; the solves reach ~1e-15 on legged robots and ~1e-11 on iCub, whose
# κ ≈ 1e7 (see gtdyn.linear.elimination).
TOL = 1e-9

# A slice of the verification (benchmarks/verify_floating_base.py: 20 states, every ordering, more robots).
ROBOTS = {"solo12": "solo_description/robots/solo12.urdf",
          "anymal": "anymal_b_simple_description/robots/anymal.urdf",
          "go1": "go1_description/urdf/go1.urdf"}


def load_floating(path: str):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*<mimic>", category=gtdyn.ModelWarning)
        return gtdyn.load_robot(path, base="floating")


@pytest.fixture(scope="module", params=sorted(ROBOTS))
def floating(request):
    path = erd_path(ROBOTS[request.param])
    robot = load_floating(path)
    return robot, FreeFlyerPinocchio(path, robot)


@pytest.mark.parametrize("ordering", [None, *applicable("inverse")])
def test_inverse_dynamics_matches_pinocchio_free_flyer(floating, ordering):
    robot, pin = floating
    rng = np.random.default_rng(5)
    for _ in range(2):
        T, twist, accel = random_base(rng)
        q, v, qdd = rng.uniform(-1, 1, (3, robot.num_dofs))
        r = gtdyn.inverse_dynamics(robot, q, v, qdd, base_pose=T, base_twist=twist, base_accel=accel, ordering=ordering)
        wrench, tau = pin.rnea(q, v, qdd, T, twist, accel)
        assert rel_err(np.concatenate([r.base_wrench, r.tau]), np.concatenate([wrench, tau])) < TOL


@pytest.mark.parametrize("ordering", [None, *applicable("forward")])
def test_forward_dynamics_matches_pinocchio_free_flyer(floating, ordering):
    robot, pin = floating
    rng = np.random.default_rng(6)
    for _ in range(2):
        T, twist, _ = random_base(rng)
        q, v, tau = rng.uniform(-1, 1, (3, robot.num_dofs))
        r = gtdyn.forward_dynamics(robot, q, v, tau, base_pose=T, base_twist=twist, ordering=ordering)
        accel, qdd = pin.aba(q, v, tau, T, twist)
        assert rel_err(np.concatenate([r.base_accel, r.qdd]), np.concatenate([accel, qdd])) < TOL


def test_round_trips_and_hybrid_with_the_base_given_either_way(floating):
    robot, _ = floating
    rng = np.random.default_rng(7)
    T, twist, accel = random_base(rng)
    q, v, qdd = rng.uniform(-1, 1, (3, robot.num_dofs))
    inverse = gtdyn.inverse_dynamics(robot, q, v, qdd, base_pose=T, base_twist=twist, base_accel=accel)
    # The free base: the same torques give back the motion only if the environment's wrench is applied too.
    forward = gtdyn.forward_dynamics(robot, q, v, inverse.tau, base_pose=T, base_twist=twist,
                                     external_wrenches={robot.base.name: inverse.base_wrench})
    assert rel_err(np.concatenate([forward.base_accel, forward.qdd]), np.concatenate([accel, qdd])) < TOL
    assert np.array_equal(forward.base_wrench, np.zeros(6))
    names = robot.joint_names
    half = ({n: qdd[i] for i, n in enumerate(names) if i % 2 == 0},
            {n: inverse.tau[i] for i, n in enumerate(names) if i % 2})
    given_accel = gtdyn.hybrid_dynamics(robot, q, v, *half, base_pose=T, base_twist=twist, base_accel=accel)
    assert rel_err(given_accel.base_wrench, inverse.base_wrench) < TOL
    assert rel_err(np.concatenate([given_accel.qdd, given_accel.tau]), np.concatenate([qdd, inverse.tau])) < TOL
    free = gtdyn.hybrid_dynamics(robot, q, v, *half, base_pose=T, base_twist=twist,
                                 external_wrenches={robot.base.name: inverse.base_wrench})
    assert rel_err(np.concatenate([free.base_accel, free.qdd]), np.concatenate([accel, qdd])) < TOL


FREE_BODY = """<robot name="brick">
  <link name="brick">
    <inertial><origin xyz="{com}" rpy="0 0 0"/><mass value="{mass}"/>
      <inertia ixx="{I[0]}" ixy="0" ixz="0" iyy="{I[1]}" iyz="0" izz="{I[2]}"/></inertial>
  </link>
</robot>"""


@pytest.mark.parametrize("com", ["0 0 0", "0.3 -0.2 0.1"])
def test_a_free_body_falls_at_g_and_turns_by_eulers_equations(tmp_path, com):
    """One link, no joints. With the body frame at the CoM, Newton–Euler by hand: I ω̇ = −ω × I ω and
    v̇ = Rᵀ g − ω × v (the body-frame derivative of the CoM velocity). A CoM away from the link origin is
    checked through the classical acceleration of the CoM, Rᵀ g, and the same ω̇."""
    mass, inertia = 2.0, np.array([0.3, 0.5, 0.7])
    path = tmp_path / "brick.urdf"
    path.write_text(FREE_BODY.format(com=com, mass=mass, I=inertia))
    robot = gtdyn.load_robot(str(path), base="floating")
    assert robot.floating_base and robot.num_dofs == 0
    c = np.array(com.split(), float)
    rng = np.random.default_rng(8)
    T, twist, _ = random_base(rng)
    g = np.array([0.0, 0.0, -9.81])
    r = gtdyn.forward_dynamics(robot, [], [], [], base_pose=T, base_twist=twist)
    w, v_origin = twist[:3], twist[3:]
    w_dot = -np.cross(w, inertia * w) / inertia
    assert rel_err(r.base_accel[:3], w_dot) < 1e-12
    # Velocity and classical acceleration of the CoM, in the body frame, from the link origin's.
    v_com = v_origin + np.cross(w, c)
    a_com = r.base_accel[3:] + np.cross(r.base_accel[:3], c) + np.cross(w, v_com)
    assert rel_err(a_com, T[:3, :3].T @ g) < 1e-12
    # Inverse dynamics of that motion needs no wrench; of no motion, the weight held up.
    assert np.max(np.abs(gtdyn.inverse_dynamics(robot, [], [], [], base_pose=T, base_twist=twist,
                                                base_accel=r.base_accel).base_wrench)) < 1e-12
    still = gtdyn.inverse_dynamics(robot, [], [], [], base_pose=T)
    assert rel_err(still.base_wrench,
                   np.concatenate([np.cross(c, -mass * T[:3, :3].T @ g), -mass * T[:3, :3].T @ g])) < 1e-12


def test_orderings_put_the_base_where_the_algorithms_do():
    robot = load_floating(erd_path(ROBOTS["solo12"]))
    q = np.zeros(robot.num_dofs)
    forward = {o: gtdyn.forward_dynamics(robot, q, q, q, ordering=o).ordering for o in ("aba", "crba")}
    assert forward["aba"][-1] == "A0" and forward["crba"][-1] == "A0"  # the floating-base articulated/mass matrix
    rnea = gtdyn.inverse_dynamics(robot, q, q, q, ordering="rnea").ordering
    assert [label for label in rnea if label.startswith("F")][0] == "F0"  # back-substitution ends at the base


def test_base_arguments_are_checked():
    fixed = gtdyn.load_robot("rrr")
    zeros = np.zeros(3)
    with pytest.raises(gtdyn.ArgumentError, match="fixed base"):
        gtdyn.forward_dynamics(fixed, zeros, zeros, zeros, base_twist=np.zeros(6))
    with pytest.raises(gtdyn.ArgumentError, match="fixed base"):
        gtdyn.inverse_dynamics(fixed, zeros, zeros, zeros, base_accel=np.zeros(6))
    with pytest.raises(gtdyn.ArgumentError, match="base"):
        gtdyn.load_robot("rrr", base="free")
    floating = gtdyn.load_robot("rrr", base="floating")
    assert floating.floating_base and not fixed.floating_base
    with pytest.raises(gtdyn.ArgumentError, match="forward dynamics solves for the base acceleration"):
        gtdyn.solve(floating, "forward", zeros, zeros, tau=zeros, base_accel=np.zeros(6))
    with pytest.raises(gtdyn.ArgumentError, match="base_pose.*rigid transform"):
        gtdyn.forward_dynamics(floating, zeros, zeros, zeros, base_pose=2 * np.eye(4))
    with pytest.raises(gtdyn.ArgumentError, match="base_twist"):
        gtdyn.forward_dynamics(floating, zeros, zeros, zeros, base_twist=[1, 2, np.nan, 0, 0, 0])


def test_sdf_follows_the_file_unless_told(tmp_path):
    """SDFormat: a model with no joint to the world is free; one with such a joint is fixed, and cannot float."""
    body = ('<link name="a"><inertial><mass>1</mass></inertial></link>'
            '<link name="b"><pose>0 0 1 0 0 0</pose><inertial><mass>1</mass></inertial></link>'
            '<joint name="j" type="revolute"><parent>a</parent><child>b</child><axis><xyz>1 0 0</xyz></axis></joint>')
    free = tmp_path / "free.sdf"
    free.write_text(f'<sdf version="1.7"><model name="m">{body}</model></sdf>')
    assert gtdyn.load_robot(str(free)).floating_base
    assert not gtdyn.load_robot(str(free), base="fixed").floating_base
    world = tmp_path / "world.sdf"
    world.write_text(f'<sdf version="1.7"><model name="m">{body}<joint name="w" type="fixed"><parent>world</parent>'
                     '<child>a</child></joint></model></sdf>')
    assert not gtdyn.load_robot(str(world)).floating_base
    with pytest.raises(gtdyn.ArgumentError, match="attaches its model to the world"):
        gtdyn.load_robot(str(world), base="floating")


def test_joint_positions_of_a_floating_robot_are_pinocchios():
    """The drawing's joint positions start from the root link frame, not its CoM frame (ANYmal's is 5 cm off)."""
    from gtdyn.plot.mechanism import joint_positions

    path = erd_path(ROBOTS["anymal"])
    robot = load_floating(path)
    pin = FreeFlyerPinocchio(path, robot)
    q = np.random.default_rng(9).uniform(-1, 1, robot.num_dofs)
    pin.pin.forwardKinematics(pin.model, pin.data, pin.configuration(q, np.eye(4)))
    positions = joint_positions(robot, q)
    for name in robot.joint_names:
        assert np.max(np.abs(positions[name] - pin.data.oMi[pin.model.getJointId(name)].translation)) < 1e-12


def free_four_bar_sdf() -> str:
    """A square four-bar floating in space (no joint to the world): bars 2 m, 1 kg, I = 1 kg·m² about every
    axis of their centre, joints about z at the corners (0,0) (2,0) (2,2) (0,2). Link frames sit at each bar's
    proximal joint with the bar along their x axis."""
    links, joints = [], []
    for k, (x, y, yaw) in enumerate([(0, 0, 0), (2, 0, np.pi / 2), (2, 2, np.pi), (0, 2, -np.pi / 2)], start=1):
        links.append(f'<link name="b{k}"><pose>{x} {y} 0 0 0 {yaw}</pose><inertial><pose>1 0 0 0 0 0</pose>'
                     '<mass>1</mass><inertia><ixx>1</ixx><iyy>1</iyy><izz>1</izz><ixy>0</ixy><ixz>0</ixz><iyz>0</iyz>'
                     '</inertia></inertial></link>')
    for k in range(1, 5):
        joints.append(f'<joint name="j{k}" type="revolute"><parent>b{k}</parent><child>b{k % 4 + 1}</child>'
                      '<axis><xyz>0 0 1</xyz></axis></joint>')
    return f'<sdf version="1.7"><model name="free_four_bar">{"".join(links + joints)}</model></sdf>'


def planar_lagrange_reference(tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The free square four-bar at rest, as four planar rigid bodies (x, y, θ each) with pin constraints and
    Lagrange multipliers, written out here: [M Jᵀ; J 0] [a; λ] = [f; 0] (no velocity terms at rest), joint j's
    torque +τ on its child, −τ on its parent; q̈_j = θ̈_child − θ̈_parent. Returns q̈ and bar 1's acceleration
    as a floating base's: [0, 0, θ̈₁, the acceleration of its frame's origin (0, 0) in its (unrotated) frame]."""
    corners = np.array([[0, 0], [2, 0], [2, 2], [0, 2]], float)
    centres = (corners + np.roll(corners, -1, axis=0)) / 2  # bar k runs from corner k to corner k+1
    M = np.diag([1.0, 1.0, 1.0] * 4)
    J = np.zeros((8, 12))
    f = np.zeros(12)
    for j in range(4):  # joint j+1 at corner j+1 between bar j (parent) and bar j+1 (child), indices mod 4
        parent, child, point = j, (j + 1) % 4, corners[(j + 1) % 4]
        for body, sign in ((parent, 1.0), (child, -1.0)):
            r = point - centres[body]
            J[2 * j:2 * j + 2, 3 * body:3 * body + 3] = sign * np.array([[1, 0, -r[1]], [0, 1, r[0]]])
        f[3 * child + 2] += tau[j]
        f[3 * parent + 2] -= tau[j]
    a = np.linalg.solve(np.block([[M, J.T], [J, np.zeros((8, 8))]]), np.concatenate([f, np.zeros(8)]))[:12]
    theta_dd = a[2::3]
    qdd = np.array([theta_dd[(j + 1) % 4] - theta_dd[j] for j in range(4)])
    r = corners[0] - centres[0]  # at rest: a_origin = c̈ + θ̈ × r
    origin = a[0:2] + theta_dd[0] * np.array([-r[1], r[0]])
    return qdd, np.array([0.0, 0.0, theta_dd[0], origin[0], origin[1], 0.0])


def test_a_free_four_bar_against_planar_lagrange_multipliers(tmp_path):
    """GTDynamics' free four-bar: τ = (1, 0, 1, 0), no gravity, at rest. The reference written in this test gives
    q̈ = (1, −1, 1, −1), which gtdyn reproduces with the loop closed through a floating base, and the base bar's
    own acceleration."""
    path = tmp_path / "free_four_bar.sdf"
    path.write_text(free_four_bar_sdf())
    robot = gtdyn.load_robot(str(path))
    assert robot.floating_base and len(robot.loop_joints) == 1
    tau = np.array([1.0, 0.0, 1.0, 0.0])
    expected, base_accel = planar_lagrange_reference(tau)
    np.testing.assert_allclose(expected, [1.0, -1.0, 1.0, -1.0], atol=1e-12)
    for ordering in [None, "aba", "crba"]:
        r = gtdyn.forward_dynamics(robot, np.zeros(4), np.zeros(4), tau, gravity=np.zeros(3), ordering=ordering)
        assert rel_err(r.qdd, expected) < 1e-12
        assert np.max(np.abs(r.base_accel - base_accel)) < 1e-12
