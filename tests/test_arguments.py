"""Bad arguments give a ValueError naming the argument; custom orderings are checked and honoured."""

import numpy as np
import pytest

import gtdyn


@pytest.fixture(scope="module")
def rrr():
    return gtdyn.load_robot("rrr")


Z = np.zeros(3)


@pytest.mark.parametrize("arg", ["q", "v", "qdd"])
@pytest.mark.parametrize("value, message", [
    (np.zeros(2), "expected a vector of length 3"),
    (np.zeros((3, 1)), "expected a vector of length 3"),
    (np.array([0.0, np.nan, 0.0]), "non-finite"),
    (np.array([0.0, np.inf, 0.0]), "non-finite"),
    (["a", "b", "c"], "expected 3 numbers"),
])
def test_bad_vectors_name_the_argument(rrr, arg, value, message):
    args = {"q": Z, "v": Z, "qdd": Z, arg: value}
    with pytest.raises(ValueError, match=message) as info:
        gtdyn.inverse_dynamics(rrr, args["q"], args["v"], args["qdd"])
    assert str(info.value).startswith(f"{arg}:") and "j1, j2, j3" in str(info.value)


def test_a_vectors_quick_finiteness_check_misses_nothing_and_warns_of_nothing():
    """``finite_vector``'s fast path (float64 vectors: a finite sum of their entries) refuses every non-finite
    entry, ±inf together included, and lets finite entries whose sum overflows through the full check, with no
    warning either way; what it returns is a copy."""
    import warnings

    from gtdyn.arguments import finite_vector

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for bad in ([np.nan, 1.0, 2.0], [np.inf, 1.0, 2.0], [np.inf, -np.inf, 2.0], [-np.inf, 0.0, 0.0]):
            with pytest.raises(gtdyn.ArgumentError, match="^x: non-finite"):
                finite_vector("x", np.array(bad), 3)
        huge = np.array([1e308, 1e308, -2.0])
        out = finite_vector("x", huge, 3)
        assert np.array_equal(out, huge) and out is not huge


def test_numbers_quick_paths_refuse_what_the_full_checks_refuse():
    """``positive_number`` and ``whole_number`` take plain floats and ints without the ABC's check: NaN, ±inf,
    zero, negatives, bools and counts under the minimum still raise; numpy's scalars take the full check."""
    from gtdyn.arguments import positive_number, whole_number

    for bad in (float("nan"), float("inf"), -float("inf"), 0.0, -0.0, -1e-300, True):
        with pytest.raises(gtdyn.ArgumentError, match="^dt: expected a finite number > 0"):
            positive_number("dt", bad)
    assert positive_number("dt", 5e-324) == 5e-324 and positive_number("dt", np.float64(0.5)) == 0.5
    assert type(positive_number("dt", 2)) is float
    for bad in (0, -3, True, 2.0, np.float64(3.0)):
        with pytest.raises(gtdyn.ArgumentError, match="^steps: expected a whole number ≥ 1"):
            whole_number("steps", bad, 1)
    assert whole_number("steps", 1, 1) == 1 and type(whole_number("steps", np.int64(4), 1)) is int


def test_bad_tau_and_gravity(rrr):
    with pytest.raises(ValueError, match="^tau: expected a vector of length 3"):
        gtdyn.forward_dynamics(rrr, Z, Z, np.zeros(4))
    with pytest.raises(ValueError, match="^gravity: expected a vector of length 3"):
        gtdyn.inverse_dynamics(rrr, Z, Z, Z, gravity=(0, -9.81))


@pytest.mark.parametrize("entry", ["inverse_dynamics", "compile", "simulate"])
def test_gravity_beyond_any_robots_world_is_refused(rrr, entry):
    """Gravity of 1e30 m/s² along the 3R arm's joint axes should do nothing, but its cancelling terms left q̈
    wrong by 13 with no warning: every entry point refuses gravity beyond ±1e4 m/s²."""
    g = (0.0, 0.0, 1e30)
    call = {"inverse_dynamics": lambda: gtdyn.inverse_dynamics(rrr, Z, Z, Z, gravity=g),
            "compile": lambda: gtdyn.compile(rrr, "forward", gravity=g),
            "simulate": lambda: gtdyn.simulate(rrr, Z, Z, dt=1e-3, steps=2, gravity=g)}[entry]
    with pytest.raises(gtdyn.ArgumentError, match="^gravity: 1e\\+30 m/s² is beyond the ±10000 m/s²"):
        call()
    assert np.allclose(gtdyn.forward_dynamics(rrr, Z, Z, Z, gravity=(0, 0, -1e4)).qdd, 0)  # the bound itself is fine


