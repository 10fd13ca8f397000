"""Feature offsets removed per query: the pairwise objective at any common offset of the features.

The RankSVM objective depends on X only through within-query differences x_i - x_j (the loss is
a function of z_i - z_j, its dL/dz sums to zero over every query and its Hessian in z has rows
summing to zero, with or without rescaling).  A column whose values in a query share a large
offset (raw counts, lengths, PageRank, or a feature constant per query) makes z = Xw large, and
z_i - z_j, the loss pieces (sums of z and z^2 over partners) and X^T g then cancel: at an offset
of 1e6 the counting oracle's f was wrong in the 5th digit.

So the pair oracles' products with X work on rows centred per query: for query q and column j,
when all the query's values of column j share one sign and the smallest magnitude is at least
``CENTRE_RATIO`` = 16 times their spread (max - min), the kernels use x_ij - x_aj (a = the query's
first row) instead of x_ij.  The values then lie within a factor 2 of each other (any ratio >= 1
gives that), so every such difference is exact (Sterbenz), and every column left alone has
max |x_ij| < 17 (max - min) in its query: what an offset can add to the rounding of the scores is
bounded by that factor 17, and the loss pieces (sums of z and z^2: quadratic) by 17^2, about
4e-14 relative, far below the 1e-10 the tests ask.  A ratio of 16 rather than 1 leaves the
columns of ordinary data alone (two or three documents of Gaussian features fall within a factor
2 of each other often, within 1/16 of their size rarely), so those run the plain kernels bit for
bit as before.  The scores z_i - x_a.w differ from X w by a constant per query, which changes no
loss, no dL/dz, no Hessian and (dL/dz summing to zero per query) no X^T dL/dz in exact arithmetic;
``coef_`` and ``decision_function`` keep their meaning.

Nothing is copied: the references of a problem are one (query, column, value) triple per centred
pair, at most one per column of each query's first stored row; the kernels subtract them on the
fly from a scratch row of d floats per block of rows.  A column that a CSR query does not store in
every row holds a 0 among its values, so it is never centred and the sparsity is kept.  Data
without such columns (query-normalised LETOR, [0, 1] features) has no reference at all and runs
the plain kernels, bit for bit as before.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

# centre column j of a query when min |x| >= CENTRE_RATIO * (max - min) over the query, one sign
CENTRE_RATIO = 16.0
# reassociation vectorizes the dense row dot products (as products._FAST)
_FAST = {"reassoc", "contract"}


def _centred(lo: float, hi: float, ratio: float) -> bool:
    """Whether values in [lo, hi] share one sign and min |x| >= ratio * (hi - lo)."""
    return (lo > 0.0 and lo >= ratio * (hi - lo)) or (hi < 0.0 and -hi >= ratio * (hi - lo))


_centred_jit = njit(cache=True, inline="always")(_centred)


# rows between two checks whether a query's columns can still be centred, after checks at rows
# 1, 2 and 4 (a check costs about a row's work: a query that centres a column pays 3 rows plus
# 1 in _CHECK_ROWS more; one that centres none, as in LETOR data, stops after a few rows)
_CHECK_ROWS = 8


@njit(cache=True, inline="always")
def _any_centred(lo, hi, ratio):
    """Whether any column with values in [lo[j], hi[j]] passes ``_centred``.  Once a column
    fails, it fails for every superset of its values: lo only falls and hi only rises, so min |x|
    can only shrink, the spread only grow, and a sign change stays."""
    for j in range(lo.shape[0]):
        if _centred_jit(lo[j], hi[j], ratio):
            return True
    return False


@njit(cache=True, parallel=True)
def _dense_references(X, query_ptr, qblocks, ratio, slots, cols, vals, counts):
    """Per query q (blocks of queries in parallel): the centred columns of dense X into
    cols/vals[slots[q]:], their number into counts[q]."""
    d = X.shape[1]
    for b in prange(qblocks.shape[0] - 1):
        lo = np.empty(d)
        hi = np.empty(d)
        for q in range(qblocks[b], qblocks[b + 1]):
            a = query_ptr[q]
            e = query_ptr[q + 1]
            counts[q] = 0
            if e - a < 2:  # no pair: its scores never meet another
                continue
            for j in range(d):
                lo[j] = X[a, j]
                hi[j] = X[a, j]
            for i in range(a + 1, e):
                for j in range(d):
                    x = X[i, j]
                    lo[j] = min(lo[j], x)
                    hi[j] = max(hi[j], x)
                k = i - a
                if (k & (k - 1) == 0 or k % _CHECK_ROWS == 0) and not _any_centred(lo, hi, ratio):
                    break  # no column can qualify again (lo only falls, hi only rises)
            c = 0
            for j in range(d):
                if _centred_jit(lo[j], hi[j], ratio):
                    cols[slots[q] + c] = j
                    vals[slots[q] + c] = X[a, j]
                    c += 1
            counts[q] = c


@njit(cache=True, parallel=True)
def _csr_references(indptr, indices, data, d, query_ptr, qblocks, ratio, slots, cols, vals, counts):
    """The CSR form of ``_dense_references``: the candidates are the first row's stored columns,
    kept when every row of the query stores them (a missing entry is a 0 among the values)."""
    for b in prange(qblocks.shape[0] - 1):
        pos = np.full(d, -1, dtype=np.int64)
        for q in range(qblocks[b], qblocks[b + 1]):
            a = query_ptr[q]
            e = query_ptr[q + 1]
            counts[q] = 0
            if e - a < 2:
                continue
            k0 = indptr[a]
            m = indptr[a + 1] - k0
            seen = np.zeros(m, dtype=np.int64)
            lo = np.empty(m)
            hi = np.empty(m)
            for t in range(m):
                pos[indices[k0 + t]] = t
                lo[t] = data[k0 + t]
                hi[t] = data[k0 + t]
            for i in range(a, e):
                for k in range(indptr[i], indptr[i + 1]):
                    t = pos[indices[k]]
                    if t >= 0:
                        seen[t] += 1
                        lo[t] = min(lo[t], data[k])
                        hi[t] = max(hi[t], data[k])
            c = 0
            for t in range(m):
                pos[indices[k0 + t]] = -1
                if seen[t] == e - a and _centred_jit(lo[t], hi[t], ratio):
                    cols[slots[q] + c] = indices[k0 + t]
                    vals[slots[q] + c] = data[k0 + t]
                    c += 1
            counts[q] = c


@njit(cache=True)
def _compact(slots, counts, cols, vals, out_cols, out_vals):
    t = 0
    for q in range(counts.shape[0]):
        for c in range(counts[q]):
            out_cols[t] = cols[slots[q] + c]
            out_vals[t] = vals[slots[q] + c]
            t += 1


def offset_references(X, query_ptr: np.ndarray, qblocks: np.ndarray,
                      ratio: float = CENTRE_RATIO) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(ref_ptr, ref_cols, ref_vals): query q centres the columns ref_cols[ref_ptr[q]:ref_ptr[q+1]]
    by the values of its first row (module docstring), or None when no query centres any
    column; one read of X, queries in parallel by the blocks ``qblocks``."""
    query_ptr = np.asarray(query_ptr, dtype=np.int64)
    nq = query_ptr.shape[0] - 1
    n, d = X.shape
    starts = query_ptr[:-1].clip(max=max(n - 1, 0))
    if sp.issparse(X):
        bound = np.where(np.diff(query_ptr) > 1, X.indptr[starts + 1] - X.indptr[starts], 0)
    else:
        bound = np.where(np.diff(query_ptr) > 1, d, 0)
    slots = np.zeros(nq + 1, dtype=np.int64)
    np.cumsum(bound, out=slots[1:])
    cols = np.empty(int(slots[-1]), dtype=np.int64)
    vals = np.empty(int(slots[-1]))
    counts = np.zeros(nq, dtype=np.int64)
    if slots[-1] == 0:
        return None
    if sp.issparse(X):
        _csr_references(X.indptr, X.indices, X.data, d, query_ptr, qblocks, float(ratio), slots,
                        cols, vals, counts)
    else:
        _dense_references(X, query_ptr, qblocks, float(ratio), slots, cols, vals, counts)
    total = int(counts.sum())
    if total == 0:
        return None
    ref_ptr = np.zeros(nq + 1, dtype=np.int64)
    np.cumsum(counts, out=ref_ptr[1:])
    out_cols = np.empty(total, dtype=np.int64)
    out_vals = np.empty(total)
    _compact(slots, counts, cols, vals, out_cols, out_vals)
    return ref_ptr, out_cols, out_vals


