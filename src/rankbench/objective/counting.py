"""Sorting-and-counting oracle (PRSVM+, Chapelle & Keerthi sect. 4.1-4.2): O(nd + n log n + nk).

After one sort of the scores per query, the documents of each query are split into
their label buckets (still in score order).  For every pair of levels (a > b) of a
query, one merge of the two buckets gives, for each document, the number and the sum
of scores of its margin-violating partners (Chapelle's alpha, beta; gamma for Hv):
the same counting as Joachims (2006) / Lee & Lin supplement Alg. I.  Because each pair
of levels is handled apart, the margin and weight may depend on the two labels
(margin and slack rescaling, Chapelle sect. 6.2) at no extra cost.  A loss is evaluated
piece by piece (shifted hinge or squared hinge, ``objective/losses.py``): one pass per piece.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from rankbench.objective.base import register_oracle
from rankbench.objective.centring import ref_scratch
from rankbench.objective.fused import (
    FUSED_FASTMATH,
    add_query_hess_rows,
    add_query_rows,
    query_directions,
    query_scores,
)
from rankbench.objective.score_order import _group_query, group_order_by_level, wide_query
from rankbench.objective.sweep_oracle import SweepOracle, sgd_step
from rankbench.objective.sweeps import (
    _counting_fun_query,
    _counting_fun_query_gathered,
    _counting_hess_query,
    _counting_hess_query_gathered,
    _max_levels,
    counting_fun_bucket,
    counting_hess_bucket,
)


@njit(cache=True, parallel=True)
def _counting_fun_wide(q, border, bounds, offsets, bgrank, n_levels, zb, M, W, off_m, weight, power,
                       gz, diag):
    """One query's part of ``counting_fun`` with its level buckets in parallel (each writes its
    own documents, ``sweeps.counting_fun_bucket``); L summed over the buckets in their order."""
    k = n_levels[q]
    vals = np.zeros(k)
    for r in prange(k):
        vals[r] = counting_fun_bucket(r, q, border, bounds, offsets, bgrank, n_levels, zb, M, W,
                                      off_m, weight, power, gz, diag)
    value = 0.0
    for r in range(k):
        value += vals[r]
    return value


@njit(cache=True, parallel=True)
def counting_fun(border, bounds, offsets, bgrank, n_levels, zb, M, W, off_m, weight, power, gz, diag):
    """Add one loss piece (weight * max(0, M + off_m - t)^power, power 1 or 2) to dL/dz and the
    Hessian diagonal, level pair by level pair; return its L; O(n k).  zb: the scores in border
    order (``gather_border``).  Queries in parallel, their values added in query order (the same
    sum whatever the thread count); the query of ``wide_query`` after them, its level buckets in
    parallel (``_counting_fun_wide``).  ``query_ptr`` is not an argument: the buckets' bounds
    give each query's documents."""
    nq = n_levels.shape[0]
    wq = _wide_bucket_query(bounds, offsets, n_levels)
    vals = np.zeros(nq)
    for q in prange(nq):
        if q != wq:
            vals[q] = _counting_fun_query_gathered(q, border, bounds, offsets, bgrank, n_levels, zb,
                                                   M, W, off_m, weight, power, gz, diag)
    if wq >= 0:
        vals[wq] = _counting_fun_wide(wq, border, bounds, offsets, bgrank, n_levels, zb, M, W, off_m,
                                      weight, power, gz, diag)
    value = 0.0
    for q in range(nq):
        value += vals[q]
    return value


@njit(cache=True)
def _wide_bucket_query(bounds, offsets, n_levels):
    """``wide_query`` of the queries as the level buckets give them (query q: border positions
    bounds[offsets[q]] .. bounds[offsets[q] + n_levels[q]]), when it has two levels or more."""
    nq = n_levels.shape[0]
    ptr = np.empty(nq + 1, dtype=np.int64)
    ptr[0] = 0
    for q in range(nq):
        o = offsets[q]
        ptr[q + 1] = ptr[q] + (bounds[o + n_levels[q]] - bounds[o])
    wq = wide_query(ptr)
    if wq >= 0 and n_levels[wq] < 2:
        return -1
    return wq


@njit(cache=True, parallel=True)
def gather_border(border, z, zb):
    """zb[t] = z[border[t]]: the scores in border order (``counting_fun``'s and
    ``counting_hess``'s zb), once per sort."""
    for t in prange(border.shape[0]):
        zb[t] = z[border[t]]


