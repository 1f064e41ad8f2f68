"""gtdyn.simulate against an independent reference — the 2R arm's equations of motion derived by hand
(tests/test_analytic_2r.py) integrated by scipy's solve_ivp — each method's order of convergence, the
variational integrator's bounded energy, and the energies against Pinocchio."""

import warnings

import gtsam
import numpy as np
import pytest
from references import rel_err
from scipy.integrate import solve_ivp
from test_analytic_2r import GRAVITY_IN_PLANE, hand_derived_tau

import gtdyn
from gtdyn.bench.pinocchio import PinocchioModel
from gtdyn.simulation import METHODS, simulate
from gtdyn.simulation.trajectory import energies

Q0, V0 = np.array([0.3, -0.5]), np.array([0.4, 0.0])
TAU = np.array([1.0, -0.5])
ORDER = {"euler": 1, "semi_implicit_euler": 1, "trapezoidal": 2, "rk4": 4, "variational": 2}


@pytest.fixture(scope="module")
def rr(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GTDYN_CACHE_DIR", str(tmp_path_factory.mktemp("gtdyn_simulation_cache")))
        yield gtdyn.load_robot("rr")


def reference(duration: float) -> np.ndarray:
    """q(duration) of the hand-derived M(q) q̈ + h + g = τ, by solve_ivp at tolerances far below the tests'."""
    def rhs(_, x):
        q, v = x[:2], x[2:]
        bias, M, _ = hand_derived_tau(q, v, np.zeros(2))
        return np.concatenate([v, np.linalg.solve(M, TAU - bias)])

    return solve_ivp(rhs, (0.0, duration), np.concatenate([Q0, V0]), method="DOP853", rtol=1e-13, atol=1e-13).y[:2, -1]


@pytest.mark.parametrize("method", METHODS)
def test_each_method_converges_to_the_reference_at_its_order(rr, method):
    """Halving Δt divides the error at t = 1 s by 2^order (observed order within 0.3 of the method's)."""
    duration = 1.0
    dt = {"rk4": 0.02, "variational": 0.01}.get(method, 0.005)
    want = reference(duration)
    errors = []
    for h in (dt, dt / 2):
        tr = simulate(rr, Q0, V0, tau=TAU, dt=h, steps=int(round(duration / h)), method=method,
                      gravity=GRAVITY_IN_PLANE)
        errors.append(np.max(np.abs(tr.q[-1] - want)))
    order = np.log2(errors[0] / errors[1])
    assert abs(order - ORDER[method]) < 0.3, (method, errors, order)


@pytest.mark.heavy  # the suite keeps the per-method convergence orders
def test_two_seconds_agree_with_the_reference_to_each_methods_own_error(rr):
    """At Δt = 1 ms after 2 s, each method misses the reference by what step doubling says its error is:
    e ≈ |q(Δt) − q(Δt/2)| · 2^p / (2^p − 1) (Richardson), within a factor of 1.5 either way. (Measured here: RK4
    2.6e-10, trapezoidal and variational ~1.3e-5, semi-implicit Euler 5e-3, Euler 3e-2.)"""
    want = reference(2.0)
    for method in METHODS:
        q1, q2 = (simulate(rr, Q0, V0, tau=TAU, dt=h, steps=round(2.0 / h), method=method,
                           gravity=GRAVITY_IN_PLANE).q[-1] for h in (1e-3, 5e-4))
        p = ORDER[method]
        estimate = np.max(np.abs(q1 - q2)) * 2 ** p / (2 ** p - 1)
        error = np.max(np.abs(q1 - want))
        assert estimate / 1.5 < error < 1.5 * estimate, (method, error, estimate)


@pytest.mark.heavy  # 10,000 steps; the suite keeps the variational order and momentum tests
def test_variational_energy_stays_bounded_where_euler_drifts(rr):
    """No torque: energy is conserved. Over 10,000 steps of 5 ms the variational integrator's energy error
    oscillates without a trend (its last thousand steps stray no further than the second thousand, within 50%),
    while explicit Euler's keeps growing."""
    drift = {}
    for method in ("variational", "euler"):
        tr = simulate(rr, Q0, V0, dt=5e-3, steps=10_000, method=method, gravity=GRAVITY_IN_PLANE, progress=False)
        error = np.abs(tr.energy - tr.energy[0])
        drift[method] = (np.max(error[1000:2000]), np.max(error[-1000:]))
    early, late = drift["variational"]
    assert late < 1.5 * early  # measured: 1.94e-3 J both (the total is 6.5 J)
    assert drift["euler"][1] > 5 * drift["euler"][0]  # measured: 13.5 J, then 113 J


def test_a_controller_holds_the_arm(rr):
    """A PD controller with the model's gravity torques (a callable τ(t, q, q̇)) brings the arm to rest at its
    target."""
    target = np.array([0.5, 0.8])
    hold = gtdyn.inverse_dynamics(rr, target, np.zeros(2), np.zeros(2), gravity=GRAVITY_IN_PLANE).tau

    def controller(t, q, v):
        return hold + 40.0 * (target - q) - 10.0 * v

    tr = simulate(rr, Q0, V0, tau=controller, dt=2e-3, steps=2500, method="rk4", gravity=GRAVITY_IN_PLANE)
    assert np.max(np.abs(tr.q[-1] - target)) < 1e-3 and np.max(np.abs(tr.v[-1])) < 1e-2, (tr.q[-1], tr.v[-1])


@pytest.mark.parametrize("base", ["fixed", "floating"])
def test_a_controller_is_asked_once_at_each_stage(rr, base):
    """A Python controller is asked once per stage of a step: the sample's torque, recorded, is the one its
    dynamics use (it was asked twice there, once to record and once to solve), then RK4's three later stages; and
    once at the last sample. On a fixed base and on a floating one."""
    robot = rr if base == "fixed" else gtdyn.load_robot("quadruped", base="floating")
    asked = []

    def controller(t, q, v):
        asked.append(t)
        return -0.01 * v

    steps, dt = 4, 1e-3
    for method, stages in (("semi_implicit_euler", 1), ("rk4", 4)):
        asked.clear()
        run = simulate(robot, np.zeros(robot.num_dofs), np.full(robot.num_dofs, 0.2), tau=controller, dt=dt,
                       steps=steps, method=method, gravity=np.zeros(3))
        assert len(asked) == stages * steps + 1, (method, asked)
        assert np.array_equal(run.tau[1], -0.01 * run.v[1])


@pytest.mark.parametrize("method", ["rk4", "variational"])
def test_simulate_is_one_loop_over_a_stepper(rr, method):
    """The stepper interface: ``record`` writes sample k, ``advance`` takes step k. Driving the tree's stepper (or
    the variational one) by hand over the run's ``Samples`` reproduces simulate's arrays bit for bit."""
    from gtdyn.simulation.steppers import JointStepper, Samples
    from gtdyn.simulation.variational_stepper import VariationalStepper

    steps, dt, gravity = 20, 0.01, np.array(GRAVITY_IN_PLANE)
    forward = gtdyn.compile(rr, "forward", ordering="aba", gravity=gravity)
    out = Samples.allocate(rr, steps, dt)
    torque = lambda k, t, q, v: TAU  # noqa: E731
    stepper = (VariationalStepper(rr, Q0, V0, torque, dt, out.t, gravity, forward) if method == "variational"
               else JointStepper(Q0, V0, torque, False, method, dt, forward))
    for k in range(steps):
        stepper.record(k, out.t[k], out)
        stepper.advance(k, out.t[k])
    stepper.record(steps, out.t[steps], out)
    run = simulate(rr, Q0, V0, tau=TAU, dt=dt, steps=steps, method=method, gravity=GRAVITY_IN_PLANE)
    for name in ("t", "q", "v", "qdd", "tau"):
        assert np.array_equal(getattr(run, name), getattr(out, name)), name


def test_energies_match_pinocchio():
    robot = gtdyn.load_robot("puma560")
    ref = PinocchioModel(gtdyn.bundled_path("puma560"), robot)
    rng = np.random.default_rng(31)
    for _ in range(3):
        q, v = rng.uniform(-1, 1, (2, 6))
        kinetic, potential = energies(robot, q, v, np.array(gtdyn.GRAVITY))
        qp, vp = ref.configuration(q), ref.tangent(v)
        assert rel_err(kinetic, ref.pin.computeKineticEnergy(ref.model, ref.data, qp, vp)) < 1e-12
        assert rel_err(potential, ref.pin.computePotentialEnergy(ref.model, ref.data, qp)) < 1e-12


@pytest.mark.parametrize("base", ["fixed", "floating"])
def test_a_long_trajectorys_energies_are_compiled_and_the_references(base, monkeypatch):
    """From ``COMPILED_ENERGIES_FROM`` samples on, a trajectory's energies come from compiled kinematics: the PUMA
    and the free quadruped (its base moving the potential energy), each sample within round-off of the reference's
    pass, and the shorter run's own energies from the reference."""
    from gtdyn.simulation import trajectory

    robot = gtdyn.load_robot("puma560" if base == "fixed" else "quadruped", base=base)
    rng = np.random.default_rng(8)
    q0, v0 = rng.uniform(-0.3, 0.3, (2, robot.num_dofs))
    twist = {"base_twist": [0.2, -0.1, 0.3, 0.5, 0.0, 0.4]} if base == "floating" else {}
    steps = trajectory.COMPILED_ENERGIES_FROM
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gtdyn.JointLimitWarning)
        run = simulate(robot, q0, v0, dt=1e-3, steps=steps, progress=False, **twist)

    def reference(trajectory_, k):
        pose = None if trajectory_.base_pose is None else gtsam.Pose3(trajectory_.base_pose[k])
        twist_k = None if trajectory_.base_twist is None else trajectory_.base_twist[k]
        return energies(robot, trajectory_.q[k], trajectory_.v[k], trajectory_.gravity, pose, twist_k)

    with monkeypatch.context() as patched:
        patched.setattr(trajectory, "energies", lambda *a, **k: pytest.fail("the reference's pass ran"))
        kinetic, potential = run.kinetic, run.potential
    for k in (0, steps // 3, steps):
        expected = reference(run, k)
        # sums over the bodies in another order (−m g·c against −Σ mᵢ g·pᵢ): a few ulps of the largest term
        scale = max(abs(x) for x in expected) + 1.0
        assert abs(kinetic[k] - expected[0]) < 1e-13 * scale and abs(potential[k] - expected[1]) < 1e-13 * scale
    short = simulate(robot, q0, v0, dt=1e-3, steps=1, progress=False, **twist)  # 2 samples: the reference's pass
    assert [(short.kinetic[k], short.potential[k]) for k in (0, 1)] == [reference(short, k) for k in (0, 1)]


def test_bad_arguments_are_named(rr):
    cases = [(dict(method="leapfrog"), "method: 'leapfrog'"), (dict(dt=0.0), "dt: expected a finite number > 0"),
             (dict(steps=0), "steps"), (dict(tau=np.zeros((3, 2))), "tau: expected"),
             (dict(tau=lambda t, q, v: [1.0]), "tau: the controller returned a bad torque")]
    for extra, message in cases:
        kwargs = dict(dt=1e-3, steps=10) | extra
        with pytest.raises(gtdyn.ArgumentError, match=message):
            simulate(rr, Q0, V0, **kwargs)
    with pytest.raises(gtdyn.ArgumentError, match="base_twist: robot 'rr' has a fixed base"):
        simulate(rr, Q0, V0, dt=1e-3, steps=10, base_twist=np.zeros(6))
    with pytest.raises(gtdyn.LoopClosureError):
        simulate(gtdyn.load_robot("four_bar"), np.full(4, 0.1), np.zeros(4), dt=1e-3, steps=10)


def test_torques_that_are_not_real_numbers_are_named(rr):
    """Strings, ragged lists and dicts used to escape as numpy's ValueError or TypeError, complex torques were cut
    to their real parts with only a ComplexWarning; from a controller they are named as its answer."""
    bad = (["a", "b"], [1, "x"], [[1, 2], [3]], {"j1": 1.0}, np.array([1 + 5j, 0]), [1 + 5j, 0],
           np.tile([1 + 5j, 0], (10, 1)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for tau in bad:
            with pytest.raises(gtdyn.ArgumentError, match="^tau: expected"):
                simulate(rr, Q0, V0, tau=tau, dt=1e-3, steps=10)
            with pytest.raises(gtdyn.ArgumentError,
                               match="^tau: the controller returned a bad torque at t = 0 s: tau: "):
                simulate(rr, Q0, V0, tau=lambda t, q, v, tau=tau: tau, dt=1e-3, steps=10)
        for name, q0, v0 in (("q0", Q0 + 1j, V0), ("v0", Q0, [0.4 + 1j, 0.0])):
            with pytest.raises(gtdyn.ArgumentError, match=f"^{name}: expected real numbers"):
                simulate(rr, q0, v0, dt=1e-3, steps=10)


GEARED = """<robot name="geared"><link name="base"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="50" velocity="10"/></joint>
  <link name="l1"><inertial><origin xyz="0.4 0 0"/><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.05" iyz="0" izz="0.05"/></inertial></link>
  <joint name="rotor_joint" type="revolute"><parent link="base"/><child link="rotor"/><axis xyz="0 0 1"/>
    <limit lower="-30" upper="30" effort="5" velocity="90"/><mimic joint="j1" multiplier="3" offset="0.1"/></joint>
  <link name="rotor"><inertial><mass value="0.3"/>
    <inertia ixx="0.0002" ixy="0" ixz="0" iyy="0.0002" iyz="0" izz="0.0003"/></inertial></link>
</robot>"""


def test_passive_torques_and_broken_couplings_are_named_as_simulate_takes_them(tmp_path):
    """The compiled solver calls its torque argument x, the reference path its state q and v: from simulate they
    are tau, q0 and v0. A <mimic> joint is driven, so passive; so are the four-bar's loop joints."""
    path = tmp_path / "geared.urdf"
    path.write_text(GEARED)
    geared = gtdyn.load_robot(str(path))
    coupled = dict(q0=[0.2, 0.7], v0=[0.5, 1.5], dt=1e-3, steps=3)  # rotor_joint = 3 j1 + 0.1
    cases = [(dict(tau=[1.0, 1.0]), "^tau: joints rotor_joint are passive"),
             (dict(tau=np.ones((3, 2))), "^tau: joints rotor_joint are passive"),
             (dict(tau=lambda t, q, v: np.ones(2)),
              "^tau: the controller returned a bad torque at t = 0 s: tau: joints rotor_joint are passive"),
             (dict(q0=[0.2, 0.0]), "^q0: joint 'rotor_joint' is coupled"),
             (dict(v0=[0.5, 0.0]), "^v0: joint 'rotor_joint' is coupled")]
    for change, message in cases:
        with pytest.raises(gtdyn.ArgumentError, match=message):
            simulate(geared, **(coupled | change))
    four_bar = gtdyn.load_robot("four_bar")
    with pytest.raises(gtdyn.ArgumentError, match="^tau: joints j2, j3, j4 are passive"):
        simulate(four_bar, np.zeros(4), np.zeros(4), tau=np.ones(4), dt=1e-3, steps=3)


def test_runs_too_long_to_hold_or_to_time_are_named(rr):
    """numpy's _ArrayMemoryError and a time axis that overflows to inf (which the CLI's plot choked on)."""
    with pytest.raises(gtdyn.ArgumentError, match=r"^steps: 99999999999999 steps of 'rr' need .* GiB"):
        simulate(rr, Q0, V0, dt=1e-3, steps=99999999999999)
    with pytest.raises(gtdyn.ArgumentError, match=r"^dt: 3 steps of 1e\+308 s end at t = inf"):
        simulate(rr, Q0, V0, dt=1e308, steps=3)


def test_the_four_bar_falls_closed_as_the_lagrange_multiplier_ode_says():
    """The bundled four-bar under gravity from rest, away from its flat (singular) configurations: RK4 at 10 ms
    keeps every loop closed to round-off and its crank angle after 1 s matches the dense Lagrange-multiplier
    ODE of tests/loop_references.py (Pinocchio on the spanning tree plus the loop constraint) integrated by
    solve_ivp, to 1e-6 (step doubling puts RK4's own error at 3e-8 here)."""
    from loop_references import LagrangeReference

    from gtdyn.io.sdf import read_sdf
    from gtdyn.model.build import build_robot

    description = read_sdf(gtdyn.bundled_path("four_bar"))
    robot = build_robot(description)
    reference_model = LagrangeReference(description, robot)
    start = gtdyn.close_loops(robot, {"j1": 1.7128})  # the crank 45° below horizontal: it swings without going flat
    tr = simulate(robot, start.q, start.v, dt=0.01, steps=100, method="rk4")
    assert np.max(tr.closure) < 1e-8
    tree, n = reference_model.tree_index, robot.num_dofs

    def rhs(_, x):
        q, v = np.zeros(n), np.zeros(n)
        q[tree], v[tree] = x[:len(tree)], x[len(tree):]
        return np.concatenate([x[len(tree):], reference_model.forward(q, v, np.zeros(n))])

    x0 = np.concatenate([start.q[tree], start.v[tree]])
    crank = tree.index(robot.joint_names.index("j1"))
    want = solve_ivp(rhs, (0.0, 1.0), x0, method="DOP853", rtol=1e-12, atol=1e-12).y[crank, -1]
    assert abs(tr.q[-1, robot.joint_names.index("j1")] - want) < 1e-6


def test_passing_the_four_bars_flat_configuration_is_flagged():
    """From the bundled state the parallelogram swings through its flat, singular configuration, where closing
    the loop can jump to the other assembly branch: simulate says so instead of returning a quietly wrong run."""
    robot = gtdyn.load_robot("four_bar")
    start = gtdyn.close_loops(robot, {"j1": 0.0})
    with pytest.warns(gtdyn.IllConditionedWarning, match="singular configuration"):
        simulate(robot, start.q, start.v, dt=0.005, steps=80, method="rk4")


BRICK = """<robot name="brick"><link name="brick"><inertial><origin xyz="0.3 -0.2 0.1"/><mass value="2"/>
<inertia ixx="0.3" ixy="0" ixz="0" iyy="0.5" iyz="0" izz="0.7"/></inertial></link></robot>"""


def test_a_floating_base_moves_on_se3_at_each_methods_order(tmp_path):
    """A free brick (its CoM off the link origin): under gravity from a pure translation, its origin falls
    exactly −g t²/2 with RK4 (exact for constant acceleration); tumbling without gravity, halving Δt divides the
    error of the final pose (against a run at Δt/8) by 2^order — RK4 keeps order 4 on SE(3)."""
    path = tmp_path / "brick.urdf"
    path.write_text(BRICK)
    brick = gtdyn.load_robot(str(path), base="floating")
    fall = simulate(brick, [], [], dt=1e-2, steps=100, method="rk4", base_twist=[0, 0, 0, 1, 0, 0])
    np.testing.assert_allclose(fall.base_pose[-1][:3, 3], [1.0, 0.0, -9.81 / 2], atol=1e-12)
    spin = np.array([1.0, 2.0, 0.5, 0.3, -0.2, 0.1])

    def final_pose(method, dt):
        run = simulate(brick, [], [], dt=dt, steps=round(1.0 / dt), method=method, base_twist=spin, gravity=np.zeros(3))
        return run.base_pose[-1]

    for method, dt in (("rk4", 0.02), ("trapezoidal", 0.01), ("semi_implicit_euler", 0.005)):
        truth = final_pose(method, dt / 8)
        errors = [np.max(np.abs(final_pose(method, h) - truth)) for h in (dt, dt / 2)]
        assert abs(np.log2(errors[0] / errors[1]) - ORDER[method]) < 0.35, (method, errors)


@pytest.mark.heavy  # the suite keeps the floating base on SE(3) at each order
def test_a_controller_on_a_floating_base_keeps_rk4_fourth_order():
    """A controller is asked at every stage of a step on a floating base too (it was asked once per step, which
    held its torque over the step and cut RK4 to first order): the floating quadruped under a PD controller,
    without gravity, converges at order 4 in the joints and the base pose (against a run at Δt/8)."""
    robot = gtdyn.load_robot("quadruped", base="floating")
    rng = np.random.default_rng(3)
    q0, v0 = rng.uniform(-0.3, 0.3, (2, robot.num_dofs))
    target = rng.uniform(-0.5, 0.5, robot.num_dofs)

    def pd(t, q, v):
        return 0.2 * (target - q) - 0.01 * v + 0.03 * np.sin(3 * t)

    def final(dt):
        run = simulate(robot, q0, v0, tau=pd, dt=dt, steps=round(0.4 / dt), method="rk4",
                       base_twist=[0.2, -0.1, 0.3, 0.1, 0.0, 0.0], gravity=np.zeros(3))
        return np.concatenate([run.q[-1], run.base_pose[-1].ravel()])

    dt = 0.02
    truth = final(dt / 8)
    errors = [np.max(np.abs(final(h) - truth)) for h in (dt, dt / 2)]
    assert abs(np.log2(errors[0] / errors[1]) - 4) < 0.35, errors


def test_the_variational_integrator_conserves_a_free_robots_momentum():
    """The bundled quadruped floating, no gravity, no torque, moving: the variational integrator conserves the
    total spatial momentum Σ Ad(T_i⁻¹)ᵀ G_i V_i (world frame) to round-off over 300 steps (measured 5e-13 of
    |h| ≈ 3), as discrete Noether says."""
    import gtsam

    from gtdyn.kinematics.forward import forward_kinematics
    from gtdyn.spatial import Ad

    robot = gtdyn.load_robot("quadruped", base="floating")
    rng = np.random.default_rng(0)
    q0, v0 = rng.uniform(-0.5, 0.5, (2, robot.num_dofs))
    run = simulate(robot, q0, v0, base_twist=0.5 * rng.normal(size=6), dt=2e-3, steps=300, method="variational",
                   gravity=np.zeros(3))
    bodies = (robot.base, *robot.links)

    def momentum(k):
        kin = forward_kinematics(robot, run.q[k], run.v[k], gtsam.Pose3(run.base_pose[k]), run.base_twist[k])
        return sum(Ad(kin.wT[b.index].inverse()).T @ b.G @ kin.V[b.index] for b in bodies)

    h = np.array([momentum(k) for k in range(0, 301, 30)])
    assert np.max(np.abs(h - h[0])) < 1e-11 * np.max(np.abs(h[0]))
