"""Compiled DRNEA (issue 23, item 3; ``gtdyn.compiled.drnea``): the variational integrator's residual, RIQN step
and Legendre transform as native code give what the Python integrator gives, within that integrator's own
sensitivity to round-off."""

import gtsam
import numpy as np
import pytest

import gtdyn
from gtdyn.compiled import native, trace
from gtdyn.compiled.drnea import CompiledDEL, log_pose
from gtdyn.compiled.kinematics import TracedPose
from gtdyn.errors import ArgumentError
from gtdyn.simulation import variational_stepper
from gtdyn.simulation.variational import VariationalIntegrator
from gtdyn.simulation.variational_compiled import CompiledVariationalIntegrator
from gtdyn.simulation.variational_stepper import _mass_inverse

GRAVITY = np.array([0.0, 0.0, -9.81])


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


@pytest.mark.parametrize("name", ["puma560", "rrr"])
def test_the_residual_is_the_python_integrators(name):
    robot = gtdyn.load_robot(name)
    n = robot.num_dofs
    python = VariationalIntegrator(robot, GRAVITY, _mass_inverse(robot))
    rng = np.random.default_rng(3)
    q0, v0, tau0 = rng.uniform(-1, 1, (3, n))
    state = python.start(q0, v0, tau0, 1e-3)
    compiled = CompiledDEL(robot, GRAVITY)
    compiled.q[:], compiled.dt[0], compiled.impulse[:] = state["q"], 1e-3, state["impulse"]
    compiled.momentum[:] = np.concatenate([state["momentum"][link.index] for link in robot.links])
    compiled.weight[:] = np.concatenate([state["weight"][link.index] for link in robot.links])
    # e is a difference of momenta μ = dlogᵀ G ξ / Δt: gtsam's acos-based log (the Python residual's) carries
    # ~1e-16/θ of a step's angle θ ≈ 1e-3 rad, and 1/Δt = 1e3 scales it, so the two agree to ~1e-12 of the momentum
    # scale and not to round-off; 1e-10 leaves room for the angles the random u reach
    scale = max(1.0, np.max(np.abs(compiled.momentum)), np.max(np.abs(compiled.impulse)))
    for k in range(5):
        u = state["q"] + 1e-3 * state["v"] + rng.normal(scale=1e-4, size=n) * (k > 0)
        expected, _, _ = python.residual(u, state)
        compiled.u[:] = u
        largest = compiled.residual()
        assert np.allclose(compiled.e, expected, rtol=0, atol=1e-10 * scale)
        assert largest == np.max(np.abs(compiled.e))


@pytest.mark.parametrize("name", ["puma560", "rrr"])
def test_the_exact_jacobian_is_the_residuals_derivative(name):
    """``jacobian`` (forward-mode duals through the same residual) against central differences of the compiled
    residual, also at u = q where every joint's displacement is the identity (the logarithm's series branch)."""
    robot = gtdyn.load_robot(name)
    n = robot.num_dofs
    python = VariationalIntegrator(robot, GRAVITY, _mass_inverse(robot))
    rng = np.random.default_rng(5)
    state = python.start(*rng.uniform(-1, 1, (3, n)), 1e-3)
    compiled = CompiledDEL(robot, GRAVITY)
    compiled.q[:], compiled.dt[0], compiled.impulse[:] = state["q"], 1e-3, state["impulse"]
    compiled.momentum[:] = np.concatenate([state["momentum"][link.index] for link in robot.links])
    compiled.weight[:] = np.concatenate([state["weight"][link.index] for link in robot.links])
    for u in (state["q"] + 1e-3 * state["v"], state["q"].copy()):
        compiled.u[:] = u
        J = compiled.jacobian()
        differences = np.empty((n, n))
        h = 1e-7
        for k in range(n):
            sides = []
            for sign in (1, -1):
                compiled.u[:] = u + sign * h * np.eye(n)[k]
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


def test_a_floating_base_keeps_the_python_integrator():
    quadruped = gtdyn.load_robot(gtdyn.bundled_path("quadruped"), base="floating")
    with pytest.raises(ValueError, match="fixed bases"):
        CompiledVariationalIntegrator(quadruped, GRAVITY, lambda q, p: p)


def test_newton_and_broyden_solve_the_same_equations_as_riqn():
    """Paper 004's comparison (``benchmarks.paper004``): Newton on the exact Jacobian converges in fewer
    iterations than RIQN, and all three reach the same trajectory."""
    from benchmarks.paper004 import SOLVERS, run

    runs_ = {name: run(5, solver, 20) for name, solver in SOLVERS.items()}
    for name in ("Newton", "Broyden"):
        assert np.max(np.abs(runs_[name]["q"] - runs_["RIQN"]["q"])) < 1e-10
    assert runs_["Newton"]["iterations"] < runs_["RIQN"]["iterations"]
