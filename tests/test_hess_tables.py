"""The tree oracle's Hv through prefix tables at the loss sweep's pointers (sweeps._table_hess_sorted)
against the Fenwick sweep it replaces for queries of at most TABLE_LEVELS levels, and against the
explicit pair list, on both paths (per-query chunks and the fused pass), across the level
boundary, with several squared pieces and with the document-margin score shift."""

import copy

import numpy as np
import pytest
import scipy.sparse as sp

from rankbench.objective import make_oracle
from rankbench.objective.sweeps import (
    FW_LANES,
    TABLE_LEVELS,
    _prefix_tables,
    _table_hess_sorted,
    _tree_fun_sorted,
    _tree_hess_sorted,
)


def _query(rng, n, k, ties):
    zs = np.sort(rng.integers(0, 6, size=n).astype(float) * 0.5 if ties else rng.standard_normal(n) * 2)
    rs = rng.integers(0, k, size=n).astype(np.int64)
    return zs, rs


@pytest.mark.parametrize("k", [2, 3, 5, TABLE_LEVELS, TABLE_LEVELS + 3])
@pytest.mark.parametrize("m", [1.0, 0.5, 2.5, 0.0])
@pytest.mark.parametrize("ties", [False, True])
def test_table_sweep_equals_the_fenwick_sweep(k, m, ties):
    rng = np.random.default_rng(k * 100 + int(m * 10) + ties)
    for n in (1, 2, 7, 40, 300):
        zs, rs = _query(rng, n, k, ties)
        ds = rng.standard_normal(n)
        pa = np.full(n, -1, dtype=np.int32)
        pd = np.full(n, -1, dtype=np.int32)
        _tree_fun_sorted(n, k, zs, rs, m, 1.0, 2, np.zeros(n), np.zeros(n), np.empty(FW_LANES * (k + 1)),
                         pa, pd)
        assert pa.min() >= 0 and pd.min() >= 0 and pa.max() <= n and pd.max() <= n
        want = np.zeros(n)
        _tree_hess_sorted(n, k, zs, rs, m, 0.7, ds, want, np.empty(k + 1))
        got = np.zeros(n)
        A, B = np.empty((n + 1) * k), np.empty((n + 1) * k)
        _table_hess_sorted(n, k, rs, pa, pd, 0.7, ds, got, A, B)
        # and a brute force over the pairs: p's partners are the higher-ranked documents with
        # s_h - m < z_p and the lower-ranked ones with z_l > z_p - m
        brute = np.array([0.7 * (ds[(rs > rs[p]) & (zs - m < zs[p])].sum()
                                 + ds[(rs < rs[p]) & (zs > zs[p] - m)].sum()) for p in range(n)])
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got, brute, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("k", range(2, TABLE_LEVELS + 1))
def test_prefix_tables_equal_the_row_recurrence_bit_for_bit(k):
    """``_prefix_tables`` keeps each column's running sum in a register; the tables must be the
    recurrence A[t + 1, l] = A[t, l] + (d_t if r_t > l else 0), B[t, l] = B[t + 1, l] + (d_t if
    r_t < l else 0) to the bit (Python floats: the same IEEE additions in the same order)."""
    rng = np.random.default_rng(k)
    for n in (1, 2, 9, 257):
        rs = rng.integers(0, k, size=n).astype(np.int64)
        ds = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, size=n)
        A, B = np.full((n + 1) * k, np.nan), np.full((n + 1) * k, np.nan)
        _prefix_tables(n, k, rs, ds, A, B)
        wa, wb = [[0.0] * k for _ in range(n + 1)], [[0.0] * k for _ in range(n + 1)]
        for t in range(n):
            for lv in range(k):
                wa[t + 1][lv] = wa[t][lv] + (float(ds[t]) if rs[t] > lv else 0.0)
        for t in range(n - 1, -1, -1):
            for lv in range(k):
                wb[t][lv] = wb[t + 1][lv] + (float(ds[t]) if rs[t] < lv else 0.0)
        assert np.array_equal(A, np.array(wa).ravel())
        assert np.array_equal(B, np.array(wb).ravel())


