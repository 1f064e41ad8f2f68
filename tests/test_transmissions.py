"""Transmissions (issue 14, first part): a geared rotor written as a URDF ``<mimic>``, loaded with
``transmissions="exact"``, against a reference written here — Pinocchio on the unconstrained model (every joint
independent) projected onto the coupling, G = ∂q/∂q_independent:

    forward:  q̈_ind = (Gᵀ M G)⁻¹ Gᵀ (τ − h),   q̈ = G q̈_ind
    inverse:  τ_ind = Gᵀ (M q̈ + h)            (the driven joint is passive: its torque comes through the gear)

at states that keep the coupling (q_rotor = N q_1 + offset, q̇_rotor = N q̇_1)."""

import numpy as np
import pytest
from references import coupling, rel_err

import gtdyn
from gtdyn.orderings import applicable

N, OFFSET = 9.0, 0.25  # gear ratio and offset of the rotor's <mimic>
TOL = 1e-9

GEARED = f"""<robot name="geared">
  <link name="base"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="50" velocity="10"/></joint>
  <link name="l1"><inertial><origin xyz="0.4 0 0"/><mass value="1.5"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.08" iyz="0" izz="0.08"/></inertial></link>
  <joint name="rotor_joint" type="revolute"><parent link="base"/><child link="rotor"/>
    <origin xyz="0 0 -0.1"/><axis xyz="0 0 1"/>
    <limit lower="-30" upper="30" effort="5" velocity="90"/><mimic joint="j1" multiplier="{N}" offset="{OFFSET}"/></joint>
  <link name="rotor"><inertial><mass value="0.3"/>
    <inertia ixx="0.0002" ixy="0" ixz="0" iyy="0.0002" iyz="0" izz="0.0003"/></inertial></link>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0.8 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="50" velocity="10"/></joint>
  <link name="l2"><inertial><origin xyz="0.3 0 0"/><mass value="0.8"/>
    <inertia ixx="0.005" ixy="0.001" ixz="0" iyy="0.03" iyz="0" izz="0.03"/></inertial></link>
</robot>"""  # noqa: E501


@pytest.fixture(scope="module")
def geared(tmp_path_factory):
    path = tmp_path_factory.mktemp("geared") / "geared.urdf"
    path.write_text(GEARED)
    robot = gtdyn.load_robot(str(path), transmissions="exact")
    return str(path), robot


class ProjectedReference:
    """Pinocchio on the unconstrained model, projected onto q = G q_ind + offset (G constant: the coupling is
    linear)."""

    def __init__(self, path, robot):
        from gtdyn.bench.pinocchio import PinocchioModel

        self.pin = PinocchioModel(path, robot)
        names = robot.joint_names
        self.independent = [names.index("j1"), names.index("j2")]
        self.G = np.zeros((len(names), 2))
        self.G[names.index("j1"), 0] = 1.0
        self.G[names.index("j2"), 1] = 1.0
        self.G[names.index("rotor_joint"), 0] = N
        self.offset = np.zeros(len(names))
        self.offset[names.index("rotor_joint")] = OFFSET

    def state(self, q_ind, v_ind):
        return self.G @ q_ind + self.offset, self.G @ v_ind

    def forward(self, q, v, tau):
        M, h = self.pin.mass_matrix(q), self.pin.nonlinear_effects(q, v)
        return self.G @ np.linalg.solve(self.G.T @ M @ self.G, self.G.T @ (tau - h))

    def inverse(self, q, v, qdd):
        M, h = self.pin.mass_matrix(q), self.pin.nonlinear_effects(q, v)
        return self.G.T @ (M @ qdd + h)


def test_the_mimic_joint_is_coupled_and_driven(geared):
    _, robot = geared
    (t,) = robot.transmissions
    assert robot.joints[t.dependent - 1].name == "rotor_joint" and not robot.joint("rotor_joint").actuated
    assert [(robot.joints[k - 1].name, ratio) for k, ratio in t.terms] == [("j1", N)] and t.offset == OFFSET


@pytest.mark.parametrize("ordering", [None, *applicable("forward")])
def test_forward_dynamics_matches_the_projected_reference(geared, ordering):
    path, robot = geared
    ref = ProjectedReference(path, robot)
    rng = np.random.default_rng(41)
    for _ in range(3):
        q, v = ref.state(*rng.uniform(-1, 1, (2, 2)))
        tau = np.zeros(robot.num_dofs)
        tau[ref.independent] = rng.uniform(-2, 2, 2)
        r = gtdyn.forward_dynamics(robot, q, v, tau, ordering=ordering)
        assert rel_err(r.qdd, ref.forward(q, v, tau)) < TOL
        assert abs(r.qdd[robot.joint_names.index("rotor_joint")] - N * r.qdd[robot.joint_names.index("j1")]) < 1e-9


