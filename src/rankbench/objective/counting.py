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

from rankbench.objective.base import PairOracle
from rankbench.objective.score_order import group_order_by_level, sort_within_queries
from rankbench.objective.sweeps import _counting_fun_query, _counting_hess_query


@njit(cache=True, parallel=True)
def counting_fun(border, bounds, offsets, bgrank, n_levels, z, M, W, off_m, weight, power, gz, diag):
    """Add one loss piece (weight * max(0, M + off_m - t)^power, power 1 or 2) to dL/dz and the
    Hessian diagonal, level pair by level pair; return its L; O(n k).  Queries in parallel, their
    values added in query order (the same sum whatever the thread count)."""
    nq = n_levels.shape[0]
    vals = np.zeros(nq)
    for q in prange(nq):
        vals[q] = _counting_fun_query(q, border, bounds, offsets, bgrank, n_levels, z, M, W, off_m,
                                      weight, power, gz, diag)
    value = 0.0
    for q in range(nq):
        value += vals[q]
    return value


@njit(cache=True, parallel=True)
def counting_hess(border, bounds, offsets, bgrank, n_levels, z, M, W, off_m, weight, d, gamma):
    """Add c * (sum of d over the active partners of i) to gamma[i] for one squared-hinge piece,
    level pair by level pair; O(nk); queries in parallel."""
    for q in prange(n_levels.shape[0]):
        _counting_hess_query(q, border, bounds, offsets, bgrank, n_levels, z, M, W, off_m, weight, d,
                             gamma)


class CountingOracle(PairOracle):
    """PRSVM+'s oracle: sort once per query, then count per pair of relevance levels (O(nk))."""

    name = "counting"
    _fused_kind = 1
    # label-pair costs level pair by level pair; per-document margins (delta_i - delta_j)^2 by
    # the score shift of the base class (Chapelle sect. 6.2's O(n log n) special case)
    rescalings = frozenset({("margin", "label"), ("slack", "label"), ("margin", "document")})

    def _setup(self) -> None:
        self._border = None
        self._order = None
        self._z = None
        self._diag = None

    def _loss_grad_z(self, z):
        lv = self.levels
        order = sort_within_queries(z, lv.query_ptr, self._order)  # seeded by the last order
        border = group_order_by_level(order, lv.query_ptr, lv.qrank, lv.n_levels,
                                      lv.bucket_bounds, lv.bucket_offsets)
        gz = np.zeros_like(z)
        diag = np.zeros_like(z)
        value = 0.0
        for off, weight, power in self._pieces():
            value += counting_fun(border, lv.bucket_bounds, lv.bucket_offsets, lv.bucket_grank,
                                  lv.n_levels, z, self.margin, self.weight, off, weight,
                                  power, gz, diag)
        self._border, self._order, self._z, self._diag = border, order, z, diag
        return value, gz

    def _hess_z(self, d):
        lv = self.levels
        gamma = np.zeros_like(d)
        for off, weight, power in self._pieces():
            if power == 2:  # a hinge piece has no curvature
                counting_hess(self._border, lv.bucket_bounds, lv.bucket_offsets, lv.bucket_grank,
                              lv.n_levels, self._z, self.margin, self.weight, off, weight, d, gamma)
        return 2.0 * (self._diag * d - gamma)
