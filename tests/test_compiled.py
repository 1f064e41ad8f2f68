"""gtdyn.compile: the compiled solvers against independent references (Pinocchio's rnea, aba and hybrid passes)
and against the reference path (``gtdyn.solve`` in the same ordering), their errors and warnings, batches,
the on-disk cache, the Python rendering of the generated code and its DAG.

Tolerance 1e-9, relative in the max norm to max(|reference|, 1): gtdyn's promise. Each compiled answer is
certified by its own code (κ · backward error ≤ 1e-10, an estimate of the relative forward error), the reference
path is Householder QR of the same equations and Pinocchio a different algorithm on the same model, all in double
precision; they agree to ~1e-13 here. A wrong pivot, a dropped term or a wrong frame shows up at ≥1e-6. Where
both sides run the very same operations (batch vs single call, the Python rendering vs the machine code, a
fallback vs the reference path) the comparison is bitwise, and the docstring says why.

The whole module compiles into one temporary cache directory (``GTDYN_CACHE_DIR``), never the user's.

Compiling is most of this module's time, so the default run compiles a representative set of cases (``IN_SUITE``:
one ordering per problem on the PUMA, UR5, the four-bar and the two-loop six-bar); the other cases (the PUMA's
other orderings, Panda, the five-bar, three six-bar cases, two PUMA DAGs) are marked ``heavy`` and run by
``python benchmarks/verify_heavy_tests.py`` (``pytest -m heavy``).
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest
from compiled_cases import ERD, HYBRID_GIVEN, compile_case, qdd_joints, robot_path, start_warm_up, stop_warm_up
from compiled_cases import robot as cases_robot
from test_determinacy import STATE, load_chain

import gtdyn
from gtdyn.bench.pinocchio import PinocchioModel
from gtdyn.compiled import dataflow, trace
from gtdyn.compiled import kinematics as traced
from gtdyn.compiled.states import sample_states
from gtdyn.orderings import applicable
from gtdyn.spatial import screw_exp

TOL = 1e-9
PUMA_STATES = 4
LOOPS = ("four_bar", "five_bar", "six_bar")

# the solvers the tests compile, by case (robot, problem, ordering), in the order the tests first use them
PUMA_CASES = [("puma560", problem, ordering) for problem in ("inverse", "forward", "hybrid")
              for ordering in applicable(problem)]
ERD_CASES = [(name, problem, ordering) for problem, ordering in (("forward", "aba"), ("inverse", "rnea"))
             for name in sorted(ERD)]
BATCH_CASES = [("puma560", "inverse", "rnea"), ("puma560", "forward", "aba"), ("puma560", "hybrid", "colamd"),
               ("four_bar", "forward", "aba")]
LOOP_CASES = [(name, problem, ordering) for name in LOOPS
              for problem, tree in (("inverse", "rnea"), ("forward", "aba")) for ordering in (tree, "colamd")]
SOURCE_CASES = [("puma560", "forward", "aba"), ("puma560", "hybrid", "colamd"), ("four_bar", "inverse", "rnea")]
DAG_CASES = [("puma560", "forward", ordering) for ordering in ("aba", "crba", "colamd")]
# The default run's cases: on the PUMA one ordering per problem (the tree algorithm for inverse and forward
# dynamics, COLAMD for hybrid); UR5 (Panda is heavy); the four-bar in each problem and ordering of LOOP_CASES,
# and the six-bar (two loops) in one. These are the solvers that the batch, source, error and round-trip tests of
# the default run compile anyway, but for the six-bar's.
IN_SUITE = {("puma560", "inverse", "rnea"), ("puma560", "forward", "aba"), ("puma560", "hybrid", "colamd"),
            ("ur5", "forward", "aba"), ("ur5", "inverse", "rnea"),
            *[case for case in LOOP_CASES if case[0] == "four_bar"], ("six_bar", "forward", "aba")}


def selected(cases) -> list:
    """``cases`` as parameters: those of ``IN_SUITE`` as they are, the others marked heavy."""
    return [case if case in IN_SUITE else pytest.param(case, marks=pytest.mark.heavy) for case in cases]


def case_id(case) -> str:
    return "-".join(case)


def err(got, want) -> float:
    """max|got − want| / max(max|want|, 1): relative for large answers, absolute for answers near 0."""
    got, want = np.asarray(got, float), np.asarray(want, float)
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1.0))


# -- robots and solvers, made once per module -------------------------------------------------------------------

_SOLVERS: dict = {}
_PINOCCHIO: dict = {}


@pytest.fixture(scope="module", autouse=True)
def cache_dir(tmp_path_factory, request):
    """Every compile of this module goes to (and reuses) one temporary cache directory, which a second process
    fills with the selected tests' solvers, last first (``compiled_cases``), while the tests run."""
    path = tmp_path_factory.mktemp("gtdyn_compiled_cache")
    here = request.module.__file__
    cases = []
    for item in request.session.items:
        case = getattr(item, "callspec", None) and item.callspec.params.get("case")
        if str(item.fspath) == here and case and case not in cases:
            cases.append(case)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GTDYN_CACHE_DIR", str(path))
        warm_up = start_warm_up(cases)
        try:
            yield path
        finally:
            stop_warm_up(warm_up)
    _SOLVERS.clear()


def robot(name: str):
    try:
        return cases_robot(name)
    except LookupError as e:
        pytest.skip(str(e))


def pinocchio(name: str) -> PinocchioModel:
    if name not in _PINOCCHIO:
        model = robot(name)  # skips when the robot is not installed
        _PINOCCHIO[name] = PinocchioModel(robot_path(name), model)
    return _PINOCCHIO[name]


def compiled(name: str, problem: str, ordering: str):
    """The solver of robot ``name`` for ``problem`` in ``ordering`` (hybrid: q̈ given at the first joints)."""
    key = (name, problem, ordering)
    if key not in _SOLVERS:
        robot(name)  # skips when the robot is not installed
        _SOLVERS[key] = compile_case(key)
    return _SOLVERS[key]


def random_state(rng, n):
    """q, v, q̈, τ as in tests/test_against_pinocchio.py."""
    return rng.uniform(-np.pi, np.pi, n), rng.uniform(-2, 2, n), rng.uniform(-5, 5, n), rng.uniform(-20, 20, n)


def hybrid_given(robot_, a, tau):
    names = robot_.joint_names
    qdd = {n: a[i] for i, n in enumerate(names[:HYBRID_GIVEN])}
    given_tau = {n: tau[i] for i, n in enumerate(names) if i >= HYBRID_GIVEN}
    x = np.concatenate([a[:HYBRID_GIVEN], tau[HYBRID_GIVEN:]])
    return qdd, given_tau, x


# -- 1. PUMA: every named ordering of every problem, against the reference path and Pinocchio --------------------

