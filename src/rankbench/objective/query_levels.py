"""Relevance levels per query: the label ranks every pair oracle sweeps over."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange


@dataclass(frozen=True, eq=False)
class QueryLevels:
    """Dense label ranks of a grouped ranking problem, computed once per data set.

    ``qrank[i]`` is the rank of ``y[i]`` among the distinct labels of its own query
    (0 = least relevant), ``n_levels[q]`` the number of distinct labels of query ``q``,
    ``grank[i]`` the rank of ``y[i]`` among all labels of the data (``levels[grank[i]] == y[i]``),
    ``level_ptr`` the offsets of each query's level buckets (``n_levels[q] + 1`` entries
    per query, used by the counting oracle), ``bucket_grank`` the global rank of each bucket.
    """

    query_ptr: np.ndarray
    qrank: np.ndarray
    n_levels: np.ndarray
    grank: np.ndarray
    levels: np.ndarray
    bucket_bounds: np.ndarray
    bucket_offsets: np.ndarray
    bucket_grank: np.ndarray

    @property
    def n_docs(self) -> int:
        return int(self.qrank.shape[0])

    @classmethod
    def from_labels(cls, y: np.ndarray, query_ptr: np.ndarray) -> QueryLevels:
        """Rank labels within each query and globally; O(n log n), and no temporary of more
        than one n-vector beside the results (numba per query: an oracle's construction
        is part of a fit's peak memory)."""
        y = np.asarray(y)
        query_ptr = np.asarray(query_ptr, dtype=np.int64)
        n = y.shape[0]
        nq = query_ptr.shape[0] - 1
        y = y.ravel()
        levels, grank = _few_levels(y, SMALL_LEVELS)  # graded relevance: one pass, no sort
        if levels.shape[0] == 0 and n:
            levels = np.unique(y)
            grank = np.searchsorted(levels, y).astype(np.int64, copy=False)
        qrank = np.zeros(n, dtype=np.int64)
        n_levels = np.zeros(nq, dtype=np.int64)
        _rank_within_queries(query_ptr, grank, qrank, n_levels, levels.shape[0])
        # bucket bounds: for query q, level r occupies bounds[off[q]+r] : bounds[off[q]+r+1]
        offsets = np.zeros(nq + 1, dtype=np.int64)
        np.cumsum(n_levels + 1, out=offsets[1:])
        bucket_grank = np.zeros(int(offsets[-1]), dtype=np.int64)
        counts = np.zeros(int(offsets[-1]), dtype=np.int64)
        _bucket_counts(query_ptr, qrank, grank, offsets, counts, bucket_grank)
        # exclusive prefix over the flat buckets = absolute document positions, because
        # documents are grouped by query and each query's sentinel bucket is empty
        bounds = np.cumsum(counts) - counts
        return cls(query_ptr=query_ptr, qrank=qrank, n_levels=n_levels, grank=grank,
                   levels=levels, bucket_bounds=bounds.astype(np.int64),
                   bucket_offsets=offsets, bucket_grank=bucket_grank)

    def n_pairs(self) -> int:
        """Number of preference pairs |P| = sum_q (n_q^2 - sum_r n_qr^2) / 2; O(n) once, then
        kept (the levels are immutable; a fit asks several times)."""
        kept = self.__dict__.get("_n_pairs")
        if kept is None:
            kept = self.__dict__["_n_pairs"] = self._count_pairs()
        return kept

    def _count_pairs(self) -> int:
        sizes = np.diff(self.query_ptr).astype(np.int64)
        counts = np.diff(np.append(self.bucket_bounds, self.n_docs)).astype(np.int64)
        counts[self.bucket_offsets[1:] - 1] = 0
        return int((np.sum(sizes**2) - np.sum(counts**2)) // 2)


# queries per parallel block of ``_rank_within_queries``; label sets of at most SMALL_LEVELS
# distinct values (graded relevance: 2-5) are ranked through a table instead of a sort
_RANK_BLOCK = 256
SMALL_LEVELS = 64


@njit(cache=True)
def _few_levels(y, cap):
    """(sorted distinct values of y, grank: each y's rank among them) in one pass when y holds at
    most ``cap`` distinct values; (empty, empty) when it holds more (then np.unique's sort)."""
    n = y.shape[0]
    vals = np.empty(cap, dtype=y.dtype)
    grank = np.empty(n, dtype=np.int64)
    k = 0
    last = -1
    for i in range(n):
        v = y[i]
        if last >= 0 and v == vals[last]:  # labels come in runs within a query
            grank[i] = last
            continue
        j = 0
        while j < k and vals[j] != v:
            j += 1
        if j == k:
            if k == cap:
                return vals[:0], grank[:0]
            vals[k] = v
            k += 1
        grank[i] = j
        last = j
    perm = np.argsort(vals[:k])
    rank = np.empty(k, dtype=np.int64)
    for r in range(k):
        rank[perm[r]] = r
    for i in range(n):
        grank[i] = rank[grank[i]]
    return vals[:k][perm], grank


@njit(cache=True, parallel=True)
def _rank_within_queries(query_ptr, grank, qrank, n_levels, n_global):
    """qrank[i] = rank of grank[i] among the distinct values of its query, n_levels[q] their
    number; queries in parallel blocks (each writes only its own documents).  With at most
    SMALL_LEVELS global levels, a table over them per query, O(n_q + levels); else a sort,
    O(n_q log n_q)."""
    nq = query_ptr.shape[0] - 1
    small = n_global <= SMALL_LEVELS
    for blk in prange((nq + _RANK_BLOCK - 1) // _RANK_BLOCK):
        table = np.empty(n_global if small else 0, dtype=np.int64)
        for q in range(blk * _RANK_BLOCK, min(nq, (blk + 1) * _RANK_BLOCK)):
            a = query_ptr[q]
            b = query_ptr[q + 1]
            if b == a:
                continue
            if small:
                table[:] = -1
                for i in range(a, b):
                    table[grank[i]] = 0
                k = 0
                for g in range(n_global):  # present levels, ascending: their rank in the query
                    if table[g] == 0:
                        table[g] = k
                        k += 1
                n_levels[q] = k
                for i in range(a, b):
                    qrank[i] = table[grank[i]]
                continue
            vals = np.sort(grank[a:b])
            k = 0
            for t in range(b - a):  # distinct values, in place at the front
                if t == 0 or vals[t] != vals[t - 1]:
                    vals[k] = vals[t]
                    k += 1
            n_levels[q] = k
            for i in range(a, b):
                qrank[i] = np.searchsorted(vals[:k], grank[i])


@njit(cache=True)
def _bucket_counts(query_ptr, qrank, grank, offsets, counts, bucket_grank):
    """Documents per (query, level) bucket and each bucket's global label rank."""
    for q in range(query_ptr.shape[0] - 1):
        for i in range(query_ptr[q], query_ptr[q + 1]):
            j = offsets[q] + qrank[i]
            counts[j] += 1
            bucket_grank[j] = grank[i]
