"""The multithreaded X products, sorts and oracle passes against scipy / numpy references and
against themselves on one thread (bit-for-bit: the blocks do not depend on the thread count)."""

from __future__ import annotations

import numba
import numpy as np
import pytest
import scipy.sparse as sp

from rankbench.objective import make_oracle
from rankbench.objective.products import XProducts, max_blocks, query_blocks, row_blocks
from rankbench.objective.query_levels import QueryLevels
from rankbench.objective.score_order import group_order_by_level, sort_within_queries

needs_two_threads = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                                       reason="numba has one thread here (NUMBA_NUM_THREADS=1)")


def _problem(sparse: bool, n_queries: int = 300, d: int = 23, seed: int = 0):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 60, size=n_queries)
    n = int(sizes.sum())
    qid = np.repeat(np.arange(n_queries), sizes)
    y = rng.integers(0, 4, size=n).astype(np.float64)
    if sparse:
        X = sp.random(n, d, density=0.2, format="csr", random_state=seed)
        X.sort_indices()
    else:
        X = rng.standard_normal((n, d))
    ptr = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    return X, y, qid, ptr


def _reference_diag(X, w, ptr):
    """The Jacobi sum the way it was computed before the kernels: X o X and a per-query sum matrix."""
    sizes = np.diff(ptr)
    q_of = np.repeat(np.arange(sizes.shape[0]), sizes)
    X2 = X.multiply(X).tocsr() if sp.issparse(X) else X * X
    sq = np.asarray(X2.T @ w).ravel()
    S = sp.csr_matrix((w, (q_of, np.arange(X.shape[0]))), shape=(sizes.shape[0], X.shape[0]))
    M = S @ X
    M = M.multiply(M).tocsr() if sp.issparse(M) else np.asarray(M) ** 2
    tot = np.bincount(q_of, weights=w, minlength=sizes.shape[0])
    inv = np.divide(1.0, tot, out=np.zeros_like(tot), where=tot > 0)
    return sq - np.asarray(M.T @ inv).ravel()


