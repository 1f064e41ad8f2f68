"""``gtdyn.PDController``: a controller building block that the native time loop evaluates itself. Bit for bit
the Python stepper's trajectories (the controller wrapped in a lambda, which only the Python loop can run), the
law checked on a one-joint pendulum against its damped-oscillator solution and against each method's own
recursion written out by hand, the zero-order hold of sampled references at RK4's stages, the argument errors,
and the Python steppers taking it on floating bases and closed loops."""

import numpy as np
import pytest

import gtdyn
from gtdyn.simulation import native_loop

pytestmark = [pytest.mark.usefixtures("private_cache"),
              pytest.mark.filterwarnings("ignore::gtdyn.JointLimitWarning")]

# One link on a revolute z joint: mass 2 kg with its centre of mass 0.5 m out along x and 0.2 kg·m² about it, so
# 0.2 + 2·0.5² = 0.7 kg·m² about the joint (parallel axes). Without gravity its dynamics is I q̈ = τ.
PENDULUM = """<robot name="pendulum">
  <link name="base"/>
  <joint name="j" type="revolute">
    <parent link="base"/><child link="arm"/><origin xyz="0 0 0" rpy="0 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-10" upper="10" effort="100" velocity="100"/>
  </joint>
  <link name="arm">
    <inertial><origin xyz="0.5 0 0" rpy="0 0 0"/><mass value="2.0"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.2"/></inertial>
  </link>
</robot>"""
INERTIA = 0.2 + 2.0 * 0.5 ** 2


@pytest.fixture(scope="module")
def pendulum(tmp_path_factory):
    path = tmp_path_factory.mktemp("pendulum") / "pendulum.urdf"
    path.write_text(PENDULUM)
    return gtdyn.load_robot(str(path))


def runs(robot, controller, **kw):
    """The run with ``controller`` (through the native loop where it applies), the same run with it wrapped in a
    lambda through the Python stepper (the native loop refused), and whether the native loop ran each."""
    ran = []
    original, applies = native_loop.run_loop, native_loop.applies

    def counted(*args, **kwargs):
        ran.append(True)
        return original(*args, **kwargs)

    native_loop.run_loop = counted
    try:
        native = gtdyn.simulate(robot, tau=controller, progress=False, **kw)
        used = bool(ran)
        native_loop.applies = lambda *a, **k: False
        python = gtdyn.simulate(robot, tau=lambda t, q, v: controller(t, q, v), progress=False, **kw)
    finally:
        native_loop.run_loop, native_loop.applies = original, applies
    return native, python, used, len(ran) > used


def tracking(robot, steps: int, dt: float, seed: int = 0):
    """A PD around a smooth reference (sampled at the run's knots) with its velocity and a feedforward, gains
    for 20 rad/s and damping 0.7 on each joint's own inertia at q = 0; and a start near it."""
    n = robot.num_dofs
    rng = np.random.default_rng(seed)
    t = dt * np.arange(steps + 1)
    frequency, amplitude, q0 = rng.uniform(1, 4, n), rng.uniform(0.1, 0.4, n), rng.uniform(-0.5, 0.5, n)
    q_ref = q0 + amplitude * np.sin(np.outer(t, frequency))
    v_ref = amplitude * frequency * np.cos(np.outer(t, frequency))
    inertia = np.diag(gtdyn.mass_matrix(robot, np.zeros(n)))
    tau_ff = 0.01 * rng.normal(size=(steps + 1, n))
    controller = gtdyn.PDController(robot, 400 * inertia, 28 * inertia, q_ref, v_ref, tau_ff, dt=dt)
    return controller, q0 + 0.05, np.zeros(n)


@pytest.mark.parametrize("method", native_loop.METHODS)
def test_native_pd_tracking_is_bit_for_bit_the_python_stepper(puma, method):
    steps, dt = 400, 1e-3
    controller, q0, v0 = tracking(puma, steps, dt)
    native, python, used, python_used = runs(puma, controller, q0=q0, v0=v0, dt=dt, steps=steps, method=method)
    assert used and not python_used
    for field in ("t", "q", "v", "qdd", "tau"):
        assert np.array_equal(getattr(native, field), getattr(python, field)), field
    # the run tracks its reference (starting 0.05 rad off), where the same start without torque falls 1.4 rad away
    free = gtdyn.simulate(puma, q0, v0, dt=dt, steps=steps, method=method, progress=False)
    assert np.max(np.abs(native.q - controller.q_rows)) < 0.15 < np.max(np.abs(free.q - controller.q_rows))


