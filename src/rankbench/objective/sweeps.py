"""The per-query sweeps of the tree and counting oracles (numba), shared by their per-query
parallel kernels (``tree.py``, ``counting.py``) and the fused passes (``fused.py``).

A sweep reads one query's documents in score order (``order`` / ``border`` hold global row
indices) and adds into dL/dz, the curvature and the loss (``*_fun_query``) or into the
Hessian product's gamma (``*_hess_query``); it writes only its own query's documents, so
queries run in parallel.  Tree (Lee & Lin 2014): Fenwick trees over the label ranks of the
query, O(n log k).  Counting (Chapelle & Keerthi sect. 4): one merge per pair of levels, O(nk).
"""

from __future__ import annotations

import numpy as np
from numba import njit

# Every sweep that is not inlined states ``fastmath=False``: the fused passes
# (``fused.FUSED_FASTMATH``) call them too, and a numba function that leaves a flag unset inherits
# its first caller's.  It is compiled once per signature, in memory and in the cache, so the
# strict per-query paths then ran the reassociating, contracting version, or not, by which path
# compiled it first (1-64 ulp in dL/dz on 9,313 of 60,000 documents between two caches).


@njit(cache=True, inline="always")
def _fw_add(tree, i, v):
    i += 1
    while i < tree.shape[0]:
        tree[i] += v
        i += i & (-i)


@njit(cache=True, inline="always")
def _fw_prefix(tree, i):
    """Sum of Fenwick positions 0..i-1."""
    s = 0.0
    while i > 0:
        s += tree[i]
        i -= i & (-i)
    return s


# The loss sweep keeps its three trees (count, sum of z, sum of z^2) interleaved in one array,
# node t at F[4t : 4t + 3] (a fourth lane pads the node to 32 bytes): one index walk updates or
# reads all three with one vector operation per node.
FW_LANES = 4


@njit(cache=True, inline="always")
def _fw3_add(F, i, v0, v1, v2, size):
    """Add (v0, v1, v2) at position i of the interleaved trees of ``size`` nodes (k + 1)."""
    i += 1
    while i < size:
        base = np.uint64(FW_LANES * i)  # unsigned: no negative-index test per access
        F[base] += v0
        F[base + np.uint64(1)] += v1
        F[base + np.uint64(2)] += v2
        F[base + np.uint64(3)] += 0.0
        i += i & (-i)


@njit(cache=True, inline="always")
def _fw3_prefix(F, i):
    """The three trees' sums over positions 0..i-1."""
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    while i > 0:
        base = np.uint64(FW_LANES * i)
        s0 += F[base]
        s1 += F[base + np.uint64(1)]
        s2 += F[base + np.uint64(2)]
        s3 += F[base + np.uint64(3)]
        i -= i & (-i)
    return s0, s1, s2


@njit(cache=True, inline="always")
def _lower_terms(power, c, m, zi, cnt, S):
    """Document i as the less relevant one of its cnt active pairs (partner scores summing to S):
    its (dL/dz_i, curvature) parts of the piece c max(0, m - t)^power."""
    if power == 2:
        return 2.0 * c * (cnt * (m + zi) - S), c * cnt
    return c * cnt, 0.0


@njit(cache=True, inline="always")
def _upper_terms(power, c, m, zi, cnt, S, S2):
    """Document i as the preferred one of its cnt active pairs (partner scores summing to S, their
    squares to S2): its (dL/dz_i, curvature, loss) parts, the loss counted once per pair here."""
    am = m - zi
    if power == 2:
        return -2.0 * c * (cnt * am + S), c * cnt, c * (cnt * am * am + 2.0 * am * S + S2)
    return -c * cnt, 0.0, c * (cnt * am + S)


@njit(cache=True, inline="always")
def _max_levels(n_levels):
    """The largest number of relevance levels of a query (at least 1): the scratch arrays' size."""
    kmax = 1
    for q in range(n_levels.shape[0]):
        kmax = max(kmax, n_levels[q])
    return kmax


