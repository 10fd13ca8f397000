"""Direct counting oracle (Lee & Lin 2014, supplement sect. II.1): O(nd + n log n + nk) per f, O(nk) per Hv.

With the documents of a query in ascending score order, an ascending sweep keeps, for every
relevance level r of the query, count+(r) = |{j : y_j = r, z_j < z_i + m}| (and the sum of
those z_j; for Hv the sum of d_j = x_j.v, the supplement's xv+(r)), updated as the bound
z_i + m moves right; then

    l_i^+ = sum_{r > y_i} count+(r)                                     (II.2)

costs O(k) per document.  A descending sweep does the same for l_i^- with
count-(r) = |{j : y_j = r, z_j > z_i - m}| (and the sums of z_j and z_j^2 for the loss
value).  Two passes in all, O(n + k) memory, O(nk) time per pass (eq. II.4): cheaper than
the O(p) pairs, dearer than the O(n log k) order-statistic tree when k is large.

The margin predicate is the one of every oracle: pair (h preferred over i) active when
z_h - m < z_i (``losses.py``).  One loss piece per call, as the counting and tree oracles.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from rankbench.objective.base import register_oracle
from rankbench.objective.score_order import sort_within_queries
from rankbench.objective.sweep_oracle import SweepOracle
from rankbench.objective.sweeps import _lower_terms, _max_levels, _upper_terms


@njit(cache=True)
def direct_fun(order, query_ptr, qrank, n_levels, z, m, c, power, gz, diag, lplus, lminus, trace):
    """Add one loss piece c * max(0, m - t)^power (power 1 or 2) to dL/dz and the Hessian
    diagonal; write l_i^+ and l_i^- (active partners of i as less relevant / preferred) to
    ``lplus`` / ``lminus``; when ``trace`` has n rows, row p holds count+(r) (r = label rank in the
    query) after the document at sorted position p was counted; return the piece's L; O(n k)."""
    kmax = _max_levels(n_levels)
    cnt = np.zeros(kmax)
    sz = np.zeros(kmax)
    sq = np.zeros(kmax)
    keep_trace = trace.shape[0] == z.shape[0]
    value = 0.0
    for q in range(query_ptr.shape[0] - 1):
        a = query_ptr[q]
        b = query_ptr[q + 1]
        k = n_levels[q]
        if k < 2:
            continue
        # ascending: count+(r), sum+(r) of the documents with z_j - m < z_i
        for r in range(k):
            cnt[r] = 0.0
            sz[r] = 0.0
        ptr = a
        for p in range(a, b):
            i = order[p]
            zi = z[i]
            while ptr < b and z[order[ptr]] - m < zi:
                h = order[ptr]
                cnt[qrank[h]] += 1.0
                sz[qrank[h]] += z[h]
                ptr += 1
            n_act = 0.0
            S = 0.0
            for r in range(qrank[i] + 1, k):  # (II.2): the levels above y_i
                n_act += cnt[r]
                S += sz[r]
            lplus[i] = n_act
            if keep_trace:
                for r in range(k):
                    trace[p, r] = cnt[r]
            if n_act > 0.0:
                dg, dh = _lower_terms(power, c, m, zi, n_act, S)
                gz[i] += dg
                diag[i] += dh
        # descending: count-(r), sums of z and z^2 of the documents with z_j > z_i - m
        for r in range(k):
            cnt[r] = 0.0
            sz[r] = 0.0
            sq[r] = 0.0
        ptr = b - 1
        for p in range(b - 1, a - 1, -1):
            i = order[p]
            si = z[i] - m
            while ptr >= a and z[order[ptr]] > si:
                l = order[ptr]
                cnt[qrank[l]] += 1.0
                sz[qrank[l]] += z[l]
                sq[qrank[l]] += z[l] * z[l]
                ptr -= 1
            n_act = 0.0
            S = 0.0
            S2 = 0.0
            for r in range(qrank[i]):  # the levels below y_i
                n_act += cnt[r]
                S += sz[r]
                S2 += sq[r]
            lminus[i] = n_act
            if n_act > 0.0:
                dg, dh, dv = _upper_terms(power, c, m, z[i], n_act, S, S2)
                gz[i] += dg
                diag[i] += dh
                value += dv
    return value


