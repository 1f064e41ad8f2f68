"""The call's one native entry (issue 24, item 1; ``gtdyn.compiled.entry``): for plain float64 arrays it gives
bit for bit what the checked Python path gives, and everything it cannot check completely it hands back to that
path, so answers, warnings and errors stay as they were."""

import threading

import gtsam
import numpy as np
import pytest
from references import closed_state, random_base

import gtdyn
from gtdyn.errors import ArgumentError

pytestmark = pytest.mark.usefixtures("private_cache")

NO_BASE = (None, None, None, None)


@pytest.fixture(scope="module")
def quadruped():
    return gtdyn.load_robot(gtdyn.bundled_path("quadruped"), base="floating")


def state(n, seed=0):
    return np.random.default_rng(seed).uniform(-0.5, 0.5, (3, n))


def as_lists(*arrays):
    """The same numbers as lists: the entry refuses them, so the solver converts them on its Python path."""
    return [None if a is None else a.tolist() for a in arrays]


def assert_same(a, b):
    if isinstance(a, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert np.array_equal(x, y)
    else:
        assert np.array_equal(a, b)


@pytest.mark.parametrize("problem", ["inverse", "forward"])
def test_a_fixed_base_call_takes_the_entry_and_answers_as_the_python_path(puma, problem):
    solver = gtdyn.compile(puma, problem)
    q, v, x = state(6)
    out = np.empty(6)
    assert solver._quick.call(q, v, x, *NO_BASE, out)
    assert_same(solver(q, v, x), solver(*as_lists(q, v, x)))
    assert np.array_equal(out, solver(*as_lists(q, v, x)))
    assert solver.fallbacks == 0 and np.isfinite(solver.condition)


@pytest.mark.parametrize("problem", ["inverse", "forward"])
def test_a_floating_base_call_takes_the_entry_with_its_base_inputs(quadruped, problem):
    solver = gtdyn.compile(quadruped, problem)
    q, v, x = state(12)
    pose, twist, given = random_base(np.random.default_rng(1))
    arguments = (pose, twist, given, None) if problem == "inverse" else (pose, twist, None, given)
    names = ("base_pose", "base_twist", "base_accel", "base_wrench")
    out = np.empty(solver._outputs)
    assert solver._quick.call(q, v, x, *arguments, out)
    quick = solver(q, v, x, **dict(zip(names, arguments)))
    slow = solver(*as_lists(q, v, x), **dict(zip(names, as_lists(*arguments))))
    assert_same(quick, slow)
    assert np.array_equal(np.concatenate(quick), out)


@pytest.mark.parametrize("problem", ["inverse", "forward"])
def test_a_floating_base_left_at_its_defaults_takes_the_entry_too(quadruped, problem, monkeypatch):
    """A base input not given (identity pose, zero twist, zero given acceleration or wrench) reaches the entry as
    those values, and a pose as a ``gtsam.Pose3`` or a column-major matrix in C order, not the Python path (it
    took 1.6-2.1 µs more; forward calls with a pose and a twist but no wrench, and every step of a floating
    base's simulation, took it): the same answers as giving them, and as the Python path."""
    solver = gtdyn.compile(quadruped, problem)
    q, v, x = state(12, seed=2)
    pose, twist, _ = random_base(np.random.default_rng(3))
    given = "base_accel" if problem == "inverse" else "base_wrench"
    explicit = {"base_pose": np.eye(4), "base_twist": np.zeros(6), given: np.zeros(6)}
    want = solver(*as_lists(q, v, x))
    monkeypatch.setattr(solver, "_written", None)  # the Python path: not taken
    assert_same(solver(q, v, x), want)
    assert_same(solver(q, v, x, **explicit), want)
    assert_same(solver(q, v, x, base_pose=pose, base_twist=twist),
                solver(q, v, x, base_pose=pose, base_twist=twist, **{given: np.zeros(6)}))
    # a gtsam.Pose3, and the column-major matrix it gives, as the C-ordered pose (the simulator passes the latter)
    for same_pose in (gtsam.Pose3(pose), gtsam.Pose3(pose).matrix(), np.asfortranarray(pose)):
        assert_same(solver(q, v, x, base_pose=same_pose, base_twist=twist), solver(q, v, x, base_pose=pose,
                                                                                    base_twist=twist))
    monkeypatch.undo()
    assert_same(solver(q, v, x, base_pose=pose, base_twist=twist),
                solver(*as_lists(q, v, x), base_pose=pose.tolist(), base_twist=twist.tolist()))
    assert solver.fallbacks == 0


def test_derivatives_take_the_entry_and_answer_as_the_python_path(puma):
    solver = gtdyn.compile(puma, "forward", derivatives=True)
    q, v, x = state(6)
    quick, slow = solver.derivatives(q, v, x), solver.derivatives(*as_lists(q, v, x))
    for a, b in zip(quick, slow):
        assert np.array_equal(a, b)
    assert quick.dx.shape == (6, 6) and quick.dx.flags.c_contiguous


def test_the_entry_hands_back_what_it_cannot_check(puma, quadruped):
    fixed = gtdyn.compile(puma, "inverse")
    q, v, x = state(6)
    call, out = fixed._quick.call, np.empty(6)
    long_q = np.repeat(q, 2)
    refused = {
        "a list": (q.tolist(), v, x, *NO_BASE, out),
        "float32": (q.astype(np.float32), v, x, *NO_BASE, out),
        "integers": (np.zeros(6, int), v, x, *NO_BASE, out),
        "a strided view": (long_q[::2], v, x, *NO_BASE, out),
        "a column": (q[:, None], v, x, *NO_BASE, out),
        "a wrong length": (q[:5], v, x, *NO_BASE, out),
        "big-endian": (q.astype(">f8"), v, x, *NO_BASE, out),
        "NaN (status 0: the reference path decides)": (np.full(6, np.nan), v, x, *NO_BASE, out),
        "a base pose on a fixed base": (q, v, x, np.eye(4), None, None, None, out),
        "a read-only output": (q, v, x, *NO_BASE, np.frombuffer(bytes(48))),
        "an output of the wrong length": (q, v, x, *NO_BASE, np.empty(7)),
        "too few arguments": (q, v, x),
    }
    for what, arguments in refused.items():
        assert not call(*arguments), what
    assert call(long_q[::2].copy(), v, x, *NO_BASE, out)  # the same numbers, contiguous: taken
    # and the solver still answers, warns and raises on them as before
    assert np.array_equal(fixed(q.astype(np.float32), v, x), fixed(q.astype(np.float32).astype(float), v, x))
    with pytest.raises(ArgumentError, match="q"):
        fixed(q[:5], v, x)
    with pytest.raises(ArgumentError):
        fixed(q, v, x, base_pose=np.eye(4))
    with pytest.raises(ArgumentError):
        fixed(np.full(6, np.nan), v, x)

    floating = gtdyn.compile(quadruped, "inverse")
    q, v, x = state(12)
    pose, twist, given = random_base(np.random.default_rng(1))
    out = np.empty(floating._outputs)
    for what, arguments in {
        "a flat pose": (q, v, x, pose.ravel(), twist, given, None, out),
        "a wrench in inverse dynamics": (q, v, x, pose, twist, given, given, out),
        "a pose that is not rigid (status 0)": (q, v, x, 2 * pose, twist, given, None, out),
    }.items():
        assert not floating._quick.call(*arguments), what


def test_the_entry_fills_in_a_floating_bases_defaults(quadruped):
    """A floating base's pose, twist and given quantity not given are the identity and zeros, filled in by the
    native entry (no Python in between): the same bits as passing them, and as the Python path's defaults."""
    floating = gtdyn.compile(quadruped, "inverse")
    q, v, x = state(12)
    pose, twist, given = random_base(np.random.default_rng(1))
    out, explicit = np.empty(floating._outputs), np.empty(floating._outputs)
    for defaults in ((None, twist, given), (pose, None, given), (pose, twist, None), (None, None, None)):
        spelled = [np.eye(4) if defaults[0] is None else pose] + [np.zeros(6) if d is None else d for d in defaults[1:]]
        assert floating._quick.call(q, v, x, *defaults, None, out)
        assert floating._quick.call(q, v, x, *spelled, None, explicit)
        assert np.array_equal(out, explicit)
        through_python = floating(q.tolist(), v, x, *defaults)  # a list: the Python path writes the defaults
        assert np.array_equal(np.concatenate(through_python), out)
    expected = [np.concatenate(floating(q, v, x, np.eye(4))), np.concatenate(floating(q, v, x, pose))]
    floating._main = lambda pointer: pytest.fail("the Python path ran")  # natively, defaults and a Pose3 converted
    assert np.array_equal(np.concatenate(floating(q, v, x)), expected[0])
    assert np.array_equal(np.concatenate(floating(q, v, x, gtsam.Pose3(pose))), expected[1])
    assert np.array_equal(np.concatenate(floating(q, v, x, np.asfortranarray(pose))), expected[1])


def test_an_output_of_any_shape_need_only_hold_its_count_of_doubles(puma):
    """Compiled frames write each part of the answer straight into an array of the shape they return (any shape,
    its count of doubles checked): C float64 arrays of that count are taken whatever their shape; another count,
    a strided view, a read-only array or another type are refused, and the call takes its Python path."""
    frames = gtdyn.compile_frames(puma, [puma.links[-1].name, puma.links[2].name])
    q = state(6)[0]
    expected = frames.placement_jacobian(q)  # binds the entry
    call = frames._quick["placement_jacobian"].entry.call
    T, J = np.empty((2, 4, 4)), np.empty((2, 6, 6))
    assert call(q, None, None, None, T, J) and np.array_equal(T, expected[0]) and np.array_equal(J, expected[1])
    assert call(q, None, None, None, np.empty(32), np.empty((12, 6)))  # the same doubles, other shapes
    for what, wrong in {"a count short": np.empty((2, 4, 3)), "a count over": np.empty(33),
                        "a strided view": np.empty((2, 4, 8))[:, :, ::2], "float32": np.empty((2, 4, 4), np.float32),
                        "read-only": np.frombuffer(bytes(256)).reshape(2, 4, 4)}.items():
        assert not call(q, None, None, None, wrong, J), what
    assert all(np.array_equal(a, b) for a, b in zip(frames.placement_jacobian(q.tolist()), expected))


def test_a_passive_joint_given_a_torque_goes_to_the_boundarys_error():
    robot = gtdyn.load_robot(gtdyn.bundled_path("four_bar"))
    solver = gtdyn.compile(robot, "forward")
    q, v, tau = closed_state(robot, ["j1"], seed=3)
    out = np.empty(4)
    assert solver._quick.call(q, v, tau, *NO_BASE, out)
    assert np.array_equal(out, solver(*as_lists(q, v, tau)))
    tau[1] = 0.5  # j2 is passive
    assert not solver._quick.call(q, v, tau, *NO_BASE, out)
    with pytest.raises(ArgumentError, match="j2"):
        solver(q, v, tau)


def test_calls_from_another_thread_answer_the_same(puma):
    solver = gtdyn.compile(puma, "forward")
    q, v, x = state(6)
    answers = []
    thread = threading.Thread(target=lambda: answers.append(solver(q, v, x)))
    thread.start()
    thread.join()
    assert np.array_equal(answers[0], solver(q, v, x))
