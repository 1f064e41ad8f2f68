"""Big straight-line functions cut into pieces before they are compiled.

A function is the smallest unit ``objects.compile_objects`` can give another process, and a big one compiles
slowly per operation: a long chain's ``factor`` in a fill-in ordering (nested dissection, 96 joints) was 288,000
operations, two thirds of its program, and one process compiled it while the other waited. Here a function of
over ``CUT_ABOVE`` operations becomes smaller functions run one after the other by a function of the old name, so
callers do not change. A value one piece computes and a later one reads goes through a slot of ``ws`` of its
own, appended to the workspace: the same operations on the same doubles, so the same bits
(``tests/test_compiled_split.py``); the slots' stores and loads cost the code a few per cent
(benchmarks/results/design_measurements.md).
"""

from __future__ import annotations

from gtdyn.compiled import dataflow, trace
from gtdyn.compiled.layout import Layout

# operations: with the fast code generator (``objects.FAST_CODEGEN_ABOVE``) a whole function of 40,000 to 130,000
# operations compiled 1.3-1.9 times slower per operation than pieces of 30,000 (its values live longer). Cut, the
# 96-joint chain's ABA and Talos's natural forward dynamics compiled a sixth faster, and their calls ran as fast or
# faster (design_measurements.md).
CUT_ABOVE = 30_000
PIECE = 30_000  # operations per piece: smaller pieces pass more values through ws


@trace.tracing
def split_large(functions: dict, layout: Layout, rare: frozenset = frozenset()) -> tuple[dict, frozenset]:
    """``functions`` with each straight-line ``trace.Function`` of over ``CUT_ABOVE`` operations (and no branch)
    cut into pieces of ``PIECE`` operations, ``<name>_1``, ``<name>_2``, …, which ``<name>`` now calls in turn; the
    slots they pass values through are appended to ``layout`` (its ``size`` grows). The other functions are
    returned as they are. And ``rare`` (names: ``native.compile_module``'s quickly compiled functions) with the
    pieces of those it names."""
    out: dict = {}
    rare = set(rare)
    for name, fn in functions.items():
        if not isinstance(fn, trace.Function) or fn.count() <= CUT_ABOVE or \
                any(op[0] == "call_unless" for op in fn.ops):
            out[name] = fn
            continue
        caller = trace.Function(name, fn.samples)
        for part in _pieces(fn, layout, PIECE):
            if part.name in functions:
                raise ValueError(f"split: a piece of {name} would be named as the function {part.name}")
            out[part.name] = part
            caller.append(("call", part.name))
            if name in rare:
                rare.add(part.name)
        out[name] = caller
    return out, frozenset(rare)


def _pieces(fn: trace.Function, layout: Layout, piece: int) -> list[trace.Function]:
    """``fn``'s live operations, in order, as functions of about ``piece`` arithmetic operations each."""
    alive = fn.live()
    home: list[int] = [-1] * len(fn.ops)  # the piece each live operation goes to
    k = count = 0
    for i, (op, keep) in enumerate(zip(fn.ops, alive)):
        if not keep:
            continue
        if count >= piece:
            k, count = k + 1, 0
        home[i] = k
        count += op[0] not in trace.NOT_ARITHMETIC
    for value, stores in dataflow.early_stores(fn).items():  # a store goes with its value where that means the
        for i in stores:  # same: a value stored at the function's end (for a later pass) need not cross pieces
            home[i] = home[value]
    crossing = [set() for _ in range(k + 1)]  # per piece: its values that later pieces read
    for i, op in enumerate(fn.ops):
        p = home[i]
        if p >= 0:
            for a in op[1:]:
                if type(a) is trace.Sym and home[a.id] != p:
                    crossing[home[a.id]].add(a.id)
    slot: dict[int, int] = {}
    for values in crossing:
        for i in sorted(values):
            slot[i], layout.size = layout.size, layout.size + 1
    pieces = [trace.Function(f"{fn.name}_{p + 1}", fn.samples) for p in range(k + 1)]
    copies: list[dict[int, trace.Sym]] = [{} for _ in pieces]  # per piece: old operation → its value there
    for i, op in enumerate(fn.ops):
        p = home[i]
        if p < 0:
            continue
        target, copy, old = pieces[p], copies[p], fn.syms[i]
        if op[0] == "load":
            copy[i] = target.load(op[1], old.val, fn.names.get(i))
            continue
        operands = []
        for a in op[1:]:
            if type(a) is trace.Sym:
                value = copy.get(a.id)
                if value is None:  # computed in an earlier piece: read from its slot
                    value = copy[a.id] = target.load(slot[a.id], a.val, fn.names.get(a.id))
                a = value
            operands.append(a)
        value = target.append((op[0], *operands), None if old is None else old.val)
        if value is not None:
            copy[i] = value
            if i in fn.names:
                target.label(value, fn.names[i])
    for p, values in enumerate(crossing):
        for i in sorted(values):
            pieces[p].store(slot[i], copies[p][i])
    return pieces
