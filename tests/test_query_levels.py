"""QueryLevels.from_labels (numba, per query) against a vectorised numpy reference (a lexsort
over (query, label)), and the bucket layout against a per-query count by hand."""

from __future__ import annotations

import numpy as np
import pytest

from rankbench.objective.query_levels import QueryLevels


def _reference(y, query_ptr):
    """The earlier implementation: one lexsort over (query, global label rank)."""
    y = np.asarray(y)
    n = y.shape[0]
    sizes = np.diff(query_ptr)
    q_of = np.repeat(np.arange(sizes.shape[0], dtype=np.int64), sizes)
    levels, grank = np.unique(y, return_inverse=True)
    grank = grank.astype(np.int64).ravel()
    qrank = np.zeros(n, dtype=np.int64)
    n_levels = np.zeros(sizes.shape[0], dtype=np.int64)
    if n:
        o = np.lexsort((grank, q_of))
        gs, qs = grank[o], q_of[o]
        new_query = np.ones(n, dtype=bool)
        new_query[1:] = qs[1:] != qs[:-1]
        new_level = new_query.copy()
        new_level[1:] |= gs[1:] != gs[:-1]
        cum = np.cumsum(new_level) - 1
        qrank[o] = cum - cum[np.flatnonzero(new_query)][np.cumsum(new_query) - 1]
        np.add.at(n_levels, qs[new_level], 1)
    return qrank, n_levels, grank, levels


@pytest.mark.parametrize("seed", range(40))
def test_ranks_equal_the_lexsort_reference(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 25, size=rng.integers(1, 40))  # empty queries too
    ptr = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    n = int(ptr[-1])
    y = (rng.choice([-1.5, 0.0, 0.5, 2.0, 7.0], size=n) if seed % 2
         else rng.integers(0, 200, size=n))  # few levels / nearly one level per document
    lv = QueryLevels.from_labels(y, ptr)
    qrank, n_levels, grank, levels = _reference(y, ptr)
    assert np.array_equal(lv.qrank, qrank)
    assert np.array_equal(lv.n_levels, n_levels)
    assert np.array_equal(lv.grank, grank)
    assert np.array_equal(lv.levels, levels)
    # buckets: query q's level r holds its documents of that label, at their sorted positions
    for q in range(sizes.shape[0]):
        o = lv.bucket_offsets[q]
        ys = np.sort(y[ptr[q]:ptr[q + 1]])
        assert lv.bucket_offsets[q + 1] - o == n_levels[q] + 1
        for r in range(n_levels[q]):
            lo, hi = lv.bucket_bounds[o + r], lv.bucket_bounds[o + r + 1]
            vals = ys[lo - ptr[q]:hi - ptr[q]]
            assert vals.size > 0 and np.all(vals == levels[lv.bucket_grank[o + r]])


def test_hand_worked_example():
    # query 0: labels 3, 1, 3, 0 -> ranks 2, 1, 2, 0; query 1: 1, 1 -> one level
    lv = QueryLevels.from_labels(np.array([3, 1, 3, 0, 1, 1]), np.array([0, 4, 6]))
    assert lv.qrank.tolist() == [2, 1, 2, 0, 0, 0]
    assert lv.n_levels.tolist() == [3, 1]
    assert lv.grank.tolist() == [2, 1, 2, 0, 1, 1]
    assert lv.n_pairs() == 5  # 3>1, 3>0 twice each, 1>0


@pytest.mark.parametrize("n_distinct", [1, 2, 63, 64, 65, 300])
def test_few_levels_pass_and_its_fallback_agree_at_the_boundary(n_distinct):
    """At most SMALL_LEVELS (64) distinct labels take the one-pass table, more take np.unique:
    both give the reference's levels and ranks (floats, negatives, runs and singletons)."""
    rng = np.random.default_rng(n_distinct)
    vals = rng.permutation(np.linspace(-3.0, 5.0, n_distinct))
    y = np.repeat(vals, rng.integers(1, 4, size=n_distinct))
    y = np.r_[y, rng.choice(vals, size=50)]
    ptr = np.array([0, y.shape[0] // 2, y.shape[0]], dtype=np.int64)
    lv = QueryLevels.from_labels(y, ptr)
    qrank, n_levels, grank, levels = _reference(y, ptr)
    assert np.array_equal(lv.levels, levels) and lv.levels.dtype == levels.dtype
    assert np.array_equal(lv.grank, grank) and np.array_equal(lv.qrank, qrank)
    assert np.array_equal(lv.n_levels, n_levels)
    assert np.array_equal(lv.levels[lv.grank], y)