@pytest.mark.parametrize("case", selected(PUMA_CASES), ids=case_id)
def test_puma_every_ordering_matches_reference_and_pinocchio(case):
    """At healthy random states the compiled code answers itself (no fallback), agrees with the reference path
    in the same ordering and with Pinocchio to 1e-9, and its condition estimate is the reference path's (the
    same inverse iteration from the same start vector: equal to round-off; 1e-6 leaves room for the three
    iterations' rounding while any other estimate — another matrix, another scaling — differs by far more)."""
    _, problem, ordering = case
    puma = robot("puma560")
    solver, ref = compiled(*case), pinocchio("puma560")
    rng = np.random.default_rng(11)
    for state in range(PUMA_STATES):
        q, v, a, tau = random_state(rng, puma.num_dofs)
        if problem == "inverse":
            got = solver(q, v, a)
            r = gtdyn.solve(puma, "inverse", q, v, qdd=a, ordering=ordering)
            expected, reference = ref.rnea(q, v, a), r.tau
        elif problem == "forward":
            got = solver(q, v, tau)
            r = gtdyn.solve(puma, "forward", q, v, tau=tau, ordering=ordering)
            expected, reference = ref.aba(q, v, tau), r.qdd
        else:
            given_qdd, given_tau, x = hybrid_given(puma, a, tau)
            got = solver(q, v, x)
            assert isinstance(got, tuple) and len(got) == 2
            got = np.concatenate(got)
            r = gtdyn.solve(puma, "hybrid", q, v, qdd=given_qdd, tau=given_tau, ordering=ordering)
            expected, reference = np.concatenate(ref.hybrid(q, v, given_qdd, given_tau)), np.concatenate([r.qdd, r.tau])
        assert solver.fallbacks == 0, (state, solver.condition, solver.backward_error)
        assert err(got, reference) < TOL, state
        assert err(got, expected) < TOL, state
        assert abs(solver.condition - r.condition) <= 1e-6 * r.condition, (solver.condition, r.condition)
        assert solver.backward_error <= 1e-10 / solver.condition  # what the certificate promised


# -- 2. UR5 and Panda ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", selected(ERD_CASES), ids=case_id)
def test_example_robots_match_pinocchio(case):
    """UR5 and Panda (example-robot-data; skipped without it): aba and rnea against Pinocchio."""
    name, problem, _ = case
    solver, ref = compiled(*case), pinocchio(name)
    rng = np.random.default_rng(12)
    for state in range(3):
        q, v, a, tau = random_state(rng, robot(name).num_dofs)
        if problem == "forward":
            assert err(solver(q, v, tau), ref.aba(q, v, tau)) < TOL, state
        else:
            assert err(solver(q, v, a), ref.rnea(q, v, a)) < TOL, state
    assert solver.fallbacks == 0


# -- 3. batches ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", BATCH_CASES, ids=case_id)
def test_batch_is_a_loop_of_single_calls(case):
    """Bitwise: a batch runs the same machine code (``main``) on the same inputs, one workspace per state, so
    any difference would mean the code reads something it did not write for this state. 10 states (the batch's
    own loop) on one thread and split unevenly between 2; 7 and 1 (a small batch: calls, ``small_batches``),
    whose last state's verdicts the solver then holds."""
    name, problem, _ = case
    solver = compiled(*case)
    s = sample_states(robot(name), problem, qdd_joints(name, problem) or (), count=10, seed=13)
    Q, V, X = (s[k].T.copy() for k in ("q", "v", "x"))
    singles = [solver(Q[k], V[k], X[k]) for k in range(len(Q))]
    kappas = []
    for k in (6, 0):
        solver(Q[k], V[k], X[k])
        kappas.append(solver.condition)
    assert kappas[0] != kappas[1]  # the two states tell apart
    solver.batch(Q[:7], V[:7], X[:7])
    assert solver.condition == kappas[0]  # a small batch runs as calls: its last state's verdicts
    solver(Q[0], V[0], X[0])
    solver.batch(Q, V, X)
    assert solver.condition == kappas[1]  # the batch's own loop leaves the last single call's
    for count, threads in ((10, 1), (10, 2), (7, 1), (1, 2)):
        out = solver.batch(Q[:count], V[:count], X[:count], threads=threads)
        if problem == "hybrid":
            assert isinstance(out, tuple) and len(out) == 2
            for part in (0, 1):
                assert out[part].shape == (count, robot(name).num_dofs)
                assert np.array_equal(out[part], np.array([single[part] for single in singles[:count]])), threads
        else:
            assert out.shape == (count, robot(name).num_dofs)
            assert np.array_equal(out, np.array(singles[:count])), threads
    assert solver.fallbacks == 0
    # the inputs as the boundary takes them: Fortran order, a list, no state at all; one state in one thread
    # runs without a closure or numpy's ctypes views (``parallel.run_states``), the same code
    def parts(answer):
        return answer if problem == "hybrid" else (answer,)

    X32 = X.astype(np.float32)
    odd, want = solver.batch(np.asfortranarray(Q), V.tolist(), X32), solver.batch(Q, V, X32.astype(float))
    assert all(np.array_equal(a, b) for a, b in zip(parts(odd), parts(want), strict=True))
    assert all(part.shape[0] == 0 for part in parts(solver.batch(Q[:0], V[:0], X[:0])))


# -- 4. hybrid round trip ------------------------------------------------------------------------------------------

def test_hybrid_round_trip_through_inverse_and_forward():
    """Hybrid (q̈ at the first three joints, τ at the others) → full q̈ and τ; inverse dynamics of that q̈
    gives that τ back, forward dynamics of that τ that q̈; the given halves pass through unchanged."""
    puma = robot("puma560")
    hybrid, inverse, forward = (compiled("puma560", p, o) for p, o in (("hybrid", "aba"), ("inverse", "rnea"),
                                                                       ("forward", "aba")))
    rng = np.random.default_rng(14)
    for state in range(3):
        q, v, a, tau = random_state(rng, puma.num_dofs)
        _, _, x = hybrid_given(puma, a, tau)
        qdd, tau_out = hybrid(q, v, x)
        assert (np.array_equal(qdd[:HYBRID_GIVEN], a[:HYBRID_GIVEN])
                and np.array_equal(tau_out[HYBRID_GIVEN:], tau[HYBRID_GIVEN:]))
        assert err(inverse(q, v, qdd), tau_out) < TOL, state
        assert err(forward(q, v, tau_out), qdd) < TOL, state
    assert hybrid.fallbacks == inverse.fallbacks == forward.fallbacks == 0


# -- 5. closed loops -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", selected(LOOP_CASES), ids=case_id)
def test_closed_loops_match_reference(case):
    """At closed states (``sample_states`` with a seed the compiler did not look at), certified, and equal to
    the reference path in the same ordering; passive joints get τ = 0 exactly."""
    name, problem, ordering = case
    mechanism = robot(name)
    solver = compiled(*case)
    s = sample_states(mechanism, problem, count=4, seed=21)
    passive = [j.index - 1 for j in mechanism.joints if not j.actuated]
    for k in range(4):
        q, v, x = (s[key][:, k] for key in ("q", "v", "x"))
        got = solver(q, v, x)
        if problem == "inverse":
            want = gtdyn.solve(mechanism, "inverse", q, v, qdd=x, ordering=ordering).tau
            assert np.all(got[passive] == 0.0)
        else:
            want = gtdyn.solve(mechanism, "forward", q, v, tau=x, ordering=ordering).qdd
        assert err(got, want) < TOL, k
    assert solver.fallbacks == 0


# -- 6. errors and warnings, as the reference path ------------------------------------------------------------------