@njit(cache=True, parallel=True)
def _counting_hess_wide(q, border, bounds, offsets, bgrank, n_levels, zb, M, W, off_m, weight, d,
                        db, gamma):
    """One query's part of ``counting_hess`` on two threads and more: d gathered by halves, the
    level buckets in parallel (``sweeps.counting_hess_bucket``; the same bits)."""
    o = offsets[q]
    k = n_levels[q]
    lo = bounds[o]
    n = bounds[o + k] - lo
    for h in prange(2):
        t0 = lo if h == 0 else lo + n // 2
        t1 = lo + n // 2 if h == 0 else lo + n
        for t in range(t0, t1):
            db[t] = d[border[t]]
    for r in prange(k):
        counting_hess_bucket(r, q, border, bounds, offsets, bgrank, n_levels, zb, db, M, W, off_m,
                             weight, gamma)


@njit(cache=True, parallel=True)
def counting_hess(border, bounds, offsets, bgrank, n_levels, zb, M, W, off_m, weight, d, db, gamma):
    """Add c * (sum of d over the active partners of i) to gamma[i] for one squared-hinge piece,
    level pair by level pair; O(nk); queries in parallel, the query of ``wide_query`` after them
    (``_counting_hess_wide``).  zb: the scores in border order (``gather_border``); db: scratch
    of n entries, d gathered into border order per query."""
    wq = _wide_bucket_query(bounds, offsets, n_levels)
    for q in prange(n_levels.shape[0]):
        k = n_levels[q]
        if k < 2 or q == wq:
            continue
        o = offsets[q]
        for t in range(bounds[o], bounds[o + k]):
            db[t] = d[border[t]]
        _counting_hess_query_gathered(q, border, bounds, offsets, bgrank, n_levels, zb, db, M, W,
                                      off_m, weight, gamma)
    if wq >= 0:
        _counting_hess_wide(wq, border, bounds, offsets, bgrank, n_levels, zb, M, W, off_m, weight,
                            d, db, gamma)


@njit(cache=True, inline="always")
def _counting_query_fun(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, s, w, q,
                        query_ptr, qrank, n_levels, offs, wts, pows, prev, order, z, gz, diag, row,
                        cursor, bucket_bounds, bucket_offsets, bucket_grank, M, W, border):
    """One query of ``counting_fused_fun``: z_q = X_q w, its sort, the order grouped by level, the
    loss pieces and row += X_q^T gz_q; returns the query's L."""
    a = query_ptr[q]
    e = query_ptr[q + 1]
    if e == a:
        return 0.0
    query_scores(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, s, q, a, e, w, prev,
                 order, z, gz, diag)
    val = 0.0
    if n_levels[q] >= 2:
        _group_query(order, a, e, q, qrank, n_levels, bucket_bounds, bucket_offsets, border, cursor)
        for p in range(offs.shape[0]):
            val += _counting_fun_query(q, border, bucket_bounds, bucket_offsets, bucket_grank,
                                       n_levels, z, M, W, offs[p], wts[p], pows[p], gz, diag)
        add_query_rows(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, s, q, a, e, gz,
                       row)
    return val


@njit(cache=True, parallel=True, fastmath=FUSED_FASTMATH)
def counting_fused_fun(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, w, query_ptr,
                       qblocks, qrank, n_levels, offs, wts, pows, prev, order, z, gz, diag, vals,
                       acc, bucket_bounds, bucket_offsets, bucket_grank, M, W, border):
    """The fused f+gradient pass (``objective/fused.py``): per query, z = X_q w, its sort (seeded
    by ``prev`` when non-empty), the order grouped by level into ``border``, the loss pieces with
    the level matrices M, W, and acc[block] += X_q^T gz_q.  Fills z, order, border, gz, diag and
    vals[q]."""
    kmax = _max_levels(n_levels)
    for b in prange(qblocks.shape[0] - 1):
        row = np.zeros(acc.shape[1])  # the block's own row, copied to acc[b] at the end (products.max_blocks)
        s = ref_scratch(ref_ptr, acc.shape[1])
        cursor = np.empty(kmax, dtype=np.int64)
        for q in range(qblocks[b], qblocks[b + 1]):
            vals[q] = _counting_query_fun(dense, Xd, indptr, indices, data, ref_ptr, ref_cols,
                                          ref_vals, s, w, q, query_ptr, qrank, n_levels, offs, wts,
                                          pows, prev, order, z, gz, diag, row, cursor,
                                          bucket_bounds, bucket_offsets, bucket_grank, M, W, border)
        acc[b, :] = row


