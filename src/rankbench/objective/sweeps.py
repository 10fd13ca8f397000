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


@njit(cache=True)
def _tree_fun_query(order, a, b, k, qrank, z, m, c, power, gz, diag, F):
    """One query's part of ``tree_fun`` (rows a..b-1, k levels); returns its L.  F: a work array
    of at least FW_LANES * (k + 1) entries (cleared here), the interleaved trees."""
    size = k + 1
    F[:FW_LANES * size] = 0.0
    value = 0.0
    # ascending: i in the less relevant role, partners h with s_h < z_i and higher rank;
    # the tree is indexed by reversed rank so "higher rank" is a prefix (no cancellation)
    ptr = a
    for p in range(a, b):
        i = order[p]
        zi = z[i]
        while ptr < b and z[order[ptr]] - m < zi:
            h = order[ptr]
            zh = z[h]
            _fw3_add(F, k - 1 - qrank[h], 1.0, zh, 0.0, size)
            ptr += 1
        cnt, S, _ = _fw3_prefix(F, k - 1 - qrank[i])
        if cnt > 0.0:
            dg, dh = _lower_terms(power, c, m, zi, cnt, S)
            gz[i] += dg
            diag[i] += dh
    # descending: i in the preferred role, partners l with z_l > s_i and lower rank
    F[:FW_LANES * size] = 0.0
    ptr = b - 1
    for p in range(b - 1, a - 1, -1):
        i = order[p]
        si = z[i] - m
        while ptr >= a and z[order[ptr]] > si:
            l = order[ptr]
            zl = z[l]
            _fw3_add(F, qrank[l], 1.0, zl, zl * zl, size)
            ptr -= 1
        cnt, S, S2 = _fw3_prefix(F, qrank[i])
        if cnt > 0.0:
            dg, dh, dv = _upper_terms(power, c, m, z[i], cnt, S, S2)
            gz[i] += dg
            diag[i] += dh
            value += dv
    return value


@njit(cache=True)
def _tree_hess_query(order, a, b, k, qrank, z, m, c, d, gamma, fs):
    """One query's part of ``tree_hess``; fs: a work array of at least k + 1 entries."""
    for t in range(k + 1):
        fs[t] = 0.0
    ptr = a
    for p in range(a, b):
        i = order[p]
        zi = z[i]
        while ptr < b and z[order[ptr]] - m < zi:
            h = order[ptr]
            _fw_add(fs, k - 1 - qrank[h], d[h])
            ptr += 1
        gamma[i] += c * _fw_prefix(fs, k - 1 - qrank[i])
    for t in range(k + 1):
        fs[t] = 0.0
    ptr = b - 1
    for p in range(b - 1, a - 1, -1):
        i = order[p]
        si = z[i] - m
        while ptr >= a and z[order[ptr]] > si:
            l = order[ptr]
            _fw_add(fs, qrank[l], d[l])
            ptr -= 1
        gamma[i] += c * _fw_prefix(fs, qrank[i])


@njit(cache=True)
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


@njit(cache=True)
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
