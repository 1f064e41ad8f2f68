"""Compiled DRNEA (issue 23, item 3; ``gtdyn.compiled.drnea``): the variational integrator's residual, RIQN step
and Legendre transform as native code give what the Python integrator gives, within that integrator's own
sensitivity to round-off."""

import gtsam
import numpy as np
import pytest

import gtdyn
from gtdyn.compiled import native, trace
from gtdyn.compiled.drnea import SMALL_ANGLE, CompiledDEL, exp_pose, log_pose
from gtdyn.compiled.kinematics import TracedPose
from gtdyn.errors import ArgumentError
from gtdyn.model.base_frame import pose_to_com, twist_to_com
from gtdyn.simulation import variational_stepper
from gtdyn.simulation.variational import VariationalIntegrator
from gtdyn.simulation.variational_compiled import CompiledVariationalIntegrator
from gtdyn.simulation.variational_stepper import _mass_inverse

GRAVITY = np.array([0.0, 0.0, -9.81])
EPS = np.finfo(float).eps
ROBOTS = [("puma560", None), ("rrr", None), ("quadruped", "floating")]


@pytest.fixture(scope="module")
def log_code():
    """log_pose compiled on its own: ws[0:9] R (row-major), ws[9:12] p → ws[12:18] ξ."""
    fn = trace.Function("main")
    values = [fn.load(i) for i in range(12)]
    xi = log_pose(TracedPose(np.array(values[:9], dtype=object).reshape(3, 3), np.array(values[9:], dtype=object)))
    for k, value in enumerate(xi):
        fn.store(12 + k, value)
    functions = {"main": fn, "fast": trace.Function("fast")}
    loaded = native.Loaded(native.compile_object(native.module_ir(functions, "log_")), "log_")
    return loaded, loaded.entry["main"]  # the code lives as long as its Loaded


@pytest.mark.parametrize("angle", [0.0, 1e-9, 1e-5, 9.9e-4, 1.01e-3, 1e-2, 0.3, 1.7, 3.0])
def test_the_traced_logarithm_is_gtsams(log_code, angle):
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    pose = gtsam.Pose3(gtsam.Rot3.Expmap(angle * axis), np.array([0.2, -0.1, 0.4]))
    ws = np.zeros(18)
    ws[:9], ws[9:12] = pose.rotation().matrix().ravel(), pose.translation()
    log_code[1](ws.ctypes.data)
    # the two formulas round differently; gtsam's acos loses ~1e-16/θ of the angle at small θ
    assert np.allclose(ws[12:], gtsam.Pose3.Logmap(pose), rtol=0, atol=1e-12)


@pytest.fixture(scope="module")
def exp_code():
    """exp_pose compiled on its own: ws[0:6] ξ → ws[6:15] R (row-major), ws[15:18] p."""
    fn = trace.Function("main")
    T = exp_pose(np.array([fn.load(i) for i in range(6)], dtype=object))
    for k, value in enumerate([*T.R.ravel(), *T.p]):
        fn.store(6 + k, value)
    functions = {"main": fn, "fast": trace.Function("fast")}
    loaded = native.Loaded(native.compile_object(native.module_ir(functions, "exp_")), "exp_")
    return loaded, loaded.entry["main"]


@pytest.mark.parametrize("angle", [0.0, 1e-9, 1e-5, 0.99 * SMALL_ANGLE, 1.01 * SMALL_ANGLE, 1e-2, 0.3, 1.7, 3.0])
def test_the_traced_exponential_is_gtsams(exp_code, angle):
    """Both sides of the series threshold, down to θ = 0: a floating base's displacement over a step is ~1e-3."""
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    xi = np.concatenate([angle * axis, [0.2, -0.1, 0.4]])
    ws = np.zeros(18)
    ws[:6] = xi
    exp_code[1](ws.ctypes.data)
    expected = gtsam.Pose3.Expmap(xi)
    # gtsam evaluates the same closed forms (Rodrigues, the left Jacobian): on entries of size ≤ 1 the two agree to
    # a few ulps, 4ε; a small-angle branch only finite (first order, R = I + [ω]) would miss by θ²/2 = 5e-11 at 1e-5
    assert np.allclose(ws[6:15], expected.rotation().matrix().ravel(), rtol=0, atol=4 * EPS)
    assert np.allclose(ws[15:], expected.translation(), rtol=0, atol=4 * EPS)


