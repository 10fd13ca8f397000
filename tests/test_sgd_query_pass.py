"""SGD on queries through the oracles' one-query pass (``SweepOracle.query_loss_grad``): the same
per-query loss and gradient as ``split_by_query``'s oracles (the reference: an oracle built on the
query's rows alone), the oracle's own state left as it was, and the same SGD run either way."""

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
def test_query_pass_equals_the_oracle_of_the_query_alone(name, kw, sparse, offset):
    X, y, ptr = problem(offset=offset)
    Xk = sp.csr_matrix(X) if sparse else X
    o = ORACLES[name](Xk, y, ptr, C=0.3, **kw)
    assert o.has_query_pass
    queries = np.flatnonzero(o.levels.n_levels >= 2)
    assert 0 not in queries and len(queries) == len(o.split_by_query())
    rng = np.random.default_rng(1)
    for w in (np.zeros(X.shape[1]), rng.normal(size=X.shape[1]), 1e-3 * rng.normal(size=X.shape[1])):
        for q, alone in zip(queries, o.split_by_query(), strict=True):
            a, b = ptr[q], ptr[q + 1]
            ref = ORACLES[name](Xk[a:b], y[a:b], None, C=0.3, **kw)
            f = ref.fun(w)
            L, g = o.query_loss_grad(w, int(q))
            assert L == pytest.approx((f - 0.5 * w @ w) / 0.3, rel=1e-12, abs=1e-12)
            np.testing.assert_allclose(w + 0.3 * g, ref.grad(w), rtol=1e-12, atol=1e-12)
            alone.fun(w)
            np.testing.assert_allclose(w + 0.3 * g, alone.grad(w), rtol=1e-12, atol=1e-12)


def test_query_pass_keeps_the_state_of_the_last_fun():
    X, y, ptr = problem(3)
    o = ORACLES["counting"](X, y, ptr, C=0.5)
    twin = copy.copy(o)
    rng = np.random.default_rng(2)
    w, v = rng.normal(size=X.shape[1]), rng.normal(size=X.shape[1])
    f = o.fun(w)
    g = o.grad(w)
    twin.fun(w)
    for q in np.flatnonzero(o.levels.n_levels >= 2):
        o.query_loss_grad(rng.normal(size=X.shape[1]), int(q))
    assert o.fun(w) == f
    np.testing.assert_array_equal(o.grad(w), g)
    np.testing.assert_array_equal(o.hess_vec(v), twin.hess_vec(v))


def test_document_margins_have_no_query_pass_and_sgd_splits():
    X, y, ptr = problem(4)
    o = ORACLES["counting"](X, y, ptr, C=0.5, rescaling="margin", delta="gain")
    assert not o.has_query_pass
    with pytest.raises(NotImplementedError, match="no one-query pass"):
        o.query_loss_grad(np.zeros(X.shape[1]), 1)
    r = sq.sgd_queries(o, max_iter=50, random_state=0)
    assert np.all(np.isfinite(r.w)) and r.n_iter == 50


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
@pytest.mark.parametrize("average", [False, True])
def test_sgd_on_queries_runs_the_same_with_either_path(monkeypatch, loss, average):
    """The one-query pass against the oracles of ``split_by_query`` (the path before it): the
    same queries drawn, the same steps up to rounding."""
    X, y, ptr = problem(5, n_queries=15)
    fast = sq.sgd_queries(ORACLES["counting"](X, y, ptr, C=0.2, loss=loss), max_iter=400,
                          random_state=3, average=average, record_every=100)
    monkeypatch.setattr(ORACLES["counting"], "has_query_pass", False)
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
