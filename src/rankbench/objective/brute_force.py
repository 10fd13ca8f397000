"""Brute-force oracle over all pairs, in plain numpy: the O(n^2) test reference.

Independent of the numba kernels on purpose: per query it forms the full matrix of
score differences, so it is only for small problems (tests).
"""

from __future__ import annotations

import numpy as np

from rankbench.objective.base import PairOracle


class BruteForceOracle(PairOracle):
    """Every pair of every query, with dense per-query Hessians in score space."""

    name = "brute"

    def _loss_grad_z(self, z):
        gz = np.zeros_like(z)
        self._blocks = []
        value = 0.0
        M, W, g = self.margin, self.weight, self.levels.grank
        for q in range(self.query_ptr.shape[0] - 1):
            a, b = int(self.query_ptr[q]), int(self.query_ptr[q + 1])
            zq, yq, gq = z[a:b], self.y[a:b], g[a:b]
            pref = yq[:, None] > yq[None, :]  # row preferred over column
            Hq = np.zeros((b - a, b - a))
            for off, sign in self._pieces():
                m = M[gq[:, None], gq[None, :]] + off
                c = sign * W[gq[:, None], gq[None, :]]
                active = pref & (zq[None, :] > zq[:, None] - m)
                r = np.where(active, m - zq[:, None] + zq[None, :], 0.0)
                cw = np.where(active, c, 0.0)
                if self.power == 2:
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

    def _doc_curvature(self):
        return np.concatenate([np.diag(Hq) / 2.0 for Hq in self._blocks]) if self._blocks else np.zeros(0)

    def _hess_z(self, d):
        out = np.zeros_like(d)
        for q, Hq in enumerate(self._blocks):
            a, b = int(self.query_ptr[q]), int(self.query_ptr[q + 1])
            out[a:b] = Hq @ d[a:b]
        return out