@njit(cache=True, inline="always")
def gather_query(order, a, b, z, qrank, zs, rs):
    """The query's scores and label ranks (rows a..b-1) in score order into zs[:n], rs[:n]: the
    tree sweeps read them in order instead of through ``order`` (``_tree_fun_sorted``)."""
    for t in range(b - a):
        i = order[a + t]
        zs[t] = z[i]
        rs[t] = qrank[i]


@njit(cache=True, inline="always")
def sweep_scratch(query_ptr, q0, q1, qrank):
    """Scratch of the tree sweeps for queries q0..q1-1, each array as long as their longest
    query: the score-ordered scores, label ranks (``gather_query``) and two result columns."""
    nmax = 0
    for q in range(q0, q1):
        nmax = max(nmax, query_ptr[q + 1] - query_ptr[q])
    return np.empty(nmax), np.empty(nmax, dtype=qrank.dtype), np.empty(nmax), np.empty(nmax)


@njit(cache=True, inline="always")
def sweep_work(query_ptr, q0, q1, qrank, work):
    """``sweep_scratch`` for queries q0..q1-1, taken from the oracle's work arrays where it holds
    them (``work``: four arrays of n_docs entries, ``TreeOracle._work``; empty: none): their rows
    query_ptr[q0]..query_ptr[q1]-1, which no other chunk touches.  Fresh arrays of a long query
    cost a page fault per 4 KB on every call (1e6 documents: 4 x 8 MB, 20 ms of a 100 ms pass)."""
    wz, wr, wg, wh = work
    if wz.shape[0] == 0:
        return sweep_scratch(query_ptr, q0, q1, qrank)
    lo = query_ptr[q0]
    hi = query_ptr[q1]
    return wz[lo:hi], wr[lo:hi], wg[lo:hi], wh[lo:hi]


@njit(cache=True, inline="always")
def gather_directions(order, a, n, d, ds, gams):
    """The query's d (rows a..a+n-1) in score order into ds[:n], and gams[:n] cleared: the
    input and output of ``_tree_hess_sorted``."""
    for t in range(n):
        ds[t] = d[order[a + t]]
        gams[t] = 0.0


@njit(cache=True, inline="always")
def scatter_add(order, a, n, src, dst):
    """dst[order[a + t]] += src[t]: a score-ordered result column back to the query's rows."""
    for t in range(n):
        dst[order[a + t]] += src[t]


@njit(cache=True, inline="always")
def scatter_add_pair(order, a, n, gs, hs, gz, diag):
    """``scatter_add`` of the loss sweep's two columns (dL/dz and the curvature) in one loop."""
    for t in range(n):
        i = order[a + t]
        gz[i] += gs[t]
        diag[i] += hs[t]


@njit(cache=True, fastmath=False)
def _tree_fun_sorted(n, k, zs, rs, m, c, power, gs, hs, F, pa, pd):
    """One query's part of ``tree_fun`` over its n scores in ascending order ``zs`` and their
    label ranks ``rs`` (k levels): adds dL/dz and the curvature into gs, hs (score order too) and
    returns its L.  F: a work array of at least FW_LANES * (k + 1) entries (cleared here), the
    interleaved trees.  The sweeps read zs and rs in order with unsigned indices (no
    negative-index test in the pointer loops): 16 % faster than through the order array
    (480k x 46, 3 levels, one thread).  pa[p] / pd[p] receive where the two sweeps' pointers
    stood at position p (the active partners of p: positions below pa[p] of higher rank, and
    from pd[p] on of lower rank), which ``_table_hess_sorted`` reuses at this margin."""
    tree_fun_ascending(n, k, zs, rs, m, c, power, gs, hs, F, pa)
    return tree_fun_descending(n, k, zs, rs, m, c, power, gs, hs, F, pd)


@njit(cache=True, fastmath=False)
def tree_fun_ascending(n, k, zs, rs, m, c, power, gs, hs, F, pa):
    """The ascending sweep of ``_tree_fun_sorted``: each document in the less relevant role
    (partners h with s_h < z_i and higher rank; the tree indexed by reversed rank, so "higher
    rank" is a prefix, no cancellation); adds into gs, hs, writes pa.  It neither reads what
    ``tree_fun_descending`` writes nor adds to L, so the two may run at once into separate
    columns (``tree._tree_fun_wide``, through ``tree_fun_ascending_set``)."""
    _ascending(n, k, zs, rs, m, c, power, gs, hs, F, pa, True)


