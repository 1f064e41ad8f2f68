"""Joint-space and whole-body quantities (``gtdyn.dynamics.quantities``, ``gtdyn.compiled.quantities``) against
Pinocchio's ``crba``, ``nonLinearEffects``, ``computeGeneralizedGravity``, ``centerOfMass``,
``jacobianCenterOfMass``, ``computeCentroidalMomentum``, ``computeKineticEnergy`` and ``computePotentialEnergy``
to 1e-12 relative (max norm) on the PUMA 560, UR5, Panda and Solo-12's free flyer, and by physics: M symmetric
positive definite in every ordering, M q̈ + h = inverse dynamics' τ, T = ½ νᵀ M ν, the centroidal linear momentum
m J_c ν, the compiled M equal to the reference one."""

import dataclasses
import pickle
import warnings

import gtsam
import numpy as np
import pytest
from references import erd_path, load_quietly, rel_err

import gtdyn
from gtdyn.bench.pinocchio import FreeFlyerPinocchio, PinocchioModel
from gtdyn.compiled.quantities import compile_mass_matrix, compiled_mass_matrix
from gtdyn.dynamics.quantities import (
    bias_forces,
    center_of_mass,
    center_of_mass_jacobian,
    centroidal_momentum,
    gravity_torques,
    kinetic_energy,
    mass_matrix,
    potential_energy,
)
from gtdyn.model.build import build_robot
from gtdyn.model.description import JointSpec, LinkSpec, RobotDescription
from gtdyn.model.random import LIMITS
from gtdyn.orderings import applicable

# Both sides are direct computations in double precision: the largest error seen is ~1e-15 relative.
TOL = 1e-12
STATES = 3

ROBOTS = {"puma560": lambda: gtdyn.bundled_path("puma560"),
          "ur5": lambda: erd_path("ur_description/urdf/ur5_robot.urdf"),
          "panda": lambda: erd_path("panda_description/urdf/panda.urdf"),
          "solo12": lambda: erd_path("solo_description/robots/solo12.urdf")}
FLOATING = {"solo12"}


class Pinocchio:
    """Pinocchio's quantities in gtdyn's coordinates: ``P`` maps gtdyn's [base; joints] vectors (base [ω; v] or
    [m; f]) to Pinocchio's (free flyer [v; ω] or [f; m]), so M = Pᵀ M_pin P, h = Pᵀ h_pin and J_c = J_pin P."""

    def __init__(self, robot, path):
        self.ref = FreeFlyerPinocchio(path, robot) if robot.floating_base else PinocchioModel(path, robot)
        self.pin, self.model, self.data = self.ref.pin, self.ref.model, self.ref.data
        base = 6 if robot.floating_base else 0
        self.P = np.column_stack([self._tangent(e[base:], e[:base] if base else None)
                                  for e in np.eye(base + robot.num_dofs)])

    def _tangent(self, x, base=None):
        return self.ref.tangent(x) if base is None else self.ref.tangent(x, base)

    def _configuration(self, q, T):
        return self.ref.configuration(q) if T is None else self.ref.configuration(q, T)

    def mass_matrix(self, q, T=None):
        M = self.pin.crba(self.model, self.data, self._configuration(q, T))
        return self.P.T @ (np.triu(M) + np.triu(M, 1).T) @ self.P

    def bias_forces(self, q, v, T=None, twist=None):
        return self.P.T @ self.pin.nonLinearEffects(self.model, self.data, self._configuration(q, T),
                                                    self._tangent(v, twist))

    def gravity_torques(self, q, T=None):
        return self.P.T @ self.pin.computeGeneralizedGravity(self.model, self.data, self._configuration(q, T))

    def center_of_mass(self, q, T=None):
        return self.pin.centerOfMass(self.model, self.data, self._configuration(q, T))

    def center_of_mass_jacobian(self, q, T=None):
        return self.pin.jacobianCenterOfMass(self.model, self.data, self._configuration(q, T)) @ self.P

    def centroidal_momentum(self, q, v, T=None, twist=None):
        """[angular; linear]: Pinocchio's hg is a Force (linear first)."""
        hg = self.pin.computeCentroidalMomentum(self.model, self.data, self._configuration(q, T),
                                                self._tangent(v, twist))
        return np.concatenate([hg.angular, hg.linear])

    def kinetic_energy(self, q, v, T=None, twist=None):
        return self.pin.computeKineticEnergy(self.model, self.data, self._configuration(q, T), self._tangent(v, twist))

    def potential_energy(self, q, T=None):
        return self.pin.computePotentialEnergy(self.model, self.data, self._configuration(q, T))


