"""One read of X per f+gradient and per Hessian-vector product: the pieces of a fused pass.

The pair loss is a sum over queries, and a query's rows are few (tens to hundreds): for each
query, z_q = X_q w, its sort, its loss pass and X_q^T (dL/dz)_q run back to back while X_q is
in cache, so X is read from memory once per evaluation instead of twice (X w, then X^T g).
Hv is fused the same way (X_q v, the query's Hessian pass, X_q^T (H d)_q).  Queries run in
parallel in blocks fixed by the data (``products.query_blocks``); each block adds into its own
row of the accumulator and the rows are summed in order, so the result is the same with any
number of threads.  Dense X (C order) and CSR share the pieces: ``dense`` picks the row form.

An oracle with a fused fast path (``SweepOracle.fused_kernels``: tree, counting) writes its two
passes in its own module from the pieces here, which are inlined at numba-IR level into the
pass and so compile under its fastmath flags and run as fast as the loops written out (timed,
single thread, 480k x 46 dense and CSR); as plain njit calls the row helpers made each pass
~1.5x slower.
"""

from __future__ import annotations

from numba import njit

from rankbench.objective.products import csr_row_dot
from rankbench.objective.score_order import _sort_query

# reassociation vectorizes the row dot products; the order is fixed by the code, not the threads
FUSED_FASTMATH = {"reassoc", "contract"}


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


@njit(cache=True, inline="always")
def query_scores(dense, Xd, indptr, indices, data, w, a, e, prev, order, z, gz, diag):
    """Rows a..e-1 (one query): z = X_q w, gz and diag cleared, and the query's score order
    (seeded by ``prev`` when non-empty)."""
    for i in range(a, e):
        z[i] = _row_dot(dense, Xd, indptr, indices, data, i, w)
        gz[i] = 0.0
        diag[i] = 0.0
    _sort_query(z, a, e, prev, order)


@njit(cache=True, inline="always")
def add_query_rows(dense, Xd, indptr, indices, data, a, e, g, row):
    """row += X_q^T g_q over rows a..e-1, skipping the rows with g_i = 0."""
    for i in range(a, e):
        gi = g[i]
        if gi != 0.0:
            _row_axpy(dense, Xd, indptr, indices, data, i, gi, row)


@njit(cache=True, inline="always")
def query_directions(dense, Xd, indptr, indices, data, v, a, e, d, gamma):
    """Rows a..e-1: d = X_q v and gamma cleared (the start of a query's Hessian product)."""
    for i in range(a, e):
        d[i] = _row_dot(dense, Xd, indptr, indices, data, i, v)
        gamma[i] = 0.0


@njit(cache=True, inline="always")
def add_query_hess_rows(dense, Xd, indptr, indices, data, a, e, diag, d, gamma, row):
    """row += X_q^T (2 (diag d - gamma))_q over rows a..e-1: the end of a query's Hessian product."""
    for i in range(a, e):
        h = 2.0 * (diag[i] * d[i] - gamma[i])
        if h != 0.0:
            _row_axpy(dense, Xd, indptr, indices, data, i, h, row)
