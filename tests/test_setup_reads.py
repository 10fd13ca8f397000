"""A fit's set-up reads X once: the check's pass gives max |x| and the column norms
(``data.ranking_data.feature_stats``), f at the last point is not evaluated twice
(``PairOracle.fun``), the margins after a fit come from the oracle's state
(``objective.margin_pairs``), and label ranks come from a table for few levels
(``QueryLevels``).  Each against a plain numpy reference."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from rankbench.data.ranking_data import check_feature_matrix, feature_stats
from rankbench.objective import make_oracle, margin_pairs, pairs_with_margin
from rankbench.objective.query_levels import SMALL_LEVELS, QueryLevels


def _problem(n_queries=40, seed=0, d=7, levels=3):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 30, n_queries)
    ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    X = rng.standard_normal((ptr[-1], d))
    y = rng.integers(0, levels, ptr[-1])
    return X, y, ptr


@pytest.mark.parametrize("n", [0, 1, 5, 16_385, 40_000])
def test_feature_stats_dense_against_numpy(n):
    rng = np.random.default_rng(n)
    X = rng.standard_normal((n, 9)) * np.logspace(-3, 3, 9)
    bad, st = feature_stats(X)
    assert bad == 0
    assert st.max_abs == (np.abs(X).max() if n else 0.0)
    np.testing.assert_allclose(st.col_sq_norms, (X * X).sum(axis=0), rtol=1e-12)


def test_feature_stats_counts_nan_inf_and_survives_overflowing_squares():
    X = np.ones((20_000, 4))
    X[3, 1] = np.nan
    X[19_999, 2] = -np.inf
    X[7, 0] = 1e200  # its square overflows: counted exactly, still finite
    bad, st = feature_stats(X)
    assert bad == 2
    X[3, 1] = X[19_999, 2] = 0.5
    bad, st = feature_stats(X)
    assert bad == 0 and st.max_abs == 1e200 and np.isinf(st.col_sq_norms[0])
    with pytest.raises(ValueError, match="first at row 3"):
        X[3, 1] = np.nan
        check_feature_matrix(X)


def test_feature_stats_csr_against_numpy():
    rng = np.random.default_rng(1)
    X = sp.csr_matrix(sp.random(30_000, 50, density=0.05, random_state=2, format="csr"))
    X.data = X.data * 10 - 3
    bad, st = feature_stats(X)
    assert bad == 0 and st.col_sq_norms is None
    assert st.max_abs == np.abs(X.data).max()
    X.data[rng.integers(0, X.nnz, 3)] = [np.nan, np.inf, -np.inf]
    assert feature_stats(X)[0] == 3
    assert feature_stats(sp.csr_matrix((4, 3)))[1].max_abs == 0.0


def test_oracle_keeps_the_checks_stats():
    X, y, ptr = _problem()
    o = make_oracle("tree", X, y, ptr, C=0.1)
    assert o.max_abs_x == np.abs(X).max()
    np.testing.assert_allclose(o.col_sq_norms, (X * X).sum(axis=0), rtol=1e-12)


@pytest.mark.parametrize("oracle", ["tree", "counting", "pairs", "brute"])
def test_fun_at_the_last_point_is_not_evaluated_again(oracle, monkeypatch):
    X, y, ptr = _problem(seed=3)
    o = make_oracle(oracle, X, y, ptr, C=0.3)
    calls = []
    real = type(o)._loss_at

    def counted(self, w):
        calls.append(1)
        return real(self, w)

    monkeypatch.setattr(type(o), "_loss_at", counted)
    w = np.random.default_rng(0).standard_normal(X.shape[1])
    f = o.fun(w)
    assert o.fun(w.copy()) == f and len(calls) == 1
    w2 = w + 1e-3
    f2 = o.fun(w2)
    assert len(calls) == 2 and f2 != f
    assert o.fun(w) == f and len(calls) == 3  # back at w: evaluated (the state was w2's)
    o.C = 0.6  # another C: evaluated
    assert o.fun(w) != f and len(calls) == 4
    o.loss_at_scores(o.scores(w2))  # the state is of other scores now: evaluated again
    o.fun(w)
    assert len(calls) == 5
    assert o.fun(w) == o.fun(w) and len(calls) == 5  # cached: grad and Hv are of this w
    ref = make_oracle("brute", X, y, ptr, C=0.6)
    assert ref.fun(w) == pytest.approx(o.fun(w), rel=1e-12)
    np.testing.assert_allclose(o.grad(w), ref.grad(w), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("oracle", ["tree", "counting", "direct", "pairs"])
def test_margin_pairs_equals_pairs_with_margin(oracle):
    X, y, ptr = _problem(seed=4, levels=4)
    X[:, 2] += 1e7  # an offset column: the products centre it per query
    o = make_oracle(oracle, X, y, ptr, C=1.0)
    rng = np.random.default_rng(5)
    for _ in range(3):
        w = rng.standard_normal(X.shape[1])
        ref = pairs_with_margin(w, X, y, ptr)
        assert margin_pairs(o, w) == ref  # before any fun at w
        o.fun(w)
        assert margin_pairs(o, w) == ref  # from the last fun's state
        o.fun(w * 0.5)
        assert margin_pairs(o, w) == ref  # the state is of another w


def test_margin_pairs_with_a_score_shift_counts_margins_of_xw():
    X, y, ptr = _problem(seed=6, levels=4)
    o = make_oracle("tree", X, y, ptr, C=1.0, rescaling="margin", delta="gain")
    assert o._score_shift is not None  # the case: scores shifted per document
    w = np.random.default_rng(7).standard_normal(X.shape[1])
    o.fun(w)
    assert margin_pairs(o, w) == pairs_with_margin(w, X, y, ptr)


def _ranks_reference(y, ptr):
    qrank = np.zeros(y.shape[0], dtype=np.int64)
    n_levels = np.zeros(ptr.shape[0] - 1, dtype=np.int64)
    for q in range(ptr.shape[0] - 1):
        a, b = ptr[q], ptr[q + 1]
        if b > a:
            vals = np.unique(y[a:b])
            n_levels[q] = vals.shape[0]
            qrank[a:b] = np.searchsorted(vals, y[a:b])
    return qrank, n_levels


@pytest.mark.parametrize("n_labels", [1, 2, 5, SMALL_LEVELS, SMALL_LEVELS + 1, 3000])
def test_label_ranks_table_and_sort_paths_against_numpy(n_labels):
    rng = np.random.default_rng(n_labels)
    sizes = rng.integers(0, 60, 700)  # empty queries too, over more than one block of queries
    ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    y = rng.integers(0, n_labels, ptr[-1]) * 3 + 1
    lv = QueryLevels.from_labels(y, ptr)
    qrank, n_levels = _ranks_reference(y, ptr)
    np.testing.assert_array_equal(lv.qrank, qrank)
    np.testing.assert_array_equal(lv.n_levels, n_levels)


def test_bench_fun_grad_call_evaluates_every_time(monkeypatch):
    """The benches time f+gradient through ``fun_grad_call``: every call evaluates (none is the
    cached f of the last point), at points within an ulp of w."""
    from rankbench.bench.ranksvm import fun_grad_call

    X, y, ptr = _problem(seed=8)
    o = make_oracle("tree", X, y, ptr, C=0.2)
    w = np.random.default_rng(9).standard_normal(X.shape[1])
    f = o.fun(w)
    calls = []
    real = type(o)._loss_at
    monkeypatch.setattr(type(o), "_loss_at", lambda self, x: calls.append(x.copy()) or real(self, x))
    call = fun_grad_call(o, w)
    for _ in range(4):
        fc, _ = call()
        assert fc == pytest.approx(f, rel=1e-12)
    assert len(calls) == 4 and not any(np.array_equal(x, w) for x in calls)


def test_a_fit_reads_X_for_its_checks_once_and_gets_the_same_bits(monkeypatch):
    """``RankSVM.fit`` checks X in ``RankingData.from_arrays``; the oracle takes that check's
    stats (``RankingData.checked_stats``) instead of reading X again.  Same coefficients, to the
    bit, as a fit whose oracle reads X itself."""
    import rankbench.data.ranking_data as rd
    from rankbench import RankSVM
    from rankbench.data import RankingData

    X, y, ptr = _problem(seed=3)
    qid = np.repeat(np.arange(ptr.shape[0] - 1), np.diff(ptr))
    reads = []
    kernel = rd._dense_stats

    def counted(a):
        if a.shape == X.shape:  # not the warm-up's toy problems
            reads.append(a.shape)
        return kernel(a)

    monkeypatch.setattr(rd, "_dense_stats", counted)
    shared = RankSVM(C=0.1, solver="tron_tree").fit(X, y, qid=qid)
    assert len(reads) == 1
    monkeypatch.setattr(RankingData, "checked_stats", lambda self, X: None)
    own = RankSVM(C=0.1, solver="tron_tree").fit(X, y, qid=qid)
    assert len(reads) == 3  # the check, then the oracle's own read
    assert np.array_equal(shared.coef_, own.coef_)


def test_checked_stats_belong_to_the_array_checked_only():
    from dataclasses import replace

    from rankbench.data import RankingData

    X, y, ptr = _problem(seed=4)
    qid = np.repeat(np.arange(ptr.shape[0] - 1), np.diff(ptr))
    data = RankingData.from_arrays(X, y, qid)
    st = data.checked_stats(data.X)
    assert st is not None and st.max_abs == np.abs(X).max()
    np.testing.assert_allclose(st.col_sq_norms, (X * X).sum(axis=0), rtol=1e-12)
    assert data.checked_stats(X.copy()) is None  # another array
    assert replace(data, X=X.copy()).checked_stats(data.X) is None  # not carried by replace
    assert replace(data, X=X.copy()).checked_stats(X) is None
    mixed = RankingData.from_arrays(X, y, np.random.default_rng(0).permutation(qid))  # interleaved
    assert mixed.meta["order"] is not None and mixed.checked_stats(mixed.X) is None
    assert data.subset_queries(np.arange(3)).checked_stats(data.X) is None
