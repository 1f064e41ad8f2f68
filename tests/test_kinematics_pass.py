"""One kinematics pass (issue 19, item 2): ``gtdyn.kinematics.forward.kinematic_pass`` runs on numbers
(``forward_kinematics``) and on traced symbols (``traced_kinematics``, the code of compiled solvers). The two
must agree at random states: on a fixed-base arm, a random tree with prismatic joints, a floating base (given in
its root link frame, converted to its CoM frame by ``gtdyn.model.base_frame``) and closed loops."""

import gtsam
import numpy as np
import pytest

import gtdyn
from gtdyn.compiled import trace
from gtdyn.compiled.kinematics import traced_kinematics
from gtdyn.kinematics.forward import forward_kinematics
from gtdyn.model.base_frame import pose_to_com, twist_to_com
from gtdyn.model.random import random_robot

TOL = 1e-12


def traced(fn: trace.Function, values, name: str) -> np.ndarray:
    """Load ``values`` as traced inputs whose sample value is the number itself."""
    return np.array([fn.load(k, np.array([x]), f"{name}{k}") for k, x in enumerate(np.ravel(values))],
                    dtype=object).reshape(np.shape(values))


def numbers(x) -> np.ndarray:
    """The sample value of each entry of a traced (or constant) array."""
    return np.array([trace.value(e)[0] if trace.is_sym(e) else float(e) for e in np.ravel(x)]).reshape(np.shape(x))


def both(robot, q, v, R=None, twist=None):
    """The numeric state (base at rotation R, origin at zero) and the traced state with its closure."""
    fn = trace.Function("kinematics")
    base = {} if R is None else {"base_pose": gtsam.Pose3(gtsam.Rot3(R), np.zeros(3)), "base_twist": twist}
    traced_base = () if R is None else (traced(fn, R, "R"), traced(fn, twist, "V0_"))
    return forward_kinematics(robot, q, v, **base), traced_kinematics(robot, traced(fn, q, "q"), traced(fn, v, "v"),
                                                                      *traced_base)


def assert_same_poses_and_twists(robot, kin, tkin):
    for i in range(len(robot.links) + 1):
        assert np.max(np.abs(numbers(tkin.wT[i].R) - kin.wT[i].rotation().matrix())) < TOL
        assert np.max(np.abs(numbers(tkin.wT[i].p) - kin.wT[i].translation())) < TOL
        assert np.max(np.abs(numbers(tkin.V[i]) - kin.V[i])) < TOL
    for j in range(1, robot.num_dofs + 1):
        assert np.max(np.abs(numbers(tkin.cTp[j].R) - kin.cTp[j].rotation().matrix())) < TOL
        assert np.max(np.abs(numbers(tkin.cTp[j].p) - kin.cTp[j].translation())) < TOL


@pytest.mark.parametrize("robot", [gtdyn.load_robot("puma560"), random_robot(3, n=6, tree=True, prismatic=0.5)],
                         ids=["puma560", "random_tree"])
def test_numeric_and_traced_passes_agree_on_a_fixed_base(robot, rng):
    for _ in range(3):
        q, v = rng.uniform(-2, 2, (2, robot.num_dofs))
        kin, (tkin, closure) = both(robot, q, v)
        assert_same_poses_and_twists(robot, kin, tkin)
        assert closure == {} and kin.pose_closure == {}


def test_numeric_and_traced_passes_agree_on_a_floating_base(rng):
    robot = gtdyn.load_robot("quadruped", base="floating")
    for _ in range(3):
        q, v = rng.uniform(-1, 1, (2, robot.num_dofs))
        wTl, twist = gtsam.Pose3.Expmap(np.r_[rng.normal(size=3), 0, 0, 0]), rng.normal(size=6)
        kin, (tkin, _) = both(robot, q, v, wTl.rotation().matrix(), twist)
        assert_same_poses_and_twists(robot, kin, tkin)
        # the pass starts in the base's CoM frame, reached through base_frame
        assert kin.wT[0].equals(pose_to_com(robot, wTl), 1e-15)
        assert np.array_equal(kin.V[0], twist_to_com(robot) @ twist)


@pytest.mark.parametrize("name", ["four_bar", "five_bar"])
def test_numeric_and_traced_passes_agree_across_closed_loops(name, rng):
    robot = gtdyn.load_robot(name)
    for _ in range(3):  # off the loop: the closures are what the pass reports, in both forms
        q, v = rng.uniform(-1, 1, (2, robot.num_dofs))
        kin, (tkin, closure) = both(robot, q, v)
        assert_same_poses_and_twists(robot, kin, tkin)
        assert set(closure) == set(kin.pose_closure) == {j.name for j in robot.loop_joints}
        assert tkin.pose_closure == {} and tkin.twist_closure == {}
        for joint in robot.loop_joints:
            pose_gap, twist_gap = closure[joint.name]
            p, c = robot.link(joint.parent).index, robot.link(joint.child).index
            reached = kin.wT[p].compose(kin.cTp[joint.index].inverse())
            tree = kin.wT[c]
            entries = np.r_[(reached.rotation().matrix() - tree.rotation().matrix()).ravel(),
                            reached.translation() - tree.translation()]
            assert np.max(np.abs(numbers(pose_gap) - entries)) < TOL
            assert np.max(np.abs(kin.pose_closure[joint.name] - gtsam.Pose3.Logmap(tree.between(reached)))) < TOL
            assert np.max(np.abs(numbers(twist_gap) - kin.twist_closure[joint.name])) < TOL
            assert np.max(np.abs(kin.twist_closure[joint.name])) > 1e-6  # a random state is off the loop
    act = robot.actuated_joint_names
    state = gtdyn.close_loops(robot, {n: 0.2 for n in act}, {n: 0.5 for n in act})
    kin, (_, closure) = both(robot, state.q, state.v)
    for pose_gap, twist_gap in closure.values():  # on the loop: both forms vanish
        assert np.max(np.abs(numbers(pose_gap))) < 1e-9 and np.max(np.abs(numbers(twist_gap))) < 1e-9