@pytest.mark.parametrize("ordering", [None, *applicable("inverse")])
def test_inverse_dynamics_matches_the_projected_reference_and_round_trips(geared, ordering):
    path, robot = geared
    ref = ProjectedReference(path, robot)
    rng = np.random.default_rng(42)
    for _ in range(3):
        q, v = ref.state(*rng.uniform(-1, 1, (2, 2)))
        qdd = ref.G @ rng.uniform(-2, 2, 2)
        r = gtdyn.inverse_dynamics(robot, q, v, qdd, ordering=ordering)
        assert rel_err(r.tau[ref.independent], ref.inverse(q, v, qdd)) < TOL
        assert r.tau[robot.joint_names.index("rotor_joint")] == 0.0
        back = gtdyn.forward_dynamics(robot, q, v, r.tau)
        assert rel_err(back.qdd, qdd) < TOL


def test_pinocchios_own_mimic_agrees(geared):
    """Pinocchio ≥ 3.4 reads <mimic> itself (``mimic=True``; its M and h from CRBA and nonLinearEffects): the
    same accelerations of the driving joints."""
    import pinocchio as pin

    path, robot = geared
    try:
        model = pin.buildModelFromUrdf(path, mimic=True)
    except (TypeError, RuntimeError, ValueError):
        pytest.skip("this Pinocchio does not read <mimic>")
    ref = ProjectedReference(path, robot)
    data = model.createData()
    q, v = ref.state(np.array([0.3, -0.7]), np.array([0.5, 1.1]))
    tau = np.zeros(robot.num_dofs)
    tau[ref.independent] = [1.0, -0.5]
    pin_q = pin.neutral(model)
    for name in ("j1", "j2", "rotor_joint"):
        joint = model.joints[model.getJointId(name)]
        if joint.nq == 1 and joint.idx_q >= 0 and name != "rotor_joint":
            pin_q[joint.idx_q] = q[robot.joint_names.index(name)]
    if model.nv != 2:
        pytest.skip(f"Pinocchio's mimic model has {model.nv} velocities; the comparison below assumes 2")
    pin_v, pin_tau = np.zeros(2), np.zeros(2)
    for name in ("j1", "j2"):
        k = model.joints[model.getJointId(name)].idx_v
        pin_v[k], pin_tau[k] = v[robot.joint_names.index(name)], tau[robot.joint_names.index(name)]
    M = pin.crba(model, data, pin_q)  # Pinocchio's aba refuses mimic joints; CRBA and RNEA take them
    M = np.triu(M) + np.triu(M, 1).T
    a = np.linalg.solve(M, pin_tau - pin.nonLinearEffects(model, data, pin_q, pin_v))
    want = [a[model.joints[model.getJointId(name)].idx_v] for name in ("j1", "j2")]
    got = gtdyn.forward_dynamics(robot, q, v, tau).qdd[ref.independent]
    assert rel_err(got, want) < TOL


def test_states_that_break_the_coupling_are_named(geared):
    _, robot = geared
    q = np.zeros(robot.num_dofs)  # rotor at 0, but it must sit at the offset
    with pytest.raises(gtdyn.ArgumentError, match="q: joint 'rotor_joint' is coupled .* must be 0.25"):
        gtdyn.forward_dynamics(robot, q, np.zeros(3), np.zeros(3))
    with pytest.raises(gtdyn.ArgumentError, match="transmissions"):
        gtdyn.load_robot(geared[0], transmissions="armature")


def test_the_transmission_force_is_a_variable_of_the_graph_and_the_drawings(geared, tmp_path):
    """λ1 is eliminated last in ABA (with the multipliers of Lagrange's method) and drawn with its own colour."""
    from gtdyn.plot.dag import draw_dag
    from gtdyn.plot.factor_graph import draw_factor_graph

    _, robot = geared
    q = np.zeros(robot.num_dofs)
    q[robot.joint_names.index("rotor_joint")] = OFFSET
    r = gtdyn.forward_dynamics(robot, q, np.zeros(3), np.zeros(3), ordering="aba")
    assert r.ordering[-1] == "L1"
    labels = {d["label"]: d for _, d in r.dag().nodes(data=True)}
    assert labels["L1"]["kind"] == "transmission_force" and labels["L1"]["pretty"] == "λ1"
    draw_dag(r.dag(), str(tmp_path / "dag.png"))
    from matplotlib.patches import FancyBboxPatch

    figure = draw_dag(r.dag(), robot=robot)  # with the robot: the cluster {j1, rotor} outlined and named
    axes = figure.axes[0]
    assert sum(isinstance(p, FancyBboxPatch) for p in axes.patches) == 1
    assert [t.get_text() for t in axes.texts if t.get_text().startswith("cluster")] == ["cluster 1: j1, rotor_joint"]
    draw_factor_graph(r.graph, path=str(tmp_path / "graph.png"))
    assert (tmp_path / "dag.png").stat().st_size > 0 and (tmp_path / "graph.png").stat().st_size > 0