def test_hybrid_dict_errors(rrr):
    with pytest.raises(ValueError, match=r"^qdd: unknown joints j9"):
        gtdyn.hybrid_dynamics(rrr, Z, Z, qdd={"j9": 1.0}, tau={"j1": 0, "j2": 0, "j3": 0})
    with pytest.raises(ValueError, match=r"given in both.*j2|j2.*given in both"):
        gtdyn.hybrid_dynamics(rrr, Z, Z, qdd={"j1": 1.0, "j2": 0.0}, tau={"j2": 0.0, "j3": 0.0})
    with pytest.raises(ValueError, match="j3 are in neither"):
        gtdyn.hybrid_dynamics(rrr, Z, Z, qdd={"j1": 1.0}, tau={"j2": 0.0})
    with pytest.raises(ValueError, match=r"^tau\['j2'\]: non-finite"):
        gtdyn.hybrid_dynamics(rrr, Z, Z, qdd={"j1": 1.0, "j3": 0.0}, tau={"j2": float("nan")})
    with pytest.raises(ValueError, match="^qdd: expected a dict"):
        gtdyn.hybrid_dynamics(rrr, Z, Z, qdd=[1.0], tau={})


def test_external_wrench_errors(rrr):
    with pytest.raises(ValueError, match="unknown link or frame 'hand'"):
        gtdyn.inverse_dynamics(rrr, Z, Z, Z, external_wrenches={"hand": np.zeros(6)})
    with pytest.raises(ValueError, match="fixed to the base"):
        gtdyn.inverse_dynamics(rrr, Z, Z, Z, external_wrenches={"base_link": np.ones(6)})
    with pytest.raises(ValueError, match=r"external_wrenches\['tip'\]: expected a vector of length 6"):
        gtdyn.inverse_dynamics(rrr, Z, Z, Z, external_wrenches={"tip": np.ones(3)})


def test_external_wrenches_beyond_any_robots_world_are_refused(rrr):
    """A wrench of 1e25 on the tip left q̈ wrong by 1.5e-5 (1e30: by 13) with no warning."""
    tip = rrr.links[-1].name
    with pytest.raises(gtdyn.ArgumentError, match=rf"^external_wrenches\['{tip}'\]: 1e\+25 is beyond the ±1e\+12"):
        gtdyn.forward_dynamics(rrr, Z, Z, Z, external_wrenches={tip: [0, 0, 0, 0, 0, 1e25]})
    gtdyn.forward_dynamics(rrr, Z, Z, Z, external_wrenches={tip: [0, 0, 0, 0, 0, 1e12]})  # the bound itself is fine


def test_external_wrench_on_merged_frame_equals_static_balance(rrr):
    """A 1 N push along +y at the tip (3 m from j1 when straight) needs −3, −2, −1 N·m to hold still."""
    tau = gtdyn.inverse_dynamics(rrr, Z, Z, Z, external_wrenches={"tip": [0, 0, 0, 0, 1.0, 0]}).tau
    np.testing.assert_allclose(tau, [-3.0, -2.0, -1.0], atol=1e-12)


def test_custom_ordering_lists(rrr):
    rng = np.random.default_rng(12)
    q, v, a = rng.normal(size=(3, 3))
    default = gtdyn.inverse_dynamics(rrr, q, v, a)
    # paper Fig. 5: τ3..τ1, F1..F3, V̇3..V̇1
    labels = ["t3", "t2", "t1", "F1", "F2", "F3", "A3", "A2", "A1"]
    r = gtdyn.inverse_dynamics(rrr, q, v, a, ordering=labels)
    assert r.ordering == labels
    np.testing.assert_allclose(r.tau, default.tau, rtol=1e-12, atol=1e-12)
    from gtdyn import keys
    r_keys = gtdyn.inverse_dynamics(rrr, q, v, a, ordering=[keys.parse_label(x) for x in labels])
    assert r_keys.ordering == labels
    called = gtdyn.inverse_dynamics(rrr, q, v, a, ordering=lambda robot, problem, graph: list(reversed(labels)))
    assert called.ordering == list(reversed(labels))


