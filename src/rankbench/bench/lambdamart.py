"""Benchmark: seconds per boosting round of LambdaMART-AUC / -MAUC / -NDCG (our lambdas through
LightGBM's custom-objective hook) against LightGBM's native lambdarank, identical tree settings.

MQ2008 Fold1 training split when the data is present (RANKBENCH_DATA), else a labelled
synthetic stand-in of the same shape.  No eval set, one thread each, the solvers run
interleaved ``repeats`` times and the fastest repeat is kept (the machine is shared).
"""

from __future__ import annotations

TREES = {"learning_rate": 0.1, "num_leaves": 31, "min_data_in_leaf": 20, "ndcg_at": 10, "n_jobs": 1}


def _training_data():
    from rankbench.data import DatasetNotFound, load_fold

    try:
        return load_fold("mq2008", 1, "train"), "mq2008/Fold1"
    except DatasetNotFound:
        from rankbench.data.synthetic import make_letor_like

        return (make_letor_like(n_queries=471, docs_per_query=20, n_features=46, seed=0),
                "synthetic stand-in for mq2008/Fold1")


def run(quick: bool = False) -> list[dict]:
    """One row per solver: seconds per round (min over repeats), gradient share, ratio to native."""
    from rankbench.estimators.lambdamart import LambdaMART, LightGBMLambdaRank

    data, name = _training_data()
    rounds = 30 if quick else 200
    repeats = 2 if quick else 3
    makers = {
        "lgbm_lambdarank": lambda: LightGBMLambdaRank(n_estimators=rounds, **TREES),
        "lambdamart_ndcg": lambda: LambdaMART(metric="ndcg", n_estimators=rounds, **TREES),
        "lambdamart_auc": lambda: LambdaMART(metric="auc", n_estimators=rounds, **TREES),
        "lambdamart_mauc": lambda: LambdaMART(metric="mauc", n_estimators=rounds, **TREES),
    }
    LambdaMART(metric="auc", n_estimators=1).fit(data.X[:50], data.y[:50], data.qid[:50])  # compile
    best: dict[str, dict] = {}
    for _ in range(repeats):
        for solver, make in makers.items():
            est = make().fit(data.X, data.y, data.qid)
            per_round = est.fit_time_ / est.n_iter_
            if solver not in best or per_round < best[solver]["seconds"]:
                best[solver] = {"seconds": per_round,
                                "gradient_s": getattr(est, "gradient_time_", float("nan")) / est.n_iter_}
    native = best["lgbm_lambdarank"]["seconds"]
    rows = []
    for solver, b in best.items():
        rows.append({
            "part": "lambdamart", "case": f"{name} {solver}", "solver": solver,
            "seconds": b["seconds"], "unit": "per round", "rounds": rounds,
            "gradient_s_per_round": b["gradient_s"], "ratio_to_native": b["seconds"] / native,
            "n_docs": data.n_docs, "n_queries": data.n_queries,
            "num_leaves": TREES["num_leaves"], "threads": TREES["n_jobs"],
        })
    return rows


if __name__ == "__main__":
    import pandas as pd

    print(pd.DataFrame(run(quick=True)).to_string(index=False))
