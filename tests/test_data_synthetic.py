"""Synthetic generators and their fold splits."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import roc_auc_score

from rankbench.data import load_fold, make_letor_like, make_rcv1_like


def test_letor_like_shape_levels_and_determinism():
    d = make_letor_like(n_queries=30, docs_per_query=(5, 25), n_features=7, n_levels=4, seed=3)
    sizes = np.diff(d.query_ptr)
    assert d.n_queries == 30 and sizes.min() >= 5 and sizes.max() <= 25 and len(set(sizes)) > 5
    assert d.n_features == 7 and d.synthetic and "synthetic" in d.name
    assert d.qid.tolist() == np.repeat(np.arange(1, 31), sizes).tolist()
    levels, counts = np.unique(d.y, return_counts=True)
    assert levels.tolist() == [0, 1, 2, 3]
    assert np.all(np.diff(counts) < 0)  # higher levels are rarer
    again = make_letor_like(n_queries=30, docs_per_query=(5, 25), n_features=7, n_levels=4, seed=3)
    assert np.array_equal(d.X, again.X) and np.array_equal(d.y, again.y)
    other = make_letor_like(n_queries=30, docs_per_query=(5, 25), n_features=7, n_levels=4, seed=4)
    assert not np.array_equal(d.y[:50], other.y[:50]) or d.n_docs != other.n_docs


def test_letor_like_level_shares_are_met():
    d = make_letor_like(n_queries=40, docs_per_query=50, level_shares=(5, 3, 2), seed=7)
    counts = np.bincount(d.y, minlength=3)
    assert np.all(np.abs(counts - d.n_docs * np.array([0.5, 0.3, 0.2])) <= 1)


def test_letor_like_noise_free_linear_labels_are_monotone_in_the_model():
    d = make_letor_like(n_queries=20, docs_per_query=30, n_features=5, noise=0.0, seed=1)
    latent = d.X @ d.meta["w"]
    order = np.argsort(latent)
    assert np.all(np.diff(d.y[order]) >= 0)
    noisy = make_letor_like(n_queries=20, docs_per_query=30, n_features=5, noise=1.0, seed=1)
    order = np.argsort(noisy.X @ noisy.meta["w"])
    assert np.any(np.diff(noisy.y[order]) < 0)


def test_letor_like_nonlinear_is_less_linear_than_linear():
    def r2(d):
        A = np.c_[d.X, np.ones(d.n_docs)]
        coef, *_ = np.linalg.lstsq(A, d.y.astype(float), rcond=None)
        resid = d.y - A @ coef
        return 1 - resid.var() / d.y.var()

    lin = make_letor_like(n_queries=50, docs_per_query=40, n_features=10, noise=0.0, seed=2)
    non = make_letor_like(n_queries=50, docs_per_query=40, n_features=10, noise=0.0,
                          model="nonlinear", seed=2)
    assert r2(lin) > 0.6 and r2(non) < r2(lin) - 0.3


@pytest.mark.parametrize(
    "kw,msg",
    [({"n_queries": 0}, "n_queries"), ({"n_levels": 1}, "n_levels"), ({"noise": -1.0}, "noise"),
     ({"model": "tree"}, "model"), ({"docs_per_query": (5, 2)}, "empty"),
     ({"noise": float("nan")}, "noise"), ({"level_shares": (0.5, 0.5)}, "level_shares"),
     ({"level_shares": (0.5, 0.6, -0.1)}, "level_shares")],
)
def test_letor_like_bad_parameters(kw, msg):
    with pytest.raises(ValueError, match=msg):
        make_letor_like(**kw)


def test_rcv1_like_structure_balance_and_learnability():
    d = make_rcv1_like(n=4000, d=3000, nnz_per_row=40, positive_rate=0.3, seed=5)
    X = d.X
    assert sp.isspmatrix_csr(X) and X.shape == (4000, 3000) and X.dtype == np.float64
    assert X.has_canonical_format
    for r in range(4000):  # sorted and distinct in each row
        assert np.all(np.diff(X.indices[X.indptr[r]:X.indptr[r + 1]]) > 0)
    assert np.allclose(np.sqrt(X.multiply(X).sum(axis=1)).A1, 1.0)
    assert np.all(X.data > 0)
    assert abs(X.nnz / 4000 - 40) < 2.0
    assert int(d.y.sum()) == round(0.3 * 4000)
    assert d.qid.tolist() == [0] * 4000 and d.query_ptr.tolist() == [0, 4000] and d.synthetic
    assert roc_auc_score(d.y, X @ d.meta["w"]) > 0.85
    exact = make_rcv1_like(n=2000, d=500, nnz_per_row=20, positive_rate=0.1, noise=0.0, seed=1)
    assert roc_auc_score(exact.y, exact.X @ exact.meta["w"]) == 1.0
    again = make_rcv1_like(n=4000, d=3000, nnz_per_row=40, positive_rate=0.3, seed=5)
    assert (X != again.X).nnz == 0 and np.array_equal(d.y, again.y)


@pytest.mark.parametrize(
    "kw,msg",
    [({"positive_rate": 0.0}, "positive_rate"), ({"nnz_per_row": 50, "d": 10}, "exceed"),
     ({"n": -1}, "n must")],
)
def test_rcv1_like_bad_parameters(kw, msg):
    with pytest.raises(ValueError, match=msg):
        make_rcv1_like(**{"n": 10, "d": 100, **kw})


def test_synthetic_folds_rotate_like_letor():
    kw = {"n_queries": 23, "docs_per_query": 8, "n_features": 4}
    tests = []
    for fold in range(1, 6):
        parts = {s: load_fold("synthetic", fold, s, **kw) for s in ("train", "vali", "test")}
        q = {s: set(p.query_ids().tolist()) for s, p in parts.items()}
        assert not (q["train"] & q["vali"] or q["train"] & q["test"] or q["vali"] & q["test"])
        assert q["train"] | q["vali"] | q["test"] == set(range(1, 24))
        assert all(p.synthetic and "synthetic" in p.name for p in parts.values())
        tests.append(q["test"])
    assert set().union(*tests) == set(range(1, 24)) and sum(map(len, tests)) == 23
    a = load_fold("synthetic", 2, "train", **kw)
    b = load_fold("synthetic", 2, "train", **kw)
    assert np.array_equal(a.X, b.X) and np.array_equal(a.qid, b.qid)
    with pytest.raises(TypeError, match="unknown synthetic"):
        load_fold("synthetic", 1, "train", n_docs=5)


def test_synthetic_rcv1_like_splits():
    kw = {"n": 3000, "n_test": 500, "d": 800, "nnz_per_row": 10, "positive_rate": 0.2}
    train = load_fold("synthetic", 1, "train", variant="rcv1_like", **kw)
    vali = load_fold("synthetic", 1, "vali", variant="rcv1_like", **kw)
    test = load_fold("synthetic", 1, "test", variant="rcv1_like", **kw)
    assert (train.n_docs, vali.n_docs, test.n_docs) == (3000, 150, 500)
    assert sp.issparse(train.X) and train.n_queries == 1 and train.meta["vali_in_train"]
    full = make_rcv1_like(n=3500, d=800, nnz_per_row=10, positive_rate=0.2)
    assert (full.X[3000:] != test.X).nnz == 0 and np.array_equal(full.y[3000:], test.y)
    held = load_fold("synthetic", 1, "train", variant="rcv1_like", holdout=True, **kw)
    assert held.n_docs == 2850 and not held.meta["vali_in_train"]
    sub = load_fold("synthetic", 1, "train", variant="rcv1_like", train_size=1000, holdout=True, **kw)
    assert sub.n_docs == 1000
    vali_rows = {tuple(r) for r in vali.X.toarray()}
    assert not any(tuple(r) in vali_rows for r in sub.X.toarray())  # drawn from held-out train
    other_fold = load_fold("synthetic", 2, "vali", variant="rcv1_like", **kw)
    assert (other_fold.X != vali.X).nnz > 0