@pytest.mark.parametrize("ordering, message", [
    (["t1", "t2", "t3", "F1", "F2", "F3", "A1", "A2"], "missing: A3"),
    (["t1", "t2", "t3", "F1", "F2", "F3", "A1", "A2", "A3", "a1"], "not unknowns of this problem: a1"),
    (["t1", "t1", "t2", "t3", "F1", "F2", "F3", "A1", "A2", "A3"], "repeated: t1"),
    (["x1"], "'x1' is not a variable label"),
    ("rnea-ish", "unknown strategy 'rnea-ish'"),
    (3.5, "expected a strategy name"),
    # these escaped as chr() errors or recursion, or (None) were silently replaced by COLAMD
    ([-1], "-1 is not a key"),
    ([2**80], "is not a key"),
    ([1], "not unknowns of this problem: 1;"),  # a number that is no gtdyn key is shown as the number
    (lambda robot, problem, graph: None, "returned NoneType; it must return"),
    (lambda robot: ["t1"], "is called as ordering\\(robot, problem, graph\\)"),
    (lambda robot, problem, graph: (lambda *a: ["t1"]), "returned function"),
])
def test_bad_orderings(rrr, ordering, message):
    with pytest.raises((ValueError, TypeError), match=message) as info:
        gtdyn.inverse_dynamics(rrr, Z, Z, Z, ordering=ordering)
    assert str(info.value).startswith("ordering:")


def test_result_contents(rrr):
    r = gtdyn.forward_dynamics(rrr, [0.1, 0.2, 0.3], [0.5, -0.5, 1.0], [1.0, 2.0, 3.0], ordering="natural")
    assert set(r.wrenches) == {"j1", "j2", "j3"} and set(r.twist_accels) == {"l1", "l2", "l3"}
    assert r.bayes_net.size() == len(r.ordering) == 3 * 3  # one conditional each for F, V̇ and q̈ per joint
    dag = r.dag()
    assert set(dag.nodes[n]["label"] for n in dag) == set(r.ordering)
    assert {dag.nodes[n]["kind"] for n in dag} == {"wrench", "twist_accel", "joint_accel"}
    assert "forward dynamics of 'rrr'" in repr(r)


def test_both_elimination_paths_agree_and_detect_singular_systems(rrr, tmp_path):
    from gtdyn.orderings import applicable

    rng = np.random.default_rng(18)
    q, v, tau = rng.normal(size=(3, 3))
    for name in applicable("forward"):
        qr = gtdyn.forward_dynamics(rrr, q, v, tau, ordering=name, elimination="qr").qdd
        hard = gtdyn.forward_dynamics(rrr, q, v, tau, ordering=name, elimination="constrained").qdd
        np.testing.assert_allclose(qr, hard, rtol=1e-10, atol=1e-10)
    path = tmp_path / "massless.urdf"
    path.write_text('<robot name="m"><link name="b"/><link name="a"><inertial><mass value="1"/>'
                    '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link><link name="tip"/>'
                    '<joint name="j1" type="continuous"><parent link="b"/><child link="a"/></joint>'
                    '<joint name="j2" type="continuous"><parent link="a"/><child link="tip"/><origin xyz="1 0 0"/>'
                    '</joint></robot>')
    with pytest.warns(gtdyn.ModelWarning):
        robot = gtdyn.load_robot(path)
    for elimination in ("qr", "constrained"):
        for ordering in ("aba", "colamd", "natural"):
            with pytest.raises(gtdyn.IndeterminateSystemError) as info:
                gtdyn.forward_dynamics(robot, [0, 0], [0, 0], [0, 0], ordering=ordering, elimination=elimination)
            assert "a2" in info.value.free_variables
    with pytest.raises(ValueError, match="^elimination: 'lu' is not one of qr, constrained"):
        gtdyn.forward_dynamics(rrr, q, v, tau, elimination="lu")


def test_solve_dispatches_and_names_misplaced_arguments(rrr):
    q, v, a = [0.1, 0.2, 0.3], [0.4, 0.5, 0.6], [1.0, -1.0, 0.5]
    tau = gtdyn.solve(rrr, "inverse", q, v, qdd=a, ordering="rnea").tau
    np.testing.assert_array_equal(tau, gtdyn.inverse_dynamics(rrr, q, v, a, ordering="rnea").tau)
    np.testing.assert_allclose(gtdyn.solve(rrr, "forward", q, v, tau=tau).qdd, a, atol=1e-12)
    h = gtdyn.solve(rrr, "hybrid", q, v, qdd={"j1": a[0]}, tau={"j2": tau[1], "j3": tau[2]})
    assert h.problem == "hybrid" and np.allclose(h.qdd, a, atol=1e-12)
    with pytest.raises(gtdyn.ArgumentError, match="^kind: 'sideways'"):
        gtdyn.solve(rrr, "sideways", q, v)
    with pytest.raises(gtdyn.ArgumentError, match="^qdd: not given in forward dynamics"):
        gtdyn.solve(rrr, "forward", q, v, qdd=a, tau=tau)


