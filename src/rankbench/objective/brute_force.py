"""Brute-force oracle over all pairs, in plain numpy: the O(n^2) test reference.

Independent of the numba kernels on purpose: per query it forms the full matrix of
score differences, so it is only for small problems (tests).  It evaluates every loss
family: piecewise losses piece by piece with the active-pair predicate of the fast
oracles, smooth losses through their value and derivatives.
"""

from __future__ import annotations

import numpy as np

from rankbench.objective.base import PairOracle, register_oracle


@register_oracle
class BruteForceOracle(PairOracle):
    """Every pair of every query, with dense per-query Hessians in score space."""

    name = "brute"
    numba_kernels = False  # plain numpy: nothing of its own to compile ahead
    rescalings = frozenset((r, k) for r in ("margin", "slack") for k in ("label", "position", "document"))
    per_pair_costs = True
    loss_families = frozenset({"piecewise", "smooth"})
    max_query_docs = 5000  # dense n_q x n_q blocks: 200 MB each at this size

    def _setup(self) -> None:
        sizes = np.diff(self.query_ptr)
        if sizes.size and int(sizes.max()) > self.max_query_docs:
            raise ValueError(f"brute-force oracle: a query of {int(sizes.max())} documents exceeds "
                             f"max_query_docs={self.max_query_docs} (dense O(n_q^2) blocks; it is the "
                             "test reference): use the pairs, counting or tree oracle")

    def _loss_grad_z(self, z):
        gz = np.zeros_like(z)
        self._blocks = []
        value = 0.0
        smooth = self.loss.family == "smooth"
        for q in range(self.query_ptr.shape[0] - 1):
            a, b = int(self.query_ptr[q]), int(self.query_ptr[q + 1])
            zq, yq = z[a:b], self.y[a:b]
            pref = yq[:, None] > yq[None, :]  # row preferred over column
            idx = np.arange(a, b)
            # per pair (row preferred): margin and weight, of the label pair or the pair itself
            Mq, Wq = self.pair_margin_weight(idx[:, None], idx[None, :])
            Hq = np.zeros((b - a, b - a))
            if smooth:
                value += self._smooth_block(zq, pref, Mq, Wq, gz[a:b], Hq)
                self._blocks.append(Hq)
                continue
            for off, weight, power in self._pieces():
                m = Mq + off
                c = weight * Wq
                active = pref & (zq[None, :] > zq[:, None] - m)
                r = np.where(active, m - zq[:, None] + zq[None, :], 0.0)
                cw = np.where(active, c, 0.0)
                if power == 2:
                    value += float(np.sum(cw * r * r))
                    gz[a:b] += -2.0 * np.sum(cw * r, axis=1) + 2.0 * np.sum(cw * r, axis=0)
                    # d^2/dz^2 of c (m - z_i + z_j)^2 = 2c [[1, -1], [-1, 1]]
                    Cs = cw + cw.T
                    Hq += 2.0 * (np.diag(Cs.sum(axis=1)) - Cs)
                else:
                    value += float(np.sum(cw * r))
                    gz[a:b] += -np.sum(cw, axis=1) + np.sum(cw, axis=0)
            self._blocks.append(Hq)
        return value, gz

    def _smooth_block(self, zq, pref, Mq, Wq, gzq, Hq) -> float:
        """One query of a smooth loss: sum over pairs of W loss(z_i - z_j - (M - 1)); adds dL/dz to
        gzq and the dense Hessian in score space to Hq."""
        T = zq[:, None] - zq[None, :] - (Mq - 1.0)
        vals = np.zeros_like(T)
        d1 = np.zeros_like(T)
        vals[pref] = Wq[pref] * self.loss.value(T[pref])
        d1[pref] = Wq[pref] * self.loss.derivative(T[pref])
        gzq += np.sum(d1, axis=1) - np.sum(d1, axis=0)
        if self.loss.has_hessian:
            half = np.zeros_like(T)
            half[pref] = 0.5 * Wq[pref] * self.loss.second_derivative(T[pref])
            Cs = half + half.T
            Hq += 2.0 * (np.diag(Cs.sum(axis=1)) - Cs)
        return float(np.sum(vals))

    def _doc_curvature(self):
        return np.concatenate([np.diag(Hq) / 2.0 for Hq in self._blocks]) if self._blocks else np.zeros(0)

    def _hess_z(self, d):
        out = np.zeros_like(d)
        for q, Hq in enumerate(self._blocks):
            a, b = int(self.query_ptr[q]), int(self.query_ptr[q + 1])
            out[a:b] = Hq @ d[a:b]
        return out
