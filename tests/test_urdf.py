"""URDF reading: frames, fixed-joint merging, topology errors, bad files, and real robots."""

import glob
import os
import shutil
import subprocess
import sys
import warnings

import gtsam
import numpy as np
import pytest
from lxml import etree
from references import erd_root, rel_err

import gtdyn
from gtdyn import ModelError, ModelWarning
from gtdyn.bench.pinocchio import PinocchioModel

HEADER = '<?xml version="1.0"?>\n'


def write(tmp_path, body: str, name="robot") -> str:
    path = tmp_path / f"{name}.urdf"
    path.write_text(HEADER + body)
    return str(path)


def link(name, mass=1.0, xyz="0 0 0", rpy="0 0 0", inertia='ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"'):
    return (f'<link name="{name}"><inertial><origin xyz="{xyz}" rpy="{rpy}"/><mass value="{mass}"/>'
            f"<inertia {inertia}/></inertial></link>")


def joint(name, parent, child, kind="revolute", xyz="0 0 0", rpy="0 0 0", axis="0 0 1"):
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>'
            + ('<limit lower="-3" upper="3" effort="10" velocity="5"/>' if kind in ("revolute", "prismatic") else "")
            + "</joint>")


def robot_xml(*parts, name="r"):
    return f'<robot name="{name}">' + "".join(parts) + "</robot>"


# -- what a valid file means ----------------------------------------------------------------------------


def test_bundled_models_load():
    puma = gtdyn.load_robot("puma560")
    assert puma.joint_names == [f"joint{i}" for i in range(1, 7)] and puma.num_dofs == 6
    assert [link.mass for link in puma.links] == [0.0, 17.4, 4.8, 0.82, 0.34, 0.09]
    assert gtdyn.load_robot("rrr").num_dofs == 3 and gtdyn.load_robot("rr").num_dofs == 2
    assert gtdyn.load_robot(gtdyn.bundled_path("rrr")).num_dofs == 3


def test_puma_urdf_is_the_generated_dh_model():
    """urdf/puma560.urdf is exactly what gtdyn.io.dh writes from the toolbox's DH table (no hand drift)."""
    from gtdyn.io.dh import puma560_urdf

    with open(gtdyn.bundled_path("puma560")) as f:
        assert f.read() == puma560_urdf()


def test_puma_kinematics_match_standard_dh():
    """Flange pose from our model equals the product of standard-DH matrices, written out here."""
    from gtdyn.io.dh import PUMA560
    from gtdyn.kinematics.forward import forward_kinematics

    def dh(theta, d, a, alpha):
        ct, st, ca, sa = np.cos(theta), np.sin(theta), np.cos(alpha), np.sin(alpha)
        return np.array([[ct, -st * ca, st * sa, a * ct], [st, ct * ca, -ct * sa, a * st],
                         [0, sa, ca, d], [0, 0, 0, 1]])

    robot = gtdyn.load_robot("puma560")
    rng = np.random.default_rng(9)
    for _ in range(10):
        q = rng.uniform(-np.pi, np.pi, 6)
        T = np.eye(4)
        for qi, row in zip(q, PUMA560):
            T = T @ dh(qi, row.d, row.a, row.alpha)
        kin = forward_kinematics(robot, q, np.zeros(6))
        link6, l6Tflange = robot.frames["flange"]
        wTflange = kin.wT[6].compose(robot.link(link6).lTcom.inverse()).compose(l6Tflange)
        np.testing.assert_allclose(wTflange.matrix(), T, atol=1e-12)


def test_inertial_frame_rotation_and_axis_normalisation(tmp_path):
    path = write(tmp_path, robot_xml(
        '<link name="base"/>', link("a", 2.0, xyz="0.1 0.2 0.3", rpy="0.3 -0.2 1.0",
                                    inertia='ixx="0.3" ixy="0.01" ixz="0.02" iyy="0.2" iyz="0.03" izz="0.25"'),
        joint("j", "base", "a", axis="0 0 2")))
    robot = gtdyn.load_robot(path)
    j = robot.joint("j")
    np.testing.assert_allclose(j.axis, [0, 0, 1])
    np.testing.assert_allclose(robot.link("a").lTcom.translation(), [0.1, 0.2, 0.3])
    np.testing.assert_allclose(robot.link("a").lTcom.rotation().matrix(), gtsam.Rot3.RzRyRx(0.3, -0.2, 1.0).matrix())
    ref = PinocchioModel(path, robot)
    rng = np.random.default_rng(10)
    for _ in range(5):
        q, v, a = rng.normal(size=(3, 1))
        assert rel_err(gtdyn.inverse_dynamics(robot, q, v, a).tau, ref.rnea(q, v, a)) < 1e-9