def compiled_at(robot, state) -> CompiledDEL:
    """The compiled code loaded with a Python integrator's state (the body momenta: a floating base's first)."""
    bodies = (robot.base, *robot.links) if robot.floating_base else robot.links
    compiled = CompiledDEL(robot, GRAVITY)
    compiled.q[:], compiled.dt[0], compiled.impulse[:] = state["q"], state["dt"], state["impulse"]
    compiled.momentum[:] = np.concatenate([state["momentum"][body.index] for body in bodies])
    compiled.weight[:] = np.concatenate([state["weight"][body.index] for body in bodies])
    return compiled


def started(name, base, seed):
    """A Python integrator and its first state from random (q₀, q̇₀, τ₀), a floating base at a random pose and twist."""
    robot = gtdyn.load_robot(name, base=base)
    rng = np.random.default_rng(seed)
    python = VariationalIntegrator(robot, GRAVITY, _mass_inverse(robot))
    base_start = ((gtsam.Pose3(gtsam.Rot3.Expmap(rng.normal(size=3)), rng.normal(size=3)), rng.normal(size=6))
                  if robot.floating_base else ())
    return robot, python, python.start(*rng.uniform(-1, 1, (3, robot.num_dofs)), 1e-3, *base_start), rng


def first_guess(state):
    """u_k + Δt u̇_k: on a floating base [Δt V0; q + Δt q̇]."""
    dt, q, v = state["dt"], state["q"], state["v"]
    return np.concatenate([dt * v[:6], q + dt * v[6:]]) if len(v) > len(q) else q + dt * v


@pytest.mark.parametrize(("name", "base"), ROBOTS)
def test_the_residual_is_the_python_integrators(name, base):
    """On a floating base too: the base's displacement ξ₀ leads u, its six lead e."""
    robot, python, state, rng = started(name, base, 3)
    compiled = compiled_at(robot, state)
    # e is a difference of momenta μ = dlogᵀ G ξ / Δt: gtsam's acos-based log (the Python residual's) carries
    # ~1e-16/θ of a step's angle θ ≈ 1e-3 rad, and 1/Δt = 1e3 scales it, so the two agree to ~1e-12 of the momentum
    # scale and not to round-off; 1e-10 leaves room for the angles the random u reach
    scale = max(1.0, np.max(np.abs(compiled.momentum)), np.max(np.abs(compiled.impulse)))
    for k in range(5):
        u = first_guess(state) + rng.normal(scale=1e-4, size=len(compiled.u)) * (k > 0)
        expected, _, _ = python.residual(u, state)
        compiled.u[:] = u
        largest = compiled.residual()
        assert np.allclose(compiled.e, expected, rtol=0, atol=1e-10 * scale)
        assert largest == np.max(np.abs(compiled.e))


@pytest.mark.parametrize(("name", "base"), ROBOTS)
def test_the_exact_jacobian_is_the_residuals_derivative(name, base):
    """``jacobian`` (forward-mode duals through the same residual) against central differences of the compiled
    residual, also at u = q (and ξ₀ = 0) where every displacement is the identity (the logarithm's and the
    exponential's series branches)."""
    robot, _, state, _ = started(name, base, 5)
    compiled = compiled_at(robot, state)
    m = len(compiled.u)
    at_rest = np.concatenate([np.zeros(m - robot.num_dofs), state["q"]])
    for u in (first_guess(state), at_rest):
        compiled.u[:] = u
        J = compiled.jacobian()
        differences = np.empty((m, m))
        h = 1e-7
        for k in range(m):
            sides = []
            for sign in (1, -1):
                compiled.u[:] = u + sign * h * np.eye(m)[k]
                compiled.residual()
                sides.append(compiled.e.copy())
            differences[:, k] = (sides[0] - sides[1]) / (2 * h)
        # central differences at h = 1e-7 of a residual ~1/Δt = 1e3 times its inputs' scale: ~1e-9 of J's scale
        assert np.max(np.abs(J - differences)) <= 1e-7 * np.max(np.abs(J))


