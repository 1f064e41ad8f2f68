"""The checked call's bound (issue 24, item 1; ``gtdyn.compiled.certificate.main``): one pass of ``solve_abs``
bounds the reference path's condition estimate from above, so a call the bound certifies is one the estimate
would have certified too; where the bound is loose the estimate decides, as before."""

import numpy as np
import pytest
from references import closed_state

import gtdyn
from gtdyn.compiled import native, render, trace
from gtdyn.compiled.certificate import BOUND_LIMIT

pytestmark = pytest.mark.usefixtures("private_cache")


def calls(solver, states, **base):
    """(the bound, the estimate) of each call the bound settled, and how many calls there were."""
    settled = []
    for q, v, x in states:
        solver(q, v, x, **base)
        if solver._ws[solver._bounded] != 0.0:
            settled.append((solver._ws[solver._status + 1], solver.condition))
    return settled


def random_states(n, count, seed, spread=np.pi):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-spread, spread, (3, n)) for _ in range(count)]


@pytest.mark.parametrize("robot_name,problem", [("puma560", "inverse"), ("puma560", "forward"), ("rrr", "forward"),
                                                ("rr", "inverse")])
def test_the_bound_is_never_below_the_estimate(robot_name, problem):
    robot = gtdyn.load_robot(robot_name)
    solver = gtdyn.compile(robot, problem)
    settled = calls(solver, random_states(robot.num_dofs, 40, seed=5))
    assert len(settled) == 40  # these plans' bounds settle every call here: the test is not vacuous
    for bound, estimate in settled:
        assert bound >= estimate and bound <= BOUND_LIMIT
    assert solver.fallbacks == 0


def test_the_bound_holds_on_a_floating_base_hybrid_problems_and_loops():
    quadruped = gtdyn.load_robot(gtdyn.bundled_path("quadruped"), base="floating")
    solver = gtdyn.compile(quadruped, "inverse")
    rng = np.random.default_rng(2)
    base = dict(base_pose=np.eye(4), base_twist=rng.normal(size=6), base_accel=rng.normal(size=6))
    settled = calls(solver, random_states(12, 20, seed=3, spread=1.0), **base)
    puma = gtdyn.load_robot("puma560")
    hybrid = gtdyn.compile(puma, "hybrid", qdd_joints=["joint1", "joint4"])
    settled += calls(hybrid, random_states(6, 20, seed=4))
    four_bar = gtdyn.load_robot(gtdyn.bundled_path("four_bar"))
    loops = gtdyn.compile(four_bar, "forward")
    settled += calls(loops, [closed_state(four_bar, ["j1"], seed) for seed in range(20)])
    assert len(settled) >= 40
    assert all(bound >= estimate for bound, estimate in settled)


def _solve_matrix(solver):
    """S, the solve's linear map, read column by column from the solve itself at the solver's last call; and a
    copy of the workspace with the factors, and the start of each region."""
    ws = solver._ws.copy()
    start = solver._record["start"]
    rows, unknowns = start["sol"] - start["rhs"], start["zt_lanes"] - start["sol"]
    solve = solver._native.function("solve")
    columns = []
    for i in range(rows):
        ws[start["rhs"]:start["rhs"] + rows] = np.eye(rows)[i]
        solve(ws.ctypes.data)
        columns.append(ws[start["sol"]:start["sol"] + unknowns].copy())
    return np.array(columns).T, ws, start


def test_solve_abs_bounds_the_solve_entry_by_entry():
    """Ŝ1 ≥ |S|1, S the solve's linear map read column by column from the solve itself."""
    puma = gtdyn.load_robot("puma560")
    solver = gtdyn.compile(puma, "forward")
    q, v, tau = random_states(6, 1, seed=9)[0]
    solver(q, v, tau)
    S, ws, start = _solve_matrix(solver)
    solver._native.function("solve_abs")(ws.ctypes.data)
    bound = ws[start["sol"]:start["sol"] + S.shape[0]]
    assert np.all(bound >= np.abs(S).sum(axis=1) * (1 - 1e-12))
    assert np.max(bound / np.abs(S).sum(axis=1)) > 1  # a bound, not an equality: the test can tell them apart