def _problem(n_queries, k, sparse, seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 60, size=n_queries)
    n = int(sizes.sum())
    # each query draws its own number of levels around k: both sides of TABLE_LEVELS in one problem
    y = np.concatenate([rng.integers(0, max(1, k + int(rng.integers(-1, 2))), size=s) for s in sizes])
    d = 23
    X = sp.random(n, d, density=0.4, format="csr", random_state=seed) if sparse else rng.standard_normal((n, d))
    ptr = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    return X, y.astype(float), ptr, rng


def _assert_matches_pairs(o, ref, w, v):
    """f and Hv of the tree oracle o against the explicit pair list ref at (w, v)."""
    assert o.fun(w) == pytest.approx(ref.fun(w), rel=1e-11)
    h = ref.hess_vec(v)
    np.testing.assert_allclose(o.hess_vec(v), h, rtol=1e-10, atol=1e-10 * np.abs(h).max())


@pytest.mark.parametrize("n_queries", [40, 1500])  # per-query chunks; the fused pass
@pytest.mark.parametrize("k", [3, TABLE_LEVELS, TABLE_LEVELS + 2])
@pytest.mark.parametrize("loss", ["squared_hinge", "huber"])
@pytest.mark.parametrize("sparse", [False, True])
def test_tree_hess_vec_equals_the_pair_list(n_queries, k, loss, sparse):
    X, y, ptr, rng = _problem(n_queries, k, sparse, seed=n_queries + k)
    ref = make_oracle("pairs", X, y, ptr, C=0.4, loss=loss)
    o = make_oracle("tree", X, y, ptr, C=0.4, loss=loss)
    assert o._fused == (n_queries > 100)
    for _ in range(3):  # new points: the pointers follow each fun
        _assert_matches_pairs(o, ref, rng.standard_normal(X.shape[1]), rng.standard_normal(X.shape[1]))


@pytest.mark.parametrize("n_queries", [40, 1500])
def test_document_margins_hv_reads_the_pointers_of_the_shifted_scores(n_queries):
    """With document margin rescaling fun sweeps the shifted scores per piece (not fused) while Hv
    may run the fused pass: both read one set of pointers."""
    X, y, ptr, rng = _problem(n_queries, 4, False, seed=3)
    kw = dict(C=0.4, rescaling="margin", delta="gain")
    ref = make_oracle("pairs", X, y, ptr, **kw)
    o = make_oracle("tree", X, y, ptr, **kw)
    assert o._score_shift is not None
    _assert_matches_pairs(o, ref, rng.standard_normal(X.shape[1]), rng.standard_normal(X.shape[1]))


@pytest.mark.parametrize("n_queries", [40, 1500])
def test_a_copys_fun_leaves_the_originals_pointers(n_queries):
    X, y, ptr, rng = _problem(n_queries, 3, False, seed=5)
    o = make_oracle("tree", X, y, ptr, C=0.4)
    w, w2, v = (rng.standard_normal(X.shape[1]) for _ in range(3))
    o.fun(w)
    want = o.hess_vec(v)
    probe = copy.copy(o)
    probe.fun(w2)
    assert probe._ptrs is not o._ptrs
    np.testing.assert_array_equal(o.hess_vec(v), want)


@pytest.mark.parametrize("k", [1, 3, TABLE_LEVELS + 2])
@pytest.mark.parametrize("loss", ["squared_hinge", "huber"])  # huber: two squared pieces, generic
def test_tree_hv_finished_in_the_sweep_equals_the_generic_epilogue_bit_for_bit(k, loss):
    """``TreeOracle._hess_z``: a loss of one squared piece has ``tree_hess`` write
    2 (diag d - gamma) over d itself; it must equal ``SweepOracle._hess_z`` (gamma zeroed, the
    piece added by scatter, then three numpy passes) to the bit, with one-level queries (k = 1:
    their documents have no pair), the tables and the Fenwick sweep (k > TABLE_LEVELS)."""
    from rankbench.objective.sweep_oracle import SweepOracle

    X, y, ptr, rng = _problem(40, k, False, seed=7)
    o = make_oracle("tree", X, y, ptr, C=0.3, loss=loss)
    w = rng.standard_normal(X.shape[1]) * 0.3
    o.fun(w)
    d = X @ rng.standard_normal(X.shape[1])
    got = o._hess_z(d.copy())
    want = SweepOracle._hess_z(o, d.copy())
    assert np.array_equal(got, want)
    assert np.abs(got).max() > 0