def runs(robot, q0, v0, steps, **kw):
    """The same simulation with the compiled integrator, the Python one, and the Python one from q0 moved by one
    rounding (what round-off alone does to this trajectory)."""
    common = dict(dt=1e-3, steps=steps, method="variational", **kw)
    compiled = gtdyn.simulate(robot, q0, v0, **common)
    try:
        variational_stepper.CompiledVariationalIntegrator = VariationalIntegrator
        python = gtdyn.simulate(robot, q0, v0, **common)
        nudged = gtdyn.simulate(robot, q0 * (1 + 2.2e-16), v0, **common)
    finally:
        variational_stepper.CompiledVariationalIntegrator = CompiledVariationalIntegrator
    return compiled, python, nudged


def test_trajectories_match_the_python_integrator_within_its_own_round_off():
    robot = gtdyn.load_robot("puma560")
    rng = np.random.default_rng(0)
    q0, v0 = rng.uniform(-0.5, 0.5, (2, 6))
    compiled, python, nudged = runs(robot, q0, v0, 200, gravity=[0, 0, 0])
    for attribute in ("q", "v", "qdd"):
        ours = np.max(np.abs(getattr(compiled, attribute) - getattr(python, attribute)))
        round_off = np.max(np.abs(getattr(nudged, attribute) - getattr(python, attribute)))
        assert ours <= 1e-11 and ours <= 10 * max(round_off, 1e-15), (attribute, ours, round_off)
    assert np.array_equal(compiled.t, python.t) and np.array_equal(compiled.tau, python.tau)


def test_under_gravity_and_torque_the_trajectories_match_too():
    robot = gtdyn.load_robot("rrr")
    compiled, python, _ = runs(robot, np.array([0.3, -0.2, 0.1]), np.array([0.1, 0.0, -0.2]), 100,
                               tau=np.array([0.2, -0.1, 0.05]))
    assert np.max(np.abs(compiled.q - python.q)) < 1e-11
    assert np.max(np.abs(compiled.v - python.v)) < 1e-10


def test_a_step_too_long_to_converge_is_the_same_error():
    robot = gtdyn.load_robot("rr")
    integrator = CompiledVariationalIntegrator(robot, GRAVITY, _mass_inverse(robot))
    state = integrator.start(np.zeros(2), np.array([1e3, -1e3]), np.zeros(2), 1.0)
    with pytest.raises(ArgumentError, match="did not converge"):
        integrator.step(state, lambda q, v: np.zeros(2))


def test_a_step_settles_at_its_round_off_floor_and_not_before():
    """``settled``: within TOLERANCE of the momentum scale; or, below STALL_TOLERANCE, once |e| stops shrinking
    (a 100-link chain's floor is ~3e-10 of the scale); a residual still shrinking, or large, goes on."""
    from gtdyn.simulation.variational import STALL_TOLERANCE, TOLERANCE, settled

    scale = 10.0
    assert settled(0.5 * TOLERANCE * scale, None, scale)
    assert settled(3e-10 * scale, 2.9e-10 * scale, scale)  # stopped shrinking, near round-off
    assert not settled(3e-10 * scale, 6e-10 * scale, scale)  # still shrinking
    assert not settled(2 * STALL_TOLERANCE * scale, STALL_TOLERANCE * scale, scale)  # growing, far from round-off
    assert not settled(3e-10 * scale, None, scale)  # the first residual has nothing to compare with


def floating_start(seed):
    """The floating quadruped near a stance: (robot, q₀, q̇₀, base pose, base twist, a PD torque τ(q, q̇)), gentle
    enough that no joint leaves its limits over the tests' 100 steps."""
    robot = gtdyn.load_robot("quadruped", base="floating")
    rng = np.random.default_rng(seed)
    q0, v0 = rng.uniform(-0.3, 0.3, (2, robot.num_dofs))
    pose = gtsam.Pose3(gtsam.Rot3.Expmap(rng.normal(size=3)), rng.normal(size=3))
    return robot, q0, v0, pose, 0.3 * rng.normal(size=6), lambda q, v: -2.0 * (q - q0) - 0.1 * v


