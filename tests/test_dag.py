"""DAG construction, Bayes trees, step-by-step elimination, DOT export and drawing (Agg backend)."""

import matplotlib

matplotlib.use("Agg")

import networkx as nx
import numpy as np
import pytest

import gtdyn
from gtdyn.dag import bayes_net_dag, draw_elimination_steps, elimination_steps
from gtdyn.orderings import applicable

Q, V, A = [0.3, -0.4, 0.8], [0.5, 0.1, -0.7], [1.0, -2.0, 0.5]


@pytest.fixture(scope="module")
def rrr():
    return gtdyn.load_robot("rrr")


def solve(robot, problem, ordering):
    if problem == "inverse":
        return gtdyn.inverse_dynamics(robot, Q, V, A, ordering=ordering)
    if problem == "forward":
        return gtdyn.forward_dynamics(robot, Q, V, A, ordering=ordering)
    return gtdyn.hybrid_dynamics(robot, Q, V, qdd={"j1": 1.0}, tau={"j2": 0.2, "j3": 0.0}, ordering=ordering)


CASES = [(p, o) for p in ("inverse", "forward", "hybrid") for o in applicable(p)]


@pytest.mark.parametrize("problem, ordering", CASES)
def test_drawing_writes_an_image_for_every_strategy(rrr, tmp_path, problem, ordering):
    r = solve(rrr, problem, ordering)
    for suffix, magic in ((".png", b"\x89PNG"), (".svg", b"<?xml")):
        path = tmp_path / f"{problem}_{ordering}{suffix}"
        r.draw(str(path))
        data = path.read_bytes()
        assert data.startswith(magic) and len(data) > 2000
    assert "->" in r.to_dot()


@pytest.mark.parametrize("problem, ordering", CASES)
def test_step_view_ends_in_the_dag_which_covers_the_numeric_bayes_net(rrr, tmp_path, problem, ordering):
    """The generic-coefficient DAG contains every dependency the numeric Bayes net really has, at many
    configurations (the numeric one may drop blocks that happen to be exactly zero)."""
    r = solve(rrr, problem, ordering)
    steps = elimination_steps(r.graph, r.elimination_ordering)
    assert set(steps[-1][2].edges) == set(r.dag().edges)
    rng = np.random.default_rng(17)
    for _ in range(10):
        q, v = rng.normal(size=(2, 3))
        again = gtdyn.forward_dynamics(rrr, q, v, A, ordering=r.ordering) if problem == "forward" else \
            gtdyn.inverse_dynamics(rrr, q, v, A, ordering=r.ordering) if problem == "inverse" else \
            gtdyn.hybrid_dynamics(rrr, q, v, qdd={"j1": 1.0}, tau={"j2": 0.2, "j3": 0.0}, ordering=r.ordering)
        assert set(bayes_net_dag(again.bayes_net).edges) <= set(again.dag().edges)
        assert set(again.dag().edges) == set(r.dag().edges)  # the DAG does not depend on the configuration
    assert steps[-1][1].number_of_nodes() == 0 and steps[0][2].number_of_nodes() == 0
    path = tmp_path / "steps.png"
    draw_elimination_steps(r.graph, r.elimination_ordering, str(path))
    assert path.read_bytes().startswith(b"\x89PNG")


def test_step_view_of_rnea_is_figure_5(rrr):
    """Fig. 5: (a) after the τ: each τi hangs off Fi; (b) after F1: F1 from V̇1 and F2; (c) after all F;
    (d) the RNEA DAG."""
    r = gtdyn.inverse_dynamics(rrr, Q, V, A, ordering="rnea")
    steps = elimination_steps(r.graph, r.elimination_ordering, batches=[3, 1, 2, 3])
    labels = lambda g: {(g.nodes[a]["label"], g.nodes[b]["label"]) for a, b in g.edges}
    assert labels(steps[1][2]) == {("F1", "t1"), ("F2", "t2"), ("F3", "t3")}
    assert labels(steps[2][2]) - labels(steps[1][2]) == {("A1", "F1"), ("F2", "F1")}
    assert {n for n in (steps[3][1].nodes[k]["label"] for k in steps[3][1])} == {"A1", "A2", "A3"}
    assert len(steps[4][2].edges) == 10
    with pytest.raises(ValueError, match="add up to 8"):
        elimination_steps(r.graph, r.elimination_ordering, batches=[3, 5])


def test_golden_dot_for_rnea(rrr):
    """Hand-written from Algorithm 1 (nodes by kind row then index; edges by elimination step)."""
    dot = gtdyn.inverse_dynamics(rrr, Q, V, A, ordering="rnea").to_dot()
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
