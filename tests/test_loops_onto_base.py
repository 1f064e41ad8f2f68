"""Loops that close onto the base (issue 9 §3): a square four-bar whose last joint has the welded ground as its
child must behave exactly like the same four-bar written with that joint the other way round, and like the
hand-derived answer, whichever bar is the ground, in every ordering, in loop kinematics and in drawings."""

import numpy as np
import pytest
from references import rel_err
from square_four_bar import CORNERS, square_four_bar_sdf

import gtdyn
from gtdyn.kinematics.forward import forward_kinematics
from gtdyn.orderings import applicable
from gtdyn.spatial import Ad

TOL = 1e-10  # direct solves of the same small system: they agree to ~1e-15; a wrong frame or sign is O(1)
NO_GRAVITY = (0.0, 0.0, 0.0)


def load(tmp_path, ground=0, reversed_=False, actuated=("j1", "j3")):
    path = tmp_path / f"square_{ground}_{int(reversed_)}_{'_'.join(actuated)}.sdf"
    path.write_text(square_four_bar_sdf(ground, reversed_, actuated))
    return gtdyn.load_robot(path)


def by_name(robot, vector):
    return dict(zip(robot.joint_names, vector))


def in_joint_order(robot, values: dict):
    return np.array([values[n] for n in robot.joint_names])


@pytest.mark.parametrize("reversed_", [False, True], ids=["j4 onto the ground", "j4 from the ground"])
@pytest.mark.parametrize("ground", range(4))
def test_square_four_bar_by_hand(tmp_path, ground, reversed_):
    robot = load(tmp_path, ground, reversed_)
    assert robot.loop_joints and robot.base.name == "world"
    tau = in_joint_order(robot, {"j1": 1.0, "j2": 0.0, "j3": 1.0, "j4": 0.0})
    expected = in_joint_order(robot, {"j1": 0.25, "j2": -0.25, "j3": 0.25, "j4": -0.25})
    zero = np.zeros(4)
    for ordering in applicable("forward"):
        qdd = gtdyn.forward_dynamics(robot, zero, zero, tau, gravity=NO_GRAVITY, ordering=ordering).qdd
        np.testing.assert_allclose(qdd, expected, atol=TOL, err_msg=ordering)


def states(robot, count=4, seed=7):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        yield gtdyn.close_loops(robot, {"j1": rng.uniform(-0.4, 0.4)}, {"j1": rng.uniform(-1, 1)},
                                {"j1": rng.uniform(-2, 2)})


def in_plane_world(robot, kin, joint_name, wrench):
    """(m_y, f_x, f_z) in the world frame of a joint wrench given in its child's dynamics frame. The
    out-of-plane components of a planar loop are indeterminate; the planar factor zeroes them at whichever
    joint closes the loop, so only these three are physics."""
    child = robot.link(robot.joint(joint_name).child).index
    w = Ad(kin.wT[child].inverse()).T @ wrench  # the same wrench in world coordinates
    return w[[1, 3, 5]]


@pytest.mark.parametrize("ground", [0, 2])
def test_both_writings_agree(tmp_path, ground):
    onto, away = load(tmp_path, ground, False, ("j1",)), load(tmp_path, ground, True, ("j1",))
    assert onto.loop_joints[0].name == "j4" and away.loop_joints[0].name == "j3"  # different spanning trees
    for s in states(onto):
        s_away = gtdyn.close_loops(away, {"j1": s.q[0]}, {"j1": s.v[0]}, {"j1": s.qdd[0]})
        for name in onto.joint_names:  # loop kinematics agree joint by joint
            i, k = onto.joint_names.index(name), away.joint_names.index(name)
            assert abs(s.q[i] - s_away.q[k]) < TOL and abs(s.v[i] - s_away.v[k]) < TOL
            assert abs(s.qdd[i] - s_away.qdd[k]) < TOL
        assert max(s.position_residual, s.velocity_residual, s.acceleration_residual) < TOL
        tau = np.zeros(4)
        tau[0] = 2.0  # j1 is joint 1 in both
        for ordering in applicable("forward"):
            r_onto = gtdyn.forward_dynamics(onto, s.q, s.v, tau, ordering=ordering)
            r_away = gtdyn.forward_dynamics(away, s_away.q, s_away.v, tau, ordering=ordering)
            assert rel_err(in_joint_order(away, by_name(onto, r_onto.qdd)), r_away.qdd) < TOL, ordering
        for ordering in applicable("inverse"):
            t_onto = gtdyn.inverse_dynamics(onto, s.q, s.v, s.qdd, ordering=ordering)
            t_away = gtdyn.inverse_dynamics(away, s_away.q, s_away.v, s_away.qdd, ordering=ordering)
            assert rel_err(in_joint_order(away, by_name(onto, t_onto.tau)), t_away.tau) < TOL, ordering
        kin_onto, kin_away = forward_kinematics(onto, s.q, s.v), forward_kinematics(away, s_away.q, s_away.v)
        for name in ("j1", "j2", "j3"):  # the same joint, the same parent and child in both writings
            a = in_plane_world(onto, kin_onto, name, t_onto.wrenches[name])
            b = in_plane_world(away, kin_away, name, t_away.wrenches[name])
            assert rel_err(a, b) < 1e-9, name
        # j4 is written the other way round: the wrench the ground exerts on the bar is minus the one the bar
        # exerts on the ground
        a = in_plane_world(onto, kin_onto, "j4", t_onto.wrenches["j4"])
        b = in_plane_world(away, kin_away, "j4", t_away.wrenches["j4"])
        assert rel_err(a, -b) < 1e-9


def test_no_variable_of_the_base_and_hybrid_works(tmp_path):
    robot = load(tmp_path, 1, False, ("j1", "j3"))
    s = gtdyn.close_loops(robot, {"j1": 0.2}, {"j1": 0.3}, {"j1": 0.5})
    r = gtdyn.inverse_dynamics(robot, s.q, s.v, s.qdd)
    assert not any(label.endswith("0") and label[0] in "AFVT" for label in r.ordering)  # no A0: the base is known
    h = gtdyn.hybrid_dynamics(robot, s.q, s.v, qdd={"j1": s.qdd[0]}, tau={"j3": r.tau[robot.joint_names.index("j3")]})
    assert rel_err(h.qdd, s.qdd) < 1e-9


def test_drawing_puts_the_loop_joint_on_the_ground_corner(tmp_path):
    from gtdyn.plot.mechanism import joint_positions

    robot = load(tmp_path, 0, False)
    positions = joint_positions(robot, np.zeros(4))
    for n, corner in zip(("j1", "j2", "j3", "j4"), (1, 2, 3, 0)):
        np.testing.assert_allclose(positions[n], CORNERS[corner], atol=1e-12)
    gtdyn.draw_mechanism(robot, np.zeros(4), tmp_path / "square.png")
    assert (tmp_path / "square.png").stat().st_size > 0
