"""LambdaMART estimator: our NDCG hook reproduces LightGBM's lambdarank, determinism, history, errors."""

import numpy as np
import pytest

from rankbench.boosting.query_metrics import mean_query_metric
from rankbench.estimators.lambdamart import LambdaMART, LightGBMLambdaRank, XGBoostRanker
from rankbench.estimators.registry import make_solver


def make_queries(seed=0, n_queries=40, d=6):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(5, 30, size=n_queries)
    qid = np.repeat(np.arange(n_queries) * 3 + 7, sizes)
    X = rng.normal(size=(qid.size, d))
    w = np.linspace(-1.0, 2.0, d)  # one true model for every seed
    latent = X @ w + rng.normal(0, 1.0, qid.size)
    y = np.digitize(latent, np.quantile(latent, [0.6, 0.85]))
    return X, y, qid


TREES = {"num_leaves": 7, "min_data_in_leaf": 5, "learning_rate": 0.1}


def test_ndcg_hook_reproduces_native_lambdarank():
    """Same trees, same gradients: our custom-objective NDCG lambdas equal LightGBM's own.

    LightGBM keeps gradients in float32 and reads the sigmoid from a table, so scores agree
    to ~1e-5, not bitwise; a wrong discount, gain, truncation or norm moves them by >1e-2.
    """
    X, y, qid = make_queries(1)
    for norm in (True, False):
        ours = LambdaMART(metric="ndcg", n_estimators=15, ndcg_at=5, norm=norm, **TREES).fit(X, y, qid)
        native = LightGBMLambdaRank(n_estimators=15, ndcg_at=5, norm=norm, **TREES).fit(X, y, qid)
        a, b = ours.decision_function(X), native.decision_function(X)
        assert np.abs(b).max() > 0.1
        np.testing.assert_allclose(a, b, atol=2e-4 * np.abs(b).max())
    # and a different truncation level gives a different model (the test can fail)
    other = LambdaMART(metric="ndcg", n_estimators=15, ndcg_at=2, **TREES).fit(X, y, qid)
    native = LightGBMLambdaRank(n_estimators=15, ndcg_at=5, **TREES).fit(X, y, qid)
    assert np.abs(other.decision_function(X) - native.decision_function(X)).max() > 1e-3


@pytest.mark.parametrize("metric", ["auc", "mauc", "ndcg"])
def test_fit_improves_train_metric_and_is_deterministic(metric):
    X, y, qid = make_queries(2)
    order = np.argsort(qid, kind="stable")
    ptr = np.concatenate(([0], np.cumsum(np.unique(qid, return_counts=True)[1])))
    m1 = LambdaMART(metric=metric, n_estimators=20, random_state=3, **TREES).fit(X, y, qid)
    m2 = LambdaMART(metric=metric, n_estimators=20, random_state=3, **TREES).fit(X, y, qid)
    s1, s2 = m1.decision_function(X), m2.decision_function(X)
    np.testing.assert_array_equal(s1, s2)
    base = mean_query_metric(X[order, 0] * 0, y[order], ptr, metric)  # all ties
    assert mean_query_metric(s1[order], y[order], ptr, metric) > base + 0.1
    assert len(m1.history_) == 20 and m1.n_iter_ == 20 and m1.best_iteration_ == 20
    assert all(r["round_s"] >= 0 and r["gradient_s"] > 0 for r in m1.history_)
    assert m1.fit_time_ > 0 and m1.compile_time_ >= 0