MULTI = """<robot name="{name}" xmlns:gtdyn="https://gtdyn.dev/urdf">
  <link name="base"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="50" velocity="10"/></joint>
  <link name="l1"><inertial><origin xyz="0.4 0 0"/><mass value="1.5"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.08" iyz="0" izz="0.08"/></inertial></link>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0.8 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="50" velocity="10"/></joint>
  <link name="l2"><inertial><origin xyz="0.3 0 0"/><mass value="0.8"/>
    <inertia ixx="0.005" ixy="0.001" ixz="0" iyy="0.03" iyz="0" izz="0.03"/></inertial></link>
  <joint name="r1" type="revolute"><parent link="base"/><child link="rotor1"/><origin xyz="0 0 -0.1"/>
    <axis xyz="0 0 1"/><limit lower="-30" upper="30" effort="5" velocity="90"/></joint>
  <link name="rotor1"><inertial><mass value="0.3"/>
    <inertia ixx="0.0002" ixy="0" ixz="0" iyy="0.0002" iyz="0" izz="0.0003"/></inertial></link>
  <joint name="r2" type="revolute"><parent link="base"/><child link="rotor2"/><origin xyz="0 0.1 -0.1"/>
    <axis xyz="1 0 0"/><limit lower="-30" upper="30" effort="5" velocity="90"/></joint>
  <link name="rotor2"><inertial><origin xyz="0 0 0.02"/><mass value="0.2"/>
    <inertia ixx="0.0004" ixy="0" ixz="0" iyy="0.0002" iyz="0" izz="0.0002"/></inertial></link>
  <joint name="tip_fixed" type="fixed"><parent link="l2"/><child link="tip"/><origin xyz="0.6 0 0"/></joint>
  <link name="tip"/>
  {blocks}
</robot>"""
BELT = [("r1", (("j1", 6.0), ("j2", -2.0)), 0.1)]  # one rotor driving both joints through a belt
DIFFERENTIAL = [("r1", (("j1", 3.0), ("j2", 3.0)), 0.0), ("r2", (("j1", 3.0), ("j2", -3.0)), 0.2)]


def multi_robot(tmp_path, name, transmissions, reading="exact"):
    blocks = "\n  ".join(
        f'<gtdyn:transmission joint="{joint}" offset="{offset}">'
        + "".join(f'<gtdyn:drive joint="{j}" ratio="{r}"/>' for j, r in drives) + "</gtdyn:transmission>"
        for joint, drives, offset in transmissions)
    path = tmp_path / f"{name}.urdf"
    path.write_text(MULTI.format(name=name, blocks=blocks))
    return str(path), gtdyn.load_robot(str(path), transmissions=reading)


@pytest.mark.parametrize("case", ["belt", "differential"])
def test_belts_and_differentials_match_the_projected_reference(tmp_path, case):
    """<gtdyn:transmission> blocks: a rotor driven by two joints through a belt, and a differential (two rotors,
    each the sum or difference of the two joints). The free rotors of the belt case are r2 (uncoupled)."""
    from gtdyn.bench.pinocchio import PinocchioModel

    transmissions = BELT if case == "belt" else DIFFERENTIAL
    path, robot = multi_robot(tmp_path, case, transmissions)
    names = robot.joint_names
    assert len(robot.transmissions) == len(transmissions)
    G, offset = coupling(names, transmissions)
    free = [n for n in names if n not in {t[0] for t in transmissions}]  # G's columns
    pin = PinocchioModel(path, robot)
    rng = np.random.default_rng(43)
    for ordering in [None, "aba", "crba", "colamd"]:
        x, dx = rng.uniform(-1, 1, (2, len(free)))
        q, v = G @ x + offset, G @ dx
        tau = np.zeros(len(names))
        tau[[names.index(n) for n in free]] = rng.uniform(-1, 1, len(free))
        M, h = pin.mass_matrix(q), pin.nonlinear_effects(q, v)
        want = G @ np.linalg.solve(G.T @ M @ G, G.T @ (tau - h))
        assert rel_err(gtdyn.forward_dynamics(robot, q, v, tau, ordering=ordering).qdd, want) < TOL
        r = gtdyn.inverse_dynamics(robot, q, v, want, ordering="rnea" if ordering in ("aba", "crba") else ordering)
        assert rel_err(r.tau[[names.index(n) for n in free]], G.T @ (M @ want + h)) < TOL