def test_held_references_scalar_gains_and_a_passive_joint_loop_natively_too(puma):
    """Constant references, one gain for all joints, and the PUMA with its wrist roll passive (its torque 0)."""
    robot = puma.with_actuated(puma.joint_names[:5])
    controller = gtdyn.PDController(robot, 0.5, 0.05, np.full(6, 0.2), tau_ff=np.full(6, 0.01))
    native, python, used, _ = runs(robot, controller, q0=np.zeros(6), v0=np.full(6, 0.1), dt=1e-3, steps=200,
                                   method="rk4")
    assert used
    for field in ("q", "v", "qdd", "tau"):
        assert np.array_equal(getattr(native, field), getattr(python, field)), field
    assert np.all(native.tau[:, 5] == 0.0) and np.all(native.tau[:, :5] != 0.0)


def hand_recursion(method: str, kp, kd, q_ref, v_ref, tau_ff, q, v, h, steps, last_stage_row=1):
    """The pendulum's I q̈ = ff + kp (q_ref − q) + kd (v_ref − q̇) stepped by ``method``, written out for one
    joint; RK4's stages read row k, k, k and k + ``last_stage_row``."""
    def accel(j, q_, v_):
        return (tau_ff[j] + kp * (q_ref[j] - q_) + kd * (v_ref[j] - v_)) / INERTIA

    out = [q]
    for k in range(steps):
        a1 = accel(k, q, v)
        if method == "euler":
            q, v = q + h * v, v + h * a1
        elif method == "semi_implicit_euler":
            v = v + h * a1
            q = q + h * v
        else:
            q2, v2 = q + h / 2 * v, v + h / 2 * a1
            a2 = accel(k, q2, v2)
            q3, v3 = q + h / 2 * v2, v + h / 2 * a2
            a3 = accel(k, q3, v3)
            q4, v4 = q + h * v3, v + h * a3
            a4 = accel(k + last_stage_row, q4, v4)
            q, v = q + h / 6 * (v + 2 * v2 + 2 * v3 + v4), v + h / 6 * (a1 + 2 * a2 + 2 * a3 + a4)
        out.append(q)
    return np.array(out)


@pytest.mark.parametrize("method", native_loop.METHODS)
def test_the_pendulum_follows_each_methods_recursion_written_by_hand(pendulum, method):
    """A sampled reference, velocity and feedforward on the pendulum: the run is the method's own recursion of
    I q̈ = ff + kp (q_ref − q) + kd (v_ref − q̇) with I = 0.7 kg·m² derived by hand, to round-off (the compiled
    solver's 1/I and the two evaluation orders may differ in the last bits, over 200 steps of a damped system;
    measured: 8e-17 at most, RK4 exactly). RK4 reads row k + 1 at its last stage (the hold at t_{k+1}); reading
    row k there would be 2e-3 off."""
    steps, h, kp, kd = 200, 1e-2, 7.0, 0.7
    t = h * np.arange(steps + 1)
    q_ref, v_ref, tau_ff = 0.3 * np.sin(2 * t), 0.6 * np.cos(2 * t), 0.05 * np.cos(3 * t)
    controller = gtdyn.PDController(pendulum, kp, kd, q_ref[:, None], v_ref[:, None], tau_ff[:, None], dt=h)
    run = gtdyn.simulate(pendulum, [0.4], [-0.2], tau=controller, dt=h, steps=steps, method=method, gravity=np.zeros(3),
                         progress=False)
    want = hand_recursion(method, kp, kd, q_ref, v_ref, tau_ff, 0.4, -0.2, h, steps)
    assert np.max(np.abs(run.q[:, 0] - want)) < 1e-13
    if method == "rk4":
        other = hand_recursion(method, kp, kd, q_ref, v_ref, tau_ff, 0.4, -0.2, h, steps, last_stage_row=0)
        assert np.max(np.abs(run.q[:, 0] - other)) > 1e-6