@pytest.mark.parametrize("ordering", ["colamd", "aba"])
def test_singular_robot_raises_like_the_reference(tmp_path, ordering):
    """The massless 3R chain of tests/test_determinacy.py: forward dynamics is singular. It compiles (the
    missing pivots are the call's business) and each call raises the reference path's error, naming the same
    free variables."""
    chain = load_chain(tmp_path, None)
    q, v, tau = STATE
    with pytest.raises(gtdyn.IndeterminateSystemError) as reference:
        gtdyn.forward_dynamics(chain, q, v, tau, ordering=ordering)
    solver = gtdyn.compile(chain, "forward", ordering=ordering)
    with pytest.raises(gtdyn.IndeterminateSystemError) as info:
        solver(q, v, tau)
    assert info.value.free_variables == reference.value.free_variables
    assert solver.fallbacks == 1
    with pytest.raises(gtdyn.IndeterminateSystemError):
        solver.batch(np.array([q]), np.array([v]), np.array([tau]))


def test_inverse_dynamics_of_the_massless_chain_is_determined(tmp_path):
    """…while inverse dynamics of the same chain is determined (the massless links need no torque)."""
    chain = load_chain(tmp_path, None)
    q, v, a = STATE
    solver = gtdyn.compile(chain, "inverse", ordering="rnea")
    assert err(solver(q, v, a), gtdyn.inverse_dynamics(chain, q, v, a, ordering="rnea").tau) < TOL


def test_ill_conditioned_robot_warns_like_the_reference(tmp_path):
    """Tip links 1e-10 of the first link's mass (κ ~1e11): both warn; the compiled solver's answer *is* the
    reference path's (its fallback runs the reference path in the same ordering: bitwise equal)."""
    chain = load_chain(tmp_path, 1e-10)
    q, v, tau = STATE
    with pytest.warns(gtdyn.IllConditionedWarning) as reference:
        want = gtdyn.forward_dynamics(chain, q, v, tau, ordering="colamd").qdd
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gtdyn.IllConditionedWarning)  # compile may try sample states
        solver = gtdyn.compile(chain, "forward", ordering="colamd")
    with pytest.warns(gtdyn.IllConditionedWarning) as caught:
        got = solver(q, v, tau)
    assert solver.fallbacks == 1 and solver.condition > 1e7
    assert np.array_equal(got, want)
    ill = [str(w.message) for w in caught if issubclass(w.category, gtdyn.IllConditionedWarning)]
    assert ill == [str(w.message) for w in reference if issubclass(w.category, gtdyn.IllConditionedWarning)]


