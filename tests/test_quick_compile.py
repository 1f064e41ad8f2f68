"""``gtdyn.compile(..., quick=True)`` (issue 24, item 3): LLVM's -O0 code generator and no optimization pipeline
give the same operations, so the same answers and derivatives bit for bit, compiled faster; quick and optimized
code are separate cache entries, and a pickled quick solver stays quick."""

import pickle

import numpy as np
import pytest
from references import random_states

import gtdyn

pytestmark = pytest.mark.usefixtures("private_cache")


@pytest.mark.parametrize("problem", ["inverse", "forward"])
def test_quick_code_answers_bit_for_bit_as_optimized_code(puma, problem):
    optimized = gtdyn.compile(puma, problem, derivatives=True)
    quick = gtdyn.compile(puma, problem, derivatives=True, quick=True)
    assert quick.quick and not optimized.quick
    Q, V, X = random_states(6, 50, seed=2)
    assert np.array_equal(quick.batch(Q, V, X), optimized.batch(Q, V, X))
    for a, b in zip(quick.batch_derivatives(Q, V, X), optimized.batch_derivatives(Q, V, X)):
        assert np.array_equal(a, b)
    assert np.array_equal(quick(Q[0], V[0], X[0]), optimized(Q[0], V[0], X[0]))
    assert quick.condition == optimized.condition


def test_quick_solvers_have_their_own_cache_entry_and_travel_quick(puma):
    quick = gtdyn.compile(puma, "inverse", quick=True)
    again = gtdyn.compile(puma, "inverse", quick=True)
    assert again.from_cache and again.quick and again.cache_key == quick.cache_key
    assert gtdyn.compile(puma, "inverse").cache_key != quick.cache_key
    assert pickle.loads(pickle.dumps(quick)).quick
