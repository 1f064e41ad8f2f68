"""The workspace ``ws`` of generated code: where inputs, outputs, right-hand sides, solutions and scratch vectors
start (``Layout``), the slots through which one function reads what another computed (``Slots``), and how the
answer is written (``store_outputs``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from gtdyn.compiled import trace


@dataclass
class Layout:
    n: int
    outputs: int
    rows: int
    unknowns: int
    base_inputs: int = 0  # a floating base's pose (16), twist (6) and given acceleration or wrench (6)
    wrench_inputs: int = 0  # six per frame that takes an external wrench
    derivative_columns: int = 0  # directions of ``gtdyn.compiled.derivatives`` (0: values only)
    lanes: int = 0  # outputs the derivatives solve for at once (``trace.Lanes``; 0: values only)
    angles: tuple = ()  # the revolute joints' positions in q: within ±MAX_ANGLE, or the call falls back
    # the prismatic joints' positions in q → their limits, from which a bound proven at every state takes the ranges
    # it assumes, which the call then checks (``gtdyn.compiled.certificate._everywhere``)
    ranges: dict = field(default_factory=dict)
    start: dict[str, int] = field(default_factory=dict)
    size: int = 0

    def __post_init__(self):
        # "jac" right after "out": a batch copies the outputs, the verdict and the derivatives out as one block
        sizes = {"inputs": self.inputs, "out": self.outputs + 3, "jac": self.outputs * self.derivative_columns,
                 "solution": self.solution,
                 "rhs": self.rows, "sol": self.unknowns, "zt_lanes": self.unknowns * self.lanes,
                 "yt_lanes": self.rows * self.lanes,
                 "zt": self.unknowns, "yt": self.rows, "xr": self.unknowns, "res": self.rows,
                 "norms": self.unknowns,  # D², which main computes and exact and measured read
                 "scale": self.unknowns,  # D, the estimate's column scaling, kept over its iterations
                 "bounded": 1}  # 1 when main's bound certified the call (its κ is the bound, not the estimate)
        for name, size in sizes.items():
            self.start[name] = self.size
            self.size += size

    @property
    def inputs(self) -> int:
        return 3 * self.n + self.base_inputs + self.wrench_inputs

    @property
    def solution(self) -> int:
        """Room for all of x, which a solve keeps there when derivatives are compiled (they start from it)."""
        return self.unknowns if self.derivative_columns else 0

    @property
    def status(self) -> int:
        return self.start["out"] + self.outputs


class Slots:
    """Values computed in one function and read in another go through a slot of ``ws``. The computing function
    stores the value when another first uses it, so a function that calls the reader must have it used before
    that call (``gtdyn.compiled.certificate.checked_call``): a store traced after the call would leave the reader
    the previous call's value."""

    def __init__(self, layout: Layout):
        self.layout, self.index, self.loaded = layout, {}, {}

    def use(self, fn: trace.Function, x):
        if not trace.is_sym(x) or x.fn is fn:
            return x
        key = (x.fn.name, x.id)
        if key not in self.index:
            self.index[key] = self.layout.size
            self.layout.size += 1
            x.fn.store(self.index[key], x)
        memo = (fn.name, key)
        if memo not in self.loaded:
            self.loaded[memo] = fn.load(self.index[key], val=x.val, name=x.fn.names.get(x.id))
        return self.loaded[memo]


def store_outputs(fn: trace.Function, layout: Layout, outputs, x: list) -> None:
    """Each output entry: a solved unknown, a given input passed through, or 0 (τ of a passive joint)."""
    for i, (source, index) in enumerate(outputs):
        if source == "combination":
            value = sum((coefficient * x[c] for c, coefficient in index), 0.0)
        else:
            value = x[index] if source == "unknown" else fn.load(index) if source == "input" else 0.0
        fn.store(layout.start["out"] + i, value)
    for k in range(layout.start["solution"], layout.start["solution"] + layout.solution):  # for the derivatives
        fn.store(k, x[k - layout.start["solution"]])
