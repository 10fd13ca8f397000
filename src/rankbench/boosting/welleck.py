"""Welleck (ECIR 2016) experiment: LambdaMART-MAUC / -AUC against the per-class AUC-SVM baseline.

``run_welleck("mq2008")`` reproduces the multi-class part (Tables 1-2 MQ2008 column, the
class-reference AUCs of Table 3, micro / macro P@1..10 of Fig. 2); ``run_welleck("ohsumed",
binary=True)`` is the binary part on OHSUMED with labels > 0 as relevant (the paper used the
LETOR 3.0 Gov sets, which are not available here).  Protocol (paper sect. 5): the
LambdaMART learning rate is chosen per fold on the validation split by the target metric
(MAUC, or AUC when binary), the number of trees by early stopping on the same split; the SVM's
C is chosen per fold on validation by the same metric.  The paper's grids were lost in
extraction; ours are the defaults below.  ``welleck_table`` averages over folds and puts the
paper's numbers beside ours; ``paired_comparison`` tests LambdaMART against the SVM on the
per-query values of all test queries (sign-flip randomization test).

This trains models: it is the experiment definition the reproduce stage stores as runs;
the numbers it returns are computed, never copied.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

# Welleck 2016 Tables 1-2, MQ2008 column (Table 1 = MAUC, Table 2 = MAP).
PAPER_MQ2008 = {
    "lambdamart_mauc": {"mauc": 0.734, "map": 0.474},
    "auc_svm": {"mauc": 0.737, "map": 0.458},
}

LR_GRID = (0.01, 0.05, 0.1, 0.5)
C_GRID = (0.01, 0.1, 1.0, 10.0)
TREES = {"n_estimators": 500, "num_leaves": 15, "min_data_in_leaf": 20, "early_stopping_rounds": 50}


def _test_metrics(y: np.ndarray, s: np.ndarray, qid: np.ndarray, binary: bool) -> dict[str, float]:
    from rankbench import metrics

    out = {"map": metrics.mean_average_precision(y, s, qid), "auc": metrics.auc(y, s, qid)}
    if not binary:
        out["mauc"] = metrics.mauc(y, s, qid)
        # the paper does not say whether MAUC is per query or over the pooled test set
        out["mauc_pooled"] = metrics.mauc(y, s, None)
        for c, v in metrics.class_auc(y, s, qid).items():
            out[f"auc_c{c}"] = v
    for k in range(1, 11):
        out[f"p@{k}"] = metrics.precision_at_k(y, s, qid, k, average="micro")
        out[f"p@{k}_macro"] = metrics.precision_at_k(y, s, qid, k, average="macro")
    # per-query values (test queries in order of first appearance) for paired tests
    out["pq.map"] = metrics.mean_average_precision(y, s, qid, per_query=True)
    out["pq.auc"] = metrics.auc(y, s, qid, per_query=True)
    if not binary:
        out["pq.mauc"] = metrics.mauc(y, s, qid, per_query=True)
    return out


def _select_metric(y, s, qid, binary: bool) -> float:
    from rankbench import metrics

    return metrics.auc(y, s, qid) if binary else metrics.mauc(y, s, qid)


def run_welleck(dataset: str = "mq2008", folds: tuple[int, ...] = (1, 2, 3, 4, 5),
                binary: bool = False, variant: str | None = None, root: Any = None,
                lr_grid: tuple[float, ...] = LR_GRID, c_grid: tuple[float, ...] = C_GRID,
                trees: dict[str, Any] | None = None, svm: dict[str, Any] | None = None,
                n_jobs: int = 1, progress: bool = False) -> pd.DataFrame:
    """Per-fold test metrics of LambdaMART-(M)AUC and the AUC-SVM with validation-chosen lr / C.

    One row per (solver, fold): the chosen parameter, its validation score and the test
    metrics (``mauc``, ``map``, ``auc``, ``auc_c<c>``, ``p@k``, ``p@k_macro``).  ``binary``:
    labels > 0 become 1 in every split (LambdaMART-AUC vs the binary SVM).
    """
    from rankbench.data import load_fold
    from rankbench.estimators.auc_svm import AUCSVM
    from rankbench.estimators.lambdamart import LambdaMART

    trees = {**TREES, **(trees or {})}
    svm = dict(svm or {})
    metric = "auc" if binary else "mauc"
    rows = []
    for fold in folds:
        split = {}
        for name in ("train", "vali", "test"):
            d = load_fold(dataset, fold, name, variant=variant, root=root)
            y = (d.y > 0).astype(np.int64) if binary else d.y
            split[name] = (d.X, y, d.qid)
        Xtr, ytr, qtr = split["train"]
        Xva, yva, qva = split["vali"]
        Xte, yte, qte = split["test"]
        candidates = []
        for lr in lr_grid:
            m = LambdaMART(metric=metric, learning_rate=lr, n_jobs=n_jobs, **trees)
            m.fit(Xtr, ytr, qtr, eval_set=(Xva, yva, qva))
            candidates.append((_select_metric(yva, m.decision_function(Xva), qva, binary), lr, m))
        v, lr, m = max(candidates, key=lambda t: t[0])
        rows.append({"dataset": dataset, "binary": binary, "fold": fold,
                     "solver": f"lambdamart_{metric}", "param": "learning_rate", "value": lr,
                     "n_trees": m.best_iteration_, f"vali.{metric}": v, "fit_s": m.fit_time_,
                     **_test_metrics(yte, m.decision_function(Xte), qte, binary)})
        if progress:
            print(f"fold {fold} lambdamart_{metric}: lr={lr} vali={v:.4f} test {rows[-1][metric]:.4f}")
        candidates = []
        for C in c_grid:
            s_model = AUCSVM(C=C, **svm).fit(Xtr, ytr, qtr)
            candidates.append((_select_metric(yva, s_model.decision_function(Xva), qva, binary), C, s_model))
        v, C, s_model = max(candidates, key=lambda t: t[0])
        rows.append({"dataset": dataset, "binary": binary, "fold": fold, "solver": "auc_svm",
                     "param": "C", "value": C, "n_trees": None, f"vali.{metric}": v,
                     "fit_s": s_model.fit_time_,
                     **_test_metrics(yte, s_model.decision_function(Xte), qte, binary)})
        if progress:
            print(f"fold {fold} auc_svm: C={C} vali={v:.4f} test {rows[-1][metric]:.4f}")
    return pd.DataFrame(rows)


def welleck_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean over folds per (dataset, solver) of the test metrics, with the paper's MQ2008 values beside."""
    num = [c for c in frame.columns if c not in ("dataset", "binary", "fold", "solver", "param",
                                                   "value", "n_trees") and not c.startswith("pq.")]
    out = frame.groupby(["dataset", "binary", "solver"], sort=False)[num].mean().reset_index()
    out["n_folds"] = frame.groupby(["dataset", "binary", "solver"], sort=False).size().to_numpy()
    for key in ("mauc", "map"):
        out[f"paper.{key}"] = [
            PAPER_MQ2008.get(s, {}).get(key) if d == "mq2008" and not b else None
            for d, b, s in zip(out["dataset"], out["binary"], out["solver"], strict=True)
        ]
    return out


