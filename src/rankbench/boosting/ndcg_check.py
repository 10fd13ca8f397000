"""Evidence that the lambda machinery is right: our NDCG lambdas through LightGBM's custom-objective
hook against LightGBM's native lambdarank, same trees, per fold test NDCG@10.

`python -m rankbench.boosting.ndcg_check [--folds 1,2,3,4,5]` prints one row per fold.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

TREES = {"n_estimators": 300, "learning_rate": 0.05, "num_leaves": 31, "min_data_in_leaf": 20,
         "ndcg_at": 10}


def run_ndcg_check(dataset: str = "mq2008", folds: tuple[int, ...] = (1, 2, 3, 4, 5),
                   trees: dict[str, Any] | None = None, root: Any = None) -> pd.DataFrame:
    """Per fold: test NDCG@10 (LETOR convention and the gain-2^y-1 / log2(1+r) one) of both models."""
    from rankbench import metrics
    from rankbench.boosting.query_metrics import mean_query_metric
    from rankbench.data import load_fold
    from rankbench.estimators.lambdamart import LambdaMART, LightGBMLambdaRank

    trees = {**TREES, **(trees or {})}
    rows = []
    for fold in folds:
        tr = load_fold(dataset, fold, "train", root=root)
        te = load_fold(dataset, fold, "test", root=root)
        row: dict[str, Any] = {"dataset": dataset, "fold": fold}
        for name, model in (("ours", LambdaMART(metric="ndcg", **trees)),
                            ("native", LightGBMLambdaRank(**trees))):
            s = model.fit(tr.X, tr.y, tr.qid).decision_function(te.X)
            row[f"{name}.ndcg@10"] = metrics.ndcg_at_k(te.y, s, te.qid, 10, convention="letor")
            row[f"{name}.ndcg@10_standard"] = mean_query_metric(s, te.y, te.query_ptr, "ndcg", 10)
            row[f"{name}.s_per_round"] = model.fit_time_ / model.n_iter_
        row["diff"] = row["ours.ndcg@10"] - row["native.ndcg@10"]
        rows.append(row)
    frame = pd.DataFrame(rows)
    mean = frame.drop(columns=["dataset", "fold"]).mean().to_dict()
    return pd.concat([frame, pd.DataFrame([{"dataset": dataset, "fold": "mean", **mean}])],
                     ignore_index=True)


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(prog="python -m rankbench.boosting.ndcg_check")
    ap.add_argument("--folds", default="1,2,3,4,5")
    args = ap.parse_args()
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(run_ndcg_check(folds=tuple(int(f) for f in args.folds.split(","))).to_string(index=False))
