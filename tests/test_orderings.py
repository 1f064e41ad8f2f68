"""Orderings as algorithms (paper 001 §IV–VI): the DAGs they give and that they all give the same answer."""

import numpy as np
import pytest
from references import closed_state, erd_path, load_quietly, rel_err

import gtdyn
from gtdyn import keys
from gtdyn.analysis.metrics import metrics_of
from gtdyn.model.build import build_robot
from gtdyn.model.random import uniform_chain_description
from gtdyn.orderings import APPLIES_TO, STRATEGIES, adjacency, applicable

TOL = 1e-10


@pytest.fixture(scope="module")
def rrr():
    return gtdyn.load_robot("rrr")


def parent_sets(result) -> dict[str, set[str]]:
    dag = result.dag()
    return {dag.nodes[n]["label"]: {dag.nodes[p]["label"] for p in dag.predecessors(n)} for n in dag}


def test_rnea_dag_is_algorithm_1(rrr):
    """Paper Algorithm 1 / Fig. 5(d), read off line by line: V̇1 from nothing unknown, V̇i from V̇i−1,
    F3 from V̇3, Fi from Fi+1 and V̇i, τi from Fi."""
    rng = np.random.default_rng(14)
    for _ in range(5):  # any configuration: the structure must not depend on the numbers
        q, v, a = rng.normal(size=(3, 3))
        r = gtdyn.inverse_dynamics(rrr, q, v, a, ordering="rnea")
        assert r.ordering == ["t3", "t2", "t1", "F1", "F2", "F3", "A3", "A2", "A1"]
        assert parent_sets(r) == {
            "A1": set(), "A2": {"A1"}, "A3": {"A2"},
            "F3": {"A3"}, "F2": {"F3", "A2"}, "F1": {"F2", "A1"},
            "t1": {"F1"}, "t2": {"F2"}, "t3": {"F3"},
        }


def test_rnea_metrics_by_hand(rrr):
    """Algorithm 1 has 10 arrows and no fill; its largest conditional is F1 | V̇1, F2. Operation count
    Σ f³/3 + f²s + fs²: τ (f=1, s=6) 3×(1/3+6+36), F1 and F2 (6, 12) 2×1368, F3 V̇3 V̇2 (6, 6) 3×504, V̇1 (6, 0) 72."""
    m = metrics_of(gtdyn.inverse_dynamics(rrr, [0.1, 0.2, 0.3], [0.4, 0.5, 0.6], [1, 2, 3], ordering="rnea"))
    assert m["edges"] == 10 and m["fill_in"] == 0 and m["largest_clique"] == 3 and m["tree_width"] == 2
    assert m["ops"] == pytest.approx(3 * (1 / 3 + 6 + 36) + 2 * 1368 + 3 * 504 + 72)