def load(name: str):
    path = ROBOTS[name]()
    if name not in FLOATING:
        return load_quietly(path), path  # every joint free, as Pinocchio reads the file (Panda's gripper)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*<mimic>", category=gtdyn.ModelWarning)
        return gtdyn.load_robot(path, base="floating"), path


@pytest.fixture(scope="module", params=sorted(ROBOTS))
def setup(request):
    robot, path = load(request.param)
    return robot, Pinocchio(robot, path)


def random_states(robot, seed: int, count: int = STATES):
    """(q, v, base) per state: base is {} on a fixed base, else a random base_pose (4×4) and base_twist."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        q, v = rng.uniform(-np.pi, np.pi, robot.num_dofs), rng.uniform(-2, 2, robot.num_dofs)
        base = {}
        if robot.floating_base:
            T = np.eye(4)
            T[:3, :3], T[:3, 3] = gtsam.Rot3.Expmap(rng.normal(size=3)).matrix(), rng.normal(size=3)
            base = {"base_pose": T, "base_twist": rng.normal(size=6)}
        yield q, v, base


def pose_of(base):
    return {"base_pose": base["base_pose"]} if base else {}


def generalized_velocity(v, base):
    """ν = [base twist; q̇]: the coordinates M and J_c act on."""
    return np.concatenate([base["base_twist"], v]) if base else v


# -- against Pinocchio --------------------------------------------------------------------------------------------


def test_mass_matrix_matches_crba(setup):
    robot, pin = setup
    for q, _, base in random_states(robot, 1):
        assert rel_err(mass_matrix(robot, q, **pose_of(base)), pin.mass_matrix(q, base.get("base_pose"))) < TOL


def test_bias_and_gravity_forces_match_pinocchio(setup):
    robot, pin = setup
    for q, v, base in random_states(robot, 2):
        T, twist = base.get("base_pose"), base.get("base_twist")
        assert rel_err(bias_forces(robot, q, v, **base), pin.bias_forces(q, v, T, twist)) < TOL
        assert rel_err(gravity_torques(robot, q, **pose_of(base)), pin.gravity_torques(q, T)) < TOL


@pytest.mark.parametrize("name", ["puma560", "solo12"])
def test_compiled_bias_and_gravity_forces_match_pinocchio(name):
    """``compile_bias_forces``: one call, one batch, on a fixed and a floating base, as Pinocchio's
    ``nonLinearEffects`` and ``computeGeneralizedGravity``; a pose given to a fixed base and bad rates are named."""
    robot, path = load(name)
    pin = Pinocchio(robot, path)
    bias = gtdyn.compile_bias_forces(robot)
    states = list(random_states(robot, 9, 4))
    for q, v, base in states:
        T, twist = base.get("base_pose"), base.get("base_twist")
        assert rel_err(bias(q, v, **base), pin.bias_forces(q, v, T, twist)) < TOL
        assert rel_err(bias.gravity(q, T), pin.gravity_torques(q, T)) < TOL
        # one native entry writes the parts side by side: the solver's parts, concatenated, bit for bit; lists
        # (the Python path) give the same
        at_rest = {"base_accel": np.zeros(6)} if robot.floating_base else {}
        parts = bias.solver(q, v, np.zeros(robot.num_dofs), **base, **at_rest)
        assert np.array_equal(bias(q, v, **base), np.concatenate(parts) if robot.floating_base else parts)
        assert np.array_equal(bias(q.tolist(), v.tolist(), **base), bias(q, v, **base))
    Q, V = (np.array([state[k] for state in states]) for k in (0, 1))
    inputs = {key: np.array([base[key] for _, _, base in states]) for key in states[0][2]}
    batch = pickle.loads(pickle.dumps(bias)).batch(Q, V, threads=2, **inputs)
    assert batch.shape == (len(states), robot.nv)
    for h, (q, v, base) in zip(batch, states, strict=True):
        assert rel_err(h, bias(q, v, **base)) < TOL
    assert bias.solver.fallbacks == 0
    with pytest.raises(gtdyn.ArgumentError, match="non-finite"):
        bias(states[0][0], np.full(robot.num_dofs, np.nan), **states[0][2])
    if not robot.floating_base:
        with pytest.raises(gtdyn.ArgumentError, match="base_pose: robot 'puma560' has a fixed base"):
            bias.gravity(states[0][0], np.eye(4))


def test_center_of_mass_and_its_jacobian_match_pinocchio(setup):
    robot, pin = setup
    for q, _, base in random_states(robot, 3):
        T = base.get("base_pose")
        assert rel_err(center_of_mass(robot, q, **pose_of(base)), pin.center_of_mass(q, T)) < TOL
        assert rel_err(center_of_mass_jacobian(robot, q, **pose_of(base)), pin.center_of_mass_jacobian(q, T)) < TOL


def test_compiled_center_of_mass_its_jacobian_momentum_and_energies_match_pinocchio(setup):
    """``compile_center_of_mass``: one state (c, J_c, both from one run; h_G; the kinetic and potential energies),
    a batch on two threads after a pickle, a pose as a ``gtsam.Pose3``; on arms, a tree and a free flyer (whose base
    translation moves c and the potential energy, not J_c, h_G or the kinetic energy)."""
    robot, pin = setup
    com = gtdyn.compile_center_of_mass(robot)
    states = list(random_states(robot, 13, 4))
    for q, v, base in states:
        T, twist = base.get("base_pose"), base.get("base_twist")
        c, J = com.with_jacobian(q, T)
        assert rel_err(c, pin.center_of_mass(q, T)) < TOL and rel_err(J, pin.center_of_mass_jacobian(q, T)) < TOL
        assert rel_err(com.momentum(q, v, T, twist), pin.centroidal_momentum(q, v, T, twist)) < TOL
        assert rel_err(com.kinetic_energy(q, v, T, twist), pin.kinetic_energy(q, v, T, twist)) < TOL
        assert rel_err(com.potential_energy(q, base_pose=T), pin.potential_energy(q, T)) < TOL
        assert np.array_equal(com(q, T), c) and np.array_equal(com.jacobian(q, T), J)
        if T is not None:
            assert np.array_equal(com(q, gtsam.Pose3(T)), c)
    Q, V = (np.array([state[k] for state in states]) for k in (0, 1))
    poses = np.array([base["base_pose"] for _, _, base in states]) if robot.floating_base else None
    twists = np.array([base["base_twist"] for _, _, base in states]) if robot.floating_base else None
    arrived = pickle.loads(pickle.dumps(com))
    C, Js = arrived.batch(Q, poses, threads=2), arrived.batch_jacobian(Q, poses)
    H = arrived.batch_momentum(Q, V, poses, twists, threads=2)
    kinetic, potential = arrived.batch_kinetic_energy(Q, V, poses, twists), arrived.batch_potential_energy(
        Q, [0.0, 0.0, -9.81], poses, threads=2)
    for k, (q, v, base) in enumerate(states):
        T, twist = base.get("base_pose"), base.get("base_twist")
        assert np.array_equal(C[k], com(q, T)) and np.array_equal(Js[k], com.jacobian(q, T))
        assert np.array_equal(H[k], com.momentum(q, v, T, twist))
        assert kinetic[k] == com.kinetic_energy(q, v, T, twist) and potential[k] == com.potential_energy(q, base_pose=T)


def test_compiled_potential_energy_follows_the_gravity_asked():
    """The default gravity's −m g is kept; an array is read at every call, so changing it in place counts."""
    puma = gtdyn.load_robot("puma560")
    com = gtdyn.compile_center_of_mass(puma)
    q = np.full(6, 0.3)
    g = np.array([0.0, 0.0, -9.81])
    assert com.potential_energy(q, g) == com.potential_energy(q)
    assert rel_err(com.potential_energy(q), potential_energy(puma, q)) < TOL
    g[2] = -1.62  # the Moon
    assert rel_err(com.potential_energy(q, g), potential_energy(puma, q, gravity=g)) < TOL
    assert rel_err(com.potential_energy(q, (0.0, 0.0, -1.62)), potential_energy(puma, q, gravity=g)) < TOL
    with pytest.raises(gtdyn.ArgumentError, match="^gravity"):
        com.potential_energy(q, [0.0, np.nan, 0.0])


