"""Benchmarks: orderings timed against each other and against Pinocchio in the same process (``orderings``,
``pinocchio``), medians and progress (``timing``), Markdown and CSV reports (``report``). Charts are in
``gtdyn.plot.bench``."""

from gtdyn.bench.orderings import BASELINE, PROBLEMS, Row, State, bench_orderings, bench_scaling, benchmark_state
from gtdyn.bench.pinocchio import bench_pinocchio
from gtdyn.bench.report import machine_description, markdown_table, write_csv
from gtdyn.bench.timing import Progress, Timing, measure

__all__ = ["BASELINE", "PROBLEMS", "Progress", "Row", "State", "Timing", "bench_orderings", "bench_pinocchio", "bench_scaling",
           "benchmark_state", "machine_description", "markdown_table", "measure", "write_csv"]
