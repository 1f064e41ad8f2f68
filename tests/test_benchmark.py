"""The benchmark on a tiny configuration: output structure, and every method's answer matches Pinocchio.
Timing values are never asserted (machines are shared and noisy)."""

import csv
import os
import sys

import pytest
from references import rel_err

import gtdyn
from gtdyn import bench as B
from gtdyn.bench.pinocchio import PinocchioModel
from gtdyn.model.random import serial_chain
from gtdyn.orderings import applicable
from gtdyn.plot.bench import bar_chart, compiled_scaling_plot, operations_plot, scaling_plot


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Compiled solvers go to a temporary cache, never the user's."""
    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path / "cache"))


def test_rows_cover_every_ordering_and_match_pinocchio():
    robot = gtdyn.load_robot("puma560")
    state = B.benchmark_state(robot, seed=3)
    ref = PinocchioModel(robot.source, robot)
    # the state's reference answer is Pinocchio's
    assert rel_err(state.tau, ref.rnea(state.q, state.v, state.qdd)) < 1e-9
    for kind in B.PROBLEMS:
        rows = B.bench_orderings(robot, kind, state, repeat=2, inner=1, warmup=0)
        rows += B.bench_pinocchio(robot, robot.source, kind, state, repeat=2, inner=1, warmup=0)
        methods = [r.method for r in rows]
        assert set(applicable(kind)) <= set(methods)
        assert any(m.startswith("pinocchio") for m in methods)
        assert ("featherstone (3 passes)" in methods) == (kind == "hybrid")
        for r in rows:
            assert r.max_error < 1e-9, (kind, r.method, r.max_error)
            assert all(len(t.samples) == 2 and t.median_us > 0 for t in r.timings.values())
            if r.method in applicable(kind):
                assert {"elim_us", "elim_constrained_us", "solve_us"} <= set(r.timings)
                assert r.measures["edges"] > 0
        table = B.markdown_table(rows, kind)
        assert table.count("\n") == len(rows) + 2 and f"ratio to {B.BASELINE[kind].upper()}" in table


def test_pinocchio_adapter_refuses_another_robot_and_is_optional(monkeypatch):
    puma, rrr = gtdyn.load_robot("puma560"), gtdyn.load_robot("rrr")
    with pytest.raises(ValueError, match="Pinocchio reads joints"):
        PinocchioModel(puma.source, rrr)
    monkeypatch.setitem(sys.modules, "pinocchio", None)  # as if not installed: the benchmark goes without it
    assert B.bench_pinocchio(puma, puma.source, "inverse", B.benchmark_state(puma), repeat=1, inner=1, warmup=0) == []


def test_scaling_chains_and_outputs(tmp_path):
    chains = [serial_chain(n) for n in (3, 5)]
    assert [c.num_dofs for c in chains] == [3, 5]
    rows = B.bench_scaling(chains, repeat=2, inner=1, warmup=0)
    assert {(r.dofs, r.problem) for r in rows} == {(n, k) for n in (3, 5) for k in ("inverse", "forward")}
    # on chains CRBA's DAG grows faster than ABA's
    edges = {(r.dofs, r.method): r.measures["edges"] for r in rows if r.problem == "forward"}
    assert edges[(5, "crba")] - edges[(3, "crba")] > edges[(5, "aba")] - edges[(3, "aba")]
    B.write_csv(rows, str(tmp_path / "r.csv"), str(tmp_path / "s.csv"))
    with open(tmp_path / "r.csv") as f:
        table = list(csv.DictReader(f))
    assert len(table) == len(rows) and float(table[0]["elim_us_median"]) > 0
    scaling_plot(rows, str(tmp_path / "scaling.png"), "test")
    bar_chart(rows, str(tmp_path / "bars.png"), "test")
    assert os.path.getsize(tmp_path / "scaling.png") > 0 and os.path.getsize(tmp_path / "bars.png") > 0