def _reference_tree_fun(o, z, m, c, gz, diag):
    """``tree.tree_fun`` query by query as it was written before its one-pass path: each query's
    scores and ranks gathered, ``_tree_fun_sorted`` into cleared columns, then added into gz and
    diag (in place); the per-query values summed in query order."""
    lv = o.levels
    ptr, order = lv.query_ptr, o._order
    n_docs = z.shape[0]
    pa, pd = np.zeros(n_docs, dtype=np.int32), np.zeros(n_docs, dtype=np.int32)
    vals = np.zeros(ptr.shape[0] - 1)
    for q in range(ptr.shape[0] - 1):
        a, e, k = ptr[q], ptr[q + 1], int(lv.n_levels[q])
        if k < 2:
            continue
        rows = order[a:e]
        gs, hs = np.zeros(e - a), np.zeros(e - a)
        vals[q] = _tree_fun_sorted(e - a, k, z[rows].copy(), lv.qrank[rows].copy(), m, c, 2, gs,
                                   hs, np.empty(FW_LANES * (k + 1)), pa[a:e], pd[a:e])
        gz[rows] += gs
        diag[rows] += hs
    value = 0.0
    for v in vals:
        value += v
    return value, pa, pd


@pytest.mark.parametrize("k", [2, 3, TABLE_LEVELS, TABLE_LEVELS + 2])
@pytest.mark.parametrize("n_queries", [40, 300])
def test_tree_fun_and_hess_one_pass_paths_equal_the_per_query_reference_bit_for_bit(k, n_queries):
    """``tree_fun``'s queries sweep ascending into their columns and scatter from the descending
    sweep (``tree_fun_rows``), and ``tree_hess``'s table queries gather inside table A and write
    their rows from the lookups (``_table_hess_query``): L, dL/dz, the curvature, the sweeps'
    pointers and H_L d must be those of the per-query reference (cleared columns,
    ``_tree_fun_sorted``, the table or Fenwick Hv, scatter) to the bit, with ties, one-level
    queries and more than TABLE_LEVELS levels (the Fenwick Hv)."""
    from rankbench.objective.sweep_oracle import SweepOracle
    from rankbench.objective.tree import _NO_DIAG, tree_fun, tree_hess

    X, y, ptr, rng = _problem(n_queries, k, False, seed=11 * k + n_queries)
    o = make_oracle("tree", X, y, ptr, C=0.3)
    w = rng.standard_normal(X.shape[1]) * 0.3
    o.fun(w)
    z = np.round(o._z * 4) / 4  # ties inside queries; the order below is theirs
    o.loss_at_scores(z)
    lv = o.levels
    m, c = o._m, o._c
    # tree_fun adds its piece: into columns that already hold values, as a second piece finds them
    gz, diag = rng.standard_normal(o.n_docs), rng.random(o.n_docs)
    want_gz, want_diag = gz.copy(), diag.copy()
    want_value, want_pa, want_pd = _reference_tree_fun(o, o._z, m, c, want_gz, want_diag)
    pa, pd = np.zeros(o.n_docs, dtype=np.int32), np.zeros(o.n_docs, dtype=np.int32)
    value = tree_fun(o._order, lv.query_ptr, lv.qrank, lv.n_levels, o._z, m, c, 2, gz, diag, pa,
                     pd, o._work()[0], o._wide_work())
    assert value == want_value and value > 0
    for got, want in ((gz, want_gz), (diag, want_diag), (pa, want_pa), (pd, want_pd)):
        assert np.array_equal(got, want)
    # H_L d, through the tables (k <= TABLE_LEVELS) or the Fenwick sweep, both ways tree_hess
    # returns it: added into gamma, and finished over d
    d = rng.standard_normal(o.n_docs)
    gamma0 = rng.standard_normal(o.n_docs)
    gamma = gamma0.copy()
    tree_hess(o._order, lv.query_ptr, lv.qrank, lv.n_levels, o._z, m, c, d, gamma, pa, pd,
              *o._work(), _NO_DIAG)
    want_gamma = np.zeros(o.n_docs)
    for q in range(ptr.shape[0] - 1):
        a, e, kq = ptr[q], ptr[q + 1], int(lv.n_levels[q])
        if kq < 2:
            continue
        rows = o._order[a:e]
        gams = np.zeros(e - a)
        if kq <= TABLE_LEVELS:
            A, B = np.empty((e - a + 1) * kq), np.empty((e - a + 1) * kq)
            _table_hess_sorted(e - a, kq, lv.qrank[rows].copy(), pa[a:e], pd[a:e], c,
                               d[rows].copy(), gams, A, B)
        else:
            _tree_hess_sorted(e - a, kq, o._z[rows].copy(), lv.qrank[rows].copy(), m, c,
                              d[rows].copy(), gams, np.empty(kq + 1))
        want_gamma[rows] += gams
    assert np.array_equal(gamma, gamma0 + want_gamma) and np.abs(want_gamma).max() > 0
    finished = o._hess_z(d.copy())  # tree_hess with diag: 2 (diag d - gamma) over d
    assert np.array_equal(finished, SweepOracle._hess_z(o, d.copy()))
    assert np.array_equal(finished, (o._diag * d - want_gamma) * 2.0)