# the kernels' side ----------------------------------------------------------------------------
NO_REFS = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0))


@njit(cache=True, inline="always")
def ref_scratch(ref_ptr, d):
    """The scratch row of a block of rows: d zeros when the problem has references, else empty."""
    return np.zeros(d if ref_ptr.shape[0] > 0 else 0)


@njit(cache=True, inline="always")
def load_refs(q, ref_ptr, ref_cols, ref_vals, s):
    """Put query q's references into the scratch row s (zero elsewhere); whether it has any."""
    if ref_ptr.shape[0] == 0 or ref_ptr[q + 1] == ref_ptr[q]:
        return False
    for t in range(ref_ptr[q], ref_ptr[q + 1]):
        s[ref_cols[t]] = ref_vals[t]
    return True


@njit(cache=True, inline="always")
def release_refs(q, ref_ptr, ref_cols, s):
    """Zero query q's entries of the scratch row again."""
    if ref_ptr.shape[0] > 0:
        for t in range(ref_ptr[q], ref_ptr[q + 1]):
            s[ref_cols[t]] = 0.0


@njit(cache=True, inline="always")
def centred_row_dot(dense, Xd, indptr, indices, data, i, w, s):
    """(x_i - s) . w over row i's stored entries (dense: every column)."""
    acc = 0.0
    if dense:
        for j in range(Xd.shape[1]):
            acc += (Xd[i, j] - s[j]) * w[j]
    else:
        for k in range(indptr[i], indptr[i + 1]):
            j = indices[k]
            acc += (data[k] - s[j]) * w[j]
    return acc