@pytest.mark.parametrize("where", ["q", "v", "x"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_input_raises_like_the_reference(where, bad):
    puma = robot("puma560")
    solver = compiled("puma560", "inverse", "rnea")
    q, v, a, _ = random_state(np.random.default_rng(15), puma.num_dofs)
    args = {"q": q, "v": v, "x": a}
    args[where] = args[where].copy()
    args[where][2] = bad
    with pytest.raises(gtdyn.ArgumentError) as reference:
        gtdyn.inverse_dynamics(puma, args["q"], args["v"], args["x"], ordering="rnea")
    with pytest.raises(Exception) as info:
        solver(args["q"], args["v"], args["x"])
    assert type(info.value) is type(reference.value)
    assert str(info.value) == str(reference.value)


@pytest.mark.parametrize("problem, ordering", [("inverse", "rnea"), ("forward", "aba"), ("forward", "colamd")])
@pytest.mark.parametrize("violation", ["q", "v"])
def test_open_loop_raises_loop_closure_error(problem, ordering, violation):
    """four_bar with its loop joint j4 turned 0.1 rad off the assembly (or j1's rate off the closed velocity):
    the loop-closure gaps fail the certificate and the reference path raises, with the same message."""
    mechanism = robot("four_bar")
    solver = compiled("four_bar", problem, ordering)
    s = sample_states(mechanism, problem, count=1, seed=22)
    q, v, x = (s[key][:, 0].copy() for key in ("q", "v", "x"))
    if violation == "q":
        q[mechanism.joint_names.index("j4")] += 0.1
    else:
        v[mechanism.joint_names.index("j1")] += 0.1
    given = {"qdd": x} if problem == "inverse" else {"tau": x}
    with pytest.raises(gtdyn.LoopClosureError) as reference:
        gtdyn.solve(mechanism, problem, q, v, **given, ordering=ordering)
    with pytest.raises(gtdyn.LoopClosureError) as info:
        solver(q, v, x)
    assert str(info.value) == str(reference.value)
    assert solver.fallbacks >= 1


def test_wrong_shapes_raise_argument_error():
    solver = compiled("puma560", "inverse", "rnea")
    q = v = a = np.zeros(6)
    for args in ((q[:5], v, a), (q, v, a[None]), (q, 0.0, a), (list(q) + [0.0], v, a), (q, v, np.zeros((6, 1)))):
        with pytest.raises(gtdyn.ArgumentError):
            solver(*args)
    Z = np.zeros((3, 6))
    for args in ((Z, Z, np.zeros((3, 5))), (q, v, a), (Z, Z[:2], Z), (Z[None], Z[None], Z[None])):
        with pytest.raises(gtdyn.ArgumentError):
            solver.batch(*args)


def test_complex_and_non_numeric_input_raise_argument_error_naming_it():
    """numpy casts complex numbers to float with only a ComplexWarning: a single call and a batch refuse them,
    as the reference path does; ragged or non-numeric batches and bad thread counts are named too."""
    puma, solver = robot("puma560"), compiled("puma560", "forward", "aba")
    q, v, tau = np.full(6, 0.1), np.zeros(6), np.ones(6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning either
        for args, name in (((q + 1j, v, tau), "q"), (([np.complex128(0.1 + 1j)] + [0.1] * 5, v, tau), "q"),
                           ((q, v, tau.astype(complex)), "x")):
            with pytest.raises(gtdyn.ArgumentError, match=f"^{name}: expected real numbers, got complex values"):
                solver(*args)
        with pytest.raises(gtdyn.ArgumentError, match="^q: expected real numbers"):
            gtdyn.forward_dynamics(puma, q + 1j, v, tau)
        Q, V, X = np.tile(q, (2, 1)), np.tile(v, (2, 1)), np.tile(tau, (2, 1))
        for args, match in (((Q + 1j, V, X), "^Q: expected real numbers"),
                            ((Q, V * 1j, X), "^V: expected real numbers"),
                            (([[0.0] * 6, [0.0] * 5], V, X), r"^Q: expected an array of shape \(N, 6\)"),
                            ((Q, V, [["a"] * 6, ["b"] * 6]), r"^X: expected an array of shape \(N, 6\)")):
            with pytest.raises(gtdyn.ArgumentError, match=match):
                solver.batch(*args)
        for threads in (None, "x", 0, -1, 2.0, True):
            with pytest.raises(gtdyn.ArgumentError, match="^threads: expected a whole number"):
                solver.batch(Q, V, X, threads=threads)
        assert np.array_equal(solver.batch(Q, V, X, threads=np.int64(2))[1], solver(q, v, tau))


def test_torque_at_a_passive_loop_joint_raises_argument_error():
    """four_bar: only j1 is actuated; τ ≠ 0 at the passive j2 is an error for the reference path, a single
    compiled call and a batch alike."""
    mechanism = robot("four_bar")
    solver = compiled("four_bar", "forward", "aba")
    s = sample_states(mechanism, "forward", count=1, seed=23)
    q, v = s["q"][:, 0], s["v"][:, 0]
    tau = np.array([1.0, 2.0, 0.0, 0.0])
    with pytest.raises(gtdyn.ArgumentError):
        gtdyn.forward_dynamics(mechanism, q, v, tau, ordering="aba")
    with pytest.raises(gtdyn.ArgumentError, match=r"x: joints j2 are passive"):  # names the joint given a torque
        solver(q, v, tau)
    with pytest.raises(gtdyn.ArgumentError, match=r"x: joints j2 are passive"):
        solver.batch(q[None], v[None], tau[None])


# -- 7. the on-disk cache ----------------------------------------------------------------------------------------

CHILD = """
import json, os, gtdyn
s = gtdyn.compile(gtdyn.load_robot("rrr"), "inverse", ordering="md")
print(json.dumps({"from_cache": s.from_cache, "cache_key": s.cache_key, "dir": os.environ["GTDYN_CACHE_DIR"]}))
"""


def test_another_process_loads_the_cached_solver(cache_dir):
    """A compile in this process, then one in a fresh process with the same cache directory: loaded, not
    compiled. The key hashes gtdyn's source, read once per process: if it was edited since this process read it
    (other work in progress), the child's key differs and the child compiles afresh — then the next child must
    load that one."""
    rrr = robot("rrr")
    first = gtdyn.compile(rrr, "inverse", ordering="md")
    again = gtdyn.compile(rrr, "inverse", ordering="md")
    assert again.from_cache and again.cache_key == first.cache_key
    previous = first.cache_key
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "GTDYN_CACHE_DIR": str(cache_dir)})
        assert done.returncode == 0, done.stderr
        child = json.loads(done.stdout.strip().splitlines()[-1])
        assert child["dir"] == str(cache_dir)
        if child["cache_key"] == previous:
            assert child["from_cache"] is True
            break
        previous = child["cache_key"]  # gtdyn's source changed since `previous` was computed
    else:
        pytest.fail("gtdyn's source changed before each of three child processes")


def test_changed_mass_is_a_different_solver(tmp_path):
    """rrr.urdf with link l2's mass 1.0 → 1.5: a new cache key, compiled afresh, and its answers are the changed
    robot's (the reference path on the changed file), not the original's."""
    original = robot("rrr")
    text = open(gtdyn.bundled_path("rrr")).read()
    changed_text, count = re.subn(r'(<link name="l2">\s*<inertial>\s*<origin[^>]*/>\s*)<mass value="1\.0"/>',
                                  r'\1<mass value="1.5"/>', text)
    assert count == 1
    path = tmp_path / "rrr.urdf"
    path.write_text(changed_text)
    changed = gtdyn.load_robot(str(path))
    before = gtdyn.compile(original, "inverse", ordering="colamd")
    after = gtdyn.compile(changed, "inverse", ordering="colamd")
    assert after.cache_key != before.cache_key and not after.from_cache
    q, v, a = np.array([0.3, -0.5, 0.9]), np.array([0.2, 0.7, -1.1]), np.array([1.0, -2.0, 0.5])
    want = gtdyn.inverse_dynamics(changed, q, v, a, ordering="colamd").tau
    assert err(after(q, v, a), want) < TOL
    assert err(before(q, v, a), want) > 1e-3  # the mass matters


def test_copied_file_shares_the_cache(tmp_path):
    """The key is the robot's content, not its path: rrr.urdf copied elsewhere loads the same solver."""
    copy = tmp_path / "rrr.urdf"
    shutil.copy(gtdyn.bundled_path("rrr"), copy)
    first = gtdyn.compile(robot("rrr"), "inverse", ordering="colamd")
    second = gtdyn.compile(gtdyn.load_robot(str(copy)), "inverse", ordering="colamd")
    assert second.cache_key == first.cache_key and second.from_cache


# -- 8. the Python rendering runs, and computes what the machine code computes ---------------------------------------

@pytest.mark.parametrize("case", SOURCE_CASES, ids=case_id)
def test_source_runs_like_the_machine_code(case):
    """Bitwise: the machine code is the rendered operations one for one, IEEE doubles without fast-math (no
    reassociation, no fused multiply-add), sin/cos/sqrt from the same C library, so outputs, status, κ and
    backward error are the same bits. The record keeps no source: it is traced again when asked for (from the cache
    here too), so this also shows the second trace is the compiled program."""
    name, problem, _ = case
    solver = compiled(*case)
    s = sample_states(robot(name), problem, qdd_joints(name, problem) or (), count=2, seed=24)
    namespace: dict = {}
    exec(solver.source, namespace)
    record, n = solver._record, robot(name).num_dofs
    status = record["status"]
    assert record["start"]["inputs"] == 0 and "source" not in record  # traced again when asked for: the same code
    for k in range(2):
        q, v, x = (s[key][:, k] for key in ("q", "v", "x"))
        answer = solver(q, v, x)
        ws = np.zeros(record["size"])
        ws[:3 * n] = solver._ws[:3 * n]
        assert np.array_equal(ws[:3 * n], np.concatenate([q, v, x]))
        namespace["main"](ws)
        region = slice(record["start"]["out"], status + 3)
        assert np.array_equal(ws[region], solver._ws[region]), k
        assert ws[status] == 1.0
        flat = np.concatenate(answer) if isinstance(answer, tuple) else answer
        assert np.array_equal(ws[record["start"]["out"]:status], flat)


# -- 9. the DAG ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", selected(DAG_CASES), ids=case_id)
def test_dag_is_the_reference_paths(case):
    """PUMA forward dynamics: the solver's ordering, and so its DAG, is the reference path's for the same
    strategy; what the code computes from what is a subgraph of it with the same nodes."""
    ordering = case[2]
    puma = robot("puma560")
    solver = compiled(*case)
    q, v, _, tau = random_state(np.random.default_rng(25), puma.num_dofs)
    r = gtdyn.forward_dynamics(puma, q, v, tau, ordering=ordering)
    reference_order = [r.elimination_ordering.at(i) for i in range(r.elimination_ordering.size())]
    assert solver.order == reference_order
    dag, want = solver.dag(), r.dag()
    assert set(dag.nodes) == set(want.nodes) and set(dag.edges) == set(want.edges)
    computed = solver.computed_dag()
    assert set(computed.nodes) == set(dag.nodes)
    assert set(computed.edges) <= set(dag.edges)
    step = {key: i for i, key in enumerate(solver.order)}
    # back-substitution computes x from values eliminated after it
    assert all(step[p] > step[x] for p, x in computed.edges)


# -- 10. RNEA is Algorithm 1 ---------------------------------------------------------------------------------------

def test_rnea_back_substitution_is_algorithm_1():
    """rrr, inverse, rnea: ``solve`` computes V̇ root → leaf, then F leaf → root, then τ (the comments before
    each unknown's lines: ``# V̇1 ← eq. 5, joint j1``)."""
    rrr = robot("rrr")
    solver = compiled("rrr", "inverse", "rnea")
    source = solver.source
    section = source[source.index("def solve(ws):"):]
    section = section[:section.index("\ndef ", 1)]
    order = re.findall(r"^\s*# (\S+) ← ", section, flags=re.M)
    moving = [rrr.link(joint.child).index for joint in rrr.tree_joints]  # root → leaf: 1, 2, 3
    assert moving == [1, 2, 3]
    assert order[:3] == [f"V̇{i}" for i in moving]
    assert order[3:6] == [f"F{i}" for i in reversed(moving)]
    assert sorted(order[6:]) == [f"τ{j}" for j in (1, 2, 3)] and len(order) == 9
    # and each of those unknowns is computed (assigned) in the solve section
    for label in order:
        assert re.search(rf"^\s*{re.escape(label)}(_\d)? = ", section, flags=re.M), label


# -- 11. the traced screw exponential -------------------------------------------------------------------------------

def test_traced_screw_exponential_matches_gtsam():
    """exp([S]θ) from ``gtdyn.compiled.kinematics`` with a float θ (every value folds to a float) against
    gtsam's Pose3.Expmap: revolute axes through random points (v = r × ω ≠ 0), prismatic axes and general
    screws (pitch ≠ 0). Both evaluate closed forms in double precision: ≤1e-12 for entries of size ≤ ~10."""
    rng = np.random.default_rng(26)
    cases = []
    for _ in range(12):
        w = rng.normal(size=3)
        w /= np.linalg.norm(w)
        r = rng.uniform(-2, 2, 3)
        cases.append(np.concatenate([w, np.cross(r, w)]))  # revolute about the axis through r
        d = rng.normal(size=3)
        cases.append(np.concatenate([np.zeros(3), d / np.linalg.norm(d)]))  # prismatic
        cases.append(np.concatenate([w, rng.uniform(-1, 1, 3)]))  # a general screw
    for S in cases:
        theta = float(rng.uniform(-np.pi, np.pi))
        pose = traced.screw_exp(S, theta)
        R, p = pose.rotation().matrix(), pose.translation()
        assert all(isinstance(e, float) for e in list(np.ravel(R)) + list(np.ravel(p))), "constants fold to floats"
        want = screw_exp(S, theta)
        assert np.allclose(np.asarray(R, float), want.rotation().matrix(), rtol=0, atol=1e-12), S
        assert np.allclose(np.asarray(p, float), want.translation(), rtol=0, atol=1e-12), S
    # θ = 0 is the identity, exactly
    pose = traced.screw_exp(cases[0], 0.0)
    assert (np.array_equal(np.asarray(pose.R, float), np.eye(3))
            and np.array_equal(np.asarray(pose.p, float), np.zeros(3)))



def test_a_revolute_joints_traced_transform_reads_its_angle_through_sine_and_cosine_alone():
    """A revolute axis has no pitch (ωᵀv = 0): its translation ω (ωᵀv) θ + v⊥ sin θ + (ω × v)(1 − cos θ) has no term
    in θ itself (the general formula's θ terms cancel, and computed they grew with θ and left A's entries without
    a bound); a screw with a pitch keeps its θ term. Against gtsam at large angles too."""
    rng = np.random.default_rng(27)
    w = rng.normal(size=3)
    w /= np.linalg.norm(w)
    revolute = np.concatenate([w, np.cross(rng.uniform(-2, 2, 3), w)])
    for S, linear in ((revolute, False), (np.concatenate([w, w * 0.3 + np.cross([1.0, 0, 0], w)]), True)):
        fn = trace.Function("t")
        theta = fn.load(0, val=np.array([0.4]))
        pose = traced.screw_exp(S, theta)
        for value in list(np.ravel(pose.R)) + list(np.ravel(pose.p)):
            fn.store(1, value)
        users = {op[0] for op, keep in zip(fn.ops, fn.live()) if keep and theta in op[1:]}
        assert users == ({"sin", "cos", "mul"} if linear else {"sin", "cos"}), users
    for angle in (1e3 + 0.3, -2.5e4):
        pose = traced.screw_exp(revolute, angle)
        want = screw_exp(revolute, angle)
        assert np.allclose(np.asarray(pose.translation(), float), want.translation(), rtol=0, atol=1e-9)

# -- 12. bad arguments to compile -----------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, match", [
    ({"problem": "sideways"}, "problem"),
    ({"problem": "forward", "qdd_joints": ["j1"]}, "qdd_joints"),
    ({"problem": "inverse", "qdd_joints": ["j1"]}, "qdd_joints"),
    ({"problem": "hybrid", "qdd_joints": ["j9"]}, "qdd_joints.*j9"),
    ({"problem": "hybrid"}, "qdd_joints"),
    ({"problem": "hybrid", "qdd_joints": 5}, "^qdd_joints: expected a list of joint names, got int"),
    ({"problem": "inverse", "ordering": "fastest"}, "ordering"),
    ({"problem": "forward", "ordering": "rnea"}, "ordering"),
], ids=["unknown problem", "qdd_joints on forward", "qdd_joints on inverse", "unknown joint", "hybrid without joints",
        "qdd_joints not a list", "unknown ordering", "ordering for another problem"])
