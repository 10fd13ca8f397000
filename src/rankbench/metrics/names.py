"""The metric keys records use (``evaluate``'s names), kept apart so that config validation can
check a metric name without importing the numba kernels."""

from __future__ import annotations

# computed by ``evaluate`` when no list is given (and stored in every record)
DEFAULT_METRICS: tuple[str, ...] = (
    *(f"ndcg@{k}" for k in range(1, 11)),
    "map", "mrr", "auc", "mauc", "pairwise_accuracy",
    *(f"p@{k}" for k in range(1, 11)),
    *(f"p@{k}_macro" for k in range(1, 11)),
)
# computed when asked for: R-precision and MAUC over the pooled set (one ranking)
EXTRA_METRICS: tuple[str, ...] = ("rprec", "mauc_pooled")
METRIC_KEYS: tuple[str, ...] = DEFAULT_METRICS + EXTRA_METRICS