def test_run_all_reference_quick(tmp_path):
    from benchmarks.run_all import main

    assert main(["--reference", "--quick", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "results.md").read_text()
    assert "python -m benchmarks.run_all --reference --quick" in text and "## Serial chains" in text
    assert {"results.csv", "samples.csv", "puma560_orderings.png", "scaling.png"} <= set(os.listdir(tmp_path))


@pytest.mark.heavy  # ~9 s; test_run_all_reference_quick and test_compiled_rows_…[rrr] represent it in the default run
def test_run_all_quick_times_compiled_solvers(tmp_path, capsys):
    from benchmarks.run_all import main

    assert main(["--quick", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "results.md").read_text()
    assert "python -m benchmarks.run_all --quick" in text and "compiled solvers" in text
    for heading in ("## PUMA 560 next to paper 001's Tables I–II", "## Time against operation count", "## puma560",
                    "## Serial chains"):
        assert heading in text
    assert "| inverse RNEA | 26.6 | 1.00 |" in text and "| forward ABA | 25.5 | 1.00 |" in text
    assert "| 6 joints, rnea |" in text and "| 6 joints, aba |" in text
    assert {"results.csv", "samples.csv", "compiled_vs_operations.png",
            "chains_scaling.png"} <= set(os.listdir(tmp_path))
    with open(tmp_path / "results.csv") as f:
        table = list(csv.DictReader(f))
    assert {r["robot"] for r in table} == {"puma560", "chain6"}
    assert all(float(r["call_us_median"]) > 0 and float(r["pinocchio_us_median"]) > 0 for r in table)
    assert all(float(r["max_rel_error"]) < 1e-9 and r["fallbacks"] == "0" for r in table)
    err = capsys.readouterr().err
    assert "puma560 inverse rnea" in err and "chain6 forward aba" in err  # progress on stderr


@pytest.mark.parametrize("name", ["rrr", pytest.param("puma560", marks=pytest.mark.heavy)])  # PUMA: ~5 s
def test_compiled_rows_are_measured_side_by_side_with_pinocchio(name):
    robot = gtdyn.load_robot(name)
    state = B.benchmark_state(robot)
    seen = []
    for kind, orderings in (("inverse", ["rnea", "colamd"]), ("forward", ["aba", "colamd"]), ("hybrid", ["colamd"])):
        rows = B.bench_compiled(robot, robot.source, kind, state, orderings, repeat=3, inner=1, warmup=1, batch=20,
                                threads=(1, 2), batch_repeat=2, progress=seen.append)
        assert [r.method for r in rows] == orderings
        for r in rows:
            pin_batch = {"pin_parallel1_us", "pin_parallel2_us"} if kind != "hybrid" else set()
            assert {"call_us", "fast_us", "pinocchio_us", "batch1_us", "batch2_us", "fast_batch1_us",
                    "fast_batch2_us", "pin_loop_us"} | pin_batch == set(r.timings)
            assert all(len(t.samples) == (3 if k in ("call_us", "fast_us", "pinocchio_us") else 2)
                       for k, t in r.timings.items())
            m = r.measures
            assert r.max_error < 1e-9 and m["batch_max_error"] < 1e-9 and m["fallbacks"] == 0
            assert m["executed_ops"] > m["fast_ops"] > 0 and m["edges"] > 0 and m["ops"] > 0
            assert m["compile_cold_s"] > m["compile_cached_s"] > 0
            assert m["call_x_pinocchio"] > 0 and m["batch_states"] == 20
            assert ("fast_batch2_x_pinocchio" in m) == (kind != "hybrid")
        table = B.compiled_call_table(rows, kind)
        assert table.count("\n") == len(rows) + 2 and f"ratio to {B.BASELINE[kind].upper()}" in table
        batch = B.compiled_batch_table(rows, kind)
        assert batch.count("\n") == len(rows) + 2 and "20 states" in batch
    assert seen == [f"{name} inverse rnea", f"{name} inverse colamd", f"{name} forward aba",
                    f"{name} forward colamd", f"{name} hybrid colamd"]


def test_paper_table_and_compiled_plots(tmp_path):
    from gtdyn.bench.orderings import Row
    from gtdyn.bench.timing import Timing

    def row(robot, dofs, kind, method, us, ops):
        r = Row(robot, dofs, kind, method)
        r.timings = {k: Timing((us * f * 1e-6,) * 3) for k, f in (("call_us", 2), ("fast_us", 1), ("pinocchio_us", 0.5),
                                                                   ("fast_batch1_us", 0.4), ("pin_parallel1_us", 0.2))}
        r.measures = {"executed_ops": 3.0 * ops, "fast_ops": ops, "ops": 2.0 * ops, "edges": 10, "compile_cold_s": 1.0,
                      "compile_cached_s": 0.01, "call_x_pinocchio": 4.0, "fast_x_pinocchio": 2.0, "batch_states": 10}
        r.max_error = 1e-15
        return r

    rows = [row("puma560", 6, "inverse", "rnea", 2.0, 1000), row("puma560", 6, "inverse", "colamd", 1.0, 900),
            row("puma560", 6, "forward", "aba", 3.0, 2000), row("puma560", 6, "forward", "crba", 6.0, 3000)]
    table = B.paper_table(rows)
    assert "| inverse COLAMD | 11.0 | 0.41 | 2.00 | 0.50 | 1.00 | 0.50 | 4.00× / 2.00× |" in table
    assert "| inverse ND | 11.7 | 0.44 | – |" in table  # not run: the paper's number alone
    assert "| forward CRBA | 51.8 | 2.03 | 12.0 | 2.00 |" in table
    assert "RBDL" in table and "Pinocchio aba" in table
    chains = [row(f"chain{n}", n, kind, method, n * f, n * 500 * f) for n in (6, 12) for kind, method, f in
              (("inverse", "rnea", 1), ("forward", "aba", 2), ("forward", "crba", 3))]
    operations_plot(rows + chains, str(tmp_path / "ops.png"), "test")
    compiled_scaling_plot(chains, str(tmp_path / "chains.png"), "test")
    assert os.path.getsize(tmp_path / "ops.png") > 0 and os.path.getsize(tmp_path / "chains.png") > 0


def test_executed_operations_follow_the_calls_of_the_generated_code():
    from gtdyn.bench.compiled import call_counts

    solver, unchecked, cold, cached = B.compile_timed(gtdyn.load_robot("rrr"), "inverse", "rnea")
    main, fast = call_counts(solver, "main"), call_counts(solver, "fast")
    # the checked call's usual path: the solve alone. RNEA substitutes alone, so its backward error is bounded a
    # priori, and the RRR's u by a ū proven at every state (uniform_bound): ``measured`` (u's pass, the residual)
    # and ``exact`` run only where those cannot certify, so they are not counted
    assert main == {"factor": 1, "solve": 1}
    assert fast == {"factor": 1, "solve": 1}
    ops = solver.operations
    assert B.executed_operations(solver, "fast") == ops["fast"] + ops["factor"] + ops["solve"]
    assert B.executed_operations(solver) == ops["main"] + sum(n * ops[f] for f, n in main.items())
    assert not unchecked.checks and cold > cached
    assert os.environ["GTDYN_CACHE_DIR"].endswith("cache")  # compile_timed's private cache is gone again


def test_chains_for_pinocchio_are_the_scaling_chains(tmp_path):
    robot, path = B.chain_with_urdf(4, str(tmp_path))
    chain = serial_chain(4)
    assert robot.joint_names == chain.joint_names and robot.name == chain.name == "chain4"
    ref = PinocchioModel(path, robot)
    state = B.benchmark_state(chain)
    assert rel_err(state.tau, ref.rnea(state.q, state.v, state.qdd)) < 1e-9
    assert B.chain_orderings("forward", 96) == ["aba"] and "crba" in B.chain_orderings("forward", 24)


def test_machine_description_states_versions():
    text = B.machine_description(7, 3, 2)
    assert "gtsam" in text and "numpy" in text and "7 samples × 3 calls after 2 warm-up" in text


def test_measure_interleaved_alternates_and_pairs(monkeypatch):
    """Rounds alternate the order (a b, b a, a b); sample k of each function comes from round k."""
    from types import SimpleNamespace

    from gtdyn.bench import timing

    calls, clock = [], [0.0]
    monkeypatch.setattr(timing, "time", SimpleNamespace(perf_counter=lambda: clock[0]))

    def fn(name, cost):
        def call():
            calls.append(name)
            clock[0] += cost
        return call

    t = B.measure_interleaved({"a": fn("a", 2e-6), "b": fn("b", 1e-6)}, repeat=3, inner=2, warmup=1)
    assert calls == ["a", "b"] + ["a", "a", "b", "b", "b", "b", "a", "a", "a", "a", "b", "b"]
    assert t["a"].median_us == pytest.approx(2.0) and t["b"].median_us == pytest.approx(1.0)
    assert B.paired_ratio(t["a"], t["b"]) == pytest.approx(2.0)


def test_measure_times_repeat_samples_of_inner_calls_after_warmup(monkeypatch):
    """On a fake clock where call k (from 0) takes k + 1 µs: 4 warm-up calls untimed, then 3 samples of 2 calls,
    each the mean per call — (5 + 6)/2, (7 + 8)/2, (9 + 10)/2 µs — so the median is 7.5 µs and the IQR 2 µs."""
    from types import SimpleNamespace

    from gtdyn.bench import timing

    costs = []
    monkeypatch.setattr(timing, "time", SimpleNamespace(perf_counter=lambda: sum(costs) * 1e-6))
    t = B.measure(lambda: costs.append(len(costs) + 1), repeat=3, inner=2, warmup=4)
    assert len(costs) == 4 + 3 * 2
    assert t.samples == pytest.approx([5.5e-6, 7.5e-6, 9.5e-6], rel=1e-12)
    assert t.median_us == pytest.approx(7.5) and t.iqr_us == pytest.approx(2.0)
