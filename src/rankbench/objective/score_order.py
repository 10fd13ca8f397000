"""Per-query ascending score order: the one sort each Newton step pays, O(n log n).

Queries are sorted in parallel (numba threads).  The order is by (score, document index), so
it is unique, and a previous order can seed it: between two Newton steps few documents change
places, and an insertion sort from the last order costs O(n + inversions); a query where the
insertion sort would move too much falls back to a merge sort, and a query whose scores are
all equal (w = 0) takes the order by index without a sort.  Either way the result is the same
permutation.  An order of tied scores seeds nothing (its oracles sort the next scores afresh).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

# an insertion sort from the previous order gives up after this many moves per document
_MOVES_PER_DOC = 4


@njit(cache=True)
def _sort_query(z, a, b, prev, order):
    """order[a:b] = indices a..b-1 sorted by (z, index); seeded by prev[a:b] when prev is given."""
    m = b - a
    if m == 1:
        order[a] = a
        return
    if prev.shape[0] > 0:
        for t in range(a, b):
            order[t] = prev[t]
        budget = _MOVES_PER_DOC * m + 16
        moves = 0
        ok = True
        for t in range(a + 1, b):
            i = order[t]
            zi = z[i]
            u = t - 1
            while u >= a and (z[order[u]] > zi or (z[order[u]] == zi and order[u] > i)):
                order[u + 1] = order[u]
                u -= 1
                moves += 1
            order[u + 1] = i
            if moves > budget:
                ok = False
                break
        if ok:
            return
    tied = True  # every score equal (w = 0): the order by index, no sort
    for t in range(a + 1, b):
        if z[t] != z[a]:
            tied = False
            break
    if tied:
        for t in range(a, b):
            order[t] = t
        return
    idx = np.argsort(z[a:b], kind="mergesort")
    for t in range(m):
        order[a + t] = a + idx[t]


@njit(cache=True, parallel=True)
def _sort_within_queries(z, query_ptr, prev, order):
    for q in prange(query_ptr.shape[0] - 1):
        a = query_ptr[q]
        b = query_ptr[q + 1]
        if b > a:
            _sort_query(z, a, b, prev, order)


_NO_ORDER = np.empty(0, dtype=np.int64)


def sort_within_queries(z, query_ptr, prev=None, out=None):
    """Global indices of the documents, each query's block sorted by ascending score, ties by
    index (a stable sort); ``prev``: an earlier such order of the same queries, used as the
    starting point (the result does not depend on it).  ``out``: an int64 array of n entries to
    write the order into, returned (it may be ``prev`` itself: each query's seed is copied
    before its sort); None: a new array."""
    order = np.empty(z.shape[0], dtype=np.int64) if out is None else out
    _sort_within_queries(z, query_ptr, _NO_ORDER if prev is None else prev, order)
    return order


@njit(cache=True)
def _group_query(order, a, e, q, qrank, n_levels, bucket_bounds, bucket_offsets, border, cursor):
    """Query q's part of ``group_order_by_level`` (rows a..e-1); cursor: int64 work array of at
    least n_levels[q] entries."""
    off = bucket_offsets[q]
    for r in range(n_levels[q]):
        cursor[r] = bucket_bounds[off + r]
    for p in range(a, e):
        i = order[p]
        r = qrank[i]
        border[cursor[r]] = i
        cursor[r] += 1


@njit(cache=True, parallel=True)
def group_order_by_level(order, query_ptr, qrank, n_levels, bucket_bounds, bucket_offsets, border):
    """Stable partition of each query's score order into its label buckets (ascending label),
    written into ``border`` (n int64) and returned; O(n)."""
    for q in prange(query_ptr.shape[0] - 1):
        _group_query(order, query_ptr[q], query_ptr[q + 1], q, qrank, n_levels, bucket_bounds,
                     bucket_offsets, border, np.empty(max(n_levels[q], 1), dtype=np.int64))
    return border