def test_compiled_center_of_mass_names_bad_input():
    """What the code does not certify (non-finite q, an angle beyond ±1e6 rad, a pose that is not rigid) is named
    by the reference functions' checks, in a batch with its row."""
    puma = gtdyn.load_robot("puma560")
    com = gtdyn.compile_center_of_mass(puma)
    q = np.zeros(6)
    for bad, message in ((np.array([0, np.nan, 0, 0, 0, 0.0]), "^q: non-finite"),
                         (np.array([0, 0, 2e6, 0, 0, 0.0]), "^q: joint 'joint3' at 2e\\+06 rad"),
                         ([1j] * 6, "^q: expected real numbers"), (np.zeros(5), "^q: expected a vector of length 6")):
        with pytest.raises(gtdyn.ArgumentError, match=message):
            com(bad)
    with pytest.raises(gtdyn.ArgumentError, match="^Q\\[1\\]: non-finite"):
        com.batch_jacobian(np.array([q, [np.nan] * 6]))
    with pytest.raises(gtdyn.ArgumentError, match="^v: non-finite"):
        com.momentum(q, np.array([np.inf, 0, 0, 0, 0, 0]))
    with pytest.raises(gtdyn.ArgumentError, match="^V\\[0\\]: non-finite"):
        com.batch_momentum(np.zeros((2, 6)), np.array([[np.nan] * 6, q]))
    with pytest.raises(gtdyn.ArgumentError, match="base_pose: robot 'puma560' has a fixed base"):
        com(q, np.eye(4))
    solo, _ = load("solo12")
    free = gtdyn.compile_center_of_mass(solo)
    sheared = np.eye(4)
    sheared[0, 1] = 0.5
    with pytest.raises(gtdyn.ArgumentError, match="base_pose"):
        free(np.zeros(12), sheared)
    with pytest.raises(gtdyn.ArgumentError, match="^base_pose\\[1\\]"):
        free.batch(np.zeros((2, 12)), np.array([np.eye(4), sheared]))
    with pytest.raises(gtdyn.ArgumentError, match="^base_twist"):
        free.momentum(np.zeros(12), np.zeros(12), np.eye(4), [np.nan] * 6)


