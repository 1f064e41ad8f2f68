"""Batches in SIMD lanes (issue 24, item 4; ``gtdyn.compiled.lanes``): the same answers bit for bit as the scalar
code, the same verdicts, any count of states and threads; the lane code travels with the solver."""

import numpy as np
import pytest
from references import closed_state, random_states

import gtdyn
from gtdyn.compiled import lanes, parallel
from gtdyn.errors import ArgumentError

pytestmark = pytest.mark.usefixtures("private_cache")


def one_by_one(solver, Q, V, X, **base):
    answers = [solver(q, v, x, **{k: b[i] for k, b in base.items()}) for i, (q, v, x) in enumerate(zip(Q, V, X))]
    if isinstance(answers[0], tuple):
        return tuple(np.array(part) for part in zip(*answers))
    return np.array(answers)


def assert_same(a, b):
    for x, y in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
        assert np.array_equal(x, y)


@pytest.mark.parametrize("problem,checks", [("inverse", True), ("forward", True), ("forward", False),
                                            ("hybrid", True)])
def test_a_batch_in_lanes_is_bit_for_bit_the_single_calls(puma, problem, checks):
    solver = gtdyn.compile(puma, problem, checks=checks, qdd_joints=["joint2"] if problem == "hybrid" else None,
                           lanes=True)
    assert solver.lanes == lanes.WIDTH
    Q, V, X = random_states(6, 203)  # 50 lane groups and 3 states for the scalar code
    got = solver.batch(Q, V, X)
    assert_same(got, one_by_one(solver, Q, V, X))
    assert_same(solver.batch(Q, V, X, threads=2), got)


def test_a_small_batch_runs_in_lanes_where_its_states_pay_for_them(puma, monkeypatch):
    """With lane code, a batch of a lane group or more runs in lanes once its states' operations pass
    ``small_batches.LANES_PAY_FROM`` (Talos from 4 states; the PUMA's never below 12), else as calls: the same
    bits either way."""
    from gtdyn.compiled import small_batches

    solver = gtdyn.compile(puma, "forward", lanes=True)
    Q, V, X = random_states(6, 8)
    passes = []
    original = solver._batches.run
    monkeypatch.setattr(solver._batches, "run", lambda *a: passes.append(len(a[1])) or original(*a))
    as_calls = solver.batch(Q, V, X)
    assert passes == []  # 8 PUMA states: calls
    monkeypatch.setattr(small_batches, "LANES_PAY_FROM", 8 * small_batches.evaluation_operations(solver))
    assert_same(solver.batch(Q, V, X), as_calls)
    assert passes == [8]  # through the batch's own loop, in lanes
    assert_same(solver.batch(Q[:3], V[:3], X[:3]), one_by_one(solver, Q[:3], V[:3], X[:3]))  # under a group
    assert passes == [8]  # calls
    assert_same(as_calls, one_by_one(solver, Q, V, X))


def test_a_floating_base_and_loops_batch_in_lanes():
    quadruped = gtdyn.load_robot(gtdyn.bundled_path("quadruped"), base="floating")
    solver = gtdyn.compile(quadruped, "forward", lanes=True)
    Q, V, X = random_states(12, 70, seed=1)
    rng = np.random.default_rng(2)
    base = {"base_pose": np.repeat(np.eye(4)[None], 70, axis=0), "base_twist": rng.normal(size=(70, 6))}
    assert_same(solver.batch(Q, V, X, **base), one_by_one(solver, Q, V, X, **base))
    four_bar = gtdyn.load_robot(gtdyn.bundled_path("four_bar"))
    loops = gtdyn.compile(four_bar, "forward", lanes=True)
    Q, V, X = (np.array(rows) for rows in zip(*[closed_state(four_bar, ["j1"], seed) for seed in range(66)]))
    assert_same(loops.batch(Q, V, X), one_by_one(loops, Q, V, X))


def test_a_lane_the_code_cannot_certify_gets_the_scalar_verdict(puma):
    solver = gtdyn.compile(puma, "forward", lanes=True)
    Q, V, X = random_states(6, 100, seed=3)
    Q[37, 2] = 2e6  # beyond MAX_ANGLE: the lane's status is 0, the scalar code's too, the reference path raises
    with pytest.raises(ArgumentError) as in_batch:
        solver.batch(Q, V, X)
    with pytest.raises(ArgumentError) as alone:
        solver(Q[37], V[37], X[37])
    assert str(in_batch.value) == str(alone.value)