def test_bad_compile_arguments_raise_argument_error(kwargs, match):
    kwargs = dict(kwargs)
    problem = kwargs.pop("problem")
    with pytest.raises(gtdyn.ArgumentError, match=match):
        gtdyn.compile(robot("rrr"), problem, **kwargs)


def test_compile_wants_a_robot():
    with pytest.raises(gtdyn.ArgumentError, match="robot"):
        gtdyn.compile(gtdyn.bundled_path("rrr"), "inverse")


# -- checks=False and solver.code ---------------------------------------------------------------------------------

def test_unchecked_solver_answers_like_the_checked_one_and_still_refuses_nan():
    """checks=False runs factor and solve only (the same elimination, no refinement): the answer agrees with
    Pinocchio to the same 1e-9 on this well-conditioned arm; a NaN still goes to the reference path's error."""
    puma = robot("puma560")
    fast = gtdyn.compile(puma, "forward", ordering="aba", checks=False)
    rng = np.random.default_rng(31)
    for _ in range(4):
        q, v, _, tau = random_state(rng, 6)
        assert err(fast(q, v, tau), pinocchio("puma560").aba(q, v, tau)) < 1e-9
    assert fast.fallbacks == 0 and fast.operations["fast"] < fast.operations["main"]
    with pytest.raises(gtdyn.ArgumentError):
        fast(np.full(6, np.nan), np.zeros(6), np.zeros(6))


def test_code_returns_one_generated_function():
    solver = compiled("rrr", "inverse", "rnea")
    solve = solver.code("solve")
    assert solve.startswith("def solve(ws):") and "def solve_t" not in solve and solve in solver.source
    assert solver.code("main").startswith("def main(ws):")
    with pytest.raises(gtdyn.ArgumentError):
        solver.code("nonsense")


def test_single_calls_from_several_threads_do_not_share_a_workspace():
    """Four threads (the compiling one among them) call one solver at once; every answer equals the same
    call made alone. A shared workspace would mix states and fail this at 1e-9 almost surely."""
    import threading

    solver = compiled("puma560", "forward", "aba")
    rng = np.random.default_rng(41)
    states = [random_state(rng, 6) for _ in range(200)]
    alone = [solver(q, v, tau) for q, v, _, tau in states]
    wrong = []

    def work(k):
        for i in range(k, len(states), 4):
            q, v, _, tau = states[i]
            for _ in range(5):
                if err(solver(q, v, tau), alone[i]) > 1e-15:
                    wrong.append(i)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(1, 4)]
    for t in threads:
        t.start()
    work(0)
    for t in threads:
        t.join()
    assert wrong == []


