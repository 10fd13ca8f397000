"""A test-only pair oracle in one file: every pair of a query, O(n_q^2), with a fused pass.

Importing this module registers it (``@register_oracle``), after which it is the solver
``<optimizer>_toy`` of every optimizer (``RankSVM(solver="newton_toy")``), ``warm_up_kernels``
compiles it, and ``make_oracle("toy", ...)`` builds it: no other file is edited.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from rankbench.objective import register_oracle
from rankbench.objective.centring import ref_scratch
from rankbench.objective.fused import (
    FUSED_FASTMATH,
    add_query_hess_rows,
    add_query_rows,
    query_directions,
    query_scores,
)
from rankbench.objective.sweep_oracle import SweepOracle


@njit(cache=True)
def _all_pairs_fun_query(a, e, qrank, z, m, c, power, gz, diag):
    """Rows a..e-1: add the piece c * max(0, m - z_i + z_j)^power of every pair (i preferred over
    j) to gz and diag; return its L."""
    value = 0.0
    for i in range(a, e):
        for j in range(a, e):
            if qrank[i] > qrank[j] and z[j] > z[i] - m:
                r = m - z[i] + z[j]
                if power == 2:
                    value += c * r * r
                    gz[i] -= 2.0 * c * r
                    gz[j] += 2.0 * c * r
                    diag[i] += c
                    diag[j] += c
                else:
                    value += c * r
                    gz[i] -= c
                    gz[j] += c
    return value


@njit(cache=True)
def _all_pairs_hess_query(a, e, qrank, z, m, c, d, gamma):
    """Rows a..e-1: gamma[i] += c * d[j] over the active partners j of i."""
    for i in range(a, e):
        for j in range(a, e):
            if qrank[i] > qrank[j] and z[j] > z[i] - m:
                gamma[i] += c * d[j]
                gamma[j] += c * d[i]


@njit(cache=True, parallel=True)
def all_pairs_fun(query_ptr, qrank, z, m, c, power, gz, diag):
    nq = query_ptr.shape[0] - 1
    vals = np.zeros(nq)
    for q in prange(nq):
        vals[q] = _all_pairs_fun_query(query_ptr[q], query_ptr[q + 1], qrank, z, m, c, power, gz, diag)
    return vals.sum()


@njit(cache=True, parallel=True)
def all_pairs_hess(query_ptr, qrank, z, m, c, d, gamma):
    for q in prange(query_ptr.shape[0] - 1):
        _all_pairs_hess_query(query_ptr[q], query_ptr[q + 1], qrank, z, m, c, d, gamma)


@njit(cache=True, parallel=True, fastmath=FUSED_FASTMATH)
def all_pairs_fused_fun(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, w,
                        query_ptr, qblocks, qrank, n_levels, offs, wts, pows, prev, order, z, gz,
                        diag, vals, acc, m0, c0):
    for b in prange(qblocks.shape[0] - 1):
        row = acc[b]
        row[:] = 0.0
        s = ref_scratch(ref_ptr, acc.shape[1])
        for q in range(qblocks[b], qblocks[b + 1]):
            a = query_ptr[q]
            e = query_ptr[q + 1]
            vals[q] = 0.0
            if e == a:
                continue
            query_scores(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, s, q, a, e,
                         w, prev, order, z, gz, diag)
            for p in range(offs.shape[0]):
                vals[q] += _all_pairs_fun_query(a, e, qrank, z, m0 + offs[p], c0 * wts[p], pows[p],
                                                gz, diag)
            add_query_rows(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, s, q, a,
                               e, gz, row)


@njit(cache=True, parallel=True, fastmath=FUSED_FASTMATH)
def all_pairs_fused_hess(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, v,
                         query_ptr, qblocks, qrank, n_levels, offs, wts, pows, order, z, diag, d,
                         gamma, acc, m0, c0):
    for b in prange(qblocks.shape[0] - 1):
        row = acc[b]
        row[:] = 0.0
        s = ref_scratch(ref_ptr, acc.shape[1])
        for q in range(qblocks[b], qblocks[b + 1]):
            a = query_ptr[q]
            e = query_ptr[q + 1]
            query_directions(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, s, q, a,
                             e, v, d, gamma)
            for p in range(offs.shape[0]):
                if pows[p] == 2:
                    _all_pairs_hess_query(a, e, qrank, z, m0 + offs[p], c0 * wts[p], d, gamma)
            add_query_hess_rows(dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals, s, q, a,
                                e, diag, d, gamma, row)


@register_oracle
class AllPairsToyOracle(SweepOracle):
    """Every pair of every query, O(n_q^2): what a new oracle states (its kernels), nothing else."""

    name = "toy"
    fused_kernels = (all_pairs_fused_fun, all_pairs_fused_hess)

    def _fun_piece(self, z, off, weight, power, gz, diag):
        return all_pairs_fun(self.levels.query_ptr, self.levels.qrank, z, self._m + off,
                             weight * self._c, power, gz, diag)

    def _hess_piece(self, d, off, weight, gamma):
        all_pairs_hess(self.levels.query_ptr, self.levels.qrank, self._z, self._m + off,
                       weight * self._c, d, gamma)

    def _fused_fun_extra(self):
        return (self._m, self._c)

    _fused_hess_extra = _fused_fun_extra