@njit(cache=True, fastmath=False)
def tree_fun_ascending_set(n, k, zs, rs, m, c, power, gs, hs, F, pa):
    """``tree_fun_ascending`` writing its terms instead of adding them: gs[p] = 0.0 + term, the
    value added into a cleared column (0.0 + -0.0 is +0.0), and 0.0 where p has no partner; so
    the columns need no clearing first."""
    _ascending(n, k, zs, rs, m, c, power, gs, hs, F, pa, False)


@njit(cache=True, inline="always")
def _ascending(n, k, zs, rs, m, c, power, gs, hs, F, pa, add):
    # add: a constant of each caller, folded away where it is inlined
    size = k + 1
    F[:FW_LANES * size] = 0.0
    ptr = 0
    for p in range(n):
        zi = zs[p]
        while ptr < n and zs[np.uint64(ptr)] - m < zi:
            u = np.uint64(ptr)
            _fw3_add(F, k - 1 - rs[u], 1.0, zs[u], 0.0, size)
            ptr += 1
        pa[p] = ptr
        cnt, S, _ = _fw3_prefix(F, k - 1 - rs[p])
        if cnt > 0.0:
            dg, dh = _lower_terms(power, c, m, zi, cnt, S)
            _put(gs, hs, p, dg, dh, add)
        elif not add:
            gs[p] = 0.0
            hs[p] = 0.0


_NO_ROWS = np.empty(0, dtype=np.int64)  # _descending's order, gz, diag when it does not scatter
_NO_VALUES = np.empty(0)


@njit(cache=True, fastmath=False)
def tree_fun_descending(n, k, zs, rs, m, c, power, gs, hs, F, pd):
    """The descending sweep of ``_tree_fun_sorted``: each document in the preferred role
    (partners l with z_l > s_i and lower rank); adds into gs, hs, writes pd; returns L."""
    return _descending(n, k, zs, rs, m, c, power, gs, hs, F, pd, True, _NO_ROWS, 0, _NO_VALUES,
                       _NO_VALUES, False)


@njit(cache=True, fastmath=False)
def tree_fun_descending_set(n, k, zs, rs, m, c, power, gs, hs, F, pd):
    """``tree_fun_descending`` writing its terms, as ``tree_fun_ascending_set``."""
    return _descending(n, k, zs, rs, m, c, power, gs, hs, F, pd, False, _NO_ROWS, 0, _NO_VALUES,
                       _NO_VALUES, False)


@njit(cache=True, fastmath=False)
def tree_fun_rows(n, k, zs, rs, m, c, power, gs, hs, F, pa, pd, order, a, gz, diag):
    """``_tree_fun_sorted`` into cleared columns followed by ``scatter_add_pair`` into the rows
    a.. of ``order`` (gz, diag), for one piece, in two passes instead of four and to the bit: the
    ascending sweep writes its columns (``tree_fun_ascending_set``), the descending one adds
    and then adds each finished position into its row (gz[order[a + p]] += gs[p], diag
    likewise).  MQ2008 Fold1 train (queries of 5-121 documents), ``tree.tree_fun`` on one
    thread, min of 400 calls in three alternating runs: 162-165 us against 246-252 us."""
    _ascending(n, k, zs, rs, m, c, power, gs, hs, F, pa, False)
    return _descending(n, k, zs, rs, m, c, power, gs, hs, F, pd, True, order, a, gz, diag, True)


