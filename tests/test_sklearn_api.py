"""scikit-learn conventions of every public estimator (rankbench.estimators.base.RankerMixin):
score = mean NDCG@10 (LETOR), NotFittedError, group=, feature_names_in_, GridSearchCV with
metadata routing (checked split by split against a hand-made cross-validation), check_estimator,
and the top-level exports the README names."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import sklearn
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, GroupKFold

import rankbench
from rankbench.metrics import ndcg_at_k


def _problem(n_queries=24, per_query=15, d=5, seed=0):
    rng = np.random.default_rng(seed)
    n = n_queries * per_query
    qid = np.repeat(np.arange(n_queries) * 7 + 3, per_query)  # ids need not be 0..q-1
    X = rng.normal(size=(n, d))
    y = np.clip(np.round(X @ rng.normal(size=d) + rng.normal(size=n)), 0, 2).astype(np.int64)
    return X, y, qid


def _estimators():
    pytest.importorskip("xgboost")
    return [rankbench.RankSVM(), rankbench.SPDRanker(n_iter=2000), rankbench.AUCSVM(),
            rankbench.LambdaMART(n_estimators=5, min_data_in_leaf=5),
            rankbench.LightGBMLambdaRank(n_estimators=5, min_data_in_leaf=5),
            rankbench.XGBoostRanker(n_estimators=5)]


def test_every_estimator_the_readme_names_is_a_top_level_export():
    for name in ("RankSVM", "SPDRanker", "LambdaMART", "LightGBMLambdaRank", "XGBoostRanker",
                 "AUCSVM", "KernelMap", "RankingData", "ResultStore", "read_letor", "evaluate"):
        assert name in rankbench.__all__ and name in dir(rankbench)
        assert getattr(rankbench, name).__name__ == name
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        rankbench.Nope  # noqa: B018


def test_score_is_mean_letor_ndcg_at_10_and_not_fitted_errors_come_first():
    X, y, qid = _problem()
    for est in _estimators():
        with pytest.raises(NotFittedError, match="not fitted yet"):
            est.decision_function(X)
        with pytest.raises(NotFittedError):
            est.score(X, y, qid=qid)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y, qid=qid)
        s = est.decision_function(X)
        assert est.score(X, y, qid=qid) == pytest.approx(
            ndcg_at_k(y, s, qid, k=10, convention="letor"), abs=1e-15)
        # group= (LightGBM's query sizes) is the same as qid for grouped documents
        sizes = np.unique(qid, return_counts=True)[1]
        assert est.score(X, y, group=sizes) == est.score(X, y, qid=qid)


def test_group_sizes_train_the_same_model_as_qid_and_bad_groups_are_named():
    X, y, qid = _problem()
    sizes = np.unique(qid, return_counts=True)[1]
    a = rankbench.RankSVM(C=0.1).fit(X, y, qid=qid)
    b = rankbench.RankSVM(C=0.1).fit(X, y, group=sizes)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    # plain lists are array-likes too
    np.testing.assert_array_equal(rankbench.RankSVM(C=0.1).fit(X.tolist(), y.tolist(), qid.tolist()).coef_,
                                  a.coef_)
    with pytest.raises(ValueError, match="not both"):
        rankbench.RankSVM().fit(X, y, qid=qid, group=sizes)
    with pytest.raises(ValueError, match=f"sum to {len(y) - 1} but X has {len(y)} rows"):
        rankbench.RankSVM().fit(X, y, group=np.r_[sizes[:-1], sizes[-1] - 1])
    with pytest.raises(ValueError, match="sizes must be >= 1"):
        rankbench.RankSVM().fit(X, y, group=np.r_[sizes, 0])
    with pytest.raises(ValueError, match="integer query sizes"):
        rankbench.RankSVM().fit(X, y, group=sizes + 0.5)


def test_feature_names_in_come_from_a_dataframe_and_are_checked_at_predict_time():
    pd = pytest.importorskip("pandas")
    X, y, qid = _problem()
    cols = [f"f{i}" for i in range(X.shape[1])]
    df = pd.DataFrame(X, columns=cols)
    m = rankbench.RankSVM().fit(df, y, qid=qid)
    assert list(m.feature_names_in_) == cols
    np.testing.assert_array_equal(m.decision_function(df), m.decision_function(X))
    with pytest.raises(ValueError, match="fitted with feature names"):
        m.decision_function(df[cols[::-1]])
    assert not hasattr(rankbench.RankSVM().fit(X, y, qid=qid), "feature_names_in_")
    # refitting on an array forgets the names
    assert not hasattr(m.fit(X, y, qid=qid), "feature_names_in_")


def test_grid_search_with_group_k_fold_trains_and_scores_each_split_on_its_queries():
    X, y, qid = _problem()
    grid = [1e-3, 1.0]
    with sklearn.config_context(enable_metadata_routing=True):
        gs = GridSearchCV(rankbench.RankSVM(), {"C": grid}, cv=GroupKFold(4))
        gs.fit(X, y, groups=qid, qid=qid)
    # the same cross-validation by hand: each split trained and scored with its own qids
    for i, C in enumerate(grid):
        for k, (tr, te) in enumerate(GroupKFold(4).split(X, y, groups=qid)):
            m = rankbench.RankSVM(C=C).fit(X[tr], y[tr], qid[tr])
            want = ndcg_at_k(y[te], m.decision_function(X[te]), qid[te], k=10, convention="letor")
            assert gs.cv_results_[f"split{k}_test_score"][i] == pytest.approx(want, abs=1e-12)
    # the one-query score differs: a check that the test qids really reached score()
    one_query = rankbench.RankSVM(C=grid[0]).fit(X[tr], y[tr], qid[tr]).score(X[te], y[te])
    assert one_query != pytest.approx(gs.cv_results_["split3_test_score"][0], abs=1e-6)
    assert gs.best_params_["C"] in grid
    assert gs.best_estimator_.score(X, y, qid=qid) > 0.5


@pytest.mark.parametrize("make", [
    lambda: rankbench.RankSVM(), lambda: rankbench.SPDRanker(), lambda: rankbench.AUCSVM(),
    lambda: rankbench.LightGBMLambdaRank(),
    # our lambda-gradients on LightGBM trees: leaves of 20 documents cannot split the checks'
    # 10-30 document problems (the error names min_data_in_leaf), so the leaves are smaller
    lambda: rankbench.LambdaMART(min_data_in_leaf=1, n_estimators=10),
    lambda: rankbench.XGBoostRanker(),
], ids=["RankSVM", "SPDRanker", "AUCSVM", "LightGBMLambdaRank", "LambdaMART", "XGBoostRanker"])
def test_check_estimator_passes(make):
    from sklearn.utils.estimator_checks import check_estimator

    expected = {}
    if "XGBoost" in repr(make()):
        pytest.importorskip("xgboost")
        # XGBoost weighs queries, not documents: weights that differ inside one query (these
        # checks' single query) are refused with a ValueError saying so
        why = "XGBoost's ranking weights are per query; documents of a query must share one"
        expected = dict.fromkeys(("check_sample_weights_not_overwritten",
                                  "check_sample_weight_equivalence_on_dense_data",
                                  "check_sample_weight_equivalence_on_sparse_data"), why)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = check_estimator(make(), on_fail=None, on_skip=None,
                                  expected_failed_checks=expected)
    assert {r["check_name"] for r in results if r["status"] == "xfail"} == set(expected)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert len(results) >= 40 and failed == []
    # EstimatorBase is not sklearn.base.BaseEstimator (it does not import scikit-learn):
    # check_estimator says so and runs every check all the same
    assert any("does not inherit from `sklearn.base.BaseEstimator`" in str(w.message) for w in caught)


def _pipeline(**score_request):
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler()
    rank = rankbench.RankSVM()
    if score_request:
        scaler.set_fit_request(sample_weight=False)
        rank.set_score_request(**score_request)
    return Pipeline([("scale", scaler), ("rank", rank)])


def _hand_made_cv(X, y, qid, C, weights=None):
    """Per split: StandardScaler fitted on the training split, RankSVM(C), and the test split's
    NDCG@10 per query, averaged with the queries' weights when given."""
    from sklearn.preprocessing import StandardScaler

    out = []
    for tr, te in GroupKFold(4).split(X, y, groups=qid):
        scaler = StandardScaler().fit(X[tr])
        m = rankbench.RankSVM(C=C).fit(scaler.transform(X[tr]), y[tr], qid[tr])
        per_q = ndcg_at_k(y[te], m.decision_function(scaler.transform(X[te])), qid[te], k=10,
                          convention="letor", per_query=True)
        if weights is None:
            out.append(per_q.mean())
        else:  # queries in order of first appearance, each with its documents' common weight
            _, first = np.unique(qid[te], return_index=True)
            w = weights[te][np.sort(first)]
            out.append(float(np.sum(w * per_q) / np.sum(w)))
    return out


