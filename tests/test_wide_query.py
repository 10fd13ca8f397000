"""One query that holds most of the documents (``score_order.wide_query``: an AUC problem) is sorted
and swept on two threads: the sort by halves and a merge of their overlap, the tree oracle's
ascending sweep beside its descending one, its Hv tables A beside B, the counting oracle's level
buckets apart.  Each must give what the serial per-query code gives: the same permutation (against
numpy's lexsort), the same dL/dz, curvature, pointers and Hv to the bit (against the serial kernels
called one query at a time), and the same f, gradient and Hv as the other oracles."""

import numpy as np
import pytest
from numba import njit

from rankbench.objective import make_oracle
from rankbench.objective.score_order import WIDE_DOCS, sort_within_queries, wide_query
from rankbench.objective.sweeps import (
    FW_LANES,
    _counting_fun_query,
    _counting_hess_query,
    _table_hess_sorted,
    _tree_fun_sorted,
    _tree_hess_sorted,
    gather_directions,
    gather_query,
    gather_ranks,
    scatter_add,
    scatter_add_pair,
)

N = WIDE_DOCS + 4_321


def _lexsort_order(z, ptr):
    out = np.empty(z.shape[0], dtype=np.int64)
    for q in range(ptr.shape[0] - 1):
        a, b = ptr[q], ptr[q + 1]
        idx = np.arange(a, b)
        out[a:b] = idx[np.lexsort((idx, z[a:b]))]  # by score, ties by index
    return out


def test_wide_query_is_the_one_holding_most_documents_and_at_least_wide_docs():
    assert wide_query(np.array([0, WIDE_DOCS])) == 0
    assert wide_query(np.array([0, WIDE_DOCS - 1])) == -1
    assert wide_query(np.array([0, 10, 10 + WIDE_DOCS, 20 + WIDE_DOCS])) == 1
    assert wide_query(np.array([0, WIDE_DOCS, 2 * WIDE_DOCS])) == -1  # half each: the loop splits them
    assert wide_query(np.array([0])) == -1


@pytest.mark.parametrize("ties", [3, 50, 0])  # few distinct scores, some, all distinct
@pytest.mark.parametrize("layout", ["one", "with_small"])
def test_wide_sort_gives_the_lexsort_permutation_seeded_or_not(ties, layout):
    rng = np.random.default_rng(ties + len(layout))
    ptr = np.array([0, N] if layout == "one" else [0, 5, N - 9, N], dtype=np.int64)
    assert wide_query(ptr) == (0 if layout == "one" else 1)
    z = rng.integers(0, ties, size=N).astype(float) if ties else rng.standard_normal(N)
    want = _lexsort_order(z, ptr)
    got = sort_within_queries(z, ptr)
    assert np.array_equal(got, want)
    for scale in (0.0, 1e-6, 0.3, 100.0):  # seeds from hardly moved to a shuffle (merge sort)
        z2 = z + scale * rng.standard_normal(N)
        want2 = _lexsort_order(z2, ptr)
        assert np.array_equal(sort_within_queries(z2, ptr, want.copy()), want2)
        buf = want.copy()  # seeded in place
        assert sort_within_queries(z2, ptr, buf, out=buf) is buf and np.array_equal(buf, want2)
    shuffled = np.concatenate([ptr[q] + rng.permutation(ptr[q + 1] - ptr[q]) for q in range(len(ptr) - 1)])
    assert np.array_equal(sort_within_queries(z, ptr, shuffled), want)
    assert np.array_equal(sort_within_queries(np.zeros(N), ptr, shuffled), np.arange(N))  # tied: by index


@njit
def _serial_tree_fun(order, ptr, qrank, n_levels, z, m, c, power, gz, diag, pa, pd):
    """tree_fun's per-query path, one query at a time (the kernels the chunks call)."""
    value = 0.0
    for q in range(ptr.shape[0] - 1):
        a = ptr[q]
        n = ptr[q + 1] - a
        k = n_levels[q]
        if k < 2:
            continue
        zs = np.empty(n)
        rs = np.empty(n, dtype=qrank.dtype)
        gs = np.zeros(n)
        hs = np.zeros(n)
        gather_query(order, a, a + n, z, qrank, zs, rs)
        value += _tree_fun_sorted(n, k, zs, rs, m, c, power, gs, hs, np.empty(FW_LANES * (k + 1)),
                                  pa[a:a + n], pd[a:a + n])
        scatter_add_pair(order, a, n, gs, hs, gz, diag)
    return value


