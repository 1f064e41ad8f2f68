"""External wrenches in world-aligned axes (issue 20, item 2): a wrench given at a frame's origin in the world's
axes equals the same wrench turned into the frame's own axes, and on a pendulum gives the hand-derived torque."""

import numpy as np
import pytest

import gtdyn

PENDULUM = """<robot name="pendulum"><link name="base"/>
  <joint name="swing" type="revolute"><parent link="base"/><child link="bob"/><axis xyz="0 1 0"/></joint>
  <link name="bob"><inertial><origin xyz="0 0 -1"/><mass value="2"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <joint name="tip_fixed" type="fixed"><parent link="bob"/><child link="tip"/><origin xyz="0 0 -2"/></joint>
  <link name="tip"/></robot>"""


def test_a_world_aligned_wrench_is_the_local_one_turned_into_the_frame():
    robot = gtdyn.load_robot("puma560")
    rng = np.random.default_rng(5)
    q, v, qdd = rng.uniform(-1, 1, (3, 6))
    F_world = rng.normal(size=6)
    R = gtdyn.frame_placement(robot, q, "flange").rotation().matrix()
    F_local = np.concatenate([R.T @ F_world[:3], R.T @ F_world[3:]])
    aligned = gtdyn.inverse_dynamics(robot, q, v, qdd, external_wrenches={"flange": F_world},
                                     wrench_axes="world_aligned").tau
    local = gtdyn.inverse_dynamics(robot, q, v, qdd, external_wrenches={"flange": F_local}).tau
    assert np.max(np.abs(aligned - local)) < 1e-12 * max(1.0, np.max(np.abs(local)))
    forward = gtdyn.forward_dynamics(robot, q, v, local, external_wrenches={"flange": F_world},
                                     wrench_axes="world_aligned").qdd
    assert np.max(np.abs(forward - qdd)) < 1e-10


def test_a_vertical_pull_at_a_pendulums_tip_gives_the_hand_derived_torque(tmp_path):
    """A 2 m pendulum about y at angle θ, no gravity, pulled down at its tip (a frame merged into the bob) by
    f = 10 N along world −z: the torque that holds it still is τ = f · 2 · sin θ (its lever arm)."""
    path = tmp_path / "pendulum.urdf"
    path.write_text(PENDULUM)
    robot = gtdyn.load_robot(str(path))
    for theta in (0.3, -1.1, 2.0):
        r = gtdyn.inverse_dynamics(robot, [theta], [0.0], [0.0], gravity=(0, 0, 0), wrench_axes="world_aligned",
                                   external_wrenches={"tip": [0, 0, 0, 0, 0, -10.0]})
        # rotating about +y by θ moves the tip (0, 0, −2) to (−2 sin θ, 0, −2 cos θ); the pull's moment about y is
        # z·fx − x·fz = −(−2 sin θ)(−10) = −20 sin θ, which the joint's torque must cancel
        assert r.tau[0] == pytest.approx(20.0 * np.sin(theta), abs=1e-12)


def test_a_bad_wrench_axes_word_is_named():
    robot = gtdyn.load_robot("rr")
    with pytest.raises(gtdyn.ArgumentError, match="^wrench_axes: 'world' is not one of local, world_aligned"):
        gtdyn.forward_dynamics(robot, [0, 0], [0, 0], [0, 0], wrench_axes="world")


def test_holding_a_payload_at_the_hand_costs_minus_j_transpose_times_its_weight():
    """The first task of issue 20's new user: the torques that hold 2 kg at the Panda's hand are those of the bare
    arm plus −Jᵀ F, J the hand's world-aligned Jacobian (an independent route: the frame functions)."""
    panda = gtdyn.load_robot("panda")
    q, zero = np.array([0, -0.3, 0, -2.0, 0, 1.7, 0.8, 0.02, 0.02]), np.zeros(9)
    weight = np.array([0, 0, 0, 0, 0, -2 * 9.81])
    held = gtdyn.inverse_dynamics(panda, q, zero, zero, external_wrenches={"panda_hand": weight},
                                  wrench_axes="world_aligned").tau
    bare = gtdyn.inverse_dynamics(panda, q, zero, zero).tau
    J = gtdyn.frame_jacobian(panda, q, "panda_hand", reference="world_aligned")
    assert np.max(np.abs(held - bare + J.T @ weight)) < 1e-12
