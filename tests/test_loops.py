"""Closed loops: dynamics against an independent Lagrange-multiplier reference (Pinocchio on the spanning tree),
a hand-derived parallelogram four-bar, loop kinematics, planar and minimum-torque factors, and bad input.

Tolerance 1e-8 (the issue's): both sides are direct solves in double precision and agree to ~1e-14 here; a
wrong frame, sign or constraint shows up at ≥1e-3.
"""

import dataclasses

import numpy as np
import pytest
from loop_mechanisms import five_bar, parallelogram_four_bar
from loop_references import LagrangeReference
from references import rel_err
from square_four_bar import square_four_bar_sdf

import gtdyn
from gtdyn.kinematics.loop_closure import close_loops
from gtdyn.model.build import build_robot
from gtdyn.orderings import applicable

TOL = 1e-8


def bundled(name):
    from gtdyn.io.sdf import read_sdf

    return lambda: read_sdf(gtdyn.bundled_path(name))


def square_onto_the_ground():
    """The square four-bar whose loop joint has the welded ground as its child (issue 9 §3)."""
    import tempfile

    from gtdyn.io.sdf import read_sdf

    with tempfile.TemporaryDirectory() as folder:
        path = f"{folder}/square_four_bar.sdf"
        with open(path, "w") as f:
            f.write(square_four_bar_sdf(ground=1, actuated=("j1",)))
        return read_sdf(path)


MECHANISMS = {"four_bar": parallelogram_four_bar, "five_bar": five_bar, "sdf/four_bar": bundled("four_bar"),
              "sdf/five_bar": bundled("five_bar"), "sdf/six_bar (two loops)": bundled("six_bar"),
              "square four-bar closing onto the ground": square_onto_the_ground}


@pytest.fixture(params=sorted(MECHANISMS), scope="module")
def mechanism(request):
    description = MECHANISMS[request.param]()
    robot = build_robot(description)
    return robot, LagrangeReference(description, robot)


def random_states(robot, count, seed):
    """Consistent states from random independent (actuated) joint values near the rest assembly, rates and
    torques (the rest pose seeds the position solve, which keeps the assembly branch)."""
    rng = np.random.default_rng(seed)
    act = robot.actuated_joint_names
    for _ in range(count):
        s = close_loops(robot, {n: rng.uniform(-0.3, 0.3) for n in act}, {n: rng.uniform(-1, 1) for n in act},
                        {n: rng.uniform(-2, 2) for n in act})
        tau = np.zeros(robot.num_dofs)
        for n in act:
            tau[robot.joint_names.index(n)] = rng.uniform(-10, 10)
        yield s, tau


def test_forward_dynamics_matches_lagrange_reference(mechanism):
    robot, ref = mechanism
    for s, tau in random_states(robot, 20, 1):
        qdd = gtdyn.forward_dynamics(robot, s.q, s.v, tau).qdd
        assert rel_err(qdd[ref.tree_index], ref.forward(s.q, s.v, tau)) < TOL
        # the loop joint's q̈ closes the loop at acceleration level
        closure = gtdyn.kinematics.loop_closure.acceleration_residual(robot, s.q, s.v, qdd)
        assert closure < 1e-10


def test_inverse_dynamics_round_trip_and_reference(mechanism):
    robot, ref = mechanism
    act = [i for i in ref.tree_index if robot.joints[i].actuated]  # the reference's order
    for s, _ in random_states(robot, 20, 2):
        r = gtdyn.inverse_dynamics(robot, s.q, s.v, s.qdd)
        assert np.all(r.tau[[j.index - 1 for j in robot.joints if not j.actuated]] == 0.0)  # passive joints
        assert rel_err(r.tau[act], ref.least_norm_torques(s.q, s.v, s.qdd)) < TOL
        assert rel_err(gtdyn.forward_dynamics(robot, s.q, s.v, r.tau).qdd, s.qdd) < TOL


def test_every_ordering_works_on_loops(mechanism):
    robot, _ = mechanism
    s, tau = next(random_states(robot, 1, 3))
    reference = gtdyn.forward_dynamics(robot, s.q, s.v, tau).qdd
    for name in applicable("forward"):
        assert rel_err(gtdyn.forward_dynamics(robot, s.q, s.v, tau, ordering=name).qdd, reference) < TOL, name
    torques = gtdyn.inverse_dynamics(robot, s.q, s.v, reference).tau
    for name in applicable("inverse"):
        assert rel_err(gtdyn.inverse_dynamics(robot, s.q, s.v, reference, ordering=name).tau, torques) < TOL, name
    first = robot.actuated_joint_names[0]
    others = {n: torques[robot.joint_names.index(n)] for n in robot.actuated_joint_names[1:]}
    for name in applicable("hybrid"):
        h = gtdyn.hybrid_dynamics(robot, s.q, s.v, qdd={first: reference[robot.joint_names.index(first)]}, tau=others,
                                  ordering=name)
        assert rel_err(h.qdd, reference) < TOL and rel_err(h.tau, torques) < TOL, name


