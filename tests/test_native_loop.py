"""Time loops in native code (issue 24, item 2; ``gtdyn.simulation.native_loop``): bit for bit the Python loop's
trajectories, the same errors where a step fails, and the Python loop wherever the native one does not apply."""

import threading

import numpy as np
import pytest

import gtdyn
from gtdyn.simulation import native_loop

pytestmark = [pytest.mark.usefixtures("private_cache"),
              pytest.mark.filterwarnings("ignore::gtdyn.JointLimitWarning")]  # the runs leave PUMA's limits


def both(robot, **kw):
    """The run through the native loop, then the same run through the Python loop (and whether the native one
    ran)."""
    ran = []
    original_run = native_loop.run_loop

    def counted(*args, **kwargs):
        ran.append(True)
        return original_run(*args, **kwargs)

    try:
        native_loop.run_loop = counted
        native = gtdyn.simulate(robot, progress=False, **kw)
        native_loop.applies, applies = (lambda *a, **k: False), native_loop.applies
        try:
            python = gtdyn.simulate(robot, progress=False, **kw)
        finally:
            native_loop.applies = applies
    finally:
        native_loop.run_loop = original_run
    return native, python, bool(ran)


@pytest.mark.parametrize("method", native_loop.METHODS)
@pytest.mark.parametrize("torque", ["none", "vector", "rows"])
def test_the_native_loop_is_bit_for_bit_the_python_loop(puma, method, torque):
    rng = np.random.default_rng(0)
    q0, v0 = rng.uniform(-0.5, 0.5, (2, 6))
    tau = {"none": None, "vector": np.full(6, 0.01), "rows": 0.01 * rng.normal(size=(300, 6))}[torque]
    native, python, ran = both(puma, q0=q0, v0=v0, tau=tau, dt=1e-3, steps=300, method=method)
    assert ran
    for field in ("q", "v", "qdd", "tau", "t"):
        assert np.array_equal(getattr(native, field), getattr(python, field)), field


def test_unchecked_runs_and_gravity_loop_natively_too(puma):
    q0 = np.array([0.1, -0.3, 0.2, 0.0, 0.4, -0.1])
    native, python, ran = both(puma, q0=q0, v0=np.zeros(6), dt=1e-3, steps=200, checks=False)
    assert ran and np.array_equal(native.q, python.q) and np.array_equal(native.qdd, python.qdd)


def raised_both(error, robot, **kw) -> list:
    """What a run raises (an ``error``) through the native loop, then through the Python loop: (message, notes)."""
    messages = []
    for native in (True, False):
        applies = native_loop.applies
        if not native:
            native_loop.applies = lambda *a, **k: False
        try:
            with pytest.raises(error) as raised:
                gtdyn.simulate(robot, progress=False, **kw)
        finally:
            native_loop.applies = applies
        messages.append((str(raised.value), getattr(raised.value, "__notes__", None)))
    return messages


def test_a_step_that_fails_raises_as_the_python_loop_does(puma):
    """Constant torques spin the wrist up until an angle passes 1e6 rad: the native loop stops before that step,
    the Python stepper takes it and raises the boundary's error with the run's note."""
    messages = raised_both(gtdyn.ArgumentError, puma, q0=np.zeros(6), v0=np.zeros(6), tau=np.full(6, 0.3), dt=1e-3,
                           steps=2000, gravity=np.zeros(3))
    assert messages[0] == messages[1] and "at t = " in messages[0][1][0]


