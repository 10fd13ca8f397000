"""Order-statistic tree oracle (Lee & Lin 2014): O(nd + n log n) per f/gradient, O(nd + n log k) per Hv.

For each document i, with s_h = z_h - m the shifted score of a preferred document h:
l_i^+ / alpha_i^+ count / sum the documents h with y_h > y_i and s_h < z_i (pairs
where i is the less relevant one and the margin is violated), l_i^- / alpha_i^- the
documents l with y_l < y_i and z_l > s_i.  One ascending and one descending sweep per
query in score order, with Fenwick trees indexed by the label rank inside the query,
give all of them whatever the number k of relevance levels.  The sort is done once in
``fun`` and reused by every Hessian-vector product of that Newton step.
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
from rankbench.objective.sweep_oracle import SweepOracle
from rankbench.objective.sweeps import (
    FW_LANES,
    _fw_add,
    _fw_prefix,
    _max_levels,
    _tree_fun_sorted,
    _tree_hess_sorted,
    gather_directions,
    gather_query,
    scatter_add,
    scatter_add_pair,
    sweep_scratch,
)

# queries per parallel chunk of ``tree_fun`` / ``tree_hess`` (each chunk allocates its scratch
# once): at most QCHUNK, and fewer so that there are at least MIN_CHUNKS chunks where the queries
# allow (OHSUMED's 63 queries in one chunk ran on one thread); any chunking gives the same sums
QCHUNK = 64
MIN_CHUNKS = 32


@njit(cache=True, inline="always")
def _chunk_size(nq):
    return max(1, min(QCHUNK, nq // MIN_CHUNKS))


@njit(cache=True, parallel=True)
def tree_fun(order, query_ptr, qrank, n_levels, z, m, c, power, gz, diag):
    """Add one loss piece c * max(0, m - t)^power (power 1 or 2) to dL/dz and the Hessian diagonal;
    return its L; O(n log k).  Queries run in parallel chunks (each writes only its own
    documents), each swept over score-ordered copies of its scores and ranks; the per-query
    values are added in query order, so the sum does not depend on the thread count."""
    nq = query_ptr.shape[0] - 1
    vals = np.zeros(nq)
    cs = _chunk_size(nq)
    for ch in prange((nq + cs - 1) // cs):
        q0 = ch * cs
        q1 = min(nq, q0 + cs)
        zs, rs, gs, hs = sweep_scratch(query_ptr, q0, q1, qrank)
        F = np.empty(FW_LANES * (_max_levels(n_levels[q0:q1]) + 1))
        for q in range(q0, q1):
            k = n_levels[q]
            if k < 2:
                continue
            a = query_ptr[q]
            n = query_ptr[q + 1] - a
            gather_query(order, a, a + n, z, qrank, zs, rs)
            gs[:n] = 0.0
            hs[:n] = 0.0
            vals[q] = _tree_fun_sorted(n, k, zs, rs, m, c, power, gs, hs, F)
            scatter_add_pair(order, a, n, gs, hs, gz, diag)
    value = 0.0
    for q in range(nq):
        value += vals[q]
    return value


@njit(cache=True, parallel=True)
def tree_hess(order, query_ptr, qrank, n_levels, z, m, c, d, gamma):
    """Add c * (sum of d over the active partners of i) to gamma[i] for one squared-hinge piece;
    O(n log k); queries in parallel chunks, swept over score-ordered copies."""
    nq = query_ptr.shape[0] - 1
    cs = _chunk_size(nq)
    for ch in prange((nq + cs - 1) // cs):
        q0 = ch * cs
        q1 = min(nq, q0 + cs)
        zs, rs, ds, gams = sweep_scratch(query_ptr, q0, q1, qrank)
        fs = np.empty(_max_levels(n_levels[q0:q1]) + 1)
        for q in range(q0, q1):
            k = n_levels[q]
            if k < 2:
                continue
            a = query_ptr[q]
            n = query_ptr[q + 1] - a
            gather_query(order, a, a + n, z, qrank, zs, rs)
            gather_directions(order, a, n, d, ds, gams)
            _tree_hess_sorted(n, k, zs, rs, m, c, ds, gams, fs)
            scatter_add(order, a, n, gams, gamma)


@njit(cache=True)
def tree_active_pairs(order, query_ptr, qrank, n_levels, z, m):
    """Number of pairs (i preferred over l) with z_l > z_i - m, i.e. margin below m; O(n log k)."""
    fc = np.zeros(_max_levels(n_levels) + 1)
    total = 0
    for q in range(query_ptr.shape[0] - 1):
        a = query_ptr[q]
        b = query_ptr[q + 1]
        k = n_levels[q]
        if k < 2:
            continue
        for t in range(k + 1):
            fc[t] = 0.0
        ptr = b - 1
        for p in range(b - 1, a - 1, -1):
            i = order[p]
            si = z[i] - m
            while ptr >= a and z[order[ptr]] > si:
                _fw_add(fc, qrank[order[ptr]], 1.0)
                ptr -= 1
            total += int(_fw_prefix(fc, qrank[i]))
    return total


@njit(cache=True, parallel=True, fastmath=FUSED_FASTMATH)
def tree_fused_fun(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, w, query_ptr,
                   qblocks, qrank, n_levels, offs, wts, pows, prev, order, z, gz, diag, vals, acc,
                   m0, c0):
    """The fused f+gradient pass (``objective/fused.py``): per query, z = X_q w, its sort (seeded
    by ``prev`` when non-empty), the loss pieces (margin m0 + offs[p], weight c0 * wts[p]) swept
    over score-ordered copies, and acc[block] += X_q^T gz_q.  Fills z, order, gz, diag and vals[q]."""
    kmax = _max_levels(n_levels)
    for b in prange(qblocks.shape[0] - 1):
        row = np.zeros(acc.shape[1])  # the block's own row, copied to acc[b] at the end (products.max_blocks)
        s = ref_scratch(ref_ptr, acc.shape[1])
        F = np.empty(FW_LANES * (kmax + 1))
        zs, rs, gs, hs = sweep_scratch(query_ptr, qblocks[b], qblocks[b + 1], qrank)
        for q in range(qblocks[b], qblocks[b + 1]):
            a = query_ptr[q]
            e = query_ptr[q + 1]
            if e == a:
                vals[q] = 0.0
                continue
            query_scores(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, s, q, a, e,
                         w, prev, order, z, gz, diag)
            val = 0.0
            k = n_levels[q]
            if k >= 2:
                n = e - a
                gather_query(order, a, e, z, qrank, zs, rs)
                gs[:n] = 0.0
                hs[:n] = 0.0
                for p in range(offs.shape[0]):
                    val += _tree_fun_sorted(n, k, zs, rs, m0 + offs[p], c0 * wts[p], pows[p], gs,
                                            hs, F)
                scatter_add_pair(order, a, n, gs, hs, gz, diag)  # into gz, diag cleared by query_scores
                add_query_rows(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, s, q, a,
                               e, gz, row)
            vals[q] = val
        acc[b, :] = row


@njit(cache=True, parallel=True, fastmath=FUSED_FASTMATH)
def tree_fused_hess(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, v, query_ptr,
                    qblocks, qrank, n_levels, offs, wts, pows, order, z, diag, d, gamma, acc, m0,
                    c0):
    """The fused Hv pass: per query, d = X_q v, gamma of the squared pieces (swept over
    score-ordered copies), then acc[block] += X_q^T (2 (diag d - gamma))_q, at the state of the
    last ``tree_fused_fun``."""
    kmax = _max_levels(n_levels)
    for b in prange(qblocks.shape[0] - 1):
        row = np.zeros(acc.shape[1])  # the block's own row, copied to acc[b] at the end (products.max_blocks)
        s = ref_scratch(ref_ptr, acc.shape[1])
        fs = np.empty(kmax + 1)
        zs, rs, ds, gams = sweep_scratch(query_ptr, qblocks[b], qblocks[b + 1], qrank)
        for q in range(qblocks[b], qblocks[b + 1]):
            a = query_ptr[q]
            e = query_ptr[q + 1]
            k = n_levels[q]
            if e == a or k < 2:
                continue
            query_directions(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, s, q, a,
                             e, v, d, gamma)
            n = e - a
            gather_query(order, a, e, z, qrank, zs, rs)
            gather_directions(order, a, n, d, ds, gams)
            for p in range(offs.shape[0]):
                if pows[p] == 2:
                    _tree_hess_sorted(n, k, zs, rs, m0 + offs[p], c0 * wts[p], ds, gams, fs)
            scatter_add(order, a, n, gams, gamma)  # into gamma cleared by query_directions
            add_query_hess_rows(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, s, q, a,
                                e, diag, d, gamma, row)
        acc[b, :] = row


@register_oracle
class TreeOracle(SweepOracle):
    """Lee & Lin's order-statistic-tree oracle (Fenwick tree over label ranks), any number of levels."""

    name = "tree"
    fused_kernels = (tree_fused_fun, tree_fused_hess)

    def _fun_piece(self, z, off, weight, power, gz, diag):
        lv = self.levels
        return tree_fun(self._order, lv.query_ptr, lv.qrank, lv.n_levels, z, self._m + off,
                        weight * self._c, power, gz, diag)

    def _hess_piece(self, d, off, weight, gamma):
        lv = self.levels
        tree_hess(self._order, lv.query_ptr, lv.qrank, lv.n_levels, self._z, self._m + off,
                  weight * self._c, d, gamma)

    def _fused_fun_extra(self):
        return (self._m, self._c)

    _fused_hess_extra = _fused_fun_extra