def paired_comparison(frame: pd.DataFrame, metric: str, a: str, b: str,
                      n_resamples: int = 10000) -> dict[str, float]:
    """Solver a vs b on every test query of every fold: mean difference and sign-flip p-value.

    Queries where either value is undefined (NaN) are dropped; O(n_resamples * queries).
    """
    from rankbench.significance import paired_randomization_test

    col = f"pq.{metric}"
    if col not in frame.columns:
        raise ValueError(f"no per-query values of {metric!r} in the frame (have: "
                         f"{sorted(c[3:] for c in frame.columns if c.startswith('pq.'))})")
    va, vb = [], []
    for fold in sorted(frame["fold"].unique()):
        fa = frame[(frame["fold"] == fold) & (frame["solver"] == a)]
        fb = frame[(frame["fold"] == fold) & (frame["solver"] == b)]
        if len(fa) != 1 or len(fb) != 1:
            raise ValueError(f"fold {fold}: need exactly one row of {a!r} and of {b!r}")
        va.append(np.asarray(fa[col].iloc[0], float))
        vb.append(np.asarray(fb[col].iloc[0], float))
    x, y = np.concatenate(va), np.concatenate(vb)
    keep = ~(np.isnan(x) | np.isnan(y))
    return {"metric": metric, "a": a, "b": b, "n_queries": int(keep.sum()),
            "mean_a": float(x[keep].mean()), "mean_b": float(y[keep].mean()),
            "p_value": paired_randomization_test(x[keep], y[keep], n_resamples=n_resamples)}


def main(argv: list[str] | None = None) -> int:
    """`python -m rankbench.boosting.welleck [--quick]`: MQ2008 multi-class and OHSUMED binary tables."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m rankbench.boosting.welleck")
    ap.add_argument("--folds", default="1,2,3,4,5")
    ap.add_argument("--skip-binary", action="store_true")
    ap.add_argument("--out", default=None, help="write the per-fold rows to this CSV")
    args = ap.parse_args(argv)
    folds = tuple(int(f) for f in args.folds.split(","))
    frames = [run_welleck("mq2008", folds, progress=True)]
    if not args.skip_binary:
        frames.append(run_welleck("ohsumed", folds, binary=True, progress=True))
    frame = pd.concat(frames, ignore_index=True)
    if args.out:
        frame.to_csv(args.out, index=False)
    with pd.option_context("display.width", 200, "display.max_columns", 60):
        table = welleck_table(frame)
        cols = ["dataset", "solver", "n_folds", "mauc", "paper.mauc", "mauc_pooled", "map",
                "paper.map", "auc"]
        cols += [c for c in table.columns if c.startswith("auc_c")]
        print(table[[c for c in cols if c in table.columns]].to_string(index=False))
        pk = [f"p@{k}" for k in range(1, 11)] + [f"p@{k}_macro" for k in range(1, 11)]
        print(table[["dataset", "solver", *pk]].T.to_string())
        tests = []
        for (dataset, binary), part in frame.groupby(["dataset", "binary"], sort=False):
            lm = "lambdamart_auc" if binary else "lambdamart_mauc"
            for metric in (("auc", "map") if binary else ("mauc", "map")):
                tests.append({"dataset": dataset, **paired_comparison(part, metric, lm, "auc_svm")})
        print(pd.DataFrame(tests).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
