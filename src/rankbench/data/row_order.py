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
from numba import njit, prange


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

    ``X`` dense 2-D (bool, int or float) or CSR, ``y`` labels, ``qid`` query ids (any sortable
    dtype).  Dense X gives exactly ``np.lexsort`` over (every column, y, qid rank): -0.0 equals
    0.0 and NaN sorts last.  Rows are first sorted by (qid, label) only, then each
    (query, label) block by its rows' content with a stable merge sort (dense: blocks in
    parallel, the result independent of the thread count).  O(n log n) comparisons of
    O(d) (dense) or O(nnz(a) + nnz(b)) (CSR) each, stopping at the first differing column.
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
        _sort_blocks(order, bounds, False, np.empty((0, 0)), Xc.data, Xc.indices, Xc.indptr)
    else:
        Xd = _dense_keys(X, n)
        order = np.lexsort((yk, qrank)).astype(np.int64)
        bounds = _block_bounds(qrank[order], yk[order])
        _sort_blocks(order, bounds, True, Xd, np.empty(0), np.empty(0, np.int32),
                     np.empty(1, np.int32))
    if _is_identity(order):
        return None
    return order


def _dense_keys(X, n: int) -> np.ndarray:
    """Dense X as an array the numba comparator orders exactly as np.lexsort orders its columns.

    No copy for native-endian bool/int/uint/float32/float64 arrays (any strides); bool is viewed
    as uint8 and float16 widened to float32 (both order-preserving); other dtypes are refused.
    """
    Xd = np.asarray(X)
    if Xd.ndim != 2 or Xd.shape[0] != n:
        raise ValueError(f"X must be 2-D with one row per label ({n}), got shape {Xd.shape}")
    kind = Xd.dtype.kind
    if kind not in "biuf":
        raise ValueError(f"canonical_order needs a real numeric X (bool, int, float), got dtype {Xd.dtype}")
    if not Xd.dtype.isnative:
        Xd = Xd.astype(Xd.dtype.newbyteorder("="))
    if kind == "b":
        Xd = Xd.view(np.uint8)
    elif Xd.dtype == np.float16:
        Xd = Xd.astype(np.float32)
    return Xd


def _is_identity(order: np.ndarray) -> bool:
    return bool(np.all(order[1:] > order[:-1])) if order.shape[0] > 1 else True


def _block_bounds(qs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Starts of the runs of equal (qid rank, label) in sorted order, and the end; NaN labels equal each other."""
    differ = ys[1:] != ys[:-1]
    if ys.dtype.kind in "fc":
        differ &= ~(np.isnan(ys[1:]) & np.isnan(ys[:-1]))
    change = np.flatnonzero((qs[1:] != qs[:-1]) | differ) + 1
    return np.concatenate(([0], change, [qs.shape[0]])).astype(np.int64)


# Runs up to this length are insertion-sorted before the merge passes.
_RUN = 16


@njit(cache=True)
def _cmp_dense_rows(X, a, b):
    """-1, 0, 1: rows a and b of X compared column by column as np.lexsort does.

    -0.0 equals 0.0; NaN sorts after every number and equals NaN (numpy's sort order).
    O(first differing column).
    """
    for j in range(X.shape[1]):
        va = X[a, j]
        vb = X[b, j]
        if va < vb:
            return -1
        if va > vb:
            return 1
        if va != vb:  # unordered: at least one is NaN
            a_nan = va != va
            b_nan = vb != vb
            if a_nan and not b_nan:
                return 1
            if b_nan and not a_nan:
                return -1
    return 0


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


@njit(cache=True, inline="always")
def _cmp_rows(dense, X, data, indices, indptr, a, b):
    """``_cmp_dense_rows`` on X (dense) or ``_cmp_csr_rows`` on (data, indices, indptr)."""
    if dense:
        return _cmp_dense_rows(X, a, b)
    return _cmp_csr_rows(data, indices, indptr, a, b)


@njit(cache=True)
def _sort_block(order, buf, lo, hi, dense, X, data, indices, indptr):
    """Stable sort of ``order[lo:hi]`` by the rows it points to (dense X, or the CSR arrays);
    ``buf[lo:hi]`` is scratch.

    Insertion sort of runs of _RUN rows, then bottom-up merges alternating between ``order``
    and ``buf`` (a merge whose two runs are already in order is a copy).  O(m log m)
    comparisons for m = hi - lo, worst case.
    """
    m = hi - lo
    if m < 2:
        return
    for s in range(lo, hi, _RUN):
        e = min(s + _RUN, hi)
        for i in range(s + 1, e):
            v = order[i]
            k = i - 1
            while k >= s and _cmp_rows(dense, X, data, indices, indptr, v, order[k]) < 0:
                order[k + 1] = order[k]
                k -= 1
            order[k + 1] = v
    src = order
    dst = buf
    in_buf = False
    width = _RUN
    while width < m:
        for s in range(lo, hi, 2 * width):
            mid = min(s + width, hi)
            end = min(s + 2 * width, hi)
            if mid >= end or _cmp_rows(dense, X, data, indices, indptr, src[mid], src[mid - 1]) >= 0:
                for p in range(s, end):
                    dst[p] = src[p]
                continue
            i = s
            j = mid
            o = s
            while i < mid and j < end:
                # take from the right run only when strictly smaller: stable
                if _cmp_rows(dense, X, data, indices, indptr, src[j], src[i]) < 0:
                    dst[o] = src[j]
                    j += 1
                else:
                    dst[o] = src[i]
                    i += 1
                o += 1
            while i < mid:
                dst[o] = src[i]
                i += 1
                o += 1
            while j < end:
                dst[o] = src[j]
                j += 1
                o += 1
        src, dst = dst, src
        in_buf = not in_buf
        width *= 2
    if in_buf:
        for p in range(lo, hi):
            order[p] = buf[p]


@njit(cache=True, parallel=True)
def _sort_blocks(order, bounds, dense, X, data, indices, indptr):
    """Sort each block ``order[bounds[k]:bounds[k+1]]`` by row content (stable), in place; dense
    X, or CSR (data, indices, indptr) with sorted indices.

    One prange iteration per block: blocks touch disjoint slices of ``order`` and of the
    scratch buffer, and each block's sort is sequential, so the result does not depend on
    the number of threads.
    """
    buf = np.empty_like(order)
    for k in prange(bounds.shape[0] - 1):
        _sort_block(order, buf, bounds[k], bounds[k + 1], dense, X, data, indices, indptr)