def test_states_whose_lane_says_zero_are_solved_again_by_the_scalar_code(puma):
    solver = gtdyn.compile(puma, "inverse", lanes=True)
    batches = solver._batches
    Q, V, X = random_states(6, 64, seed=4)
    Q[5, 0] = np.nan
    inputs = np.ascontiguousarray(np.hstack([Q, V, X]))
    calls = []
    scalar = parallel.run_states

    def counted(batch, size, rows, n_out, out_start, threads=1, lanes_per_pass=1):
        calls.append((rows.shape[0], lanes_per_pass))
        return scalar(batch, size, rows, n_out, out_start, threads, lanes_per_pass)

    try:
        parallel.run_states = counted
        results = batches.run("main", inputs, solver._outputs + 3, solver._out, 1)
    finally:
        parallel.run_states = scalar
    assert calls == [(64, lanes.WIDTH), (1, 1)]  # all in lanes, then the NaN state again, alone, in scalar code
    assert results[5, 6] == 0.0 and np.all(np.delete(results[:, 6], 5) == 1.0)


def test_lane_code_is_cached_and_pickled_with_the_solver(puma):
    import pickle

    solver = gtdyn.compile(puma, "forward", lanes=True)
    again = gtdyn.compile(puma, "forward", lanes=True)
    assert again.from_cache and again.lanes == lanes.WIDTH
    assert gtdyn.compile(puma, "forward").lanes == lanes.WIDTH  # the default shares the entry, lane code and all
    assert gtdyn.compile(puma, "forward", lanes=False).lanes == 0  # asked for none: state by state
    copy = pickle.loads(pickle.dumps(solver))
    Q, V, X = random_states(6, 8, seed=6)
    assert copy.lanes == lanes.WIDTH and np.array_equal(copy.batch(Q, V, X), solver.batch(Q, V, X))


def test_a_default_solver_compiles_its_lanes_in_the_background_once_its_batches_are_many(puma, monkeypatch,
                                                                                      tmp_path):
    """``gtdyn.compile``'s default: batches run state by state until they have run ``LANES_AFTER`` states; then
    the lane code is compiled in a worker process, checked, and batches run in lanes — the same bits all along.
    The lane code joins the solver's cache entry, so the next compile has it at once."""
    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(lanes, "LANES_AFTER", 100)
    solver = gtdyn.compile(puma, "forward")
    Q, V, X = random_states(6, 64, seed=9)
    first = solver.batch(Q, V, X)
    assert solver.lanes == 0 and solver._batches._compiling is None  # 64 states: not yet
    assert np.array_equal(solver.batch(Q, V, X), first)  # 128: the lane code is being compiled
    solver._batches._compiling.join(timeout=120)
    assert solver.lanes == lanes.WIDTH
    assert np.array_equal(solver.batch(Q, V, X), first)
    again = gtdyn.compile(puma, "forward")
    assert again.from_cache and again.lanes == lanes.WIDTH and np.array_equal(again.batch(Q, V, X), first)
    assert gtdyn.compile(puma, "forward", checks=False).lanes == lanes.WIDTH  # one entry for both entries


def test_a_long_batch_takes_its_lanes_up_from_the_chunk_after_they_are_ready(puma, monkeypatch, tmp_path):
    """A batch that starts the lane compile runs in chunks of ``STRIDE`` rows; here the compile is held until
    the first chunk is done, then waited for: the first chunk runs state by state, every later one in lanes,
    and the answers are the scalar code's bit for bit."""
    import threading

    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(lanes, "LANES_AFTER", 1)
    monkeypatch.setattr(lanes, "STRIDE", 16)
    solver = gtdyn.compile(puma, "forward")
    batches = solver._batches
    compile_lanes, held = batches.later, threading.Event()

    def later():
        held.wait(60)
        return compile_lanes()

    batches.later = later
    run, chunks = batches._run, []

    def chunk(*args):
        chunks.append(batches.lanes is not None)
        out = run(*args)
        if len(chunks) == 1:  # the first chunk done: let the compile go, and wait for it
            held.set()
            batches._compiling.join(60)
        return out

    monkeypatch.setattr(batches, "_run", chunk)
    Q, V, X = random_states(6, 64, seed=13)
    got = solver.batch(Q, V, X)
    assert chunks == [False, True, True, True]
    assert np.array_equal(got, gtdyn.compile(puma, "forward", lanes=False).batch(Q, V, X))


def test_compile_lanes_asks_for_them_now_and_lanes_false_never_has_them(puma, monkeypatch, tmp_path):
    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path))
    never = gtdyn.compile(puma, "inverse", lanes=False)
    assert never.compile_lanes() == 0
    solver = gtdyn.compile(puma, "inverse")
    assert solver.lanes == 0 and solver.compile_lanes(wait=True) == lanes.WIDTH
    Q, V, X = random_states(6, 16, seed=10)
    assert np.array_equal(solver.batch(Q, V, X), never.batch(Q, V, X))
    assert gtdyn.compile(puma, "inverse", lanes=False).lanes == 0  # the cached entry now holds lanes: left out


