"""Per-query ascending score order: the one sort each Newton step pays, O(n log n)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def sort_within_queries(z, query_ptr):
    """Global indices of the documents, each query's block sorted by ascending score (stable)."""
    n = z.shape[0]
    order = np.empty(n, dtype=np.int64)
    for q in range(query_ptr.shape[0] - 1):
        a = query_ptr[q]
        b = query_ptr[q + 1]
        if b - a == 1:
            order[a] = a
        elif b - a > 1:
            idx = np.argsort(z[a:b], kind="mergesort")
            for t in range(b - a):
                order[a + t] = a + idx[t]
    return order


@njit(cache=True)
def group_order_by_level(order, query_ptr, qrank, n_levels, bucket_bounds, bucket_offsets):
    """Stable partition of each query's score order into its label buckets (ascending label); O(n)."""
    n = order.shape[0]
    border = np.empty(n, dtype=np.int64)
    kmax = 1
    for q in range(n_levels.shape[0]):
        if n_levels[q] > kmax:
            kmax = n_levels[q]
    cursor = np.empty(kmax, dtype=np.int64)
    for q in range(query_ptr.shape[0] - 1):
        off = bucket_offsets[q]
        for r in range(n_levels[q]):
            cursor[r] = bucket_bounds[off + r]
        for p in range(query_ptr[q], query_ptr[q + 1]):
            i = order[p]
            r = qrank[i]
            border[cursor[r]] = i
            cursor[r] += 1
    return border
