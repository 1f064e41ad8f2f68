"""The inverse operational-space inertia Λ⁻¹ = J M⁻¹ Jᵀ (issue 23, item 1: by elimination, C-EFPA on the factor
graph, and by forward solves) against Pinocchio's own J (``getFrameJacobian``, LOCAL) and M⁻¹ (``computeMinverse``)
in every ordering, on a fixed and a floating base; against the projected formula on a transmission; and its
boundary errors."""

import numpy as np
import pytest
from references import load_quietly, random_base, rel_err

import gtdyn
from gtdyn.bench.pinocchio import FreeFlyerPinocchio, PinocchioContacts, PinocchioModel

TOL = 1e-9  # the relative accuracy against Pinocchio
FLIP = [3, 4, 5, 0, 1, 2]  # Pinocchio's [v; ω] rows ↔ gtdyn's [ω; v]


def pinocchio_inverse_inertia(ref, config, frames) -> np.ndarray:
    """J M⁻¹ Jᵀ from Pinocchio alone, its 6-blocks reordered to [ω; v] and its columns to gtdyn's velocity order."""
    pin = ref.pin
    pin.computeJointJacobians(ref.model, ref.data, config)
    pin.framesForwardKinematics(ref.model, ref.data, config)
    M_inv = pin.computeMinverse(ref.model, ref.data, config)
    M_inv = np.triu(M_inv) + np.triu(M_inv, 1).T  # Pinocchio fills the upper triangle
    J = np.vstack([pin.getFrameJacobian(ref.model, ref.data, ref.model.getFrameId(frame),
                                        pin.ReferenceFrame.LOCAL)[FLIP] for frame in frames])
    return J @ M_inv @ J.T


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


def test_bad_frames_are_named():
    robot = gtdyn.load_robot("puma560")
    with pytest.raises(gtdyn.ArgumentError, match="^frames: unknown link or frame 'hand'"):
        gtdyn.operational_space_inverse_inertia(robot, np.zeros(6), ["flange", "hand"])
    with pytest.raises(gtdyn.ArgumentError, match="^frames: expected a frame name or a non-empty list"):
        gtdyn.operational_space_inverse_inertia(robot, np.zeros(6), [])
    with pytest.raises(gtdyn.ArgumentError, match="^method: 'efpa' is not one of"):
        gtdyn.operational_space_inverse_inertia(robot, np.zeros(6), "flange", method="efpa")
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
    expected = J @ G @ np.linalg.solve(G.T @ M @ G, G.T @ J.T)
    got = gtdyn.operational_space_inverse_inertia(coupled, q, ["l2", "rotor"], method=method, ordering=ordering)
    assert rel_err(got, expected) < TOL


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
