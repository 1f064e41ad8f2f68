"""Time loops in native code (issue 24, item 2; ``gtdyn.simulation.native_loop``): bit for bit the Python loop's
trajectories, the same errors where a step fails, and the Python loop wherever the native one does not apply."""

import threading

import numpy as np
import pytest
from references import erd_path

import gtdyn
from gtdyn.simulation import native_loop

SOLO12 = erd_path("solo_description/robots/solo12.urdf")

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


def test_every_sample_the_final_one_too_is_taken_natively(puma, monkeypatch):
    """A run that loops natively calls no solver from Python: the final sample, which takes no step, is recorded
    by the loop too (batches of short runs paid a Python call for it each)."""
    from gtdyn.compiled.solver import CompiledSolver

    gtdyn.simulate(puma, np.zeros(6), np.zeros(6), dt=1e-3, steps=3)  # compiled, and the loop
    called = []
    monkeypatch.setattr(CompiledSolver, "__call__", lambda *a, **k: called.append(a))
    for steps in (1, 5):
        run = gtdyn.simulate(puma, np.full(6, 0.2), np.zeros(6), tau=np.full(6, 0.1), dt=1e-3, steps=steps)
        assert not called and np.all(np.isfinite(run.qdd)) and run.qdd.shape == (steps + 1, 6)


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
    for kind, error in (("own", RuntimeError), ("nan", gtdyn.ArgumentError)):  # at the final sample alone, which
        messages = raised_both(error, puma, q0=np.zeros(6), v0=np.full(6, 0.1), tau=failing(kind),  # the loop
                               dt=1e-3, steps=20)  # records natively too
        assert messages[0] == messages[1] and "0.02" in messages[0][0], kind
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


@pytest.fixture(scope="module")
def solo():
    return gtdyn.load_robot(SOLO12, base="floating")


def floating_torques(robot, steps: int) -> dict:
    """Held, sampled, a PD controller evaluated in the loop and a Python controller called back."""
    n = robot.num_dofs
    rng = np.random.default_rng(2)
    target = rng.uniform(-0.3, 0.3, n)
    return {"none": None, "vector": np.full(n, 0.02), "rows": 0.02 * rng.normal(size=(steps, n)),
            "pd": gtdyn.PDController(robot, 0.5, 0.05, target),
            "callable": lambda t, q, v: 0.5 * (target - q) - 0.05 * v}


@pytest.mark.parametrize("method", native_loop.METHODS)
@pytest.mark.parametrize("torque", ["none", "vector", "rows", "pd", "callable"])
def test_a_floating_base_loops_natively_bit_for_bit(solo, method, torque):
    """Solo-12 on its free base, tumbling and falling: the native loop moves the base's pose as the Python
    stepper does (one compiled T · exp ξ and dlog(−ξ) V for both), so every sample — joints, torques, the base's
    pose, twist and acceleration — is the same bits."""
    rng = np.random.default_rng(1)
    q0, v0 = rng.uniform(-0.3, 0.3, (2, 12))
    native, python, ran = both(solo, q0=q0, v0=v0, tau=floating_torques(solo, 200)[torque], dt=1e-3, steps=200,
                               method=method, base_twist=[0.4, -0.2, 0.3, 0.1, 0.0, 0.2])
    assert ran
    for field in ("q", "v", "qdd", "tau", "base_pose", "base_twist", "base_accel"):
        assert np.array_equal(getattr(native, field), getattr(python, field)), field
    assert not np.array_equal(native.base_pose[0], native.base_pose[-1])


