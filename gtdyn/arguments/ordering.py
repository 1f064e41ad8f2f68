"""The ``ordering=`` argument at the boundary: labels and keys, the strategies' names, callables and their answers,
and whether an explicit ordering orders exactly the graph's unknowns. ``gtdyn.orderings`` resolves it."""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Callable, Mapping

import gtsam
import numpy as np

from gtdyn import keys
from gtdyn.errors import ArgumentError
from gtdyn.problem import PROBLEM_KINDS


def ordering_key(x) -> int:
    """A label such as 'A1' or a gtsam key, as a key."""
    if isinstance(x, str):
        try:
            return keys.parse_label(x)
        except ValueError as e:
            raise ArgumentError(f"ordering: {e}") from None
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        if not 0 <= int(x) < 1 << 64:  # a gtsam Key is an unsigned 64-bit number
            raise ArgumentError(f"ordering: {int(x)} is not a key (keys are 0 … 2⁶⁴ − 1; labels such as 'A1' are "
                                "easier)")
        return int(x)
    raise ArgumentError(f"ordering: {x!r} is neither a variable label (such as 't1', 'F2', 'A3', 'a1') nor a key")


def checked_order(order: list[int], wanted: list[int]) -> list[int]:
    """``order`` if it lists each of the ``wanted`` keys (the graph's unknowns) exactly once, else an
    ArgumentError saying which are foreign, missing or repeated."""
    wanted_set, order_set = set(wanted), set(order)
    unknown = [keys.label(k) for k in order if k not in wanted_set]
    missing = [keys.label(k) for k in wanted if k not in order_set]
    repeated = [] if len(order_set) == len(order) else sorted(
        keys.label(k) for k, count in Counter(order).items() if count > 1)
    problems = [f"{what}: {', '.join(labels)}" for what, labels in (
        ("not unknowns of this problem", unknown), ("missing", missing), ("repeated", repeated)) if labels]
    if problems:
        raise ArgumentError("ordering: " + "; ".join(problems)
                            + f" (the unknowns are {', '.join(keys.label(k) for k in wanted)})")
    return order


def strategy_kinds(name, fn, problems) -> tuple[str, ...]:
    """``register_ordering``'s arguments checked; the problem kinds as a tuple (one kind may be given bare)."""
    if isinstance(problems, str) or not isinstance(problems, (tuple, list, set, frozenset)):
        problems = (problems,)  # one kind given bare (or not a kind at all: refused below)
    unknown = [p for p in problems if not isinstance(p, str) or p not in PROBLEM_KINDS]
    if unknown or not problems or not callable(fn) or not isinstance(name, str) or not name:
        raise ArgumentError(f"register_ordering: need a name, a callable and problem kinds among "
                            f"{', '.join(PROBLEM_KINDS)}; got {name!r}, {fn!r}, {problems!r}")
    return tuple(problems)


def applicable_strategy(name: str, kind: str, applies_to: Mapping[str, tuple[str, ...]]) -> str:
    """``name`` if it is a registered strategy that applies to ``kind`` dynamics, else an ArgumentError naming
    those that do."""
    if name not in applies_to:
        raise ArgumentError(f"ordering: unknown strategy '{name}'; known: {', '.join(applies_to)}")
    if kind not in applies_to[name]:
        fitting = [other for other, kinds in applies_to.items() if kind in kinds]
        raise ArgumentError(f"ordering: '{name}' applies to {' and '.join(applies_to[name])} dynamics, not {kind}; "
                            f"for {kind} dynamics use {', '.join(fitting)} or an explicit list")
    return name


def called_ordering(fn: Callable, *arguments):
    """What a callable ordering returns for ``(robot, problem, graph)``, checked to be something an ordering can
    be made of (a name, a list, a gtsam.Ordering), not None or another callable."""
    name = getattr(fn, "__name__", fn)
    try:
        inspect.signature(fn).bind(*arguments)
    except TypeError:
        raise ArgumentError(f"ordering: a callable ordering is called as ordering(robot, problem, graph); {name!r} "
                            "cannot take those three") from None
    except ValueError:  # no signature to inspect (some builtins): call it and see
        pass
    chosen = fn(*arguments)
    if chosen is None or callable(chosen) and not isinstance(chosen, gtsam.Ordering):
        raise ArgumentError(f"ordering: the callable {name!r} returned {type(chosen).__name__}; it must return a "
                            "strategy name, a list of labels/keys or a gtsam.Ordering")
    return chosen


def not_an_ordering(ordering) -> ArgumentError:
    return ArgumentError(f"ordering: expected a strategy name, a list of labels/keys or a callable, got "
                         f"{type(ordering).__name__}")
