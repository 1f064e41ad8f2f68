"""The generated functions as Python source: what ``solver.source`` shows. Every line is one operation of the
compiled code, in the same order (``gtdyn.compiled.native`` lowers the same operations to machine code), so
the text runs too: ``exec`` it and call ``main(ws)`` on a numpy array laid out like the solver's workspace."""

from __future__ import annotations

import math

from gtdyn.compiled import trace

_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
_FUNCTIONS = {"sin": "sin", "cos": "cos", "sqrt": "sqrt", "abs": "abs"}


def render(functions: dict[str, trace.Function], header: str = "") -> str:
    """All functions, callees first, ``main`` last."""
    lines = [f'"""{header}"""' if header else "", "from math import atan2, cos, sin, sqrt", ""]
    for fn in functions.values():
        lines += (render_lanes(fn) if isinstance(fn, trace.Lanes) else render_function(fn)) + [""]
    return "\n".join(lines)


def render_lanes(lanes: trace.Lanes) -> list[str]:
    """What a ``trace.Lanes`` computes, as a loop: each lane's values through the scalar function it vectorizes
    (the machine code runs the lanes side by side)."""
    loads, stores = sorted(lanes.loads.items()), sorted(lanes.stores.items())
    return [f"def {lanes.name}(ws):",
            f'    """{lanes.fn.name} on {lanes.width} right-hand sides at once (one per lane)."""',
            *("    " + line for line in render_function(lanes.fn)),
            f"    for lane in range({lanes.width}):",
            f"        for index, start in {loads!r}:",
            "            ws[index] = ws[start + lane]",
            f"        {lanes.fn.name}(ws)",
            f"        for index, start in {stores!r}:",
            "            ws[start + lane] = ws[index]"]


def render_function(fn: trace.Function) -> list[str]:
    used = set()

    def name(sym_id: int) -> str:
        return fn.names.get(sym_id, f"t{sym_id}")

    # readable names must stay unique: the first value to claim one keeps it
    for sym_id in sorted(fn.names):
        if fn.names[sym_id] in used:
            del fn.names[sym_id]
        else:
            used.add(fn.names[sym_id])

    def operand(a) -> str:
        if trace.is_sym(a):
            return name(a.id)
        return repr(float(a)) if math.isfinite(a) else f"float('{float(a)!r}')"  # nan and inf: no Python literal

    out = [f"def {fn.name}(ws):"]
    for i, (op, keep) in enumerate(zip(fn.ops, fn.live())):
        kind = op[0]
        if not keep:
            continue
        if kind == "#":
            out.append(f"    # {op[1]}")
        elif kind == "load":
            out.append(f"    {name(i)} = ws[{op[1]}]")
        elif kind == "store":
            out.append(f"    ws[{op[1]}] = {operand(op[2])}")
        elif kind == "call":
            out.append(f"    {op[1]}(ws)")
        elif kind == "call_unless":  # one line: the usual path's calls are the lines "    name(ws)"
            out.append(f"    if {operand(op[1])} != 1.0: {op[2]}(ws)")
        elif kind in _INFIX:
            out.append(f"    {name(i)} = {operand(op[1])} {_INFIX[kind]} {operand(op[2])}")
        elif kind == "copy":
            out.append(f"    {name(i)} = {operand(op[1])}")
        elif kind == "neg":
            out.append(f"    {name(i)} = -{operand(op[1])}")
        elif kind == "le":
            out.append(f"    {name(i)} = float({operand(op[1])} <= {operand(op[2])})")
        elif kind == "select":
            out.append(f"    {name(i)} = {operand(op[2])} if {operand(op[1])} else {operand(op[3])}")
        elif kind == "atan2":
            out.append(f"    {name(i)} = atan2({operand(op[1])}, {operand(op[2])})")
        else:
            out.append(f"    {name(i)} = {_FUNCTIONS[kind]}({operand(op[1])})")
    if len(out) == 1:
        out.append("    pass")
    return out