@pytest.mark.parametrize("method", ["semi_implicit_euler", "rk4"])
def test_a_floating_base_hands_steps_to_the_python_stepper_and_back(solo, monkeypatch, method):
    """Where the native loop stops (a step whose evaluation does not pass: here steps 5 and 131, forced), the
    Python stepper takes the step, leaving ξ ≠ 0 about the pose it moved, and the native loop goes on from there:
    the same bits as the Python loop throughout, across chunks (``CHUNK`` = 50)."""
    original = native_loop.run
    stops = []

    def stopping(plan, n, method, source, first, end, *shape):
        for stop in (5, 131):
            if first <= stop < end:
                stops.append(stop)
                return original(plan, n, method, source, first, stop, *shape)  # stops before it
        return original(plan, n, method, source, first, end, *shape)

    monkeypatch.setattr(native_loop, "run", stopping)
    monkeypatch.setattr(native_loop, "CHUNK", 50)
    rng = np.random.default_rng(5)
    q0, v0 = rng.uniform(-0.3, 0.3, (2, 12))
    native, python, ran = both(solo, q0=q0, v0=v0, dt=1e-3, steps=200, base_twist=[0.5, 0.1, -0.3, 0.2, 0.1, 0.0],
                               method=method)
    assert ran and stops == [5, 131]
    for field in ("q", "v", "qdd", "base_pose", "base_twist", "base_accel"):
        assert np.array_equal(getattr(native, field), getattr(python, field)), field


def test_a_floating_base_starting_at_rest_takes_the_sample_pose_at_every_stage(solo):
    """From rest without gravity and torque the base's ξ stays exactly zero, where the stepper uses the pose and
    the twist themselves (no exp, no dlog): RK4's later stages too, bit for bit, and the base does not move."""
    native, python, ran = both(solo, q0=np.zeros(12), v0=np.zeros(12), dt=1e-3, steps=20, method="rk4",
                               gravity=np.zeros(3))
    assert ran and np.array_equal(native.base_pose, python.base_pose)
    assert np.array_equal(native.base_pose[-1], np.eye(4)) and not native.base_twist.any()


def test_a_floating_base_falls_and_tumbles_as_pinocchios_loop(solo):
    """The native loop on Solo-12's free base against semi-implicit Euler written over Pinocchio (``pin.aba``, and
    ``pin.integrate``, whose free flyer moves by exp of the local twist as gtdyn's base does), under gravity and
    a small held torque (the legs still reach 8 rad/s): the same trajectory up to round-off."""
    from gtdyn.bench.pinocchio import FreeFlyerPinocchio

    ref = FreeFlyerPinocchio(SOLO12, solo)
    pin = ref.pin
    rng = np.random.default_rng(3)
    q0, v0, tau = rng.uniform(-0.3, 0.3, (3, 12)) * [[1], [1], [0.05]]
    start = gtdyn.spatial.pose(gtdyn.spatial.rpy_matrix(0.2, -0.1, 0.7), np.array([0.1, 0.0, 0.4])).matrix()
    twist, dt, steps = np.array([0.3, -0.2, 0.5, 0.2, 0.1, -0.1]), 1e-3, 300
    run = gtdyn.simulate(solo, q0, v0, tau=tau, dt=dt, steps=steps, base_pose=start, base_twist=twist,
                         progress=False)
    q, v = ref.configuration(q0, start), ref.tangent(v0, twist)
    for _ in range(steps):
        v = v + dt * pin.aba(ref.model, ref.data, q, v, ref.tangent(tau))
        q = pin.integrate(ref.model, q, dt * v)
    # the two libraries round differently at each of 300 steps (measured: 1e-15 on the pose and joints, 1.3e-14 on
    # velocities of 8 rad/s); 1e-13 of the scale stays far below a step's own error (Δt² ≈ 1e-6), so a wrong pose
    # update, frame or integrator order fails
    assert np.allclose(run.base_pose[-1], pin.XYZQUATToSE3(q[:7]).homogeneous, rtol=0, atol=1e-13)
    assert np.allclose(run.q[-1], q[[i for i, _ in ref.idx_q]], rtol=0, atol=1e-13)
    scale = np.max(np.abs(v))
    assert np.allclose(run.v[-1], ref.joint_order(v), rtol=0, atol=1e-13 * scale)
    assert np.allclose(run.base_twist[-1], ref.base_part(v), rtol=0, atol=1e-13 * scale)