@pytest.mark.parametrize("reading", ["exact", "approximate"])
def test_mimic_elements_are_checked(tmp_path, reading):
    """A <mimic> that mimics itself, or mimics a fixed joint, is refused in both coupled readings (the approximate
    reading used to weld the joint silently); a fixed joint's own <mimic> (Talos's grippers have them) has nothing
    to couple, and is dropped with a warning rather than silently."""
    mimic = f'<mimic joint="j1" multiplier="{N}" offset="{OFFSET}"/>'
    tip = '<joint name="tip_fixed" type="fixed"><parent link="l2"/><child link="tip"/><origin xyz="0.3 0 0"/>{}</joint>'
    fixed = GEARED.replace("</robot>", tip.format("") + '<link name="tip"/></robot>')
    cases = {"self": (GEARED.replace(mimic, '<mimic joint="rotor_joint"/>'), "driven by rotor_joint, which is driven"),
             "mimics a fixed joint": (fixed.replace(mimic, '<mimic joint="tip_fixed"/>'),
                                      "names 'tip_fixed', a fixed joint")}
    for name, (text, message) in cases.items():
        path = tmp_path / f"{name.replace(' ', '_')}.urdf"
        path.write_text(text)
        with pytest.raises(gtdyn.ModelError, match=message):
            gtdyn.load_robot(str(path), transmissions=reading)
    path = tmp_path / "fixed_mimics.urdf"
    path.write_text(GEARED.replace("</robot>", tip.format('<mimic joint="j1"/>') + '<link name="tip"/></robot>'))
    with pytest.warns(gtdyn.ModelWarning, match="fixed joint.* with a transmission, ignored: tip_fixed mimics j1"):
        robot = gtdyn.load_robot(str(path), transmissions=reading)
    assert "tip_fixed" not in [t.name.split()[0] for t in robot.transmissions]


@pytest.mark.parametrize("reading", ["exact", "approximate", "independent"])
def test_transmission_blocks_are_checked(tmp_path, reading):
    """Both coupled readings check the blocks the same way; the independent reading ignores them (as it ignores
    <mimic>, like Pinocchio's default reading) and says so."""
    cases = {"unknown": ([("r1", (("j9", 1.0),), 0.0)], "names 'j9', which is not a joint"),
             "fixed": ([("r1", (("tip_fixed", 1.0),), 0.0)], "names 'tip_fixed', a fixed joint"),
             "self": ([("r1", (("r1", 1.0),), 0.0)], "driven by r1, which is driven itself"),
             "chained": ([("r1", (("j1", 1.0),), 0.0), ("r2", (("r1", 1.0),), 0.0)], "driven by r1, which is driven"),
             "twice": ([("r1", (("j1", 1.0),), 0.0), ("r1", (("j2", 1.0),), 0.0)], "driven by more than one"),
             "repeated drive": ([("r1", (("j1", 1.0), ("j1", 2.0)), 0.0)], "names drive joint j1 more than once"),
             "huge ratio": ([("r1", (("j1", 1e300),), 0.0)], "ratio 1e\\+300, beyond")}
    if reading == "independent":
        for name, (transmissions, _) in cases.items():
            with pytest.warns(gtdyn.ModelWarning, match=f"{len(transmissions)} <gtdyn:transmission> block.* ignored"):
                _, robot = multi_robot(tmp_path, name.replace(" ", "_"), transmissions, reading)
            assert robot.transmissions == () and all(j.actuated for j in robot.joints)
        return
    for name, (transmissions, message) in cases.items():
        with pytest.raises(gtdyn.ModelError, match=message):
            multi_robot(tmp_path, name.replace(" ", "_"), transmissions, reading)
    path = tmp_path / "ros.urdf"  # ROS's own <transmission> (for ros_control) is not gtdyn's, and is not read
    path.write_text(MULTI.format(name="ros", blocks='<transmission name="t"><type>SimpleTransmission</type>'
                                                   '<joint name="j1"/></transmission>'))
    assert gtdyn.load_robot(str(path), transmissions="exact").transmissions == ()