@njit(cache=True, fastmath=FUSED_FASTMATH)
def counting_sgd_steps(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, w, w_avg,
                       query_ptr, qrank, n_levels, offs, wts, pows, order, z, gz, diag, queries,
                       picks, t_first, t_last, sgd, bucket_bounds, bucket_offsets, bucket_grank, M,
                       W, border):
    """Steps t_first..t_last of SGD on queries (``optim/sgd_queries.py``), w and w_avg in place:
    step t takes query queries[picks[t - 1]]'s gradient by the body of ``counting_fused_fun``
    (seeded by ``order``), then ``sgd_step`` with ``sgd`` = (Q, C, eta0, t0, average)."""
    d = w.shape[0]
    row = np.zeros(d)
    s = ref_scratch(ref_ptr, d)
    cursor = np.empty(_max_levels(n_levels), dtype=np.int64)
    for t in range(t_first, t_last + 1):
        q = queries[picks[t - 1]]
        row[:] = 0.0
        _counting_query_fun(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, s, w, q,
                            query_ptr, qrank, n_levels, offs, wts, pows, order, order, z, gz, diag,
                            row, cursor, bucket_bounds, bucket_offsets, bucket_grank, M, W, border)
        sgd_step(w, w_avg, row, t, sgd)


@njit(cache=True, parallel=True, fastmath=FUSED_FASTMATH)
def counting_fused_hess(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, v,
                        query_ptr, qblocks, qrank, n_levels, offs, wts, pows, order, z, diag, d,
                        gamma, acc, bucket_bounds, bucket_offsets, bucket_grank, M, W, border):
    """The fused Hv pass: per query, d = X_q v, gamma of the squared pieces, then
    acc[block] += X_q^T (2 (diag d - gamma))_q, at the state of the last ``counting_fused_fun``."""
    for b in prange(qblocks.shape[0] - 1):
        row = np.zeros(acc.shape[1])  # the block's own row, copied to acc[b] at the end (products.max_blocks)
        s = ref_scratch(ref_ptr, acc.shape[1])
        for q in range(qblocks[b], qblocks[b + 1]):
            a = query_ptr[q]
            e = query_ptr[q + 1]
            if e == a or n_levels[q] < 2:
                continue
            query_directions(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, s, q, a,
                             e, v, d, gamma)
            for p in range(offs.shape[0]):
                if pows[p] == 2:
                    _counting_hess_query(q, border, bucket_bounds, bucket_offsets, bucket_grank,
                                         n_levels, z, M, W, offs[p], wts[p], d, gamma)
            add_query_hess_rows(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, s, q, a,
                                e, diag, d, gamma, row)
        acc[b, :] = row


@register_oracle
class CountingOracle(SweepOracle):
    """PRSVM+'s oracle: sort once per query, then count per pair of relevance levels (O(nk))."""

    name = "counting"
    fused_kernels = (counting_fused_fun, counting_fused_hess)
    sgd_kernel = staticmethod(counting_sgd_steps)
    # label-pair costs level pair by level pair; per-document margins (delta_i - delta_j)^2 by
    # the score shift of the base class (Chapelle sect. 6.2's O(n log n) special case)
    rescalings = frozenset({("margin", "label"), ("slack", "label"), ("margin", "document")})

    def _setup(self) -> None:
        super()._setup()
        self._border = None
        self._zb_ready = False

    def __copy__(self):
        new = super().__copy__()
        new._border = None  # written in place by the fused pass
        new._zb_ready = False  # its _vecs are its own (SweepOracle.__copy__)
        return new

    def _after_sort(self):
        lv = self.levels
        if self._border is None:  # rewritten by every sort, as the order
            self._border = np.empty(self.n_docs, dtype=np.int64)
        group_order_by_level(self._order, lv.query_ptr, lv.qrank, lv.n_levels, lv.bucket_bounds,
                             lv.bucket_offsets, self._border)
        # the scores in border order, for every piece of this fun and the Hv products after it
        gather_border(self._border, self._z, self._vec("zb"))
        self._zb_ready = True

    def _fun_piece(self, z, off, weight, power, gz, diag):
        lv = self.levels
        if z is not self._z:
            raise ValueError("the counting oracle's pieces sweep the scores of the last sort")
        return counting_fun(self._border, lv.bucket_bounds, lv.bucket_offsets, lv.bucket_grank,
                            lv.n_levels, self._vec("zb"), self.margin, self.weight, off, weight,
                            power, gz, diag)

    def _hess_piece(self, d, off, weight, gamma):
        lv = self.levels
        zb = self._vec("zb")
        if not self._zb_ready:  # the fused pass left the scores of its own sort: gather them once
            gather_border(self._border, self._z, zb)
            self._zb_ready = True
        counting_hess(self._border, lv.bucket_bounds, lv.bucket_offsets, lv.bucket_grank,
                      lv.n_levels, zb, self.margin, self.weight, off, weight, d, self._vec("db"),
                      gamma)

    def _fused_hess_extra(self):
        lv = self.levels
        return (lv.bucket_bounds, lv.bucket_offsets, lv.bucket_grank, self.margin, self.weight,
                self._border)

    def _fused_fun_extra(self):
        if self._border is None:  # reused by every later call, as the order
            self._border = np.empty(self.n_docs, dtype=np.int64)
        self._zb_ready = False  # the fused pass rewrites the border and the scores
        return self._fused_hess_extra()
