"""DAG construction, Bayes trees, step-by-step elimination, DOT export and drawing (Agg backend)."""

import matplotlib

matplotlib.use("Agg")

import networkx as nx
import numpy as np
import pytest

import gtdyn
from gtdyn.analysis.dag import bayes_net_dag, to_dot
from gtdyn.analysis.steps import elimination_steps
from gtdyn.orderings import applicable
from gtdyn.plot.dag import draw_dag, draw_elimination_steps

Q, V, A = [0.3, -0.4, 0.8], [0.5, 0.1, -0.7], [1.0, -2.0, 0.5]


@pytest.fixture(scope="module")
def rrr():
    return gtdyn.load_robot("rrr")


GIVEN = {"inverse": {"qdd": A}, "forward": {"tau": A}, "hybrid": {"qdd": {"j1": 1.0}, "tau": {"j2": 0.2, "j3": 0.0}}}


def solve(robot, problem, ordering, q=Q, v=V):
    return gtdyn.solve(robot, problem, q, v, ordering=ordering, **GIVEN[problem])


CASES = [(p, o) for p in ("inverse", "forward", "hybrid") for o in applicable(p)]


@pytest.mark.parametrize("problem, ordering", CASES)
def test_every_strategy_draws_every_variable_and_edge(rrr, problem, ordering):
    """The drawing's structure, for every ordering, laid out but not rendered to pixels or files: a dot per
    variable at its place in the tree layout, its label on it, an arrow per DAG edge; and a DOT edge per DAG
    edge. (test_drawings_are_written_as_files renders each kind of drawing once.)"""
    from matplotlib.patches import FancyArrowPatch

    from gtdyn.plot.dag import tree_layout

    dag = solve(rrr, problem, ordering).dag()
    fig = draw_dag(dag, robot=rrr)
    fig.draw_without_rendering()  # every arrow's curved, shortened path computed
    ax = fig.axes[0]
    (dots,) = ax.collections
    place = tree_layout(dag, rrr)
    assert sorted(map(tuple, dots.get_offsets().tolist())) == sorted(place[n] for n in dag)
    assert sorted(t.get_text() for t in ax.texts) == sorted(dag.nodes[n]["pretty"] for n in dag)
    assert len([p for p in ax.patches if isinstance(p, FancyArrowPatch)]) == dag.number_of_edges() > 0
    assert sum("->" in line for line in to_dot(dag).splitlines()) == dag.number_of_edges()


def test_drawings_are_written_as_files(rrr, tmp_path):
    """Each kind of drawing rendered once: the DAG as PNG and SVG (tree layout), the step view as PNG (layered
    layout; test_drawings_stay_within_the_pixel_limit saves one in the tree layout)."""
    r = solve(rrr, "hybrid", "colamd")
    for suffix, magic in ((".png", b"\x89PNG"), (".svg", b"<?xml")):
        path = tmp_path / f"dag{suffix}"
        draw_dag(r.dag(), str(path), robot=r.robot)
        data = path.read_bytes()
        assert data.startswith(magic) and len(data) > 2000
    path = tmp_path / "steps.png"
    draw_elimination_steps(r.graph, r.elimination_ordering, str(path))
    assert path.read_bytes().startswith(b"\x89PNG")


def test_saving_draws_each_figure_once(rrr, tmp_path, monkeypatch):
    """Speed: savefig's real draw is the only one (no dry run left behind by tight_layout's layout engine)."""
    from matplotlib.figure import Figure

    draws = []
    real = Figure.draw
    monkeypatch.setattr(Figure, "draw", lambda fig, renderer: draws.append(fig) or real(fig, renderer))
    r = solve(rrr, "inverse", "rnea")
    dag_figure = draw_dag(r.dag(), str(tmp_path / "dag.png"), robot=rrr)
    steps_figure = draw_elimination_steps(r.graph, r.elimination_ordering, str(tmp_path / "steps.png"), robot=rrr)
    assert draws == [dag_figure, steps_figure]


@pytest.mark.parametrize("problem, ordering", CASES)
def test_step_view_ends_in_the_dag_which_covers_the_numeric_bayes_net(rrr, problem, ordering):
    """The generic-coefficient DAG contains every dependency the numeric Bayes net really has, at many
    configurations (the numeric one may drop blocks that happen to be exactly zero)."""
    r = solve(rrr, problem, ordering)
    steps = elimination_steps(r.graph, r.elimination_ordering)
    assert set(steps[-1][2].edges) == set(r.dag().edges)
    rng = np.random.default_rng(17)
    for _ in range(10):
        q, v = rng.normal(size=(2, 3))
        again = solve(rrr, problem, r.ordering, q, v)
        assert set(bayes_net_dag(again.bayes_net).edges) <= set(again.dag().edges)
        assert set(again.dag().edges) == set(r.dag().edges)  # the DAG does not depend on the configuration
    assert steps[-1][1].number_of_nodes() == 0 and steps[0][2].number_of_nodes() == 0