def test_a_solver_takes_lane_code_its_twin_stored_in_the_meantime(puma, monkeypatch, tmp_path):
    """The checked solver and its ``checks=False`` twin share a cache entry: once one has compiled its lanes, the
    other loads them (checked bit for bit all the same) instead of compiling them again — here it could not."""
    from gtdyn.compiled import background

    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path))
    checked, unchecked = gtdyn.compile(puma, "hybrid", qdd_joints=["joint2"]), \
        gtdyn.compile(puma, "hybrid", qdd_joints=["joint2"], checks=False)
    assert checked.compile_lanes(wait=True) == lanes.WIDTH and unchecked.lanes == 0

    def no_compile(*args, **kwargs):
        raise AssertionError("compiled again")

    monkeypatch.setattr(background.objects, "run_worker", no_compile)
    assert unchecked.compile_lanes(wait=True) == lanes.WIDTH
    Q, V, X = random_states(6, 16, seed=12)
    X[:, 1] = Q[:, 1] * 0.1
    assert_same(unchecked.batch(Q, V, X), one_by_one(unchecked, Q, V, X))


def test_lane_code_compiled_later_that_is_not_the_scalar_codes_is_refused(puma, monkeypatch, tmp_path, caplog):
    """The lane code compiled later is traced again; code from another plan (here another gravity, the same
    entry names) must not answer: it is checked on random rows against the scalar code, bit for bit, refused
    with a warning, and batches stay state by state."""
    import functools

    from gtdyn.compiled import background

    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path))
    solver = gtdyn.compile(puma, "forward")
    trace_again = solver._batches.later.args[1]  # build._cached_lanes(name, trace_again)
    assert trace_again.func is background.lane_code_elsewhere and trace_again.args[3].shape == (3,)  # gravity
    args = list(trace_again.args)
    args[3] = args[3] * 0.5
    solver._batches.later = functools.partial(background.lane_code_elsewhere, *args)
    with caplog.at_level("WARNING", logger="gtdyn"):
        assert solver.compile_lanes(wait=True) == 0
    assert "disagrees with the scalar code" in caplog.text
    Q, V, X = random_states(6, 8, seed=11)
    assert np.array_equal(solver.batch(Q, V, X), one_by_one(solver, Q, V, X))
    assert "lanes_object" not in solver._record



def test_lane_code_of_another_program_is_refused_before_it_runs(puma, monkeypatch, tmp_path, caplog):
    """The worker process that compiles lane code traces the plan with its own settings; where they differ from
    this process's (here the bound's limit, lowered so that the plan keeps the estimate alone), its program has
    another workspace, which the code would write past: it is refused on its size and operations before it runs
    (it crashed the process before), and batches stay state by state."""
    from gtdyn.compiled import certificate

    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(certificate, "BOUND_LIMIT", 1.0)
    solver = gtdyn.compile(puma, "forward")
    with caplog.at_level("WARNING", logger="gtdyn"):
        assert solver.compile_lanes(wait=True) == 0
    assert "traced from another program" in caplog.text
    Q, V, X = random_states(6, 8, seed=13)
    assert np.array_equal(solver.batch(Q, V, X), one_by_one(solver, Q, V, X))

EXITING = """
import sys, time
import gtdyn
from gtdyn.compiled import background, objects
solver = gtdyn.compile(gtdyn.load_robot(gtdyn.bundled_path("puma560")), "forward", use_cache=False)
background.COMMAND = "import time; time.sleep(60)"  # a worker that would outlive its parent by a minute
solver.compile_lanes(wait=False)
deadline = time.time() + 60
while not objects._WORKERS and time.time() < deadline:
    time.sleep(0.01)
print(next(iter(objects._WORKERS)).pid, flush=True)
"""


