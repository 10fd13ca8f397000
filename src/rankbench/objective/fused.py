"""One read of X per f+gradient and per Hessian-vector product (tree and counting oracles).

The pair loss is a sum over queries, and a query's rows are few (tens to hundreds): for each
query, z_q = X_q w, its sort, its loss pass and X_q^T (dL/dz)_q run back to back while X_q is
in cache, so X is read from memory once per evaluation instead of twice (X w, then X^T g).
Hv is fused the same way (X_q v, the query's Hessian pass, X_q^T (H d)_q).  Queries run in
parallel in blocks fixed by the data (``products.query_blocks``); each block adds into its own
row of the accumulator and the rows are summed in order, so the result is the same with any
number of threads.  Dense X (C order) and CSR share the kernels: ``dense`` picks the row form.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from rankbench.objective.products import csr_row_dot
from rankbench.objective.score_order import _group_query, _sort_query
from rankbench.objective.sweeps import (
    FW_LANES,
    _counting_fun_query,
    _counting_hess_query,
    _max_levels,
    _tree_fun_query,
    _tree_hess_query,
)

# reassociation vectorizes the row dot products; the order is fixed by the code, not the threads
_FAST = {"reassoc", "contract"}

# The helpers below are inlined at numba-IR level into the fused passes, so they compile under the
# pass's fastmath flags and run as fast as the loops written out (timed, single thread, 480k x 46
# dense and CSR); as plain njit calls the row helpers made each pass ~1.5x slower.


@njit(cache=True, inline="always")
def _row_dot(dense, Xd, indptr, indices, data, i, w):
    """x_i . w for row i of dense Xd (C order) or of the CSR (indptr, indices, data); the CSR row
    is ``products.csr_row_dot``, the one sparse row dot."""
    if not dense:
        return csr_row_dot(indptr, indices, data, w, i)
    s = 0.0
    for j in range(Xd.shape[1]):
        s += Xd[i, j] * w[j]
    return s


@njit(cache=True, inline="always")
def _row_axpy(dense, Xd, indptr, indices, data, i, g, row):
    """row += g x_i for row i of dense Xd (C order) or of the CSR (indptr, indices, data)."""
    if dense:
        for j in range(Xd.shape[1]):
            row[j] += g * Xd[i, j]
    else:
        for t in range(indptr[i], indptr[i + 1]):
            row[indices[t]] += g * data[t]


@njit(cache=True, parallel=True, fastmath=_FAST)
def fused_fun(kind, dense, Xd, indptr, indices, data, w, query_ptr, qblocks, qrank, n_levels,
              bucket_bounds, bucket_offsets, bucket_grank, M, W, m0, c0, offs, wts, pows,
              prev, order, border, z, gz, diag, vals, acc):
    """Per query: z = X_q w, sort (seeded by ``prev`` when non-empty), the loss pieces
    (kind 0 = tree with margin m0 and weight c0, 1 = counting with the level matrices M, W),
    then acc[block] += X_q^T gz_q.  Fills z, order (border for counting), gz, diag, vals[q]."""
    nb = qblocks.shape[0] - 1
    kmax = _max_levels(n_levels)
    for b in prange(nb):
        row = acc[b]
        row[:] = 0.0
        F = np.empty(FW_LANES * (kmax + 1))
        cursor = np.empty(kmax, dtype=np.int64)
        for q in range(qblocks[b], qblocks[b + 1]):
            a = query_ptr[q]
            e = query_ptr[q + 1]
            if e == a:
                vals[q] = 0.0
                continue
            for i in range(a, e):
                z[i] = _row_dot(dense, Xd, indptr, indices, data, i, w)
                gz[i] = 0.0
                diag[i] = 0.0
            _sort_query(z, a, e, prev, order)
            val = 0.0
            k = n_levels[q]
            if k >= 2:
                if kind == 1:
                    _group_query(order, a, e, q, qrank, n_levels, bucket_bounds, bucket_offsets,
                                 border, cursor)
                for p in range(offs.shape[0]):
                    if kind == 0:
                        val += _tree_fun_query(order, a, e, k, qrank, z, m0 + offs[p],
                                               c0 * wts[p], pows[p], gz, diag, F)
                    else:
                        val += _counting_fun_query(q, border, bucket_bounds, bucket_offsets,
                                                   bucket_grank, n_levels, z, M, W, offs[p],
                                                   wts[p], pows[p], gz, diag)
                for i in range(a, e):
                    g = gz[i]
                    if g != 0.0:
                        _row_axpy(dense, Xd, indptr, indices, data, i, g, row)
            vals[q] = val


@njit(cache=True, parallel=True, fastmath=_FAST)
def fused_hess_vec(kind, dense, Xd, indptr, indices, data, v, query_ptr, qblocks, qrank, n_levels,
                   bucket_bounds, bucket_offsets, bucket_grank, M, W, m0, c0, offs, wts, pows,
                   order, border, z, diag, d, gamma, acc):
    """Per query: d = X_q v, gamma from the query's Hessian pass (squared pieces), then
    acc[block] += X_q^T (2 (diag d - gamma))_q, at the state of the last ``fused_fun``."""
    nb = qblocks.shape[0] - 1
    kmax = _max_levels(n_levels)
    for b in prange(nb):
        row = acc[b]
        row[:] = 0.0
        fs = np.empty(kmax + 1)
        for q in range(qblocks[b], qblocks[b + 1]):
            a = query_ptr[q]
            e = query_ptr[q + 1]
            k = n_levels[q]
            if e == a or k < 2:
                continue
            for i in range(a, e):
                d[i] = _row_dot(dense, Xd, indptr, indices, data, i, v)
                gamma[i] = 0.0
            for p in range(offs.shape[0]):
                if pows[p] == 2:
                    if kind == 0:
                        _tree_hess_query(order, a, e, k, qrank, z, m0 + offs[p], c0 * wts[p], d,
                                         gamma, fs)
                    else:
                        _counting_hess_query(q, border, bucket_bounds, bucket_offsets, bucket_grank,
                                             n_levels, z, M, W, offs[p], wts[p], d, gamma)
            for i in range(a, e):
                h = 2.0 * (diag[i] * d[i] - gamma[i])
                if h != 0.0:
                    _row_axpy(dense, Xd, indptr, indices, data, i, h, row)