def test_a_floating_bases_block_taken_whole_still_bounds_both_passes(monkeypatch):
    """The magnitude passes take a floating base's last 6 × 6 block by its exact inverse (``root_block``):
    solve_abs still bounds |S|1 and solve_t_abs |S|ᵀz entry by entry (Schur's way forced here, so that both are
    compiled), no looser than the pivot-by-pivot passes entry by entry; calls certified by u or u_S stay bounded
    from above."""
    from gtdyn.compiled import certificate
    from gtdyn.compiled.certificate import BY_BOUND, BY_SCHUR

    monkeypatch.setattr(certificate, "cheapest_way", lambda functions, layout, norms, transposed_abs, limit: (
        functions.update(solve_t_abs=transposed_abs(np.ones(len(norms)))) or "schur"))
    quadruped = gtdyn.load_robot(gtdyn.bundled_path("quadruped"), base="floating")
    solver = gtdyn.compile(quadruped, "forward", use_cache=False, lanes=False)
    assert "floating base's block whole" in solver.code("solve_abs")
    rng = np.random.default_rng(8)
    q, v, tau = rng.uniform(-1, 1, (3, 12))
    solver(q, v, tau, base_twist=rng.normal(size=6))
    S, ws, start = _solve_matrix(solver)
    unknowns, rows = S.shape
    solver._native.function("solve_abs")(ws.ctypes.data)
    bound = ws[start["sol"]:start["sol"] + unknowns].copy()
    assert np.all(bound >= np.abs(S).sum(axis=1) * (1 - 1e-12))
    from gtdyn.compiled import codegen

    with monkeypatch.context() as pivot_by_pivot:  # the passes as they were: looser, entry by entry
        pivot_by_pivot.setattr(codegen, "root_block", lambda plan: None)
        before = gtdyn.compile(quadruped, "forward", use_cache=False, lanes=False)
    before(q, v, tau, base_twist=rng.normal(size=6))
    old = before._ws.copy()
    old[:start["sol"]] = ws[:start["sol"]]  # the same factors and inputs
    before._native.function("factor")(old.ctypes.data)
    before._native.function("solve_abs")(old.ctypes.data)
    assert np.all(bound <= old[start["sol"]:start["sol"] + unknowns] * (1 + 1e-12))
    assert np.sum(bound) < np.sum(old[start["sol"]:start["sol"] + unknowns])  # (Talos's: 4-15 times)
    for z in (np.ones(unknowns), rng.uniform(0, 1, unknowns)):
        ws[start["zt"]:start["zt"] + unknowns] = z
        solver._native.function("solve_t_abs")(ws.ctypes.data)
        assert np.all(ws[start["yt"]:start["yt"] + rows] >= np.abs(S).T @ z * (1 - 1e-12))
    ways = []
    for state in random_states(12, 30, seed=6, spread=1.0):
        solver(*state)
        ways.append(solver._ws[solver._bounded])
        if ways[-1] in (BY_BOUND, BY_SCHUR):
            bound = solver._ws[solver._status + 1]
            assert BOUND_LIMIT >= bound >= gtdyn.forward_dynamics(quadruped, *state).condition
    assert ways.count(BY_BOUND) + ways.count(BY_SCHUR) >= 20  # the bounds settled most calls: not vacuous


def test_where_the_bounds_are_loose_the_estimate_decides(tmp_path):
    """A 24-link chain: |R| products make both bounds useless at the build's sample states, so main is the
    estimate's certificate alone (no solve_abs, no branch), with the reference path's κ."""
    from gtdyn.bench.compiled import chain_with_urdf

    robot = chain_with_urdf(24, str(tmp_path))[0]
    solver = gtdyn.compile(robot, "inverse")
    assert not {"solve_abs", "solve_t_abs", "schur", "exact"} & set(solver.operations)
    assert "solve_t(ws)" in solver.code("main")
    q, v, x = random_states(24, 1, seed=1)[0]
    result = gtdyn.inverse_dynamics(robot, q, v, x)
    assert np.allclose(solver(q, v, x), result.tau, rtol=1e-12, atol=1e-12)
    assert solver._ws[solver._bounded] == 0.0 and solver.condition == pytest.approx(result.condition, rel=1e-6)


