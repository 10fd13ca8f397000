"""`evaluate`: every metric of a run from one sort per query, under the key names records use.

The keys and their definitions are the metric registry's (``rankbench.metrics.registry``,
``rankbench.metrics.definitions``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from rankbench.metrics import measures as m
from rankbench.metrics.names import DEFAULT_METRICS  # noqa: F401 - re-exported
from rankbench.metrics.ranked_lists import rank_queries
from rankbench.metrics.registry import QueryTable


def evaluate(y: Any, scores: Any, qid: Any, metrics: Iterable[str] | None = None,
             convention: str = "letor", ties: str = "stable",
             skip_no_relevant: bool = False, docids: Any = None) -> dict[str, float]:
    """All metrics of one scored data set (keys as in docs/interfaces.md); one sort, O(n log n + n L).

    ``metrics=None`` computes DEFAULT_METRICS: ndcg@1..10, map, mrr, auc, mauc,
    pairwise_accuracy, p@1..10 (micro) and p@1_macro..p@10_macro.  Position metrics follow
    ``convention``; AUC and MAUC are per-query means when ``qid`` is given (pooled when
    None), over the queries where they are defined; pairwise_accuracy pools all pairs.
    ``ties`` orders equal scores for the position metrics (AUC-type metrics count ties 1/2
    whatever the order); ``skip_no_relevant`` drops queries without a relevant document
    from NDCG, MAP and MRR.  ``rprec`` (R-precision) and ``mauc_pooled`` (MAUC of the
    whole set as one ranking, Welleck's other reading) are computed when asked for.
    ``docids`` name the documents for the ``"trec"`` convention's tie order.
    """
    convention = m.check_convention(convention)
    keys = list(DEFAULT_METRICS if metrics is None else metrics)
    r = rank_queries(y, scores, qid, m.ties_for(convention, ties), docids)
    table = QueryTable(r, keys, convention, skip_no_relevant)
    return {key: table.value(key) for key in keys}


def evaluate_per_query(y: Any, scores: Any, qid: Any,
                       metrics: Iterable[str] = ("ndcg@10", "map", "auc"),
                       convention: str = "letor", ties: str = "stable",
                       skip_no_relevant: bool = False, docids: Any = None) -> dict[str, np.ndarray]:
    """Per-query values: ``{"qid": query ids in order of first appearance, key: array, ...}``.

    Undefined or skipped values (e.g. AUC of a query with one class) are NaN.
    """
    convention = m.check_convention(convention)
    keys = list(metrics)
    r = rank_queries(y, scores, qid, m.ties_for(convention, ties), docids)
    table = QueryTable(r, keys, convention, skip_no_relevant)
    out: dict[str, np.ndarray] = {"qid": r.query_ids}
    for key in keys:
        out[key] = table.values(key)
    return out
