"""Time loops in native code (issue 24, item 2; ``gtdyn.simulation.native_loop``): bit for bit the Python loop's
trajectories, the same errors where a step fails, and the Python loop wherever the native one does not apply."""

import threading

import numpy as np
import pytest

import gtdyn
from gtdyn.arguments.series import HeldTorques
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


def test_a_step_that_fails_raises_as_the_python_loop_does(puma):
    """Constant torques spin the wrist up until an angle passes 1e6 rad: the native loop stops before that step,
    the Python stepper takes it and raises the boundary's error with the run's note."""
    messages = []
    for native in (True, False):
        applies = native_loop.applies
        if not native:
            native_loop.applies = lambda *a, **k: False
        try:
            with pytest.raises(gtdyn.ArgumentError) as error:
                gtdyn.simulate(puma, np.zeros(6), np.zeros(6), tau=np.full(6, 0.3), dt=1e-3, steps=2000,
                               gravity=np.zeros(3), progress=False)
        finally:
            native_loop.applies = applies
        messages.append((str(error.value), error.value.__notes__))
    assert messages[0] == messages[1] and "at t = " in messages[0][1][0]


def test_controllers_loops_and_other_threads_keep_the_python_loop(puma):
    def damping(t, q, v):
        return -0.01 * v

    _, _, ran = both(puma, q0=np.full(6, 0.1), v0=np.zeros(6), tau=damping, dt=1e-3, steps=20)
    assert not ran  # a Python callable: the Python loop
    four_bar = gtdyn.load_robot(gtdyn.bundled_path("four_bar"))
    solver = gtdyn.compile(four_bar, "forward")
    assert not native_loop.applies(four_bar, "semi_implicit_euler", HeldTorques(np.zeros((1, 4))), solver)
    puma_solver = gtdyn.compile(puma, "forward")
    assert native_loop.applies(puma, "rk4", HeldTorques(np.zeros((1, 6))), puma_solver)
    assert not native_loop.applies(puma, "trapezoidal", HeldTorques(np.zeros((1, 6))), puma_solver)
    seen = []
    thread = threading.Thread(target=lambda: seen.append(
        native_loop.applies(puma, "rk4", HeldTorques(np.zeros((1, 6))), puma_solver)))
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