def test_compiled_solvers_keep_the_coupling(tmp_path, monkeypatch):
    """Compiled forward, inverse and hybrid solvers of the geared arm and the differential agree with the reference
    path; a state that breaks the coupling goes to the reference path, which names the joint."""
    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "geared.urdf"
    path.write_text(GEARED)
    for robot in (gtdyn.load_robot(str(path), transmissions="exact"),
                  multi_robot(tmp_path, "differential", DIFFERENTIAL)[1]):
        names = robot.joint_names
        driving = ["j1", "j2"]
        G = np.zeros((len(names), 2))
        offset = np.zeros(len(names))
        for c, n in enumerate(driving):
            G[names.index(n), c] = 1.0
        for t in robot.transmissions:
            for j, ratio in t.terms:
                G[t.dependent - 1, driving.index(names[j - 1])] = ratio
            offset[t.dependent - 1] = t.offset
        x, dx, ddx = np.random.default_rng(44).uniform(-1, 1, (3, 2))
        q, v, qdd = G @ x + offset, G @ dx, G @ ddx
        tau = np.zeros(len(names))
        tau[[names.index(n) for n in driving]] = [0.7, -0.4]
        forward = gtdyn.compile(robot, "forward", ordering="aba")
        assert rel_err(forward(q, v, tau), gtdyn.forward_dynamics(robot, q, v, tau, ordering="aba").qdd) < TOL
        inverse = gtdyn.compile(robot, "inverse", ordering="rnea")
        assert rel_err(inverse(q, v, qdd), gtdyn.inverse_dynamics(robot, q, v, qdd, ordering="rnea").tau) < TOL
        assert forward.fallbacks == inverse.fallbacks == 0
        broken = q.copy()
        broken[robot.transmissions[0].dependent - 1] += 0.01
        with pytest.raises(gtdyn.ArgumentError, match="is coupled"):
            forward(broken, v, tau)


def test_the_armature_approximation_is_aba_with_reflected_inertia_on_the_diagonal(geared):
    """transmissions="approximate": the rotor joint is welded and j1 gains N² I_rotor. Reference written here:
    Pinocchio's model with the rotor locked (buildReducedModel), M + diag(N² I_rotor, 0). For a rotor spinning
    about an axis fixed in the base the approximation is exact: the coupled model gives the same q̈."""
    import pinocchio as pin

    path, exact = geared
    robot = gtdyn.load_robot(path, transmissions="approximate")
    assert robot.joint_names == ["j1", "j2"]
    reflected = N ** 2 * 0.0003  # the rotor's izz, about its axis (its CoM is on it)
    assert abs(robot.joint("j1").armature - reflected) < 1e-15 and robot.joint("j2").armature == 0.0
    model = pin.buildModelFromUrdf(path)
    model = pin.buildReducedModel(model, [model.getJointId("rotor_joint")], pin.neutral(model))
    data = model.createData()
    order = [model.joints[model.getJointId(name)].idx_v for name in robot.joint_names]
    rng = np.random.default_rng(45)
    for ordering in [None, *applicable("forward")]:
        q, v, tau = rng.uniform(-1, 1, (3, 2))
        qp, vp, tp = np.zeros(2), np.zeros(2), np.zeros(2)
        qp[order], vp[order], tp[order] = q, v, tau
        M = pin.crba(model, data, qp)
        M = np.triu(M) + np.triu(M, 1).T + np.diag([reflected if i == order[0] else 0.0 for i in range(2)])
        want = np.linalg.solve(M, tp - pin.nonLinearEffects(model, data, qp, vp))[order]
        got = gtdyn.forward_dynamics(robot, q, v, tau, ordering=ordering).qdd
        assert rel_err(got, want) < TOL
        back = gtdyn.inverse_dynamics(robot, q, v, got, ordering="rnea").tau
        assert rel_err(back, tau) < TOL
        # the exact coupled model, at the matching state (rotor at N q1 + offset, spinning at N q̇1)
        names = exact.joint_names
        q_full, v_full, tau_full = np.zeros(3), np.zeros(3), np.zeros(3)
        for value, full in ((q, q_full), (v, v_full), (tau, tau_full)):
            full[[names.index("j1"), names.index("j2")]] = value
        q_full[names.index("rotor_joint")] = N * q[0] + OFFSET
        v_full[names.index("rotor_joint")] = N * v[0]
        coupled = gtdyn.forward_dynamics(exact, q_full, v_full, tau_full).qdd
        assert rel_err(coupled[[names.index("j1"), names.index("j2")]], got) < TOL