def test_a_process_that_exits_while_its_lane_code_compiles_stops_the_worker():
    """The background compile's worker process (here one that would sleep a minute) is stopped when its parent
    exits (``objects._stop_workers``), and the exit is clean: no traceback, no worker left running."""
    import subprocess
    import sys
    import time

    done = subprocess.run([sys.executable, "-c", EXITING], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    worker = int(done.stdout.split()[-1])
    deadline = time.time() + 5
    while time.time() < deadline:
        if not _running(worker):
            return
        time.sleep(0.05)
    raise AssertionError(f"the compile worker {worker} outlived its parent")


def _running(pid: int) -> bool:
    """Whether process ``pid`` still runs (a killed one may linger as a zombie until whoever adopted it reaps it)."""
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def test_a_big_programs_lane_code_compiles_in_parts_with_the_same_bits(puma, monkeypatch):
    """Lane code is compiled in parts side by side as scalar code is (``native.compile_parts``): forced here on
    the PUMA (every program counts as big), two lane objects, linked when loaded, solve the batch bit for bit as
    the lane code compiled whole."""
    from gtdyn.compiled import objects

    whole = gtdyn.compile(puma, "forward", lanes=True, use_cache=False)
    monkeypatch.setattr(objects, "PARALLEL_ABOVE", 0)
    monkeypatch.setattr(objects, "workers", lambda: 2)
    parts = gtdyn.compile(puma, "forward", lanes=True, use_cache=False)
    assert len(parts._record["lanes_object"]) == 2 and len(whole._record["lanes_object"]) == 1
    Q, V, X = random_states(6, 64, seed=8)
    assert np.array_equal(parts.batch(Q, V, X), whole.batch(Q, V, X))


def test_the_lane_ir_is_the_scalar_ir_on_vectors():
    ir = lanes.function_ir(_tiny(), "t_", width=4)
    assert "fmul <4 x double>" in ir and "@llvm.sin.v4f64" in ir and "i64 8" in ir  # ws[2] of lane 0 at 2·4


def _tiny():
    from gtdyn.compiled import trace

    fn = trace.Function("tiny")
    x = fn.load(2)
    fn.store(3, trace.sin(x) * x)
    return fn


def test_a_lane_group_takes_the_branch_when_any_lane_asks_and_the_others_keep_their_values():
    """``call_unless`` in lanes: the callee runs on the whole group, and each lane whose flag was 1 gets back what
    the caller had stored, so every lane's answer is the scalar code's (NaN asks, as in ``!= 1``). Scratch that
    only the callee writes is the callee's in every lane of the group."""
    from gtdyn.compiled import native, trace

    callee = trace.Function("callee")
    callee.store(2, callee.load(0) * 10.0)  # overwrites what main stored
    callee.store(3, callee.load(0) + 1.0)  # where main wrote nothing
    main = trace.Function("main")
    main.store(2, main.load(0) + 0.5)
    main.call_unless(main.load(1), callee)
    fast = trace.Function("fast")
    functions = {"callee": callee, "main": main, "fast": fast}
    scalar = native.Loaded(native.compile_object(native.module_ir(functions, "u_")), "u_")
    vector = native.Loaded(native.compile_object(lanes.module_ir(functions, "u_")), "u_", lanes.ENTRIES,
                           suffix=f"_x{lanes.WIDTH}")
    for flags in ([1.0, 0.0, 1.0, np.nan], [1.0] * 4, [0.0] * 4):
        states = [np.array([float(w + 1), flag, -7.0, -7.0]) for w, flag in enumerate(flags)]
        interleaved = np.array(states).T.ravel().copy()  # value i of lane w at i · WIDTH + w
        vector.entry["main"](interleaved.ctypes.data)
        lane_values = interleaved.reshape(4, lanes.WIDTH)
        for w, ws in enumerate(states):
            scalar.entry["main"](ws.ctypes.data)
            assert lane_values[2, w] == ws[2], (flags, w)
            if flags[w] != 1.0:
                assert lane_values[3, w] == ws[3], (flags, w)
        assert np.all(lane_values[3] == (-7.0 if flags == [1.0] * 4 else lane_values[0] + 1.0))
    # a compiled solver's lanes give back only what matters once main returns (what a batch copies out, and what
    # main reads after the branch): here, with nothing visible and nothing read after it, nothing is given back
    restores = "select <4 x i1> %ask"
    assert restores in lanes.module_ir(functions, "u_")
    assert restores not in lanes.module_ir(functions, "u_", visible=set())
    assert restores in lanes.module_ir(functions, "u_", visible={2})


def test_groups_whose_lanes_disagree_about_the_bound_are_bit_for_bit_the_single_calls(tmp_path):
    """A 14-link chain's RNEA, certified three ways (u, Schur's u_S, the estimate): lane groups mix lanes that
    stop at u with lanes that go on to ``schur`` and to ``exact``."""
    from gtdyn.bench.compiled import batch_states, chain_with_urdf

    robot = chain_with_urdf(14, str(tmp_path))[0]
    solver = gtdyn.compile(robot, "inverse", lanes=True)
    Q, V, X = batch_states(robot, "inverse", None, 400)
    settled = []
    for q, v, x in zip(Q, V, X):
        solver(q, v, x)
        settled.append(solver._ws[solver._bounded])
    groups = np.array(settled).reshape(-1, lanes.WIDTH)
    mixed = [set(group) for group in groups if len(set(group)) > 1]
    assert any(0.0 in ways for ways in mixed) and any({1.0, 2.0} <= ways for ways in mixed)  # not vacuous
    assert_same(solver.batch(Q, V, X), one_by_one(solver, Q, V, X))
    assert solver.fallbacks == 0
