"""Compiled derivatives (issue 21): against Pinocchio's analytical derivatives (computeABADerivatives,
computeRNEADerivatives, computeConstraintDynamicsDerivatives) where it has them, and against central differences
of the reference path elsewhere (hybrid problems, prismatic joints on random trees, transmissions); batches, the
unchecked call, the verdicts and the errors (closed loops: tests/test_derivatives_loops.py). The heavy set adds
Solo-12 and more orderings (``python benchmarks/verify_heavy_tests.py``); ``python -m benchmarks.derivatives``
covers the rest."""

import warnings

import numpy as np
import pytest
from references import central_differences, random_base, rel_err

import gtdyn
from gtdyn.bench.pinocchio import FreeFlyerPinocchio, PinocchioContacts, PinocchioModel
from gtdyn.compiled.derivatives import LANES
from gtdyn.model.random import random_robot

PIN_TOL = 1e-9  # the relative accuracy against Pinocchio (seen: ~1e-13)
FD_TOL = 1e-6  # against central differences, whose own error at h = 1e-6 is ~1e-9 relative here
FEET = ["FL_foot", "FR_foot", "RL_foot"]


pytestmark = pytest.mark.usefixtures("private_cache")


@pytest.fixture(scope="module")
def puma():
    robot = gtdyn.load_robot("puma560")
    return robot, PinocchioModel(robot.source, robot)


@pytest.mark.parametrize("problem, ordering", [("forward", "aba"), ("inverse", "rnea"),
                                               pytest.param("forward", "colamd", marks=pytest.mark.heavy)])
def test_puma_matches_pinocchios_analytical_derivatives(puma, problem, ordering):
    robot, ref = puma
    solver = gtdyn.compile(robot, problem, ordering=ordering, derivatives=True)
    rng = np.random.default_rng(1)
    for _ in range(3):
        q, v, x = rng.uniform(-1.5, 1.5, (3, 6))
        d = solver.derivatives(q, v, x)
        want = ref.aba_derivatives(q, v, x) if problem == "forward" else ref.rnea_derivatives(q, v, x)
        for got, expected in zip((d.dq, d.dv, d.dx), want):
            assert rel_err(got, expected) < PIN_TOL
        assert np.array_equal(d.value, solver(q, v, x))
        # forward: ∂q̈/∂τ = M⁻¹; inverse: ∂τ/∂q̈ = M
        M = gtdyn.mass_matrix(robot, q)
        assert rel_err(d.dx, np.linalg.inv(M) if problem == "forward" else M) < PIN_TOL


@pytest.mark.parametrize("problem, ordering", [("forward", "aba"), ("inverse", "rnea")])
def test_a_tree_groups_its_outputs_by_limb_and_matches_pinocchio(problem, ordering):
    """The quadruped on a fixed base: twelve outputs in two groups of lanes, each group's transposed solve over
    the rows its λ reaches (fewer operations than the full solve_t), the result still Pinocchio's; and the
    rendered source computes the derivatives bit for bit as the machine code does."""
    robot = gtdyn.load_robot("quadruped")
    ref = PinocchioModel(robot.source, robot)
    solver = gtdyn.compile(robot, problem, ordering=ordering, derivatives=True)
    groups = [name for name in solver.operations if name.startswith("solve_t_lanes")]
    assert len(groups) == 2
    assert all(solver.operations[name] < solver.operations["solve_t"] for name in groups)
    rng = np.random.default_rng(8)
    q, v, x = rng.uniform(-1, 1, (3, 12))
    d = solver.derivatives(q, v, x)
    want = ref.aba_derivatives(q, v, x) if problem == "forward" else ref.rnea_derivatives(q, v, x)
    for got, expected in zip((d.dq, d.dv, d.dx), want):
        assert rel_err(got, expected) < PIN_TOL
    namespace: dict = {}
    exec(solver.source, namespace)
    ws = np.zeros(solver._record["size"])
    ws[:36] = np.concatenate([q, v, x])
    namespace["dmain"](ws)
    block = ws[solver._record["start"]["out"]:][:12 * 37 + 3]
    assert np.array_equal(block[:12], d.value)
    assert np.array_equal(block[15:].reshape(3, 12, 12), np.stack([d.dq, d.dv, d.dx]))


