"""The kernel PCA map of Chapelle sect. 6.3 (``KernelMap``), a scikit-learn transformer.

Its own module because it subclasses scikit-learn's classes: ``RankSVM(kernel=...)`` imports it
when it fits, so ``import rankbench.estimators.ranksvm`` does not import scikit-learn.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.metrics.pairwise import pairwise_kernels


class KernelMap(TransformerMixin, BaseEstimator):
    """Kernel PCA map psi(x) = Lambda^{-1/2} U^T k(B, x) over basis points B (Chapelle sect. 6.3).

    With every training point as basis (``n_components=None``) psi(x_i).psi(x_j) = k(x_i, x_j)
    on the training set, so a linear RankSVM on psi solves the kernel RankSVM; with fewer
    components (random basis) it is the Nystroem approximation.  O(m^3 + n m d) to fit.
    """

    def __init__(self, kernel: str = "rbf", n_components: int | None = None, gamma: float | None = None,
                 degree: int = 3, coef0: float = 1.0, eig_tol: float = 1e-10, random_state=None):
        self.kernel = kernel
        self.n_components = n_components
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.eig_tol = eig_tol
        self.random_state = random_state

    def _k(self, A, B):
        params = {}
        if self.kernel in ("rbf", "laplacian", "sigmoid", "poly", "polynomial", "chi2"):
            params["gamma"] = self.gamma
        if self.kernel in ("poly", "polynomial"):
            params.update(degree=self.degree, coef0=self.coef0)
        if self.kernel == "sigmoid":
            params["coef0"] = self.coef0
        return pairwise_kernels(A, B, metric=self.kernel, **params)

    def fit(self, X, y=None):
        """Choose the basis and compute the map A = U Lambda^{-1/2} (eigenvalues below eig_tol dropped)."""
        n = X.shape[0]
        if self.n_components is not None and (not isinstance(self.n_components, int | np.integer)
                                              or self.n_components < 1):
            raise ValueError(f"n_components must be a positive integer or None, got {self.n_components!r}")
        m = n if self.n_components is None else min(int(self.n_components), n)
        rng = np.random.default_rng(self.random_state)
        idx = np.arange(n) if m == n else np.sort(rng.choice(n, size=m, replace=False))
        self.basis_ = X[idx]
        K = self._k(self.basis_, self.basis_)
        lam, U = np.linalg.eigh(K)
        keep = lam > self.eig_tol * max(float(lam.max()), 1e-300)
        self.map_ = U[:, keep] / np.sqrt(lam[keep])
        self.n_features_out_ = int(keep.sum())
        return self

    def transform(self, X):
        """psi(X): one row of kernel PCA coordinates per document; O(n m d)."""
        if not hasattr(self, "map_"):
            raise ValueError("KernelMap is not fitted")
        return self._k(X, self.basis_) @ self.map_