def test_step_view_of_rnea_is_figure_5(rrr):
    """Fig. 5: (a) after the τ: each τi hangs off Fi; (b) after F1: F1 from V̇1 and F2; (c) after all F;
    (d) the RNEA DAG."""
    r = gtdyn.inverse_dynamics(rrr, Q, V, A, ordering="rnea")
    steps = elimination_steps(r.graph, r.elimination_ordering, batches=[3, 1, 2, 3])

    def labels(g):
        return {(g.nodes[a]["label"], g.nodes[b]["label"]) for a, b in g.edges}

    assert labels(steps[1][2]) == {("F1", "t1"), ("F2", "t2"), ("F3", "t3")}
    assert labels(steps[2][2]) - labels(steps[1][2]) == {("A1", "F1"), ("F2", "F1")}
    assert {n for n in (steps[3][1].nodes[k]["label"] for k in steps[3][1])} == {"A1", "A2", "A3"}
    assert len(steps[4][2].edges) == 10
    with pytest.raises(ValueError, match="add up to 8"):
        elimination_steps(r.graph, r.elimination_ordering, batches=[3, 5])


def test_golden_dot_for_rnea(rrr):
    """Hand-written from Algorithm 1 (nodes by kind row then index; edges by elimination step)."""
    dot = to_dot(gtdyn.inverse_dynamics(rrr, Q, V, A, ordering="rnea").dag(), "rrr inverse")
    edges = sorted(line.strip() for line in dot.splitlines() if "->" in line)
    assert edges == sorted([
        '"F3" -> "t3";', '"F2" -> "t2";', '"F1" -> "t1";',
        '"A1" -> "F1";', '"F2" -> "F1";', '"A2" -> "F2";', '"F3" -> "F2";', '"A3" -> "F3";',
        '"A2" -> "A3";', '"A1" -> "A2";',
    ])
    assert dot.startswith('digraph "rrr inverse" {') and '"t1" [label="τ1"' in dot


def test_bayes_tree_is_a_clique_tree(rrr):
    for problem, ordering in CASES:
        r = solve(rrr, problem, ordering)
        tree = r.bayes_tree()
        assert nx.is_arborescence(tree) or nx.is_branching(tree)
        frontals = [f for n in tree for f in tree.nodes[n]["frontals"]]
        assert sorted(frontals) == sorted(r.ordering)  # each variable in exactly one clique


def test_dag_attributes(rrr):
    dag = gtdyn.forward_dynamics(rrr, Q, V, A, ordering="aba").dag()
    kinds = {dag.nodes[n]["kind"] for n in dag}
    assert kinds == {"wrench", "twist_accel", "joint_accel"}
    assert sorted(dag.nodes[n]["step"] for n in dag) == list(range(9))
    assert nx.is_directed_acyclic_graph(dag)


# -- drawings of large trees: layouts that follow the tree, bounded sizes, grouped steps ----------------


def _min_distance(pos) -> float:
    p = np.array(list(pos.values()))
    d = np.linalg.norm(p[:, None] - p[None], axis=2) + np.eye(len(p)) * 1e9
    return float(d.min())


def test_tree_layout_of_a_chain_is_the_layered_layout(rrr):
    from gtdyn.plot.dag import layered_layout, tree_layout

    for problem in ("inverse", "forward", "hybrid"):
        dag = solve(rrr, problem, applicable(problem)[0]).dag()
        assert tree_layout(dag, rrr) == layered_layout(dag)


@pytest.mark.parametrize("seed", [3, 11])
def test_tree_layout_of_a_40_joint_tree_follows_the_tree_and_overlaps_nothing(seed):
    from gtdyn.model.random import random_robot
    from gtdyn.plot.dag import fold_layout, joint_places, tree_layout

    robot = random_robot(np.random.default_rng(seed), 40, tree=True, prismatic=0.0)
    n = robot.num_dofs
    dag = gtdyn.forward_dynamics(robot, np.zeros(n), np.zeros(n), np.zeros(n), ordering="aba").dag()
    places = joint_places(robot)
    for joint in robot.tree_joints:  # one level below the parent, between the first and last child
        parent = robot.parent_joint(joint.parent)
        assert places[joint.index][0] == (places[parent.index][0] + 1 if parent else 1)
        kids = robot.child_joints(joint.child)
        if kids:
            assert places[kids[0].index][1] <= places[joint.index][1] <= places[kids[-1].index][1]
    for orientation in ("horizontal", "vertical", None):
        pos = tree_layout(dag, robot, orientation)
        assert _min_distance(pos) >= 1.0 and _min_distance(fold_layout(pos)) >= 1.0
        columns = {dag.nodes[k]["index"]: set() for k in dag}
        for k in dag:  # a joint's variables share a column
            columns[dag.nodes[k]["index"]].add(pos[k][0])
        assert all(len(c) == 1 for c in columns.values())


