"""Explicit-pairs oracle (PRSVM, Chapelle & Keerthi sect. 3): O(nd + p) per f, gradient and Hv.

The p x n matrix A (row k = e_i - e_j for the k-th preference pair) is stored as its
two column indices per row; A z, A^T u and A^T D A d are O(p) loops over them.  The
pair list costs O(p) memory: that is the method (and its limit, see the benchmark).
Seeing every pair, this oracle also evaluates smooth losses exactly (e.g. the logistic
loss): the differences t = Az, the loss and its derivatives are O(p) vector operations.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from rankbench.objective.base import PairOracle, register_oracle


@njit(cache=True)
def build_pairs(y, query_ptr, n_pairs):
    """Rows of A: (preferred, less relevant) document indices of every preference pair."""
    hi = np.empty(n_pairs, dtype=np.int64)
    lo = np.empty(n_pairs, dtype=np.int64)
    k = 0
    for q in range(query_ptr.shape[0] - 1):
        for i in range(query_ptr[q], query_ptr[q + 1]):
            for j in range(query_ptr[q], query_ptr[q + 1]):
                if y[i] > y[j]:
                    hi[k] = i
                    lo[k] = j
                    k += 1
    return hi, lo


@njit(cache=True)
def pairs_fun(hi, lo, grank, z, M, W, off_m, weight, power, gz, dcoef):
    """Add one loss piece (weight * max(0, M + off_m - t)^power) over the explicit pairs to dL/dz
    and the pair curvature D; return its L; O(p)."""
    value = 0.0
    for k in range(hi.shape[0]):
        i = hi[k]
        j = lo[k]
        m = M[grank[i], grank[j]] + off_m
        if z[j] > z[i] - m:
            c = weight * W[grank[i], grank[j]]
            r = m - z[i] + z[j]
            if power == 2:
                value += c * r * r
                gz[i] -= 2.0 * c * r
                gz[j] += 2.0 * c * r
                dcoef[k] += c
            else:
                value += c * r
                gz[i] -= c
                gz[j] += c
    return value


@njit(cache=True)
def pairs_fun_pp(hi, lo, pm, pw, z, off_m, weight, power, gz, dcoef):
    """As ``pairs_fun`` with a margin ``pm[k]`` and weight ``pw[k]`` of each pair (position or
    document costs, Chapelle sect. 6.2); O(p)."""
    value = 0.0
    for k in range(hi.shape[0]):
        i = hi[k]
        j = lo[k]
        m = pm[k] + off_m
        if z[j] > z[i] - m:
            c = weight * pw[k]
            r = m - z[i] + z[j]
            if power == 2:
                value += c * r * r
                gz[i] -= 2.0 * c * r
                gz[j] += 2.0 * c * r
                dcoef[k] += c
            else:
                value += c * r
                gz[i] -= c
                gz[j] += c
    return value


@njit(cache=True)
def pairs_hess(hi, lo, dcoef, d):
    """A^T D A d; O(p)."""
    out = np.zeros_like(d)
    for k in range(hi.shape[0]):
        c = dcoef[k]
        if c != 0.0:
            t = c * (d[hi[k]] - d[lo[k]])
            out[hi[k]] += t
            out[lo[k]] -= t
    return out


@register_oracle
class ExplicitPairsOracle(PairOracle):
    """PRSVM's oracle over the explicit sparse pair matrix A (O(p) memory and time)."""

    name = "pairs"
    max_pairs = 200_000_000
    rescalings = frozenset((r, k) for r in ("margin", "slack") for k in ("label", "position", "document"))
    per_pair_costs = True
    loss_families = frozenset({"piecewise", "smooth"})

    def _setup(self) -> None:
        p = self.levels.n_pairs()
        if p > self.max_pairs:
            raise ValueError(f"explicit pairs oracle: {p} preference pairs exceed max_pairs="
                             f"{self.max_pairs} (memory O(p)); use oracle='tree' or 'counting'")
        self.hi, self.lo = build_pairs(self.y, self.query_ptr, p)
        self._dcoef = None
        self._pm = self._pw = None
        if self.delta_kind in ("position", "document"):
            # a margin and a weight per pair (O(p) more memory: the pair-level costs need them)
            self._pm, self._pw = self.pair_margin_weight(self.hi, self.lo)
        if self.loss.family == "smooth":
            # per pair: the margin shift M - 1 and the slack weight W of the pair
            pm, pw = self.pair_margin_weight(self.hi, self.lo) if self._pm is None else (self._pm, self._pw)
            self._shift = pm - 1.0
            self._pair_w = pw

    def _loss_grad_z(self, z):
        if self.loss.family == "smooth":
            return self._smooth_loss_grad_z(z)
        gz = np.zeros_like(z)
        dcoef = np.zeros(self.hi.shape[0])
        value = 0.0
        for off, weight, power in self._pieces():
            if self._pm is not None:
                value += pairs_fun_pp(self.hi, self.lo, self._pm, self._pw, z, off, weight, power,
                                      gz, dcoef)
            else:
                value += pairs_fun(self.hi, self.lo, self.levels.grank, z, self.margin, self.weight,
                                   off, weight, power, gz, dcoef)
        self._dcoef = dcoef
        return value, gz

    def _smooth_loss_grad_z(self, z):
        """sum_k W_k loss(t_k), t = Az - shift: d/dz = A^T (W loss'(t)), curvature D = W loss''(t) / 2."""
        t = z[self.hi] - z[self.lo] - self._shift
        w = self._pair_w
        n = z.shape[0]
        c = w * self.loss.derivative(t)
        gz = np.bincount(self.hi, weights=c, minlength=n) - np.bincount(self.lo, weights=c, minlength=n)
        self._dcoef = 0.5 * w * self.loss.second_derivative(t) if self.loss.has_hessian else None
        return float(w @ self.loss.value(t)), gz

    def _doc_curvature(self):
        n = self.n_docs
        return (np.bincount(self.hi, weights=self._dcoef, minlength=n)
                + np.bincount(self.lo, weights=self._dcoef, minlength=n))

    def _hess_z(self, d):
        return 2.0 * pairs_hess(self.hi, self.lo, self._dcoef, d)