@njit(cache=True, inline="always")
def _descending(n, k, zs, rs, m, c, power, gs, hs, F, pd, add, order, a, gz, diag, scatter):
    size = k + 1
    F[:FW_LANES * size] = 0.0
    value = 0.0
    ptr = n - 1
    for p in range(n - 1, -1, -1):
        zi = zs[p]
        si = zi - m
        while ptr >= 0 and zs[np.uint64(ptr)] > si:
            u = np.uint64(ptr)
            zl = zs[u]
            _fw3_add(F, rs[u], 1.0, zl, zl * zl, size)
            ptr -= 1
        pd[p] = ptr + 1
        cnt, S, S2 = _fw3_prefix(F, rs[p])
        if cnt > 0.0:
            dg, dh, dv = _upper_terms(power, c, m, zi, cnt, S, S2)
            _put(gs, hs, p, dg, dh, add)
            value += dv
        elif not add:
            gs[p] = 0.0
            hs[p] = 0.0
        if scatter:
            i = order[a + p]
            gz[i] += gs[p]
            diag[i] += hs[p]
    return value


@njit(cache=True, inline="always")
def _put(gs, hs, p, dg, dh, add):
    """gs[p] += dg, hs[p] += dh (``add``), or the values so added into cleared columns: 0.0 + dg."""
    if add:
        gs[p] += dg
        hs[p] += dh
    else:
        gs[p] = 0.0 + dg
        hs[p] = 0.0 + dh


@njit(cache=True, fastmath=False)
def _tree_hess_sorted(n, k, zs, rs, m, c, ds, gams, fs):
    """One query's part of ``tree_hess`` over its score-ordered scores, ranks and directions
    (zs, rs, ds): adds c * (sum of d over the active partners) into gams (score order);
    fs: a work array of at least k + 1 entries."""
    for t in range(k + 1):
        fs[t] = 0.0
    ptr = 0
    for p in range(n):
        zi = zs[p]
        while ptr < n and zs[np.uint64(ptr)] - m < zi:
            u = np.uint64(ptr)
            _fw_add(fs, k - 1 - rs[u], ds[u])
            ptr += 1
        gams[p] += c * _fw_prefix(fs, k - 1 - rs[p])
    for t in range(k + 1):
        fs[t] = 0.0
    ptr = n - 1
    for p in range(n - 1, -1, -1):
        si = zs[p] - m
        while ptr >= 0 and zs[np.uint64(ptr)] > si:
            u = np.uint64(ptr)
            _fw_add(fs, rs[u], ds[u])
            ptr -= 1
        gams[p] += c * _fw_prefix(fs, rs[p])


# Hv sweeps through prefix tables (``_table_hess_sorted``) for queries of at most this many levels;
# more levels keep the Fenwick sweep (``_tree_hess_sorted``), the table costing 2k adds a document
TABLE_LEVELS = 8


@njit(cache=True, inline="always")
def gather_ranks(order, a, n, qrank, rs):
    """The query's label ranks (rows a..a+n-1) in score order into rs[:n]."""
    for t in range(n):
        rs[t] = qrank[order[a + t]]


# levels whose prefix-table columns ``_prefix_tables`` keeps in registers (s0..s7)
REGISTER_LEVELS = 8


@njit(cache=True, inline="always")
def _prefix_tables(n, k, rs, ds, A, B):
    """The two prefix tables of ``_table_hess_sorted`` for 2 <= k <= REGISTER_LEVELS levels, each
    column's running sum kept in a register (s0..s7; the upper four only for k > 4).  Written as
    A[t + 1, l] = A[t, l] + ..., each row read back from memory to make the next, the tables
    were a store-to-load chain per document: a whole TRON fit on one thread 5-8 % slower
    (MQ2008, OHSUMED Fold1).  The same additions in the same order, a partner of the wrong rank
    adding 0.0 as before, so the same bits."""
    prefix_table_up(n, k, rs, ds, A)
    prefix_table_down(n, k, rs, ds, B)


@njit(cache=True, inline="always")
def prefix_table_up(n, k, rs, ds, A):
    """Table A of ``_prefix_tables``; independent of B (``prefix_table_down``), so the two may be
    made at once (``tree._tree_hess_wide``)."""
    _table_up(n, k, rs, ds, A, _NO_ROWS, 0, _NO_VALUES, rs, False)