def test_pipeline_grid_search_with_routing_scores_every_split_like_a_hand_made_cv():
    """Pipeline.score always offers sample_weight (None too): without it in score's signature
    every candidate scored NaN and the search silently kept the first C."""
    X, y, qid = _problem()
    grid = [1e-3, 1.0]
    with sklearn.config_context(enable_metadata_routing=True):
        gs = GridSearchCV(_pipeline(), {"rank__C": grid}, cv=GroupKFold(4), error_score="raise")
        gs.fit(X, y, groups=qid, qid=qid)
    for i, C in enumerate(grid):
        want = _hand_made_cv(X, y, qid, C)
        got = [gs.cv_results_[f"split{k}_test_score"][i] for k in range(4)]
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    assert np.isfinite(gs.cv_results_["mean_test_score"]).all()
    assert gs.best_params_["rank__C"] == grid[int(np.argmax(gs.cv_results_["mean_test_score"]))]


def test_pipeline_grid_search_weighs_queries_by_requested_sample_weight():
    X, y, qid = _problem()
    rng = np.random.default_rng(4)
    per_query = dict(zip(np.unique(qid).tolist(), rng.integers(1, 5, size=np.unique(qid).size).tolist(),
                         strict=True))
    weights = np.array([per_query[q] for q in qid.tolist()], dtype=float)
    grid = [1e-3, 1.0]
    with sklearn.config_context(enable_metadata_routing=True):
        gs = GridSearchCV(_pipeline(sample_weight=True), {"rank__C": grid}, cv=GroupKFold(4),
                          error_score="raise")
        gs.fit(X, y, groups=qid, qid=qid, sample_weight=weights)
    for i, C in enumerate(grid):
        want = _hand_made_cv(X, y, qid, C, weights)
        got = [gs.cv_results_[f"split{k}_test_score"][i] for k in range(4)]
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
        # the weights matter: the unweighted means differ
        assert not np.allclose(want, _hand_made_cv(X, y, qid, C), atol=1e-6)