KNEE = """<robot name="knee">
  <link name="base"/>
  <joint name="hip" type="revolute"><parent link="base"/><child link="thigh"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="50" velocity="10"/></joint>
  <link name="thigh"><inertial><origin xyz="0 0 -0.1"/><mass value="1.0"/>
    <inertia ixx="0.004" ixy="0" ixz="0" iyy="0.004" iyz="0" izz="0.001"/></inertial></link>
  <joint name="knee" type="revolute"><parent link="thigh"/><child link="shank"/><origin xyz="0 0 -0.2"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="50" velocity="10"/></joint>
  <link name="shank"><inertial><origin xyz="0 0 -0.1"/><mass value="0.2"/>
    <inertia ixx="0.0007" ixy="0" ixz="0" iyy="0.0007" iyz="0" izz="0.0001"/></inertial></link>
  <joint name="knee_rotor" type="revolute"><parent link="thigh"/><child link="rotor"/><origin xyz="0 0.05 -0.05"/>
    <axis xyz="0 1 0"/><limit lower="-30" upper="30" effort="5" velocity="90"/><mimic joint="knee" multiplier="9"/></joint>
  <link name="rotor"><inertial><mass value="0.1"/>
    <inertia ixx="0.00003" ixy="0" ixz="0" iyy="0.00006" iyz="0" izz="0.00003"/></inertial></link>
</robot>
"""  # noqa: E501


def test_the_armature_approximation_misses_a_rotor_riding_on_a_moving_link(tmp_path):
    """A knee rotor mounted on the thigh (N = 9), as on the MIT Mini Cheetah: it spins with the hip too, so the
    exact coupled model has hip–knee cross terms N·I_rotor that the diagonal armature leaves out. The
    approximation's q̈ is then off by several percent (3.7% median, 6.4% at worst over these 20 states) —
    the error transmissions="approximate" exists to show."""
    path = tmp_path / "knee.urdf"
    path.write_text(KNEE)
    exact = gtdyn.load_robot(str(path), transmissions="exact")
    approx = gtdyn.load_robot(str(path), transmissions="approximate")
    names = exact.joint_names
    drives = [names.index("hip"), names.index("knee")]
    rng = np.random.default_rng(0)
    errors = []
    for _ in range(20):
        q, v, tau = rng.uniform(-1, 1, (3, 2)) * np.array([[1.0], [3.0], [1.0]])
        q_full, v_full, tau_full = np.zeros(3), np.zeros(3), np.zeros(3)
        for value, full in ((q, q_full), (v, v_full), (tau, tau_full)):
            full[drives] = value
        q_full[names.index("knee_rotor")], v_full[names.index("knee_rotor")] = 9 * q[1], 9 * v[1]
        want = gtdyn.forward_dynamics(exact, q_full, v_full, tau_full).qdd[drives]
        errors.append(rel_err(gtdyn.forward_dynamics(approx, q, v, tau).qdd, want))
    assert 0.01 < np.median(errors) < 0.1


ROTOR = """
    <link name="rotor"><pose>0 -0.05 0 0 0 0</pose>
      <inertial><mass>0.1</mass><inertia><ixx>0.00002</ixx><iyy>0.00004</iyy><izz>0.00002</izz>
        <ixy>0</ixy><ixz>0</ixz><iyz>0</iyz></inertia></inertial></link>
    <joint name="motor" type="revolute"><parent>base</parent><child>rotor</child><axis><xyz>0 1 0</xyz></axis>
      <gtdyn:actuated>false</gtdyn:actuated></joint>
    <gtdyn:transmission joint="motor"><gtdyn:drive joint="j1" ratio="12"/></gtdyn:transmission>
  </model>"""


def test_a_four_bar_driven_through_a_geared_rotor_matches_lagrange_multipliers(tmp_path):
    """Loops and transmissions in one mechanism: the bundled four-bar with a rotor on the base geared 12:1 to its
    crank. Reference written here: Pinocchio on the spanning tree (tests/loop_references.py) with the loop's
    point-coincidence rows and the transmission's row q̈_motor − 12 q̈_j1 = 0 in one dense KKT system."""
    from loop_references import LagrangeReference

    from gtdyn.io.sdf import read_sdf
    from gtdyn.model.build import build_robot

    path = tmp_path / "geared_four_bar.sdf"
    path.write_text(open(gtdyn.bundled_path("four_bar")).read().replace("  </model>", ROTOR))
    description = read_sdf(str(path))
    robot = build_robot(description, transmissions="exact")
    reference = LagrangeReference(description, robot)
    names = robot.joint_names
    start = gtdyn.close_loops(robot, {"j1": 0.4, "motor": 12 * 0.4}, {"j1": 0.7, "motor": 12 * 0.7})
    tau = np.zeros(len(names))
    tau[names.index("j1")] = 0.3

    tree = reference.tree_index
    qt, vt = start.q[tree], start.v[tree]
    M, h = reference._mass_and_bias(qt, vt)
    J, drift = reference._constraint(qt, vt)
    row = np.zeros(len(tree))
    row[tree.index(names.index("motor"))], row[tree.index(names.index("j1"))] = 1.0, -12.0
    J, drift = np.vstack([J, row]), np.concatenate([drift, [0.0]])
    K = np.block([[M, -J.T], [J, np.zeros((len(J), len(J)))]])
    solution = np.linalg.lstsq(K, np.concatenate([tau[tree] - h, -drift]), rcond=None)[0]
    want = solution[:len(tree)]
    for ordering in applicable("forward"):  # the cluster orderings and paper 003's two baselines among them
        got = gtdyn.forward_dynamics(robot, start.q, start.v, tau, ordering=ordering).qdd
        assert rel_err(got[tree], want) < TOL, ordering
    (cluster,) = [c for c in gtdyn.orderings.clusters(robot) if len(c) > 1]
    assert sorted(robot.joint_names[j - 1] for j in cluster) == ["j1", "j2", "j3", "j4", "motor"]