def test_parallelogram_four_bar_by_hand():
    """Crank and rocker (length a, mass m, inertia I about the CoM) stay parallel; the coupler (mass M)
    translates on a circle of radius a. Lagrange with the crank angle θ:
        τ = (2 (I + m a²/4) + M a²) θ̈ − (m g a + M g a) sin θ     (gravity −z, θ from the vertical)."""
    robot = build_robot(parallelogram_four_bar(a=1.0, b=2.0, m=1.0, M=2.0))
    inertia, m, M, a, g = robot.link("crank").inertia[1, 1], 1.0, 2.0, 1.0, 9.81
    for theta, rate, accel in [(0.0, 0.0, 0.0), (0.3, 0.5, 1.0), (-0.7, -1.2, 2.5), (1.1, 2.0, -3.0)]:
        s = close_loops(robot, {"j1": theta}, {"j1": rate}, {"j1": accel})
        np.testing.assert_allclose(s.q, [theta, -theta, theta, theta], atol=1e-12)  # j1, j2, j4, j3
        tau = gtdyn.inverse_dynamics(robot, s.q, s.v, s.qdd).tau
        expected = (2 * (inertia + m * a * a / 4) + M * a * a) * accel - (m * g * a + M * g * a) * np.sin(theta)
        assert tau[0] == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_loop_kinematics_closes_and_differentiates(mechanism):
    robot, ref = mechanism
    for s, _ in random_states(robot, 10, 4):
        assert s.position_residual < 1e-10 and s.velocity_residual < 1e-10 and s.acceleration_residual < 1e-10
        velocity, acceleration = ref.velocity_and_acceleration_closure(s.q, s.v, s.qdd)  # Pinocchio's view
        assert velocity < 1e-10 and acceleration < 1e-10


def test_branch_follows_the_initial_guess():
    robot = build_robot(five_bar())
    up = close_loops(robot, {"j1": 0.1, "j2": -0.1})
    flipped = close_loops(robot, {"j1": 0.1, "j2": -0.1}, guess=[0.1, 2.5, -0.1, -2.5, 0.0])
    assert up.position_residual < 1e-10 and flipped.position_residual < 1e-10
    assert np.linalg.norm(up.q - flipped.q) > 0.5  # the other assembly (elbows swapped)


def test_redundant_actuation_gives_least_norm_torques():
    description = five_bar()
    joints = tuple(dataclasses.replace(js, actuated=True) if js.name == "j3" else js for js in description.joints)
    description = dataclasses.replace(description, joints=joints)
    robot = build_robot(description)
    ref = LagrangeReference(description, robot)
    act = [i for i in ref.tree_index if robot.joints[i].actuated]  # the reference's order
    for s, _ in random_states(robot.with_actuated(["j1", "j2"]), 5, 5):
        r = gtdyn.inverse_dynamics(robot, s.q, s.v, s.qdd)
        assert rel_err(r.tau[act], ref.least_norm_torques(s.q, s.v, s.qdd)) < TOL
        assert rel_err(gtdyn.forward_dynamics(robot, s.q, s.v, r.tau).qdd, s.qdd) < TOL


def test_planar_factor_detected_in_any_plane():
    """The same five-bar mounted at an arbitrary orientation: detected as planar (normal = R·y); without the
    planar factor the loop wrench is indeterminate and says so."""
    description = five_bar()
    R = np.linalg.qr(np.random.default_rng(6).normal(size=(3, 3)))[0]
    R *= np.sign(np.linalg.det(R))
    mount = np.eye(4)
    mount[:3, :3] = R
    joints = tuple(dataclasses.replace(js, origin=mount @ js.origin) if js.parent == "base" else js
                   for js in description.joints)
    robot = build_robot(dataclasses.replace(description, joints=joints))
    s = close_loops(robot, {"j1": 0.2, "j2": -0.3}, {"j1": 1.0, "j2": 0.5}, {"j1": 0.0, "j2": 1.0})
    tau = gtdyn.inverse_dynamics(robot, s.q, s.v, s.qdd).tau
    assert rel_err(gtdyn.forward_dynamics(robot, s.q, s.v, tau).qdd, s.qdd) < TOL
    with pytest.raises(gtdyn.IndeterminateSystemError) as info:
        gtdyn.forward_dynamics(robot, s.q, s.v, tau, planar=False)
    assert "F5" in info.value.free_variables
    assert rel_err(gtdyn.forward_dynamics(robot, s.q, s.v, tau, planar=True).qdd, s.qdd) < TOL


def test_topology_queries():
    robot = build_robot(five_bar())
    assert robot.joint_names == ["j1", "j3", "j2", "j4", "j5"]
    assert [j.name for j in robot.loop_joints] == ["j5"] and robot.loops == [["j3", "j1", "j2", "j4", "j5"]]
    assert [j.name for j in robot.joints_into("link4")] == ["j4", "j5"]
    assert robot.actuated_joint_names == ["j1", "j2"]
    assert robot.with_actuated(["j1"]).actuated_joint_names == ["j1"] and robot.actuated_joint_names == ["j1", "j2"]
    with pytest.raises(gtdyn.ArgumentError, match="unknown joints j9"):
        robot.with_actuated(["j9"])


