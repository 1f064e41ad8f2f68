"""SDFormat reading (gtdyn.io.sdf.read_sdf): pose-frame semantics, element defaults, bad files, bundled loops.

Expected transforms are built here from elementary rotations, independently of the reader.
"""

import math
import os

import numpy as np
import pytest

from gtdyn.errors import ModelError
from gtdyn.io.sdf import read_sdf

NAMESPACE = "https://gtdyn.dev/sdf"
SDF_FOLDER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sdf")
PROBE = "probe"


# -- writing small files ---------------------------------------------------------------------------------


def write(tmp_path, text: str) -> str:
    path = tmp_path / "model.sdf"
    path.write_text('<?xml version="1.0"?>\n' + text)
    return str(path)


def sdf(body: str, version="1.7", model="m") -> str:
    return f'<sdf version="{version}" xmlns:gtdyn="{NAMESPACE}"><model name="{model}">{body}</model></sdf>'


def read(tmp_path, body: str, version="1.7"):
    return read_sdf(write(tmp_path, sdf(body, version)))


def pose(values: str, **attributes) -> str:
    attrs = "".join(f' {key}="{value}"' for key, value in attributes.items())
    return f"<pose{attrs}>{values}</pose>"


def link(name: str, *parts: str) -> str:
    return f'<link name="{name}">{"".join(parts)}</link>'


def joint(name: str, parent: str, child: str, *parts: str, kind="revolute") -> str:
    return (f'<joint name="{name}" type="{kind}"><parent>{parent}</parent><child>{child}</child>'
            f'{"".join(parts)}</joint>')


def frame(name: str, *parts: str, attached_to=None) -> str:
    attached = "" if attached_to is None else f' attached_to="{attached_to}"'
    return f'<frame name="{name}"{attached}>{"".join(parts)}</frame>'


def by_name(items) -> dict:
    return {item.name: item for item in items}


def model_pose_of(tmp_path, body: str, name: str, version="1.7") -> np.ndarray:
    """Where the file puts frame ``name`` in the model frame, seen through a probe link welded to the world.

    The probe link is placed at ``name``, and the weld's joint frame defaults to the probe, so
    model_T_probe = the weld's origin · child_pose."""
    probe = link(PROBE, pose("0 0 0 0 0 0", relative_to=name)) + joint("weld", "world", PROBE, kind="fixed")
    weld = by_name(read(tmp_path, body + probe, version).joints)["weld"]
    return weld.origin @ weld.child_pose


# -- independent transforms ------------------------------------------------------------------------------