def test_rigid_contacts_loop_natively_bit_for_bit(solo):
    """Solo-12 standing on its four feet (a PD holding a bent stance, and RK4 from a nudged one): the native loop
    calls the constrained solver behind the contacts and records each sample's contact forces, the same bits as the
    Python loop, hand-offs included (step 9, forced)."""
    feet = [gtdyn.Contact(name) for name in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")]
    stance = np.array([0.0, 0.8, -1.6] * 2 + [0.0, -0.8, 1.6] * 2)
    hold = gtdyn.PDController(solo, 5.0, 0.2, stance)
    original = native_loop.run

    def stopping(plan, n, method, source, first, end, *shape):
        if first <= 9 < end:
            return original(plan, n, method, source, first, 9, *shape)
        return original(plan, n, method, source, first, end, *shape)

    fields = ("q", "v", "qdd", "tau", "base_pose", "base_twist", "base_accel", "contact_forces")
    for method, q0, tau in (("semi_implicit_euler", stance, hold), ("rk4", stance + 0.05, None)):
        native_loop.run = stopping
        try:
            native, python, ran = both(solo, q0=q0, v0=np.zeros(12), tau=tau, dt=1e-3, steps=60, method=method,
                                       contacts=feet)
        finally:
            native_loop.run = original
        assert ran
        for field in fields:
            assert np.array_equal(getattr(native, field), getattr(python, field)), (method, field)
        assert np.isfinite(native.contact_forces).all() and native.contact_forces.any()


@pytest.mark.parametrize("checks", [True, False])
def test_straight_legs_loop_on_the_solvers_twin_bit_for_bit(solo, checks):
    """Solo-12 standing on straight legs (q = 0, a PD holding it: gravity keeps them straight): the contact
    solver's pivots vanish there, and its twin (``gtdyn.compiled.rescue``) answers — in the native loop as in the
    Python loop, the same bits — so no step goes to the reference path."""
    from gtdyn.equations import GRAVITY
    from gtdyn.simulation.solvers import forward_solver

    feet = [gtdyn.Contact(name) for name in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")]
    solver = forward_solver(solo, GRAVITY, checks, contacts=feet)  # the runs' own, remembered
    native, python, ran = both(solo, q0=np.zeros(12), v0=np.zeros(12), tau=gtdyn.PDController(solo, 5.0, 0.2,
                               np.zeros(12)), dt=1e-3, steps=60, contacts=feet, checks=checks)
    assert ran
    for field in ("q", "v", "qdd", "tau", "base_pose", "base_twist", "base_accel", "contact_forces"):
        assert np.array_equal(getattr(native, field), getattr(python, field)), field
    assert solver.rescues >= 60 and solver.fallbacks == 0
    assert np.abs(native.q).max() < 1e-4 and np.isfinite(native.contact_forces).all()


@pytest.mark.parametrize("method", ["semi_implicit_euler", "rk4"])
def test_external_wrenches_loop_natively_bit_for_bit(puma, method):
    """A wrench held on the PUMA's third link over the run (local and world-aligned axes), under a PD: its values
    written once into the solver's inputs, the same bits as the Python loop; simulate_batch's lanes too."""
    hold = gtdyn.PDController(puma, 0.02, 0.002, np.full(6, 0.2))  # gentle: the wrist's inertia is small
    for axes in ("local", "world_aligned"):
        kw = dict(tau=hold, dt=1e-3, steps=80, method=method, wrench_axes=axes,
                  external_wrenches={"link3": [0.002, 0.0, -0.004, 0.02, 0.04, 0.01]})
        native, python, ran = both(puma, q0=np.full(6, 0.1), v0=np.zeros(6), **kw)
        assert ran
        for field in ("q", "v", "qdd", "tau"):
            assert np.array_equal(getattr(native, field), getattr(python, field)), (axes, field)
        free = gtdyn.simulate(puma, np.full(6, 0.1), np.zeros(6), tau=hold, dt=1e-3, steps=80, method=method,
                              progress=False)
        assert not np.array_equal(free.q, native.q)  # the wrench acts
    Q0 = 0.1 + 0.05 * np.random.default_rng(3).normal(size=(4, 6))
    batch = gtdyn.simulate_batch(puma, Q0, np.zeros((4, 6)), lanes=True, **kw)
    for k in range(4):
        alone = gtdyn.simulate(puma, Q0[k], np.zeros(6), progress=False, **kw)
        assert np.array_equal(batch.q[k], alone.q) and np.array_equal(batch.qdd[k], alone.qdd)