def test_score_sample_weight_weighs_queries_and_refuses_weights_that_differ_inside_one():
    X, y, qid = _problem()
    m = rankbench.RankSVM().fit(X, y, qid=qid)
    per_q = ndcg_at_k(y, m.decision_function(X), qid, k=10, convention="letor", per_query=True)
    n_q = per_q.size
    w_q = np.arange(1, n_q + 1, dtype=float)
    w = np.repeat(w_q, np.unique(qid, return_counts=True)[1])  # qid is sorted and grouped
    assert m.score(X, y, qid=qid, sample_weight=w) == pytest.approx(np.sum(w_q * per_q) / w_q.sum(),
                                                                     abs=1e-14)
    assert m.score(X, y, qid=qid, sample_weight=np.full(len(y), 3.0)) == pytest.approx(
        m.score(X, y, qid=qid), abs=1e-14)
    # a query of weight 0 drops out of the mean
    w0 = np.where(qid == qid[0], 0.0, 1.0)
    assert m.score(X, y, qid=qid, sample_weight=w0) == pytest.approx(per_q[1:].mean(), abs=1e-14)
    bad = w.copy()
    bad[1] += 1.0
    with pytest.raises(ValueError, match=f"differs inside query {qid[0]}"):
        m.score(X, y, qid=qid, sample_weight=bad)
    with pytest.raises(ValueError, match="one weight per document"):
        m.score(X, y, qid=qid, sample_weight=w[:-1])
    with pytest.raises(ValueError, match="finite and >= 0"):
        m.score(X, y, qid=qid, sample_weight=-w)
    with pytest.raises(ValueError, match="zero for every document"):
        m.score(X, y, qid=qid, sample_weight=0 * w)


def test_docs_sklearn_code_blocks_run():
    """docs/sklearn.md's Python blocks are run as they stand, so they cannot drift."""
    import re
    from pathlib import Path

    pytest.importorskip("xgboost")
    text = (Path(__file__).resolve().parents[1] / "docs" / "sklearn.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 2
    for block in blocks:
        exec(compile(block, "docs/sklearn.md", "exec"), {})  # noqa: S102 (our own docs)