@pytest.mark.parametrize("sparse", [False, True])
def test_products_equal_scipy(sparse):
    X, y, qid, ptr = _problem(sparse)
    rng = np.random.default_rng(1)
    v = rng.standard_normal(X.shape[1])
    z = rng.standard_normal(X.shape[0])
    w = np.abs(rng.standard_normal(X.shape[0])) * (rng.random(X.shape[0]) < 0.7)
    P = XProducts(X, ptr)
    assert P.blocks.shape[0] - 1 >= 1
    np.testing.assert_allclose(P.matvec(v), np.asarray(X @ v).ravel(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(P.rmatvec(z), np.asarray(X.T @ z).ravel(), rtol=1e-12, atol=1e-11)
    np.testing.assert_allclose(P.hess_diag_sum(w), _reference_diag(X, w, ptr), rtol=1e-10, atol=1e-10)


def test_one_query_and_empty_queries():
    X, y, qid, _ = _problem(True, n_queries=1)
    ptr = np.array([0, 0, X.shape[0], X.shape[0]], dtype=np.int64)  # empty queries around one
    w = np.linspace(0.0, 2.0, X.shape[0])
    np.testing.assert_allclose(XProducts(X, ptr).hess_diag_sum(w), _reference_diag(X, w, ptr),
                               rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("sparse", [False, True])
def test_diagonal_of_a_query_larger_than_one_thread_takes(sparse):
    """A query of more than BIG_QUERY_ROWS rows is summed by blocks of its rows on every thread:
    the same diagonal as the reference, beside small queries and an all-zero-weight query, and the
    same bits on one thread as on two."""
    from rankbench.objective.products import BIG_QUERY_ROWS

    rng = np.random.default_rng(11)
    sizes = np.array([5, BIG_QUERY_ROWS + 4321, 17, 0, 40, BIG_QUERY_ROWS + 1])
    n = int(sizes.sum())
    ptr = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    X = (sp.random(n, 19, density=0.2, format="csr", random_state=11) if sparse
         else rng.standard_normal((n, 19)))
    w = np.abs(rng.standard_normal(n)) * (rng.random(n) < 0.6)
    w[ptr[5]:ptr[6]] = 0.0  # a large query without curvature: adds nothing
    P = XProducts(X, ptr)
    assert list(P._big_queries) == [1, 5]
    np.testing.assert_allclose(P.hess_diag_sum(w), _reference_diag(X, w, ptr), rtol=1e-10,
                               atol=1e-9)
    if numba.config.NUMBA_NUM_THREADS >= 2:
        before = numba.get_num_threads()
        try:
            numba.set_num_threads(1)
            one = XProducts(X, ptr).hess_diag_sum(w)
            numba.set_num_threads(2)
            two = XProducts(X, ptr).hess_diag_sum(w)
        finally:
            numba.set_num_threads(before)
        assert np.array_equal(one, two)


def test_block_layout():
    assert max_blocks(10, 5, 50) == 1
    assert max_blocks(10**6, 47236, 75 * 10**6) == 32
    # the accumulator (blocks x d) stays within a quarter of the stored values
    assert max_blocks(10**6, 10**6, 75 * 10**6) * 10**6 <= 75 * 10**6 / 4
    b = row_blocks(10, 3)
    assert b[0] == 0 and b[-1] == 10 and np.all(np.diff(b) > 0)
    ptr = np.array([0, 5, 6, 20, 21, 40], dtype=np.int64)
    qb = query_blocks(ptr, 4)
    assert qb[0] == 0 and qb[-1] == 5 and np.all(np.diff(qb) > 0)


def test_sort_within_queries_is_a_stable_sort_whatever_the_seed():
    rng = np.random.default_rng(3)
    X, y, qid, ptr = _problem(False, n_queries=200)
    z = np.round(rng.standard_normal(X.shape[0]), 1)  # many ties
    want = np.concatenate([a + np.argsort(z[a:b], kind="stable") for a, b in zip(ptr[:-1], ptr[1:], strict=True)])
    assert np.array_equal(sort_within_queries(z, ptr), want)
    # seeded by: the answer itself, the identity, a random permutation within each query
    perm = np.concatenate([a + rng.permutation(b - a) for a, b in zip(ptr[:-1], ptr[1:], strict=True)])
    for prev in (want, np.arange(X.shape[0]), perm):
        assert np.array_equal(sort_within_queries(z, ptr, prev.astype(np.int64)), want)
        # in place, the seed array also the output (the sweep oracles' reuse)
        buf = prev.astype(np.int64)
        assert sort_within_queries(z, ptr, buf, out=buf) is buf and np.array_equal(buf, want)
    # queries whose scores are all equal (w = 0 ties every query) take the order by index without
    # a sort; the others beside them still sort, and a tie broken in the last place is no tie
    zt = z.copy()
    for q in range(0, 200, 3):
        zt[ptr[q]:ptr[q + 1]] = 0.25 * q
    zt[ptr[3]] = np.nextafter(0.75, 1.0)
    want_t = np.concatenate([a + np.argsort(zt[a:b], kind="stable")
                             for a, b in zip(ptr[:-1], ptr[1:], strict=True)])
    assert not np.array_equal(want_t[ptr[3]:ptr[4]], np.arange(ptr[3], ptr[4]))
    for prev in (None, perm.astype(np.int64)):
        assert np.array_equal(sort_within_queries(zt, ptr, prev), want_t)
    assert np.array_equal(sort_within_queries(np.zeros_like(z), ptr), np.arange(X.shape[0]))


def test_group_order_by_level_is_stable_within_levels():
    X, y, qid, ptr = _problem(False, n_queries=100)
    z = np.random.default_rng(4).standard_normal(X.shape[0])
    lv = QueryLevels.from_labels(y, ptr)
    order = sort_within_queries(z, ptr)
    out = np.full(X.shape[0], -1, dtype=np.int64)
    border = group_order_by_level(order, ptr, lv.qrank, lv.n_levels, lv.bucket_bounds,
                                  lv.bucket_offsets, out)
    assert border is out
    want = np.concatenate([a + np.lexsort((z[a:b], y[a:b])) for a, b in zip(ptr[:-1], ptr[1:], strict=True)])
    assert np.array_equal(border, want)


@pytest.mark.parametrize("levels", [2, 5])
def test_group_order_by_level_of_a_wide_query_is_the_stable_partition(levels):
    """The wide query (``score_order.wide_query``: one holding most documents) is partitioned on
    two threads, its first half filling each bucket forward from its start and its second half
    backward from its end; the result is the stable partition of the score order by label
    (numpy's lexsort), with levels that one half lacks and tied scores."""
    from rankbench.objective.score_order import WIDE_DOCS, wide_query

    rng = np.random.default_rng(5)
    sizes = [7, WIDE_DOCS + 1001, 3, 12]
    ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(ptr[-1])
    y = rng.integers(0, levels, n).astype(float)
    a, b = ptr[1], ptr[2]
    y[a:(a + b) // 2][y[a:(a + b) // 2] == levels - 1] = 0  # the top level only in the second half
    z = np.round(rng.standard_normal(n), 2)  # ties
    assert wide_query(ptr) == 1
    lv = QueryLevels.from_labels(y, ptr)
    order = sort_within_queries(z, ptr)
    border = group_order_by_level(order, ptr, lv.qrank, lv.n_levels, lv.bucket_bounds,
                                  lv.bucket_offsets, np.full(n, -1, dtype=np.int64))
    # within a level, the score order (ties by document index, as the sort leaves them)
    want = np.concatenate([lo + np.lexsort((np.arange(hi - lo), z[lo:hi], y[lo:hi]))
                           for lo, hi in zip(ptr[:-1], ptr[1:], strict=True)])
    assert np.array_equal(border, want)


def _oracle_answers(name, X, y, ptr, w, v):
    o = make_oracle(name, X, y, ptr, C=0.1)
    f = o.fun(w)
    return f, o.grad(w), o.hess_vec(v), o.hess_diag()


@needs_two_threads
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("oracle", ["tree", "counting"])
@pytest.mark.parametrize("n_queries", [400, 1500])  # one block (separate products); fused
def test_oracles_are_the_same_on_one_thread_and_two(oracle, sparse, n_queries):
    X, y, qid, ptr = _problem(sparse, n_queries=n_queries)
    rng = np.random.default_rng(5)
    w = rng.standard_normal(X.shape[1])
    v = rng.standard_normal(X.shape[1])
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = _oracle_answers(oracle, X, y, ptr, w, v)
        numba.set_num_threads(2)
        two = _oracle_answers(oracle, X, y, ptr, w, v)
    finally:
        numba.set_num_threads(before)
    assert one[0] == two[0]
    for a, b in zip(one[1:], two[1:], strict=True):
        assert np.array_equal(a, b)
    # and both agree with the brute-force oracle
    brute = _oracle_answers("brute", X, y, ptr, w, v)
    assert one[0] == pytest.approx(brute[0], rel=1e-12)
    np.testing.assert_allclose(one[1], brute[1], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(one[2], brute[2], rtol=1e-10, atol=1e-10)


@needs_two_threads
def test_fit_is_bit_identical_with_one_thread_and_two():
    from rankbench import RankSVM

    X, y, qid, ptr = _problem(False, n_queries=1500, d=15)
    m1 = RankSVM(C=0.1, solver="tron_tree", n_jobs=1).fit(X, y, qid)
    m2 = RankSVM(C=0.1, solver="tron_tree", n_jobs=2).fit(X, y, qid)
    assert np.array_equal(m1.coef_, m2.coef_)
    assert m1.objective_ == m2.objective_


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("oracle", ["tree", "counting"])
@pytest.mark.parametrize("loss", ["squared_hinge", "hinge", "huber"])
def test_fused_pass_equals_the_separate_products(oracle, sparse, loss):
    """One read of X per evaluation (objective/fused.py) against X w, the loss pass, X^T g."""
    X, y, qid, ptr = _problem(sparse, n_queries=1500)  # ~45k rows: 10 blocks of queries
    rng = np.random.default_rng(6)
    fused = make_oracle(oracle, X, y, ptr, C=0.3, loss=loss)
    plain = make_oracle(oracle, X, y, ptr, C=0.3, loss=loss)
    assert fused._fused  # the queries fill enough blocks to fuse
    plain.fused_kernels = None  # the separate products of the base class
    for _ in range(3):  # later calls start their sort from the previous order
        w = rng.standard_normal(X.shape[1])
        assert fused.fun(w) == pytest.approx(plain.fun(w), rel=1e-13)
        np.testing.assert_allclose(fused.grad(w), plain.grad(w), rtol=1e-12, atol=1e-12)
        # two summation orders of the same dot products: equal to rounding
        np.testing.assert_allclose(fused.grad_scores(), plain.grad_scores(), rtol=1e-12, atol=1e-12)
        if fused.loss.has_hessian:
            v = rng.standard_normal(X.shape[1])
            np.testing.assert_allclose(fused.hess_vec(v), plain.hess_vec(v), rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(fused.hess_diag(), plain.hess_diag(), rtol=1e-12)


@pytest.mark.parametrize("k", [2, 5])
def test_tree_sweeps_of_a_long_query_over_ordered_copies(k):
    """A long query beside a short one (each query is swept over score-ordered copies in scratch
    sized by the longest query of its chunk): the same f, gradient and Hv as the counting oracle
    (an independent implementation), sparse and dense."""
    rng = np.random.default_rng(k)
    n = 5596
    X = sp.random(n, 40, density=0.1, format="csr", random_state=k)
    y = rng.integers(0, k, size=n)
    ptr = np.array([0, 3, n], dtype=np.int64)  # a short query, then the long one
    w, v = rng.standard_normal(40), rng.standard_normal(40)
    for Xf in (X, X.toarray()):
        t = _oracle_answers("tree", Xf, y, ptr, w, v)
        c = _oracle_answers("counting", Xf, y, ptr, w, v)
        assert t[0] == pytest.approx(c[0], rel=1e-12)
        for a, b in zip(t[1:3], c[1:3], strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-9)


def test_a_copy_evaluates_without_touching_the_original_state():
    """TRON's cg_history probe is a copy.copy of the oracle: its fun must not overwrite the fused
    buffers (order, z, dL/dz, curvature) the original's Hv reads."""
    import copy

    X, y, qid, ptr = _problem(False, n_queries=1500)
    rng = np.random.default_rng(8)
    w, w2, v = (rng.standard_normal(X.shape[1]) for _ in range(3))
    o = make_oracle("tree", X, y, ptr, C=0.3)
    assert o._fused
    o.fun(w)
    want = o.hess_vec(v)
    probe = copy.copy(o)
    probe.fun(w2)
    np.testing.assert_array_equal(o.hess_vec(v), want)
    assert probe._fused_bufs is not o._fused_bufs


@pytest.mark.parametrize("bad", [0, -2, 1.0, 2.5, "2", True, [2]])
def test_n_jobs_refuses_what_is_not_none_minus_one_or_a_positive_integer(bad):
    from rankbench.parallel import resolve_n_jobs

    with pytest.raises(ValueError, match="n_jobs must be None, -1"):
        resolve_n_jobs(bad)


def test_n_jobs_values(monkeypatch):
    from rankbench import parallel
    from rankbench.parallel import resolve_n_jobs

    monkeypatch.setattr(parallel, "idle_cores", lambda: 64)  # an idle machine
    top = numba.config.NUMBA_NUM_THREADS
    assert resolve_n_jobs(None) == top and resolve_n_jobs(-1) == top
    assert resolve_n_jobs(np.int64(1)) == 1
    assert resolve_n_jobs(10**6) == top  # capped at numba's thread pool
    before = numba.get_num_threads()
    try:  # None: the count the caller set (a runner worker's or a launcher job's share)
        numba.set_num_threads(1)
        assert resolve_n_jobs(None) == 1 and resolve_n_jobs(-1) == top
    finally:
        numba.set_num_threads(before)


def _repeated_answers(o, X, rng):
    """f, gradient, two Hv and the diagonal at two points (the second sort seeded by the
    first's order, every buffer reused), and the first point again."""
    out = []
    for w in (rng.standard_normal(X.shape[1]), rng.standard_normal(X.shape[1]) * 0.1):
        v = rng.standard_normal(X.shape[1])
        out += [np.array([o.fun(w)]), o.grad(w), o.hess_vec(v), o.hess_vec(2.0 * v), o.hess_diag()]
    return out


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("levels", [2, 4, 12])  # 12 > TABLE_LEVELS: the Fenwick Hv sweep
def test_tree_sweeps_on_the_oracles_work_arrays_give_the_bits_of_per_chunk_scratch(
        monkeypatch, sparse, levels):
    """The tree oracle's separate (unfused) passes take their scratch from arrays it keeps when a
    query has WORK_MIN_DOCS documents or the problem at most SMALL_WORK_DOCS, each chunk of
    queries its own rows of them.  Kept for a small problem of 300 queries in 34 chunks over
    the numba threads, and not when SMALL_WORK_DOCS is set below its size: the same bits, f /
    gradient / Hv / diagonal at two points; and the brute-force oracle's values."""
    from rankbench.objective import sweep_oracle, tree

    monkeypatch.setattr(sweep_oracle, "FUSED_MIN_BLOCKS", 10**9)  # the separate passes
    X, _, _, ptr = _problem(sparse, n_queries=300)
    y = np.random.default_rng(levels).integers(0, levels, size=X.shape[0]).astype(np.float64)
    assert X.shape[0] <= tree.SMALL_WORK_DOCS
    monkeypatch.setattr(tree, "SMALL_WORK_DOCS", X.shape[0] - 1)
    ref = make_oracle("tree", X, y, ptr, C=0.1)
    assert ref._work()[0][0].shape[0] == 0  # small queries, larger problem: per-chunk scratch
    want = _repeated_answers(ref, X, np.random.default_rng(1))
    monkeypatch.setattr(tree, "SMALL_WORK_DOCS", X.shape[0])
    o = make_oracle("tree", X, y, ptr, C=0.1)
    (wz, wr, wg, wh), ta, tb = o._work()
    assert wz.shape[0] == X.shape[0] and wr.dtype == o.levels.qrank.dtype
    table_levels = [k for k in o.levels.n_levels if 2 <= k <= tree.TABLE_LEVELS]
    assert ta.shape[0] == (X.shape[0] + 300) * max(table_levels, default=0)
    assert (max(o.levels.n_levels) > tree.TABLE_LEVELS) == (levels == 12)  # both Hv sweeps run
    got = _repeated_answers(o, X, np.random.default_rng(1))
    for a, b in zip(want, got, strict=True):
        assert np.array_equal(a, b)
    brute = _repeated_answers(make_oracle("brute", X, y, ptr, C=0.1), X, np.random.default_rng(1))
    for a, b in zip(brute, got, strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-10 * np.abs(a).max())