@njit(cache=True, inline="always")
def gather_table_up(n, k, rs, ds, A, order, a, d, qrank):
    """``prefix_table_up`` over the query of rows a..a+n-1 gathered in score order as it goes:
    ds[t] = d[order[a + t]], rs[t] = qrank[order[a + t]] (``gather_directions``' and
    ``gather_ranks``' values), so the query needs no gather pass of its own."""
    _table_up(n, k, rs, ds, A, order, a, d, qrank, True)


@njit(cache=True, inline="always")
def _table_up(n, k, rs, ds, A, order, a, d, qrank, gather):
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    for lv in range(k):
        A[lv] = 0.0
    for t in range(n):
        if gather:
            i = order[a + t]
            x = d[i]
            r = qrank[i]
            ds[t] = x
            rs[t] = r
        else:
            x = ds[t]
            r = rs[t]
        base = (t + 1) * k
        s0 += x if r > 0 else 0.0
        s1 += x if r > 1 else 0.0
        s2 += x if r > 2 else 0.0
        s3 += x if r > 3 else 0.0
        A[base] = s0
        A[base + 1] = s1
        if k > 2:
            A[base + 2] = s2
        if k > 3:
            A[base + 3] = s3
        if k > 4:
            s4 += x if r > 4 else 0.0
            s5 += x if r > 5 else 0.0
            s6 += x if r > 6 else 0.0
            A[base + 4] = s4
            if k > 5:
                A[base + 5] = s5
            if k > 6:
                A[base + 6] = s6
            if k > 7:  # s7 (r > 7) never grows: 8 levels have ranks 0..7
                A[base + 7] = s7


@njit(cache=True, inline="always")
def prefix_table_down(n, k, rs, ds, B):
    """Table B of ``_prefix_tables``."""
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    for lv in range(k):
        B[n * k + lv] = 0.0
    for t in range(n - 1, -1, -1):
        x = ds[t]
        r = rs[t]
        base = t * k
        s1 += x if r < 1 else 0.0  # s0 (r < 0) never grows
        s2 += x if r < 2 else 0.0
        s3 += x if r < 3 else 0.0
        B[base] = s0
        B[base + 1] = s1
        if k > 2:
            B[base + 2] = s2
        if k > 3:
            B[base + 3] = s3
        if k > 4:
            s4 += x if r < 4 else 0.0
            s5 += x if r < 5 else 0.0
            s6 += x if r < 6 else 0.0
            s7 += x if r < 7 else 0.0
            B[base + 4] = s4
            if k > 5:
                B[base + 5] = s5
            if k > 6:
                B[base + 6] = s6
            if k > 7:
                B[base + 7] = s7


@njit(cache=True, fastmath=False)
def _table_hess_sorted(n, k, rs, pa, pd, c, ds, gams, A, B):
    """``_tree_hess_sorted`` without the sweeps' pointer loops: with the pointers the loss sweep
    left (pa, pd: ``_tree_fun_sorted`` at this margin and order), the partner sums are entries of
    two prefix tables, A[t, l] = sum of ds over positions below t of rank above l and B[t, l] =
    over positions from t on of rank below l ((n + 1) x k each, row-major in A, B).  Branch-free:
    the pointer loops' exit branch mispredicts about once a document (the tree sweeps' main
    cost); 2.6x faster than the Fenwick sweep (480k x 46, 3 levels, one thread)."""
    if 2 <= k <= REGISTER_LEVELS:
        _prefix_tables(n, k, rs, ds, A, B)
    else:  # the oracles call it for 2..TABLE_LEVELS levels only; kept correct for any k
        for lv in range(k):
            A[lv] = 0.0
            B[n * k + lv] = 0.0
        for t in range(n):
            base = t * k
            for lv in range(k):
                A[base + k + lv] = A[base + lv] + (ds[t] if rs[t] > lv else 0.0)
        for t in range(n - 1, -1, -1):
            base = t * k
            for lv in range(k):
                B[base + lv] = B[base + k + lv] + (ds[t] if rs[t] < lv else 0.0)
    for p in range(n):
        r = rs[p]
        gams[p] += c * (A[pa[p] * k + r] + B[pd[p] * k + r])


