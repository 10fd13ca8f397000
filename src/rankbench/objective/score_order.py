"""Per-query ascending score order: the one sort each Newton step pays, O(n log n).

Queries are sorted in parallel (numba threads).  The order is by (score, document index), so
it is unique, and a previous order can seed it: between two Newton steps few documents change
places, and an insertion sort from the last order costs O(n + inversions); a query where the
insertion sort would move too much falls back to a merge sort, and a query whose scores are
all equal (w = 0) takes the order by index without a sort.  Either way the result is the same
permutation.  An order of tied scores seeds nothing (its oracles sort the next scores afresh).

A query that holds most of the documents (``wide_query``: one query of an AUC problem) would
leave all but one thread idle in the loop over queries; it is sorted on two threads instead
(``_sort_wide``): each half of its positions sorted apart, then the two runs merged where they
overlap, which after a seeded sort is a few positions.  The permutation is the same.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

# an insertion sort from the previous order gives up after this many moves per document
_MOVES_PER_DOC = 4


@njit(cache=True, inline="always")
def _after(z, i, j):
    """Document i after document j in the order by (score, index)."""
    return z[i] > z[j] or (z[i] == z[j] and i > j)


@njit(cache=True)
def _insertion_sort(z, lo, hi, order):
    """order[lo:hi] (document indices) sorted by (z, index) in place by insertion from the order
    it holds; False when it gave up after _MOVES_PER_DOC moves a document (order[lo:hi] then
    holds the same set in some order).  A document already after its predecessor costs one
    random load (its score; the predecessor's is kept): the seeded sort of one query of 1e6
    documents that hardly moved, 18-21 -> 11-13 ms with the two halves (``_sort_wide``)."""
    budget = _MOVES_PER_DOC * (hi - lo) + 16
    moves = 0
    zl = z[order[lo]]  # the score at position t - 1
    for t in range(lo + 1, hi):
        i = order[t]
        zi = z[i]
        if zl < zi or (zl == zi and order[t - 1] < i):
            zl = zi
            continue
        u = t - 1
        while u >= lo and _after(z, order[u], i):
            order[u + 1] = order[u]
            u -= 1
            moves += 1
        order[u + 1] = i
        zl = z[order[t]]
        if moves > budget:
            return False
    return True


@njit(cache=True)
def _order_if_tied(z, a, b, order):
    """When every score of documents a..b-1 is equal (w = 0), order[a:b] = a..b-1, the order by
    index, without a sort, and True; else False (order untouched)."""
    for t in range(a + 1, b):
        if z[t] != z[a]:
            return False
    for t in range(a, b):
        order[t] = t
    return True


@njit(cache=True, fastmath=False)  # called by fused (FUSED_FASTMATH) and strict passes alike
def _sort_query(z, a, b, prev, order):
    """order[a:b] = indices a..b-1 sorted by (z, index); seeded by prev[a:b] when prev is given."""
    m = b - a
    if m == 1:
        order[a] = a
        return
    if prev.shape[0] > 0:
        for t in range(a, b):
            order[t] = prev[t]
        if _insertion_sort(z, a, b, order):
            return
    if _order_if_tied(z, a, b, order):
        return
    idx = np.argsort(z[a:b], kind="mergesort")
    for t in range(m):
        order[a + t] = a + idx[t]


# a query of at least this many documents, and more than half of the problem's, is worked on by
# two threads (``wide_query``)
WIDE_DOCS = 1 << 16


@njit(cache=True)
def wide_query(query_ptr):
    """The query that the sort and the tree and counting sweeps split over two threads, or -1: one
    of at least WIDE_DOCS documents and more than half of all (an AUC problem's one query); the
    loop over queries would run it on one thread while the others wait.  A property of the data,
    not of the thread count, so the results do not depend on the threads either."""
    nq = query_ptr.shape[0] - 1
    total = query_ptr[nq] - query_ptr[0]
    for q in range(nq):
        n = query_ptr[q + 1] - query_ptr[q]
        if n >= WIDE_DOCS and 2 * n > total:
            return q
    return -1


@njit(cache=True)
def _sort_run(z, lo, hi, seeded, order):
    """order[lo:hi], a set of document indices, sorted by (z, index) in place: by insertion from
    the order it holds when ``seeded`` (giving up after _MOVES_PER_DOC moves a document), else
    (or then) by a merge sort of the set by index.  Unseeded, the set is lo..hi-1."""
    m = hi - lo
    if seeded:
        if _insertion_sort(z, lo, hi, order):
            return
        ids = np.sort(order[lo:hi])
    else:
        ids = np.arange(lo, hi)
    idx = np.argsort(z[ids], kind="mergesort")  # stable: ties stay by index
    for t in range(m):
        order[lo + t] = ids[idx[t]]


@njit(cache=True)
def _split_merge(z, x0, x1, y0, y1, order, k):
    """How many of the first k entries of the merge of the sorted runs order[x0:x1] and
    order[y0:y1] come from the first run (the merge path's split, by bisection)."""
    lo = max(0, k - (y1 - y0))
    hi = min(k, x1 - x0)
    while lo < hi:
        i = (lo + hi) // 2
        if _after(z, order[x0 + i], order[y0 + k - i - 1]):
            hi = i
        else:
            lo = i + 1
    return lo


@njit(cache=True, parallel=True)
def _sort_wide(z, a, b, prev, order):
    """``_sort_query`` on two threads: each half of the positions a..b-1 sorted apart
    (``_sort_run``, seeded from prev when given), then the runs merged over the positions where
    they overlap (none when the halves' borders are in order), each thread writing half of the
    merged stretch into a buffer.  The same permutation."""
    seeded = prev.shape[0] > 0
    mid = (a + b) // 2
    for h in prange(2):
        lo = a if h == 0 else mid
        hi = mid if h == 0 else b
        if seeded:
            for t in range(lo, hi):
                order[t] = prev[t]
        _sort_run(z, lo, hi, seeded, order)
    if not _after(z, order[mid - 1], order[mid]):
        return
    # the overlap: positions of the first run after the second's first document, and of the
    # second run before the first's last
    lo = a
    hi = mid
    while lo < hi:  # first position of run 1 after order[mid]
        c = (lo + hi) // 2
        if _after(z, order[c], order[mid]):
            hi = c
        else:
            lo = c + 1
    x0 = lo
    lo = mid
    hi = b
    while lo < hi:  # first position of run 2 after order[mid - 1]
        c = (lo + hi) // 2
        if _after(z, order[c], order[mid - 1]):
            hi = c
        else:
            lo = c + 1
    y1 = lo
    total = y1 - x0
    half = total // 2
    tmp = np.empty(total, dtype=np.int64)
    for h in prange(2):
        k0 = 0 if h == 0 else half
        k1 = half if h == 0 else total
        i = _split_merge(z, x0, mid, mid, y1, order, k0)
        j = k0 - i
        for t in range(k0, k1):
            if j >= y1 - mid or (i < mid - x0 and not _after(z, order[x0 + i], order[mid + j])):
                tmp[t] = order[x0 + i]
                i += 1
            else:
                tmp[t] = order[mid + j]
                j += 1
    for h in prange(2):
        k0 = 0 if h == 0 else half
        k1 = half if h == 0 else total
        for t in range(k0, k1):
            order[x0 + t] = tmp[t]


@njit(cache=True, parallel=True)
def _sort_within_queries(z, query_ptr, prev, order):
    wq = wide_query(query_ptr)
    for q in prange(query_ptr.shape[0] - 1):
        a = query_ptr[q]
        b = query_ptr[q + 1]
        if b > a and q != wq:
            _sort_query(z, a, b, prev, order)
    if wq >= 0:
        a = query_ptr[wq]
        b = query_ptr[wq + 1]
        if not _order_if_tied(z, a, b, order):
            _sort_wide(z, a, b, prev, order)


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


@njit(cache=True, fastmath=False)  # called by fused (FUSED_FASTMATH) and strict passes alike
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
def _group_wide(order, a, e, q, qrank, n_levels, bucket_bounds, bucket_offsets, border):
    """``_group_query`` on two threads, in one pass over the positions: the first half of them
    fills each bucket from its start, going forward, and the second half from its end, going
    backward (bucket r of query q ends where bucket r + 1 starts: each query's last level has a
    sentinel bucket), so both halves meet where the first half's count would have put them: the
    same partition, without a counting pass that reads qrank at random once more.  One query of
    1e6 rows, 2 levels, 2 threads, AMD EPYC, min of 15 calls in three runs: 9-18 ms against
    16-28 ms with the counting pass."""
    k = max(n_levels[q], 1)
    off = bucket_offsets[q]
    mid = (a + e) // 2
    for h in prange(2):
        cursor = np.empty(k, dtype=np.int64)
        if h == 0:
            _group_query(order, a, mid, q, qrank, n_levels, bucket_bounds, bucket_offsets, border,
                         cursor)
        else:
            for r in range(k):
                cursor[r] = bucket_bounds[off + r + 1]
            for p in range(e - 1, mid - 1, -1):
                i = order[p]
                r = qrank[i]
                cursor[r] -= 1
                border[cursor[r]] = i


@njit(cache=True, parallel=True)
def group_order_by_level(order, query_ptr, qrank, n_levels, bucket_bounds, bucket_offsets, border):
    """Stable partition of each query's score order into its label buckets (ascending label),
    written into ``border`` (n int64) and returned; O(n).  The query of ``wide_query`` on two
    threads (``_group_wide``)."""
    wq = wide_query(query_ptr)
    for q in prange(query_ptr.shape[0] - 1):
        if q != wq:
            _group_query(order, query_ptr[q], query_ptr[q + 1], q, qrank, n_levels, bucket_bounds,
                         bucket_offsets, border, np.empty(max(n_levels[q], 1), dtype=np.int64))
    if wq >= 0:
        _group_wide(order, query_ptr[wq], query_ptr[wq + 1], wq, qrank, n_levels, bucket_bounds,
                    bucket_offsets, border)
    return border
