"""Order-statistic tree oracle (Lee & Lin 2014): O(nd + n log n) per f/gradient, O(nd + nk) per Hv.

For each document i, with s_h = z_h - m the shifted score of a preferred document h:
l_i^+ / alpha_i^+ count / sum the documents h with y_h > y_i and s_h < z_i (pairs
where i is the less relevant one and the margin is violated), l_i^- / alpha_i^- the
documents l with y_l < y_i and z_l > s_i.  One ascending and one descending sweep per
query in score order, with Fenwick trees indexed by the label rank inside the query,
give all of them whatever the number k of relevance levels.  The sort is done once in
``fun`` and reused by every Hessian-vector product of that Newton step, and so are the sweeps'
pointers: an Hv reads its partner sums from per-level prefix tables of d at the positions where
fun's pointers stood (``sweeps._table_hess_sorted``, no pointer loop), for queries of at most
``TABLE_LEVELS`` levels; more levels keep the Fenwick sweep, O(n log k).
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
from rankbench.objective.score_order import wide_query
from rankbench.objective.sweep_oracle import SweepOracle, sgd_step
from rankbench.objective.sweeps import (
    FW_LANES,
    TABLE_LEVELS,
    _fw_add,
    _fw_prefix,
    _max_levels,
    _table_hess_sorted,
    _tree_fun_sorted,
    _tree_hess_sorted,
    gather_directions,
    gather_query,
    gather_ranks,
    gather_table_up,
    prefix_table_down,
    prefix_table_up,
    scatter_add,
    scatter_add_pair,
    sweep_scratch,
    sweep_work,
    table_scratch,
    table_work,
    tree_fun_ascending_set,
    tree_fun_descending_set,
    tree_fun_rows,
)

# queries per parallel chunk of ``tree_fun`` / ``tree_hess`` (each chunk allocates its scratch
# once): at most QCHUNK, and fewer so that there are at least MIN_CHUNKS chunks where the queries
# allow (OHSUMED's 63 queries in one chunk ran on one thread); any chunking gives the same sums
QCHUNK = 64
MIN_CHUNKS = 32
# a problem with a query at least this long keeps the sweeps' scratch in the oracle
# (``TreeOracle._work``): a fresh array of 2**15 floats (256 KB) is above glibc's mmap threshold,
# and the pages of a fresh mapping fault on first touch in every call
WORK_MIN_DOCS = 1 << 15
_NO_DIAG = np.empty(0)  # tree_hess's diag when it only adds into gamma
# and so does a problem of at most this many documents: there the calls are short and the chunks
# small (OHSUMED Fold1: 63 chunks of one query), and making each chunk's seven scratch arrays
# cost tree_hess, on one thread, a fifth to a third of its time (OHSUMED: min 298 -> 195 us;
# MQ2008: 164 -> 139 us) and a whole TRON fit 2-6 % (paired medians of 21 fits, 1 and 2 threads);
# the arrays take under 16 MB there
SMALL_WORK_DOCS = 1 << 17


@njit(cache=True, inline="always")
def _chunk_size(nq):
    return max(1, min(QCHUNK, nq // MIN_CHUNKS))


@njit(cache=True, inline="always")
def _half(h, n):
    """Positions [t0, t1) of half h (0 or 1) of 0..n-1."""
    return (0, n // 2) if h == 0 else (n // 2, n)


@njit(cache=True, parallel=True)
def _tree_fun_wide(order, a, n, k, qrank, z, m, c, power, gz, diag, pa, pd, zs, rs, gs, hs, g2,
                   h2):
    """One query's part of ``tree_fun`` (rows a..a+n-1, k >= 2 levels) on two threads: the
    gather and the scatter by halves, the ascending sweep (into gs, hs) beside the descending
    one (into g2, h2, and L).  Each document gets gz += (0 + asc) + (0 + desc) against the serial
    (0 + asc) + desc: the same value (a sign of zero aside, which gz's +0.0 start absorbs).  The
    sweeps write their columns (``sweeps.tree_fun_ascending_set``) instead of adding into columns
    the gather cleared: one query of 1e6 rows, 2 levels, 2 threads, AMD EPYC, min of 15 calls in
    three runs: 54-57 ms against 64-98 ms with the four columns cleared (the same bits)."""
    for h in prange(2):
        t0, t1 = _half(h, n)
        for t in range(t0, t1):
            i = order[a + t]
            zs[t] = z[i]
            rs[t] = qrank[i]
    vals = np.zeros(2)
    for role in prange(2):
        F = np.empty(FW_LANES * (k + 1))
        if role == 0:
            tree_fun_ascending_set(n, k, zs, rs, m, c, power, gs, hs, F, pa)
        else:
            vals[1] = tree_fun_descending_set(n, k, zs, rs, m, c, power, g2, h2, F, pd)
    for h in prange(2):
        t0, t1 = _half(h, n)
        for t in range(t0, t1):
            i = order[a + t]
            gz[i] += gs[t] + g2[t]
            diag[i] += hs[t] + h2[t]
    return vals[1]


@njit(cache=True, parallel=True)
def tree_fun(order, query_ptr, qrank, n_levels, z, m, c, power, gz, diag, pa, pd, work, work2):
    """Add one loss piece c * max(0, m - t)^power (power 1 or 2) to dL/dz and the Hessian diagonal;
    return its L; O(n log k); pa, pd (n, by position in ``order``) receive the sweeps' pointers
    at margin m (``_tree_fun_sorted``), which ``tree_hess`` reuses.  Queries run in parallel chunks (each writes only its own
    documents), each swept over score-ordered copies of its scores and ranks; the per-query
    values are added in query order, so the sum does not depend on the thread count.  ``work``:
    the oracle's scratch arrays (``sweeps.sweep_work``; empty arrays: each chunk allocates its
    own).  The query of ``wide_query`` (one holding most documents) runs after the others on two
    threads (``_tree_fun_wide``; ``work2``: its two more columns, n_docs entries, or empty
    arrays: made here)."""
    nq = query_ptr.shape[0] - 1
    vals = np.zeros(nq)
    cs = _chunk_size(nq)
    wq = wide_query(query_ptr)
    for ch in prange((nq + cs - 1) // cs):
        q0 = ch * cs
        q1 = min(nq, q0 + cs)
        zs, rs, gs, hs = sweep_work(query_ptr, q0, q1, qrank, work)
        F = np.empty(FW_LANES * (_max_levels(n_levels[q0:q1]) + 1))
        for q in range(q0, q1):
            k = n_levels[q]
            if k < 2 or q == wq:
                continue
            a = query_ptr[q]
            n = query_ptr[q + 1] - a
            gather_query(order, a, a + n, z, qrank, zs, rs)
            vals[q] = tree_fun_rows(n, k, zs, rs, m, c, power, gs, hs, F, pa[a:a + n],
                                    pd[a:a + n], order, a, gz, diag)
    if wq >= 0 and n_levels[wq] >= 2:
        a = query_ptr[wq]
        n = query_ptr[wq + 1] - a
        zs, rs, gs, hs = sweep_work(query_ptr, wq, wq + 1, qrank, work)
        g2, h2 = work2
        if g2.shape[0] == 0:
            g2 = np.empty(n)
            h2 = np.empty(n)
        else:
            g2 = g2[a:a + n]
            h2 = h2[a:a + n]
        vals[wq] = _tree_fun_wide(order, a, n, n_levels[wq], qrank, z, m, c, power, gz, diag,
                                  pa[a:a + n], pd[a:a + n], zs, rs, gs, hs, g2, h2)
    value = 0.0
    for q in range(nq):
        value += vals[q]
    return value


@njit(cache=True, inline="always")
def _gather_hess_inputs(order, a, n, k, qrank, z, zs, rs):
    """What ``_query_hess`` reads of one query in score order, once for all its pieces: the label
    ranks (rs) for the prefix tables, and the scores too (zs) for the Fenwick sweep."""
    if k <= TABLE_LEVELS:
        gather_ranks(order, a, n, qrank, rs)
    else:
        gather_query(order, a, a + n, z, qrank, zs, rs)


@njit(cache=True, inline="always")
def _query_hess(a, n, k, m, c, pa, pd, zs, rs, ds, gams, fs, A, B):
    """One query's gamma (score order, in gams) for one squared piece at margin m, from the inputs
    of ``_gather_hess_inputs``: through the prefix tables and the loss sweep's pointers pa, pd
    for at most TABLE_LEVELS levels, else by the Fenwick sweep."""
    if k <= TABLE_LEVELS:
        _table_hess_sorted(n, k, rs, pa[a:a + n], pd[a:a + n], c, ds, gams, A, B)
    else:
        _tree_hess_sorted(n, k, zs, rs, m, c, ds, gams, fs)


@njit(cache=True, inline="always")
def _table_hess_query(order, a, n, k, qrank, c, d, gamma, pa, pd, rs, ds, A, B, diag, finish):
    """One query's part of ``tree_hess`` by the prefix tables (rows a..a+n-1, 2 <= k <=
    TABLE_LEVELS) in three passes: table A with the gather of d and the ranks
    (``gather_table_up``), table B, and the partner sums read from them straight into the
    query's rows (gamma, or d itself when ``finish``).  The same expressions as
    ``_table_hess_sorted`` into a cleared column and its scatter or finish (g = 0.0 + c * (...),
    what the cleared column held), so the same bits, in three passes instead of six (the
    gathers, the clearing and the scatter or finish had a pass each).  MQ2008 Fold1 train (9630
    documents in 471 queries of 5-121, 3 levels; one thread, AMD EPYC), ``tree_hess`` with
    ``diag``, median of 2000 calls in three alternating runs: 133-142 us against 200-206 us;
    bit for bit the same f, gradient and Hv."""
    gather_table_up(n, k, rs, ds, A, order, a, d, qrank)
    prefix_table_down(n, k, rs, ds, B)
    _table_rows(order, a, 0, n, k, c, d, gamma, pa, pd, rs, ds, A, B, diag, finish)


@njit(cache=True, inline="always")
def _table_rows(order, a, t0, t1, k, c, d, gamma, pa, pd, rs, ds, A, B, diag, finish):
    """Positions t0..t1-1 of a query (rows a..): the partner sums g = 0.0 + c * (A + B) read from
    the prefix tables at the loss sweep's pointers, added into gamma, or (``finish``) written
    over d as 2 (diag d - g); ``_table_hess_query`` and ``_tree_hess_wide``'s halves."""
    for p in range(t0, t1):
        r = rs[p]
        g = 0.0 + c * (A[pa[p] * k + r] + B[pd[p] * k + r])
        i = order[a + p]
        if finish:
            d[i] = (diag[i] * ds[p] - (0.0 + g)) * 2.0
        else:
            gamma[i] += g


