"""Issue 11: SPD and LambdaMART give the same model whatever the order of the rows.

The canonical order (rankbench.data.row_order) is checked against a brute-force sort of
the rows as Python tuples, and the learners against a shuffled / interleaved copy of the data.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from rankbench.data import RankingData
from rankbench.data.row_order import canonical_order
from rankbench.estimators.lambdamart import LambdaMART, LightGBMLambdaRank
from rankbench.estimators.spd import SPDRanker
from rankbench.optim.pair_steps import LEARNERS


def _data(seed=0, n_queries=8, per_query=25, d=6):
    rng = np.random.default_rng(seed)
    n = n_queries * per_query
    X = rng.normal(size=(n, d))
    X[rng.random((n, d)) < 0.4] = 0.0  # sparse-ish, with ties in single columns
    X[5] = X[6]  # duplicate rows
    y = rng.integers(0, 3, n)
    y[6] = y[5]
    qid = np.repeat(rng.permutation(np.arange(100, 100 + n_queries)), per_query)
    return X, y, qid


def _variants(X, y, qid, seed=1):
    """(X, y, qid) shuffled at random, and with queries interleaved round-robin."""
    rng = np.random.default_rng(seed)
    p = rng.permutation(len(y))
    # interleave: the k-th document of each query, then the (k+1)-th, ...
    rank_in_q = np.zeros(len(y), dtype=int)
    for q in np.unique(qid):
        rank_in_q[qid == q] = np.arange((qid == q).sum())
    inter = np.lexsort((qid, rank_in_q))
    return [p, inter]


def _brute_order(X, y, qid):
    Xd = X.toarray() if sp.issparse(X) else X
    keys = [(qid[i], y[i], tuple(Xd[i]), i) for i in range(len(y))]
    return np.array([k[-1] for k in sorted(keys)])


@pytest.mark.parametrize("sparse", [False, True])
def test_canonical_order_is_the_sorted_row_order(sparse):
    X, y, qid = _data()
    Xm = sp.csr_matrix(X) if sparse else X
    order = canonical_order(Xm, y, qid)
    np.testing.assert_array_equal(order, _brute_order(X, y, qid))
    for p in _variants(X, y, qid):
        o2 = canonical_order(Xm[p], y[p], qid[p])
        # the same sequence of rows whatever the input order
        np.testing.assert_array_equal(X[p][o2], X[order])
        np.testing.assert_array_equal(y[p][o2], y[order])
    assert canonical_order(Xm[order], y[order], qid[order]) is None


def test_canonical_keeps_meta_order_to_the_input_rows():
    X, y, qid = _data()
    p = _variants(X, y, qid)[0]
    data = RankingData.from_arrays(X[p], y[p], qid[p]).canonical()
    np.testing.assert_array_equal(data.X, X[p][data.meta["order"]])
    assert np.all(np.diff(data.query_ptr) > 0)
    assert data.canonical() is data


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("learner", sorted(LEARNERS))
@pytest.mark.parametrize("sampler", ["indexed", "sofia"])
def test_spd_model_does_not_depend_on_row_order(learner, sampler, sparse):
    X, y, qid = _data()
    Xm = sp.csr_matrix(X) if sparse else X
    kw = {"learner": learner, "lam": 1e-2, "n_iter": 3000, "sampler": sampler,
          "random_state": 3}
    ref = SPDRanker(**kw).fit(Xm, y, qid).decision_function(X)
    for p in _variants(X, y, qid):
        got = SPDRanker(**kw).fit(Xm[p], y[p], qid[p]).decision_function(X)
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("model", [LambdaMART(metric="ndcg", n_estimators=8, min_data_in_leaf=5),
                                   LambdaMART(metric="auc", n_estimators=8, min_data_in_leaf=5),
                                   LightGBMLambdaRank(n_estimators=8, min_data_in_leaf=5)],
                         ids=["lambdamart_ndcg", "lambdamart_auc", "lgbm_lambdarank"])
def test_lambdamart_model_does_not_depend_on_row_order(model):
    from sklearn.base import clone

    X, y, qid = _data()
    ref = clone(model).fit(X, y, qid, eval_set=(X, y, qid)).decision_function(X)
    for p in _variants(X, y, qid):
        got = clone(model).fit(X[p], y[p], qid[p], eval_set=(X[p], y[p], qid[p])).decision_function(X)
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)


# -- canonical_order against np.lexsort over every column (the former implementation) ---------

def _lexsort_oracle(X, y, qid):
    """np.lexsort keyed by every column of X, then y, then the rank of qid (primary)."""
    X = np.asarray(X)
    _, qrank = np.unique(qid, return_inverse=True)
    keys = tuple(X[:, j] for j in range(X.shape[1] - 1, -1, -1)) + (y, qrank.ravel())
    order = np.lexsort(keys)
    return None if np.array_equal(order, np.arange(len(y))) else order


def _assert_same_order(got, want):
    if want is None:
        assert got is None
    else:
        assert got is not None
        np.testing.assert_array_equal(got, want)


def _tied_data(rng, n, d, n_queries, n_labels, n_values=3):
    """Few distinct values per column (many ties), -0.0 beside 0.0, duplicated rows."""
    X = rng.integers(-1, n_values - 1, size=(n, d)).astype(np.float64)
    X[(X == 0) & (rng.random((n, d)) < 0.5)] = -0.0
    if n > 2:
        src = rng.integers(0, n, size=n // 3)
        dst = rng.integers(0, n, size=n // 3)
        X[dst] = X[src]
    y = rng.integers(0, n_labels, n)
    qid = rng.integers(0, n_queries, n) * 7 - 3
    return X, y, qid


# each dtype compiles its own kernels (about 10 s): the common ones in make test, the rest in
# make test-long
_DTYPES = [np.float64, np.float32, np.int8,
           *(pytest.param(t, marks=pytest.mark.long) for t in
             (np.float16, np.int64, np.uint8, np.uint64, np.bool_, np.dtype(">f8"), np.dtype(">i4")))]


@pytest.mark.parametrize("dtype", _DTYPES, ids=str)
def test_canonical_order_dense_equals_full_lexsort(dtype):
    rng = np.random.default_rng(20)
    for trial in range(60):
        n = int(rng.integers(1, 400))
        d = int(rng.integers(0, 7))
        X, y, qid = _tied_data(rng, n, d, n_queries=int(rng.integers(1, 40)),
                               n_labels=int(rng.integers(1, 5)))
        Xt = X.astype(dtype)
        if np.dtype(dtype) == np.uint64:
            Xt = Xt + np.uint64(2**63)  # values beyond float64's exact integers
        if trial % 3 == 1:
            Xt = np.asfortranarray(Xt)
        elif trial % 3 == 2 and d:
            Xt = np.repeat(Xt, 2, axis=1)[:, ::2]  # strided, non-contiguous
        for yy in (y, y.astype(np.int8), y.astype(np.float64)):
            _assert_same_order(canonical_order(Xt, yy, qid), _lexsort_oracle(Xt, yy, qid))


def test_canonical_order_dense_zero_signs_nan_and_single_row_blocks():
    # -0.0 == 0.0 for np.lexsort (input order kept); NaN after every number, NaN ties NaN
    X = np.array([[0.0, 1.0], [-0.0, 0.0], [np.nan, 0.0], [-np.inf, np.nan], [-0.0, 1.0],
                  [np.nan, -1.0], [np.inf, 0.0], [0.0, np.nan], [-np.inf, 5.0]])
    y = np.zeros(len(X), dtype=np.int64)
    qid = np.zeros(len(X), dtype=np.int64)
    want = _lexsort_oracle(X, y, qid)
    np.testing.assert_array_equal(want, [8, 3, 1, 0, 4, 7, 6, 5, 2])  # hand-checked
    np.testing.assert_array_equal(canonical_order(X, y, qid), want)
    rng = np.random.default_rng(3)
    for _ in range(30):
        n = 300
        X = rng.choice([0.0, -0.0, 1.0, np.nan, -np.inf], size=(n, 3))
        y = rng.integers(0, 2, n).astype(np.float64)
        y[rng.random(n) < 0.1] = np.nan  # NaN labels form one block, as in np.lexsort
        qid = rng.integers(0, 5, n)
        _assert_same_order(canonical_order(X, y, qid), _lexsort_oracle(X, y, qid))
    # every (query, label) block a single row: the order of (qid, y) alone
    n = 50
    X = rng.normal(size=(n, 4))
    qid = rng.permutation(n)
    y = np.zeros(n, dtype=np.int64)
    np.testing.assert_array_equal(canonical_order(X, y, qid), np.argsort(qid))


@pytest.mark.parametrize("layout", ["random", "sorted", "reversed", "runs"])
def test_canonical_order_dense_one_huge_block(layout):
    """One query, one label, 20k rows with heavy ties: every merge pass, stable."""
    rng = np.random.default_rng(5)
    n = 20_000
    X = rng.integers(0, 3, size=(n, 4)).astype(np.float64)
    X[(X == 0) & (rng.random(X.shape) < 0.5)] = -0.0
    if layout != "random":
        X = X[_lexsort_oracle(X, np.zeros(n), np.zeros(n))]
        if layout == "reversed":
            X = X[::-1].copy()
        elif layout == "runs":  # sorted runs of assorted lengths, shuffled
            cuts = np.sort(rng.choice(np.arange(1, n), 40, replace=False))
            X = np.concatenate([X[a:b] for a, b in zip(np.r_[0, cuts], np.r_[cuts, n],
                                                         strict=True)][::-1])
    y = np.ones(n, dtype=np.int64)
    qid = np.full(n, 9)
    _assert_same_order(canonical_order(X, y, qid), _lexsort_oracle(X, y, qid))


def test_canonical_order_dense_many_blocks_against_lexsort():
    """Many queries and labels, blocks from 1 to ~500 rows, plus a 5000-row block."""
    rng = np.random.default_rng(11)
    X, y, qid = _tied_data(rng, 30_000, 5, n_queries=300, n_labels=4)
    big = rng.random(len(y)) < 0.17
    qid[big] = 10_000
    y[big] = 2
    p = rng.permutation(len(y))
    for Xi, yi, qi in ((X, y, qid), (X[p], y[p], qid[p])):
        _assert_same_order(canonical_order(Xi, yi, qi), _lexsort_oracle(Xi, yi, qi))


@pytest.mark.parametrize("bad", [np.array([[1 + 2j]]), np.array([["a"]]), np.array([[1.0]], dtype=object)],
                         ids=["complex", "str", "object"])
def test_canonical_order_refuses_non_real_dense_X(bad):
    with pytest.raises(ValueError, match="real numeric X"):
        canonical_order(bad, np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64))


_THREADS_SCRIPT = """
import hashlib, numpy as np
from rankbench.data.row_order import canonical_order
rng = np.random.default_rng(7)
n = 40_000
X = rng.integers(0, 3, size=(n, 6)).astype(np.float64)
y = rng.integers(0, 4, n)
qid = rng.integers(0, 200, n)
qid[: n // 4] = -1  # one large query
o = canonical_order(X, y, qid)
print(hashlib.sha256(o.tobytes()).hexdigest())
"""


def test_canonical_order_does_not_depend_on_the_thread_count():
    import os
    import subprocess
    import sys

    digests = []
    for threads in ("1", "2"):
        env = dict(os.environ, NUMBA_NUM_THREADS=threads)
        out = subprocess.run([sys.executable, "-c", _THREADS_SCRIPT], env=env, check=True,
                             capture_output=True, text=True, timeout=300)
        digests.append(out.stdout.strip())
    rng = np.random.default_rng(7)  # the same data here, against the oracle
    n = 40_000
    X = rng.integers(0, 3, size=(n, 6)).astype(np.float64)
    y = rng.integers(0, 4, n)
    qid = rng.integers(0, 200, n)
    qid[: n // 4] = -1
    import hashlib

    want = hashlib.sha256(_lexsort_oracle(X, y, qid).astype(np.int64).tobytes()).hexdigest()
    assert digests == [want, want]


def test_from_arrays_canonical_is_from_arrays_then_canonical():
    X, y, qid = _data()
    for p in _variants(X, y, qid) + [np.arange(len(y))]:
        kw = {"docids": np.array([f"d{i}" for i in p]), "lines": p + 1}
        a = RankingData.from_arrays(X[p], y[p], qid[p], **kw).canonical()
        b = RankingData.from_arrays(X[p], y[p], qid[p], canonical=True, **kw)
        for f in ("X", "y", "qid", "query_ptr", "docids", "lines"):
            np.testing.assert_array_equal(getattr(b, f), getattr(a, f))
        np.testing.assert_array_equal(b.meta["order"], a.meta["order"])
        np.testing.assert_array_equal(b.X, X[p][b.meta["order"]])
        s = RankingData.from_arrays(sp.csr_matrix(X[p]), y[p], qid[p], canonical=True)
        np.testing.assert_array_equal(s.X.toarray(), a.X)
    c = RankingData.from_arrays(a.X, a.y, a.qid, canonical=True)
    assert c.meta["order"] is None


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("sampler", ["indexed", "uniform", "sofia"])
def test_spd_reads_rows_through_the_index_with_the_same_bits(sampler, sparse):
    """Without checkpoints SPD keeps X as given and maps the canonical index onto its rows
    (PairIndex.on_rows); with checkpoints it trains on the gathered canonical copy.  Same bits,
    and the same as on data given in the canonical order."""
    X, y, qid = _data()
    canon = canonical_order(X, y, qid)
    kw = {"learner": "pegasos", "lam": 1e-2, "n_iter": 4000, "sampler": sampler, "random_state": 5}
    mat = sp.csr_matrix if sparse else np.asarray
    ref = SPDRanker(**kw).fit(mat(X[canon]), y[canon], qid[canon]).coef_
    for p in [*_variants(X, y, qid), np.arange(len(y))]:
        a = SPDRanker(**kw).fit(mat(X[p]), y[p], qid[p]).coef_
        b = SPDRanker(**kw, checkpoints=[kw["n_iter"]]).fit(mat(X[p]), y[p], qid[p]).coef_
        np.testing.assert_array_equal(a, ref)
        np.testing.assert_array_equal(b, ref)


def test_pair_index_on_rows_draws_the_same_documents():
    from rankbench.optim.samplers import build_pair_index, draw_pairs

    X, y, qid = _data()
    p = _variants(X, y, qid)[0]  # storage order: shuffled
    data = RankingData.from_arrays(X[p], y[p], qid[p], canonical=True)
    rows = data.meta["order"]
    index = build_pair_index(data.y, data.query_ptr)
    moved = index.on_rows(rows)
    np.testing.assert_array_equal(moved.y[rows], index.y)
    for sampler in ("indexed", "uniform", "sofia"):
        a, b, _ = draw_pairs(index, sampler, 500, random_state=2)
        ma, mb, _ = draw_pairs(moved, sampler, 500, random_state=2)
        np.testing.assert_array_equal(rows[a], ma)
        np.testing.assert_array_equal(rows[b], mb)
        assert np.all(data.y[a] != data.y[b])
    with pytest.raises(ValueError, match="permutation"):
        index.on_rows(np.zeros(len(rows), dtype=np.int64))
    with pytest.raises(ValueError, match="one storage row"):
        index.on_rows(rows[:-1])