def test_cluster_orderings_eliminate_each_cluster_together(geared):
    """C-ABA on the geared arm: j2 (a cluster of its own) first, then the cluster {j1, rotor}: its wrenches and
    V̇, its transmission's λ, then its q̈ — contiguous, as one articulated body of paper 003's Algorithm 1. The
    projection baseline eliminates the constraint first; Lagrange's last."""
    _, robot = geared
    q = np.zeros(robot.num_dofs)
    q[robot.joint_names.index("rotor_joint")] = OFFSET
    zeros = np.zeros(robot.num_dofs)
    order = {o: gtdyn.forward_dynamics(robot, q, zeros, zeros, ordering=o).ordering
             for o in ("cluster_aba", "projection", "lagrange")}
    j1, j2, rotor = (robot.joint_names.index(name) + 1 for name in ("j1", "j2", "rotor_joint"))
    assert order["cluster_aba"] == [f"F{j2}", f"A{j2}", f"a{j2}", f"F{rotor}", f"A{rotor}", f"F{j1}", f"A{j1}", "L1",
                                    f"a{rotor}", f"a{j1}"]
    assert order["projection"][:2] == ["L1", f"a{rotor}"] and order["lagrange"][-1] == "L1"
    inverse = gtdyn.inverse_dynamics(robot, q, zeros, zeros, ordering="cluster_rnea").ordering
    assert inverse[:3] == [f"t{j2}", f"t{j1}", "L1"]


def geared_chain(n: int, ratio: float = 6.0) -> str:
    """An n-link chain (axes alternating z, y) whose every joint is driven through a <mimic> rotor mounted on its
    parent link — the rotors of joints 2..n ride on moving links."""
    parts = ['<robot name="chain"><link name="l0"/>']
    for i in range(1, n + 1):
        axis, origin = ("0 0 1" if i % 2 else "0 1 0"), ("0 0 0" if i == 1 else "0.3 0 0")
        parts += [f'<joint name="j{i}" type="revolute"><parent link="l{i - 1}"/><child link="l{i}"/>'
                  f'<origin xyz="{origin}"/><axis xyz="{axis}"/><limit lower="-3" upper="3" effort="9" velocity="9"/>'
                  '</joint>',
                  f'<link name="l{i}"><inertial><origin xyz="0.15 0.01 0"/><mass value="{0.5 + 0.1 * i}"/><inertia '
                  'ixx="0.002" ixy="0.0003" ixz="0" iyy="0.005" iyz="0" izz="0.005"/></inertial></link>',
                  f'<joint name="m{i}" type="revolute"><parent link="l{i - 1}"/><child link="r{i}"/>'
                  f'<origin xyz="{0.0 if i == 1 else 0.15} 0.04 0"/><axis xyz="{axis}"/>'
                  f'<limit lower="-99" upper="99" effort="9" velocity="99"/><mimic joint="j{i}" multiplier="{ratio}"/>'
                  '</joint>',
                  f'<link name="r{i}"><inertial><origin xyz="0 0 0.01"/><mass value="0.08"/><inertia ixx="0.00004" '
                  'ixy="0" ixz="0" iyy="0.00003" iyz="0" izz="0.00005"/></inertial></link>']
    return "".join(parts) + "</robot>"