@njit(cache=True, parallel=True)
def _tree_hess_wide(order, a, n, k, qrank, c, d, gamma, pa, pd, rs, ds, A, B, diag):
    """One query's part of ``tree_hess`` by the prefix tables (rows a..a+n-1, 2 <= k <=
    TABLE_LEVELS) on two threads: the gather and the partner sums by halves, table A beside
    table B.  The same expressions as the serial path, so the same bits."""
    finish = diag.shape[0] > 0
    for h in prange(2):
        t0, t1 = _half(h, n)
        for t in range(t0, t1):
            i = order[a + t]
            ds[t] = d[i]
            rs[t] = qrank[i]
    for role in prange(2):
        if role == 0:
            prefix_table_up(n, k, rs, ds, A)
        else:
            prefix_table_down(n, k, rs, ds, B)
    for h in prange(2):
        t0, t1 = _half(h, n)
        _table_rows(order, a, t0, t1, k, c, d, gamma, pa, pd, rs, ds, A, B, diag, finish)


@njit(cache=True, parallel=True)
def tree_hess(order, query_ptr, qrank, n_levels, z, m, c, d, gamma, pa, pd, work, ta, tb, diag):
    """Add c * (sum of d over the active partners of i) to gamma[i] for one squared-hinge piece,
    at the order and pointers (pa, pd) of the last ``tree_fun`` at margin m; O(n k) by prefix
    tables (at most TABLE_LEVELS levels), else O(n log k); queries in parallel chunks, swept over
    score-ordered copies; ``work``, ``ta``, ``tb``: the oracle's scratch (``sweeps.sweep_work``,
    ``sweeps.table_work``) or empty arrays.  ``diag`` non-empty (the loss's only squared piece):
    gamma is not touched, and d becomes H_L d = 2 (diag d - gamma) in place, each document's
    value the expression ``SweepOracle._hess_z`` evaluates over zeroed gamma, in its order (the
    same bits), without gamma's clearing, scatter and three passes over n in numpy.  The query of
    ``wide_query``, when the tables serve it, runs after the others on two threads
    (``_tree_hess_wide``)."""
    nq = query_ptr.shape[0] - 1
    cs = _chunk_size(nq)
    finish = diag.shape[0] > 0
    wq = wide_query(query_ptr)
    if wq >= 0 and not 2 <= n_levels[wq] <= TABLE_LEVELS:
        wq = -1
    for ch in prange((nq + cs - 1) // cs):
        q0 = ch * cs
        q1 = min(nq, q0 + cs)
        zs, rs, ds, gams = sweep_work(query_ptr, q0, q1, qrank, work)
        A, B = table_work(query_ptr, q0, q1, n_levels, ta, tb)
        fs = np.empty(_max_levels(n_levels[q0:q1]) + 1)
        for q in range(q0, q1):
            k = n_levels[q]
            a = query_ptr[q]
            n = query_ptr[q + 1] - a
            if q == wq:
                continue
            if k < 2:
                if finish:  # no pair: gamma stays 0
                    for i in range(a, a + n):
                        d[i] = (diag[i] * d[i] - 0.0) * 2.0
                continue
            if k <= TABLE_LEVELS:
                _table_hess_query(order, a, n, k, qrank, c, d, gamma, pa[a:a + n], pd[a:a + n],
                                  rs, ds, A, B, diag, finish)
                continue
            gather_directions(order, a, n, d, ds, gams)
            _gather_hess_inputs(order, a, n, k, qrank, z, zs, rs)
            _query_hess(a, n, k, m, c, pa, pd, zs, rs, ds, gams, fs, A, B)
            if finish:
                for t in range(n):
                    i = order[a + t]
                    d[i] = (diag[i] * ds[t] - (0.0 + gams[t])) * 2.0
            else:
                scatter_add(order, a, n, gams, gamma)
    if wq >= 0:
        a = query_ptr[wq]
        n = query_ptr[wq + 1] - a
        zs, rs, ds, gams = sweep_work(query_ptr, wq, wq + 1, qrank, work)
        A, B = table_work(query_ptr, wq, wq + 1, n_levels, ta, tb)
        _tree_hess_wide(order, a, n, n_levels[wq], qrank, c, d, gamma, pa[a:a + n], pd[a:a + n],
                        rs, ds, A, B, diag)


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


@njit(cache=True, inline="always")
def _tree_query_fun(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, s, w, q, query_ptr,
                    qrank, n_levels, offs, wts, pows, prev, order, z, gz, diag, row, scratch, m0, c0,
                    prow, pa, pd):
    """One query of ``tree_fused_fun``: z_q = X_q w, its sort, the loss pieces swept over
    score-ordered copies (``scratch`` = F, zs, rs, gs, hs) and row += X_q^T gz_q; returns its L.
    (At most 30 arguments: a call of more compiles to CALL_FUNCTION_EX, which numba's inliner
    refuses.)"""
    F, zs, rs, gs, hs = scratch
    a = query_ptr[q]
    e = query_ptr[q + 1]
    if e == a:
        return 0.0
    query_scores(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, s, q, a, e, w, prev,
                 order, z, gz, diag)
    val = 0.0
    k = n_levels[q]
    if k >= 2:
        n = e - a
        gather_query(order, a, e, z, qrank, zs, rs)
        if offs.shape[0] == 1:  # one piece: as ``tree_fun``, no clearing or scatter pass
            val += tree_fun_rows(n, k, zs, rs, m0 + offs[0], c0 * wts[0], pows[0], gs, hs, F,
                                 pa[prow[0], a:e], pd[prow[0], a:e], order, a, gz, diag)
        else:
            gs[:n] = 0.0
            hs[:n] = 0.0
            for p in range(offs.shape[0]):
                val += _tree_fun_sorted(n, k, zs, rs, m0 + offs[p], c0 * wts[p], pows[p], gs, hs,
                                        F, pa[prow[p], a:e], pd[prow[p], a:e])
            scatter_add_pair(order, a, n, gs, hs, gz, diag)  # into gz, diag cleared by query_scores
        add_query_rows(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, s, q, a, e, gz,
                       row)
    return val


@njit(cache=True, parallel=True, fastmath=FUSED_FASTMATH)
def tree_fused_fun(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, w, query_ptr,
                   qblocks, qrank, n_levels, offs, wts, pows, prev, order, z, gz, diag, vals, acc,
                   m0, c0, prow, pa, pd):
    """The fused f+gradient pass (``objective/fused.py``): per query, z = X_q w, its sort (seeded
    by ``prev`` when non-empty), the loss pieces (margin m0 + offs[p], weight c0 * wts[p]) swept
    over score-ordered copies, and acc[block] += X_q^T gz_q.  Fills z, order, gz, diag, vals[q]
    and the sweeps' pointers of piece p in row prow[p] of pa, pd (``_tree_fun_sorted``)."""
    kmax = _max_levels(n_levels)
    for b in prange(qblocks.shape[0] - 1):
        row = np.zeros(acc.shape[1])  # the block's own row, copied to acc[b] at the end (products.max_blocks)
        s = ref_scratch(ref_ptr, acc.shape[1])
        scratch = (np.empty(FW_LANES * (kmax + 1)),
                   *sweep_scratch(query_ptr, qblocks[b], qblocks[b + 1], qrank))
        for q in range(qblocks[b], qblocks[b + 1]):
            vals[q] = _tree_query_fun(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals,
                                      s, w, q, query_ptr, qrank, n_levels, offs, wts, pows, prev,
                                      order, z, gz, diag, row, scratch, m0, c0, prow, pa, pd)
        acc[b, :] = row


@njit(cache=True, fastmath=FUSED_FASTMATH)
def tree_sgd_steps(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, w, w_avg,
                   query_ptr, qrank, n_levels, offs, wts, pows, order, z, gz, diag, queries, picks,
                   t_first, t_last, sgd, m0, c0, prow, pa, pd):
    """Steps t_first..t_last of SGD on queries (``optim/sgd_queries.py``), w and w_avg in place:
    step t takes query queries[picks[t - 1]]'s gradient by the body of ``tree_fused_fun``
    (seeded by ``order``), then ``sgd_step`` with ``sgd`` = (Q, C, eta0, t0, average)."""
    d = w.shape[0]
    row = np.zeros(d)
    s = ref_scratch(ref_ptr, d)
    scratch = (np.empty(FW_LANES * (_max_levels(n_levels) + 1)),
               *sweep_scratch(query_ptr, 0, query_ptr.shape[0] - 1, qrank))
    for t in range(t_first, t_last + 1):
        q = queries[picks[t - 1]]
        row[:] = 0.0
        _tree_query_fun(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, s, w, q,
                        query_ptr, qrank, n_levels, offs, wts, pows, order, order, z, gz, diag, row,
                        scratch, m0, c0, prow, pa, pd)
        sgd_step(w, w_avg, row, t, sgd)


@njit(cache=True, parallel=True, fastmath=FUSED_FASTMATH)
def tree_fused_hess(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, v, query_ptr,
                    qblocks, qrank, n_levels, offs, wts, pows, order, z, diag, d, gamma, acc, m0,
                    c0, prow, pa, pd):
    """The fused Hv pass: per query, d = X_q v, gamma of the squared pieces (``_query_hess``:
    prefix tables at the pointers of the last f pass, or the Fenwick sweep), then acc[block] +=
    X_q^T (2 (diag d - gamma))_q, at the state of the last ``tree_fused_fun``."""
    kmax = _max_levels(n_levels)
    for b in prange(qblocks.shape[0] - 1):
        row = np.zeros(acc.shape[1])  # the block's own row, copied to acc[b] at the end (products.max_blocks)
        s = ref_scratch(ref_ptr, acc.shape[1])
        fs = np.empty(kmax + 1)
        zs, rs, ds, gams = sweep_scratch(query_ptr, qblocks[b], qblocks[b + 1], qrank)
        A, B = table_scratch(query_ptr, qblocks[b], qblocks[b + 1], n_levels)
        for q in range(qblocks[b], qblocks[b + 1]):
            a = query_ptr[q]
            e = query_ptr[q + 1]
            k = n_levels[q]
            if e == a or k < 2:
                continue
            query_directions(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, s, q, a,
                             e, v, d, gamma)
            n = e - a
            if offs.shape[0] == 1 and pows[0] == 2 and k <= TABLE_LEVELS:  # as ``tree_hess``
                _table_hess_query(order, a, n, k, qrank, c0 * wts[0], d, gamma, pa[prow[0], a:e],
                                  pd[prow[0], a:e], rs, ds, A, B, diag, False)
                add_query_hess_rows(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals,
                                    s, q, a, e, diag, d, gamma, row)
                continue
            gather_directions(order, a, n, d, ds, gams)
            _gather_hess_inputs(order, a, n, k, qrank, z, zs, rs)
            for p in range(offs.shape[0]):
                if pows[p] == 2:
                    _query_hess(a, n, k, m0 + offs[p], c0 * wts[p], pa[prow[p]], pd[prow[p]], zs,
                                rs, ds, gams, fs, A, B)
            scatter_add(order, a, n, gams, gamma)  # into gamma cleared by query_directions
            add_query_hess_rows(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, s, q, a,
                                e, diag, d, gamma, row)
        acc[b, :] = row


@register_oracle
class TreeOracle(SweepOracle):
    """Lee & Lin's order-statistic-tree oracle (Fenwick tree over label ranks), any number of levels."""

    name = "tree"
    fused_kernels = (tree_fused_fun, tree_fused_hess)
    sgd_kernel = staticmethod(tree_sgd_steps)

    def _setup(self) -> None:
        super()._setup()
        # the row of each piece in the pointer arrays: the first piece of its margin offset
        # (pieces of one margin share the pointers)
        self._offs = [p[0] for p in self._pieces()]
        self._prow = np.array([self._offs.index(o) for o in self._offs], dtype=np.int64)
        self._ptrs = None
        self._work_arrays = None
        self._wide_arrays = None

    def __copy__(self):
        new = super().__copy__()
        new._ptrs = None  # written in place by fun, like the fused buffers
        new._work_arrays = None
        new._wide_arrays = None
        return new

    def _work(self) -> tuple:
        """(four sweep arrays, two table arrays) of ``tree_fun`` / ``tree_hess``'s scratch, made
        once: n_docs entries each (``sweeps.sweep_work``) and (n_docs + n_queries) x kmax
        (``sweeps.table_work``), kmax the most levels of a query the tables serve; empty arrays
        (each chunk allocates its own, small, scratch) unless a query has WORK_MIN_DOCS
        documents or the problem at most SMALL_WORK_DOCS.  Scratch only: nothing in them
        outlives a call.  One query of 1e6 documents (CSR 1e6 x 47236, 2 levels), with the
        oracle's other kept vectors (``SweepOracle._vec``): ``tree_hess`` 108 -> 42-62 ms,
        ``tree_fun`` 102 -> 57-72 ms."""
        if self._work_arrays is None:
            lv = self.levels
            ptr = lv.query_ptr
            longest = int(np.diff(ptr).max()) if ptr.shape[0] > 1 else 0
            rdt = lv.qrank.dtype
            if longest < WORK_MIN_DOCS and self.n_docs > SMALL_WORK_DOCS:
                e = np.empty(0)
                self._work_arrays = ((e, np.empty(0, dtype=rdt), e, e), e, e)
            else:
                n = self.n_docs
                table = (lv.n_levels >= 2) & (lv.n_levels <= TABLE_LEVELS)
                kmax = int(lv.n_levels[table].max()) if table.any() else 0
                size = (n + ptr.shape[0] - 1) * kmax
                self._work_arrays = ((np.empty(n), np.empty(n, dtype=rdt), np.empty(n),
                                      np.empty(n)), np.empty(size), np.empty(size))
        return self._work_arrays

    def _wide_work(self) -> tuple[np.ndarray, np.ndarray]:
        """The two more columns of ``tree_fun``'s two-thread sweep of the ``wide_query`` (n_docs
        entries each, made once), or two empty arrays when no query is that wide."""
        if self._wide_arrays is None:
            n = self.n_docs if wide_query(self.levels.query_ptr) >= 0 else 0
            self._wide_arrays = (np.empty(n), np.empty(n))
        return self._wide_arrays

    def _pointers(self) -> tuple[np.ndarray, np.ndarray]:
        """(pa, pd): per piece row and document position, where the loss sweeps' pointers stood
        (``sweeps._tree_fun_sorted``); written by every fun, read by the Hv products after it."""
        if self._ptrs is None:
            shape = (len(self._prow), self.n_docs)
            self._ptrs = (np.empty(shape, dtype=np.int32), np.empty(shape, dtype=np.int32))
        return self._ptrs

    def _fun_piece(self, z, off, weight, power, gz, diag):
        lv = self.levels
        pa, pd = self._pointers()
        r = self._offs.index(off)  # the piece's row (``_prow``)
        return tree_fun(self._order, lv.query_ptr, lv.qrank, lv.n_levels, z, self._m + off,
                        weight * self._c, power, gz, diag, pa[r], pd[r], self._work()[0],
                        self._wide_work())

    def _hess_piece(self, d, off, weight, gamma):
        self._tree_hess(d, off, weight, gamma, _NO_DIAG)

    def _tree_hess(self, d, off, weight, gamma, diag):
        """``tree_hess`` of the piece at margin offset ``off`` at the state of the last fun."""
        lv = self.levels
        pa, pd = self._pointers()
        r = self._offs.index(off)
        tree_hess(self._order, lv.query_ptr, lv.qrank, lv.n_levels, self._z, self._m + off,
                  weight * self._c, d, gamma, pa[r], pd[r], *self._work(), diag)

    def _hess_z(self, d):
        """H_L d over d; a loss of one squared piece (the squared hinge) in one ``tree_hess``
        call that finishes the product itself (its ``diag`` argument)."""
        squared = [(off, weight) for off, weight, power in self._pieces() if power == 2]
        if len(squared) != 1 or type(self)._hess_piece is not TreeOracle._hess_piece:
            return super()._hess_z(d)  # several pieces, or a subclass's own piece sweep
        (off, weight), = squared
        self._tree_hess(d, off, weight, _NO_DIAG, self._diag)
        return d

    def _fused_fun_extra(self):
        return (self._m, self._c, self._prow, *self._pointers())

    _fused_hess_extra = _fused_fun_extra
