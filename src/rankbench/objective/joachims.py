"""Joachims' counting oracle (Joachims 2006, Alg. 2; Lee & Lin 2014 supplement, Alg. (I)): O(nk) per pass.

In ascending score order, one sweep per relevance level r of the query.  A window pointer j
runs once over the query; each time the sweep meets a document i of level r, the pointer
takes in every document with z_j < z_i + m (Alg. (I) step 4.2.1a), and

* count+ (the documents above level r taken in so far) is l_i^+ of i (step b);
* a document j above level r entering the window at i is the preferred partner of every
  level-r document s not yet passed (z_s >= z_i, eq. (II.6)): count- of them is added to its
  l_j^- (step a), and count- drops by one as each level-r document is passed (step c).

Besides the counts (the supplement's algorithm), the sweep keeps the sums of z (and z^2, and
of d = Xv for Hv) over the same sets, which gives the loss, gradient and Hessian-vector
product.  Total O(nk) per pass with O(n) memory: k passes over the data where the direct
method (``direct.py``) makes two.

Levels: the supplement prints "For r = 2, ..., k" with the test y_pi(j) > r; with levels
1..k that test leaves level 1 without its l^+ and gives level k none to find, so the sweep
runs over r = 1, ..., k-1 (every level with a level above it), which is what agrees with the
brute force.  The margin predicate is the one of every oracle, z_j - m < z_i (the
supplement's 1 - z_j + z_i > 0 in exact arithmetic).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from rankbench.objective.base import register_oracle
from rankbench.objective.score_order import sort_within_queries
from rankbench.objective.sweep_oracle import SweepOracle
from rankbench.objective.sweeps import _lower_terms, _upper_terms


@njit(cache=True)
def joachims_fun(order, query_ptr, qrank, n_levels, z, m, c, power, gz, diag, lplus, lminus):
    """Add one loss piece c * max(0, m - t)^power (power 1 or 2) to dL/dz and the Hessian
    diagonal; add l_i^+ / l_i^- to ``lplus`` / ``lminus``; return the piece's L; O(n k)."""
    value = 0.0
    for q in range(n_levels.shape[0]):
        a = query_ptr[q]
        b = query_ptr[q + 1]
        k = n_levels[q]
        if k < 2:
            continue
        for r in range(k - 1):
            # step 4.1: count- = |{s : y_s = r}| (with the sums of z_s, z_s^2 over them)
            cm = 0.0
            sm = 0.0
            qm = 0.0
            for p in range(a, b):
                s = order[p]
                if qrank[s] == r:
                    cm += 1.0
                    sm += z[s]
                    qm += z[s] * z[s]
            j = a
            cp = 0.0
            sp_ = 0.0
            for p in range(a, b):
                i = order[p]
                if qrank[i] != r:
                    continue
                zi = z[i]
                # step a: take in every document with z_j < z_i + m
                while j < b and z[order[j]] - m < zi:
                    h = order[j]
                    if qrank[h] > r:
                        cp += 1.0
                        sp_ += z[h]
                        # h is preferred over the cm level-r documents not yet passed
                        lminus[h] += cm
                        dg, dh, dv = _upper_terms(power, c, m, z[h], cm, sm, qm)
                        gz[h] += dg
                        diag[h] += dh
                        value += dv
                    j += 1
                # step b: l_i^+ = count+
                lplus[i] += cp
                if cp > 0.0:
                    dg, dh = _lower_terms(power, c, m, zi, cp, sp_)
                    gz[i] += dg
                    diag[i] += dh
                # step c: i is passed
                cm -= 1.0
                sm -= zi
                qm -= zi * zi
    return value


@njit(cache=True)
def joachims_hess(order, query_ptr, qrank, n_levels, z, m, c, d, gamma):
    """Add c * (sum of d over the active partners of i) to gamma[i] for one squared-hinge piece,
    by the same k sweeps; O(n k)."""
    for q in range(n_levels.shape[0]):
        a = query_ptr[q]
        b = query_ptr[q + 1]
        k = n_levels[q]
        if k < 2:
            continue
        for r in range(k - 1):
            dm = 0.0
            for p in range(a, b):
                if qrank[order[p]] == r:
                    dm += d[order[p]]
            j = a
            dp = 0.0
            for p in range(a, b):
                i = order[p]
                if qrank[i] != r:
                    continue
                zi = z[i]
                while j < b and z[order[j]] - m < zi:
                    h = order[j]
                    if qrank[h] > r:
                        dp += d[h]
                        gamma[h] += c * dm
                    j += 1
                gamma[i] += c * dp
                dm -= d[i]


@register_oracle
class JoachimsOracle(SweepOracle):
    """Joachims' (2006) counting, as Lee & Lin's supplement Alg. (I): one sweep per relevance level."""

    name = "joachims"

    def _fun_piece(self, z, off, weight, power, gz, diag):
        lv = self.levels
        lp, lm = np.zeros_like(z), np.zeros_like(z)  # l_i^+, l_i^- (joachims_counts returns them)
        return joachims_fun(self._order, lv.query_ptr, lv.qrank, lv.n_levels, z, self._m + off,
                            weight * self._c, power, gz, diag, lp, lm)

    def _hess_piece(self, d, off, weight, gamma):
        lv = self.levels
        joachims_hess(self._order, lv.query_ptr, lv.qrank, lv.n_levels, self._z, self._m + off,
                      weight * self._c, d, gamma)


def joachims_counts(z, y, query_ptr=None, margin: float = 1.0):
    """(l^+, l^-) by Alg. (I) at scores ``z``: l_i^+ = |{j : y_j > y_i, z_j < z_i + margin}|,
    l_i^- = |{j : y_j < y_i, z_j > z_i - margin}|."""
    from rankbench.objective.query_levels import QueryLevels

    z = np.ascontiguousarray(z, dtype=np.float64)
    n = z.shape[0]
    query_ptr = np.array([0, n], dtype=np.int64) if query_ptr is None else np.asarray(query_ptr, np.int64)
    lv = QueryLevels.from_labels(np.asarray(y), query_ptr)
    order = sort_within_queries(z, query_ptr)
    lp, lm = np.zeros(n), np.zeros(n)
    joachims_fun(order, query_ptr, lv.qrank, lv.n_levels, z, float(margin), 1.0, 1,
                 np.zeros(n), np.zeros(n), lp, lm)
    return lp, lm