def test_momentum_and_energies_match_pinocchio(setup):
    robot, pin = setup
    for q, v, base in random_states(robot, 4):
        T, twist = base.get("base_pose"), base.get("base_twist")
        assert rel_err(centroidal_momentum(robot, q, v, **base), pin.centroidal_momentum(q, v, T, twist)) < TOL
        assert rel_err(kinetic_energy(robot, q, v, **base), pin.kinetic_energy(q, v, T, twist)) < TOL
        # the same sign and reference: −Σ m g·p, zero with every CoM at the world origin
        assert rel_err(potential_energy(robot, q, **pose_of(base)), pin.potential_energy(q, T)) < TOL


# -- physics -------------------------------------------------------------------------------------------------------


def test_equations_of_motion_and_energy(setup):
    """M is symmetric positive definite, M ν̇ + h = inverse dynamics' [base wrench; τ], T = ½ νᵀ M ν, and the
    centroidal linear momentum is m ċ = m J_c ν."""
    robot, _ = setup
    rng = np.random.default_rng(5)
    for q, v, base in random_states(robot, 6, count=2):
        M = mass_matrix(robot, q, **pose_of(base))
        assert rel_err(M, M.T) < TOL
        assert np.linalg.eigvalsh(M).min() > 0
        qdd = rng.uniform(-5, 5, robot.num_dofs)
        accel = {"base_accel": rng.normal(size=6)} if base else {}
        r = gtdyn.inverse_dynamics(robot, q, v, qdd, **base, **accel, ordering="rnea")
        tau = np.concatenate([r.base_wrench, r.tau]) if base else r.tau
        nu_dot = np.concatenate([accel["base_accel"], qdd]) if base else qdd
        assert rel_err(M @ nu_dot + bias_forces(robot, q, v, **base), tau) < TOL
        nu = generalized_velocity(v, base)
        assert rel_err(kinetic_energy(robot, q, v, **base), 0.5 * nu @ M @ nu) < TOL
        mass = sum(link.mass for link in robot.links) + (robot.base.mass if robot.floating_base else 0.0)
        linear = mass * center_of_mass_jacobian(robot, q, **pose_of(base)) @ nu
        assert rel_err(centroidal_momentum(robot, q, v, **base)[3:], linear) < TOL


