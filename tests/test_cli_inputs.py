"""Command-line inputs a Pinocchio user types (issue 20, item 7): vectors that start with a negative number, one
number for every joint, external wrenches and contacts — each checked against the library's own answer."""

import numpy as np
from test_derivatives import FLOATING_ARM

import gtdyn
from gtdyn.cli import main

PUMA_Q = np.array([-0.1, 0.2, -0.3, 0.4, 0.5, 0.6])


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def torques(out: str, robot) -> np.ndarray:
    """The τ column of a printed joint table: each row's last number (units follow numbers on mixed robots)."""
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.split()[:1] in ([n] for n in
                                                                                              robot.joint_names)}
    return np.array([float(next(t for t in reversed(rows[name]) if t[-1].isdigit())) for name in robot.joint_names])


def test_negative_vectors_one_number_for_all_joints_and_a_wrench(capsys):
    robot = gtdyn.load_robot("puma560")
    code, out, err = run(capsys, "solve", "--problem", "inverse", "--q", ",".join(map(str, PUMA_Q)), "--v", "0",
                         "--qdd", "-0.5", "--wrench", "flange=0,0,0.1,0,0,-5")
    assert code == 0, err
    expected = gtdyn.inverse_dynamics(robot, PUMA_Q, np.zeros(6), np.full(6, -0.5),
                                      external_wrenches={"flange": [0, 0, 0.1, 0, 0, -5]}).tau
    assert np.allclose(torques(out, robot), expected, rtol=0, atol=5e-7)  # printed to 6 decimals


def test_contacts_print_their_forces(capsys):
    code, out, err = run(capsys, "solve", "quadruped", "--base", "floating", "--problem", "forward", "--contacts",
                         "FL_foot,FR_foot,RL_foot,RR_foot:surface")
    assert code == 0, err
    assert "contacts: what the environment applies" in out and "4 surface on RR_foot: force [N]" in out


def test_bad_wrenches_and_contacts_are_named(capsys):
    for argv, message in ((("--wrench", "flange=1,2"), "--wrench: expected 6 values for 'flange'"),
                          (("--wrench", "hand=0,0,0,0,0,1"), "--wrench: unknown link or frame 'hand'"),
                          (("--wrench", "0,0,0,0,0,1"), "--wrench: expected FRAME=mx,my,mz,fx,fy,fz"),
                          (("--contacts", "flange:line"), "a contact is FRAME, FRAME:point or FRAME:surface"),
                          (("--q", "-1,2"), "--q: expected 6 values")):
        code, _, err = run(capsys, "solve", "--problem", "inverse", *argv)
        assert code == 1 and message in err, err


def test_the_plot_package_lists_and_serves_what_help_shows():
    """dir(gtdyn.plot) listed only import_module, and gtdyn.plot.trajectory raised AttributeError (issue 20)."""
    import gtdyn.plot

    assert {"draw_dag", "draw_trajectory", "trajectory", "mechanism"} <= set(dir(gtdyn.plot))
    assert "import_module" not in dir(gtdyn.plot)
    assert gtdyn.plot.trajectory.draw_trajectory is gtdyn.plot.draw_trajectory


def test_bench_refuses_a_robot_without_joints(capsys, tmp_path):
    """example-robot-data's iris and quadrotor models have only fixed joints: gtdyn bench crashed on them."""
    path = tmp_path / "table.urdf"
    path.write_text('<robot name="table"><link name="base"/><joint name="f" type="fixed"><parent link="base"/>'
                    '<child link="top"/></joint><link name="top"><inertial><mass value="3"/>'
                    '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link></robot>')
    code, _, err = run(capsys, "bench", str(path), "--batch", "0")
    assert code == 1 and "table has no moving joints" in err, err


def test_a_world_aligned_wrench_on_the_command_line(capsys):
    """--wrench-axes world_aligned: the Panda holding 2 kg at its hand, as the library answers it."""
    panda = gtdyn.load_robot("panda")
    code, out, err = run(capsys, "solve", "panda", "--problem", "inverse", "--v", "0", "--qdd", "0",
                         "--wrench", "panda_hand=0,0,0,0,0,-19.62", "--wrench-axes", "world_aligned")
    assert code == 0, err
    q = gtdyn.cli.default_state(panda)[0]
    zero = np.zeros(9)
    expected = gtdyn.inverse_dynamics(panda, q, zero, zero, external_wrenches={"panda_hand": [0, 0, 0, 0, 0, -19.62]},
                                      wrench_axes="world_aligned").tau
    assert np.allclose(torques(out, panda), expected, rtol=0, atol=5e-7)


def test_simulate_takes_wrenches_and_contacts(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path / "cache"))
    code, out, err = run(capsys, "simulate", "rr", "--steps", "20", "--out", str(tmp_path / "pushed"),
                         "--wrench", "tip=0,0,0,0,0,-3", "--wrench-axes", "world_aligned")
    assert code == 0, err
    assert "the external wrenches do work, so the energy is not conserved" in out
    robot = gtdyn.load_robot("rr")
    q0 = gtdyn.cli.default_state(robot)[0]
    expected = gtdyn.simulate(robot, q0, np.zeros(2), dt=0.001, steps=20, wrench_axes="world_aligned",
                              external_wrenches={"tip": [0, 0, 0, 0, 0, -3]})
    final = np.loadtxt(tmp_path / "pushed.csv", delimiter=",", skiprows=1)[-1, 1:3]
    assert np.allclose(final, expected.q[-1], rtol=0, atol=1e-12)
    arm = tmp_path / "floating_arm.urdf"
    arm.write_text(FLOATING_ARM)
    code, out, err = run(capsys, "simulate", str(arm), "--base", "floating", "--steps", "5", "--out",
                         str(tmp_path / "held"), "--contacts", "tip")
    assert code == 0, err
    assert "contact forces at the end (in the contact frames): tip " in out