def spread(ours: dict, python: dict, nudged: dict) -> dict:
    """Per quantity: (max |ours − Python's|, max |nudged Python's − Python's|: the round-off spread)."""
    return {key: (np.max(np.abs(np.asarray(ours[key]) - python[key])),
                  np.max(np.abs(np.asarray(nudged[key]) - python[key]))) for key in python}


def test_floating_trajectories_match_the_python_integrator_within_its_own_round_off():
    """The floating quadruped under gravity and a PD torque (τ_{k+1} from the state each step reaches), 100 steps
    of 1 ms: q, [V0; q̇] and the base's CoM pose T0, stepped by the two integrators directly."""
    robot, q0, v0, pose, twist, pd = floating_start(7)
    T0, V0 = pose_to_com(robot, pose), twist_to_com(robot) @ twist

    def trajectory(integrator, q_start):
        integrator = integrator(robot, GRAVITY, _mass_inverse(robot))
        state = integrator.start(q_start, v0, pd(q_start, v0), 1e-3, T0, V0)
        out = {"q": [], "v": [], "T0": []}
        for _ in range(100):
            state, _ = integrator.step(state, pd)
            for key in out:
                out[key].append(state["T0"].matrix() if key == "T0" else state[key])
        return {key: np.array(values) for key, values in out.items()}

    python = trajectory(VariationalIntegrator, q0)
    nudged = trajectory(VariationalIntegrator, q0 * (1 + 2.2e-16))  # what one rounding alone does
    for key, (ours, round_off) in spread(trajectory(CompiledVariationalIntegrator, q0), python, nudged).items():
        # the fixed-base test's bound: within 10x the Python integrator's own spread (measured: ours 0.9-2.4x it,
        # at most 1.3e-12, on q̇), and 1e-10 absolute on values of size ~1
        assert ours <= 1e-10 and ours <= 10 * max(round_off, 1e-15), (key, ours, round_off)


def test_simulate_on_a_floating_base_runs_compiled_drnea_and_gives_the_python_integrators_samples(monkeypatch):
    """``simulate(method="variational")`` on the floating quadruped now steps ``CompiledVariationalIntegrator``
    (the stepper used the Python integrator there before): the same base pose, twist and acceleration samples,
    q, q̇, q̈ and τ, within the Python integrator's own round-off spread."""
    robot, q0, v0, pose, twist, pd = floating_start(8)
    finishes = []
    finish = CompiledDEL.finish
    monkeypatch.setattr(CompiledDEL, "finish", lambda self: finishes.append(1) or finish(self))
    compiled, python, nudged = runs(robot, q0, v0, 100, base_pose=pose, base_twist=twist,
                                    tau=lambda t, q, v: pd(q, v))
    assert len(finishes) == 100  # one Legendre transform per step, all compiled (the Python runs' are not)
    keys = ("base_pose", "base_twist", "base_accel", "q", "v", "qdd", "tau")
    for key, (ours, round_off) in spread(*({k: getattr(run, k) for k in keys}
                                           for run in (compiled, python, nudged))).items():
        # within 10x the Python integrator's own spread (measured: ours 0.6-1.6x it); the absolute cap is q̈'s, the
        # forward solver's answer at the sampled state, ~1e2 times as sensitive to it as q̇ (spreads 2e-10 and 2e-12)
        assert ours <= 1e-8 and ours <= 10 * max(round_off, 1e-15), (key, ours, round_off)


def test_newton_and_broyden_solve_the_same_equations_as_riqn():
    """Paper 004's comparison (``benchmarks.paper004``): Newton on the exact Jacobian converges in fewer
    iterations than RIQN, and all three reach the same trajectory."""
    from benchmarks.paper004 import SOLVERS, run

    runs_ = {name: run(5, solver, 20) for name, solver in SOLVERS.items()}
    for name in ("Newton", "Broyden"):
        assert np.max(np.abs(runs_[name]["q"] - runs_["RIQN"]["q"])) < 1e-10
    assert runs_["Newton"]["iterations"] < runs_["RIQN"]["iterations"]