def test_every_inverse_ordering_gives_the_same_positive_definite_mass_matrix():
    robot = gtdyn.load_robot("puma560")
    q = np.random.default_rng(7).uniform(-np.pi, np.pi, 6)
    reference = mass_matrix(robot, q)
    for ordering in applicable("inverse"):
        M = mass_matrix(robot, q, ordering=ordering)
        assert rel_err(M, reference) < TOL, ordering
        assert np.linalg.eigvalsh(0.5 * (M + M.T)).min() > 0, ordering


@pytest.mark.parametrize("name", ["puma560", "solo12"])
def test_compiled_mass_matrix_equals_the_reference(name):
    robot, _ = load(name)
    mass = compile_mass_matrix(robot)
    states = list(random_states(robot, 8))
    for q, _, base in states:
        reference = mass_matrix(robot, q, **pose_of(base))
        assert rel_err(mass(q, base.get("base_pose")), reference) < TOL
        assert rel_err(compiled_mass_matrix(robot, q, **pose_of(base)), reference) < TOL
    Q = np.array([q for q, _, _ in states])
    poses = np.array([base["base_pose"] for _, _, base in states]) if robot.floating_base else None
    batch = mass.batch(Q, poses)
    assert batch.shape == (len(states), mass.nv, mass.nv)
    for M, (q, _, base) in zip(batch, states, strict=True):
        assert rel_err(M, mass_matrix(robot, q, **pose_of(base))) < TOL
        assert np.array_equal(M, M.T)  # each entry computed once, stored in both triangles
    assert mass.fallbacks == 0
    unchecked = compile_mass_matrix(robot, checks=False)
    assert np.array_equal(unchecked.batch(Q), batch)  # the same code after the solve at rest
    assert np.array_equal(pickle.loads(pickle.dumps(mass)).batch(Q, threads=2), batch)
    # up to 8 states run as calls (``small_batches``), 9 through the batch's own loop, as does a Fortran array
    nine = np.resize(Q, (9, Q.shape[1]))  # Q's rows again and again
    singles = np.array([mass(q) for q in nine])
    for states_ in (nine[:8], nine, np.asfortranarray(nine[:5]), nine[:1]):
        assert np.array_equal(mass.batch(states_), singles[:len(states_)])


def star(n: int):
    """n two-link arms, each on the base by its own revolute joint: M is block-diagonal, 2 × 2 blocks that
    depend on the arms' elbows."""
    offset = np.eye(4)
    offset[0, 3] = 0.3
    links, joints = [LinkSpec("base")], []
    for k in range(1, n + 1):
        for part, parent in (("a", "base"), ("b", f"a{k}")):
            links.append(LinkSpec(f"{part}{k}", mass=1.0 + k, inertia=np.diag([0.1, 0.2, 0.3]) * k,
                                  inertial_origin=offset))
            joints.append(JointSpec(f"j{part}{k}", "revolute", parent, f"{part}{k}", np.eye(4) if part == "a" else
                                    offset, np.array([0.0, 0.6, 0.8]), **LIMITS))
    return build_robot(RobotDescription(f"star{n}", tuple(links), tuple(joints)))


def test_the_compiled_mass_matrix_reaches_each_joints_subtree_only():
    """Column j is traced on the constant push of q̈_j = 1, so its code keeps joint j's subtree. On a star of n
    arms each column is one arm's: the code grows as n, where n inverse-dynamics solves grew as n². In another
    ordering it is that ordering's factorization, the same M."""
    operations = {}
    for n in (4, 8):
        mass = compile_mass_matrix(star(n))
        operations[n] = mass.operations["mass"]
        M = mass(np.linspace(-1, 1, 2 * n))
        blocks = np.kron(np.eye(n), np.ones((2, 2)))
        assert np.all(M[blocks == 0] == 0) and np.all(M[blocks == 1] != 0)
    assert 0 < operations[8] <= 2.2 * operations[4]
    robot = gtdyn.load_robot("puma560")
    q = np.random.default_rng(4).uniform(-2, 2, 6)
    at_rest = compile_mass_matrix(robot).operations["factor"]  # q̇ and q̈ constant zeros: no right-hand side
    assert at_rest < 0.5 * gtdyn.compile(robot, "inverse", gravity=np.zeros(3)).operations["factor"]
    for ordering in ("rnea", "colamd", "natural"):
        assert rel_err(compile_mass_matrix(robot, ordering=ordering)(q), mass_matrix(robot, q)) < TOL, ordering