def test_eval_set_history_and_early_stopping():
    X, y, qid = make_queries(3)
    Xv, yv, qv = make_queries(4, n_queries=20)
    m = LambdaMART(metric="mauc", n_estimators=300, early_stopping_rounds=5, learning_rate=0.5,
                   num_leaves=15, min_data_in_leaf=2).fit(X, y, qid, eval_set=(Xv, yv, qv))
    vals = [r["vali.mauc"] for r in m.history_]
    assert m.n_iter_ < 300  # stopped early
    assert m.best_iteration_ == int(np.argmax(vals)) + 1
    assert m.n_iter_ == m.best_iteration_ + 5
    # decision_function uses the best iteration: its vali MAUC is the recorded best value
    ptr = np.concatenate(([0], np.cumsum(np.unique(qv, return_counts=True)[1])))
    got = mean_query_metric(m.decision_function(Xv), yv, ptr, "mauc")
    assert got == pytest.approx(max(vals), abs=1e-9)
    # the harness passes eval_set sklearn-style, as a list holding one (X, y, qid)
    m2 = LambdaMART(metric="mauc", n_estimators=300, early_stopping_rounds=5, learning_rate=0.5,
                    num_leaves=15, min_data_in_leaf=2).fit(X, y, qid, eval_set=[(Xv, yv, qv)])
    assert [r["vali.mauc"] for r in m2.history_] == vals
    assert m2.best_iteration_ == m.best_iteration_


def test_qid_none_is_one_auc_problem():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] + 0.5 * rng.normal(size=300) > 0.5).astype(int)
    m = LambdaMART(metric="auc", n_estimators=10, **TREES).fit(X, y)
    s = m.decision_function(X)
    assert mean_query_metric(s, y, np.array([0, 300]), "auc") > 0.9


def test_sparse_input_gives_the_dense_model():
    import scipy.sparse as sp

    X, y, qid = make_queries(10, n_queries=15)
    X[np.abs(X) < 0.7] = 0.0
    dense = LambdaMART(metric="mauc", n_estimators=8, **TREES).fit(X, y, qid)
    sparse = LambdaMART(metric="mauc", n_estimators=8, **TREES).fit(sp.csr_matrix(X), y, qid)
    np.testing.assert_allclose(sparse.decision_function(sp.csr_matrix(X)), dense.decision_function(X))
    with pytest.raises(ValueError, match="NaN"):
        dense.decision_function(np.where(X == 0, np.nan, X))


def test_registry_builds_all_gbdt_solvers():
    X, y, qid = make_queries(6, n_queries=15)
    for name in ("lambdamart_auc", "lambdamart_mauc", "lambdamart_ndcg", "lgbm_lambdarank",
                 "xgb_pairwise", "xgb_ndcg"):
        est = make_solver(name, {"n_estimators": 3, "num_leaves": 4, "n_jobs": 1})
        s = est.fit(X, y, qid).decision_function(X)
        assert s.shape == (len(y),) and np.all(np.isfinite(s)), name
    assert make_solver("lambdamart_mauc", {}).metric == "mauc"
    with pytest.raises(ValueError, match="fixes metric"):
        make_solver("lambdamart_auc", {"metric": "ndcg"})


def test_xgboost_early_stopping_uses_best_iteration():
    X, y, qid = make_queries(7)
    Xv, yv, qv = make_queries(8, n_queries=15)
    m = XGBoostRanker("rank:ndcg", n_estimators=200, learning_rate=0.5, num_leaves=15,
                      early_stopping_rounds=5).fit(X, y, qid, eval_set=(Xv, yv, qv))
    vals = [r["vali.ndcg@10"] for r in m.history_]
    assert m.best_iteration_ == int(np.argmax(vals)) + 1
    assert m.n_iter_ < 200


@pytest.mark.parametrize("kwargs, match", [
    ({"metric": "map"}, "metric"),
    ({"learning_rate": 0.0}, "learning_rate"),
    ({"num_leaves": 1}, "num_leaves"),
    ({"n_estimators": 2.5, "ndcg_at": 3}, "n_estimators"),
    ({"sigma": -1.0}, "sigma"),
    ({"mauc_delta": "signed"}, "mauc_delta"),
    ({"ndcg_delta": "cut"}, "ndcg_delta"),
    ({"early_stopping_rounds": 3}, "eval_set"),
])
def test_bad_parameters_raise_value_error(kwargs, match):
    X, y, qid = make_queries(9, n_queries=5)
    with pytest.raises(ValueError, match=match):
        LambdaMART(**{"n_estimators": 2, **kwargs}).fit(X, y, qid)


