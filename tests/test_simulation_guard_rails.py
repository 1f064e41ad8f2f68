"""Simulation guard rails (issue 20, item 6): a trajectory that leaves a joint's limits is warned about once, at
the first time it does; a floating robot's plot shows where its base goes."""

import warnings

import gtsam
import numpy as np
import pytest

import gtdyn

PENDULUM = """<robot name="pendulum"><link name="base"/>
  <joint name="swing" type="revolute"><parent link="base"/><child link="bob"/><axis xyz="0 1 0"/>
    <limit lower="-0.5" upper="0.5" effort="10" velocity="10"/></joint>
  <link name="bob"><inertial><origin xyz="0 0 -0.5"/><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link></robot>"""


def test_leaving_a_joint_limit_is_warned_once_with_its_first_time(tmp_path):
    path = tmp_path / "pendulum.urdf"
    path.write_text(PENDULUM)
    robot = gtdyn.load_robot(str(path))
    with pytest.warns(gtdyn.JointLimitWarning, match=r"joint 'swing' leaves its limits \[-0.5, 0.5\] at t = ") as seen:
        run = gtdyn.simulate(robot, [0.4], [2.0], dt=1e-3, steps=400, method="rk4")
    assert len(seen) == 1
    first = int(np.argmax(run.q[:, 0] > 0.5 + 1e-9 * 1.5))  # thrown from 0.4 rad at 2 rad/s, it swings past 0.5
    assert run.q[first - 1, 0] <= 0.5 < run.q[first, 0]
    assert f"at t = {run.t[first]:g} s" in str(seen[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # inside its limits: no warning
        gtdyn.simulate(robot, [0.0], [0.0], dt=1e-3, steps=50)


def test_a_floating_robots_plot_shows_its_base(tmp_path):
    from gtdyn.plot import draw_trajectory

    robot = gtdyn.load_robot("quadruped", base="floating")
    run = gtdyn.simulate(robot, np.tile([0.1, 0.7, -1.4], 4), np.zeros(12), dt=0.01, steps=5,
                         base_twist=[0, 0, 1.0, 0, 0, 0], progress=False)
    figure = draw_trajectory(run, str(tmp_path / "run.png"))
    labels = [ax.get_ylabel() for ax in figure.axes]
    assert "base position [m]" in labels and "base orientation [rad]" in labels
    drawn = {line.get_label(): line.get_ydata() for ax in figure.axes for line in ax.lines}
    rpy = np.array([gtsam.Rot3(T[:3, :3]).rpy() for T in run.base_pose])  # gtsam's roll, pitch, yaw
    for k, name in enumerate(("roll", "pitch", "yaw")):
        assert np.allclose(drawn[name], rpy[:, k], atol=1e-12)
    assert np.allclose(drawn["z"], run.base_pose[:, 2, 3]) and np.ptp(rpy[:, 2]) > 0.04  # it turns


def test_a_legged_robot_is_drawn_with_its_legs_apart_and_its_feet(tmp_path):
    """Solo-12 was drawn side-on: left and right legs on top of each other, no shins or feet (issue 20)."""
    from gtdyn.kinematics.forward import forward_kinematics
    from gtdyn.plot.mechanism import _plane_basis, _tips, joint_positions

    robot = gtdyn.load_robot("solo12", base="floating")
    q = np.tile([0.0, 0.8, -1.6], 4)
    gtdyn.draw_mechanism(robot, q, str(tmp_path / "solo.png"), base_pose=np.eye(4))
    kin = forward_kinematics(robot, q, np.zeros(12))
    assert len(_tips(robot, kin)) == 4  # each lower leg's bar ends at its foot frame
    world = joint_positions(robot, q)
    u, w = _plane_basis(robot, kin, np.array(list(world.values())))
    gap = world["FL_HFE"] - world["FR_HFE"]  # the left and right hips: side by side, 0.29 m apart
    assert np.hypot(gap @ u, gap @ w) > 0.1  # apart in the picture too (side-on, they coincided)