def test_loop_joints_get_their_own_place():
    from gtdyn.cli import default_state
    from gtdyn.plot.dag import joint_places, tree_layout

    for name in ("four_bar", "five_bar", "six_bar"):
        robot = gtdyn.load_robot(name)
        places = joint_places(robot)
        assert len(set(places.values())) == robot.num_dofs
        r = gtdyn.forward_dynamics(robot, *default_state(robot)[:2], np.zeros(robot.num_dofs), ordering="colamd")
        assert _min_distance(tree_layout(r.dag(), robot)) >= 1.0


def test_long_chains_fold_into_lines():
    from gtdyn.model.random import serial_chain
    from gtdyn.plot.dag import DAG_INCHES, fold_layout, layered_layout

    robot = serial_chain(48)
    n = robot.num_dofs
    pos = fold_layout(layered_layout(gtdyn.forward_dynamics(robot, np.zeros(n), np.zeros(n), np.zeros(n)).dag()))
    xs, ys = [x for x, _ in pos.values()], [y for _, y in pos.values()]
    width, height = (max(xs) - min(xs) + 1) * DAG_INCHES[0], (max(ys) - min(ys) + 1) * DAG_INCHES[1]
    assert width <= 2 * height and _min_distance(pos) >= 1.0
    puma = gtdyn.load_robot("puma560")
    short = layered_layout(gtdyn.inverse_dynamics(puma, np.zeros(6), np.zeros(6), np.zeros(6)).dag())
    assert fold_layout(short) == short  # a 6-joint arm stays one row of columns


def test_drawings_stay_within_the_pixel_limit(rrr, tmp_path, monkeypatch):
    from matplotlib.image import imread

    import gtdyn.plot.dag
    from gtdyn.plot.dag import draw_dag

    r = solve(rrr, "forward", "aba")
    draw_dag(r.dag(), str(tmp_path / "full.png"), robot=rrr)
    full = imread(str(tmp_path / "full.png")).shape
    monkeypatch.setattr(gtdyn.plot.dag, "MAX_PIXELS", 300)
    draw_dag(r.dag(), str(tmp_path / "small.png"), robot=rrr)
    draw_elimination_steps(r.graph, r.elimination_ordering, str(tmp_path / "steps.png"), robot=rrr)
    assert max(full[:2]) > 300
    for name in ("small.png", "steps.png"):
        assert max(imread(str(tmp_path / name)).shape[:2]) <= 300


def test_group_batches():
    from gtdyn.analysis.steps import group_batches

    assert group_batches([1, 2, 3], 5) == [1, 2, 3]
    for batches in ([1] * 96, [3, 1, 2, 3] * 20, [50, 1, 1, 1, 1, 1]):
        for groups in (1, 4, 11):
            grouped = group_batches(batches, groups)
            assert sum(grouped) == sum(batches) and 1 <= len(grouped) <= groups
            ends = set(np.cumsum(batches).tolist())
            assert set(np.cumsum(grouped).tolist()) <= ends  # no batch is split
    even = group_batches([1] * 96, 11)
    assert len(even) == 11 and max(even) - min(even) <= 1  # about equal sizes


def test_step_view_groups_batches_into_at_most_12_panels(tmp_path, monkeypatch):
    import gtdyn.plot.dag
    from gtdyn.errors import ArgumentError

    puma = gtdyn.load_robot("puma560")
    r = gtdyn.forward_dynamics(puma, np.zeros(6), np.zeros(6), np.zeros(6), ordering="aba")  # 18 runs of a kind
    calls = []
    fig = draw_elimination_steps(r.graph, r.elimination_ordering, robot=puma, progress=lambda *a: calls.append(a))
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert len(titles) == 12 and titles[0] == "start" and calls[-1] == (12, 13)
    assert all(t.startswith("eliminate ") for t in titles[1:])
    assert len(draw_elimination_steps(r.graph, r.elimination_ordering, max_panels=4).axes) <= 4
    with pytest.raises(ArgumentError, match="max_panels=12"):
        draw_elimination_steps(r.graph, r.elimination_ordering, batches=[1] * 18)
    monkeypatch.setattr(gtdyn.plot.dag, "MAX_STEP_VARIABLES", 10)
    with pytest.raises(ArgumentError, match="at most 10 variables"):
        draw_elimination_steps(r.graph, r.elimination_ordering)


def test_a_transmissions_lambda_stands_with_the_joint_it_drives():
    """λ_k's index counts transmissions, not joints: the Panda's λ1 was drawn in joint 1's column, and the
    outline of its finger cluster then spread over the whole arm (issue 20)."""
    from gtdyn.plot.dag import tree_layout

    panda = gtdyn.load_robot("panda")
    q = np.zeros(9)
    q[7:] = 0.02
    dag = gtdyn.forward_dynamics(panda, q, np.zeros(9), np.zeros(9), ordering="aba").dag()
    pos = tree_layout(dag, panda, orientation="horizontal")  # x: the joint's depth in the tree
    label = {d["label"]: n for n, d in dag.nodes(data=True)}
    driven = panda.transmissions[0].dependent
    assert pos[label["L1"]][0] == pos[label[f"a{driven}"]][0] != pos[label["a1"]][0]