@njit(cache=True, inline="always")
def table_scratch(query_ptr, q0, q1, n_levels):
    """The two prefix tables of ``_table_hess_sorted`` for queries q0..q1-1 (their longest query
    and most levels; empty when none of them takes the table path)."""
    size = 0
    for q in range(q0, q1):
        k = n_levels[q]
        if 2 <= k <= TABLE_LEVELS:
            size = max(size, (query_ptr[q + 1] - query_ptr[q] + 1) * k)
    return np.empty(size), np.empty(size)


@njit(cache=True, inline="always")
def table_work(query_ptr, q0, q1, n_levels, ta, tb):
    """``table_scratch`` from the oracle's two table arrays where it holds them (``ta``, ``tb``:
    (n_docs + n_queries) x kmax entries, kmax the most levels of a table query; empty: none):
    the entries (query_ptr[q0] + q0) * kmax .. (query_ptr[q1] + q1) * kmax, as long as the
    chunk's documents and queries times kmax, at least (n + 1) * k for each of its queries."""
    if ta.shape[0] == 0:
        return table_scratch(query_ptr, q0, q1, n_levels)
    kmax = ta.shape[0] // (query_ptr[query_ptr.shape[0] - 1] + query_ptr.shape[0] - 1)
    lo = (query_ptr[q0] + q0) * kmax
    hi = (query_ptr[q1] + q1) * kmax
    return ta[lo:hi], tb[lo:hi]


@njit(cache=True, fastmath=False)
def _counting_fun_query(q, border, bounds, offsets, bgrank, n_levels, z, M, W, off_m, weight, power,
                        gz, diag):
    """One query's part of ``counting_fun``; returns its L."""
    value = 0.0
    o = offsets[q]
    k = n_levels[q]
    for ra in range(1, k):
        a0 = bounds[o + ra]
        a1 = bounds[o + ra + 1]
        ga = bgrank[o + ra]
        for rb in range(ra):
            b0 = bounds[o + rb]
            b1 = bounds[o + rb + 1]
            gb = bgrank[o + rb]
            m = M[ga, gb] + off_m
            c = weight * W[ga, gb]
            if c == 0.0:
                continue
            # less relevant documents (bucket b) ascending, pointer over bucket a
            pa = a0
            cnt = 0.0
            S = 0.0
            for t in range(b0, b1):
                i = border[t]
                zi = z[i]
                while pa < a1 and z[border[pa]] - m < zi:
                    S += z[border[pa]]
                    cnt += 1.0
                    pa += 1
                if cnt > 0.0:
                    dg, dh = _lower_terms(power, c, m, zi, cnt, S)
                    gz[i] += dg
                    diag[i] += dh
            # preferred documents (bucket a) descending, pointer over bucket b
            pb = b1 - 1
            cnt = 0.0
            S = 0.0
            S2 = 0.0
            for t in range(a1 - 1, a0 - 1, -1):
                i = border[t]
                si = z[i] - m
                while pb >= b0 and z[border[pb]] > si:
                    zl = z[border[pb]]
                    S += zl
                    S2 += zl * zl
                    cnt += 1.0
                    pb -= 1
                if cnt > 0.0:
                    dg, dh, dv = _upper_terms(power, c, m, z[i], cnt, S, S2)
                    gz[i] += dg
                    diag[i] += dh
                    value += dv
    return value


@njit(cache=True, fastmath=False)
def _counting_hess_query(q, border, bounds, offsets, bgrank, n_levels, z, M, W, off_m, weight, d,
                         gamma):
    o = offsets[q]
    k = n_levels[q]
    for ra in range(1, k):
        a0 = bounds[o + ra]
        a1 = bounds[o + ra + 1]
        ga = bgrank[o + ra]
        for rb in range(ra):
            b0 = bounds[o + rb]
            b1 = bounds[o + rb + 1]
            gb = bgrank[o + rb]
            m = M[ga, gb] + off_m
            c = weight * W[ga, gb]
            if c == 0.0:
                continue
            pa = a0
            S = 0.0
            for t in range(b0, b1):
                i = border[t]
                zi = z[i]
                while pa < a1 and z[border[pa]] - m < zi:
                    S += d[border[pa]]
                    pa += 1
                gamma[i] += c * S
            pb = b1 - 1
            S = 0.0
            for t in range(a1 - 1, a0 - 1, -1):
                i = border[t]
                si = z[i] - m
                while pb >= b0 and z[border[pb]] > si:
                    S += d[border[pb]]
                    pb -= 1
                gamma[i] += c * S


