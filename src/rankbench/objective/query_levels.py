"""Relevance levels per query: the label ranks every pair oracle sweeps over."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


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
        """Rank labels within each query and globally; O(n log n)."""
        y = np.asarray(y)
        query_ptr = np.asarray(query_ptr, dtype=np.int64)
        n = y.shape[0]
        sizes = np.diff(query_ptr)
        q_of = np.repeat(np.arange(sizes.shape[0], dtype=np.int64), sizes)
        levels, grank = np.unique(y, return_inverse=True)
        grank = grank.astype(np.int64).ravel()
        qrank = np.zeros(n, dtype=np.int64)
        n_levels = np.zeros(sizes.shape[0], dtype=np.int64)
        if n:
            o = np.lexsort((grank, q_of))
            gs, qs = grank[o], q_of[o]
            new_query = np.ones(n, dtype=bool)
            new_query[1:] = qs[1:] != qs[:-1]
            new_level = new_query.copy()
            new_level[1:] |= gs[1:] != gs[:-1]
            cum = np.cumsum(new_level) - 1
            qrank[o] = cum - cum[np.flatnonzero(new_query)][np.cumsum(new_query) - 1]
            np.add.at(n_levels, qs[new_level], 1)
        # bucket bounds: for query q, level r occupies bounds[off[q]+r] : bounds[off[q]+r+1]
        offsets = np.zeros(sizes.shape[0] + 1, dtype=np.int64)
        np.cumsum(n_levels + 1, out=offsets[1:])
        bucket_grank = np.zeros(int(offsets[-1]), dtype=np.int64)
        counts = np.zeros(int(offsets[-1]), dtype=np.int64)
        if n:
            np.add.at(counts, offsets[q_of] + qrank, 1)
            bucket_grank[offsets[q_of] + qrank] = grank
        # exclusive prefix over the flat buckets = absolute document positions, because
        # documents are grouped by query and each query's sentinel bucket is empty
        bounds = np.cumsum(counts) - counts
        return cls(query_ptr=query_ptr, qrank=qrank, n_levels=n_levels, grank=grank,
                   levels=levels, bucket_bounds=bounds.astype(np.int64),
                   bucket_offsets=offsets, bucket_grank=bucket_grank)

    def n_pairs(self) -> int:
        """Number of preference pairs |P| = sum_q (n_q^2 - sum_r n_qr^2) / 2; O(n)."""
        sizes = np.diff(self.query_ptr).astype(np.int64)
        counts = np.diff(np.append(self.bucket_bounds, self.n_docs)).astype(np.int64)
        counts[self.bucket_offsets[1:] - 1] = 0
        return int((np.sum(sizes**2) - np.sum(counts**2)) // 2)
