"""Row orders shared by every learner: grouping by query and the canonical order.

``group_by_query`` is the stable grouping RankingData.from_arrays applies (queries by first
appearance, documents in input order): enough for RankSVM, whose optimum does not depend on
the order of the rows.  ``canonical_order`` goes further for the learners whose result does
depend on it (SPD draws rows by position; LambdaMART breaks score ties by position and LightGBM
sums gradients in row order): queries by qid value, then documents by label, then by their
feature vector (lexicographically, as dense vectors; explicit zeros equal absent entries).
Two inputs holding the same rows in any order get the same canonical sequence of
(qid, label, features), so those learners see bit-identical data.  Rows equal in all three are
interchangeable, so their relative (input) order cannot change a result.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit


def group_by_query(qid: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """Query boundaries of ``qid``; O(n) when already contiguous, else a stable O(n log n) grouping.

    Returns ``(order, query_ptr)`` where ``order`` is None if documents are already
    contiguous by query, else the stable permutation grouping them by first appearance.
    """
    n = qid.shape[0]
    if n == 0:
        return None, np.zeros(1, dtype=np.int64)
    change = np.flatnonzero(qid[1:] != qid[:-1]) + 1
    starts = np.concatenate(([0], change))
    if np.unique(qid[starts]).shape[0] == starts.shape[0]:
        ptr = np.concatenate((starts, [n])).astype(np.int64)
        return None, ptr
    _, first, inverse = np.unique(qid, return_index=True, return_inverse=True)
    rank_of_first = np.argsort(np.argsort(first, kind="stable"), kind="stable")
    key = rank_of_first[inverse.ravel()]
    order = np.argsort(key, kind="stable").astype(np.int64)
    sorted_key = key[order]
    change = np.flatnonzero(sorted_key[1:] != sorted_key[:-1]) + 1
    ptr = np.concatenate(([0], change, [n])).astype(np.int64)
    return order, ptr


def canonical_order(X, y: np.ndarray, qid: np.ndarray) -> np.ndarray | None:
    """The stable permutation sorting rows by (qid value, label, feature vector); None if identity.

    ``X`` dense 2-D or CSR (validated, no NaN), ``y`` labels, ``qid`` query ids (any sortable
    dtype).  O(n log n) comparisons of O(d) (dense) or O(nnz(a) + nnz(b)) (CSR) each.
    """
    n = y.shape[0]
    if n == 0:
        return None
    _, qrank = np.unique(np.asarray(qid), return_inverse=True)
    qrank = qrank.ravel().astype(np.int64)
    yk = np.asarray(y)
    if sp.issparse(X):
        Xc = sp.csr_matrix(X)
        if not Xc.has_sorted_indices:
            Xc = Xc.sorted_indices()
        order = np.lexsort((yk, qrank)).astype(np.int64)
        bounds = _block_bounds(qrank[order], yk[order])
        _sort_blocks_csr(order, bounds, Xc.data, Xc.indices, Xc.indptr)
    else:
        Xd = np.asarray(X)
        # np.lexsort is stable; the last key is the primary one.
        keys = tuple(Xd[:, j] for j in range(Xd.shape[1] - 1, -1, -1)) + (yk, qrank)
        order = np.lexsort(keys).astype(np.int64)
    if np.array_equal(order, np.arange(n)):
        return None
    return order


def _block_bounds(qs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    change = np.flatnonzero((qs[1:] != qs[:-1]) | (ys[1:] != ys[:-1])) + 1
    return np.concatenate(([0], change, [qs.shape[0]])).astype(np.int64)


@njit(cache=True)
def _cmp_csr_rows(data, indices, indptr, a, b):
    """-1, 0, 1: CSR rows a and b compared lexicographically as dense vectors; O(nnz)."""
    i = indptr[a]
    ie = indptr[a + 1]
    j = indptr[b]
    je = indptr[b + 1]
    while i < ie or j < je:
        if j >= je or (i < ie and indices[i] < indices[j]):
            va = data[i]
            vb = 0.0
            i += 1
        elif i >= ie or indices[j] < indices[i]:
            va = 0.0
            vb = data[j]
            j += 1
        else:
            va = data[i]
            vb = data[j]
            i += 1
            j += 1
        if va < vb:
            return -1
        if va > vb:
            return 1
    return 0


@njit(cache=True)
def _sort_blocks_csr(order, bounds, data, indices, indptr):
    """Stable merge sort of ``order[bounds[k]:bounds[k+1]]`` by row content, in place."""
    buf = np.empty_like(order)
    for k in range(bounds.shape[0] - 1):
        lo = bounds[k]
        hi = bounds[k + 1]
        width = 1
        while width < hi - lo:
            s = lo
            while s < hi:
                mid = min(s + width, hi)
                end = min(s + 2 * width, hi)
                i = s
                j = mid
                o = s
                while i < mid and j < end:
                    # take from the right run only when strictly smaller: stable
                    if _cmp_csr_rows(data, indices, indptr, order[j], order[i]) < 0:
                        buf[o] = order[j]
                        j += 1
                    else:
                        buf[o] = order[i]
                        i += 1
                    o += 1
                while i < mid:
                    buf[o] = order[i]
                    i += 1
                    o += 1
                while j < end:
                    buf[o] = order[j]
                    j += 1
                    o += 1
                s = end
            for p in range(lo, hi):
                order[p] = buf[p]
            width *= 2
