"""PairOracle: f(w) = 1/2 ||w||^2 + C * sum_{(i,j) in P} loss(w.x_i - w.x_j), its gradient and Hv.

An oracle works in score space: it turns the scores z = X w into the pairwise loss
L(z), dL/dz and products with the (generalized) Hessian of L in z; the base class
adds the X and X^T products and the regularizer.  ``fun(w)`` must be called before
``grad(w)`` and ``hess_vec(v)`` at the same w (as in LIBLINEAR's function objects):
it computes the scores, the sort and the per-document counts those reuse.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from rankbench.data.ranking_data import check_feature_matrix, check_labels
from rankbench.objective.losses import loss_pieces, rescaling_matrices
from rankbench.objective.query_levels import QueryLevels


def check_problem(X, y, query_ptr) -> tuple[object, np.ndarray, np.ndarray]:
    """Validate (X, y, query_ptr) before any kernel runs; ValueError naming the problem."""
    X = check_feature_matrix(X)
    n = X.shape[0]
    y = check_labels(y, n)
    if query_ptr is None:
        query_ptr = np.array([0, n], dtype=np.int64)
    query_ptr = np.asarray(query_ptr)
    if query_ptr.ndim != 1 or query_ptr.shape[0] < 2 or query_ptr.dtype.kind not in "iu":
        raise ValueError("query_ptr must be a 1-D integer array of query offsets (n_queries + 1 entries)")
    query_ptr = query_ptr.astype(np.int64)
    if query_ptr[0] != 0 or query_ptr[-1] != n:
        raise ValueError(f"query_ptr must start at 0 and end at n_docs={n}, got {query_ptr[0]}..{query_ptr[-1]}")
    if np.any(np.diff(query_ptr) < 0):
        raise ValueError("query_ptr must be non-decreasing")
    return X, y, query_ptr


def check_C(C) -> float:
    """C as a float; ValueError unless finite and > 0."""
    try:
        C = float(C)
    except (TypeError, ValueError):
        raise ValueError(f"C must be a positive number, got {C!r}") from None
    if not np.isfinite(C) or C <= 0:
        raise ValueError(f"C must be finite and > 0, got {C}")
    return C


class PairOracle:
    """Base class of the pair oracles; subclasses implement ``_loss_grad_z`` and ``_hess_z``."""

    name = "base"
    supports_rescaling = True

    def __init__(self, X, y, query_ptr=None, C: float = 1.0, loss: str = "squared_hinge",
                 rescaling: str | None = None, delta="gain_difference",
                 levels: QueryLevels | None = None):
        self.X, self.y, self.query_ptr = check_problem(X, y, query_ptr)
        self.C = check_C(C)
        self.loss = loss
        self.power, self.offsets, self.signs = loss_pieces(loss)
        self.levels = levels if levels is not None else QueryLevels.from_labels(self.y, self.query_ptr)
        if rescaling is not None and not self.supports_rescaling:
            raise ValueError(f"the {self.name} oracle supports no label-pair rescaling; "
                             "use oracle='counting' or 'pairs'")
        self.rescaling = rescaling
        self.margin, self.weight = rescaling_matrices(self.levels.levels, rescaling, delta)
        # X^T as a CSC view of the CSR data (no copy); built once, not at every product
        self._XT = self.X.T
        self._X2 = None  # X squared elementwise, made on the first hess_diag call
        self.n_fun = 0
        self.n_hess = 0
        self._gz: np.ndarray | None = None
        self._setup()

    # subclass hooks -----------------------------------------------------------------
    def _setup(self) -> None:
        """Per-data work done once (e.g. the explicit pair list)."""

    def _loss_grad_z(self, z: np.ndarray) -> tuple[float, np.ndarray]:
        raise NotImplementedError

    def _hess_z(self, d: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    # public interface -----------------------------------------------------------------
    @property
    def n_docs(self) -> int:
        return int(self.y.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    def n_pairs(self) -> int:
        """|P|, the number of preference pairs; O(n)."""
        return self.levels.n_pairs()

    def scores(self, w: np.ndarray) -> np.ndarray:
        """z = X w; O(nnz(X))."""
        return np.asarray(self.X @ w, dtype=np.float64).ravel()

    def loss_at_scores(self, z: np.ndarray) -> float:
        """sum_{(i,j) in P} loss(z_i - z_j), also caching dL/dz and the Hessian state."""
        z = np.ascontiguousarray(z, dtype=np.float64)
        L, gz = self._loss_grad_z(z)
        self._gz = gz
        self.n_fun += 1
        return float(L)

    def fun(self, w: np.ndarray) -> float:
        """f(w) = 1/2 ||w||^2 + C L(Xw); caches what grad and hess_vec at this w reuse."""
        w = np.asarray(w, dtype=np.float64)
        return 0.5 * float(w @ w) + self.C * self.loss_at_scores(self.scores(w))

    def grad(self, w: np.ndarray) -> np.ndarray:
        """Gradient (subgradient for the hinge) at the w of the last ``fun`` call; O(nnz(X))."""
        if self._gz is None:
            raise RuntimeError("call fun(w) before grad(w)")
        return np.asarray(w, dtype=np.float64) + self.C * np.asarray(self._XT @ self._gz).ravel()

    def hess_vec(self, v: np.ndarray) -> np.ndarray:
        """(I + C X^T H_L X) v with the generalized Hessian H_L at the last ``fun`` point."""
        if self.power != 2:
            raise ValueError(f"the {self.loss} loss has no Hessian; use a cutting-plane or stochastic solver")
        if self._gz is None:
            raise RuntimeError("call fun(w) before hess_vec(v)")
        self.n_hess += 1
        d = self.scores(v)
        hz = self._hess_z(d)
        return np.asarray(v, dtype=np.float64) + self.C * np.asarray(self._XT @ hz).ravel()

    def hess_diag(self) -> np.ndarray:
        """Jacobi preconditioner: diag of I + C X^T H_L X with H_L's off-diagonal part replaced by the
        per-query centering it would be for a complete pair graph; exact for one level per pair graph
        K_n, always >= 1; O(nnz(X))."""
        if self._gz is None:
            raise RuntimeError("call fun(w) first")
        Dz = 2.0 * self._doc_curvature()
        X = self.X
        sizes = np.diff(self.query_ptr)
        q_of = np.repeat(np.arange(sizes.shape[0]), sizes)
        if self._X2 is None:
            self._X2 = X.multiply(X).tocsr() if sp.issparse(X) else X * X
        sq = np.asarray(self._X2.T @ Dz).ravel()
        S = sp.csr_matrix((Dz, (q_of, np.arange(self.n_docs))), shape=(sizes.shape[0], self.n_docs))
        M = S @ X  # per-query curvature-weighted feature sums
        M = M.multiply(M).tocsr() if sp.issparse(M) else M * M
        tot = np.bincount(q_of, weights=Dz, minlength=sizes.shape[0])
        inv = np.divide(1.0, tot, out=np.zeros_like(tot), where=tot > 0)
        cross = np.asarray(M.T @ inv).ravel()
        return 1.0 + self.C * np.maximum(sq - cross, 0.0)

    def _doc_curvature(self) -> np.ndarray:
        """Per document, the sum of the weights of its active pairs (diag of H_L / 2 in score space)."""
        return self._diag

    def grad_scores(self) -> np.ndarray:
        """dL/dz at the last ``fun`` point (a copy)."""
        if self._gz is None:
            raise RuntimeError("call fun(w) first")
        return self._gz.copy()

    def state_nbytes(self) -> int:
        """Bytes of the arrays this oracle keeps besides X and y (O(n) for counting/tree, O(p) for pairs)."""
        total = 0
        for obj in (self.__dict__, self.levels.__dict__):
            for key, val in obj.items():
                if isinstance(val, np.ndarray) and key not in ("X", "y", "_XT", "_X2"):
                    total += val.nbytes
        return total

    def _pieces(self):
        """(margin offset, sign) of each loss piece."""
        return zip(self.offsets.tolist(), self.signs.tolist(), strict=True)
