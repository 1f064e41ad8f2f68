"""Compiled frame kinematics (gtdyn.compile_frames) against the reference frame functions (gtdyn.kinematics.frames,
themselves checked against Pinocchio in tests/test_frames.py): placements, Jacobians, velocities and J̇ q̇ of
every frame of the PUMA 560 and of the bundled quadruped on a floating base, in both references, to 1e-12; a
closed chain read as the reference reads it; batches (threads included) equal to single calls; and bad arguments
raising the reference's ArgumentError, word for word.

Each compiled object compiles its code on first use, so the objects are shared by module-scoped fixtures.
"""

import pathlib
import re
import threading
import warnings

import gtsam
import numpy as np
import pytest
from references import erd_path, random_base

import gtdyn
from gtdyn.compiled.frames import CompiledFrames, compile_frames
from gtdyn.kinematics.frames import (
    frame_bias_acceleration,
    frame_jacobian,
    frame_placement,
    frame_velocity,
)

TOL = 1e-12
REFERENCES = ("local", "world_aligned")
ROBOTS = {"puma560": {}, "quadruped": {"base": "floating"}, "five_bar": {}}  # five_bar: a closed chain


def error(x, ref) -> float:
    """max|x − ref| / max(max|ref|, 1), as in tests/test_frames.py."""
    x, ref = np.asarray(x, float), np.asarray(ref, float)
    return float(np.max(np.abs(x - ref), initial=0.0) / max(np.max(np.abs(ref), initial=0.0), 1.0))


def random_states(robot, count: int, seed: int = 7) -> list[dict]:
    """States as the reference functions take them: q, v and, for a floating base, base_pose and base_twist."""
    rng = np.random.default_rng(seed)
    states = []
    for _ in range(count):
        state = {"q": rng.uniform(-np.pi, np.pi, robot.num_dofs), "v": rng.uniform(-2, 2, robot.num_dofs)}
        if robot.floating_base:
            state["base_pose"], state["base_twist"], _ = random_base(rng)
        states.append(state)
    return states


def at_q(state: dict) -> dict:
    return {k: x for k, x in state.items() if k == "base_pose"}


def base(state: dict) -> dict:
    return {k: x for k, x in state.items() if k.startswith("base_")}


def reference_answers(robot, frames, rf: str, state: dict) -> dict[str, np.ndarray]:
    q, v = state["q"], state["v"]
    return {"placement": np.array([frame_placement(robot, q, f, **at_q(state)).matrix() for f in frames]),
            "jacobian": np.array([frame_jacobian(robot, q, f, reference=rf, **at_q(state)) for f in frames]),
            "velocity": np.array([frame_velocity(robot, q, v, f, reference=rf, **base(state)) for f in frames]),
            "bias_acceleration": np.array([frame_bias_acceleration(robot, q, v, f, reference=rf, **base(state))
                                           for f in frames])}


def compiled_answers(compiled: CompiledFrames, state: dict) -> dict[str, np.ndarray]:
    q, v = state["q"], state["v"]
    T, J = compiled.placement_jacobian(q, **at_q(state))
    out = {"placement": compiled.placement(q, **at_q(state)), "jacobian": compiled.jacobian(q, **at_q(state)),
           "velocity": compiled.velocity(q, v, **base(state)),
           "bias_acceleration": compiled.bias_acceleration(q, v, **base(state))}
    assert np.array_equal(T, out["placement"]) and np.array_equal(J, out["jacobian"])  # the same code
    return out


@pytest.fixture(scope="module", params=[(name, rf) for name in ROBOTS for rf in REFERENCES],
                ids=lambda p: f"{p[0]}-{p[1]}")
def case(request):
    """(robot, every frame compiled in one reference, states)."""
    name, rf = request.param
    robot = gtdyn.load_robot(name, **ROBOTS[name])
    return robot, compile_frames(robot, list(robot.frames), reference=rf), random_states(robot, 3)


def listed(state: dict) -> dict:
    """The state as lists: inputs the native entry does not take, so the call goes through Python."""
    return {k: np.asarray(x).tolist() for k, x in state.items()}


# -- against the reference functions -----------------------------------------------------------------------------