def test_fixed_joints_merge_inertia(tmp_path):
    """A two-body rigid assembly behaves like one body: compare with Pinocchio, which merges the same way."""
    path = write(tmp_path, robot_xml(
        '<link name="base"/>', link("a", 2.0, xyz="0.1 0 0"), link("b", 3.0, xyz="0 0.2 0", rpy="0.5 0 0"),
        link("c", 1.0), joint("j1", "base", "a", axis="0 1 0"),
        joint("weld", "a", "b", kind="fixed", xyz="0.5 0 0", rpy="0 0.3 0"),
        joint("j2", "b", "c", xyz="0 0 0.4", axis="1 0 0")))
    robot = gtdyn.load_robot(path)
    assert robot.joint_names == ["j1", "j2"] and robot.link_names == ["a", "c"]
    assert robot.link("a").mass == pytest.approx(5.0)
    assert robot.joint("j2").parent == "a" and robot.frames["b"][0] == "a"
    ref = PinocchioModel(path, robot)
    rng = np.random.default_rng(11)
    for _ in range(5):
        q, v, a = rng.normal(size=(3, 2))
        assert rel_err(gtdyn.inverse_dynamics(robot, q, v, a).tau, ref.rnea(q, v, a)) < 1e-9


def test_tree_topology_queries():
    path = os.path.join(erd_root(), "panda_description/urdf/panda.urdf")
    with pytest.warns(ModelWarning, match="joint 'panda_finger_joint2' .*<mimic>.* independent joint"):
        robot = gtdyn.load_robot(path, transmissions="independent")
    assert [t.name for t in gtdyn.load_robot(path).transmissions] == ["panda_finger_joint2 mimics panda_finger_joint1"]
    fingers = robot.child_joints(robot.joint("panda_finger_joint1").parent)
    assert {j.name for j in fingers} == {"panda_finger_joint1", "panda_finger_joint2"}
    assert all(j.type == "prismatic" for j in fingers)
    # root -> leaves: every joint's parent link comes before its child link
    seen = {robot.base.name}
    for j in robot.joints:
        assert j.parent in seen
        seen.add(j.child)
    assert robot.parent_joint(robot.base.name) is None


def test_robot_is_immutable():
    robot = gtdyn.load_robot("rr")
    with pytest.raises(AttributeError):
        robot.name = "other"
    with pytest.raises(ValueError):
        robot.link("l1").inertia[0, 0] = 5.0


@pytest.mark.parametrize("kind", ["continuous", "prismatic"])
def test_joint_kinds(tmp_path, kind):
    path = write(tmp_path, robot_xml('<link name="base"/>', link("a"), link("b", xyz="0.2 0 0"),
                                     joint("j1", "base", "a", kind=kind, axis="1 1 0"),
                                     joint("j2", "a", "b", kind="revolute", xyz="0 0 0.3", axis="0 1 0")))
    robot = gtdyn.load_robot(path)
    expected = "prismatic" if kind == "prismatic" else "revolute"
    assert robot.joint("j1").type == expected
    ref = PinocchioModel(path, robot)
    q, v, a = np.array([0.3, -0.4]), np.array([1.0, 0.5]), np.array([0.2, -2.0])
    assert rel_err(gtdyn.inverse_dynamics(robot, q, v, a).tau, ref.rnea(q, v, a)) < 1e-9


# -- bad files -------------------------------------------------------------------------------------------

