"""Model selection: the one rule for choosing hyper-parameters per fold, and what is built on it.

The LETOR protocol: per (experiment, dataset, variant, fold, solver), the parameter set
with the best validation metric is chosen; runs of one parameter set with several seeds
are averaged first; ties go to the smallest numeric parameter values (parameters in name
order), then to the canonical parameter JSON.  The CLI (``rankbench results --select``,
the sweep summary), the report and the benchmarks all call ``select_per_fold``; nothing
else selects.  ``mean_over_folds`` serves the fixed-parameter protocol and C-sweep curves;
``compare_selected`` pairs the selected models' per-query test values.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

GROUP_KEYS = ("experiment", "dataset", "variant", "fold", "solver")


def select_per_fold(frame, metric: str = "vali.ndcg@10", keys: tuple[str, ...] = GROUP_KEYS):
    """Model selection: per (experiment, dataset, variant, fold, solver) the params with the best ``metric``.

    ``frame`` is ``ResultStore.to_frame()`` output (other columns may stand in for the
    group ``keys``, e.g. the report groups an artefact's runs by its dataset entry); failed
    runs and runs without the metric are ignored, so a fold where no run has the metric has
    no selection.  Runs of one parameter set with several seeds are averaged
    first (selecting the luckiest seed would bias the test numbers upwards): metrics are
    then means over seeds, ``n_seeds`` says how many, ``run_id`` is one of them and
    ``run_ids`` lists them all.  Ties go
    to the smallest numeric parameter values (parameters in name order), then to the
    canonical JSON (deterministic).  One row per group with the chosen ``params``,
    ``selected_by``, ``selected_value``, ``n_candidates`` and the chosen runs' metrics.
    """
    import pandas as pd

    if metric not in frame.columns:
        raise ValueError(
            f"selection metric {metric!r} is not a column of the frame; "
            f"metric columns: {sorted(c for c in frame.columns if c.startswith(('vali.', 'test.')))}"
        )
    f = frame[(frame["status"] == "ok") & frame[metric].notna()].copy()
    keys = [k for k in keys if k in f.columns]
    if f.empty:
        return pd.DataFrame(columns=[*keys, "params", "selected_by", "selected_value", "n_candidates"])
    if "variant" in f.columns:
        f["variant"] = f["variant"].fillna("")
    f = _mean_over_seeds(f, [*keys, "params"])
    # ties: the smallest parameter values win (e.g. the smaller C), then the params JSON
    pcols = sorted(c for c in f.columns if c.startswith("params.") and _sortable(f[c]))
    order = [*keys, metric, *pcols, "params"]
    asc = [True] * len(keys) + [False] + [True] * (len(pcols) + 1)
    f = f.sort_values(order, ascending=asc, kind="mergesort", na_position="last")
    counts = f.groupby(keys, sort=False)["params"].nunique()
    best = f.groupby(keys, sort=False).head(1).copy()
    best["n_candidates"] = [counts.loc[tuple(r)] for r in best[keys].itertuples(index=False)]
    best["selected_by"] = metric
    best["selected_value"] = best[metric]
    if "variant" in best.columns:
        best["variant"] = best["variant"].replace("", None)
    lead = [*keys, "params", "selected_by", "selected_value", "n_candidates", "n_seeds", "run_id",
            "run_ids"]
    params_cols = sorted(c for c in best.columns if c.startswith("params."))
    metric_cols = [c for c in best.columns if c.startswith(("vali.", "test."))]
    rest = [c for c in best.columns if c not in lead + params_cols + metric_cols]
    return best[lead + params_cols + metric_cols + rest].reset_index(drop=True)


def selected_per_query(records: list[dict[str, Any]], metric: str = "vali.ndcg@10",
                       query_metric: str = "ndcg@10") -> dict[tuple, dict[str, dict[Any, float]]]:
    """Per (experiment, dataset, variant) and solver: ``{qid: value}`` of the per-fold selected
    models' per-query test ``query_metric`` (any key of the records' ``per_query.test``; means
    over seeds; NaN where undefined).  The folds' test sets partition the queries.  ValueError
    when a selected run has no such per-query values, naming those it has."""
    import pandas as pd

    from rankbench.store import flatten_record

    if not records:
        return {}
    sel = select_per_fold(pd.DataFrame([flatten_record(r) for r in records]), metric)
    by_id = {r["run_id"]: r for r in records}
    values: dict[tuple, dict[Any, list[float]]] = {}
    for row in sel.to_dict("records"):
        key = (row["experiment"], row["dataset"], row.get("variant"), row["solver"])
        per_qid = values.setdefault(key, {})
        for rid in row["run_ids"]:
            pq = (by_id[rid].get("per_query") or {}).get("test") or {}
            if query_metric not in pq or query_metric == "qid":
                raise ValueError(f"run {rid} has no per-query test {query_metric!r}; stored: "
                                 f"{sorted(k for k in pq if k != 'qid')}")
            for q, v in zip(pq["qid"], pq[query_metric], strict=True):
                per_qid.setdefault(q, []).append(np.nan if v is None else float(v))
    groups: dict[tuple, dict[str, dict[Any, float]]] = {}
    for (exp, ds, var, solver), per_qid in values.items():
        groups.setdefault((exp, ds, var), {})[solver] = {q: float(np.mean(v)) for q, v in per_qid.items()}
    return groups


def compare_selected(records: list[dict[str, Any]], metric: str = "vali.ndcg@10",
                     query_metric: str = "ndcg@10", baseline: str | None = None,
                     n_resamples: int = 10000, seed: int = 0, test: str = "randomization",
                     correction: str = "holm"):
    """Paired significance of the per-fold selected models, solver against solver, per data set.

    For each (experiment, dataset, variant) the selected runs of every fold give one test
    value per query (``selected_per_query``).  Pairs are (baseline, other) when ``baseline`` is
    given, else every pair; each row holds the means over the queries both have, their
    difference with its 95% bootstrap interval, the effect size d_z, the two-sided p-value of
    ``test`` (randomization, t or wilcoxon) and, per data set, that p-value corrected over the
    data set's comparisons (``p_holm`` / ``p_bonferroni``; no column with ``correction="none"``;
    ``rankbench.significance.compare_systems``; queries with an undefined value, e.g. AUC with
    one class, are left out).
    """
    import pandas as pd

    from rankbench.significance import compare_systems

    rows = []
    for (exp, ds, var), solvers in sorted(selected_per_query(records, metric, query_metric).items(),
                                          key=lambda kv: str(kv[0])):
        names = sorted(solvers)
        if baseline is not None:
            if baseline not in solvers:
                continue
            pairs = [(baseline, n) for n in names if n != baseline]
        else:
            pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
        kept, arrays = [], []
        for a, b in pairs:
            qids = [q for q in solvers[a] if q in solvers[b]]
            va = np.array([solvers[a][q] for q in qids])
            vb = np.array([solvers[b][q] for q in qids])
            if (~(np.isnan(va) | np.isnan(vb))).any():  # some query defined for both
                kept.append((a, b))
                arrays.append((f"{a} vs {b}", va, vb))
        compared = compare_systems(arrays, correction=correction, n_resamples=n_resamples,
                                   seed=seed, test=test)
        for (a, b), c in zip(kept, compared, strict=True):
            row = {"experiment": exp, "dataset": ds, "variant": var, "solver_a": a,
                   "solver_b": b, "n_queries": c["n_queries"], f"a.{query_metric}": c["mean_a"],
                   f"b.{query_metric}": c["mean_b"], "difference": c["diff"],
                   "ci95_low": c["ci_low"], "ci95_high": c["ci_high"], "d_z": c["d_z"],
                   "p_value": c["p"]}
            if correction != "none":
                row[f"p_{correction}"] = c["p_adjusted"]
            rows.append(row)
    return pd.DataFrame(rows)


def _mean_over_seeds(f, group: list[str]):
    """One row per ``group``: numeric metric and timing columns averaged over seeds."""
    import pandas as pd

    n_seeds = f.groupby(group, sort=False)["seed"].nunique() if "seed" in f.columns else None
    if n_seeds is None or n_seeds.max() <= 1:
        return f.assign(n_seeds=1, run_ids=[[r] for r in f["run_id"]])
    run_ids = f.groupby(group, sort=False)["run_id"].agg(list)
    numeric = [c for c in f.columns if c.startswith(("train.", "vali.", "test."))
               and pd.api.types.is_numeric_dtype(f[c]) and c not in group]
    how = {c: ("mean" if c in numeric else "first") for c in f.columns if c not in group}
    out = f.groupby(group, sort=False).agg(how)
    out["n_seeds"] = n_seeds
    out["run_ids"] = run_ids
    out["seed"] = None
    return out.reset_index()


def _sortable(col) -> bool:
    import pandas as pd

    return bool(pd.api.types.is_numeric_dtype(col)) and not pd.api.types.is_bool_dtype(col)


def mean_over_folds(frame, metrics: list[str] | None = None, sd: tuple[str, ...] | list[str] = ()):
    """Per (experiment, dataset, variant, solver, params): the mean and count over folds of ``metrics``
    (and ``<metric>.sd``, their standard deviation over folds, for the metrics in ``sd``).

    The "fixed" protocol (one parameter value for every fold, Chapelle Table 3) and
    C-sweep curves (Chapelle Fig. 1) read this.  ``params.<p>`` columns are kept.
    """
    import pandas as pd

    f = frame[frame["status"] == "ok"]
    metrics = metrics or ["test.ndcg@10", "test.map"]
    metrics = [m for m in metrics if m in f.columns]
    keys = [k for k in ("experiment", "dataset", "variant", "solver", "params") if k in f.columns]
    out = fold_means(f, keys, metrics, sd)
    unpacked = pd.DataFrame([json.loads(p) for p in out["params"]], index=out.index)
    unpacked.columns = [f"params.{c}" for c in unpacked.columns]
    return pd.concat([out, unpacked], axis=1)


def fold_means(frame, keys: list[str], metrics: list[str], sd: tuple[str, ...] | list[str] = ()):
    """Per group of ``keys``: the mean of each of ``metrics`` over the group's rows (one per fold),
    ``<metric>.sd`` (the sample standard deviation over folds, ddof 1: NaN for one fold) right
    after each metric named in ``sd``, and ``n_folds``; groups sorted by ``keys``."""
    f = frame.copy()
    if "variant" in f.columns:
        f["variant"] = f["variant"].fillna("")
    metrics = [m for m in metrics if m in f.columns]
    g = f.groupby(keys, sort=True)
    means = g[metrics].mean()
    spread = g[[m for m in metrics if m in sd]].std(ddof=1)
    out = means[[]].copy()
    for m in metrics:
        out[m] = means[m]
        if m in sd:
            out[f"{m}.sd"] = spread[m]
    out["n_folds"] = g["fold"].nunique()
    out = out.reset_index()
    if "variant" in out.columns:
        out["variant"] = out["variant"].replace("", None)
    return out