# -- coupled joints, closed loops, the simulation's energies, bad input ---------------------------------------------


def test_coupled_joints_give_the_rigid_bodies_quantities():
    """Panda's gripper (<mimic>): read exactly, its quantities are those of every joint free; projected onto the
    coupling G they are the coupled ones, Gᵀ (M q̈ + h) = the actuated τ of inverse dynamics."""
    path = ROBOTS["panda"]()
    coupled, free = gtdyn.load_robot(path), load_quietly(path)
    rng = np.random.default_rng(9)
    q, v, qdd = rng.uniform(-1, 1, (3, coupled.num_dofs))
    for x in (q, v, qdd):
        coupled.follow_drives(x)
    M = mass_matrix(coupled, q)
    assert rel_err(M, mass_matrix(free, q)) < TOL
    h = bias_forces(coupled, q, v)
    assert rel_err(h, bias_forces(free, q, v)) < TOL
    G = np.eye(coupled.num_dofs)
    for t in coupled.transmissions:
        G[t.dependent - 1] = 0.0
        for j, ratio in t.terms:
            G[t.dependent - 1, j - 1] = ratio
    tau = gtdyn.inverse_dynamics(coupled, q, v, qdd).tau
    assert rel_err(G.T @ (M @ qdd + h), tau) < TOL


def test_armature_adds_to_the_diagonal_only():
    """transmissions="approximate": each drive's reflected rotor inertia is on M's diagonal, in no body's energy."""
    robot = gtdyn.load_robot(ROBOTS["panda"](), transmissions="approximate")
    bare = dataclasses.replace(robot, joints=tuple(dataclasses.replace(j, armature=0.0) for j in robot.joints))
    armature = np.array([j.armature for j in robot.joints])
    assert armature.max() > 0
    q, v = np.random.default_rng(10).uniform(-1, 1, (2, robot.num_dofs))
    assert rel_err(mass_matrix(robot, q) - mass_matrix(bare, q), np.diag(armature)) < TOL
    assert kinetic_energy(robot, q, v) == kinetic_energy(bare, q, v)


def test_closed_loops_have_kinematic_quantities_only():
    robot = gtdyn.load_robot("five_bar")
    state = gtdyn.close_loops(robot, q={"j1": 0.2, "j2": -0.1}, v={"j1": 0.5, "j2": 0.3})
    J = center_of_mass_jacobian(robot, state.q)
    assert np.array_equal(J[:, -1], np.zeros(3))  # the loop-closing joint moves no body of the spanning tree
    mass = sum(link.mass for link in robot.links)
    assert rel_err(centroidal_momentum(robot, state.q, state.v)[3:], mass * J @ state.v) < TOL
    for function in (mass_matrix, gravity_torques):
        with pytest.raises(gtdyn.ArgumentError, match="robot: the mass matrix, bias and gravity forces per joint does "
                                                      "not cover closed loops, and 'five_bar' has closed loops"):
            function(robot, state.q)


def test_the_simulation_energies_are_these_functions():
    robot = gtdyn.load_robot("rr")
    run = gtdyn.simulate(robot, [0.3, -0.5], [0.1, 0.2], dt=1e-3, steps=5, gravity=(0, -9.81, 0))
    for q, v, kinetic, potential in zip(run.q, run.v, run.kinetic, run.potential, strict=True):
        assert kinetic == kinetic_energy(robot, q, v)
        assert potential == potential_energy(robot, q, gravity=(0, -9.81, 0))


