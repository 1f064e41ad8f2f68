"""Benchmarks: compiled solvers timed per ordering against Pinocchio in the same process (``compiled``); the
reference path's orderings timed against each other and against Pinocchio (``orderings``, ``pinocchio``);
medians and interleaved samples (``timing``); Markdown and CSV reports (``report``). Charts are in
``gtdyn.plot.bench``."""

from gtdyn.bench.compiled import (
                                  BATCH_STATES,
                                  CHAIN_SIZES,
                                  PAPER_US,
                                  THREADS,
                                  bench_compiled,
                                  chain_orderings,
                                  chain_with_urdf,
                                  compile_timed,
                                  executed_operations,
)
from gtdyn.bench.orderings import BASELINE, PROBLEMS, Row, State, bench_orderings, bench_scaling, benchmark_state
from gtdyn.bench.pinocchio import bench_pinocchio
from gtdyn.bench.report import (
                                  compiled_batch_table,
                                  compiled_call_table,
                                  compiled_tables,
                                  machine_description,
                                  markdown_table,
                                  paper_table,
                                  write_csv,
)
from gtdyn.bench.timing import Timing, measure, measure_interleaved, paired_ratio

__all__ = ["BASELINE", "BATCH_STATES", "CHAIN_SIZES", "PAPER_US", "PROBLEMS", "Row", "State", "THREADS",
           "Timing", "bench_compiled", "bench_orderings", "bench_pinocchio", "bench_scaling", "benchmark_state",
           "chain_orderings", "chain_with_urdf", "compile_timed", "compiled_batch_table", "compiled_call_table",
           "compiled_tables", "executed_operations", "machine_description", "markdown_table", "measure",
           "measure_interleaved", "paired_ratio", "paper_table", "write_csv"]
