"""The inverse operational-space inertia Λ⁻¹ = J M⁻¹ Jᵀ (issue 23, item 1: by elimination, C-EFPA on the factor
graph, and by forward solves) against Pinocchio's own J (``getFrameJacobian``, LOCAL) and M⁻¹ (``computeMinverse``)
in every ordering, on a fixed and a floating base (the PUMA, the UR5, the quadruped, Solo-12); against the projected
formula J G (Gᵀ M G)⁻¹ Gᵀ Jᵀ on transmissions and the geared four-bar; its verdicts on singular cases (massless,
nearly massless, redundant frames); and its boundary errors. benchmarks/verify_operational.py runs the whole sweep
(every ordering, both methods, Talos too, several states)."""

import numpy as np
import pytest
from references import coupling, erd_path, load_quietly, random_base, rel_err

import gtdyn
from gtdyn.bench.pinocchio import FreeFlyerPinocchio, PinocchioContacts, PinocchioModel

TOL = 1e-9  # the relative accuracy against Pinocchio
FLIP = [3, 4, 5, 0, 1, 2]  # Pinocchio's [v; ω] rows ↔ gtdyn's [ω; v]


def pinocchio_jacobians(ref, config, frames) -> np.ndarray:
    """Pinocchio's LOCAL frame Jacobians (``getFrameJacobian``) of ``frames`` stacked, each 6-block's rows reordered
    to [ω; v] and the columns to gtdyn's velocity order (``ref.velocity_order()``: a free flyer's [ω; v] first)."""
    pin = ref.pin
    pin.computeJointJacobians(ref.model, ref.data, config)
    pin.framesForwardKinematics(ref.model, ref.data, config)
    J = np.vstack([pin.getFrameJacobian(ref.model, ref.data, ref.model.getFrameId(frame),
                                        pin.ReferenceFrame.LOCAL)[FLIP] for frame in frames])
    return J[:, ref.velocity_order()]


def pinocchio_inverse_inertia(ref, config, frames) -> np.ndarray:
    """J M⁻¹ Jᵀ from Pinocchio alone (``computeMinverse``), in gtdyn's [ω; v] blocks."""
    M_inv = ref.pin.computeMinverse(ref.model, ref.data, config)
    M_inv = np.triu(M_inv) + np.triu(M_inv, 1).T  # Pinocchio fills the upper triangle
    order = ref.velocity_order()
    J = pinocchio_jacobians(ref, config, frames)
    return J @ M_inv[np.ix_(order, order)] @ J.T


def projected_inverse_inertia(J, M, G) -> np.ndarray:
    """J G (Gᵀ M G)⁻¹ Gᵀ Jᵀ: Λ⁻¹ of the unconstrained model (M, J) with its accelerations held to q̈ = G q̈_ind —
    a wrench f gives q̈_ind = (Gᵀ M G)⁻¹ Gᵀ Jᵀ f, and the frames move by J G q̈_ind."""
    return J @ G @ np.linalg.solve(G.T @ M @ G, G.T @ J.T)