@njit(cache=True, inline="always")
def centred_row_axpy(dense, Xd, indptr, indices, data, i, g, s, row):
    """row += g (x_i - s) over row i's stored entries."""
    if dense:
        for j in range(Xd.shape[1]):
            row[j] += g * (Xd[i, j] - s[j])
    else:
        for k in range(indptr[i], indptr[i + 1]):
            j = indices[k]
            row[j] += g * (data[k] - s[j])


@njit(cache=True, inline="always")
def _first_query(query_ptr, i):
    """The query holding row i (the last of equal starts: empty queries before it are skipped)."""
    return np.searchsorted(query_ptr, i, side="right") - 1


@njit(cache=True, parallel=True, fastmath=_FAST)
def centred_matvec(dense, Xd, indptr, indices, data, query_ptr, blocks, ref_ptr, ref_cols, ref_vals,
                   v, out):
    """out = X v with each query's rows centred, by blocks of rows (queries walked in each)."""
    d = v.shape[0]
    for b in prange(blocks.shape[0] - 1):
        s = np.zeros(d)
        i = blocks[b]
        q = _first_query(query_ptr, i)
        while i < blocks[b + 1]:
            e = min(query_ptr[q + 1], blocks[b + 1])
            load_refs(q, ref_ptr, ref_cols, ref_vals, s)
            for r in range(i, e):
                out[r] = centred_row_dot(dense, Xd, indptr, indices, data, r, v, s)
            release_refs(q, ref_ptr, ref_cols, s)
            i = e
            q += 1


@njit(cache=True, parallel=True)
def centred_rmatvec(dense, Xd, indptr, indices, data, query_ptr, blocks, ref_ptr, ref_cols,
                    ref_vals, z, acc):
    """X^T z with each query's rows centred, block b of rows into acc[b] (``sum_rows`` adds them)."""
    d = acc.shape[1]
    for b in prange(blocks.shape[0] - 1):
        row = np.zeros(acc.shape[1])  # the block's own row, copied to acc[b] at the end (products.max_blocks)
        s = np.zeros(d)
        i = blocks[b]
        q = _first_query(query_ptr, i)
        while i < blocks[b + 1]:
            e = min(query_ptr[q + 1], blocks[b + 1])
            load_refs(q, ref_ptr, ref_cols, ref_vals, s)
            for r in range(i, e):
                if z[r] != 0.0:
                    centred_row_axpy(dense, Xd, indptr, indices, data, r, z[r], s, row)
            release_refs(q, ref_ptr, ref_cols, s)
            i = e
            q += 1
        acc[b, :] = row


@njit(cache=True, parallel=True)
def centred_hess_diag(dense, Xd, indptr, indices, data, w, query_ptr, qblocks, ref_ptr, ref_cols,
                      ref_vals, acc):
    """``products.dense_hess_diag`` / ``csr_hess_diag`` on rows centred per query: acc[b, j] = sum
    over the queries of block b of sum_i w_i x_ij^2 - (sum_i w_i x_ij)^2 / sum_i w_i."""
    d = acc.shape[1]
    for b in prange(qblocks.shape[0] - 1):
        row = np.zeros(acc.shape[1])  # the block's own row, copied to acc[b] at the end (products.max_blocks)
        m = np.zeros(d)
        s = np.zeros(d)
        seen = np.zeros(d, dtype=np.bool_)
        touched = np.empty(d, dtype=np.int64)
        for q in range(qblocks[b], qblocks[b + 1]):
            load_refs(q, ref_ptr, ref_cols, ref_vals, s)
            tot = 0.0
            nt = 0
            for i in range(query_ptr[q], query_ptr[q + 1]):
                wi = w[i]
                if wi == 0.0:
                    continue
                tot += wi
                if dense:
                    for j in range(d):
                        x = Xd[i, j] - s[j]
                        row[j] += wi * x * x
                        m[j] += wi * x
                else:
                    for k in range(indptr[i], indptr[i + 1]):
                        j = indices[k]
                        x = data[k] - s[j]
                        row[j] += wi * x * x
                        m[j] += wi * x
                        if not seen[j]:
                            seen[j] = True
                            touched[nt] = j
                            nt += 1
            inv = 1.0 / tot if tot > 0.0 else 0.0
            if dense:
                for j in range(d):
                    row[j] -= m[j] * m[j] * inv
                    m[j] = 0.0
            else:
                for t in range(nt):
                    j = touched[t]
                    row[j] -= m[j] * m[j] * inv
                    m[j] = 0.0
                    seen[j] = False
            release_refs(q, ref_ptr, ref_cols, s)
        acc[b, :] = row
