"""SGD on queries in one kernel (``SweepOracle.sgd_steps``): each step the same as one through the
oracle built on the drawn query's rows alone (``split_by_query``'s, and one built afresh), the
oracle's own state left as it was, and the same SGD run either way."""

import copy

import numpy as np
import pytest
import scipy.sparse as sp

from rankbench.objective import ORACLES
from rankbench.optim import sgd_queries as sq


def problem(seed=0, n_queries=12, d=6, offset=0.0):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 30, n_queries)
    n = int(sizes.sum())
    X = rng.normal(size=(n, d))
    X[:, 0] += offset  # a large common offset: the centred rows (objective/centring.py)
    y = np.digitize(X[:, 1:] @ rng.normal(size=d - 1) + rng.normal(size=n), [-0.5, 0.8])
    y[: sizes[0]] = 1  # a one-level query: no pair, not one of SGD's queries
    ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return X, y, ptr


CASES = [
    ("counting", {"loss": "squared_hinge"}, False, 0.0),
    ("counting", {"loss": "hinge"}, True, 0.0),
    ("counting", {"loss": "huber"}, False, 0.0),
    ("counting", {"loss": "squared_hinge", "rescaling": "margin"}, False, 0.0),
    ("counting", {"loss": "squared_hinge", "rescaling": "slack"}, True, 0.0),
    ("counting", {"loss": "squared_hinge"}, False, 1e6),
    ("tree", {"loss": "squared_hinge"}, False, 0.0),
    ("tree", {"loss": "hinge"}, True, 1e6),
]


@pytest.mark.parametrize("name, kw, sparse, offset", CASES)
def test_each_step_is_the_step_of_the_query_alone(name, kw, sparse, offset):
    X, y, ptr = problem(offset=offset)
    Xk = sp.csr_matrix(X) if sparse else X
    C, eta0, t0 = 0.3, 0.37, 2.0
    o = ORACLES[name](Xk, y, ptr, C=C, **kw)
    assert o.has_sgd_steps
    queries = np.flatnonzero(o.levels.n_levels >= 2)
    Q = len(queries)
    assert 0 not in queries and Q == len(o.split_by_query())
    rng = np.random.default_rng(1)
    for w in (np.zeros(X.shape[1]), rng.normal(size=X.shape[1]), 1e-3 * rng.normal(size=X.shape[1])):
        for k, (q, alone) in enumerate(zip(queries, o.split_by_query(), strict=True)):
            t = int(rng.integers(1, 50))
            picks = np.zeros(t, dtype=np.int64)
            picks[t - 1] = k  # step t draws query q
            w1, avg = w.copy(), rng.normal(size=w.shape)
            avg1 = avg.copy()
            o.sgd_steps(w1, avg1, queries, picks, t, t, Q, eta0, t0, True)
            a, b = ptr[q], ptr[q + 1]
            for ref in (ORACLES[name](Xk[a:b], y[a:b], None, C=C, **kw), alone):
                ref.fun(w)
                expect = w - eta0 / (t + t0) * (w + Q * (ref.grad(w) - w))
                np.testing.assert_allclose(w1, expect, rtol=1e-12, atol=1e-12)
                np.testing.assert_allclose(avg1, avg + (expect - avg) / t, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["counting", "tree"])
@pytest.mark.parametrize("n_queries", [12, 2500])  # separate products, then the fused passes
def test_query_pass_keeps_the_state_of_the_last_fun(name, n_queries):
    X, y, ptr = problem(3, n_queries=n_queries)
    o = ORACLES[name](X, y, ptr, C=0.5)
    assert o._fused == (n_queries > 1000)
    twin = copy.copy(o)
    rng = np.random.default_rng(2)
    w, v = rng.normal(size=X.shape[1]), rng.normal(size=X.shape[1])
    f = o.fun(w)
    g = o.grad(w)
    twin.fun(w)
    queries = np.flatnonzero(o.levels.n_levels >= 2)
    u, u_avg = rng.normal(size=X.shape[1]), np.zeros(X.shape[1])
    o.sgd_steps(u, u_avg, queries, rng.integers(0, len(queries), 30), 1, 30, len(queries), 1.0,
                5.0, True)
    assert o.fun(w) == f
    np.testing.assert_array_equal(o.grad(w), g)
    np.testing.assert_array_equal(o.hess_vec(v), twin.hess_vec(v))


def test_document_margins_have_no_query_pass_and_sgd_splits():
    X, y, ptr = problem(4)
    o = ORACLES["counting"](X, y, ptr, C=0.5, rescaling="margin", delta="gain")
    assert not o.has_sgd_steps
    with pytest.raises(NotImplementedError, match="no SGD kernel"):
        o.sgd_steps(np.zeros(X.shape[1]), np.zeros(X.shape[1]), np.array([1]), np.zeros(1, int), 1,
                    1, 1, 1.0, 1.0, False)
    r = sq.sgd_queries(o, max_iter=50, random_state=0)
    assert np.all(np.isfinite(r.w)) and r.n_iter == 50


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
@pytest.mark.parametrize("average", [False, True])
def test_sgd_on_queries_runs_the_same_with_either_path(monkeypatch, loss, average):
    """The kernel against the oracles of ``split_by_query`` (the path before it): the same
    queries drawn, the same steps up to rounding."""
    X, y, ptr = problem(5, n_queries=15)
    fast = sq.sgd_queries(ORACLES["counting"](X, y, ptr, C=0.2, loss=loss), max_iter=400,
                          random_state=3, average=average, record_every=100)
    monkeypatch.setattr(ORACLES["counting"], "has_sgd_steps", False)
    slow = sq.sgd_queries(ORACLES["counting"](X, y, ptr, C=0.2, loss=loss), max_iter=400,
                          random_state=3, average=average, record_every=100)
    np.testing.assert_allclose(fast.w, slow.w, rtol=1e-9, atol=1e-12)
    assert fast.f == pytest.approx(slow.f, rel=1e-10)
    assert [h["objective"] for h in fast.history] == pytest.approx(
        [h["objective"] for h in slow.history], rel=1e-10)


def test_spectral_norm_is_the_largest_singular_value_squared():
    rng = np.random.default_rng(6)
    for shape in ((8, 46), (146, 45), (1, 5), (5, 1), (30, 30)):
        X = rng.normal(size=shape) * 10.0 ** rng.integers(-3, 3)
        assert sq._spectral_norm2(X) == pytest.approx(np.linalg.svd(X, compute_uv=False)[0] ** 2,
                                                      rel=1e-12)
    assert sq._spectral_norm2(np.zeros((0, 4))) == 0.0