def test_a_settled_call_and_the_estimates_path_give_the_same_answer():
    puma = gtdyn.load_robot("puma560")
    solver = gtdyn.compile(puma, "forward")
    q, v, tau = random_states(6, 1, seed=11)[0]
    answer = solver(q, v, tau)
    from gtdyn.compiled.certificate import BY_BOUND, ITERATION

    ws = solver._ws.copy()
    solver._native.function("exact")(ws.ctypes.data)  # the refined answer, which the bound settles again
    out = solver._record["start"]["out"]
    assert ws[solver._status] == 1.0 and ws[solver._bounded] == BY_BOUND
    assert np.allclose(ws[out:out + 6], answer, rtol=1e-13, atol=1e-13)
    bound = ws[solver._status + 1]
    solver._native.function(ITERATION)(ws.ctypes.data)  # the estimate's path on the same factors
    assert ws[solver._status] == 1.0 and ws[solver._bounded] == 0.0
    assert solver.condition == ws[solver._status + 1] <= bound  # what a settled call's condition reads
    assert np.allclose(ws[out:out + 6], answer, rtol=1e-13, atol=1e-13)


def test_call_unless_branches_in_machine_code_and_in_the_rendered_source():
    callee = trace.Function("callee")
    callee.store(2, callee.load(0) + 1.0)
    caller = trace.Function("main")
    caller.call_unless(caller.load(1), callee)
    functions = {"callee": callee, "main": caller, "fast": trace.Function("fast")}  # a module has both entries
    source = render.render(functions)
    obj = native.compile_object(native.module_ir(functions, "t_"))
    loaded = native.Loaded(obj, "t_")
    space: dict = {}
    exec(source, space)
    for flag, expected in ((1.0, 0.0), (0.0, 6.0), (np.nan, 6.0)):
        ws = np.array([5.0, flag, 0.0])
        loaded.entry["main"](ws.ctypes.data)
        python = np.array([5.0, flag, 0.0])
        space["main"](python)
        assert ws[2] == expected and python[2] == expected


def test_a_plan_certified_three_ways_answers_every_state_as_the_reference_path(tmp_path):
    """A 14-link chain's RNEA: u certifies a few states, Schur's u_S (``schur``) about half, the estimate
    (``exact``, from main's solve) the others; every way, the answer and κ are the reference path's, and each
    bound is at least the estimate. A state beyond ``MAX_ANGLE`` that u_S would certify still goes to the
    reference path, which raises: u_S's verdict keeps main's other checks."""
    from gtdyn.bench.compiled import batch_states, chain_with_urdf
    from gtdyn.compiled.certificate import BY_BOUND, BY_SCHUR
    from gtdyn.errors import ArgumentError

    robot = chain_with_urdf(14, str(tmp_path))[0]
    solver = gtdyn.compile(robot, "inverse")
    assert {"solve_abs", "solve_t_abs", "schur", "exact"} <= set(solver.operations)
    Q, V, X = batch_states(robot, "inverse", None, 300)
    ways = {0.0: [], BY_BOUND: [], BY_SCHUR: []}
    for k, (q, v, x) in enumerate(zip(Q, V, X)):
        solver(q, v, x)
        ways[solver._ws[solver._bounded]].append(k)
    assert all(len(states) >= 3 for states in ways.values())  # each way ran: the test is not vacuous
    for way, states in ways.items():
        for k in states[:8]:
            tau = solver(Q[k], V[k], X[k])
            bound = solver._ws[solver._status + 1]
            result = gtdyn.inverse_dynamics(robot, Q[k], V[k], X[k])
            assert np.allclose(tau, result.tau, rtol=1e-12, atol=1e-12)
            assert solver.condition == pytest.approx(result.condition, rel=1e-6)
            if way != 0.0:
                assert BOUND_LIMIT >= bound >= solver.condition
                assert solver.backward_error == solver._ws[solver._status + 2] < 1e-15
    assert solver.fallbacks == 0
    q = Q[ways[BY_SCHUR][0]].copy()
    q[3] = 2e6
    with pytest.raises(ArgumentError):
        solver(q, V[ways[BY_SCHUR][0]], X[ways[BY_SCHUR][0]])