# The 3R arm's forward-dynamics graph (τ known), one factor per equation of paper 001 eq. 4–7:
#   torque  τj = Sjᵀ Fj           {F1} {F2} {F3}
#   wrench  (link j)              {A1, F1, F2} {A2, F2, F3} {A3, F3}
#   twist acceleration (link j)   {A1, a1} {A2, A1, a2} {A3, A2, a3}
# Eliminating a variable makes one conditional, whose parents are the other variables of the factors it
# is in; those factors are replaced by one on the parents (symbolic elimination; read downwards).
CRBA_PARENTS = {  # ordering F3 F2 F1 A3 A2 A1 a3 a2 a1: composite bodies, then M q̈ = τ − h
    "F3": {"F2", "A2", "A3"},        # {F3} {A2,F2,F3} {A3,F3}          -> new factor {F2,A2,A3}
    "F2": {"F1", "A1", "A2", "A3"},  # {F2} {A1,F1,F2} {F2,A2,A3}       -> {F1,A1,A2,A3}
    "F1": {"A1", "A2", "A3"},        # {F1} {F1,A1,A2,A3}               -> {A1,A2,A3}
    "A3": {"A1", "A2", "a3"},        # {A1,A2,A3} {A3,A2,a3}            -> {A1,A2,a3}
    "A2": {"A1", "a2", "a3"},        # {A1,A2,a3} {A2,A1,a2}            -> {A1,a2,a3}
    "A1": {"a1", "a2", "a3"},        # {A1,a2,a3} {A1,a1}               -> {a1,a2,a3}: the dense M
    "a3": {"a1", "a2"}, "a2": {"a1"}, "a1": set(),
}                                    # 3+4+3+3+3+3+2+1+0 = 22 edges
ABA_PARENTS = {  # ordering F3 A3 a3 F2 A2 a2 F1 A1 a1: articulated bodies, leaf first
    "F3": {"F2", "A2", "A3"},        # {F3} {A2,F2,F3} {A3,F3}          -> {F2,A2,A3}
    "A3": {"F2", "A2", "a3"},        # {F2,A2,A3} {A3,A2,a3}            -> {F2,A2,a3}
    "a3": {"F2", "A2"},              # {F2,A2,a3}                       -> {F2,A2}: link 2's articulated inertia
    "F2": {"F1", "A1", "A2"},        # {F2} {A1,F1,F2} {F2,A2}          -> {F1,A1,A2}
    "A2": {"F1", "A1", "a2"},        # {F1,A1,A2} {A2,A1,a2}            -> {F1,A1,a2}
    "a2": {"F1", "A1"},              # {F1,A1,a2}                       -> {F1,A1}
    "F1": {"A1"},                    # {F1} {F1,A1}                     -> {A1}
    "A1": {"a1"},                    # {A1} {A1,a1}                     -> {a1}
    "a1": set(),
}                                    # 3+3+2+3+3+2+1+1+0 = 18 edges


def test_crba_has_more_edges_than_aba(rrr):
    """Paper Fig. 7 / §V-A: CRBA's DAG has more edges than ABA's. On the 3R arm the DAGs are the ones derived
    above by hand (22 and 18 edges), at any state."""
    assert sum(map(len, CRBA_PARENTS.values())) == 22 and sum(map(len, ABA_PARENTS.values())) == 18
    rng = np.random.default_rng(15)
    for _ in range(5):
        q, v, tau = rng.normal(size=(3, 3))
        crba = gtdyn.forward_dynamics(rrr, q, v, tau, ordering="crba")
        aba = gtdyn.forward_dynamics(rrr, q, v, tau, ordering="aba")
        assert crba.ordering == list(CRBA_PARENTS) and aba.ordering == list(ABA_PARENTS)
        assert parent_sets(crba) == CRBA_PARENTS and parent_sets(aba) == ABA_PARENTS
        crba, aba = metrics_of(crba), metrics_of(aba)
        assert (crba["edges"], aba["edges"]) == (22, 18)
        assert crba["ops"] > aba["ops"]


def test_table_iii_md_and_custom_have_equal_edges(rrr):
    """Paper §VI-B: its MD and CUSTOM hybrid orderings (Table III) give DAGs with equally many edges."""
    md = ["t1", "a2", "a3", "A3", "F1", "A1", "F2", "A2", "F3"]
    custom = ["t1", "a2", "a3", "F1", "A1", "A3", "F3", "A2", "F2"]
    q, v = [0.3, -0.2, 0.5], [0.1, 0.4, -0.3]
    a = gtdyn.hybrid_dynamics(rrr, q, v, qdd={"j1": 1.0}, tau={"j2": 0.5, "j3": -0.5}, ordering=md)
    b = gtdyn.hybrid_dynamics(rrr, q, v, qdd={"j1": 1.0}, tau={"j2": 0.5, "j3": -0.5}, ordering=custom)
    assert metrics_of(a)["edges"] == metrics_of(b)["edges"]
    assert rel_err(a.qdd, b.qdd) < TOL and rel_err(a.tau, b.tau) < TOL


ROBOTS = {
    "puma560": lambda: gtdyn.bundled_path("puma560"),
    "ur5": lambda: erd_path("ur_description/urdf/ur5_robot.urdf"),
    "panda (tree)": lambda: erd_path("panda_description/urdf/panda.urdf"),
    "talos arm+gripper (tree)": lambda: erd_path("talos_data/robots/talos_left_arm.urdf"),
}