def test_every_frame_matches_the_reference(case):
    robot, compiled, states = case
    worst: dict[str, float] = {}
    for state in states:
        ours, theirs = compiled_answers(compiled, state), reference_answers(robot, compiled.frames,
                                                                            compiled.reference, state)
        for name, x in theirs.items():
            assert ours[name].shape == x.shape, name
            worst[name] = max(worst.get(name, 0.0), error(ours[name], x))
    assert max(worst.values()) < TOL, worst
    nv = robot.num_dofs + 6 * robot.floating_base
    assert compiled.jacobian(states[0]["q"], **at_q(states[0])).shape == (len(robot.frames), 6, nv)


def test_batches_equal_single_calls(case):
    """The batch entry runs the same code state by state: equal to single calls, bit for bit, with threads too."""
    robot, compiled, states = case
    Q, V = np.array([s["q"] for s in states]), np.array([s["v"] for s in states])
    poses = {"base_pose": np.array([s["base_pose"] for s in states])} if robot.floating_base else {}
    twists = {"base_twist": np.array([s["base_twist"] for s in states])} if robot.floating_base else {}
    T, J = compiled.batch_placement_jacobian(Q, **poses, threads=2)
    assert np.array_equal(T, compiled.batch_placement(Q, **poses))
    assert np.array_equal(J, compiled.batch_jacobian(Q, **poses, threads=3))
    velocities = compiled.batch_velocity(Q, V, **poses, **twists)
    biases = compiled.batch_bias_acceleration(Q, V, **poses, **twists, threads=2)
    for k, state in enumerate(states):
        single = compiled_answers(compiled, state)
        for name, x in (("placement", T), ("jacobian", J), ("velocity", velocities), ("bias_acceleration", biases)):
            assert np.array_equal(x[k], single[name]), name
    if robot.floating_base:  # base poses as a list of Pose3
        listed = compiled.batch_placement(Q, base_pose=[gtsam.Pose3(s["base_pose"]) for s in states])
        assert error(listed, T) < TOL
    # over ``small_batches.SMALL_BATCH`` states the batch's own loop runs, under it the calls (without base
    # arguments: the base's defaults): the same bits either way
    many, moving = (np.tile(x, (-(-9 // len(x)), 1))[:9] for x in (Q, V))
    for few, v in ((many[:8], moving[:8]), (many[:1], moving[:1]), (many, moving)):
        T, J = compiled.batch_placement_jacobian(few)
        velocities = compiled.batch_velocity(few, v)
        for k, q in enumerate(few):
            assert np.array_equal(T[k], compiled.placement(q)) and np.array_equal(J[k], compiled.jacobian(q))
            assert np.array_equal(velocities[k], compiled.velocity(q, v[k]))


def test_plain_arrays_take_one_native_entry_with_the_python_paths_bits(case, monkeypatch):
    """Float64 arrays go through one native entry (``gtdyn.compiled.entry``) that writes the answer straight into
    the output; anything else (lists here) through the Python path, which checks and converts first: the same
    code, the same bits. A floating base's pose and twist left out are the identity and zero either way."""
    robot, compiled, states = case
    through_python = [compiled_answers(compiled, listed(state)) for state in states]
    unset = compiled.velocity(*(states[0][k].tolist() for k in "qv"))  # the base left out: at the identity, at rest
    monkeypatch.setattr(compiled, "_called", lambda *args: pytest.fail("a plain call took the Python path"))
    for state, python in zip(states, through_python):
        native = compiled_answers(compiled, state)
        for name, x in python.items():
            assert np.array_equal(native[name], x) and native[name].shape == x.shape, name
    assert np.array_equal(compiled.velocity(states[0]["q"], states[0]["v"]), unset)


def test_one_frame_gives_the_reference_shapes():
    robot = gtdyn.load_robot("puma560")
    flange = compile_frames(robot, "flange", reference="world_aligned")
    (state,) = random_states(robot, 1, seed=3)
    q, v = state["q"], state["v"]
    assert error(flange.placement(q), frame_placement(robot, q, "flange").matrix()) < TOL
    J = flange.jacobian(q.tolist())  # a list goes through the boundary's checks
    assert J.shape == (6, 6) and error(J, frame_jacobian(robot, q, "flange", reference="world_aligned")) < TOL
    assert error(J @ v, flange.velocity(q, v)) < TOL
    assert np.all(flange.velocity(q, None) == 0)  # no q̇: at rest, as frame_velocity
    assert flange.batch_bias_acceleration(np.array([q]), np.array([v])).shape == (1, 6)
    assert repr(flange) == "CompiledFrames('puma560', 'flange', reference='world_aligned')"
    assert gtdyn.compile_frames is compile_frames


def test_a_closed_chain_is_read_as_the_reference_reads_it():
    """Spanning-tree kinematics at any q (loop-closing joints get no Jacobian column), as the reference functions;
    at a state that closes the loop, J q̇ is the frame's velocity."""
    robot = gtdyn.load_robot("five_bar")
    compiled = compile_frames(robot, list(robot.frames))
    closed = gtdyn.close_loops(robot, {"j1": 0.3, "j2": -0.2}, {"j1": 0.5, "j2": 0.1})
    state = {"q": closed.q, "v": closed.v}
    ours, theirs = compiled_answers(compiled, state), reference_answers(robot, compiled.frames, "local", state)
    assert max(error(ours[name], x) for name, x in theirs.items()) < TOL
    assert error(np.einsum("kij,j->ki", ours["jacobian"], closed.v), ours["velocity"]) < TOL


def test_calls_from_other_threads():
    robot = gtdyn.load_robot("puma560")
    compiled = compile_frames(robot, ["link3", "flange"])
    states = random_states(robot, 4, seed=5)
    want = [compiled.jacobian(s["q"]) for s in states]
    got = [None] * len(states)

    def work(k: int) -> None:
        got[k] = compiled.jacobian(states[k]["q"])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(states))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(np.array_equal(a, b) for a, b in zip(got, want))


def test_a_call_from_another_thread_first_leaves_the_owner_its_quick_call():
    """Another thread's call before the owner's takes the Python path on a workspace of its own and binds nothing;
    the owner's first call then binds the native entry, and both give the same answer."""
    robot = gtdyn.load_robot("puma560")
    compiled = compile_frames(robot, "flange")
    q = random_states(robot, 1, seed=6)[0]["q"]
    got = []
    worker = threading.Thread(target=lambda: got.append(compiled.placement_jacobian(q)))
    worker.start()
    worker.join()
    assert "placement_jacobian" not in compiled._calls
    mine = compiled.placement_jacobian(q)
    assert "placement_jacobian" in compiled._calls
    assert all(np.array_equal(a, b) for a, b in zip(got[0], mine))
    reference = gtdyn.frame_placement(robot, q, "flange").matrix()
    assert np.max(np.abs(mine[0] - reference)) < TOL


def test_the_readme_example_runs():
    text = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S) if "gtdyn.compile_frames(" in b]
    exec(compile(block, "README.md", "exec"), {})


# -- arguments ----------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def puma():
    robot = gtdyn.load_robot("puma560")
    return robot, compile_frames(robot, "flange"), compile_frames(robot, "flange", reference="world_aligned")


def raised(call) -> tuple[type, str]:
    with pytest.raises(gtdyn.ArgumentError) as caught:
        call()
    return type(caught.value), str(caught.value)


z, nan = np.zeros(6), np.array([0.0, 0.0, np.nan, 0.0, 0.0, 0.0])


@pytest.mark.parametrize("ours, theirs", [
    (lambda c, r: c.placement(z[:5]), lambda r: frame_placement(r, z[:5], "flange")),
    (lambda c, r: c.placement(nan), lambda r: frame_placement(r, nan, "flange")),
    (lambda c, r: c.jacobian(z + 1j), lambda r: frame_jacobian(r, z + 1j, "flange")),
    (lambda c, r: c.jacobian(z, base_pose=np.eye(4)), lambda r: frame_jacobian(r, z, "flange", base_pose=np.eye(4))),
    (lambda c, r: c.velocity(z, nan), lambda r: frame_velocity(r, z, nan, "flange")),
    (lambda c, r: c.velocity(z, [0.0] * 7), lambda r: frame_velocity(r, z, [0.0] * 7, "flange")),
    (lambda c, r: c.bias_acceleration(z, z, base_twist=z), lambda r: frame_bias_acceleration(r, z, z, "flange",
                                                                                            base_twist=z)),
    (lambda c, r: compile_frames(r, "hand"), lambda r: frame_placement(r, z, "hand")),
    (lambda c, r: compile_frames(r, ["flange"], reference="world"),
     lambda r: frame_velocity(r, z, z, "flange", reference="world")),
    (lambda c, r: compile_frames("puma560", "flange"), lambda r: frame_placement("puma560", z, "flange")),
])
def test_bad_arguments_raise_the_reference_error(puma, ours, theirs):
    robot, compiled, _ = puma
    assert raised(lambda: ours(compiled, robot)) == raised(lambda: theirs(robot))


def test_bad_base_arguments_of_a_floating_robot_raise_the_reference_error():
    robot = gtdyn.load_robot("rrr", base="floating")
    frame, z = robot.link_names[-1], np.zeros(robot.num_dofs)
    compiled = compile_frames(robot, frame)
    for ours, theirs in [
        (lambda: compiled.placement(z, base_pose=2 * np.eye(4)),
         lambda: frame_placement(robot, z, frame, base_pose=2 * np.eye(4))),
        (lambda: compiled.jacobian(z, base_pose=np.full((4, 4), np.nan)),
         lambda: frame_jacobian(robot, z, frame, base_pose=np.full((4, 4), np.nan))),
        (lambda: compiled.velocity(z, z, base_twist=np.zeros(3)),
         lambda: frame_velocity(robot, z, z, frame, base_twist=np.zeros(3))),
        (lambda: compiled.bias_acceleration(z, z, base_twist=[0, 0, np.inf, 0, 0, 0]),
         lambda: frame_bias_acceleration(robot, z, z, frame, base_twist=[0, 0, np.inf, 0, 0, 0])),
    ]:
        assert raised(ours) == raised(theirs)
    T = np.eye(4)
    T[:3, 3] = [1.0, 2.0, 3.0]
    want = frame_placement(robot, z, frame, base_pose=T).matrix()
    assert error(compiled.placement(z, base_pose=gtsam.Pose3(T)), want) < TOL


def test_bad_batches_name_the_state(puma):
    robot, compiled, _ = puma
    Q = np.zeros((4, 6))
    Q[2, 1] = np.inf
    with pytest.raises(gtdyn.ArgumentError, match=r"Q\[2\]: non-finite values"):
        compiled.batch_jacobian(Q)
    with pytest.raises(gtdyn.ArgumentError, match=r"Q, V: expected 2 arrays of shape \(N, 6\)"):
        compiled.batch_velocity(np.zeros((4, 6)), np.zeros((3, 6)))
    with pytest.raises(gtdyn.ArgumentError, match="base_pose: robot 'puma560' has a fixed base"):
        compiled.batch_placement(np.zeros((1, 6)), base_pose=np.eye(4)[None])
    with pytest.raises(gtdyn.ArgumentError, match="threads: expected a whole number ≥ 1"):
        compiled.batch_placement(np.zeros((1, 6)), threads=0)
    floating = gtdyn.load_robot("rrr", base="floating")
    poses = np.array([np.eye(4)] * 3)
    poses[1, 0, 0] = 2.0
    with pytest.raises(gtdyn.ArgumentError, match=r"base_pose\[1\]: the 4×4 matrix is not a rigid transform"):
        compile_frames(floating, floating.link_names[-1]).batch_placement(np.zeros((3, floating.num_dofs)),
                                                                          base_pose=poses)


# -- a larger robot -----------------------------------------------------------------------------------------------

@pytest.mark.heavy
def test_talos_feet_and_hands_on_its_free_flyer():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*<mimic>", category=gtdyn.ModelWarning)
        robot = gtdyn.load_robot(erd_path("talos_data/robots/talos_full_v2.urdf"), base="floating",
                                 transmissions="independent")
    frames = ["left_sole_link", "right_sole_link", "gripper_left_base_link", "gripper_right_base_link", "torso_2_link"]
    states = random_states(robot, 3, seed=11)
    for rf in REFERENCES:
        compiled = compile_frames(robot, frames, reference=rf)
        for state in states:
            ours, theirs = compiled_answers(compiled, state), reference_answers(robot, frames, rf, state)
            assert max(error(ours[name], x) for name, x in theirs.items()) < TOL