def test_bad_loop_input():
    robot = build_robot(five_bar())
    s = close_loops(robot, {"j1": 0.2, "j2": -0.1}, {"j1": 0.3, "j2": 0.4}, {"j1": 1.0, "j2": -1.0})
    open_q = s.q.copy()
    open_q[robot.joint_names.index("j5")] += 0.1
    with pytest.raises(gtdyn.LoopClosureError, match="q: the loop closed by joint 'j5' is open"):
        gtdyn.inverse_dynamics(robot, open_q, s.v, s.qdd)
    bad_v = s.v.copy()
    bad_v[0] += 0.1
    with pytest.raises(gtdyn.LoopClosureError, match="v: the joint velocities violate the loop closed by joint 'j5'"):
        gtdyn.forward_dynamics(robot, s.q, bad_v, np.zeros(5))
    bad_qdd = s.qdd.copy()
    bad_qdd[0] += 0.1
    with pytest.raises(gtdyn.LoopClosureError,
                       match="qdd: the joint accelerations violate the loop closed by joint 'j5'"):
        gtdyn.inverse_dynamics(robot, s.q, s.v, bad_qdd)
    with pytest.raises(gtdyn.ArgumentError, match="tau: joints j3 are passive"):
        gtdyn.forward_dynamics(robot, s.q, s.v, [1.0, 2.0, 0.0, 0.0, 0.0])
    with pytest.raises(gtdyn.ArgumentError, match="qdd: joints j5 are passive"):
        gtdyn.hybrid_dynamics(robot, s.q, s.v, qdd={"j1": 0.0, "j5": 1.0}, tau={"j2": 0.0})
    with pytest.raises(gtdyn.LoopClosureError, match="no assembly closes the loops"):
        close_loops(robot, {"j1": -1.5, "j2": 1.5})  # crank tips 2.99 m apart; the distal links reach 2.4 m
    with pytest.raises(gtdyn.ArgumentError, match="v: joints j3 are not among the independent joints"):
        close_loops(robot, {"j1": 0.0, "j2": 0.0}, v={"j3": 1.0})


@pytest.mark.parametrize("name", ["four_bar", "five_bar", "six_bar"])
def test_bundled_mechanisms_load_and_draw(tmp_path, name):
    robot = gtdyn.load_robot(name)
    assert len(robot.loop_joints) == (2 if name == "six_bar" else 1)
    assert robot.actuated_joint_names == (["j1", "j2"] if name == "five_bar" else ["j1"])
    state = close_loops(robot, {n: 0.1 for n in robot.actuated_joint_names})
    path = tmp_path / f"{name}.png"
    gtdyn.draw_mechanism(robot, state.q, str(path))
    assert path.read_bytes().startswith(b"\x89PNG")


def test_loop_closure_stays_on_the_branch_of_its_guess():
    """The bundled parallelogram four-bar from its rest assembly: a single Gauss–Newton solve from the rest pose
    landed on the crossed assembly from j1 ≈ 0.4 rad; continuation along the branch's tangent keeps the
    parallelogram (j2 = −j1, j3 = j4 = j1) for any crank angle, through the change point where all bars line
    up (j1 ≈ 0.93 rad)."""
    robot = gtdyn.load_robot("four_bar")
    for angle in (0.4, 0.6, 0.9, 0.93, 1.5, 3.0, -2.0):
        s = close_loops(robot, {"j1": angle})
        np.testing.assert_allclose(s.q, [angle, -angle, angle, angle], atol=1e-9, err_msg=str(angle))
        assert s.position_residual < 1e-12


def test_independent_joints_prefer_the_given_order(tmp_path):
    from square_four_bar import square_four_bar_sdf

    from gtdyn.kinematics.loop_closure import independent_joints

    assert independent_joints(gtdyn.load_robot("five_bar"), ["j1", "j2"]) == ["j1", "j2"]
    assert independent_joints(gtdyn.load_robot("five_bar"), ["j3"]) == ["j3", "j1"]  # one DOF each, j3 first
    assert independent_joints(gtdyn.load_robot("six_bar"), ["j1"]) == ["j1"]  # two loops, one DOF
    assert independent_joints(gtdyn.load_robot("rrr")) == ["j1", "j2", "j3"]  # a tree: every joint
    path = tmp_path / "all_actuated.sdf"
    path.write_text(square_four_bar_sdf(1, False, ("j1", "j2", "j3", "j4")))
    robot = gtdyn.load_robot(path)
    assert independent_joints(robot, robot.actuated_joint_names) == ["j1"]
    with pytest.raises(gtdyn.ArgumentError, match="^preferred: unknown joints j9"):
        independent_joints(robot, ["j9"])