@pytest.mark.parametrize("method", native_loop.METHODS)
def test_a_python_controller_is_called_back_bit_for_bit(puma, method):
    """A Python controller runs in the native loop, called back at each stage: the same trajectory bit for bit
    as the Python loop's, the controller asked as often, at the same times, with the same states."""
    asked = []
    target = np.linspace(-0.3, 0.3, 6)

    def controller(t, q, v):
        asked.append(np.concatenate([[t], q, v]))
        tau = 0.02 * (target - q) - 0.002 * v + 0.01 * np.sin(t)  # gentle: the wrist's inertia is small
        q[:] = 7.0  # its own copies: what it does to them changes nothing
        return tau

    native, python, ran = both(puma, q0=np.full(6, 0.1), v0=np.zeros(6), tau=controller, dt=1e-3, steps=50,
                               method=method)
    assert ran and len(asked) % 2 == 0
    assert np.array_equal(asked[:len(asked) // 2], asked[len(asked) // 2:])
    for field in ("q", "v", "qdd", "tau", "t"):
        assert np.array_equal(getattr(native, field), getattr(python, field)), field


def test_a_python_controller_that_raises_raises_as_in_the_python_loop(puma):
    """A controller that fails at t = 0.02 s (an error of its own, a torque of the wrong size, or one not finite:
    a float vector, which the native loop checks itself, or a list, which Python converts first), checked or
    not: the native loop stops before that step and the Python stepper raises the same error with the run's
    note; an interruption is raised as it is."""
    def failing(kind):
        def controller(t, q, v):
            if t >= 0.02:
                if kind == "interrupt":
                    raise KeyboardInterrupt
                if kind == "size":
                    return np.zeros(5)
                if kind == "nan":
                    return np.array([0.0, 0.0, np.nan, 0.0, 0.0, 0.0])
                if kind == "inf list":
                    return [0.0, 0.0, 0.0, 0.0, 0.0, -np.inf]
                raise RuntimeError(f"sensor lost at {t:.3f}")
            return -0.1 * v
        return controller

    for kind, error in (("own", RuntimeError), ("size", gtdyn.ArgumentError), ("nan", gtdyn.ArgumentError),
                        ("inf list", gtdyn.ArgumentError)):
        for checks in (True, False):
            messages = raised_both(error, puma, q0=np.zeros(6), v0=np.full(6, 0.1), tau=failing(kind), dt=1e-3,
                                   steps=100, method="rk4", checks=checks)
            assert messages[0] == messages[1] and "0.02" in messages[0][0], (kind, checks)
            if kind in ("nan", "inf list"):
                assert "non-finite values" in messages[0][0]
    with pytest.raises(KeyboardInterrupt):
        gtdyn.simulate(puma, np.zeros(6), np.full(6, 0.1), tau=failing("interrupt"), dt=1e-3, steps=100,
                       progress=False)


def test_loops_and_other_threads_keep_the_python_loop(puma):
    four_bar = gtdyn.load_robot(gtdyn.bundled_path("four_bar"))
    solver = gtdyn.compile(four_bar, "forward")
    assert not native_loop.applies(four_bar, "semi_implicit_euler", solver)
    puma_solver = gtdyn.compile(puma, "forward")
    assert native_loop.applies(puma, "rk4", puma_solver)
    assert not native_loop.applies(puma, "trapezoidal", puma_solver)
    seen = []
    thread = threading.Thread(target=lambda: seen.append(
        native_loop.applies(puma, "rk4", puma_solver)))
    thread.start()
    thread.join()
    assert seen == [False]  # another thread: not the solver's workspace


def test_runs_remember_their_solver_per_thread_and_setting(puma):
    """A short run does not reload its solver from the cache: the plain forward solver is remembered, per thread
    (its workspace is that thread's) and per gravity and checks."""
    from gtdyn.simulation.solvers import forward_solver

    gravity = np.array([0.0, 0.0, -9.81])
    first = forward_solver(puma, gravity)
    assert forward_solver(puma, gravity) is first
    assert forward_solver(puma, gravity, checks=False) is not first
    assert forward_solver(puma, np.zeros(3)) is not first
    other = []
    thread = threading.Thread(target=lambda: other.append(forward_solver(puma, gravity)))
    thread.start()
    thread.join()
    assert other[0] is not first and np.array_equal(other[0](np.zeros(6), np.zeros(6), np.zeros(6)),
                                                    first(np.zeros(6), np.zeros(6), np.zeros(6)))