def test_the_pendulum_rings_down_as_the_damped_oscillator(pendulum):
    """Around a constant reference r, I ë = −kp e − kd ė for e = q − r: ω0² = kp/I = 10, 2ζω0 = kd/I = 1, so
    e(t) = e^{−ζω0 t} (e0 cos ωd t + (ė0 + ζω0 e0)/ωd sin ωd t), ωd = ω0 √(1 − ζ²). RK4 at h = 0.01 s misses
    it by its global error: the leading term of its local error on a linear system is (hλ)⁵/120 per step, with
    |λ| = ω0 here, so over N steps at most N (hω0)⁵/120 of the state's size (in units where ė/ω0 and e compare),
    doubled for the higher terms (measured: 9.7e-9 against a bound of 8.0e-8)."""
    kp, kd, r, e0, de0 = 7.0, 0.7, 0.3, 0.5, -0.2
    h, steps = 1e-2, 300
    w0 = np.sqrt(kp / INERTIA)
    zeta = kd / INERTIA / (2 * w0)
    wd = w0 * np.sqrt(1 - zeta ** 2)
    run = gtdyn.simulate(pendulum, [r + e0], [de0], tau=gtdyn.PDController(pendulum, kp, kd, [r]), dt=h, steps=steps,
                         method="rk4", gravity=np.zeros(3), progress=False)
    t = run.t
    decay, c, s = np.exp(-zeta * w0 * t), np.cos(wd * t), np.sin(wd * t)
    B = (de0 + zeta * w0 * e0) / wd
    e = decay * (e0 * c + B * s)
    de = decay * (-zeta * w0 * (e0 * c + B * s) + wd * (-e0 * s + B * c))
    bound = 2 * steps * (h * w0) ** 5 / 120 * np.hypot(e0, de0 / w0)
    error = max(np.max(np.abs(run.q[:, 0] - r - e)), np.max(np.abs(run.v[:, 0] - de)) / w0)
    assert error < bound, (error, bound)
    assert error > bound / 100  # the bound is RK4's error, not one far above it
    assert np.allclose(run.tau[:, 0], -kp * (run.q[:, 0] - r) - kd * run.v[:, 0], rtol=0, atol=1e-14)


def test_a_sampled_reference_is_held_from_knot_to_knot(pendulum):
    """The controller as a plain callable: row k at t_k = k·dt and at t_k + dt/2, row k + 1 at t_k + dt, the first
    row before the run and the last after it; the law, joint by joint, and tuples and lists taken for q and v."""
    dt, steps = 0.1, 30
    q_ref = np.arange(steps + 1.0)[:, None]
    controller = gtdyn.PDController(pendulum, 2.0, 0.5, q_ref, v_ref=-q_ref, tau_ff=10 * q_ref, dt=dt)
    for k in (0, 3, 7, 29):  # 0.1 · 3 = 0.30000000000000004 and 0.1 · 7 = 0.7000000000000001: rounded knots
        for t, row in ((dt * k, k), (dt * k + dt / 2, k), (dt * k + dt, k + 1)):
            assert controller(t, [1.5], (0.25,))[0] == 10 * row + 2.0 * (row - 1.5) + 0.5 * (-row - 0.25), (k, t)
    assert controller(-1.0, [0.0], [0.0])[0] == 0.0
    assert controller(1e9, [0.0], [0.0])[0] == 10 * steps + 2.0 * steps - 0.5 * steps


