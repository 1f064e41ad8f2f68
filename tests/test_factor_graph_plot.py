"""Factor-graph drawings: one shape per variable (squares for the known ones), one dot per factor, files written."""

import numpy as np
import pytest

import gtdyn
from gtdyn import keys
from gtdyn.factors.full_graph import full_dynamics_graph
from gtdyn.plot.dag import draw_dag
from gtdyn.plot.factor_graph import (
    DOT_RADIUS,
    NODE_RADIUS,
    _segment_gap,
    add_dag_legend,
    draw_factor_graph,
    factor_keys,
    factor_positions,
    known_keys,
    variable_positions,
)

Q, V, A = [0.3, -0.4, 0.8], [0.5, 0.1, -0.7], [1.0, -2.0, 0.5]


@pytest.fixture(scope="module")
def rrr():
    return gtdyn.load_robot("rrr")


def artist(fig, gid):
    """The collection drawn with this gid (a Figure made by draw_factor_graph has one axes)."""
    (found,) = [c for c in fig.axes[0].collections if c.get_gid() == gid]
    return found


def count(fig, gid):
    return len(artist(fig, gid).get_paths())


def variables_of(graph):
    return {k for f in factor_keys(graph) for k in f}


@pytest.mark.parametrize("problem", ["inverse", "forward"])
def test_full_graph_draws_every_variable_and_factor_with_knowns_as_squares(rrr, problem):
    graph = full_dynamics_graph(rrr)
    known = known_keys(rrr, problem)
    fig = draw_factor_graph(graph, known=known)
    variables = variables_of(graph)
    assert count(fig, "factors") == graph.size() == 15
    assert count(fig, "known-variables") == len(known & variables) == 15  # q, q̇, V, T and q̈ or τ, per joint
    assert count(fig, "unknown-variables") == len(variables - known) == 9
    assert len(artist(fig, "factor-edges").get_segments()) == sum(len(f) for f in factor_keys(graph))


def test_squares_are_the_known_variables(rrr):
    graph = full_dynamics_graph(rrr)
    known = known_keys(rrr, "inverse")
    fig = draw_factor_graph(graph, known=known)
    squares = artist(fig, "known-variables").get_paths()
    assert all(len(p.vertices) == 5 for p in squares)  # a closed rectangle
    centres = {tuple(np.round(p.vertices[:4].mean(axis=0), 6)) for p in artist(fig, "known-variables").get_paths()}
    positions = variable_positions(variables_of(graph))
    assert centres == {tuple(np.round(positions[k], 6)) for k in known}


def test_linear_graph_of_a_solve_is_all_unknowns(rrr, tmp_path):
    r = gtdyn.inverse_dynamics(rrr, Q, V, A, ordering="rnea")
    path = tmp_path / "inverse.png"
    fig = draw_factor_graph(r.graph, path=str(path), title="3R inverse dynamics")
    assert path.read_bytes().startswith(b"\x89PNG")
    assert count(fig, "factors") == r.graph.size() == 9
    assert count(fig, "unknown-variables") == 9 and count(fig, "known-variables") == 0
    assert fig.axes[0].get_title() == "3R inverse dynamics"


@pytest.mark.parametrize("suffix, magic", [(".svg", b"<?xml"), (".pdf", b"%PDF")])
def test_other_file_formats(rrr, tmp_path, suffix, magic):
    path = tmp_path / f"graph{suffix}"
    draw_factor_graph(full_dynamics_graph(rrr), known=known_keys(rrr, "forward"), path=str(path))
    assert path.read_bytes().startswith(magic)


def test_draws_into_a_given_axes(rrr):
    from matplotlib.figure import Figure

    fig = Figure()
    left, right = fig.subplots(1, 2)
    r = gtdyn.forward_dynamics(rrr, Q, V, A, ordering="aba")
    assert draw_factor_graph(r.graph, ax=right) is fig
    assert not left.collections and right.collections


def test_legend_explains_shapes_and_colours(rrr):
    fig = draw_factor_graph(full_dynamics_graph(rrr), known=known_keys(rrr, "inverse"))
    texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert texts[:3] == ["unknown variable", "known variable", "factor (an equation)"]
    for words in ("τ torque", "F wrench", "V̇ twist acceleration", "q̈ joint acceleration", "q joint angle"):
        assert any(words in t for t in texts), words