def test_bad_inputs_raise_value_error():
    X, y, qid = make_queries(9, n_queries=5)
    with pytest.raises(ValueError, match=">= 0"):
        LambdaMART(n_estimators=2).fit(X, y - 1, qid)
    with pytest.raises(ValueError, match="not fitted"):
        LambdaMART().decision_function(X)
    m = LambdaMART(n_estimators=2).fit(X, y, qid)
    with pytest.raises(ValueError, match="features"):
        m.decision_function(X[:, :3])
    with pytest.raises(ValueError, match="eval_set"):
        LambdaMART(n_estimators=2).fit(X, y, qid, eval_set=X)
    with pytest.raises(ValueError, match="eval_set"):
        LambdaMART(n_estimators=2).fit(X, y, qid, eval_set=[(X, y, qid), (X, y, qid)])


@pytest.mark.realdata
def test_mq2008_ndcg_hook_matches_native_lambdarank(data_root):
    """MQ2008 Fold1: test NDCG@10 of our NDCG lambdas within 0.01 of LightGBM's lambdarank."""
    from conftest import require_dataset
    from rankbench.data import load_fold

    require_dataset(data_root, "MQ2008")
    tr = load_fold("mq2008", 1, "train", root=data_root)
    te = load_fold("mq2008", 1, "test", root=data_root)
    kw = {"n_estimators": 60, "learning_rate": 0.05, "num_leaves": 15, "min_data_in_leaf": 20}
    ours = LambdaMART(metric="ndcg", **kw).fit(tr.X, tr.y, tr.qid)
    native = LightGBMLambdaRank(**kw).fit(tr.X, tr.y, tr.qid)
    a = mean_query_metric(ours.decision_function(te.X), te.y, te.query_ptr, "ndcg")
    b = mean_query_metric(native.decision_function(te.X), te.y, te.query_ptr, "ndcg")
    assert 0.3 < b < 0.9
    assert abs(a - b) < 0.01


def test_lightgbm_fatal_lines_do_not_leak_before_our_error(capfd):
    """Issue 11: LightGBM's native '[LightGBM] [Fatal]' lines stay off stderr; our ValueError says it."""
    X = np.ones((10, 3))
    y = np.array([0, 1] * 5)
    with pytest.raises(ValueError, match="no feature can be split"):
        LambdaMART(n_estimators=2, min_data_in_leaf=1).fit(X, y, np.zeros(10))
    out, err = capfd.readouterr()
    assert "[Fatal]" not in err and "[Fatal]" not in out
    # other native output still reaches stderr, in order, while the filter is active
    import os

    from rankbench.boosting.lightgbm_hook import NativeFatalFilter

    with NativeFatalFilter() as f:
        os.write(2, b"progress 1\n[LightGBM] [Fatal] boom\n\nprogress 2\n")
    assert capfd.readouterr().err == "progress 1\nprogress 2\n"
    assert f.held == [b"[LightGBM] [Fatal] boom\n", b"\n"]
    f.release()
    assert capfd.readouterr().err == "[LightGBM] [Fatal] boom\n\n"


def test_verbose_logs_one_line_per_round(caplog):
    """Issue 13: verbose=True logs each boosting round (with the eval value) at INFO."""
    import logging

    X, y, qid = make_queries(3, n_queries=8)
    logging.getLogger("rankbench").addHandler(logging.NullHandler())
    with caplog.at_level(logging.INFO, logger="rankbench.estimators.lambdamart"):
        LambdaMART(metric="ndcg", n_estimators=4, min_data_in_leaf=2, verbose=True).fit(
            X, y, qid, eval_set=(X, y, qid))
    lines = [r.getMessage() for r in caplog.records if r.name == "rankbench.estimators.lambdamart"]
    assert len(lines) == 4
    assert lines[0].startswith("LambdaMART-ndcg: round 1/4 ")
    assert "vali.ndcg@10=" in lines[-1] and "round 4/4" in lines[-1]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="rankbench.estimators.lambdamart"):
        LambdaMART(n_estimators=2, min_data_in_leaf=2).fit(X, y, qid)
    assert not caplog.records
    with pytest.raises(ValueError, match="verbose"):
        LambdaMART(n_estimators=2, verbose="yes").fit(X, y, qid)
