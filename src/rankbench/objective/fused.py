"""One read of X per f+gradient and per Hessian-vector product: the pieces of a fused pass.

The pair loss is a sum over queries, and a query's rows are few (tens to hundreds): for each
query, z_q = X_q w, its sort, its loss pass and X_q^T (dL/dz)_q run back to back while X_q is
in cache, so X is read from memory once per evaluation instead of twice (X w, then X^T g).
Hv is fused the same way (X_q v, the query's Hessian pass, X_q^T (H d)_q).  Queries run in
parallel in blocks fixed by the data (``products.query_blocks``); each block adds into its own
row of the accumulator and the rows are summed in order, so the result is the same with any
number of threads.  Dense X (C order) and CSR share the pieces: ``dense`` picks the row form.
The row arguments of every piece, ``dense, Xd, indptr, indices, data, ref_ptr, ref_cols,
ref_vals``, end with the columns centred per query (``objective/centring.py``; empty: none), which
a piece subtracts on the fly through the block's scratch row ``s`` (``centring.ref_scratch``).

An oracle with a fused fast path (``SweepOracle.fused_kernels``: tree, counting) writes its two
passes in its own module from the pieces here, which are inlined at numba-IR level into the
pass and so compile under its fastmath flags and run as fast as the loops written out (timed,
single thread, 480k x 46 dense and CSR); as plain njit calls the row helpers made each pass
~1.5x slower.
"""

from __future__ import annotations

from numba import njit

from rankbench.objective.centring import centred_row_axpy, centred_row_dot, load_refs, release_refs
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
def add_query_rows(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, s, q, a, e, g, row):
    """row += X_q^T g_q over rows a..e-1 (query q, rows centred), skipping the rows with g_i = 0."""
    if load_refs(q, ref_ptr, ref_cols, ref_vals, s):
        for i in range(a, e):
            if g[i] != 0.0:
                centred_row_axpy(dense, Xd, indptr, indices, data, i, g[i], s, row)
        release_refs(q, ref_ptr, ref_cols, s)
    else:
        for i in range(a, e):
            gi = g[i]
            if gi != 0.0:
                _row_axpy(dense, Xd, indptr, indices, data, i, gi, row)


@njit(cache=True, inline="always")
def query_directions(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, s, q, a, e, v, d,
                     gamma):
    """Rows a..e-1 (query q): d = X_q v (rows centred) and gamma cleared (the start of a query's
    Hessian product)."""
    if load_refs(q, ref_ptr, ref_cols, ref_vals, s):
        for i in range(a, e):
            d[i] = centred_row_dot(dense, Xd, indptr, indices, data, i, v, s)
        release_refs(q, ref_ptr, ref_cols, s)
    else:
        for i in range(a, e):
            d[i] = _row_dot(dense, Xd, indptr, indices, data, i, v)
    for i in range(a, e):
        gamma[i] = 0.0


@njit(cache=True, inline="always")
def query_scores(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, s, q, a, e, w, prev,
                 order, z, gz, diag):
    """Rows a..e-1 (query q): z = X_q w (rows centred), gz and diag cleared, and the query's score
    order (seeded by ``prev`` when non-empty)."""
    query_directions(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, s, q, a, e, w, z,
                     gz)
    for i in range(a, e):
        diag[i] = 0.0
    _sort_query(z, a, e, prev, order)


@njit(cache=True, inline="always")
def add_query_hess_rows(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, s, q, a, e, diag,
                        d, gamma, row):
    """row += X_q^T (2 (diag d - gamma))_q over rows a..e-1 (query q, rows centred): the end of a
    query's Hessian product."""
    centred = load_refs(q, ref_ptr, ref_cols, ref_vals, s)
    for i in range(a, e):
        h = 2.0 * (diag[i] * d[i] - gamma[i])
        if h != 0.0:
            if centred:
                centred_row_axpy(dense, Xd, indptr, indices, data, i, h, s, row)
            else:
                _row_axpy(dense, Xd, indptr, indices, data, i, h, row)
    if centred:
        release_refs(q, ref_ptr, ref_cols, s)