BAD = {
    "malformed_xml": ("<robot name='r'><link name='a'>", "malformed XML"),
    "not_a_robot": ("<model name='r'/>", "expected <robot>"),
    "empty_robot": ("<robot name='r'></robot>", "has no <link>"),
    "no_robot_name": ("<robot><link name='a'/></robot>", "<robot> has no name"),
    "two_roots": (robot_xml('<link name="a"/>', '<link name="b"/>', link("c"), joint("j", "a", "c")),
                  "several root links (a, b)"),
    "cycle": (robot_xml('<link name="base"/>', link("a"), link("b"), joint("j1", "base", "a"), joint("j2", "a", "b"),
                        joint("j3", "b", "a")), "link 'a' is the child of several joints (j1, j3)"),
    "cycle_no_root": (robot_xml(link("a"), link("b"), joint("j1", "a", "b"), joint("j2", "b", "a")), "cycle"),
    "dangling_child": (robot_xml('<link name="base"/>', joint("j", "base", "ghost")),
                       "joint 'j' names child link 'ghost'"),
    "dangling_parent": (robot_xml(link("a"), joint("j", "ghost", "a")), "joint 'j' names parent link 'ghost'"),
    "unknown_type": (robot_xml('<link name="base"/>', link("a"), joint("j", "base", "a", kind="floating")),
                     "joint 'j' has type 'floating'"),
    "zero_axis": (robot_xml('<link name="base"/>', link("a"), joint("j", "base", "a", axis="0 0 0")),
                  "joint 'j' has a zero"),
    "negative_mass": (robot_xml('<link name="base"/>', link("a", mass=-1.0), joint("j", "base", "a")),
                      "link 'a' <inertial> has mass -1.0"),
    "duplicate_link": (robot_xml('<link name="base"/>', link("a"), link("a"), joint("j", "base", "a")),
                       "duplicate link name 'a'"),
    "missing_child": (robot_xml('<link name="base"/>', link("a"),
                                '<joint name="j" type="revolute"><parent link="base"/></joint>'),
                      "joint 'j' has no <child"),
    "no_mass": (robot_xml('<link name="base"/>',
                          '<link name="a"><inertial><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>'
                          '</inertial></link>',
                          joint("j", "base", "a")), "link 'a' <inertial> has no <mass>"),
    "bad_number": (robot_xml('<link name="base"/>', link("a", mass="heavy"), joint("j", "base", "a")),
                   "link 'a' <inertial> <mass value> has 'heavy', which is not a list of numbers"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_files_raise_model_error_naming_the_element(tmp_path, case):
    text, message = BAD[case]
    path = write(tmp_path, text, case)
    with pytest.raises(ModelError) as info:
        gtdyn.load_robot(path)
    assert message in str(info.value) and path in str(info.value)


def test_missing_file_and_unknown_suffix(tmp_path):
    with pytest.raises(ModelError, match="no such file"):
        gtdyn.load_robot(tmp_path / "nothing.urdf")
    with pytest.raises(ModelError, match="unsupported robot file type"):
        gtdyn.load_robot(tmp_path / "robot.stl")
    with pytest.raises(ModelError, match="unsupported robot file type"):
        gtdyn.load_robot("puma")


def test_external_entities_are_not_expanded(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("leaked")
    text = (f'<?xml version="1.0"?>\n<!DOCTYPE robot [<!ENTITY x SYSTEM "file://{secret}">]>\n'
            '<robot name="&x;"><link name="base"/></robot>')
    path = tmp_path / "xxe.urdf"
    path.write_text(text)
    with pytest.raises(ModelError, match="external entity 'x'") as info:
        gtdyn.load_robot(path)
    assert str(info.value).startswith(f"{path}:3:") and "leaked" not in str(info.value)


def test_entities_and_dtds_are_refused(tmp_path):
    """An internal entity would silently change a name or number; a file with a DTD is refused outright."""
    path = tmp_path / "entity.urdf"
    path.write_text('<?xml version="1.0"?>\n<!DOCTYPE robot [<!ENTITY e "x">]>\n'
                    '<robot name="r"><link name="base&e;"/></robot>')
    with pytest.raises(ModelError, match="<!DOCTYPE> declaration") as info:
        gtdyn.load_robot(path)
    assert str(info.value).startswith(f"{path}:2:")
    path.write_text('<?xml version="1.0"?>\n<robot name="r">\n<link name="base&e;"/></robot>')
    with pytest.raises(ModelError, match="Entity 'e' not defined") as info:
        gtdyn.load_robot(path)
    assert str(info.value).startswith(f"{path}:3:")


# -- every value gtdyn reads is checked: the message names the file, the element and its line ----------------

MASSIVE = '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/>'


def multiline(*parts, name="r") -> str:
    """A robot file with one element per line, so that messages can be checked for the right line."""
    return robot_xml(*parts, name=name).replace("><", ">\n<")


def line_of(path: str, snippet: str) -> int:
    with open(path) as f:
        for number, line in enumerate(f, start=1):
            if snippet in line:
                return number
    raise AssertionError(f"{snippet} not in {path}")


def two_links(inertial="", origin="", axis='<axis xyz="0 0 1"/>', extra=""):
    """base → j → a; ``inertial`` replaces a's inertial, ``origin``/``axis``/``extra`` go into the joint."""
    inertial = inertial or f'<inertial><origin xyz="0 0 0.1" rpy="0 0 0"/><mass value="1"/>{MASSIVE}</inertial>'
    return multiline('<link name="base"/>', f'<link name="a">{inertial}</link>',
                     f'<joint name="j" type="revolute"><parent link="base"/><child link="a"/>{origin}{axis}'
                     f'<limit lower="-1" upper="1" effort="1" velocity="1"/>{extra}</joint>')


VALUES = {  # case: (file text, the offending element as written, what the message says)
    "axis with two numbers": (two_links(axis='<axis xyz="0 1"/>'), '<axis xyz="0 1"/>',
                              "joint 'j' <axis xyz> has 2 numbers; expected 3 (x y z)"),
    "axis with four numbers": (two_links(axis='<axis xyz="0 0 1 0"/>'), '<axis xyz="0 0 1 0"/>',
                               "joint 'j' <axis xyz> has 4 numbers; expected 3"),
    "origin with two numbers": (two_links(origin='<origin xyz="1 0"/>'), '<origin xyz="1 0"/>',
                                "joint 'j' <origin xyz> has 2 numbers; expected 3"),
    "fourth xyz value": (two_links(origin='<origin xyz="1 0 0 7"/>'), '<origin xyz="1 0 0 7"/>',
                         "joint 'j' <origin xyz> has 4 numbers; expected 3"),
    "fourth rpy value": (two_links(origin='<origin rpy="0 0 0 1"/>'), '<origin rpy="0 0 0 1"/>',
                         "joint 'j' <origin rpy> has 4 numbers; expected 3 (roll pitch yaw)"),
    "fourth inertial xyz value": (two_links(inertial=f'<inertial><origin xyz="0 0 0 1"/><mass value="1"/>{MASSIVE}'
                                                     '</inertial>'), '<origin xyz="0 0 0 1"/>',
                                  "link 'a' <inertial> <origin xyz> has 4 numbers"),
    "non-finite origin": (two_links(origin='<origin xyz="0 nan 0"/>'), '<origin xyz="0 nan 0"/>',
                          "joint 'j' <origin xyz> has a non-finite number in '0 nan 0'"),
    "overflowing number": (two_links(origin='<origin xyz="0 1e309 0"/>'), '<origin xyz="0 1e309 0"/>',
                           "joint 'j' <origin xyz> has a non-finite number"),
    "mass without value": (two_links(inertial=f'<inertial><mass/>{MASSIVE}</inertial>'), "<mass/>",
                           "link 'a' <inertial> <mass> has no value attribute"),
    "empty mass": (two_links(inertial=f'<inertial><mass value=""/>{MASSIVE}</inertial>'), '<mass value=""/>',
                   "link 'a' <inertial> <mass value> has 0 numbers; expected 1"),
    "Python-only number": (two_links(inertial=f'<inertial><mass value="1_0"/>{MASSIVE}</inertial>'),
                           '<mass value="1_0"/>', "<mass value> has '1_0', which is not a list of numbers"),
    "inertia without izz": (two_links(inertial='<inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1"'
                                               ' iyz="0"/></inertial>'), "<inertia ", "<inertia> has no izz"),
    "inertia not a number": (two_links(inertial=f'<inertial><mass value="1"/>{MASSIVE.replace("0.1", "x", 1)}'
                                                '</inertial>'), "<inertia ",
                             "link 'a' <inertial> <inertia ixx> has 'x', which is not a list of numbers"),
    "limit not a number": (two_links(extra="").replace('effort="1"', 'effort="lots"'), "<limit ",
                           "joint 'j' <limit effort> has 'lots'"),
    "inertia 1e30": (two_links(inertial=f'<inertial><mass value="1"/>{MASSIVE.replace("0.1", "1e30", 1)}'
                                        '</inertial>'), "<inertia ",
                     "link 'a' <inertial> <inertia ixx> has an inertia of 1e+30, beyond the ±1e+15"),
    "inertia 1e308": (two_links(inertial=f'<inertial><mass value="1"/>{MASSIVE.replace("0.1", "1e308")}'
                                         '</inertial>'), "<inertia ", "has an inertia of 1e+308"),
    "mass 1e300": (two_links(inertial=f'<inertial><mass value="1e300"/>{MASSIVE}</inertial>'), "<mass ",
                   "link 'a' <inertial> <mass value> has mass 1e+300, beyond the ±1e+12"),
    "centre of mass 500 km away": (two_links(inertial=f'<inertial><origin xyz="5e5 0 0"/><mass value="1"/>{MASSIVE}'
                                                      '</inertial>'), '<origin xyz="5e5 0 0"/>',
                                   "link 'a' <inertial> <origin xyz> has a length of 500000, beyond the ±100000"),
    "joint 1e200 away": (two_links(origin='<origin xyz="0 0 1e200"/>'), '<origin xyz="0 0 1e200"/>',
                         "joint 'j' <origin xyz> has a length of 1e+200"),
    "two origins": (two_links(origin='<origin xyz="0 0 1"/><origin xyz="0 0 2"/>'), '<origin xyz="0 0 2"/>',
                    "joint 'j' has 2 <origin> elements"),
    "two inertials": (two_links(inertial=f'<inertial><mass value="1"/>{MASSIVE}</inertial>'
                                         '<inertial note="2nd"><mass value="2"/></inertial>'), 'note="2nd"',
                      "link 'a' has 2 <inertial> elements"),
    "undeclared prefix on a link": (multiline('<link name="base"/>', '<xacro:link name="a"/>'), "<xacro:link",
                                    "<xacro:link> uses the undeclared namespace prefix 'xacro', but gtdyn needs"),
}


@pytest.mark.parametrize("case", sorted(VALUES))
def test_bad_values_raise_model_error_naming_file_element_and_line(tmp_path, case):
    text, element, message = VALUES[case]
    path = write(tmp_path, text, "bad")
    with pytest.raises(ModelError) as info:
        gtdyn.load_robot(path)
    line = line_of(path, element)
    assert str(info.value).startswith(f"{path}:{line}: "), str(info.value)
    assert message in str(info.value)


def test_the_checked_values_still_read_as_before(tmp_path):
    """Signs, exponents and spacing that files use are numbers; the axis reaches build as a unit vector."""
    path = write(tmp_path, two_links(origin='<origin xyz=" +1.5e-1\t-.5  2. " rpy="0 0 0"/>',
                                     axis='<axis xyz="1e200 1e200 0"/>'))
    robot = gtdyn.load_robot(path)
    np.testing.assert_allclose(robot.joint("j").axis, [2 ** -0.5, 2 ** -0.5, 0])
    np.testing.assert_allclose(robot.joint("j").origin.translation(), [0.15, -0.5, 2.0])


def test_mimic_joints_warn_that_they_are_independent(tmp_path):
    """Loaded with transmissions="independent" a <mimic> joint is free, and says so; by default the coupling is
    exact, and a <mimic> of a joint the file does not have is a ModelError."""
    path = write(tmp_path, two_links(extra='<mimic joint="j0" multiplier="2" offset="0.1"/>'))
    with pytest.raises(gtdyn.ModelError, match="names 'j0', which is not a joint"):
        gtdyn.load_robot(path)
    with pytest.warns(ModelWarning) as record:
        robot = gtdyn.load_robot(path, transmissions="independent")
    messages = [str(w.message) for w in record if "mimic" in str(w.message)]
    assert len(messages) == 1 and messages[0].startswith(path)
    assert f"joint 'j' (line {line_of(path, '<joint')}, mimics 'j0') has a <mimic>" in messages[0]
    assert "treats it as an independent joint" in messages[0]
    assert robot.joint_names == ["j"]


PANDA_LIKE = """<?xml version='1.0' encoding='utf-8'?>
<!-- as GTDynamics' panda.urdf: xacro calls left in a URDF, the xacro namespace never declared -->
<robot name="panda_like">
  <link name="hand"/>
  <link name="finger">
    <xacro:inertia-cylinder mass="15e-3" radius="0.01" h="0.04"/>
    <inertial><mass value="0.015"/><inertia ixx="1e-6" ixy="0" ixz="0" iyy="1e-6" iyz="0" izz="1e-6"/></inertial>
  </link>
  <xacro:gazebo-friction link="finger" mu="1.13" />
  <joint name="finger_joint" type="prismatic" xacro:note="ignored">
    <parent link="hand"/><child link="finger"/><axis xyz="0 1 0"/>
    <limit effort="20" lower="0.0" upper="0.04" velocity="0.2"/>
  </joint>
</robot>
"""


def test_undeclared_prefixes_on_ignored_elements_load_with_one_warning(tmp_path):
    path = tmp_path / "panda_like.urdf"
    path.write_text(PANDA_LIKE)
    with pytest.warns(ModelWarning) as record:
        robot = gtdyn.load_robot(path)
    messages = [str(w.message) for w in record]
    assert len(messages) == 1 and messages[0].startswith(str(path))
    assert "prefix 'xacro' is used without being declared" in messages[0]
    assert robot.joint_names == ["finger_joint"] and robot.link("finger").mass == pytest.approx(0.015)
    # ... but malformed XML stays an error, prefixes or not
    path.write_text(PANDA_LIKE.replace("</robot>", ""))
    with pytest.raises(ModelError, match="malformed XML"):
        gtdyn.load_robot(path)


def test_load_robot_argument_must_be_a_path_or_name():
    from gtdyn.errors import ArgumentError

    for bad in (None, 5, 2.5, ["rr"]):
        with pytest.raises(ArgumentError, match="path_or_name"):
            gtdyn.load_robot(bad)
    assert gtdyn.load_robot(b"rr").num_dofs == 2


def test_build_holds_descriptions_made_in_code_to_the_same_bounds():
    from gtdyn.model.build import _composite_inertial, build_robot
    from gtdyn.model.description import JointSpec, LinkSpec, RobotDescription

    far = np.eye(4)
    far[2, 3] = 1e200
    links = (LinkSpec("base"), LinkSpec("a", 1.0, np.eye(3), np.eye(4)))
    description = RobotDescription("r", links, (JointSpec("j", "revolute", "base", "a", far, np.array([0, 0, 1.0])),))
    with pytest.raises(ModelError, match=r"joint 'j' <origin> has a length of 1e\+200"):
        build_robot(description)
    heavy = (LinkSpec("base"), LinkSpec("a", 1e300, np.eye(3), np.eye(4)))
    with pytest.raises(ModelError, match=r"link 'a' <inertial> has mass 1e\+300"):
        build_robot(RobotDescription("r", heavy, (JointSpec("j", "revolute", "base", "a"),)))
    # the composite of merged links never comes out as inf, even when fed values beyond those bounds
    members = [(LinkSpec("a", 1e300, np.eye(3), far), np.eye(4)),
               (LinkSpec("b", 1e300, np.eye(3), np.eye(4)), np.eye(4))]
    with pytest.raises(ModelError, match="'a', 'b', merged by fixed joints"):
        _composite_inertial(members, "src.urdf")


def test_massless_moving_leaf_warns_and_forward_dynamics_names_it(tmp_path):
    path = write(tmp_path, robot_xml('<link name="base"/>', link("a"), '<link name="tip"/>',
                                     joint("j1", "base", "a"), joint("j2", "a", "tip", xyz="1 0 0")))
    with pytest.warns(ModelWarning, match="j2 move only massless links"):
        robot = gtdyn.load_robot(path)
    # inverse dynamics stays determined ...
    tau = gtdyn.inverse_dynamics(robot, [0.1, 0.2], [0.3, 0.4], [1.0, 2.0]).tau
    assert tau[1] == pytest.approx(0.0, abs=1e-12)
    # ... forward dynamics does not, and says which variables are free
    with pytest.raises(gtdyn.IndeterminateSystemError) as info:
        gtdyn.forward_dynamics(robot, [0.1, 0.2], [0.3, 0.4], [1.0, 0.0])
    assert "a2" in info.value.free_variables and "joint j2" in str(info.value)
    assert "a1" not in info.value.free_variables


def test_massless_intermediate_link_is_fine(tmp_path):
    """A massless link between two joints is allowed: the subtree beyond it carries the inertia."""
    path = write(tmp_path, robot_xml('<link name="base"/>', '<link name="mid"/>', link("a", xyz="0.3 0 0"),
                                     joint("j1", "base", "mid"), joint("j2", "mid", "a", axis="0 1 0")))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        robot = gtdyn.load_robot(path)
    ref = PinocchioModel(path, robot)
    rng = np.random.default_rng(12)
    for _ in range(3):
        q, v, tau = rng.uniform(-3, 3, 2), rng.uniform(-2, 2, 2), rng.uniform(-5, 5, 2)
        qdd = gtdyn.forward_dynamics(robot, q, v, tau).qdd
        assert rel_err(qdd, ref.aba(q, v, tau)) < 1e-9
        assert rel_err(gtdyn.inverse_dynamics(robot, q, v, qdd).tau, tau) < 1e-9


# -- real robots -------------------------------------------------------------------------------------------


def erd_urdfs():
    """Every URDF in example-robot-data whose joints are all of the supported kinds."""
    out = []
    for path in sorted(glob.glob(os.path.join(erd_root(), "**", "*.urdf"), recursive=True)):
        root = etree.parse(path).getroot()
        kinds = {j.get("type") for j in root.iter("joint") if j.get("type")}
        if kinds <= {"revolute", "continuous", "prismatic", "fixed"} and root.find("link") is not None:
            out.append(path)
    return out


@pytest.mark.heavy  # ~1.5–3 s; the default run loads a representative few in test_conformance, test_against_pinocchio
def test_every_example_robot_data_urdf_loads():
    paths = erd_urdfs()
    assert len(paths) >= 60
    names = {os.path.basename(p) for p in paths}
    assert {"ur5_robot.urdf", "panda.urdf", "kinova.urdf", "z1.urdf", "talos_reduced.urdf", "tiago.urdf"} <= names
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)  # some ship indefinite inertias or massless fingers
        coupled = broken = 0
        for path in paths:
            robot = gtdyn.load_robot(path, transmissions="independent")
            ref = PinocchioModel(path, robot)  # same joints as Pinocchio's reading of the file
            assert robot.num_dofs == ref.model.nv
            try:  # the default couples <mimic> joints; a file whose <mimic> names no joint says so
                coupled += bool(gtdyn.load_robot(path).transmissions)
            except gtdyn.ModelError as e:
                assert ("transmission" in str(e)
                        and ("which is not a joint" in str(e) or "a fixed joint" in str(e))), str(e)
                broken += 1
        assert coupled >= 5 and broken <= 2  # Panda, Talos, PR2, Baxter, Romeo …; Alex's hands name a missing joint


def test_bundled_models_load_after_non_editable_install(tmp_path):
    """pip install (no -e) into a scratch target; the installed package finds its bundled URDFs."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    source = tmp_path / "src"  # build from a copy, so the build leaves nothing in the checkout
    source.mkdir()
    for item in ("pyproject.toml", "README.md"):
        shutil.copy(os.path.join(repo, item), source / item)
    for folder in ("gtdyn", "urdf", "sdf"):
        shutil.copytree(os.path.join(repo, folder), source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(source)], check=True, capture_output=True)
    code = ("import gtdyn, sys; r = gtdyn.load_robot('puma560'); f = gtdyn.load_robot('five_bar'); "
            "assert gtdyn.__file__.startswith(sys.argv[1]), gtdyn.__file__; "
            "assert gtdyn.bundled_path('five_bar').startswith(sys.argv[1]) and f.num_dofs == 5; "
            "print(r.num_dofs, gtdyn.bundled_path('rrr'))")
    out = subprocess.run([sys.executable, "-c", code, str(target)], cwd=tmp_path, check=True, capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": str(target)})
    count, path = out.stdout.split()
    assert count == "6" and path.startswith(str(target)) and os.path.isfile(path)