def test_code_cut_into_blocks_computes_the_same_bits(monkeypatch):
    """Big functions are cut into basic blocks before code generation (compile time). The cuts only move
    block boundaries: cut every 40 instructions, the PUMA's forward dynamics gives the same bits as whole."""
    from gtdyn.compiled import objects

    puma = robot("puma560")
    whole = gtdyn.compile(puma, "forward", ordering="aba")  # the module's cache: compiled as always
    cut_texts = []
    split_blocks = objects.split_blocks
    monkeypatch.setattr(objects, "SPLIT_ABOVE", 0)
    monkeypatch.setattr(objects, "BLOCK", 40)
    monkeypatch.setattr(objects, "split_blocks",
                        lambda ir, every: cut_texts.append(split_blocks(ir, every)) or cut_texts[-1])
    cut = gtdyn.compile(puma, "forward", ordering="aba", use_cache=False)
    assert cut_texts and cut_texts[0].count("never") > 100  # the cuts were made
    s = sample_states(puma, "forward", (), count=5, seed=7)
    for k in range(5):
        q, v, x = (s[key][:, k] for key in ("q", "v", "x"))
        assert np.array_equal(cut(q, v, x), whole(q, v, x))
        assert cut.condition == whole.condition and cut.backward_error == whole.backward_error


def test_a_program_compiled_in_parts_computes_the_same_bits(monkeypatch, tmp_path):
    """A big program is compiled in parts, side by side (this process and a worker process), and linked when
    loaded: forced here on the PUMA (every program counts as big), with derivatives, the parts give the same bits
    as the program compiled whole, through the cache and a pickle too. A worker that fails leaves its part to this
    process."""
    import pickle

    from gtdyn.compiled import objects

    puma = robot("puma560")
    whole = gtdyn.compile(puma, "forward", ordering="aba", derivatives=True, use_cache=False)
    monkeypatch.setattr(objects, "PARALLEL_ABOVE", 0)
    monkeypatch.setattr(objects, "workers", lambda: 2)
    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path))
    here = []  # the parts compiled in this process
    compile_object = objects.compile_object
    monkeypatch.setattr(objects, "compile_object", lambda ir, *mode: here.append(ir) or compile_object(ir, *mode))
    parts = gtdyn.compile(puma, "forward", ordering="aba", derivatives=True)
    # two parts and the rare one (exact, quickly compiled); workers compiled all but the first
    assert len(parts._record["object"]) == 3 and len(here) == 1
    again = gtdyn.compile(puma, "forward", ordering="aba", derivatives=True)
    assert again.from_cache
    travelled = pickle.loads(pickle.dumps(parts))
    monkeypatch.setattr(objects, "_BOOT", "raise SystemExit(3)")  # every worker fails
    alone = gtdyn.compile(puma, "forward", ordering="aba", derivatives=True, use_cache=False)
    assert len(here) == 4  # all three parts here
    s = sample_states(puma, "forward", (), count=5, seed=7)
    for k in range(5):
        q, v, x = (s[key][:, k] for key in ("q", "v", "x"))
        expected = whole.derivatives(q, v, x)
        for solver in (parts, again, travelled, alone):
            assert all(np.array_equal(a, b) for a, b in zip(solver.derivatives(q, v, x), expected))
    assert np.array_equal(parts.batch(s["q"].T, s["v"].T, s["x"].T), whole.batch(s["q"].T, s["v"].T, s["x"].T))
    for solver in (whole, parts, alone):  # κ runs exact, which the parts compiled quickly: the same bits
        solver(q, v, x)
    assert whole.condition == parts.condition == alone.condition


def test_a_giant_program_skips_the_optimization_pipeline_with_the_same_bits(monkeypatch):
    """A program of over ``objects.PIPELINE_BELOW`` operations goes to LLVM's code generator without the -O1
    pipeline (forced here on the PUMA): the same IEEE operations, so the same answers and verdicts."""
    from gtdyn.compiled import native, objects

    puma = robot("puma560")
    whole = gtdyn.compile(puma, "forward", ordering="aba")  # the module's cache: compiled as always
    monkeypatch.setattr(objects, "PIPELINE_BELOW", 0)
    modes = []
    compile_object = objects.compile_object
    monkeypatch.setattr(objects, "compile_object", lambda ir, quick=False, operations=0:
                        modes.append(operations >= objects.PIPELINE_BELOW) or compile_object(ir, quick, operations))
    monkeypatch.setattr(native, "compile_object", objects.compile_object)
    lean = gtdyn.compile(puma, "forward", ordering="aba", use_cache=False)
    assert modes == [True]
    s = sample_states(puma, "forward", (), count=5, seed=7)
    for k in range(5):
        q, v, x = (s[key][:, k] for key in ("q", "v", "x"))
        assert np.array_equal(lean(q, v, x), whole(q, v, x))
        assert lean.condition == whole.condition and lean.backward_error == whole.backward_error


def test_a_big_program_takes_the_fast_code_generator_with_the_same_bits(monkeypatch):
    """A program of over ``objects.FAST_CODEGEN_ABOVE`` operations is compiled with LLVM's fast instruction
    selector and no machine scheduler (forced here on the PUMA's inverse dynamics): other machine code, the same
    IEEE operations, so the same answers and verdicts. LLVM holds those switches for the whole process, so each
    compile sets its own: the same IR compiled before and after gives the same object code, quick compiles
    included."""
    from gtdyn.compiled import native, objects

    puma = robot("puma560")
    irs = []
    compile_object = objects.compile_object
    monkeypatch.setattr(native, "compile_object", lambda ir, quick=False, operations=0:
                        irs.append(ir) or compile_object(ir, quick, operations))
    whole = gtdyn.compile(puma, "inverse", use_cache=False)
    plain, quick = compile_object(irs[0]), compile_object(irs[0], quick=True)
    monkeypatch.setattr(objects, "FAST_CODEGEN_ABOVE", 0)
    fast = gtdyn.compile(puma, "inverse", use_cache=False)
    assert compile_object(irs[0], operations=1) != plain
    monkeypatch.setattr(objects, "FAST_CODEGEN_ABOVE", 30_000)
    assert compile_object(irs[0], quick=True) == quick  # after a fast compile, as before it after a plain one
    assert compile_object(irs[0]) == plain
    llvm = objects.llvm()

    def elsewhere() -> bytes:  # another user of the process's LLVM (numba), which sets no options
        return objects.target_machine().emit_object(llvm.parse_assembly(irs[0], context=llvm.create_context()))

    before = elsewhere()
    compile_object(irs[0], operations=objects.FAST_CODEGEN_ABOVE + 1)  # fast, then LLVM as it found it
    assert elsewhere() == before
    s = sample_states(puma, "inverse", (), count=5, seed=7)
    for k in range(5):
        q, v, x = (s[key][:, k] for key in ("q", "v", "x"))
        assert np.array_equal(fast(q, v, x), whole(q, v, x))
        assert fast.condition == whole.condition and fast.backward_error == whole.backward_error


def test_a_programs_parts_are_balanced_by_stores_too():
    """``native.assemble`` deals functions to parts by their compile weight, which counts stores: a long chain's
    last piece of ``factor`` had few operations and tens of thousands of loads and stores, and its IR compiled for
    longer than a piece of 30,000 operations. Weighed by operations alone it went with the heaviest function, and
    that part compiled 16 s against the other's 10 (nested dissection, 96 joints: design_measurements.md)."""
    from gtdyn.compiled import native

    def function(name: str, operations: int, copies: int) -> trace.Function:
        fn = trace.Function(name)
        total = fn.load(0)
        for i in range(operations):
            total = total * 1.0001 + float(i)
        fn.store(1, total)
        for i in range(copies):  # values passed on through ws: loads and stores, no arithmetic
            fn.store(10 + 2 * i, fn.load(11 + 2 * i))
        return fn

    functions = {"heavy": function("heavy", 3000, 0), "copies": function("copies", 10, 3000),
                 "light": function("light", 1500, 0)}
    assert functions["copies"].count() < functions["light"].count() < functions["heavy"].count()
    bodies = {name: native.function_ir(fn, "p_") for name, fn in functions.items()}
    parts = native.assemble([], bodies, [], functions, (), lambda name: f"declare void @p_{name}(ptr)", parts=2)
    together = next(part for part in parts if "@p_heavy(" in part)
    assert "define void @p_copies(" not in together and "define void @p_light(" in together


