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
from gtdyn.plot.bench import bar_chart, scaling_plot
from gtdyn.orderings import applicable


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


def test_run_all_quick(tmp_path):
    from benchmarks.run_all import main

    assert main(["--quick", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "results.md").read_text()
    assert "python -m benchmarks.run_all --quick" in text and "## Serial chains" in text
    assert {"results.csv", "samples.csv", "puma560_orderings.png", "scaling.png"} <= set(os.listdir(tmp_path))


def test_machine_description_states_versions():
    text = B.machine_description(7, 3, 2)
    assert "gtsam" in text and "numpy" in text and "7 samples × 3 calls after 2 warm-up" in text


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
