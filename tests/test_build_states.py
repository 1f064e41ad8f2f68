"""The states a compiled solver is built at (``gtdyn.compiled.states.build_states``) and how the pivot choice
reads them (``gtdyn.compiled.plan._choose``)."""

import numpy as np

import gtdyn
from gtdyn.compiled import trace
from gtdyn.compiled.plan import Plan, _choose
from gtdyn.compiled.states import SAMPLES, build_states, sample_states

OFFSET_ARM = """<robot name="offset"><link name="base"/>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/><axis xyz="0 0 1"/>
    <limit lower="0.3" upper="2" effort="10" velocity="10"/></joint>
  <link name="upper"><inertial><origin xyz="0.2 0 0"/><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <joint name="elbow" type="revolute"><parent link="upper"/><child link="fore"/><origin xyz="0.4 0 0"/>
    <axis xyz="0 0 1"/><limit lower="-2" upper="-0.5" effort="10" velocity="10"/></joint>
  <link name="fore"><inertial><origin xyz="0.2 0 0"/><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <joint name="wrist" type="continuous"><parent link="fore"/><child link="hand"/><origin xyz="0.4 0 0"/>
    <axis xyz="1 0 0"/></joint>
  <link name="hand"><inertial><mass value="0.2"/>
    <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial></link></robot>"""


def test_the_random_states_then_the_reference_configuration():
    """The random states are ``sample_states``' own, unchanged; then every joint at zero, the base unrotated."""
    robot = gtdyn.load_robot("quadruped", base="floating")
    built, random = build_states(robot, "forward"), sample_states(robot, "forward")
    assert set(built) == set(random)
    for name, values in random.items():
        assert built[name].shape == (values.shape[0], SAMPLES + 1)
        assert np.array_equal(built[name][:, :SAMPLES], values)
    assert np.array_equal(built["q"][:, SAMPLES], np.zeros(robot.num_dofs))
    assert np.array_equal(built["R"][:, SAMPLES], np.eye(3).ravel())
    assert np.all(np.isfinite(built["v"][:, SAMPLES])) and np.any(built["v"][:, SAMPLES] != 0)  # still random


def test_a_joint_whose_limits_exclude_zero_takes_its_nearest_limit(tmp_path):
    path = tmp_path / "offset.urdf"
    path.write_text(OFFSET_ARM)
    robot = gtdyn.load_robot(str(path))
    assert np.array_equal(build_states(robot, "inverse")["q"][:, SAMPLES], [0.3, -0.5, 0.0])


def test_closed_loops_are_built_at_their_random_closed_states_alone():
    """A loop's joints at zero need not close it: no reference configuration there."""
    robot = gtdyn.load_robot("four_bar")
    built = build_states(robot, "forward")
    for name, values in sample_states(robot, "forward").items():
        assert np.array_equal(built[name], values)


def test_a_state_where_every_candidate_vanishes_tells_none_apart():
    """Two candidate pivots of one column, both zero at the third state (the system singular there): the choice
    is the one good at the other states, though the other row has less fill. Counting the third state would
    score both zero, and fill would pick the entry a hundredth of the best at the first state."""
    fn = trace.Function("pivots", 3)
    good, poor = fn.load(0, np.array([1.0, 2.0, 0.0])), fn.load(1, np.array([0.01, 3.0, 0.0]))
    other = fn.load(2, np.array([1.0, 1.0, 1.0]))
    x, y = 1, 2
    plan = Plan([x, y], [], work=[{x: np.array([good]), y: np.array([other])}, {x: np.array([poor])}])
    assert _choose(plan, [0, 1], x, 0) == 0