def test_register_ordering(rrr):
    from gtdyn.orderings import APPLIES_TO, STRATEGIES

    def reverse_natural(robot, problem, graph):
        return sorted(set(graph.keyVector()), reverse=True)

    try:
        gtdyn.register_ordering("reverse_natural", reverse_natural, ("forward",))
        r = gtdyn.forward_dynamics(rrr, [0.1, 0.2, 0.3], [0, 0, 0], [1, 1, 1], ordering="reverse_natural")
        assert r.ordering == sorted(r.ordering, key=lambda label: gtdyn.keys.parse_label(label), reverse=True)
        with pytest.raises(gtdyn.ArgumentError, match="applies to forward dynamics, not inverse"):
            gtdyn.inverse_dynamics(rrr, [0.1, 0.2, 0.3], [0, 0, 0], [1, 1, 1], ordering="reverse_natural")
        with pytest.raises(gtdyn.ArgumentError, match="^register_ordering"):
            gtdyn.register_ordering("bad", reverse_natural, ("sideways",))
    finally:
        STRATEGIES.pop("reverse_natural", None)
        APPLIES_TO.pop("reverse_natural", None)


def test_dynamics_calls_check_their_robot_and_option_types(rrr):
    """A path or bundled name instead of a loaded robot, and arrays or lists where a word or a flag belongs,
    were AttributeErrors, TypeErrors or numpy's 'truth value is ambiguous'."""
    from gtdyn.dynamics.three_pass import featherstone_hybrid_dynamics

    calls = [lambda: gtdyn.inverse_dynamics("rrr", Z, Z, Z), lambda: gtdyn.forward_dynamics("rrr", Z, Z, Z),
             lambda: gtdyn.hybrid_dynamics("rrr", Z, Z, {}, {}), lambda: gtdyn.solve("rrr", "inverse", Z, Z, qdd=Z),
             lambda: gtdyn.close_loops("four_bar", {}), lambda: featherstone_hybrid_dynamics("rrr", Z, Z, {}, {})]
    for call in calls:
        with pytest.raises(gtdyn.ArgumentError, match=r"^robot: expected a gtdyn.Robot .* got str 'rrr|four_bar'"):
            call()
    with pytest.raises(gtdyn.ArgumentError, match="^elimination: array"):
        gtdyn.inverse_dynamics(rrr, Z, Z, Z, elimination=np.array(["qr"]))
    with pytest.raises(gtdyn.ArgumentError, match="^planar: expected None, True or False"):
        gtdyn.inverse_dynamics(rrr, Z, Z, Z, planar=np.array([1, 2]))
    with pytest.raises(gtdyn.ArgumentError, match=r"^kind: \['inverse'\] is not one of"):
        gtdyn.solve(rrr, ["inverse"], Z, Z, qdd=Z)
    with pytest.raises(gtdyn.ArgumentError, match="^register_ordering: need a name, a callable and problem kinds"):
        gtdyn.register_ordering("x", lambda robot, problem, graph: [], None)


def test_the_three_pass_reference_refuses_what_it_does_not_cover(tmp_path):
    """Featherstone's three passes lock and free joints one by one: on a floating base, a closed loop or a
    transmission they failed with errors that blamed the user's q̈ (hybrid_dynamics covers all three)."""
    from gtdyn.dynamics.three_pass import featherstone_hybrid_dynamics

    for robot, what in ((gtdyn.load_robot("quadruped", base="floating"), "a floating base"),
                        (gtdyn.load_robot("five_bar"), "closed loops")):
        n = robot.num_dofs
        with pytest.raises(gtdyn.ArgumentError, match=f"featherstone_hybrid_dynamics .* does not cover .* has {what}"):
            featherstone_hybrid_dynamics(robot, np.zeros(n), np.zeros(n), {}, {})


def test_a_robot_without_moving_joints_has_trivial_dynamics(tmp_path):
    """A URDF of fixed joints only (a table) loads; its dynamics are empty, not a numpy error."""
    path = tmp_path / "table.urdf"
    path.write_text('<robot name="table"><link name="base"/><joint name="f" type="fixed"><parent link="base"/>'
                    '<child link="top"/><origin xyz="0 0 1"/></joint><link name="top"><inertial><mass value="3"/>'
                    '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link></robot>')
    table = gtdyn.load_robot(str(path))
    assert table.num_dofs == 0
    assert gtdyn.forward_dynamics(table, [], [], []).qdd.shape == (0,)
    assert gtdyn.compile(table, "forward", use_cache=False)([], [], []).shape == (0,)
    assert gtdyn.simulate(table, [], [], dt=0.01, steps=2).q.shape == (3, 0)
    assert gtdyn.close_loops(table, {}).q.shape == (0,)
