"""SweepOracle: the oracles that sweep each query's documents in score order (tree, counting,
direct, joachims), one loss piece per sweep.

Their f, dL/dz and Hv differ only in the sweep kernels: ``fun`` sorts the scores within each
query (seeded by the last order; the order by (score, index) is unique, so the seed changes
nothing but the time), then adds every piece of the loss by ``_fun_piece``, and ``hess_vec``
adds the squared pieces' partner sums by ``_hess_piece``.  One margin m and weight c serve every
pair (``_m``, ``_c``; per-document margins by the base class's score shift); counting takes the
label-pair matrices instead.

An oracle with a fused fast path (one read of X per evaluation, ``objective/fused.py``) names
its two numba passes in ``fused_kernels`` and the arguments of its own after the common ones
(``_fused_fun_extra``, ``_fused_hess_extra``); they run when the queries fill at least
``FUSED_MIN_BLOCKS`` blocks.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit

from rankbench.objective.base import PairOracle
from rankbench.objective.products import sum_rows
from rankbench.objective.score_order import sort_within_queries

FUSED_MIN_BLOCKS = 8


@njit(cache=True, fastmath=False)
def sgd_step(w, w_avg, g_loss, t, sgd):
    """Step t of SGD on queries in place, with ``sgd`` = (Q, C, eta0, t0, average) and g_loss the
    drawn query's X_q^T dL_q/dz: w <- w - eta0 / (t + t0) * (w + Q (w + C g_loss - w)), then the
    running mean w_avg <- w_avg + (w - w_avg) / t when averaging; the operations of the numpy
    expressions of ``optim/sgd_queries.py``, in their order.  ``fastmath=False`` stated: a callee
    without it inherits its caller's flags (the SGD kernels' FUSED_FASTMATH), and then differed
    from numpy in the last bit on 21 % of random steps."""
    Q, C, eta0, t0, average = sgd
    eta = eta0 / (t + t0)
    for j in range(w.shape[0]):
        grad_q = w[j] + C * g_loss[j]
        w[j] = w[j] - eta * (w[j] + Q * (grad_q - w[j]))
        if average:
            w_avg[j] += (w[j] - w_avg[j]) / t
_NO_DENSE = np.empty((0, 0))
_NO_INT = np.empty(0, dtype=np.int32)
_NO_INT64 = np.empty(0, dtype=np.int64)
_NO_FLOAT = np.empty(0)


class SweepOracle(PairOracle):
    """Base of the score-order sweep oracles: subclasses state ``_fun_piece`` and ``_hess_piece``
    (and, for a fused path, ``fused_kernels``)."""

    # one margin for every pair: per-document margins by the base class's score shift only
    rescalings = frozenset({("margin", "document")})
    # (fused f+gradient pass, fused Hv pass) of this oracle, or None: no fused path
    fused_kernels: tuple | None = None
    # the SGD-on-queries steps by the body of the fused f pass (``sgd_steps``), or None
    sgd_kernel = None

    def _setup(self) -> None:
        self._m = 1.0
        self._c = 1.0
        if self.levels.levels.shape[0] > 1:
            # one margin and weight (label-pair rescaling is refused unless the class takes it)
            self._m = float(self.margin[1, 0])
            self._c = float(self.weight[1, 0])
        self._order = None
        # the last order is of tied scores (w = 0: the order by index), no seed for the next sort
        self._order_tied = False
        self._z = None
        self._diag = None
        self._fused_args = None
        # z, dL/dz and the curvature of the fused pass, overwritten by each fun; the Hv pass's
        # two n-vectors (fresh ones cost a page fault per 4 KB on every product)
        self._fused_bufs = None
        self._hess_bufs = None
        # the separate path's n-vectors, made once (``_vec``): X w, dL/dz and the curvature of
        # fun (its state, overwritten by the next fun, as the fused buffers); X v (then H_L X v)
        # and gamma of Hv (scratch)
        self._vecs: dict[str, np.ndarray] = {}
        self._query_twin = None  # the copy that runs ``sgd_steps`` (its own buffers)

    def __copy__(self):
        """A shallow copy with its own order and fused buffers (written in place by fun)."""
        new = super().__copy__()
        new._fused_bufs = None
        new._hess_bufs = None
        new._vecs = {}
        new._order = None
        new._query_twin = None
        return new

    # the sweeps: what a subclass states ---------------------------------------------------
    def _after_sort(self) -> None:
        """Per-order work the pieces share (counting: the order grouped by level)."""

    def _fun_piece(self, z, off: float, weight: float, power: int, gz, diag) -> float:
        """Add the piece weight * max(0, margin + off - t)^power to gz and diag along
        ``self._order``; return its L."""
        raise NotImplementedError

    def _hess_piece(self, d, off: float, weight: float, gamma) -> None:
        """Add weight * (sum of d over the active partners of i) to gamma[i] for a squared piece,
        at the scores and order of the last ``fun``."""
        raise NotImplementedError

    def _vec(self, key: str, zero: bool = False) -> np.ndarray:
        """The oracle's n-vector ``key``, made on first use and reused by every later call: a
        fresh array of a large problem costs a page fault per 4 KB on each call (one query of
        1e6 documents: 6 ms per 8 MB vector).  ``zero``: cleared first."""
        v = self._vecs.get(key)
        if v is None:
            v = self._vecs[key] = np.zeros(self.n_docs) if zero else np.empty(self.n_docs)
        elif zero:
            v.fill(0.0)
        return v

    def _loss_at(self, w: np.ndarray) -> float:
        if self._fused and self._score_shift is None:
            return self._fused_fun(w)
        return self.loss_at_scores(self._prod.matvec(w, out=self._vec("z")))

    def _loss_grad_z(self, z):
        seed = None if self._order_tied else self._order
        # seeded, in place (the seed of each query is read before its sort writes it)
        self._order = sort_within_queries(z, self.levels.query_ptr, seed, out=self._order)
        # all scores equal (z[0] == z[-1] first: scores of any w != 0 differ there at once)
        self._order_tied = bool(z.shape[0] and z[0] == z[-1] and np.all(z == z[0]))
        self._z = z
        self._after_sort()
        gz = self._vec("gz", zero=True)
        diag = self._vec("diag", zero=True)
        value = 0.0
        for off, weight, power in self._pieces():
            value += self._fun_piece(z, off, weight, power, gz, diag)
        self._diag = diag
        return value, gz

    def _hess_z(self, d):
        """H_L d, written over d (X v, ``_loss_hess_products``'s own vector)."""
        gamma = self._vec("gamma", zero=True)
        for off, weight, power in self._pieces():
            if power == 2:  # a hinge piece has no curvature
                self._hess_piece(d, off, weight, gamma)
        out = np.multiply(self._diag, d, out=d)
        out -= gamma
        out *= 2.0  # exact: the same bits as 2 * (diag d - gamma)
        return out

    # the fused path ------------------------------------------------------------------------
    @property
    def _fused(self) -> bool:
        """Fuse when the queries fill at least FUSED_MIN_BLOCKS blocks (a choice made by the data,
        not the thread count); one or a few large queries (AUC problems) keep the separate,
        row-parallel products instead."""
        return (self.fused_kernels is not None
                and self._prod.qblocks.shape[0] - 1 >= FUSED_MIN_BLOCKS)

    def _fused_fun_extra(self) -> tuple:
        """The fused f pass's arguments after the common ones (``fused_kernels[0]``)."""
        return ()

    def _fused_hess_extra(self) -> tuple:
        """The fused Hv pass's arguments after the common ones (``fused_kernels[1]``)."""
        return ()

    def _fused_common(self) -> tuple:
        """(row arguments, query arguments) of both fused passes, made once: the rows are
        ``dense, Xd, indptr, indices, data, ref_ptr, ref_cols, ref_vals`` (``objective/fused.py``)."""
        if self._fused_args is None:
            X, lv = self.X, self.levels
            if sp.issparse(X):
                rows = (False, _NO_DENSE, X.indptr, X.indices, X.data)
            else:
                rows = (True, X, _NO_INT, _NO_INT, _NO_FLOAT)
            rows += self._prod.kernel_refs  # the columns centred per query (centring.py)
            pieces = self._pieces()
            offs = np.array([p[0] for p in pieces], dtype=np.float64)
            wts = np.array([p[1] for p in pieces], dtype=np.float64)
            pows = np.array([p[2] for p in pieces], dtype=np.int64)
            self._fused_args = rows, (lv.query_ptr, self._prod.qblocks, lv.qrank, lv.n_levels,
                                      offs, wts, pows)
        return self._fused_args

    def _loss_hess_products(self, v: np.ndarray) -> np.ndarray:
        if self._fused:
            return self._fused_hess_vec(v)
        return self._prod.rmatvec(self._hess_z(self._prod.matvec(v, out=self._vec("d"))))

    def _fused_fun(self, w: np.ndarray) -> float:
        """L(Xw) with dL/dz, the Hessian state and X^T dL/dz in one pass over X."""
        rows, common = self._fused_common()
        n = self.n_docs
        prev = self._order if self._order is not None and not self._order_tied else _NO_INT64
        order = self._order if self._order is not None else np.empty(n, dtype=np.int64)
        if self._fused_bufs is None:  # reused by every later call: no second copy at a trial point
            self._fused_bufs = (np.empty(n), np.empty(n), np.empty(n))
        z, gz, diag = self._fused_bufs
        vals = np.empty(self.query_ptr.shape[0] - 1)
        acc = self._prod.acc[: self._prod.qblocks.shape[0] - 1]
        self.fused_kernels[0](*rows, np.ascontiguousarray(w, dtype=np.float64), *common, prev,
                              order, z, gz, diag, vals, acc, *self._fused_fun_extra())
        xtg = np.empty(self.n_features)
        sum_rows(acc, xtg)
        self._order, self._z, self._diag, self._gz, self._xtg = order, z, diag, gz, xtg
        self._order_tied = not np.any(w)  # z = X 0 = 0: every query's order is by index
        return float(vals.sum())

    def _fused_hess_vec(self, v: np.ndarray) -> np.ndarray:
        """X^T H_L X v in one pass over X, at the state of the last ``fun``."""
        rows, common = self._fused_common()
        n = self.n_docs
        acc = self._prod.acc[: self._prod.qblocks.shape[0] - 1]
        if self._hess_bufs is None:  # d = X v and gamma, reused by every later product
            self._hess_bufs = (np.empty(n), np.empty(n))
        self.fused_kernels[1](*rows, np.ascontiguousarray(v, dtype=np.float64), *common,
                              self._order, self._z, self._diag, *self._hess_bufs, acc,
                              *self._fused_hess_extra())
        out = np.empty(self.n_features)
        sum_rows(acc, out)
        return out

    # SGD on queries (optim/sgd_queries.py) ------------------------------------------------
    @property
    def has_sgd_steps(self) -> bool:
        """Whether ``sgd_steps`` runs here: an SGD kernel (``sgd_kernel``), one margin per pair
        (no score shift)."""
        return self.sgd_kernel is not None and self._score_shift is None

    def sgd_steps(self, w: np.ndarray, w_avg: np.ndarray, queries: np.ndarray, picks: np.ndarray,
                  t_first: int, t_last: int, Q: int, eta0: float, t0: float, average: bool) -> None:
        """Steps t_first..t_last of SGD on queries in one numba call, w and w_avg (float64,
        contiguous) in place: step t draws query ``queries[picks[t - 1]]``, takes the gradient of
        its part, w + C grad L_q, by the body of the oracle's fused f pass over that query's rows
        alone, and moves w <- w - eta0 / (t + t0) * (w + Q (w + C grad L_q - w)) (``sgd_step``).
        The passes run on a copy of this oracle with buffers of its own, so the state of the
        last ``fun`` (and every Hv after it) is kept.  What ``split_by_query``'s oracles give
        step by step, up to rounding (X_q^T g summed row by row here, by BLAS there), without a
        dozen array operations and kernel calls a step."""
        if not self.has_sgd_steps:
            raise NotImplementedError(f"{type(self).__name__}: no SGD kernel here "
                                      "(no fused pass, or per-document margins)")
        twin = self._query_twin
        if twin is None:
            twin = self._query_twin = self.__copy__()
            n = self.n_docs
            twin._order = np.arange(n, dtype=np.int64)  # a seed of every query: its rows by index
            twin._fused_bufs = (np.empty(n), np.empty(n), np.empty(n))
        rows, (query_ptr, _qblocks, *common) = self._fused_common()
        self.sgd_kernel(*rows, w, w_avg, query_ptr, *common, twin._order, *twin._fused_bufs,
                        np.asarray(queries, dtype=np.int64), np.asarray(picks, dtype=np.int64),
                        int(t_first), int(t_last),
                        (float(Q), float(self.C), float(eta0), float(t0), bool(average)),
                        *twin._fused_fun_extra())

    def _warm_up_paths(self, w: np.ndarray, v: np.ndarray) -> None:
        super()._warm_up_paths(w, v)
        if self.fused_kernels is not None:  # the fused passes, used on many-query data
            self._fused_fun(w)
            if self.loss.has_hessian:
                self._fused_hess_vec(v)
        if self.has_sgd_steps:  # SGD on queries' kernel: one step
            queries = np.flatnonzero(self.levels.n_levels >= 2)
            if queries.shape[0]:
                self.sgd_steps(np.array(w, dtype=np.float64), np.zeros(w.shape[0]), queries,
                               np.zeros(1, dtype=np.int64), 1, 1, queries.shape[0], 1.0, 1.0, False)
