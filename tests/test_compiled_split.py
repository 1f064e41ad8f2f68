"""``gtdyn.compiled.split``: big straight-line functions cut into pieces that pass values through ``ws`` give the
same bits as the whole function, in scalar code, in SIMD lanes and through the certificate's branches."""

from __future__ import annotations

import numpy as np

import gtdyn
from gtdyn.bench.compiled import batch_states, chain_with_urdf
from gtdyn.compiled import split, trace
from gtdyn.compiled.certificate import BY_BOUND, BY_SCHUR
from gtdyn.compiled.layout import Layout


def test_pieces_pass_each_crossing_value_through_a_slot_of_its_own(monkeypatch):
    """A function of five operations in pieces of two: each piece computes its share, reads what earlier pieces
    computed from new slots past the old workspace, and the function of the old name calls the pieces in turn."""
    fn = trace.Function("f", 1)
    a, b = fn.load(0, np.array([2.0])), fn.load(1, np.array([3.0]))
    s = a + b
    p = s * a
    d = p - b
    e = d / s
    fn.store(2, e * p)
    layout = Layout(n=1, outputs=0, rows=0, unknowns=0)
    size = layout.size
    monkeypatch.setattr(split, "CUT_ABOVE", 4)
    monkeypatch.setattr(split, "PIECE", 2)
    functions, rare = split.split_large({"f": fn}, layout, frozenset({"f"}))
    assert list(functions) == ["f_1", "f_2", "f_3", "f"]
    assert rare == {"f", "f_1", "f_2", "f_3"}
    assert [op for op in functions["f"].ops] == [("call", "f_1"), ("call", "f_2"), ("call", "f_3")]
    assert [piece.count() for piece in (functions[f"f_{k}"] for k in (1, 2, 3))] == [2, 2, 1]
    # s, p, a, b are read after their piece: four slots; d is read in its own piece
    assert layout.size == size + 4
    ws = np.zeros(layout.size)
    ws[:2] = 2.0, 3.0
    for k in (1, 2, 3):
        _run(functions[f"f_{k}"], ws)
    assert ws[2] == ((2.0 + 3.0) * 2.0 - 3.0) / (2.0 + 3.0) * ((2.0 + 3.0) * 2.0)


def test_a_value_stored_at_the_end_is_stored_in_its_own_piece(monkeypatch):
    """A value a function stores at its end for a later pass (as ``Slots`` appends to ``factor``) is stored in the
    piece that computes it, where that means the same (``dataflow.early_stores``): it needs no slot, and the last
    piece does not load and store it again. A store with a load of its entry between stays where it was."""
    fn = trace.Function("f", 1)
    a, b = fn.load(0, np.array([2.0])), fn.load(1, np.array([3.0]))
    s = a + b
    p = s * a
    d = p - b
    e = d * b
    fn.store(2, e * p)
    fn.store(3, s)  # moves to the first piece, where s is computed
    t = fn.load(4, np.array([0.5]))
    fn.store(4, p)  # stays after the load of its entry: p crosses to the last piece
    fn.store(5, t)
    layout = Layout(n=1, outputs=0, rows=0, unknowns=0)
    size = layout.size
    monkeypatch.setattr(split, "CUT_ABOVE", 4)
    monkeypatch.setattr(split, "PIECE", 2)
    functions, _ = split.split_large({"f": fn}, layout, frozenset())
    first = functions["f_1"]
    assert ("store", 3, first.syms[2]) in first.ops and first.ops[2][0] == "add"
    # b, p and e are read by later pieces (p by the last one's store too); s, stored where it is computed, is not
    assert layout.size == size + 3
    ws = np.zeros(layout.size)
    ws[:2], ws[4] = (2.0, 3.0), 0.5
    for k in range(1, len(functions)):
        _run(functions[f"f_{k}"], ws)
    assert ws[3] == 5.0 and ws[4] == 10.0 and ws[5] == 0.5 and ws[2] == (10.0 - 3.0) * 3.0 * 10.0


def _run(fn: trace.Function, ws: np.ndarray) -> None:
    """A straight-line function evaluated by numpy, operation by operation (loads, stores and arithmetic)."""
    value = {}
    for i, op in enumerate(fn.ops):
        def arg(a):
            return value[a.id] if trace.is_sym(a) else a
        if op[0] == "load":
            value[i] = ws[op[1]]
        elif op[0] == "store":
            ws[op[1]] = arg(op[2])
        elif op[0] != "#":
            rule = trace.UNARY.get(op[0]) or trace.BINARY[op[0]]
            value[i] = rule(*(arg(a) for a in op[1:]))


def test_a_robot_compiled_in_pieces_gives_the_same_bits(monkeypatch, tmp_path):
    """A 13-link chain's RNEA (a plan certified three ways: u, Schur's u_S, the estimate) with every function of
    over 600 operations in pieces of 300 — the factor, the solves, the estimate's ``exact`` — gives, one call at a time
    and in SIMD lanes (lane groups whose lanes take different branches), the same answers, verdicts, ways and κ as
    compiled whole."""
    chain = chain_with_urdf(13, str(tmp_path))[0]
    whole = gtdyn.compile(chain, "inverse", use_cache=False, lanes=False)  # the lanes' bits are the scalar code's
    monkeypatch.setattr(split, "CUT_ABOVE", 600)
    monkeypatch.setattr(split, "PIECE", 300)
    cut = gtdyn.compile(chain, "inverse", use_cache=False, lanes=True)
    assert cut._size > whole._size  # the slots between pieces
    Q, V, X = batch_states(chain, "inverse", None, 64)
    ways = set()
    for q, v, x in zip(Q, V, X):
        assert np.array_equal(cut(q, v, x), whole(q, v, x))
        assert cut._ws[cut._bounded] == whole._ws[whole._bounded]
        ways.add(whole._ws[whole._bounded])
        assert (cut.condition, cut.backward_error) == (whole.condition, whole.backward_error)
    assert ways == {0.0, BY_BOUND, BY_SCHUR}  # every branch ran
    assert cut.lanes and np.array_equal(cut.batch(Q, V, X), whole.batch(Q, V, X))