def pinocchio_delassus(ref, config, frames, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Pinocchio's ``computeDelassusMatrix`` (no damping) for contacts at ``frames`` (``kind`` "point": 3D,
    "surface": 6D, both LOCAL) in gtdyn's layout, and the rows and columns of Λ⁻¹ it equals: the linear rows of each
    frame's block (point), or all of them with each block's [v; ω] turned to [ω; v] (surface)."""
    contacts = PinocchioContacts(ref, frames, kind)
    ref.pin.computeAllTerms(ref.model, ref.data, config, np.zeros(ref.model.nv))
    D = ref.pin.computeDelassusMatrix(ref.model, ref.data, config, contacts.models, contacts.datas, 0.0)
    if kind == "point":
        return D, np.concatenate([np.arange(6 * k + 3, 6 * k + 6) for k in range(len(frames))])
    flip = np.concatenate([6 * k + np.array(FLIP) for k in range(len(frames))])
    return D[np.ix_(flip, flip)], np.arange(6 * len(frames))


def transmission_case(folder, name: str, seed: int = 0) -> tuple:
    """(robot, q, frames, expected) for a transmission of tests/test_transmissions.py — "geared" (a rotor at 9:1
    on the first joint), "belt" (a rotor driven by both joints), "differential" (two rotors, sum and difference),
    "geared chain" (every joint of a 3-link chain driven through a rotor riding on its parent) — at a random state
    that keeps the coupling: q = G x + offset. ``expected`` is J G (Gᵀ M G)⁻¹ Gᵀ Jᵀ with M and the LOCAL frame
    Jacobians J from Pinocchio on the same file (which reads every joint as independent) and G from ``coupling``."""
    from test_transmissions import BELT, DIFFERENTIAL, GEARED, MULTI, geared_chain

    tables = {"geared": [("rotor_joint", (("j1", 9.0),), 0.25)], "belt": BELT, "differential": DIFFERENTIAL,
              "geared chain": [(f"m{i}", ((f"j{i}", 6.0),), 0.0) for i in (1, 2, 3)]}
    frames = {"geared": ["l2", "rotor"], "belt": ["tip", "rotor1"], "differential": ["tip", "rotor1", "rotor2"],
              "geared chain": ["l3", "r3", "r2"]}[name]
    if name == "geared":
        text = GEARED
    elif name == "geared chain":
        text = geared_chain(3)
    else:
        text = MULTI.format(name=name, blocks="\n  ".join(
            f'<gtdyn:transmission joint="{joint}" offset="{shift}">'
            + "".join(f'<gtdyn:drive joint="{j}" ratio="{r}"/>' for j, r in drives) + "</gtdyn:transmission>"
            for joint, drives, shift in tables[name]))
    path = folder / f"{name.replace(' ', '_')}.urdf"
    path.write_text(text)
    robot = gtdyn.load_robot(str(path), transmissions="exact")
    assert len(robot.transmissions) == len(tables[name])  # the file is read coupled
    G, offset = coupling(robot.joint_names, tables[name])
    q = G @ np.random.default_rng(seed).uniform(-1, 1, G.shape[1]) + offset
    ref = PinocchioModel(str(path), robot)
    J = pinocchio_jacobians(ref, ref.configuration(q), frames)
    return robot, q, frames, projected_inverse_inertia(J, ref.mass_matrix(q), G)


def geared_four_bar_case(folder, crank: float = 0.4) -> tuple:
    """(robot, q, frames, expected) for tests/test_transmissions.py's geared four-bar: the bundled parallelogram
    four-bar with a rotor on the base geared 12:1 to its crank j1. The loop's tangent by hand, from the geometry
    (the file's comment): crank and rocker turn together (q3 = q1), the coupler translates (q2 = −q1), so the loop
    joint j4 (rocker against coupler) turns by q3 − q1 − q2 = q1, and the motor by 12 q1: G = ∂q/∂q1 =
    (1, −1, 1, 12) over the tree joints, exact on this assembly branch at every crank angle. M and the links'
    LOCAL Jacobians: Pinocchio on the spanning tree built from the description (tests/loop_references.py), whose
    own loop-closure Jacobian is checked to annihilate G — the reference uses nothing of gtdyn's loop handling."""
    import pinocchio as pin
    from loop_references import LagrangeReference
    from test_transmissions import ROTOR

    from gtdyn.io.sdf import read_sdf
    from gtdyn.model.build import build_robot

    path = folder / "geared_four_bar.sdf"
    path.write_text(open(gtdyn.bundled_path("four_bar")).read().replace("  </model>", ROTOR))
    description = read_sdf(str(path))
    robot = build_robot(description, transmissions="exact")
    slope = {"j1": 1.0, "j2": -1.0, "j3": 1.0, "motor": 12.0, "j4": 1.0}
    q = np.array([crank * slope[name] for name in robot.joint_names])
    reference = LagrangeReference(description, robot)
    tree = [robot.joint_names[i] for i in reference.tree_index]  # Pinocchio's joints, in its order
    G = np.array([[slope[name]] for name in tree])
    qt = q[reference.tree_index]
    loop, _ = reference._constraint(qt, np.zeros(len(tree)))
    assert np.max(np.abs(loop @ G)) < 1e-12 * np.max(np.abs(loop))  # the hand-derived G is the loop's tangent
    M, _ = reference._mass_and_bias(qt, np.zeros(len(tree)))
    frames = ["coupler", "rocker", "rotor"]
    model, data = reference.model, reference.data
    pin.computeJointJacobians(model, data, qt)
    blocks = []
    for frame in frames:  # the link rides on the tree joint whose child it is, at child_pose in that joint's frame
        (spec,) = [js for js in description.joints if js.child == frame and js.name in tree]
        joint = pin.getJointJacobian(model, data, model.getJointId(spec.name), pin.ReferenceFrame.LOCAL)
        placement = pin.SE3(spec.child_pose[:3, :3].copy(), spec.child_pose[:3, 3].copy())
        blocks.append((placement.toActionMatrixInverse() @ joint)[FLIP])
    J = np.vstack(blocks)
    return robot, q, frames, projected_inverse_inertia(J, M, G)


@pytest.mark.parametrize("method, ordering", [("elimination", ordering) for ordering in
                                              (None, "efpa", "aba", "crba", "lagrange", "projection", "colamd",
                                               "nd", "md", "natural")]
                         + [("forward solves", None), ("forward solves", "aba")])
def test_an_arm_matches_pinocchio_in_each_ordering(method, ordering):
    """The PUMA 560's flange and its third link together: their own blocks and the blocks between them."""
    robot = gtdyn.load_robot("puma560")
    ref = PinocchioModel(robot.source, robot)
    q = np.random.default_rng(1).uniform(-1.5, 1.5, 6)
    frames = ["flange", "link3"]
    got = gtdyn.operational_space_inverse_inertia(robot, q, frames, ordering=ordering, method=method)
    assert got.shape == (12, 12)
    assert rel_err(got, pinocchio_inverse_inertia(ref, ref.configuration(q), frames)) < TOL
    assert np.allclose(got, got.T, rtol=0, atol=TOL * np.max(np.abs(got)))  # symmetric, as J M⁻¹ Jᵀ is


@pytest.mark.parametrize("method", ["elimination", "forward solves"])
def test_a_floating_quadruped_matches_pinocchio_with_its_base_free(method):
    """The quadruped's four feet on a free base at a random pose: the base moves with every push."""
    robot = gtdyn.load_robot("quadruped", base="floating")
    ref = FreeFlyerPinocchio(robot.source, robot)
    rng = np.random.default_rng(3)
    pose, _, _ = random_base(rng)
    q = rng.uniform(-0.8, 0.8, robot.num_dofs)
    feet = ["FL_foot", "FR_foot", "RL_foot", "RR_foot"]
    got = gtdyn.operational_space_inverse_inertia(robot, q, feet, base_pose=pose, ordering="aba", method=method)
    assert got.shape == (24, 24)
    assert rel_err(got, pinocchio_inverse_inertia(ref, ref.configuration(q, pose), feet)) < TOL


UR5 = "ur_description/urdf/ur5_robot.urdf"


@pytest.mark.parametrize("method, ordering", [("elimination", "cluster_efpa"), ("elimination", "colamd"),
                                              ("forward solves", "crba")])
def test_ur5_matches_pinocchio(method, ordering):
    """The UR5 (example-robot-data) at a random configuration: its tool0 (a frame welded to the last link) and
    its forearm together."""
    path = erd_path(UR5)
    robot = gtdyn.load_robot(path)
    ref = PinocchioModel(path, robot)
    q = np.random.default_rng(7).uniform(-np.pi, np.pi, robot.num_dofs)
    frames = ["tool0", "forearm_link"]
    got = gtdyn.operational_space_inverse_inertia(robot, q, frames, ordering=ordering, method=method)
    assert rel_err(got, pinocchio_inverse_inertia(ref, ref.configuration(q), frames)) < TOL


def test_solo12_feet_on_its_free_flyer_match_pinocchio():
    """Solo-12 (example-robot-data) with a free flyer at a random pose, its four feet, by elimination in ABA's
    order (paper 003's EFPA). Λ⁻¹ is 24 × 24 of rank at most nv = 18, so this also checks that the elimination
    reads a singular Λ⁻¹ off as accurately as a regular one."""
    path = erd_path("solo_description/robots/solo12.urdf")
    robot = gtdyn.load_robot(path, base="floating")
    ref = FreeFlyerPinocchio(path, robot)
    rng = np.random.default_rng(11)
    pose, _, _ = random_base(rng)
    q = rng.uniform(-1, 1, robot.num_dofs)
    feet = ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"]
    got = gtdyn.operational_space_inverse_inertia(robot, q, feet, base_pose=pose, ordering="efpa")
    assert rel_err(got, pinocchio_inverse_inertia(ref, ref.configuration(q, pose), feet)) < TOL


@pytest.mark.parametrize("method", ["elimination", "forward solves"])
@pytest.mark.parametrize("frames", [["tool0", "tool0"], ["tool0", "wrist_3_link"]])
def test_redundant_frames_give_a_singular_inverse_inertia_without_a_verdict(method, frames):
    """The same frame twice, or a frame and the link it is welded to: every block is still J_a M⁻¹ J_bᵀ
    (Pinocchio's), and Λ⁻¹ is singular — rank 6 of 12 — as it should be: its verdict is M's, and M is fine, so
    neither an error nor a warning. The same frame twice is the single frame's block repeated."""
    import warnings

    path = erd_path(UR5)
    robot = gtdyn.load_robot(path)
    ref = PinocchioModel(path, robot)
    q = np.random.default_rng(8).uniform(-np.pi, np.pi, robot.num_dofs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        got = gtdyn.operational_space_inverse_inertia(robot, q, frames, method=method)
        single = gtdyn.operational_space_inverse_inertia(robot, q, frames[:1], method=method)
    assert rel_err(got, pinocchio_inverse_inertia(ref, ref.configuration(q), frames)) < TOL
    singular_values = np.linalg.svd(got, compute_uv=False)
    # rounding leaves the six zero singular values near 1e-16 of the largest; the nonzero ones are ≥ 1e-3 of it
    assert np.sum(singular_values > 1e-12 * singular_values[0]) == 6
    if frames[0] == frames[1]:
        assert rel_err(got, np.tile(single, (2, 2))) < TOL


@pytest.mark.parametrize("method", ["elimination", "forward solves"])
def test_a_frame_on_a_massless_subtree_raises_as_the_dynamics_do(tmp_path, method):
    """tests/test_determinacy.py's 3R chain with massless l2 and l3: M is singular, so Λ⁻¹ = J M⁻¹ Jᵀ is not
    defined; both methods raise IndeterminateSystemError naming the undetermined variables (l2's and l3's
    accelerations, joints j2's and j3's), as forward dynamics do — not a matrix of rounding noise."""
    from test_determinacy import STATE, load_chain

    robot = load_chain(tmp_path, None)
    with pytest.raises(gtdyn.IndeterminateSystemError) as info:
        gtdyn.operational_space_inverse_inertia(robot, STATE[0], ["l3", "l1"], method=method)
    assert {"a2", "a3", "A2", "A3"} <= set(info.value.free_variables) and "a1" not in info.value.free_variables
    assert "link l2" in str(info.value) and "joint j3" in str(info.value)


@pytest.mark.parametrize("method", ["elimination", "forward solves"])
def test_a_frame_on_a_nearly_massless_subtree_warns_as_the_dynamics_do(tmp_path, method):
    """The same chain with l2 and l3 at 1e-10 of l1's mass and inertia (M's condition ~3e10): both methods warn
    IllConditionedWarning, as forward dynamics do, and still answer — within the warning's own promise (agreement
    to about 4 digits; here 5e-6 by elimination, 4e-10 by forward solves, whose solves refine their answer
    and the elimination's one QR pass does not) of Pinocchio's J M⁻¹ Jᵀ."""
    import warnings

    from test_determinacy import STATE, load_chain

    robot = load_chain(tmp_path, 1e-10)
    ref = PinocchioModel(str(tmp_path / "chain_1e-10.urdf"), robot)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = gtdyn.operational_space_inverse_inertia(robot, STATE[0], ["l3", "l1"], method=method)
    assert any(issubclass(w.category, gtdyn.IllConditionedWarning) for w in caught)
    assert rel_err(got, pinocchio_inverse_inertia(ref, ref.configuration(STATE[0]), ["l3", "l1"])) < 1e-4


def test_bad_frames_are_named():
    robot = gtdyn.load_robot("puma560")
    with pytest.raises(gtdyn.ArgumentError, match="^frames: unknown link or frame 'hand'"):
        gtdyn.operational_space_inverse_inertia(robot, np.zeros(6), ["flange", "hand"])
    with pytest.raises(gtdyn.ArgumentError, match="^frames: expected a frame name or a non-empty list"):
        gtdyn.operational_space_inverse_inertia(robot, np.zeros(6), [])
    with pytest.raises(gtdyn.ArgumentError, match="^method: 'efpa' is not one of"):
        gtdyn.operational_space_inverse_inertia(robot, np.zeros(6), "flange", method="efpa")
    for method in ("elimination", "forward solves"):  # a frame fixed to the base: named as one of the frames
        with pytest.raises(gtdyn.ArgumentError, match="^frames: 'base_link' is fixed to the base"):
            gtdyn.operational_space_inverse_inertia(robot, np.zeros(6), ["flange", "base_link"], method=method)
    with pytest.raises(gtdyn.ArgumentError, match="^frames: 'base_link' is fixed to the base"):
        gtdyn.operational_space_dag(robot, np.zeros(6), ["base_link"])
    four_bar = gtdyn.load_robot("four_bar")
    with pytest.raises(gtdyn.ArgumentError, match='does not cover closed loops.*method="forward solves" covers'):
        gtdyn.operational_space_inverse_inertia(four_bar, np.zeros(4), "coupler")


@pytest.mark.parametrize("method, ordering", [("elimination", None), ("elimination", "cluster_efpa"),
                                              ("elimination", "projection"), ("forward solves", None)])
def test_a_transmission_gives_the_projected_inverse_inertia(tmp_path, method, ordering):
    """A geared rotor (rotor = 9 · j1): Λ⁻¹ of the coupled robot is J G (Gᵀ M G)⁻¹ Gᵀ Jᵀ of the unconstrained one,
    G = ∂q/∂(j1, j2) — the accelerations the coupling allows, as the forward solve has them."""
    from test_transmissions import GEARED

    path = tmp_path / "geared.urdf"
    path.write_text(GEARED)
    coupled = gtdyn.load_robot(str(path), transmissions="exact")
    free = load_quietly(str(path))  # the same file, every joint independent
    q = np.array([0.3, -0.4, 9 * 0.3 + 0.25])  # j1, j2, rotor_joint: the rotor follows j1 (its offset 0.25)
    G = np.array([[1.0, 0.0], [0.0, 1.0], [9.0, 0.0]])
    M = gtdyn.mass_matrix(free, q)
    J = np.vstack([gtdyn.frame_jacobian(free, q, frame) for frame in ("l2", "rotor")])
    expected = projected_inverse_inertia(J, M, G)
    got = gtdyn.operational_space_inverse_inertia(coupled, q, ["l2", "rotor"], method=method, ordering=ordering)
    assert rel_err(got, expected) < TOL


@pytest.mark.parametrize("method, ordering", [("elimination", "cluster_efpa"), ("forward solves", None)])
def test_a_belt_gives_the_projected_inverse_inertia(tmp_path, method, ordering):
    """A rotor driven by both joints through a belt (r1 = 6 j1 − 2 j2 + 0.1) beside a free one: Λ⁻¹ of the arm's
    tip and the belted rotor against J G (Gᵀ M G)⁻¹ Gᵀ Jᵀ, Pinocchio's M and J, G by hand (``transmission_case``)."""
    robot, q, frames, expected = transmission_case(tmp_path, "belt", seed=5)
    got = gtdyn.operational_space_inverse_inertia(robot, q, frames, method=method, ordering=ordering)
    assert rel_err(got, expected) < TOL


@pytest.mark.parametrize("ordering", [None, "cluster_aba"])
def test_the_geared_four_bar_gives_the_projected_inverse_inertia(tmp_path, ordering):
    """A loop and a transmission together (the geared four-bar): by forward solves (the elimination refuses
    loops), the coupler, rocker and rotor against J G (Gᵀ M G)⁻¹ Gᵀ Jᵀ on the spanning tree with the
    parallelogram's hand-derived G (``geared_four_bar_case``). One degree of freedom: Λ⁻¹ has rank 1."""
    robot, q, frames, expected = geared_four_bar_case(tmp_path)
    got = gtdyn.operational_space_inverse_inertia(robot, q, frames, method="forward solves", ordering=ordering)
    assert rel_err(got, expected) < TOL
    assert np.linalg.matrix_rank(expected, tol=1e-12 * np.max(np.abs(expected))) == 1


def test_the_elimination_has_a_dag_whose_frame_accelerations_hang_on_the_wrenches(tmp_path):
    """In ABA's order the PUMA's variables go first; the frames' accelerations X come last, with the frames'
    wrenches C (never eliminated: Λ⁻¹ is the conditional X | C) among their parents; and it draws."""
    from gtdyn import keys
    from gtdyn.plot import draw_dag

    robot = gtdyn.load_robot("puma560")
    dag = gtdyn.operational_space_dag(robot, np.zeros(6), ["flange", "link3"], ordering="aba")
    X1, X2, C1, C2 = (keys.parse_label(label) for label in ("X1", "X2", "C1", "C2"))
    assert dag.number_of_nodes() == 6 * 3 + 4  # V̇, F, q̈ per joint, then X and C per frame
    assert {dag.nodes[X]["step"] for X in (X1, X2)} == {18, 19}  # last
    assert {C1, C2} <= set(dag.predecessors(X1)) and {C1, C2} <= set(dag.predecessors(X2))
    assert not list(dag.predecessors(C1)) and not list(dag.predecessors(C2))
    draw_dag(dag, str(tmp_path / "osim.png"), robot=robot)
    assert (tmp_path / "osim.png").stat().st_size > 0


def test_the_feets_linear_blocks_are_pinocchios_delassus_matrix():
    """Point contacts at the quadruped's feet: Pinocchio's ``computeDelassusMatrix`` (3D contacts, LOCAL) is the
    linear-linear part of each pair of feet's blocks."""
    robot = gtdyn.load_robot("quadruped", base="floating")
    ref = FreeFlyerPinocchio(robot.source, robot)
    feet = ["FL_foot", "FR_foot", "RL_foot", "RR_foot"]
    contacts = PinocchioContacts(ref, feet, "point")
    rng = np.random.default_rng(3)
    pose, _, _ = random_base(rng)
    q = rng.uniform(-0.8, 0.8, robot.num_dofs)
    config = ref.configuration(q, pose)
    ref.pin.computeAllTerms(ref.model, ref.data, config, np.zeros(ref.model.nv))
    delassus = ref.pin.computeDelassusMatrix(ref.model, ref.data, config, contacts.models, contacts.datas, 0.0)
    linear = np.concatenate([np.arange(6 * k + 3, 6 * k + 6) for k in range(len(feet))])
    got = gtdyn.operational_space_inverse_inertia(robot, q, feet, base_pose=pose, ordering="aba")
    assert rel_err(got[np.ix_(linear, linear)], delassus) < TOL