@pytest.fixture(params=sorted(ROBOTS), scope="module")
def robot(request):
    return load_quietly(ROBOTS[request.param]())


@pytest.mark.parametrize("problem", ["inverse", "forward", "hybrid"])
def test_every_strategy_gives_the_same_solution(robot, problem):
    rng = np.random.default_rng(16)
    n = robot.num_dofs
    q, v, a = rng.uniform(-np.pi, np.pi, n), rng.uniform(-2, 2, n), rng.uniform(-5, 5, n)
    tau = gtdyn.inverse_dynamics(robot, q, v, a).tau
    split = np.arange(n) % 2 == 0
    results = {}
    given = {"inverse": {"qdd": a}, "forward": {"tau": tau},
             "hybrid": {"qdd": {robot.joint_names[i]: a[i] for i in range(n) if split[i]},
                        "tau": {robot.joint_names[i]: tau[i] for i in range(n) if not split[i]}}}[problem]
    for name in applicable(problem):
        r = gtdyn.solve(robot, problem, q, v, **given, ordering=name)
        results[name] = r
        assert rel_err(r.qdd, a) < TOL and rel_err(r.tau, tau) < TOL, name
        assert r.dag().number_of_nodes() == len(r.ordering) == r.bayes_net.size()
    assert set(results) == {name for name, kinds in APPLIES_TO.items() if problem in kinds}
    if problem == "hybrid":
        three = gtdyn.featherstone_hybrid_dynamics(robot, q, v, given["qdd"], given["tau"])
        assert rel_err(three.qdd, a) < TOL and rel_err(three.tau, tau) < TOL
        assert [p.problem for p in three.passes] == ["inverse", "hybrid", "inverse"]


def test_applicability_is_checked_and_named(rrr):
    z = np.zeros(3)
    with pytest.raises(ValueError,
                       match="'rnea' applies to inverse dynamics, not forward; for forward dynamics use crba, aba"):
        gtdyn.forward_dynamics(rrr, z, z, z, ordering="rnea")
    with pytest.raises(ValueError, match="'crba' applies to forward dynamics, not inverse"):
        gtdyn.inverse_dynamics(rrr, z, z, z, ordering="crba")
    with pytest.raises(ValueError, match="not hybrid"):
        gtdyn.hybrid_dynamics(rrr, z, z, qdd={"j1": 0}, tau={"j2": 0, "j3": 0}, ordering="rnea")
    assert set(STRATEGIES) == {"rnea", "crba", "aba", "colamd", "nd", "md", "natural", "cluster_aba", "cluster_rnea",
                               "lagrange", "projection"}


def test_tree_meaning_of_classical_orderings():
    """On a tree, RNEA's wrenches go parent before child and its V̇ child before parent; ABA finishes each
    joint's subtree before the joint itself."""
    robot = load_quietly(erd_path("panda_description/urdf/panda.urdf"))
    n = robot.num_dofs
    rnea = gtdyn.inverse_dynamics(robot, np.zeros(n), np.zeros(n), np.zeros(n), ordering="rnea").ordering
    aba = gtdyn.forward_dynamics(robot, np.zeros(n), np.zeros(n), np.zeros(n), ordering="aba").ordering
    for joint in robot.joints:
        parent = robot.parent_joint(joint.parent)
        if parent is None:
            continue
        j, p = joint.index, parent.index
        assert rnea.index(f"F{p}") < rnea.index(f"F{j}") and rnea.index(f"A{j}") < rnea.index(f"A{p}")
        assert aba.index(f"a{j}") < aba.index(f"F{p}")


