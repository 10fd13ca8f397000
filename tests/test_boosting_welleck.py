"""Welleck experiment driver: validation selection, recomputed test metrics, fold means."""

import numpy as np
import pytest

pytest.importorskip("rankbench.estimators.ranksvm")

from rankbench import metrics  # noqa: E402
from rankbench.boosting.welleck import paired_comparison, run_welleck, welleck_table  # noqa: E402
from rankbench.data import load_fold  # noqa: E402
from rankbench.estimators.auc_svm import AUCSVM  # noqa: E402
from rankbench.estimators.lambdamart import LambdaMART  # noqa: E402

TREES = {"n_estimators": 15, "num_leaves": 7, "min_data_in_leaf": 10, "early_stopping_rounds": 5}
SVM = {"solver": "prsvm_plus", "loss": "squared_hinge"}


def test_run_welleck_selects_on_validation_and_reports_test_metrics():
    frame = run_welleck("synthetic", folds=(1,), lr_grid=(0.02, 0.3), c_grid=(0.01, 10.0),
                        trees=TREES, svm=SVM)
    assert list(frame["solver"]) == ["lambdamart_mauc", "auc_svm"]
    tr, va, te = (load_fold("synthetic", 1, s) for s in ("train", "vali", "test"))
    # the chosen learning rate has the best validation MAUC of the grid, and the row's
    # test metrics are those of that model
    vals = {}
    for lr in (0.02, 0.3):
        m = LambdaMART(metric="mauc", learning_rate=lr, **TREES).fit(
            tr.X, tr.y, tr.qid, eval_set=(va.X, va.y, va.qid))
        vals[lr] = (metrics.mauc(va.y, m.decision_function(va.X), va.qid), m)
    best = max(vals, key=lambda k: vals[k][0])
    row = frame.iloc[0]
    assert row["value"] == best
    assert row["vali.mauc"] == pytest.approx(vals[best][0])
    s = vals[best][1].decision_function(te.X)
    assert row["mauc"] == pytest.approx(metrics.mauc(te.y, s, te.qid))
    assert row["map"] == pytest.approx(metrics.mean_average_precision(te.y, s, te.qid))
    assert row["auc_c2"] == pytest.approx(metrics.class_auc(te.y, s, te.qid)[2])
    assert row["p@3_macro"] == pytest.approx(metrics.precision_at_k(te.y, s, te.qid, 3, average="macro"))
    svm_vals = {C: metrics.mauc(va.y, AUCSVM(C=C, **SVM).fit(tr.X, tr.y).decision_function(va.X), va.qid)
                for C in (0.01, 10.0)}
    assert frame.iloc[1]["value"] == max(svm_vals, key=svm_vals.get)
    # learning works on this synthetic task
    assert row["mauc"] > 0.6


def test_welleck_table_means_and_paper_values():
    frame = run_welleck("synthetic", folds=(1, 2), lr_grid=(0.3,), c_grid=(1.0,), trees=TREES,
                        svm=SVM, binary=True)
    assert set(frame["solver"]) == {"lambdamart_auc", "auc_svm"}
    assert "mauc" not in frame.columns  # binary task: AUC and MAP
    table = welleck_table(frame)
    lm = table[table["solver"] == "lambdamart_auc"].iloc[0]
    assert lm["auc"] == pytest.approx(frame[frame["solver"] == "lambdamart_auc"]["auc"].mean())
    assert lm["n_folds"] == 2
    assert lm["paper.map"] is None or np.isnan(lm["paper.map"])  # no paper value for synthetic data
    # paired test over the test queries of both folds
    cmp = paired_comparison(frame, "auc", "lambdamart_auc", "auc_svm", n_resamples=200)
    pq = np.concatenate(list(frame[frame["solver"] == "lambdamart_auc"]["pq.auc"]))
    assert cmp["n_queries"] == np.sum(~np.isnan(pq))
    assert cmp["mean_a"] == pytest.approx(np.nanmean(pq))
    assert 0 < cmp["p_value"] <= 1
    assert paired_comparison(frame, "auc", "auc_svm", "auc_svm", n_resamples=50)["p_value"] == 1.0
    with pytest.raises(ValueError, match="per-query"):
        paired_comparison(frame, "mauc", "lambdamart_auc", "auc_svm")
    # a MQ2008 multi-class frame gets the paper's Table 1-2 numbers beside ours
    fake = frame.assign(dataset="mq2008", binary=False, solver=["lambdamart_mauc", "auc_svm"] * 2)
    t2 = welleck_table(fake).set_index("solver")
    assert t2.loc["lambdamart_mauc", "paper.mauc"] == 0.734
    assert t2.loc["auc_svm", "paper.map"] == 0.458