@njit(cache=True, inline="always", fastmath=False)
def _count_fun_up(zb, border, b0, b1, a0, a1, m, c, power, gz, diag):
    """The ascending half of one level pair of ``_counting_fun_query`` over the scores gathered in
    border order (zb): the less relevant bucket b0..b1-1 with a pointer over the preferred bucket
    a0..a1-1; adds into gz, diag at the less relevant documents."""
    pa = a0
    cnt = 0.0
    S = 0.0
    for t in range(b0, b1):
        zi = zb[t]
        while pa < a1 and zb[pa] - m < zi:
            S += zb[pa]
            cnt += 1.0
            pa += 1
        if cnt > 0.0:
            dg, dh = _lower_terms(power, c, m, zi, cnt, S)
            i = border[t]
            gz[i] += dg
            diag[i] += dh


@njit(cache=True, inline="always", fastmath=False)
def _count_fun_down(zb, border, a0, a1, b0, b1, m, c, power, gz, diag):
    """The descending half: the preferred bucket a0..a1-1 with a pointer over the less relevant
    one; adds into gz, diag at the preferred documents and returns their part of L."""
    value = 0.0
    pb = b1 - 1
    cnt = 0.0
    S = 0.0
    S2 = 0.0
    for t in range(a1 - 1, a0 - 1, -1):
        zi = zb[t]
        si = zi - m
        while pb >= b0 and zb[pb] > si:
            zl = zb[pb]
            S += zl
            S2 += zl * zl
            cnt += 1.0
            pb -= 1
        if cnt > 0.0:
            dg, dh, dv = _upper_terms(power, c, m, zi, cnt, S, S2)
            i = border[t]
            gz[i] += dg
            diag[i] += dh
            value += dv
    return value


@njit(cache=True, fastmath=False)
def _counting_fun_query_gathered(q, border, bounds, offsets, bgrank, n_levels, zb, M, W, off_m,
                                 weight, power, gz, diag):
    """``_counting_fun_query`` over the scores gathered in border order (zb[t] = z[border[t]]):
    the same sweeps, additions and order (the same bits), the pointer loops reading zb in
    sequence instead of two dependent random loads a step.  Returns the query's L."""
    value = 0.0
    o = offsets[q]
    k = n_levels[q]
    for ra in range(1, k):
        ga = bgrank[o + ra]
        for rb in range(ra):
            gb = bgrank[o + rb]
            c = weight * W[ga, gb]
            if c == 0.0:
                continue
            m = M[ga, gb] + off_m
            _count_fun_up(zb, border, bounds[o + rb], bounds[o + rb + 1], bounds[o + ra],
                          bounds[o + ra + 1], m, c, power, gz, diag)
            value += _count_fun_down(zb, border, bounds[o + ra], bounds[o + ra + 1], bounds[o + rb],
                                     bounds[o + rb + 1], m, c, power, gz, diag)
    return value


@njit(cache=True, fastmath=False)
def counting_fun_bucket(r, q, border, bounds, offsets, bgrank, n_levels, zb, M, W, off_m, weight,
                        power, gz, diag):
    """The part of ``_counting_fun_query_gathered`` that writes the documents of level bucket r:
    its level pairs as the preferred bucket (descending halves, rb < r), then as the less relevant
    one (ascending halves, ra > r), the order in which the query's loop reaches them; the buckets
    write disjoint documents, so they may run at once (``counting._counting_fun_wide``): the same
    gz and diag to the bit.  Returns the bucket's part of L (summed over the buckets, L in
    another order than the query's loop when there are more than 2 levels)."""
    value = 0.0
    o = offsets[q]
    k = n_levels[q]
    g = bgrank[o + r]
    for rb in range(r):
        gb = bgrank[o + rb]
        c = weight * W[g, gb]
        if c != 0.0:
            value += _count_fun_down(zb, border, bounds[o + r], bounds[o + r + 1], bounds[o + rb],
                                     bounds[o + rb + 1], M[g, gb] + off_m, c, power, gz, diag)
    for ra in range(r + 1, k):
        ga = bgrank[o + ra]
        c = weight * W[ga, g]
        if c != 0.0:
            _count_fun_up(zb, border, bounds[o + r], bounds[o + r + 1], bounds[o + ra],
                          bounds[o + ra + 1], M[ga, g] + off_m, c, power, gz, diag)
    return value