FLOATING_ARM = """<robot name="floating_arm">
  <link name="body"><inertial><mass value="3"/><inertia ixx="0.05" ixy="0" ixz="0" iyy="0.04" iyz="0" izz="0.03"/>
    </inertial></link>
  <joint name="j1" type="revolute"><parent link="body"/><child link="l1"/><origin xyz="0.1 0 0"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="50" velocity="10"/></joint>
  <link name="l1"><inertial><origin xyz="0 0 -0.2"/><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.002"/></inertial></link>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0 0 -0.4"/>
    <axis xyz="1 0 0"/><limit lower="-3" upper="3" effort="50" velocity="10"/></joint>
  <link name="l2"><inertial><origin xyz="0 0 -0.15"/><mass value="0.5"/>
    <inertia ixx="0.004" ixy="0" ixz="0" iyy="0.004" iyz="0" izz="0.001"/></inertial></link>
  <joint name="tip_joint" type="fixed"><parent link="l2"/><child link="tip"/><origin xyz="0 0 -0.3"/></joint>
  <link name="tip"/>
</robot>"""


@pytest.mark.parametrize("name, feet", [("floating_arm", ["tip"]),
                                        pytest.param("quadruped", FEET, marks=pytest.mark.heavy)])
def test_a_floating_robot_in_contact_matches_constraint_dynamics_derivatives(name, feet, tmp_path):
    """Free flyer and point contacts: ∂[base accel; q̈; forces]/∂[ξ; q], ∂/∂[base twist; q̇], ∂/∂[base wrench; τ]
    against Pinocchio's computeConstraintDynamicsDerivatives (T·Exp(ξ), ξ = [ω; v] in the root link frame): a
    small floating arm with its tip held, and (heavy set) the quadruped on three feet."""
    if name == "floating_arm":
        path = tmp_path / "floating_arm.urdf"
        path.write_text(FLOATING_ARM)
        name = str(path)
    robot = gtdyn.load_robot(name, base="floating")
    ref = FreeFlyerPinocchio(robot.source, robot)
    contacts = PinocchioContacts(ref, feet)
    solver = gtdyn.compile(robot, "forward", contacts=[gtdyn.Contact(f) for f in feet], derivatives=True)
    rng = np.random.default_rng(2)
    pose, twist, _ = random_base(rng)
    q, v, tau = rng.uniform(-0.8, 0.8, (3, robot.num_dofs))
    m = robot.num_dofs + 6
    d = solver.derivatives(q, v, tau, base_pose=pose, base_twist=twist)
    base_accel, qdd, forces = contacts(q, v, tau, base_pose=pose, base_twist=twist)
    assert rel_err(d.value, np.concatenate([base_accel, qdd, forces])) < PIN_TOL
    ref.pin.computeConstraintDynamicsDerivatives(ref.model, ref.data, contacts.models, contacts.datas,
                                                 contacts.settings)
    order, data = ref.velocity_order(), ref.data
    motion = [np.asarray(D)[np.ix_(order, order)] for D in (data.ddq_dq, data.ddq_dv, data.ddq_dtau)]
    force = [np.asarray(D)[:, order] for D in (data.dlambda_dq, data.dlambda_dv, data.dlambda_dtau)]
    for got, motion_part, force_part in zip((d.dq, d.dv, d.dx), motion, force):
        assert rel_err(got[:m], motion_part) < PIN_TOL
        assert rel_err(got[m:], force_part) < PIN_TOL
    # the base couples every row: the groups of outputs (more than one) share one transposed solve and contraction
    groups = -(-len(d.value) // LANES)
    assert [name for name in solver.operations if name.startswith("contract_lanes")] == ["contract_lanes1"]
    assert solver.code("tangents").count("contract_lanes1(ws)") == groups > 1


@pytest.mark.parametrize("problem", ["forward", "inverse", "hybrid"])
def test_random_trees_with_prismatic_joints_match_central_differences(problem):
    robot = random_robot(7, 5, tree=True, prismatic=0.5)
    qdd_joints = ["j2", "j4"] if problem == "hybrid" else None
    solver = gtdyn.compile(robot, problem, qdd_joints=qdd_joints, derivatives=True)
    rng = np.random.default_rng(3)
    q, v, x = rng.uniform(-0.8, 0.8, (3, 5))
    d = solver.derivatives(q, v, x)
    for got, expected in zip((d.dq, d.dv, d.dx), central_differences(solver, q, v, x)):
        assert rel_err(got, expected) < FD_TOL


@pytest.mark.parametrize("problem", ["forward", "inverse"])
def test_transmissions_differentiate_along_the_couplings(tmp_path, problem):
    """A geared rotor (``<mimic>``): the drive's columns move the rotor too; the rotor's own columns are zero."""
    from test_transmissions import GEARED

    path = tmp_path / "geared.urdf"
    path.write_text(GEARED)
    robot = gtdyn.load_robot(str(path))
    solver = gtdyn.compile(robot, problem, derivatives=True)
    rng = np.random.default_rng(4)
    q, v, x = rng.uniform(-0.8, 0.8, (3, 3))
    x[robot.joint_names.index("rotor_joint")] = 0.0  # the driven joint is passive
    robot.follow_drives(q, v, x if problem == "inverse" else None)
    d = solver.derivatives(q, v, x)
    for got, expected in zip((d.dq, d.dv, d.dx), central_differences(solver, q, v, x)):
        assert rel_err(got, expected) < FD_TOL
    rotor = robot.joint_names.index("rotor_joint")
    assert not np.any(d.dq[:, rotor]) and not np.any(d.dv[:, rotor])


def test_batches_and_the_unchecked_call_give_the_same_derivatives(puma):
    robot, _ = puma
    checked = gtdyn.compile(robot, "forward", derivatives=True)
    unchecked = gtdyn.compile(robot, "forward", derivatives=True, checks=False)
    rng = np.random.default_rng(5)
    Q, V, X = rng.uniform(-1, 1, (3, 4, 6))
    batch = checked.batch_derivatives(Q, V, X, threads=2)
    assert batch.dq.shape == (4, 6, 6) and batch.value.shape == (4, 6)
    for k in range(4):
        single = checked.derivatives(Q[k], V[k], X[k])
        fast = unchecked.derivatives(Q[k], V[k], X[k])
        for a, b, c in zip((batch.value[k], batch.dq[k], batch.dv[k], batch.dx[k]),
                           (single.value, single.dq, single.dv, single.dx), (fast.value, fast.dq, fast.dv, fast.dx)):
            assert np.array_equal(a, b)
            assert rel_err(c, b) < 1e-12  # the checked value is refined once; its derivatives are the same solves


def test_verdicts_carry_over_to_derivative_calls(tmp_path):
    """A chain whose tip links weigh 1e-10 of the first (κ ~1e11): the derivative call warns as the value does;
    a non-finite input raises the same error as ``solver(...)``."""
    from test_compiled import STATE, load_chain

    chain = load_chain(tmp_path, 1e-10)
    q, v, tau = STATE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gtdyn.IllConditionedWarning)
        solver = gtdyn.compile(chain, "forward", ordering="colamd", derivatives=True)
    with pytest.warns(gtdyn.IllConditionedWarning):
        value = solver(q, v, tau)
    with pytest.warns(gtdyn.IllConditionedWarning):
        d = solver.derivatives(q, v, tau)
    assert np.array_equal(d.value, value)
    bad = np.array(q, float)
    bad[1] = np.nan
    with pytest.raises(gtdyn.ArgumentError) as plain:
        solver(bad, v, tau)
    with pytest.raises(gtdyn.ArgumentError) as derivative:
        solver.derivatives(bad, v, tau)
    assert str(derivative.value) == str(plain.value)


def test_what_is_not_covered_says_so(puma):
    robot, _ = puma
    zero = np.zeros(6)
    with pytest.raises(gtdyn.ArgumentError, match="compiled without them; compile with"):
        gtdyn.compile(robot, "forward").derivatives(zero, zero, zero)
    with pytest.raises(gtdyn.ArgumentError, match="^derivatives: expected True or False"):
        gtdyn.compile(robot, "forward", derivatives="yes")
    solver = gtdyn.compile(robot, "forward", derivatives=True)
    with pytest.raises(gtdyn.ArgumentError, match="^q: expected a vector of length 6"):
        solver.derivatives(np.zeros(5), zero, zero)