def test_legend_mentions_squares_only_when_some_are_drawn(rrr):
    r = gtdyn.inverse_dynamics(rrr, Q, V, A)
    texts = [t.get_text() for t in draw_factor_graph(r.graph).axes[0].get_legend().get_texts()]
    assert "known variable" not in texts and "unknown variable" in texts


def test_layout_of_a_linear_graph_matches_the_dag_drawings(rrr):
    from gtdyn.plot.dag import layered_layout

    r = gtdyn.forward_dynamics(rrr, Q, V, A, ordering="crba")
    ours = variable_positions(variables_of(r.graph))
    dag = layered_layout(r.dag())
    xs, ys = {k: p[0] for k, p in ours.items()}, {k: p[1] for k, p in ours.items()}
    # the same columns and the same row order, up to scale
    assert sorted(xs, key=lambda k: (xs[k], k)) == sorted(dag, key=lambda k: (dag[k][0], k))
    assert sorted(ys, key=lambda k: (-ys[k], k)) == sorted(dag, key=lambda k: (-dag[k][1], k))


def test_factor_dots_cover_no_variable_and_no_other_dot(rrr):
    for graph in (full_dynamics_graph(rrr), gtdyn.forward_dynamics(rrr, Q, V, A).graph):
        factors = factor_keys(graph)
        nodes = variable_positions(variables_of(graph))
        dots = np.array(factor_positions(factors, nodes))
        centres = np.array(list(nodes.values()))
        assert np.min(np.linalg.norm(dots[:, None] - centres[None], axis=2)) > NODE_RADIUS + DOT_RADIUS
        between_dots = np.linalg.norm(dots[:, None] - dots[None], axis=2) + np.eye(len(dots)) * 1e9
        assert np.min(between_dots) > 2 * DOT_RADIUS


@pytest.mark.parametrize("name", ["rrr", "puma560"])
def test_full_graph_lines_pass_clear_of_variables_they_do_not_touch(name):
    graph = full_dynamics_graph(gtdyn.load_robot(name))
    factors = factor_keys(graph)
    nodes = variable_positions(variables_of(graph))
    dots = factor_positions(factors, nodes)
    for key, centre in nodes.items():
        others = [(dot, nodes[k]) for factor, dot in zip(factors, dots) if key not in factor for k in factor]
        assert _segment_gap(centre, others) + DOT_RADIUS > 1.5 * NODE_RADIUS, keys.pretty(key)


def test_dag_legend_names_kinds_and_arrows(rrr):
    from gtdyn.plot.dag import draw_elimination_steps

    r = gtdyn.inverse_dynamics(rrr, Q, V, A, ordering="rnea")
    texts = [t.get_text() for t in add_dag_legend(draw_dag(r.dag()), r.dag()).get_texts()]
    assert texts == ["V̇ twist acceleration", "F wrench", "τ torque", "p → x: back-substitution computes x from p"]
    steps = draw_elimination_steps(r.graph, r.elimination_ordering, batches=[3, 1, 2, 3])
    assert "not yet eliminated" in [t.get_text() for t in add_dag_legend(steps, r.dag(), steps=True).get_texts()]


def test_known_keys_per_problem(rrr):
    always = {f(j) for j in (1, 2, 3)
              for f in (keys.joint_angle_key, keys.joint_vel_key, keys.twist_key, keys.pose_key)}
    assert known_keys(rrr, "inverse") == always | {keys.joint_accel_key(j) for j in (1, 2, 3)}
    assert known_keys(rrr, "forward") == always | {keys.torque_key(j) for j in (1, 2, 3)}
    hybrid = known_keys(rrr, "hybrid", qdd={"j1": 1.0}, tau={"j2": 0.2, "j3": 0.0})
    assert hybrid == always | {keys.joint_accel_key(1), keys.torque_key(2), keys.torque_key(3)}


def test_known_keys_rejects_bad_arguments(rrr):
    with pytest.raises(ValueError, match="problem"):
        known_keys(rrr, "sideways")
    with pytest.raises(ValueError, match="hybrid"):
        known_keys(rrr, "inverse", qdd={"j1": 1.0})
    with pytest.raises(KeyError, match="j9"):
        known_keys(rrr, "hybrid", qdd={"j9": 1.0}, tau={})