@njit
def _serial_tree_gamma(order, ptr, qrank, n_levels, z, m, c, d, pa, pd, gamma):
    for q in range(ptr.shape[0] - 1):
        a = ptr[q]
        n = ptr[q + 1] - a
        k = n_levels[q]
        if k < 2:
            continue
        ds = np.empty(n)
        gams = np.empty(n)
        rs = np.empty(n, dtype=qrank.dtype)
        gather_directions(order, a, n, d, ds, gams)
        if k <= 8:
            gather_ranks(order, a, n, qrank, rs)
            _table_hess_sorted(n, k, rs, pa[a:a + n], pd[a:a + n], c, ds, gams,
                               np.empty((n + 1) * k), np.empty((n + 1) * k))
        else:
            zs = np.empty(n)
            gather_query(order, a, a + n, z, qrank, zs, rs)
            _tree_hess_sorted(n, k, zs, rs, m, c, ds, gams, np.empty(k + 1))
        scatter_add(order, a, n, gams, gamma)


def _problem(k, layout, seed):
    rng = np.random.default_rng(seed)
    ptr = np.array([0, N] if layout == "one" else [0, 300, N - 200, N], dtype=np.int64)
    X = rng.standard_normal((N, 6))
    y = rng.integers(0, k, size=N).astype(float)
    return X, y, ptr, rng


@pytest.mark.parametrize("k", [2, 3, 5, 11])  # 11: Hv by the Fenwick sweep (beyond the tables)
@pytest.mark.parametrize("layout", ["one", "with_small"])
def test_tree_wide_sweeps_equal_the_serial_kernels_bit_for_bit(k, layout):
    X, y, ptr, rng = _problem(k, layout, seed=k)
    o = make_oracle("tree", X, y, ptr, C=0.01)
    assert not o._fused and wide_query(ptr) >= 0
    for _ in range(2):  # the second fun is seeded by the first's order
        w = rng.standard_normal(6) * 0.3
        f = o.fun(w)
        lv = o.levels
        gz = np.zeros(N)
        diag = np.zeros(N)
        pa = np.full(N, -1, dtype=np.int32)
        pd = np.full(N, -1, dtype=np.int32)
        L = _serial_tree_fun(o._order, ptr, lv.qrank, lv.n_levels, o._z, o._m, o._c, 2, gz, diag, pa, pd)
        assert f == 0.5 * float(w @ w) + o.C * L
        assert np.array_equal(o._vecs["gz"], gz) and np.array_equal(o._diag, diag)
        assert np.array_equal(o._pointers()[0][0], pa) and np.array_equal(o._pointers()[1][0], pd)
        d = rng.standard_normal(N)
        gamma = np.zeros(N)
        _serial_tree_gamma(o._order, ptr, lv.qrank, lv.n_levels, o._z, o._m, o._c, d, pa, pd, gamma)
        want = (diag * d - (0.0 + gamma)) * 2.0
        assert np.array_equal(o._hess_z(d.copy()), want)  # the product finished in the sweep
        g2 = np.zeros(N)
        o._hess_piece(d, 0.0, 1.0, g2)  # into gamma (several squared pieces)
        assert np.array_equal(g2, gamma)