@njit(cache=True)
def direct_hess(order, query_ptr, qrank, n_levels, z, m, c, d, gamma):
    """Add c * (sum of d over the active partners of i) to gamma[i] for one squared-hinge piece,
    keeping xv+(r) / xv-(r) per level (supplement (II.3)); O(n k)."""
    kmax = _max_levels(n_levels)
    xv = np.zeros(kmax)
    for q in range(query_ptr.shape[0] - 1):
        a = query_ptr[q]
        b = query_ptr[q + 1]
        k = n_levels[q]
        if k < 2:
            continue
        for r in range(k):
            xv[r] = 0.0
        ptr = a
        for p in range(a, b):
            i = order[p]
            zi = z[i]
            while ptr < b and z[order[ptr]] - m < zi:
                h = order[ptr]
                xv[qrank[h]] += d[h]
                ptr += 1
            S = 0.0
            for r in range(qrank[i] + 1, k):
                S += xv[r]
            gamma[i] += c * S
        for r in range(k):
            xv[r] = 0.0
        ptr = b - 1
        for p in range(b - 1, a - 1, -1):
            i = order[p]
            si = z[i] - m
            while ptr >= a and z[order[ptr]] > si:
                l = order[ptr]
                xv[qrank[l]] += d[l]
                ptr -= 1
            S = 0.0
            for r in range(qrank[i]):
                S += xv[r]
            gamma[i] += c * S


@register_oracle
class DirectOracle(SweepOracle):
    """Lee & Lin's direct counting method (supplement sect. II.1): per-level counters, two sweeps."""

    name = "direct"

    def _fun_piece(self, z, off, weight, power, gz, diag):
        lv = self.levels
        lp, lm = np.zeros_like(z), np.zeros_like(z)  # l_i^+, l_i^- (direct_counts returns them)
        return direct_fun(self._order, lv.query_ptr, lv.qrank, lv.n_levels, z, self._m + off,
                          weight * self._c, power, gz, diag, lp, lm, _NO_TRACE)

    def _hess_piece(self, d, off, weight, gamma):
        lv = self.levels
        direct_hess(self._order, lv.query_ptr, lv.qrank, lv.n_levels, self._z, self._m + off,
                    weight * self._c, d, gamma)


_NO_TRACE = np.zeros((0, 0))


def direct_counts(z, y, query_ptr=None, margin: float = 1.0, trace: bool = False):
    """(l^+, l^-[, count+ trace]) of the direct counting method at scores ``z`` (supplement
    sect. II.1): l_i^+ = |{j : y_j > y_i, z_j < z_i + margin}|, l_i^- = |{j : y_j < y_i,
    z_j > z_i - margin}|; the trace (n x k, rows in each query's ascending score order) holds
    count+(r) after each document, r the label rank within the query."""
    from rankbench.objective.query_levels import QueryLevels

    z = np.ascontiguousarray(z, dtype=np.float64)
    y = np.asarray(y)
    n = z.shape[0]
    query_ptr = np.array([0, n], dtype=np.int64) if query_ptr is None else np.asarray(query_ptr, np.int64)
    lv = QueryLevels.from_labels(y, query_ptr)
    order = sort_within_queries(z, query_ptr)
    lp, lm = np.zeros(n), np.zeros(n)
    tr = np.zeros((n, max(int(lv.n_levels.max(initial=1)), 1))) if trace else np.zeros((0, 0))
    direct_fun(order, query_ptr, lv.qrank, lv.n_levels, z, float(margin), 1.0, 1,
               np.zeros(n), np.zeros(n), lp, lm, tr)
    return (lp, lm, tr) if trace else (lp, lm)