def test_a_bound_that_fails_on_accuracy_alone_certifies_the_refined_answer(tmp_path):
    """Where a bound is under its limit but u · backward error is not, ``exact`` refines once and asks the bound
    again with the refined answer's backward error; only where that fails does the inverse iteration run. A call
    settled so returns the refined answer — not the unchecked call's, which main's unrefined one equals bit for
    bit — the same answer the estimate's path gives, and its verdicts are the reference path's."""
    from gtdyn.bench.compiled import batch_states, chain_with_urdf
    from gtdyn.compiled.certificate import ITERATION

    robot = chain_with_urdf(14, str(tmp_path))[0]
    solver, unchecked = gtdyn.compile(robot, "inverse"), gtdyn.compile(robot, "inverse", checks=False)
    Q, V, X = batch_states(robot, "inverse", None, 300)
    refined = []
    for q, v, x in zip(Q, V, X):
        tau = solver(q, v, x)
        if solver._ws[solver._bounded] != 0.0 and not np.array_equal(tau, unchecked(q, v, x)):
            refined.append((q, v, x, tau, solver._ws.copy()))
    assert refined  # some calls were settled so: the test is not vacuous
    for q, v, x, tau, ws in refined[:4]:
        solver._native.function(ITERATION)(ws.ctypes.data)  # the estimate's path from there
        out = solver._record["start"]["out"]
        assert ws[solver._status] == 1.0 and np.array_equal(ws[out:out + len(tau)], tau)
        result = gtdyn.inverse_dynamics(robot, q, v, x)
        assert np.allclose(tau, result.tau, rtol=1e-12, atol=1e-12)
        solver(q, v, x)
        assert BOUND_LIMIT >= solver._ws[solver._status + 1] >= solver.condition
        assert solver.condition == pytest.approx(result.condition, rel=1e-6)


def test_a_big_plan_whose_bounds_certify_few_samples_takes_the_estimate_alone(tmp_path, monkeypatch):
    """In a big plan (over ``LATE_ESTIMATE_ABOVE`` operations, forced here on the 14-link chain's RNEA, which the
    test above certifies three ways) the estimate after a failed bound costs ``LATE_ESTIMATE_COST`` times its
    operations: with u certifying one sample in eight, the estimate alone is cheaper, and the bounds' passes are
    left out. The answers and κ are the reference path's as before."""
    from gtdyn.bench.compiled import batch_states, chain_with_urdf
    from gtdyn.compiled import certificate_cost

    robot = chain_with_urdf(14, str(tmp_path))[0]
    monkeypatch.setattr(certificate_cost, "LATE_ESTIMATE_ABOVE", 0)
    solver = gtdyn.compile(robot, "inverse", use_cache=False)
    assert not {"solve_abs", "solve_t_abs", "schur", "exact"} & set(solver.operations)
    Q, V, X = batch_states(robot, "inverse", None, 5)
    for q, v, x in zip(Q, V, X):
        tau = solver(q, v, x)
        result = gtdyn.inverse_dynamics(robot, q, v, x)
        assert np.allclose(tau, result.tau, rtol=1e-12, atol=1e-12)
        assert solver.condition == pytest.approx(result.condition, rel=1e-6)


def _most_carried_across_a_call(fn: trace.Function) -> int:
    """The most values that ``fn`` computes or loads before one of its calls and uses after it: in machine code each
    is spilled to the stack there."""
    last_use = {}
    for i, op in enumerate(fn.ops):
        for operand in op[1:]:
            if trace.is_sym(operand):
                last_use[operand.id] = i
    calls = [i for i, op in enumerate(fn.ops) if op[0] in ("call", "call_unless")]
    return max(sum(1 for defined, last in last_use.items() if defined < call < last) for call in calls)


@pytest.mark.parametrize("kind", ["forward", "inverse"])
def test_main_carries_only_sums_across_its_calls(kind, monkeypatch):
    """main reads each vector (D², b, x, r) one entry at a time into its sums, so that no vector lives across a call
    (the PUMA's 78 unknowns once did: its main spilled them to the stack), with the same answers and verdicts."""
    import gtdyn.compiled.build as build

    programs = []
    generate = build.generate
    monkeypatch.setattr(build, "generate", lambda *args, **kwargs: programs.append(generate(*args, **kwargs))
                        or programs[-1])
    monkeypatch.setattr(trace, "release", lambda *functions: None)  # the traces kept, to be read here
    puma = gtdyn.load_robot("puma560")
    solver = gtdyn.compile(puma, kind, use_cache=False)
    main = programs[-1].functions["main"]
    assert len(programs[-1].plan.rows) > 70
    assert _most_carried_across_a_call(main) <= 6  # u, ‖A‖_F², ‖b‖², ‖x‖², the other checks' verdict
    for q, v, x in random_states(6, 5, seed=4):
        result = (gtdyn.forward_dynamics if kind == "forward" else gtdyn.inverse_dynamics)(puma, q, v, x)
        expected = result.qdd if kind == "forward" else result.tau
        assert np.allclose(solver(q, v, x), expected, rtol=1e-10, atol=1e-10)
        assert solver._ws[solver._status] == 1.0 and solver.backward_error < 1e-14