@pytest.mark.parametrize("k", [2, 4])
@pytest.mark.parametrize("loss", ["squared_hinge", "logistic", "hinge"])
@pytest.mark.parametrize("oracle", ["tree", "counting"])
def test_wide_oracles_agree_with_the_direct_oracle(k, loss, oracle):
    """f, gradient and Hv of one wide query against a second implementation (``direct``:
    no sort-based sweep)."""
    X, y, ptr, rng = _problem(k, "one", seed=10 + k)
    o = make_oracle(oracle, X, y, ptr, C=0.01, loss=loss)
    ref = make_oracle("direct", X, y, ptr, C=0.01, loss=loss)
    w = rng.standard_normal(6) * 0.3
    v = rng.standard_normal(6)
    assert o.fun(w) == pytest.approx(ref.fun(w), rel=1e-11)
    np.testing.assert_allclose(o.grad(w), ref.grad(w), rtol=1e-9)
    if loss != "hinge":
        np.testing.assert_allclose(o.hess_vec(v), ref.hess_vec(v), rtol=1e-9)


@njit
def _serial_counting(border, lv_bounds, lv_offsets, lv_bgrank, n_levels, z, M, W, d, gz, diag, gamma):
    """The counting oracle's per-query sweeps through border (the indexed kernels the fused pass
    still runs), one query at a time: L, and gz, diag, gamma filled."""
    value = 0.0
    for q in range(n_levels.shape[0]):
        value += _counting_fun_query(q, border, lv_bounds, lv_offsets, lv_bgrank, n_levels, z, M, W,
                                     0.0, 1.0, 2, gz, diag)
        _counting_hess_query(q, border, lv_bounds, lv_offsets, lv_bgrank, n_levels, z, M, W, 0.0,
                             1.0, d, gamma)
    return value


@pytest.mark.parametrize("k", [2, 3, 5])
@pytest.mark.parametrize("layout", ["one", "with_small"])
def test_counting_wide_buckets_equal_the_serial_kernels_bit_for_bit(k, layout):
    """gz, diag and gamma to the bit; L to the bit with 2 levels, and with more summed by bucket
    (another order than the query's loop over level pairs)."""
    X, y, ptr, rng = _problem(k, layout, seed=20 + k)
    o = make_oracle("counting", X, y, ptr, C=0.01)
    assert not o._fused and wide_query(ptr) >= 0
    for _ in range(2):
        w = rng.standard_normal(6) * 0.3
        f = o.fun(w)
        lv = o.levels
        want_border = np.concatenate([
            o._order[ptr[q]:ptr[q + 1]][np.argsort(lv.qrank[o._order[ptr[q]:ptr[q + 1]]], kind="stable")]
            for q in range(len(ptr) - 1)])
        assert np.array_equal(o._border, want_border)  # the stable partition by level
        gz, diag, gamma = np.zeros(N), np.zeros(N), np.zeros(N)
        d = rng.standard_normal(N)
        L = _serial_counting(o._border, lv.bucket_bounds, lv.bucket_offsets, lv.bucket_grank,
                             lv.n_levels, o._z, o.margin, o.weight, d, gz, diag, gamma)
        if k == 2:
            assert f == 0.5 * float(w @ w) + o.C * L
        else:
            assert f == pytest.approx(0.5 * float(w @ w) + o.C * L, rel=1e-13)
        assert np.array_equal(o._vecs["gz"], gz) and np.array_equal(o._diag, diag)
        g2 = np.zeros(N)
        o._hess_piece(d, 0.0, 1.0, g2)
        assert np.array_equal(g2, gamma)


@pytest.mark.parametrize("oracle", ["tree", "counting"])
def test_wide_query_gives_the_same_bits_on_one_thread_and_on_two(oracle):
    """The halves, roles and buckets are fixed by the data, not by the thread count."""
    import numba

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one numba thread here")
    X, y, ptr, rng = _problem(3, "one", seed=31)
    w = rng.standard_normal(6) * 0.3
    v = rng.standard_normal(6)
    got = []
    before = numba.get_num_threads()
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            o = make_oracle(oracle, X, y, ptr, C=0.01)
            o.fun(w * 0.5)  # a seed for the next sort
            got.append((o.fun(w), o.grad(w), o.hess_vec(v), o._order.copy()))
    finally:
        numba.set_num_threads(before)
    (f1, g1, h1, o1), (f2, g2, h2, o2) = got
    assert f1 == f2 and np.array_equal(g1, g2) and np.array_equal(h1, h2) and np.array_equal(o1, o2)
