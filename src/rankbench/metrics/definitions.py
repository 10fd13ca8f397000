"""Every metric key, defined once (``@register_metric``; see ``rankbench.metrics.registry``).

Registration order is the order of ``DEFAULT_METRICS`` (then the metrics computed on request).
Each function gets the ``QueryTable`` of one scored set and the cutoff ``k`` (None for a
metric without one) and returns one value per query; computations several metrics share
(the NDCG table, the binary statistics, the preference-pair counts) go through
``table.shared`` so ``evaluate`` does each once.  The measures are imported when a function
runs, not here: naming metrics must not load numba.
"""

from __future__ import annotations

import numpy as np

from rankbench.metrics.registry import QueryTable, register_metric

CUTOFFS = tuple(range(1, 11))


def _m():
    from rankbench.metrics import measures

    return measures


def _binary(t: QueryTable):
    """(AP, relevant count, reciprocal rank, relevant in the top 1..kmax) per query."""
    return t.shared("binary", lambda: _m().binary_stats(t.r, max(1, t.kmax.get("p@{k}", 0))))


def _skipped(t: QueryTable, values: np.ndarray, n_relevant: np.ndarray) -> np.ndarray:
    return np.where(n_relevant > 0, values, np.nan) if t.skip else values


@register_metric("ndcg@{k}", "NDCG@k: gain, discount and short queries per the convention",
                 default_cutoffs=CUTOFFS, convention=True)
def _ndcg(t: QueryTable, k: int) -> np.ndarray:
    table = t.shared("ndcg", lambda: _m().ndcg_table(t.r, t.kmax["ndcg@{k}"], t.convention, t.skip))
    return table[:, k - 1]


@register_metric("map", "average precision (relevant = label > 0), mean over queries")
def _map(t: QueryTable, k: None) -> np.ndarray:
    ap, nrel, _, _ = _binary(t)
    return _skipped(t, ap, nrel)


@register_metric("mrr", "reciprocal rank of the first relevant document")
def _mrr(t: QueryTable, k: None) -> np.ndarray:
    _, nrel, rr, _ = _binary(t)
    return _skipped(t, rr, nrel)


@register_metric("auc", "per-query ROC AUC (label > 0 vs the rest; ties count 1/2)",
                 undefined="documents of one class only")
def _auc(t: QueryTable, k: None) -> np.ndarray:
    return t.shared("auc", lambda: _m().auc_per_query(t.r))


@register_metric("mauc", "per-query MAUC (Welleck 2016 eq. 5, prevalence weights over classes >= 1)",
                 undefined="every document of the query has the same label")
def _mauc(t: QueryTable, k: None) -> np.ndarray:
    return t.shared("mauc", lambda: _m().mauc_per_query(t.r))


def _pairs(t: QueryTable):
    return t.shared("pairs", lambda: _m().pairwise_table(t.r))


def _pairs_pooled(t: QueryTable, k: None) -> float:
    correct, tied, total = _pairs(t)
    n = int(total.sum())
    return float((correct.sum() + 0.5 * tied.sum()) / n) if n else float("nan")


@register_metric("pairwise_accuracy", "share of correctly ordered preference pairs, pairs pooled "
                 "over queries (per query: that query's share)", set_value=_pairs_pooled)
def _pairwise_accuracy(t: QueryTable, k: None) -> np.ndarray:
    correct, tied, total = _pairs(t)
    return np.divide(correct + 0.5 * tied, total, out=np.full(total.shape, np.nan), where=total > 0)


@register_metric("p@{k}", "precision at k (micro: relevant documents in the top k over k)",
                 default_cutoffs=CUTOFFS)
def _precision(t: QueryTable, k: int) -> np.ndarray:
    return _binary(t)[3][:, k - 1] / k


@register_metric("p@{k}_macro", "precision at k macro-averaged over the relevant classes",
                 default_cutoffs=CUTOFFS)
def _precision_macro(t: QueryTable, k: int) -> np.ndarray:
    table = t.shared("p_macro", lambda: _m().precision_table(t.r, t.kmax["p@{k}_macro"], "macro"))
    return table[:, k - 1]


@register_metric("rprec", "R-precision (trec_eval's Rprec)", default=False)
def _rprec(t: QueryTable, k: None) -> np.ndarray:
    return _m().r_precision_per_query(t.r)


def _mauc_pooled_value(t: QueryTable, k: None) -> float:
    from rankbench.metrics.ranked_lists import rank_queries

    pooled = rank_queries(t.r.y, t.r.scores, None)
    return float(_m().mauc_per_query(pooled)[0])


@register_metric("mauc_pooled", "MAUC of the whole scored set as one ranking (Welleck's pooled "
                 "reading)", default=False, pooled=True, set_value=_mauc_pooled_value)
def _mauc_pooled(t: QueryTable, k: None) -> np.ndarray:  # pragma: no cover - pooled: no per-query
    raise ValueError("mauc_pooled has no per-query values")
