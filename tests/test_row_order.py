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