def test_a_compile_leaves_no_trace_for_the_cyclic_collector():
    """A traced value and its function refer to each other, so a program's trace (millions of objects for a long
    chain) is freed only by a full collection, which tracing pauses: a process's compiles piled their traces up
    (1.6 GB after four compiles of a 96-joint chain) until a collection walked them all inside a later compile.
    Each compile now drops its trace (the dynamics, the operational-space inertia's, compiled frames'): none is
    left, with the collector off throughout."""
    import gc

    puma = robot("puma560")

    def traced_values() -> int:
        return sum(type(o) is trace.Sym for o in gc.get_objects())

    was = gc.isenabled()
    gc.disable()
    try:
        before = traced_values()
        gtdyn.compile(puma, "forward", use_cache=False, derivatives=True)
        gtdyn.compile_inverse_osim(puma, ["link6"], use_cache=False)
        gtdyn.compile_frames(puma, ["link6"]).bias_acceleration(np.zeros(6), np.ones(6))  # compiled when called
        assert traced_values() == before
    finally:
        if was:
            gc.enable()


def test_every_process_cuts_a_program_into_the_same_parts():
    """Functions of equal compile weight go to parts by name, not in the order of a set of names, which Python's
    string hashing changes from process to process: the same program, the same modules (and object code)."""
    script = """
import hashlib
from gtdyn.compiled import native, trace
functions = {}
for name in ("solve", "solve_t", "solve_abs", "residual", "fast", "main"):
    fn = functions[name] = trace.Function(name)
    fn.store(1, fn.load(0) * 2.0)
bodies = {name: native.function_ir(fn, "p_") for name, fn in functions.items()}
parts = native.assemble([], bodies, [], functions, (), lambda name: "declare void @p_" + name + "(ptr)", parts=2)
print(hashlib.sha256("|".join(parts).encode()).hexdigest())
"""
    printed = set()
    for seed in ("1", "2", "3", "4"):
        run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": seed})
        printed.add(run.stdout)
    assert len(printed) == 1


def test_stores_move_to_their_values_only_where_that_changes_nothing():
    """``dataflow.early_stores``: a store is written right after its value's operation unless a call, or a load or
    store of the same entry, lies between; the machine code then leaves ``ws`` exactly as the traced order does
    (checked against the code with every store where it was traced)."""
    from gtdyn.compiled import native

    fn, callee = trace.Function("f"), trace.Function("g")
    callee.store(7, callee.load(6) + 1.0)
    a, b = fn.load(0), fn.load(1)
    product = a * b
    total = a + b
    fn.store(2, b)              # its entry's slot is free: moves up to the load of b
    negated = -a
    fn.load(3)                  # read below, so the store to 3 stays after it
    fn.store(3, product)        # moves? no: the load of entry 3 lies between
    fn.store(4, total)          # moves to right after the sum
    fn.call(callee)
    fn.store(6, negated)        # a call (which reads entry 6) lies between: stays
    fn.store(5, a * 3.0)        # defined after the call: moves (nothing between)
    moved = dataflow.early_stores(fn)
    assert moved == {b.id: [fn.ops.index(("store", 2, b))], total.id: [fn.ops.index(("store", 4, total))],
                     len(fn.ops) - 2: [len(fn.ops) - 1]}
    functions = {"g": callee, "f": fn}
    rng = np.random.default_rng(3)
    start = rng.normal(size=8)
    results = []
    for early in (True, False):
        dataflow.EARLY_STORES = early
        try:
            loaded = native.Loaded(native.compile_object(native.module_ir(functions, "s_", entries=())), "s_",
                                   entries=(), extra=["f"])
        finally:
            dataflow.EARLY_STORES = True
        ws = start.copy()
        ctypes.CFUNCTYPE(None, ctypes.c_void_p)(loaded.extra["f"])(ws.ctypes.data)
        results.append(ws)
    assert np.array_equal(results[0], results[1])
    expected = start.copy()
    expected[2:8] = start[1], start[0] * start[1], start[0] + start[1], start[0] * 3.0, -start[0], start[6] + 1.0
    assert np.array_equal(results[0], expected)  # g read entry 6 before the store to it



def test_negations_are_carried_to_where_they_cost_nothing():
    """A negation is not computed where it can be folded: into a subtraction, a constant factor, a quotient or an
    absolute value; only values stored negated keep one (here two). Every rewrite is exact in IEEE arithmetic, so
    the machine code gives the bits of the same formulas evaluated as written, with their negations."""
    from gtdyn.compiled import native

    fn = trace.Function("f")
    a, b, c, d, x = (fn.load(i) for i in range(5))
    e = (0.0 - a * b) - c * d  # −(ab + cd): the elimination's row updates of a structural zero
    stored = {5: e, 6: e * 2.0, 7: x - e, 8: (-a) * (-b), 9: (-a) / 4.0, 10: trace.fabs(-c), 11: (-a) + 3.0,
                 12: (-a) / b, 13: a / (-b), 14: 2.0 / (-b), 15: (-a) - (-b)}
    for index, value in stored.items():
        fn.store(index, value)
    kinds = [op[0] for op, keep in zip(fn.ops, fn.live()) if keep and op[0] not in ("load", "store")]
    # ab, cd, ab + cd, e; x + (ab + cd); a·(−0.25); |c|; 3 − a; a/b and its negation (also a/(−b)); (−2)/b;
    # b − a; and e·2, carried as −((ab + cd)·2) and stored as (ab + cd)·(−2)
    assert kinds == ["mul", "mul", "add", "neg", "add", "mul", "abs", "sub", "div", "neg", "div", "sub", "mul"]
    loaded = native.Loaded(native.compile_object(native.module_ir({"f": fn}, "n_", entries=())), "n_", entries=(),
                           extra=["f"])
    rng = np.random.default_rng(8)
    for _ in range(20):
        ws = np.concatenate([rng.normal(size=5), np.zeros(11)])
        ctypes.CFUNCTYPE(None, ctypes.c_void_p)(loaded.extra["f"])(ws.ctypes.data)
        a, b, c, d, x = ws[:5]
        e = (0.0 - a * b) - c * d
        written = [e, e * 2.0, x - e, (-a) * (-b), (-a) / 4.0, abs(-c), (-a) + 3.0, (-a) / b, a / (-b), 2.0 / (-b),
                   (-a) - (-b)]
        assert np.array_equal(ws[5:], written)