@njit(cache=True, inline="always", fastmath=False)
def _count_hess_up(zb, db, border, b0, b1, a0, a1, m, c, gamma):
    """The ascending half of one level pair of ``_counting_hess_query`` over gathered scores and
    directions (zb, db): gamma at the less relevant documents."""
    pa = a0
    S = 0.0
    for t in range(b0, b1):
        zi = zb[t]
        while pa < a1 and zb[pa] - m < zi:
            S += db[pa]
            pa += 1
        gamma[border[t]] += c * S


@njit(cache=True, inline="always", fastmath=False)
def _count_hess_down(zb, db, border, a0, a1, b0, b1, m, c, gamma):
    """The descending half: gamma at the preferred documents."""
    pb = b1 - 1
    S = 0.0
    for t in range(a1 - 1, a0 - 1, -1):
        si = zb[t] - m
        while pb >= b0 and zb[pb] > si:
            S += db[pb]
            pb -= 1
        gamma[border[t]] += c * S


@njit(cache=True, inline="always", fastmath=False)
def _counting_hess_query_gathered(q, border, bounds, offsets, bgrank, n_levels, zb, db, M, W,
                                  off_m, weight, gamma):
    """``_counting_hess_query`` over the scores and directions gathered in border order
    (zb[t] = z[border[t]], db[t] = d[border[t]]): the same sweeps, additions and order (the
    same bits), with the pointer loops reading zb and db in sequence instead of two dependent
    random loads per step.  ``fastmath=False`` stated (see ``sweep_oracle.sgd_step``)."""
    o = offsets[q]
    k = n_levels[q]
    for ra in range(1, k):
        ga = bgrank[o + ra]
        for rb in range(ra):
            gb = bgrank[o + rb]
            c = weight * W[ga, gb]
            if c == 0.0:
                continue
            m = M[ga, gb] + off_m
            _count_hess_up(zb, db, border, bounds[o + rb], bounds[o + rb + 1], bounds[o + ra],
                           bounds[o + ra + 1], m, c, gamma)
            _count_hess_down(zb, db, border, bounds[o + ra], bounds[o + ra + 1], bounds[o + rb],
                             bounds[o + rb + 1], m, c, gamma)


@njit(cache=True, fastmath=False)
def counting_hess_bucket(r, q, border, bounds, offsets, bgrank, n_levels, zb, db, M, W, off_m,
                         weight, gamma):
    """The part of ``_counting_hess_query_gathered`` that writes the documents of level bucket r,
    in the order the query's loop reaches them (``counting_fun_bucket``): the same gamma to the
    bit, whatever the number of levels."""
    o = offsets[q]
    k = n_levels[q]
    g = bgrank[o + r]
    for rb in range(r):
        gb = bgrank[o + rb]
        c = weight * W[g, gb]
        if c != 0.0:
            _count_hess_down(zb, db, border, bounds[o + r], bounds[o + r + 1], bounds[o + rb],
                             bounds[o + rb + 1], M[g, gb] + off_m, c, gamma)
    for ra in range(r + 1, k):
        ga = bgrank[o + ra]
        c = weight * W[ga, g]
        if c != 0.0:
            _count_hess_up(zb, db, border, bounds[o + r], bounds[o + r + 1], bounds[o + ra],
                           bounds[o + ra + 1], M[ga, g] + off_m, c, gamma)