def rot_x(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def rot_y(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def rot_z(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def transform(x=0.0, y=0.0, z=0.0, rotation=None) -> np.ndarray:
    result = np.eye(4)
    result[:3, :3] = np.eye(3) if rotation is None else rotation
    result[:3, 3] = (x, y, z)
    return result


QUARTER = math.pi / 2


# -- what a valid file means -----------------------------------------------------------------------------


def test_model_links_and_joints_in_file_order(tmp_path):
    body = (link("c") + joint("j2", "b", "c") + link("a") + link("b") + joint("j1", "a", "b", kind="continuous"))
    path = write(tmp_path, sdf(body, model="arm"))
    description = read_sdf(path)
    assert description.name == "arm" and description.source == path
    assert description.allow_loops is True and description.base is None
    assert [item.name for item in description.links] == ["c", "a", "b"]
    assert [(j.name, j.type, j.parent, j.child) for j in description.joints] == [
        ("j2", "revolute", "b", "c"), ("j1", "continuous", "a", "b")]


def test_a_model_inside_a_world_is_read(tmp_path):
    text = f'<sdf version="1.8"><world name="w"><model name="inside">{link("a")}</model></world></sdf>'
    assert read_sdf(write(tmp_path, text)).name == "inside"


def test_link_pose_defaults_to_the_model_frame(tmp_path):
    body = link("a", pose("1 2 3 0 0 1.5707963267948966"))
    assert np.allclose(model_pose_of(tmp_path, body, "a"), transform(1, 2, 3, rot_z(QUARTER)))


def test_link_pose_relative_to_another_link(tmp_path):
    body = link("a", pose(f"1 0 0 0 0 {QUARTER}")) + link("b", pose("1 0 0 0 0 0", relative_to="a"))
    assert np.allclose(model_pose_of(tmp_path, body, "b"), transform(1, 1, 0, rot_z(QUARTER)))


def test_link_pose_relative_to_the_model_frame_by_name(tmp_path):
    body = link("a", pose("0 0 2 0 0 0", relative_to="__model__"))
    assert np.allclose(model_pose_of(tmp_path, body, "a"), transform(0, 0, 2))


def test_joint_pose_defaults_to_the_child_link_frame(tmp_path):
    body = (link("a", pose("0 0 1 0 0 0")) + link("b", pose(f"1 0 0 0 0 {QUARTER}"))
            + joint("j", "a", "b", pose("0 0.5 0 0 0 0")))
    j = read(tmp_path, body).joints[0]
    model_T_joint = transform(0.5, 0, 0, rot_z(QUARTER))  # (1,0,0) + Rz(90°)·(0,0.5,0)
    assert np.allclose(j.origin, np.linalg.inv(transform(0, 0, 1)) @ model_T_joint)
    assert np.allclose(j.child_pose, transform(0, -0.5, 0))
    assert np.allclose(transform(0, 0, 1) @ j.origin @ j.child_pose, transform(1, 0, 0, rot_z(QUARTER)))


def test_joint_without_pose_is_the_child_link_frame(tmp_path):
    body = link("a") + link("b", pose("1 2 3 0.1 0.2 0.3")) + joint("j", "a", "b")
    j = read(tmp_path, body).joints[0]
    assert np.allclose(j.child_pose, np.eye(4))
    assert np.allclose(j.origin[:3, 3], (1, 2, 3))


RELATIVE_TO_CASES = [  # relative_to, where the joint lands in the model frame
    ("a", (1.5, 0, 0)),          # the parent link, at (1, 0, 0)
    ("__model__", (0.5, 0, 0)),
    ("f", (2.5, 1, 0)),          # a frame attached to b, at (2, 1, 0)
    ("other", (3.5, 0, 1)),      # another joint, at (3, 0, 1) (its child c's origin + 1 along z)
]


@pytest.mark.parametrize("relative_to, expected", RELATIVE_TO_CASES)
def test_joint_pose_relative_to_link_model_frame_or_joint(tmp_path, relative_to, expected):
    body = (link("a", pose("1 0 0 0 0 0")) + link("b", pose("2 0 0 0 0 0")) + link("c", pose("3 0 0 0 0 0"))
            + frame("f", pose("0 1 0 0 0 0"), attached_to="b")
            + joint("j", "a", "b", pose("0.5 0 0 0 0 0", relative_to=relative_to))
            + joint("other", "b", "c", pose("0 0 1 0 0 0")))
    j = by_name(read(tmp_path, body).joints)["j"]
    model_T_joint = transform(*expected)
    assert np.allclose(j.origin, np.linalg.inv(transform(1, 0, 0)) @ model_T_joint)
    assert np.allclose(j.child_pose, np.linalg.inv(model_T_joint) @ transform(2, 0, 0))


def test_frames_attached_to_chains(tmp_path):
    body = (link("a", pose(f"1 0 0 0 0 {QUARTER}"))
            + frame("f1", pose("1 0 0 0 0 0"), attached_to="a")       # default: relative to a → (1, 1, 0)
            + frame("f2", pose("0 0 2 0 0 0"), attached_to="f1")      # relative to f1 → (1, 1, 2)
            + frame("f3", pose("0 0 3 0 0 0"))                        # attached to the model
            + frame("f4", pose("0 0 1 0 0 0", relative_to="__model__"), attached_to="f2")
            + frame("f5", attached_to="f2"))                          # no pose: coincides with f2
    expected = {"f1": transform(1, 1, 0, rot_z(QUARTER)), "f2": transform(1, 1, 2, rot_z(QUARTER)),
                "f3": transform(0, 0, 3), "f4": transform(0, 0, 1), "f5": transform(1, 1, 2, rot_z(QUARTER))}
    for name, model_T_frame in expected.items():
        assert np.allclose(model_pose_of(tmp_path, body, name), model_T_frame), name


def test_frame_attached_to_a_joint(tmp_path):
    body = (link("a") + link("b", pose("0 0 1 0 0 0")) + joint("j", "a", "b", pose("1 0 0 0 0 0"))
            + frame("f", pose("0 2 0 0 0 0"), attached_to="j"))
    assert np.allclose(model_pose_of(tmp_path, body, "f"), transform(1, 2, 1))


def test_inertial_pose_is_in_the_link_frame(tmp_path):
    inertia = ("<inertia><ixx>1</ixx><iyy>2</iyy><izz>3</izz><ixy>0.1</ixy><ixz>0.2</ixz><iyz>0.3</iyz>"
               "</inertia>")
    body = link("a", pose(f"5 5 5 0 0 {QUARTER}"),
                f"<inertial>{pose(f'0.1 0.2 0.3 {QUARTER} 0 0')}<mass>2.5</mass>{inertia}</inertial>")
    a = read(tmp_path, body).links[0]
    assert a.mass == 2.5
    assert np.allclose(a.inertia, [[1, 0.1, 0.2], [0.1, 2, 0.3], [0.2, 0.3, 3]])
    assert np.allclose(a.inertial_origin, transform(0.1, 0.2, 0.3, rot_x(QUARTER)))


def test_inertial_pose_relative_to_another_frame(tmp_path):
    body = link("a", pose(f"1 0 0 0 0 {QUARTER}"),
                f"<inertial>{pose('1 0 0.5 0 0 0', relative_to='__model__')}<mass>1</mass></inertial>")
    a = read(tmp_path, body).links[0]
    assert np.allclose(a.inertial_origin, transform(0, 0, 0.5, rot_z(-QUARTER)))


@pytest.mark.parametrize("inertial, mass, diagonal", [
    ("", 1.0, (1, 1, 1)),                                                   # no <inertial> at all
    ("<inertial/>", 1.0, (1, 1, 1)),
    ("<inertial><mass>3</mass></inertial>", 3.0, (1, 1, 1)),
    ("<inertial><inertia><ixx>0.5</ixx></inertia></inertial>", 1.0, (0.5, 1, 1)),
])
def test_sdformat_inertial_defaults(tmp_path, inertial, mass, diagonal):
    a = read(tmp_path, link("a", inertial)).links[0]
    assert a.mass == mass
    assert np.allclose(a.inertia, np.diag(diagonal)) and np.allclose(a.inertial_origin, np.eye(4))


def test_pose_angles_are_roll_pitch_yaw_about_fixed_axes(tmp_path):
    body = link("a", pose("0 0 0 0.3 -0.4 0.5"))
    assert np.allclose(model_pose_of(tmp_path, body, "a")[:3, :3], rot_z(0.5) @ rot_y(-0.4) @ rot_x(0.3))


def test_pose_in_degrees(tmp_path):
    body = link("a", pose("1 0 0 30 -45 90", degrees="true"))
    expected = transform(1, 0, 0, rot_z(QUARTER) @ rot_y(-math.pi / 4) @ rot_x(math.pi / 6))
    assert np.allclose(model_pose_of(tmp_path, body, "a", version="1.9"), expected)


CYCLE_AXES = np.array([[0, 0, 1], [1, 0, 0], [0, 1, 0]])  # 120° about (1, 1, 1): x → y → z → x


@pytest.mark.parametrize("quaternion, rotation", [
    ("0 0 0.7071067811865476 0.7071067811865476", rot_z(QUARTER)),
    ("0 0 2 2", rot_z(QUARTER)),  # normalised
    ("0.5 0.5 0.5 0.5", CYCLE_AXES),
    ("0.7071067811865476 0 0 -0.7071067811865476", rot_x(-QUARTER)),
])
def test_pose_as_quaternion_xyzw(tmp_path, quaternion, rotation):
    body = link("a", pose(f"1 2 3 {quaternion}", rotation_format="quat_xyzw"))
    assert np.allclose(model_pose_of(tmp_path, body, "a", version="1.9"), transform(1, 2, 3, rotation))


def test_empty_pose_is_the_identity(tmp_path):
    assert np.allclose(model_pose_of(tmp_path, link("a", "<pose/>"), "a"), np.eye(4))


# a joint whose frame is turned 90° about z: the child link b is, and the joint pose defaults to b
AXIS_BODY = link("a") + link("b", pose(f"0 0 1 0 0 {QUARTER}")) + frame("f", pose(f"0 0 0 0 {QUARTER} 0"))


@pytest.mark.parametrize("axis, expected", [
    ("", (0, 0, 1)),                                               # no <axis>
    ("<axis><xyz>0 0 2</xyz></axis>", (0, 0, 1)),                   # normalised
    ("<axis><xyz>1 0 0</xyz></axis>", (1, 0, 0)),                   # the joint frame
    ('<axis><xyz expressed_in="__model__">1 0 0</xyz></axis>', (0, -1, 0)),
    ('<axis><xyz expressed_in="b">1 0 0</xyz></axis>', (1, 0, 0)),
    ('<axis><xyz expressed_in="f">0 0 1</xyz></axis>', (0, -1, 0)),  # f's z is the model's x
])
def test_axis_is_a_unit_vector_in_the_joint_frame(tmp_path, axis, expected):
    j = read(tmp_path, AXIS_BODY + joint("j", "a", "b", axis)).joints[0]
    assert np.allclose(j.axis, expected)


@pytest.mark.parametrize("flag, expected", [("true", (0, -1, 0)), ("false", (1, 0, 0)), (None, (1, 0, 0))])
def test_use_parent_model_frame_in_sdformat_1_6(tmp_path, flag, expected):
    use = "" if flag is None else f"<use_parent_model_frame>{flag}</use_parent_model_frame>"
    body = (link("a", pose("0 0 1 0 0 0")) + link("b", pose(f"0 0 1 0 0 {QUARTER}"))
            + joint("j", "a", "b", pose("1 0 0 0 0 0"), f"<axis><xyz>1 0 0</xyz>{use}</axis>"))
    j = read(tmp_path, body, version="1.6").joints[0]
    assert np.allclose(j.axis, expected)
    assert np.allclose(j.origin, transform(0, 1, 0, rot_z(QUARTER)))  # joint pose relative to the child b


def test_joint_from_the_world_makes_a_world_base(tmp_path):
    body = link("a", pose("0 0 1 0 0 0")) + link("b") + joint("weld", "world", "a", kind="fixed") + joint(
        "j", "a", "b")
    description = read(tmp_path, body)
    assert description.base == "world"
    world = description.links[0]
    assert [item.name for item in description.links] == ["world", "a", "b"]
    assert world.mass == 0 and np.allclose(world.inertia, 0)
    weld = description.joints[0]
    assert weld.parent == "world" and np.allclose(weld.origin, transform(0, 0, 1))


@pytest.mark.parametrize("mark, actuated", [
    ("", True), ("<gtdyn:actuated>true</gtdyn:actuated>", True), ("<gtdyn:actuated>1</gtdyn:actuated>", True),
    ("<gtdyn:actuated>false</gtdyn:actuated>", False), ("<gtdyn:actuated> 0 </gtdyn:actuated>", False),
    ('<x:actuated xmlns:x="urn:other">false</x:actuated>', False),
])
def test_actuated_flag(tmp_path, mark, actuated):
    j = read(tmp_path, link("a") + link("b") + joint("j", "a", "b", mark)).joints[0]
    assert j.actuated is actuated


def test_joint_limits(tmp_path):
    limit = ("<axis><xyz>0 0 1</xyz><limit><lower>-1</lower><upper>2</upper><effort>30</effort>"
             "<velocity>-1</velocity></limit></axis>")
    body = (link("a") + link("b") + link("c") + joint("r", "a", "b", limit)
            + joint("cont", "b", "c", limit, kind="continuous"))
    revolute, continuous = read(tmp_path, body).joints
    assert (revolute.lower, revolute.upper, revolute.effort, revolute.velocity) == (-1, 2, 30, np.inf)
    assert (continuous.lower, continuous.upper, continuous.effort) == (-np.inf, np.inf, 30)


def test_prismatic_joint_and_missing_limits(tmp_path):
    j = read(tmp_path, link("a") + link("b") + joint("p", "a", "b", kind="prismatic")).joints[0]
    assert j.type == "prismatic" and (j.lower, j.upper, j.effort, j.velocity) == (-np.inf, np.inf, np.inf, np.inf)


def test_a_joint_child_may_be_a_frame_from_sdformat_1_8(tmp_path):
    """From 1.8 a joint's <child> may name a frame; the joint moves the link that frame is attached to, and its
    pose defaults to that frame (here 1 m above link b's origin)."""
    body = (link("a") + link("b", pose("0 0 1 0 0 0")) + frame("f", pose("0 0 1 0 0 0"), attached_to="b")
            + joint("j", "a", "f"))
    j = read(tmp_path, body, version="1.8").joints[0]
    assert (j.parent, j.child) == ("a", "b")
    assert np.allclose(j.origin, transform(0, 0, 2))


def test_a_link_may_be_the_child_of_several_joints(tmp_path):
    body = (link("base") + link("l1", pose("0 0 1 0 0 0")) + link("l2", pose("1 0 0 0 0 0"))
            + link("l3", pose("1 0 1 0 0 0")) + joint("j1", "base", "l1") + joint("j2", "base", "l2")
            + joint("j3", "l1", "l3") + joint("j4", "l2", "l3"))
    description = read(tmp_path, body)
    assert [j.child for j in description.joints] == ["l1", "l2", "l3", "l3"]


# -- bad files -------------------------------------------------------------------------------------------


def bad(body: str, version="1.7") -> str:
    return sdf(body, version)


TWO = link("a") + link("b")
BAD_FILES = [
    ("malformed XML", '<sdf version="1.7"><model name="m">', "malformed XML"),
    ("not sdf", '<robot name="r"/>', "expected <sdf>"),
    ("no version", '<sdf><model name="m"/></sdf>', "no version"),
    ("bad version", '<sdf version="one"><model name="m"/></sdf>', "not a version"),
    ("no model", '<sdf version="1.7"/>', "no <model>"),
    ("two models", '<sdf version="1.7"><model name="a"/><model name="b"/></sdf>', "2 models"),
    ("two models in a world", '<sdf version="1.7"><world name="w"><model name="a"/></world><model name="b"/></sdf>',
     "2 models"),
    ("nested model", bad(link("a") + '<model name="inner"/>'), "nested models"),
    ("included model", bad(link("a") + "<include><uri>model://x</uri></include>"), "nested models"),
    ("unnamed model", '<sdf version="1.7"><model/></sdf>', "<model> has no name"),
    ("unnamed link", bad("<link/>"), "has no name"),
    ("unknown joint type", bad(TWO + joint("j", "a", "b", kind="ball")),
     "joint 'j' has type 'ball'; supported types are revolute, continuous, prismatic, fixed"),
    ("unknown parent", bad(TWO + joint("j", "x", "b")), "joint 'j' names parent link 'x', which is not defined"),
    ("unknown child", bad(TWO + joint("j", "a", "x")), "joint 'j' names child link 'x', which is not defined"),
    ("frame as child before 1.8", bad(TWO + frame("f") + joint("j", "a", "f")),
     "names child 'f', which is a <frame>, not a link; a joint's child may be a frame only from SDFormat 1.8"),
    ("no child", bad(TWO + '<joint name="j" type="fixed"><parent>a</parent></joint>'), "has no <child>"),
    ("world as child", bad(TWO + joint("j", "a", "world")), "world as its child"),
    ("same parent and child", bad(TWO + joint("j", "a", "a")), "both parent and child"),
    ("unknown relative_to", bad(link("a", pose("0 0 0 0 0 0", relative_to="nowhere"))),
     "link 'a' has <pose relative_to='nowhere'>"),
    ("cyclic relative_to", bad(link("a", pose("", relative_to="b")) + link("b", pose("", relative_to="a"))),
     "cycle"),
    ("pose relative to itself", bad(link("a", pose("", relative_to="a"))), "a → a is a cycle"),
    ("link relative to its own joint", bad(TWO + link("c", pose("", relative_to="j")) + joint("j", "a", "c")),
     "c → j → c is a cycle"),
    ("unknown attached_to", bad(frame("f", attached_to="nowhere")), "attached_to 'nowhere'"),
    ("cyclic attached_to", bad(frame("f", pose("", relative_to="__model__"), attached_to="g")
                               + frame("g", pose("", relative_to="__model__"), attached_to="f")), "cycle"),
    ("unknown expressed_in", bad(TWO + joint("j", "a", "b", '<axis><xyz expressed_in="x">1 0 0</xyz></axis>')),
     "expressed_in names frame 'x'"),
    ("unknown inertial relative_to",
     bad(link("a", f"<inertial>{pose('', relative_to='x')}</inertial>")), "names frame 'x'"),
    ("pose text", bad(link("a", pose("1 2 x 0 0 0"))), "link 'a' <pose> has '1 2 x 0 0 0'"),
    ("pose count", bad(link("a", pose("1 2 3 0 0"))), "link 'a' <pose> has 5 numbers; expected 6"),
    ("pose not finite", bad(link("a", pose("nan 0 0 0 0 0"))), "non-finite"),
    ("quaternion count", bad(link("a", pose("1 2 3 0 0 0", rotation_format="quat_xyzw")), "1.9"),
     "expected 7"),
    ("zero quaternion", bad(link("a", pose("1 2 3 0 0 0 0", rotation_format="quat_xyzw")), "1.9"),
     "zero quaternion"),
    ("rotation format", bad(link("a", pose("0 0 0 1 0 0 0", rotation_format="quat_wxyz")), "1.9"),
     "rotation_format 'quat_wxyz'"),
    ("degrees value", bad(link("a", pose("0 0 0 0 0 0", degrees="yes")), "1.9"), "degrees is 'yes'"),
    ("joint pose text", bad(TWO + joint("j", "a", "b", pose("a b c d e f"))), "joint 'j' <pose>"),
    ("inertial pose text", bad(link("a", f"<inertial>{pose('0 0')}</inertial>")), "link 'a' <inertial> <pose>"),
    ("mass text", bad(link("a", "<inertial><mass>heavy</mass></inertial>")), "<mass> has 'heavy'"),
    ("zero axis", bad(TWO + joint("j", "a", "b", "<axis><xyz>0 0 0</xyz></axis>")), "zero vector"),
    ("axis count", bad(TWO + joint("j", "a", "b", "<axis><xyz>0 1</xyz></axis>")), "expected 3"),
    ("duplicate links", bad(link("a") + link("a")), "link 'a' on line"),
    ("link and joint share a name", bad(TWO + joint("a", "a", "b")), "same name as the link"),
    ("frame and link share a name", bad(link("a") + frame("a")), "same name"),
    ("reserved world", bad(link("world")), "reserved"),
    ("reserved model frame", bad(link("__model__")), "reserved"),
    ("bad actuated", bad(TWO + joint("j", "a", "b", "<gtdyn:actuated>maybe</gtdyn:actuated>")),
     "expected true, false, 1 or 0"),
    ("relative_to before 1.7", bad(link("a", pose("", relative_to="__model__")), "1.6"), "needs SDFormat 1.7"),
    ("frame before 1.7", bad(link("a") + frame("f"), "1.6"), "needs SDFormat 1.7"),
    ("expressed_in before 1.7", bad(TWO + joint("j", "a", "b", '<axis><xyz expressed_in="a">1 0 0</xyz></axis>'),
                                    "1.6"), "needs SDFormat 1.7"),
    ("use_parent_model_frame after 1.6",
     bad(TWO + joint("j", "a", "b", "<axis><use_parent_model_frame>1</use_parent_model_frame></axis>")),
     "removed in SDFormat 1.7"),
    ("pose frame attribute", bad(link("a", pose("0 0 0 0 0 0", frame="x")), "1.6"), "use relative_to"),
    # every number gtdyn reads: count, finiteness, and magnitudes no robot reaches (they overflow the dynamics)
    ("pose with a seventh number", bad(link("a", pose("0 0 0 0 0 0 1"))), "link 'a' <pose> has 7 numbers; expected 6"),
    ("quaternion pose with six", bad(link("a", pose("0 0 0 0 0 1", rotation_format="quat_xyzw")), "1.9"),
     "link 'a' <pose> has 6 numbers; expected 7 (x y z qx qy qz qw)"),
    ("axis with four numbers", bad(TWO + joint("j", "a", "b", "<axis><xyz>0 0 1 0</xyz></axis>")),
     "joint 'j' <axis><xyz> has 4 numbers; expected 3"),
    ("empty mass", bad(link("a", "<inertial><mass/></inertial>")), "link 'a' <inertial> <mass> has 0 numbers"),
    ("mass with two numbers", bad(link("a", "<inertial><mass>1 2</mass></inertial>")), "<mass> has 2 numbers"),
    ("Python-only number", bad(link("a", "<inertial><mass>1_0</mass></inertial>")), "<mass> has '1_0'"),
    ("overflowing number", bad(link("a", pose("1e309 0 0 0 0 0"))), "link 'a' <pose> has a non-finite number"),
    ("pose 1e200 away", bad(link("a", pose("0 0 1e200 0 0 0"))), "link 'a' <pose> has a length of 1e+200, beyond"),
    ("centre of mass 500 km away", bad(link("a", f"<inertial>{pose('5e5 0 0 0 0 0')}</inertial>")),
     "link 'a' <inertial> <pose> has a length of 500000, beyond the ±100000"),
    ("mass 1e300", bad(link("a", "<inertial><mass>1e300</mass></inertial>")),
     "link 'a' <inertial> <mass> has mass 1e+300, beyond the ±1e+12"),
    ("inertia 1e30", bad(link("a", "<inertial><inertia><ixx>1e30</ixx></inertia></inertial>")),
     "link 'a' <inertial> <inertia> <ixx> has an inertia of 1e+30"),
    ("inertia 1e308", bad(link("a", "<inertial><inertia><iyz>-1e308</iyz></inertia></inertial>")),
     "<inertia> <iyz> has an inertia of -1e+308"),
    ("two poses", bad(link("a", pose("0 0 0 0 0 0"), pose("1 0 0 0 0 0"))), "link 'a' has 2 <pose> elements"),
    ("two masses", bad(link("a", "<inertial><mass>1</mass><mass>2</mass></inertial>")),
     "link 'a' <inertial> has 2 <mass> elements"),
    ("two parents", bad(TWO + '<joint name="j" type="fixed"><parent>a</parent><parent>b</parent><child>b</child>'
                              "</joint>"), "joint 'j' has 2 <parent> elements"),
    ("element in a link name", bad(TWO + joint("j", "a<x/>", "b")), "joint 'j' <parent> contains elements"),
    ("element in a number", bad(link("a", pose("0 0 <x/>0 0 0 0"))), "link 'a' <pose> contains a <x> element"),
    # entity references and DTDs: an entity would silently change a name (l1&xxe; read as l1)
    ("entity reference", '<sdf version="1.7"><model name="m">' + TWO + joint("j", "a&xxe;", "b") + "</model></sdf>",
     "malformed XML: Entity 'xxe' not defined"),
    ("entity with a DTD", '<!DOCTYPE sdf [<!ENTITY xxe "">]><sdf version="1.7"><model name="m">' + TWO
     + joint("j", "a&xxe;", "b") + "</model></sdf>", "the file has a <!DOCTYPE> declaration"),
    ("undeclared prefix on a needed element", '<sdf version="1.7"><model name="m"><x:link name="a"/></model></sdf>',
     "<x:link> uses the undeclared namespace prefix 'x', but gtdyn needs this element"),
]


@pytest.mark.parametrize("text, message", [case[1:] for case in BAD_FILES], ids=[case[0] for case in BAD_FILES])
def test_bad_files_raise_model_error_naming_file_and_element(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ModelError) as error:
        read_sdf(path)
    assert str(error.value).startswith(path + ":")
    assert message in str(error.value)


def test_messages_give_the_line_of_the_element(tmp_path):
    body = "\n".join([link("a"), link("b"), joint("j", "a", "b", "<axis>\n<xyz>0 1</xyz>\n</axis>")])
    path = write(tmp_path, sdf("\n" + body))  # <?xml ...>, <sdf><model>, link, link, joint <axis>, <xyz>
    with pytest.raises(ModelError) as error:
        read_sdf(path)
    assert str(error.value).startswith(f"{path}:6: joint 'j' <axis><xyz> has 2 numbers; expected 3")


def test_undeclared_prefixes_load_with_one_warning(tmp_path):
    """A prefix nobody declared (as ROS tools accept) marks elements gtdyn ignores, and <gtdyn:actuated>, which
    gtdyn reads in any namespace, still counts."""
    from gtdyn.errors import ModelWarning

    body = (TWO + joint("j", "a", "b", "<gtdyn:actuated>false</gtdyn:actuated>")
            + '<plugin:controller name="c"/>')
    path = write(tmp_path, f'<sdf version="1.7"><model name="m">{body}</model></sdf>')
    with pytest.warns(ModelWarning) as record:
        description = read_sdf(path)
    assert len(record) == 1 and str(record[0].message).startswith(path)
    assert "prefixes 'gtdyn', 'plugin' are used without being declared" in str(record[0].message)
    assert by_name(description.joints)["j"].actuated is False


def test_missing_file(tmp_path):
    with pytest.raises(ModelError, match="no such file"):
        read_sdf(str(tmp_path / "absent.sdf"))


# -- the bundled mechanisms ------------------------------------------------------------------------------

BUNDLED = {  # name: (joint positions (x, z) in the model frame, loop-closing joints, actuated joints)
    "five_bar": ({"j1": (-0.15, 0), "j2": (0.15, 0), "j3": (-0.30, 0.20), "j4": (0.30, 0.20), "j5": (0, 0.60)},
                 ["j5"], ["j1", "j2"]),
    "four_bar": ({"j1": (0, 0), "j2": (0.15, 0.20), "j3": (0.50, 0), "j4": (0.65, 0.20)}, ["j4"], ["j1"]),
    "six_bar": ({"j1": (0, 0), "j2": (0.06, 0.08), "j3": (0.40, 0), "j4": (0.16, 0.32), "j5": (0.65, 0),
                 "j6": (0.95, 0), "j7": (0.80, 0.20)}, ["j4", "j7"], ["j1"]),
}


def bundled(name: str):
    return read_sdf(os.path.join(SDF_FOLDER, f"{name}.sdf"))


def rotation_about(axis: np.ndarray, angle: float) -> np.ndarray:
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + math.sin(angle) * k + (1 - math.cos(angle)) * k @ k


def joint_transform(j, q: float) -> np.ndarray:
    """parent_T_child(q) = origin · motion(q) · child_pose, for the joint types the mechanisms use."""
    motion = np.eye(4)
    if j.type in ("revolute", "continuous"):
        motion[:3, :3] = rotation_about(j.axis, q)
    return j.origin @ motion @ j.child_pose


def spanning_tree(description, q: dict):
    """Model-frame poses of all links along a spanning tree from the world, and the joints left off the tree."""
    poses = {"world": np.eye(4)}
    tree = []
    grown = True
    while grown:
        grown = False
        for j in description.joints:
            if j.parent in poses and j.child not in poses:
                poses[j.child] = poses[j.parent] @ joint_transform(j, q.get(j.name, 0.0))
                tree.append(j.name)
                grown = True
    closures = [j for j in description.joints if j.name not in tree]
    return poses, closures


def loop_residual(description, q: dict) -> np.ndarray:
    """How far each loop-closing joint is from joining its parent and child (zero when every loop is closed)."""
    poses, closures = spanning_tree(description, q)
    errors = [poses[j.parent] @ joint_transform(j, q.get(j.name, 0.0)) - poses[j.child] for j in closures]
    return np.concatenate([error[:3].ravel() for error in errors])


def residual_jacobian(description, q: dict, names: list[str], step=1e-6) -> np.ndarray:
    columns = []
    for name in names:
        plus, minus = dict(q), dict(q)
        plus[name] = q.get(name, 0.0) + step
        minus[name] = q.get(name, 0.0) - step
        columns.append((loop_residual(description, plus) - loop_residual(description, minus)) / (2 * step))
    return np.array(columns).T


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_mechanism_parses_as_documented(name):
    positions, closures, actuated = BUNDLED[name]
    description = bundled(name)
    assert description.name == name and description.base == "world"
    assert [item.name for item in description.links][:2] == ["world", "base"]
    assert all(item.mass > 0 for item in description.links[1:])
    assert [j.name for j in description.joints if j.type == "revolute" and j.actuated] == actuated
    poses, closing = spanning_tree(description, {})
    assert [j.name for j in closing] == closures
    for j in description.joints[1:]:
        model_T_joint = poses[j.parent] @ j.origin
        x, z = positions[j.name]
        assert np.allclose(model_T_joint[:3, 3], (x, 0, z)), j.name
        assert np.allclose(model_T_joint[:3, :3] @ j.axis, (0, 1, 0)), j.name  # perpendicular to the x–z plane


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_loops_close_at_zero_joint_values(name):
    description = bundled(name)
    assert np.abs(loop_residual(description, {})).max() < 1e-12


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_centres_of_mass_lie_between_their_joints(name):
    """Each bar's CoM is its mid-point and each plate's the centroid of its joints, with the bar along x."""
    description = bundled(name)
    positions = BUNDLED[name][0]
    poses, _ = spanning_tree(description, {})
    for item in description.links[2:]:
        ends = [np.array(positions[j.name]) for j in description.joints if item.name in (j.parent, j.child)]
        model_T_com = poses[item.name] @ item.inertial_origin
        assert np.allclose(model_T_com[[0, 2], 3], np.mean(ends, axis=0), atol=1e-6), item.name
        if len(ends) == 2:
            along = (ends[1] - ends[0]) / np.linalg.norm(ends[1] - ends[0])
            assert np.allclose(abs(model_T_com[[0, 2], 0] @ along), 1), item.name


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_mechanisms_are_properly_actuated_and_movable(name):
    """The passive joints are locally determined by the actuated ones (non-singular assembly), so nudging the
    actuated joints leaves a configuration that Gauss–Newton closes again."""
    description = bundled(name)
    revolute = [j.name for j in description.joints if j.type == "revolute"]
    actuated = [j for j in revolute if by_name(description.joints)[j].actuated]
    passive = [j for j in revolute if j not in actuated]
    loops = len(BUNDLED[name][1])
    assert np.linalg.matrix_rank(residual_jacobian(description, {}, revolute), tol=1e-6) == 3 * loops
    assert len(revolute) - 3 * loops == len(actuated)  # planar Grübler count equals the actuated joints
    assert np.linalg.matrix_rank(residual_jacobian(description, {}, passive), tol=1e-6) == len(passive)
    q = close_loops(description, {j: 0.1 for j in actuated})
    assert np.abs(loop_residual(description, q)).max() < 1e-10


def close_loops(description, actuated_q: dict) -> dict:
    """Gauss–Newton on the passive joints until every loop closes, from zero passive angles."""
    passive = [j.name for j in description.joints if j.type == "revolute" and not j.actuated]
    q = dict(actuated_q)
    for _ in range(20):
        step = np.linalg.lstsq(residual_jacobian(description, q, passive), -loop_residual(description, q),
                               rcond=None)[0]
        q.update({j: q.get(j, 0.0) + dq for j, dq in zip(passive, step)})
    return q


def inertia_and_potential(description, q1: float, step=1e-5, g=9.81):
    """Effective inertia about the crank joint j1 (from each link's CoM and angular velocity per unit q1 rate)
    and the potential energy, for a one-DoF mechanism at crank angle q1."""
    configurations = [spanning_tree(description, close_loops(description, {"j1": q1 + d}))[0]
                      for d in (-step, 0.0, step)]
    inertia = potential = 0.0
    for item in description.links[2:]:
        before, now, after = (poses[item.name] @ item.inertial_origin for poses in configurations)
        velocity = (after[:3, 3] - before[:3, 3]) / (2 * step)
        spin = now[:3, :3].T @ (after[:3, :3] - before[:3, :3]) / (2 * step)
        omega = np.array([spin[2, 1], spin[0, 2], spin[1, 0]])
        inertia += item.mass * velocity @ velocity + omega @ item.inertia @ omega
        potential += item.mass * g * now[2, 3]
    return inertia, potential


def test_four_bar_analytic_case_in_its_comment():
    """M = I_A + I_B + m_coupler L² = 0.0416833 kg m² and dV/dq1 = −0.1875 g cos θ, θ = 53.13° − q1."""
    description = bundled("four_bar")
    theta0 = math.atan2(0.8, 0.6)
    for q1 in (0.0, 0.4):
        inertia, _ = inertia_and_potential(description, q1)
        slope = (inertia_and_potential(description, q1 + 1e-4)[1]
                 - inertia_and_potential(description, q1 - 1e-4)[1]) / 2e-4
        assert inertia == pytest.approx(0.0416833, rel=1e-5)
        assert slope == pytest.approx(-0.1875 * 9.81 * math.cos(theta0 - q1), rel=1e-6)


def test_four_bar_is_a_parallelogram():
    """Read from the file, at rest and moved (loops closed): crank = rocker, coupler = ground, and the coupler
    translates without turning while crank and rocker turn together."""
    description = bundled("four_bar")
    joints = by_name(description.joints)

    def at(q: dict):
        poses, _ = spanning_tree(description, q)
        where = {name: (poses[j.parent] @ j.origin)[[0, 2], 3] for name, j in joints.items()}
        return poses, {pair: np.linalg.norm(where[pair[0]] - where[pair[1]])
                       for pair in [("j1", "j2"), ("j3", "j4"), ("j2", "j4"), ("j1", "j3")]}

    rest, _ = at({})
    for q in ({}, close_loops(description, {"j1": 0.3})):
        poses, length = at(q)
        assert math.isclose(length["j1", "j2"], length["j3", "j4"], rel_tol=1e-9)  # crank = rocker
        assert math.isclose(length["j2", "j4"], length["j1", "j3"], rel_tol=1e-9)  # coupler = ground
        assert np.allclose(poses["coupler"][:3, :3], rest["coupler"][:3, :3], atol=1e-9)
        assert np.allclose(poses["crank"][:3, :3], poses["rocker"][:3, :3], atol=1e-9)
    assert q["j1"] == 0.3 and np.allclose([q["j2"], q["j3"], q["j4"]], [-0.3, 0.3, 0.3], atol=1e-9)


def test_four_bar_dynamics_match_the_analytic_case():
    """gtdyn's inverse and forward dynamics of sdf/four_bar.sdf against its header comment: with θ = 53.13° − q1,
    τ(θ) = M θ̈ + 0.1875 g cos θ about −y, so τ1 = −τ = M q̈1 − 0.1875 g cos(θ0 − q1) about the +y axis, with
    M = 0.0416833 kg m² (to the header's 6 digits) and no velocity term (M is constant)."""
    import gtdyn

    robot = gtdyn.load_robot("four_bar")
    assert robot.joint_names == ["j1", "j2", "j3", "j4"] and robot.actuated_joint_names == ["j1"]
    theta0, g = math.atan2(0.8, 0.6), 9.81
    rng = np.random.default_rng(41)
    for q1, v1, a1 in [(0.0, 0.0, 0.0), (0.7, 0.0, 0.0)] + [tuple(rng.uniform(-1, 1, 3) * (1, 3, 5)) for _ in range(4)]:
        state = gtdyn.close_loops(robot, {"j1": q1}, {"j1": v1}, {"j1": a1}, guess=[q1, -q1, q1, q1])
        assert np.allclose(state.q, [q1, -q1, q1, q1], atol=1e-9)  # the parallelogram branch
        tau = gtdyn.inverse_dynamics(robot, state.q, state.v, state.qdd).tau
        gravity = -0.1875 * g * math.cos(theta0 - q1)
        assert tau[1:] == pytest.approx([0, 0, 0], abs=1e-12)  # passive joints
        if a1 == 0:  # gravity alone: the header's numbers are exact
            assert tau[0] == pytest.approx(gravity, rel=1e-9)
        assert tau[0] == pytest.approx(0.0416833 * a1 + gravity, rel=1e-6, abs=1e-6 * abs(a1))  # M to 6 digits
        qdd = gtdyn.forward_dynamics(robot, state.q, state.v, [tau[0], 0, 0, 0]).qdd
        assert qdd == pytest.approx(state.qdd, abs=1e-9)