def _stale_reads(functions: dict, entry: str, first_output: int) -> list[tuple[str, int]]:
    """The ``ws`` entries beyond the inputs that a call of ``entry`` reads before it writes them (following its
    calls in order, a lane function's loads and stores at their lane blocks): each would be the previous call's."""
    written, stale = set(), []

    def run(name: str) -> None:
        fn = functions[name]
        loads, stores, width = ({}, {}, 1) if isinstance(fn, trace.Function) else (fn.loads, fn.stores, fn.width)
        for op in (fn if isinstance(fn, trace.Function) else fn.fn).ops:
            if op[0] == "load":
                cells = [loads[op[1]] + w for w in range(width)] if op[1] in loads else [op[1]]
                stale.extend((name, c) for c in cells if c >= first_output and c not in written)
            elif op[0] == "store":
                written.update([stores[op[1]] + w for w in range(width)] if op[1] in stores else [op[1]])
            elif op[0] == "call":
                run(op[1])
            elif op[0] == "call_unless":
                run(op[2])  # as if taken: what the branch reads must be written whether or not it runs

    run(entry)
    return stale


@pytest.mark.parametrize("name, kind", [("puma560", "forward"), ("puma560", "inverse"), ("rrr", "hybrid"),
                                        ("four_bar", "forward")])
def test_a_call_reads_nothing_a_previous_call_left(name, kind, monkeypatch):
    """Every value a call reads beyond its inputs it wrote first, in every entry (checked, unchecked, with
    derivatives). The certificate's estimate once read the column norms main stored after calling it: the first
    call of a batch (a fresh workspace) then fell back to the reference path, and later calls judged their
    condition with the previous state's norms."""
    import gtdyn.compiled.build as build

    programs = []
    generate = build.generate
    monkeypatch.setattr(build, "generate", lambda *args, **kwargs: programs.append(generate(*args, **kwargs))
                        or programs[-1])
    monkeypatch.setattr(trace, "release", lambda *functions: None)  # the traces kept, to be read here
    gtdyn.compile(robot(name), kind, use_cache=False, derivatives=True, qdd_joints=["j1"] if kind == "hybrid" else None)
    functions, layout = programs[-1].functions, programs[-1].layout
    for entry in ("main", "fast", "dmain", "dfast"):
        assert _stale_reads(functions, entry, layout.start["out"]) == [], entry


def test_dependence_follows_values_through_the_code():
    """``dataflow.dependence``: which chosen loads each store's value depends on (the derivatives group outputs by
    it); loads not chosen, constants and folded-away zeros contribute nothing."""
    fn = trace.Function("f")
    a, b, c = fn.load(0), fn.load(1), fn.load(2)
    fn.store(10, a * c)
    fn.store(11, -(b + a))
    fn.store(12, c * 2.0)
    fn.store(13, 0.0 * a)
    assert dataflow.dependence(fn, {0: 0, 1: 1}) == {10: 0b01, 11: 0b11, 12: 0, 13: 0}


def test_the_garbage_collector_is_paused_while_code_is_made_and_restored_after():
    """Tracing and compiling pause Python's cyclic collector (``trace.collector_paused``): on during neither a
    trace nor the object code, and as the caller had it after — on, or off if the caller had turned it off, also
    when the compile raised."""
    import gc

    from gtdyn.compiled import native, trace

    seen = []
    real = native.compile_object

    def spying(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    robot = gtdyn.load_robot("rr")
    assert gc.isenabled()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "compile_object", spying)
        gtdyn.compile(robot, "inverse", use_cache=False)
    assert seen == [False] and gc.isenabled()
    with pytest.raises(ZeroDivisionError), trace.collector_paused():
        with trace.collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause still holds
        raise ZeroDivisionError
    assert gc.isenabled()
    gc.disable()
    try:
        with trace.collector_paused():
            pass
        assert not gc.isenabled()  # off before, off after
    finally:
        gc.enable()


def test_the_native_entry_takes_calls_from_its_owner_thread_only():
    """``entry.bind(..., owner=)``: the thread check is the entry's own (Python no longer asks): another thread's
    call returns False and leaves the output as it was, so its caller takes the checked path with a workspace of
    its own; the owner's call runs; no owner, any thread's."""
    import threading

    from gtdyn.compiled import entry

    solver = compiled("puma560", "forward", "aba")
    q, v, tau = np.random.default_rng(3).uniform(-0.5, 0.5, (3, 6))
    expected = solver(q, v, tau)
    arguments = entry.call_plan(6, False, False, [(solver._out, (6,))])
    address = solver._native.address[solver._entry]
    mine = entry.bind(solver._ws, address, solver._status, arguments, owner=threading.get_ident())
    anyone = entry.bind(solver._ws, address, solver._status, arguments)
    seen = {}

    def elsewhere():
        for name, bound in (("mine", mine), ("anyone", anyone)):
            out = np.full(6, 7.0)
            seen[name] = (bool(bound.call(q, v, tau, None, None, None, None, out)), out.copy())

    worker = threading.Thread(target=elsewhere)
    worker.start()
    worker.join()
    assert seen["mine"][0] is False and np.all(seen["mine"][1] == 7.0)
    assert seen["anyone"][0] is True and np.array_equal(seen["anyone"][1], expected)
    out = np.empty(6)
    assert mine.call(q, v, tau, None, None, None, None, out) and np.array_equal(out, expected)
    assert err(solver(q, v, tau), expected) == 0.0


def test_a_value_read_far_from_where_it_was_stored_is_read_back_from_ws(monkeypatch):
    """``native.function_ir``: in a function without calls, a value stored to ws, or loaded from an entry the
    function never writes, and read again more than ``RELOAD_AFTER`` operations later is loaded again from its entry
    there (volatile, so LLVM keeps the load rather than a spill) — a stored one only after the store, and only from
    entries stored once and never loaded — and the answers are bit for bit those of the code without reloads."""
    import gtdyn.compiled.build as build
    from gtdyn.compiled import native

    programs = []
    generate = build.generate
    monkeypatch.setattr(build, "generate", lambda *args, **kwargs: programs.append(generate(*args, **kwargs))
                        or programs[-1])
    monkeypatch.setattr(trace, "release", lambda *functions: None)  # the traces kept, to be read here
    puma = cases_robot("puma560")
    solver = gtdyn.compile(puma, "forward", use_cache=False, lanes=False)
    ir = native.function_ir(programs[-1].functions["factor"], "p_").splitlines()
    stored, reloads = set(), 0
    written = {int(n) for n in re.findall(r"i64 (\d+)\n  store double", "\n".join(ir))}
    for line in ir:
        if match := re.match(r"  %(p\d+) = getelementptr inbounds double, double\* %ws, i64 (\d+)", line):
            address = {match.group(1): int(match.group(2))}
        if match := re.match(r"  %(v\d+_\d+p) = getelementptr inbounds double, double\* %ws, i64 (\d+)", line):
            reload_at = int(match.group(2))
        if re.match(r"  store double %r\d+, double\* %(p\d+)", line):
            stored.add(address[re.search(r"%(p\d+),", line).group(1)])
        if "load volatile" in line:
            reloads += 1
            assert reload_at in stored or reload_at not in written  # written already, or never
    assert reloads > 100
    monkeypatch.setattr(native, "RELOAD_AFTER", 0)
    without = gtdyn.compile(puma, "forward", use_cache=False, lanes=False)
    assert "load volatile" not in native.function_ir(programs[-1].functions["factor"], "p_")
    for q, v, tau in zip(*np.random.default_rng(7).uniform(-2, 2, (3, 20, 6))):
        assert solver(q, v, tau).tobytes() == without(q, v, tau).tobytes()