def test_bad_arguments_are_named():
    robot = gtdyn.load_robot("puma560")
    q = np.zeros(6)
    cases = [(lambda: mass_matrix(robot, np.zeros(5)), "q: expected a vector of length 6"),
             (lambda: mass_matrix("puma560", q), "robot: expected a gtdyn.Robot"),
             (lambda: mass_matrix(robot, q, base_pose=np.eye(4)), "base_pose: robot 'puma560' has a fixed base"),
             (lambda: mass_matrix(robot, q, ordering="aba"), "ordering"),
             (lambda: bias_forces(robot, q, [np.nan] * 6), "v: non-finite"),
             (lambda: gravity_torques(robot, q, gravity=(0, 0)), "gravity: expected a vector of length 3"),
             (lambda: potential_energy(robot, q, gravity=(0, 0, 1e9)), "gravity: 1e\\+09"),
             (lambda: kinetic_energy(robot, q, np.ones(7)), "v: expected a vector of length 6"),
             (lambda: center_of_mass(robot, q, base_pose=np.eye(4)), "base_pose: robot 'puma560' has a fixed base"),
             (lambda: centroidal_momentum(robot, q, q, base_twist=np.zeros(6)), "base_twist: robot 'puma560'"),
             (lambda: center_of_mass_jacobian(robot, [1j] * 6), "q: expected real numbers")]
    for call, message in cases:
        with pytest.raises(gtdyn.ArgumentError, match=message):
            call()
    solo, _ = load("solo12")
    with pytest.raises(gtdyn.ArgumentError, match="base_pose: expected a gtsam.Pose3 or a finite 4×4 matrix"):
        center_of_mass(solo, np.zeros(12), base_pose=np.eye(3))
    mass = compile_mass_matrix(robot)
    with pytest.raises(gtdyn.ArgumentError, match="Q: expected 1 arrays of shape"):
        mass.batch(np.zeros((2, 5)))
    with pytest.raises(gtdyn.ArgumentError, match="base_pose: robot 'puma560' has a fixed base"):
        mass.batch(np.zeros((2, 6)), np.array([np.eye(4)] * 2))
    with pytest.raises(gtdyn.ArgumentError, match="base_pose: robot 'puma560' has a fixed base"):
        mass(q, np.eye(4))
    for bad, message in (([0, 0, np.nan, 0, 0, 0], "q: non-finite"), ([0, 0, 0, 2e6, 0, 0], "q: joint 'joint4'")):
        with pytest.raises(gtdyn.ArgumentError, match=message):  # the code does not certify it: the boundary names it
            mass(np.array(bad, dtype=float))
        with pytest.raises(gtdyn.ArgumentError, match=message):
            mass.batch(np.array([q, bad]))
    free = compile_mass_matrix(solo)
    twisted = np.eye(4)
    twisted[0, 1] = 0.5
    with pytest.raises(gtdyn.ArgumentError, match="base_pose"):  # M does not use the pose, but it is checked
        free(np.zeros(12), twisted)
    with pytest.raises(gtdyn.ArgumentError, match="base_pose"):
        free.batch(np.zeros((2, 12)), np.array([np.eye(4), twisted]))


@pytest.mark.heavy
def test_talos_free_flyer_matches_pinocchio():
    """Talos (full, 32 joints, a free flyer): every quantity at a few states, and its compiled mass matrix."""
    path = erd_path("talos_data/robots/talos_full_v2.urdf")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*<mimic>", category=gtdyn.ModelWarning)
        robot = gtdyn.load_robot(path, base="floating", transmissions="independent")
    pin = Pinocchio(robot, path)
    mass = compile_mass_matrix(robot)
    for q, v, base in random_states(robot, 10):
        T, twist = base["base_pose"], base["base_twist"]
        M = mass_matrix(robot, q, base_pose=T)
        assert rel_err(M, pin.mass_matrix(q, T)) < TOL
        assert rel_err(mass(q, T), M) < TOL
        assert rel_err(bias_forces(robot, q, v, **base), pin.bias_forces(q, v, T, twist)) < TOL
        assert rel_err(gravity_torques(robot, q, base_pose=T), pin.gravity_torques(q, T)) < TOL
        assert rel_err(center_of_mass_jacobian(robot, q, base_pose=T), pin.center_of_mass_jacobian(q, T)) < TOL
        assert rel_err(centroidal_momentum(robot, q, v, **base), pin.centroidal_momentum(q, v, T, twist)) < TOL
        assert rel_err(kinetic_energy(robot, q, v, **base), pin.kinetic_energy(q, v, T, twist)) < TOL
        assert rel_err(potential_energy(robot, q, base_pose=T), pin.potential_energy(q, T)) < TOL
