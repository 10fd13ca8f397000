"""Ranking metrics (NDCG@k, MAP, P@k micro/macro, MRR, AUC, MAUC, class AUC, pairwise accuracy)
vectorised over queries, and `evaluate` for the key names every record uses.

Definitions and conventions (letor / letor4 / standard): see rankbench.metrics.measures.
"""

from rankbench.metrics.evaluation import DEFAULT_METRICS, evaluate, evaluate_per_query
from rankbench.metrics.measures import (
    CONVENTIONS,
    auc,
    class_auc,
    mauc,
    mean_average_precision,
    mrr,
    ndcg_at_k,
    pairwise_accuracy,
    precision_at_k,
)
from rankbench.metrics.ranked_lists import RankedLists, rank_queries

__all__ = [
    "CONVENTIONS",
    "DEFAULT_METRICS",
    "RankedLists",
    "auc",
    "class_auc",
    "evaluate",
    "evaluate_per_query",
    "mauc",
    "mean_average_precision",
    "mrr",
    "ndcg_at_k",
    "pairwise_accuracy",
    "precision_at_k",
    "rank_queries",
]
