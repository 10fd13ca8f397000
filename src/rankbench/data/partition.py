"""Cutting queries into contiguous groups of near-equal weight (a query is never split): the
shards of a sharded data set and of a sharded fit, the machines of LightGBM's data-parallel
learner."""

from __future__ import annotations

import numpy as np


def shard_queries(query_ptr, n_shards: int, weights=None) -> np.ndarray:
    """Query indices 0 = b_0 < b_1 < ... < b_k = n_queries cutting the queries into ``n_shards``
    contiguous shards of near-equal total ``weights`` (one per query; None = documents): each cut
    at the query boundary nearest to its share of the total.  Every shard holds at least one
    query; ValueError when ``n_shards`` exceeds the number of queries (a query is never split: its
    pairs would cross shards)."""
    query_ptr = np.asarray(query_ptr, dtype=np.int64)
    n_queries = query_ptr.shape[0] - 1
    if isinstance(n_shards, bool) or not isinstance(n_shards, int | np.integer) or n_shards < 1:
        raise ValueError(f"n_shards must be a positive integer, got {n_shards!r}")
    n_shards = int(n_shards)
    if n_shards > n_queries:
        raise ValueError(f"n_shards={n_shards} exceeds the number of queries ({n_queries}): a query "
                         "is never split across shards; use at most one shard per query")
    w = np.diff(query_ptr).astype(np.float64) if weights is None else np.asarray(weights, np.float64)
    if w.shape != (n_queries,) or np.any(w < 0) or not np.all(np.isfinite(w)):
        raise ValueError(f"weights must be {n_queries} finite non-negative numbers (one per query)")
    cum = np.concatenate([[0.0], np.cumsum(w)])  # cum[b] = weight of queries before boundary b
    bounds = np.zeros(n_shards + 1, dtype=np.int64)
    bounds[-1] = n_queries
    for k in range(1, n_shards):
        target = k * cum[-1] / n_shards
        b = int(np.searchsorted(cum, target))  # cum[b-1] < target <= cum[b]
        if b > 0 and target - cum[b - 1] <= cum[b] - target:
            b -= 1
        # at least one query in this shard and in each one after it
        bounds[k] = min(max(b, bounds[k - 1] + 1), n_queries - (n_shards - k))
    return bounds
