"""What a traced function's values reach, read off its finished code (``trace.Function``): which inputs each
stored value depends on (``dependence``), and where each store may be written (``early_stores``)."""

from __future__ import annotations

from gtdyn.compiled.trace import Function, Sym, is_sym


def dependence(fn: Function, sources: dict[int, int]) -> dict[int, int]:
    """For each index ``fn`` stores to: which of the loads from ``sources`` (ws index → bit) its value depends on,
    as a bit mask — the structure of a linear map, e.g. which entries of y = A⁻ᵀ z each entry of z reaches."""
    masks = [0] * len(fn.ops)
    stored = {}
    for i, op in enumerate(fn.ops):
        kind = op[0]
        if kind == "load":
            masks[i] = 1 << sources[op[1]] if op[1] in sources else 0
        elif kind == "store":
            stored[op[1]] = masks[op[2].id] if is_sym(op[2]) else 0
        elif kind in ("call", "call_unless"):
            raise ValueError(f"{fn.name}: dependence through a call is not traced")
        elif kind != "#":
            for a in op[1:]:
                if type(a) is Sym:
                    masks[i] |= masks[a.id]
    return stored


# Each store is written right after the operation that computes its value, where that means the same
# (``early_stores``), not where it was traced: a traced function may compute many values and store them at its end
# (the derivatives' partial derivatives), which keeps them all live at once; LLVM's schedulers do not undo that
# across thousands of instructions, and its register allocator spills. Stored early, the code compiles up to 15 %
# faster and runs as fast or faster (benchmarks/results/design_measurements.md).
EARLY_STORES = True


def early_stores(fn: Function) -> dict[int, list[int]]:
    """Stores that may be written right after the operation computing their value: no call and no other access
    to the same ``ws`` entry lies between (so the function's effect is the same). Definition → the stores moved
    there; none unless ``EARLY_STORES``."""
    moved: dict[int, list[int]] = {}
    if not EARLY_STORES:
        return moved
    last_call, last_access = -1, {}
    for i, op in enumerate(fn.ops):
        kind = op[0]
        if kind in ("call", "call_unless"):
            last_call = i
        elif kind == "load":
            last_access[op[1]] = i
        elif kind == "store":
            value = op[2]
            if is_sym(value) and value.id > max(last_call, last_access.get(op[1], -1)):
                moved.setdefault(value.id, []).append(i)
            last_access[op[1]] = i
    return moved


def loaded_unwritten(fn: Function) -> dict[int, int]:
    """Values ``fn`` loads from a ``ws`` entry that it never stores to: value → the entry."""
    written = {op[1] for op in fn.ops if op[0] == "store"}
    return {i: op[1] for i, op in enumerate(fn.ops) if op[0] == "load" and op[1] not in written}


def stored_once(fn: Function) -> dict[int, int]:
    """Values ``fn`` stores to a ``ws`` entry that it stores nothing else to and never loads: value → the entry."""
    stores: dict[int, list] = {}
    loaded = {op[1] for op in fn.ops if op[0] == "load"}
    for op in fn.ops:
        if op[0] == "store":
            stores.setdefault(op[1], []).append(op[2])
    return {values[0].id: index for index, values in stores.items()
            if len(values) == 1 and is_sym(values[0]) and values[0].fn is fn and index not in loaded}