def test_a_fully_geared_chain_matches_the_projected_reference_in_every_ordering(tmp_path):
    """Every joint of a 3-link chain geared 6:1 (rotors riding on moving links, their CoM off the axis):
    forward and inverse dynamics in every named ordering against the projected Pinocchio reference."""
    from gtdyn.bench.pinocchio import PinocchioModel

    path = tmp_path / "chain.urdf"
    path.write_text(geared_chain(3))
    robot = gtdyn.load_robot(str(path))
    names = robot.joint_names
    links = [names.index(f"j{i}") for i in (1, 2, 3)]
    G = np.zeros((len(names), 3))
    for c, i in enumerate((1, 2, 3)):
        G[names.index(f"j{i}"), c], G[names.index(f"m{i}"), c] = 1.0, 6.0
    pin = PinocchioModel(str(path), robot)
    rng = np.random.default_rng(46)
    x, dx, ddx = rng.uniform(-1, 1, (3, 3))
    q, v, qdd = G @ x, G @ dx, G @ ddx
    M, h = pin.mass_matrix(q), pin.nonlinear_effects(q, v)
    tau = np.zeros(len(names))
    tau[links] = G.T @ (M @ qdd + h)  # the torques that produce qdd
    for ordering in applicable("inverse"):
        assert rel_err(gtdyn.inverse_dynamics(robot, q, v, qdd, ordering=ordering).tau, tau) < TOL, ordering
    for ordering in applicable("forward"):
        assert rel_err(gtdyn.forward_dynamics(robot, q, v, tau, ordering=ordering).qdd, qdd) < TOL, ordering


def test_the_variational_integrator_refuses_transmissions_and_the_classical_ones_keep_them(geared):
    """The variational integrator's DRNEA has no constraint forces: it refuses a coupled robot rather than
    simulate the uncoupled one. The classical integrators keep the coupling (their steps are affine in q, q̇).
    Estimation and the full nonlinear graph cover transmissions (tests/test_estimation.py,
    tests/test_nonlinear_graph.py)."""
    _, robot = geared
    q = np.zeros(3)
    q[robot.joint_names.index("rotor_joint")] = OFFSET
    with pytest.raises(gtdyn.ArgumentError, match="variational integrator covers trees without transmissions"):
        gtdyn.simulate(robot, q, np.zeros(3), dt=1e-3, steps=2, method="variational")
    run = gtdyn.simulate(robot, q, np.zeros(3), tau=[0.5, 0.2, 0.0], dt=1e-3, steps=200, method="rk4")
    rotor, j1 = robot.joint_names.index("rotor_joint"), robot.joint_names.index("j1")
    assert np.max(np.abs(run.q[:, rotor] - (N * run.q[:, j1] + OFFSET))) < 1e-12
    # a batch checks each later row's start as simulate checks its own (rows after a thread's first are set up
    # from it, their starts alone checked again): row 2's velocity breaks the coupling
    Q0, V0 = np.tile(q, (4, 1)), np.zeros((4, 3))
    V0[2, rotor] = 1.0
    with pytest.raises(gtdyn.ArgumentError, match="^v0: joint 'rotor_joint' is coupled") as error:
        gtdyn.simulate_batch(robot, Q0, V0, tau=[0.5, 0.2, 0.0], dt=1e-3, steps=5, lanes=False)
    assert error.value.__notes__[-1] == "gtdyn.simulate_batch: the run from row 2 of q0 and v0"
    with pytest.raises(gtdyn.ArgumentError, match="^v0: joint 'rotor_joint' is coupled"):
        gtdyn.simulate(robot, Q0[2], V0[2], tau=[0.5, 0.2, 0.0], dt=1e-3, steps=5)


def test_a_changed_gear_ratio_or_armature_is_a_different_compiled_solver(tmp_path, monkeypatch):
    """The on-disk cache is keyed by everything that decides the code: editing only a <mimic> multiplier (same
    links, same joints) must compile anew, not load the old ratio's code — which would answer for the old
    coupling wherever a state happens to satisfy both. Likewise the armature of the approximate reading."""
    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path / "cache"))
    solvers = {}
    for ratio in (N, 2 * N):
        path = tmp_path / f"geared_{ratio:g}.urdf"
        path.write_text(GEARED.replace(f'multiplier="{N}"', f'multiplier="{ratio}"'))
        for reading in ("exact", "approximate"):
            robot = gtdyn.load_robot(str(path), transmissions=reading)
            solvers[ratio, reading] = robot, gtdyn.compile(robot, "forward", ordering="aba")
    for reading in ("exact", "approximate"):
        assert not solvers[2 * N, reading][1].from_cache, reading
        # a state that keeps both couplings (q1 = 0, q̇1 = 0, rotor at its offset): the answers must differ
        robot, solver = solvers[2 * N, reading]
        names = robot.joint_names
        q, v, tau = np.zeros(len(names)), np.zeros(len(names)), np.zeros(len(names))
        if "rotor_joint" in names:
            q[names.index("rotor_joint")] = OFFSET
        tau[names.index("j1")], tau[names.index("j2")] = 1.0, 0.3
        expected = gtdyn.forward_dynamics(robot, q, v, tau).qdd
        assert rel_err(solver(q, v, tau), expected) < TOL, reading
        old = solvers[N, reading][1](q, v, tau)
        assert rel_err(old, expected) > 1e-3, reading  # the two ratios really give different answers here