# ------------------------------------------------ the counting oracle's Hv over gathered scores
@pytest.mark.parametrize("k", [2, 3, 5])
@pytest.mark.parametrize("n_queries", [1, 3])
def test_counting_hess_over_gathered_scores_equals_the_indexed_sweep_bit_for_bit(k, n_queries):
    """counting_hess reads the scores and directions gathered in border order; the same
    additions in the same order as _counting_hess_query reading them through border, so gamma
    is the same to the bit, piece after piece (label-pair weights, a second margin).  The
    reference is _counting_hess_query's Python function (IEEE float64, no FMA): an njit wrapper
    inlining it gave other bits in a process whose numba cache held the kernel as the fastmath
    fused pass compiled it (the flags leak that sweep_oracle.sgd_step's docstring describes)."""
    from rankbench.objective.counting import counting_hess, gather_border
    from rankbench.objective.sweeps import _counting_hess_query

    def indexed(border, bounds, offsets, bgrank, n_levels, z, M, W, off_m, weight, d, gamma):
        for q in range(n_levels.shape[0]):
            _counting_hess_query.py_func(q, border, bounds, offsets, bgrank, n_levels, z, M, W,
                                         off_m, weight, d, gamma)

    rng = np.random.default_rng(10 * k + n_queries)
    n = 900
    X = rng.standard_normal((n, 4))
    y = rng.integers(0, k, size=n)
    y[rng.random(n) < 0.3] = 0
    ptr = np.linspace(0, n, n_queries + 1).astype(np.int64)
    o = make_oracle("counting", X, y, ptr, C=0.7)
    w = rng.standard_normal(4)
    o.fun(w)
    lv = o.levels
    zb = np.empty(n)
    gather_border(o._border, o._z, zb)
    np.testing.assert_array_equal(zb, o._z[o._border])
    d = rng.standard_normal(n)
    W = rng.random(o.weight.shape) + 0.5
    a, b = np.zeros(n), np.zeros(n)
    for off, weight in ((0.0, 1.3), (0.4, 0.6)):
        counting_hess(o._border, lv.bucket_bounds, lv.bucket_offsets, lv.bucket_grank, lv.n_levels,
                      zb, o.margin, W, off, weight, d, np.empty(n), a)
        indexed(o._border, lv.bucket_bounds, lv.bucket_offsets, lv.bucket_grank, lv.n_levels,
                o._z, o.margin, W, off, weight, d, b)
    assert np.any(a != 0.0)
    np.testing.assert_array_equal(a, b)


def test_counting_hv_follows_each_fun_and_a_copys_fun_leaves_the_original():
    """The gathered scores are the last fun's: an Hv after a fun at another point equals a fresh
    oracle's, and a copy's fun does not change the original's Hv."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((400, 3))
    y = rng.integers(0, 3, size=400)
    ptr = np.array([0, 400], dtype=np.int64)
    w1, w2, v = rng.standard_normal(3), rng.standard_normal(3), rng.standard_normal(3)
    o = make_oracle("counting", X, y, ptr, C=0.5)
    o.fun(w1)
    h1 = o.hess_vec(v).copy()
    twin = copy.copy(o)
    twin.fun(w2)
    np.testing.assert_array_equal(o.hess_vec(v), h1)
    o.fun(w2)
    fresh = make_oracle("counting", X, y, ptr, C=0.5)
    fresh.fun(w2)
    np.testing.assert_array_equal(o.hess_vec(v), fresh.hess_vec(v))
    np.testing.assert_array_equal(twin.hess_vec(v), fresh.hess_vec(v))
    assert not np.array_equal(h1, fresh.hess_vec(v))
