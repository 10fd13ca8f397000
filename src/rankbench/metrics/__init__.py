"""Ranking metrics (NDCG@k, MAP, P@k micro/macro, MRR, AUC, MAUC, class AUC, pairwise accuracy)
vectorised over queries, and `evaluate` for the key names every record uses.

Definitions and conventions (letor / letor4 / trec / exp-log2): see rankbench.metrics.measures
and docs/metrics.md.  Every key ``evaluate`` knows is registered once, in
rankbench.metrics.definitions (``@register_metric``, rankbench.metrics.registry).
"""

from importlib import import_module

from rankbench.metrics.names import DEFAULT_METRICS, METRIC_KEYS

# imported on first use, so that ``import rankbench.metrics.names`` (config validation) does not
# load numba
_LAZY = {
    "evaluate": "evaluation", "evaluate_per_query": "evaluation",
    "CONVENTIONS": "measures", "UndefinedMetricWarning": "measures", "auc": "measures", "class_auc": "measures", "mauc": "measures",
    "mean_average_precision": "measures", "mrr": "measures", "ndcg_at_k": "measures",
    "pairwise_accuracy": "measures", "precision_at_k": "measures", "r_precision": "measures",
    "RankedLists": "ranked_lists", "rank_queries": "ranked_lists",
    "register_metric": "registry", "QueryTable": "registry",
}

__all__ = ["DEFAULT_METRICS", "METRIC_KEYS", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(import_module(f"rankbench.metrics.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'rankbench.metrics' has no attribute {name!r}")