def test_bad_controller_arguments_are_named(puma):
    zeros = np.zeros(6)
    cases = [
        (dict(kp=np.ones(5), kd=1.0, q_ref=zeros), r"^kp: expected a number or a vector of 6"),
        (dict(kp=1.0, kd=[1, 1, 1, -1, 1, 1], q_ref=zeros), r"^kd: expected finite gains ≥ 0"),
        (dict(kp=np.nan, kd=1.0, q_ref=zeros), r"^kp: expected finite gains ≥ 0"),
        (dict(kp="high", kd=1.0, q_ref=zeros), r"^kp: expected a number ≥ 0 or 6 of them"),
        (dict(kp=1.0, kd=1.0, q_ref=[0, 0, np.nan, 0, 0, 0]), r"^q_ref: non-finite values"),
        (dict(kp=1.0, kd=1.0, q_ref=np.zeros((11, 5)), dt=0.1), r"^q_ref: expected a vector of 6 or an array"),
        (dict(kp=1.0, kd=1.0, q_ref=np.zeros((11, 6))), r"^dt: q_ref is sampled"),
        (dict(kp=1.0, kd=1.0, q_ref=np.zeros((11, 6)), v_ref=np.zeros((12, 6)), dt=0.1),
         r"^v_ref: 12 rows, but q_ref has 11"),
        (dict(kp=1.0, kd=1.0, q_ref=zeros, tau_ff=np.full((3, 6), np.inf), dt=0.1), r"^tau_ff: non-finite"),
        (dict(kp=1.0, kd=1.0, q_ref=np.zeros((11, 6)), dt=-0.1), r"^dt: expected a finite number > 0"),
    ]
    for kwargs, message in cases:
        with pytest.raises(gtdyn.ArgumentError, match=message):
            gtdyn.PDController(puma, **kwargs)
    sampled = gtdyn.PDController(puma, 1.0, 1.0, np.zeros((11, 6)), dt=0.1)
    with pytest.raises(gtdyn.ArgumentError, match=r"^tau: the controller's references have 11 rows, but a run of "
                                                  r"20 steps has 21 knots"):
        gtdyn.simulate(puma, zeros, zeros, tau=sampled, dt=0.1, steps=20)
    with pytest.raises(gtdyn.ArgumentError, match=r"^tau: the controller's references are sampled every dt = 0.1 s, "
                                                  r"but the run steps dt = 0.05 s"):
        gtdyn.simulate(puma, zeros, zeros, tau=sampled, dt=0.05, steps=10)
    with pytest.raises(gtdyn.ArgumentError, match=r"^tau: the controller was built for 'puma560'"):
        gtdyn.simulate(gtdyn.load_robot("rr"), [0, 0], [0, 0], tau=sampled, dt=0.1, steps=10)
    with pytest.raises(gtdyn.ArgumentError, match=r"^tau: the controller was built for a 'puma560' whose passive "
                                                  r"joints are not this robot's \(joint6\)"):
        gtdyn.simulate(puma.with_actuated(puma.joint_names[:5]), zeros, zeros, tau=sampled, dt=0.1, steps=10)
    with pytest.raises(gtdyn.ArgumentError, match=r"^q: expected a vector of 6"):
        sampled(0.0, np.zeros(5), zeros)
    with pytest.raises(gtdyn.ArgumentError, match=r"^t: expected a time in seconds, got nan"):
        sampled(np.nan, zeros, zeros)
    with pytest.raises(gtdyn.ArgumentError, match=r"^robot: expected a gtdyn.Robot"):
        gtdyn.PDController("puma560", 1.0, 1.0, zeros)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # numpy's, on the way to τ = inf
def test_a_failing_step_raises_as_the_python_stepper_does(puma):
    """A torque that overflows (kp = 1e308 two radians away: τ = inf) leaves the native loop before its step, and
    the Python stepper names it as it names any controller's bad torque; gains far too stiff for the step diverge
    until an angle passes 1e6 rad, the same error at the same step in both loops."""
    for controller, message in ((gtdyn.PDController(puma, 1e308, 0.0, np.full(6, 2.0)), "tau: the controller "
                                 "returned a bad torque at t = 0 s"),
                                (gtdyn.PDController(puma, 50.0, 6.0, np.zeros(6)), "q: joint '")):
        errors = []
        for tau in (controller, lambda t, q, v: controller(t, q, v)):
            with pytest.raises(gtdyn.ArgumentError) as error:
                gtdyn.simulate(puma, np.zeros(6), np.zeros(6), tau=tau, dt=1e-3, steps=300, method="rk4",
                               progress=False)
            errors.append((str(error.value), getattr(error.value, "__notes__", None)))
        assert errors[0] == errors[1] and errors[0][0].startswith(message), errors


def test_floating_bases_closed_loops_and_the_variational_integrator_take_it_through_python(puma):
    """Where the native loop does not apply (the trapezoidal rule, here on a floating base; closed loops; the
    variational integrator), the controller is an ordinary callable: the same trajectory as the lambda around it,
    its law at the first sample, zero torque at the four-bar's passive joints."""
    quadruped = gtdyn.load_robot("quadruped", base="floating")
    four_bar = gtdyn.load_robot("four_bar")
    start = gtdyn.close_loops(four_bar, {"j1": 1.7128})
    cases = [(quadruped, np.full(12, 0.1), np.zeros(12), "trapezoidal", dict(gravity=np.zeros(3))),
             (four_bar, start.q, start.v, "semi_implicit_euler", {}),
             (puma, np.full(6, 0.1), np.zeros(6), "variational", {})]
    for robot, q0, v0, method, kw in cases:
        n = robot.num_dofs
        controller = gtdyn.PDController(robot, 0.01, 0.001, np.zeros(n), tau_ff=np.full(n, 0.001))
        native, python, used, python_used = runs(robot, controller, q0=q0, v0=v0, dt=1e-3, steps=50, method=method,
                                                 **kw)
        assert not used and not python_used, robot.name
        assert np.array_equal(native.q, python.q) and np.array_equal(native.tau, python.tau), robot.name
        actuated = np.array([j.actuated for j in robot.joints])
        assert np.array_equal(native.tau[0], np.where(actuated, 0.001 + 0.01 * (0 - q0) + 0.001 * (0 - v0), 0.0))
