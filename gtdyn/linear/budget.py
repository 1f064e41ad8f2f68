"""What an elimination will cost, known before any number is computed, and the budget it must fit in.

The symbolic elimination of a graph in an ordering (GTSAM's, on the factors' keys alone) gives every
conditional's frontal and parent variables, and so the dense blocks the numeric elimination will hold: the Bayes
net keeps f × (f + p + 1) numbers per conditional (f frontal, p parent dimensions) and works on a combined factor
of about (f + p) × (f + p + 1) at a time. An ordering that fills in — CRBA's dense mass matrix on a long chain —
shows it here in a fraction of the numeric cost. GTSAM's conditionals keep their whole combined blocks (views of
them), which the replay counts: it matched the memory GTSAM took for CRBA on chains of 100–300 links to 0.2 %
(tests/test_memory_budget.py).

``memory_budget()`` is what a solve may use (default ``DEFAULT_BUDGET``, sized for a laptop; the environment
variable ``GTDYN_MEMORY_BUDGET`` or ``gtdyn.set_memory_budget`` change it; ``None``: no limit).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import gtsam

from gtdyn import keys
from gtdyn.arguments import memory_size
from gtdyn.errors import BudgetError

DEFAULT_BUDGET = 4 * 1024 ** 3  # bytes: a quarter of a 16 GB laptop
# GTSAM's QR, seconds per multiply-add of ``Cost.flops``: a rough rate, for messages only
SECONDS_PER_FLOP = 1e-8
_budget: list[int | None] = []  # set by set_memory_budget; empty: from the environment or the default


@dataclass(frozen=True)
class Cost:
    """An elimination's predicted memory (bytes: the Bayes net plus the largest working factor) and arithmetic
    (multiply-adds of the dense QR steps, an estimate of time)."""

    memory: int
    flops: int

    def __str__(self) -> str:
        return f"{readable(self.memory)} and ~{self.flops:.2g} multiply-adds"


def elimination_cost(graph: gtsam.GaussianFactorGraph, order: gtsam.Ordering) -> Cost:
    """``Cost`` of eliminating ``graph`` in ``order``: its symbolic elimination, then the numeric one replayed on
    block sizes. Step i combines the factors on the variable it eliminates (R rows, f frontal and p separator
    columns), keeps a conditional of f × (f + p + 1) numbers and leaves a new factor of min(R − f, p) rows on
    the separator, alive until one of its variables is eliminated in turn. The peak is the Bayes net so far plus
    every factor alive: an ordering that eliminates many variables before the ones they fill in (CRBA's wrenches
    before its q̈) holds O(n) dense factors of O(n²) at once."""
    position = {order.at(i): i for i in range(order.size())}
    symbolic = gtsam.SymbolicFactorGraph()
    consumed: list[list[tuple[int, int]]] = [[] for _ in range(order.size())]  # per step: (rows, numbers)
    for i in range(graph.size()):
        factor = graph.at(i)
        if factor is None:
            continue
        variables = factor.keys()
        symbolic.push_back(gtsam.SymbolicFactor.FromKeys(variables))
        width = sum(keys.dim(k) for k in variables) + 1
        consumed[min(position[k] for k in variables)].append((factor.rows(), factor.rows() * width))
    net = symbolic.eliminateSequential(order)
    alive = sum(numbers for step in consumed for _, numbers in step)
    stored = peak = flops = 0
    for i in range(net.size()):
        conditional = net.at(i)
        variables, frontals = conditional.keys(), conditional.nrFrontals()
        step = position[variables[0]]
        f = sum(keys.dim(k) for k in variables[:frontals])
        separator = variables[frontals:]
        p = sum(keys.dim(k) for k in separator)
        rows = sum(r for r, _ in consumed[step])
        flops += rows * (f + p + 1) * f  # Householder on the combined factor's f columns
        peak = max(peak, stored + alive + rows * (f + p + 1))  # the combined factor, before it is freed
        alive -= sum(numbers for _, numbers in consumed[step])
        stored += rows * (f + p + 1)  # GTSAM's conditional is a view of the whole combined block, which it keeps
        if separator:
            left = min(rows - f, p)
            if left > 0:
                consumed[min(position[k] for k in separator)].append((left, left * (p + 1)))
                alive += left * (p + 1)
    return Cost(8 * peak, flops)


# Compiling: the generated code keeps a fraction of the dense multiply-adds (structural zeros and constants fold
# away), each operation costing memory while the code is written and compiled, and time; the constants are
# fitted in benchmarks/results/design_measurements.md ("Compile cost predicted from the elimination")
OPERATIONS_PER_FLOP, COMPILE_BYTES_PER_OPERATION, COMPILE_BASE_BYTES, COMPILE_SECONDS_PER_OPERATION = \
    0.3, 3000, 100e6, 2e-4


def compile_cost(cost: Cost) -> Cost:
    """What compiling an elimination of ``cost`` is expected to take (memory; ``flops`` here: operations of the
    generated code, ~``COMPILE_SECONDS_PER_OPERATION`` s each): an estimate within ~3× either way."""
    operations = int(OPERATIONS_PER_FLOP * cost.flops)
    return Cost(int(COMPILE_BASE_BYTES + COMPILE_BYTES_PER_OPERATION * operations), operations)


def memory_budget() -> int | None:
    """Bytes a solve may use: ``set_memory_budget``'s, else ``GTDYN_MEMORY_BUDGET``'s, else ``DEFAULT_BUDGET``."""
    if _budget:
        return _budget[0]
    text = os.environ.get("GTDYN_MEMORY_BUDGET", "").strip()
    return memory_size("GTDYN_MEMORY_BUDGET", text) if text else DEFAULT_BUDGET


def set_memory_budget(budget) -> None:
    """Set the memory a dynamics solve may use: bytes (a number, or text such as "8GB", "512 MB"), or None for no
    limit. A solve predicted to need more raises ``gtdyn.BudgetError`` before it starts, naming the orderings
    that fit."""
    _budget[:] = [memory_size("budget", budget)]


def check_memory(cost: Cost, what: str, alternatives: Callable[[], list[tuple[str, Cost]]], seconds: float,
                 why: str = "its elimination fills in densely", otherwise: str = "no named ordering fits") -> None:
    """``BudgetError`` if ``cost`` exceeds ``memory_budget()``: ``what`` would need so much (and ~``seconds``;
    ``why``), and the named ``alternatives`` (called only then: (ordering, its cost)) that fit, else
    ``otherwise``."""
    budget = memory_budget()
    if budget is None or cost.memory <= budget:
        return
    fits = sorted(((name, other) for name, other in alternatives() if other.memory <= budget),
                  key=lambda item: item[1].memory)
    advice = (f"orderings that fit: {', '.join(f'{name} ({readable(other.memory)})' for name, other in fits)}"
              if fits else otherwise)
    raise BudgetError(f"{what} would need {readable(cost.memory)} of memory (~{seconds:.2g} s; {why}), over the "
                      f"budget of {readable(budget)} — {advice}; or raise the budget with gtdyn.set_memory_budget "
                      "or GTDYN_MEMORY_BUDGET")


def readable(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.3g} {unit}"
        size /= 1024
    return f"{size:.3g} TiB"