def test_remembered_orderings_follow_the_graph_structure(rrr):
    """Built-in orderings are remembered per robot and graph structure (for speed): a different set of given
    joints gets its own ordering, a user's replacement of a built-in name is used, and a result's ordering
    belongs to that result alone."""
    q, v, a = np.random.default_rng(3).normal(size=(3, 3))
    tau = gtdyn.inverse_dynamics(rrr, q, v, a).tau
    forward = gtdyn.forward_dynamics(rrr, q, v, tau, ordering="aba")
    assert forward.ordering == ["F3", "A3", "a3", "F2", "A2", "a2", "F1", "A1", "a1"]
    hybrid = gtdyn.hybrid_dynamics(rrr, q, v, {"j2": a[1]}, {"j1": tau[0], "j3": tau[2]}, ordering="aba")
    assert hybrid.ordering == ["F3", "A3", "a3", "t2", "F2", "A2", "F1", "A1", "a1"]
    forward.elimination_ordering.push_back(forward.elimination_ordering.at(0))  # the user's object to change
    assert gtdyn.forward_dynamics(rrr, q, v, tau, ordering="aba").ordering == forward.ordering[:-1]

    original = STRATEGIES["aba"]
    try:
        gtdyn.register_ordering("aba", lambda robot, problem, graph: forward.ordering[-2::-1], APPLIES_TO["aba"])
        assert gtdyn.forward_dynamics(rrr, q, v, tau, ordering="aba").ordering == forward.ordering[-2::-1]
    finally:
        gtdyn.register_ordering("aba", original, APPLIES_TO["aba"])
    assert gtdyn.forward_dynamics(rrr, q, v, tau, ordering="aba").ordering == forward.ordering[:-1]


def minimum_degree_by_scan(graph) -> list[int]:
    """Minimum degree as its definition reads: at each step, scan every variable left for the fewest neighbours
    (ties: τ, q̈, F, V̇, then index, then the graph's first), eliminate it and connect its neighbours."""
    neighbours = adjacency(graph)
    tie = {"torque": 0, "joint_accel": 1, "wrench": 2, "twist_accel": 3}
    order = []
    while neighbours:
        x = min(neighbours, key=lambda k: (len(neighbours[k]), tie.get(keys.kind(k), 9), keys.index(k)))
        around = neighbours.pop(x)
        for a in around:
            neighbours[a] = (neighbours[a] | around) - {a, x}
        order.append(x)
    return order


@pytest.mark.parametrize("name", ["rrr", "quadruped", "four_bar", "chain of 60"])
def test_minimum_degree_is_its_definition_on_trees_loops_and_long_chains(name):
    """``md`` keeps its candidates in a heap (a scan of every variable at every step took seconds on a
    1000-joint chain): the same order as the scan, tie for tie."""
    if name == "chain of 60":
        robot = build_robot(uniform_chain_description(60))
    else:
        robot = gtdyn.load_robot(name)
    if name == "four_bar":  # forward dynamics of a closed loop: its state closes it, its passive joints are free
        q, v, tau = closed_state(robot, ["j1"], seed=8)
        result = gtdyn.forward_dynamics(robot, q, v, tau, ordering="md")
    else:
        q, v, x = np.random.default_rng(8).uniform(-0.5, 0.5, (3, robot.num_dofs))
        result = gtdyn.inverse_dynamics(robot, q, v, x, ordering="md")
    order = [result.elimination_ordering.at(i) for i in range(result.elimination_ordering.size())]
    assert order == minimum_degree_by_scan(result.graph)


def test_minimum_degree_is_its_definition_on_random_graphs():
    """Graphs where eliminating a variable raises its neighbours' degrees (a heap entry goes stale) and where
    many variables tie, over every kind of key the tie-break ranks and two it does not (twists, transmissions:
    of one index, only their place in the graph orders them)."""
    import gtsam

    rng = np.random.default_rng(11)
    makers = [keys.torque_key, keys.joint_accel_key, keys.wrench_key, keys.twist_accel_key, keys.twist_key,
              keys.transmission_key]
    for _ in range(40):
        variables = list(dict.fromkeys(makers[rng.integers(6)](int(rng.integers(1, 4))) for _ in range(14)))
        graph = gtsam.GaussianFactorGraph()
        for _ in range(int(rng.integers(len(variables) // 2, 2 * len(variables)))):
            a, b, c = (variables[i] for i in rng.choice(len(variables), 3, replace=False))
            one = np.ones((1, 1))
            graph.add(gtsam.JacobianFactor(a, one, b, one, c, one, np.zeros(1), gtsam.noiseModel.Unit.Create(1)))
        got = STRATEGIES["md"](None, None, graph)
        assert [got.at(i) for i in range(got.size())] == minimum_degree_by_scan(graph)
