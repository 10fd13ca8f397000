"""A class-weighted binary linear SVM: the baseline of Sculley 2009's Sect. 5 claim that ROC-area
optimization beats "a binary-class SVM with tuned class-specific regularization parameters".

It classifies relevant (label > 0) against irrelevant documents, pooled (queries ignored):
``min 1/2 ||w||^2 + C sum_i c_{y_i} max(0, 1 - y_i (w.x_i + b))`` with the positive class's
cost ``c_+ = positive_weight`` (SVM-light's ``-j``) and ``c_- = 1``, solved by scikit-learn's
LinearSVC (LIBLINEAR's dual coordinate descent, hinge loss).  ``positive_weight="balanced"``
sets ``c_+`` to the training ratio of negatives to positives.  Its scores rank documents
like any ranker's, so the harness measures its ROC area beside the ranking methods'.
"""

from __future__ import annotations

import time
from numbers import Real
from typing import Any

import numpy as np

from rankbench.estimators.base import EstimatorBase, RankerMixin
from rankbench.estimators.registry import register_solver


class ClassWeightedSVM(RankerMixin, EstimatorBase):
    """Binary linear SVM with a cost per class (see module doc); ``qid`` accepted and ignored.

    After fit: ``coef_``, ``intercept_``, ``positive_weight_`` (the cost used), ``n_iter_``,
    ``fit_time_`` (LinearSVC's fit alone), ``converged_``.
    """

    def __init__(self, C: float = 1.0, positive_weight: float | str = "balanced",
                 tol: float = 1e-4, max_iter: int = 10000):
        self.C = C
        self.positive_weight = positive_weight
        self.tol = tol
        self.max_iter = max_iter

    def fit(self, X: Any, y: Any, qid: Any = None, group: Any = None) -> ClassWeightedSVM:
        """Train on relevant (label > 0) vs irrelevant documents, every query pooled."""
        import warnings

        from sklearn.exceptions import ConvergenceWarning
        from sklearn.svm import LinearSVC

        X, y, _ = self._fit_inputs(X, y, qid, group)
        if isinstance(self.C, bool) or not isinstance(self.C, Real) or not np.isfinite(self.C) or self.C <= 0:
            raise ValueError(f"C must be a positive finite number, got {self.C!r}")
        pos = np.asarray(y) > 0
        n_pos = int(pos.sum())
        if n_pos == 0 or n_pos == pos.shape[0]:
            raise ValueError("ClassWeightedSVM needs relevant (label > 0) and irrelevant documents")
        if self.positive_weight == "balanced":
            w = (pos.shape[0] - n_pos) / n_pos
        elif isinstance(self.positive_weight, Real) and not isinstance(self.positive_weight, bool) \
                and self.positive_weight > 0:
            w = float(self.positive_weight)
        else:
            raise ValueError(f"positive_weight must be 'balanced' or a positive number, got "
                             f"{self.positive_weight!r}")
        model = LinearSVC(C=float(self.C), loss="hinge", dual=True, tol=float(self.tol),
                          max_iter=int(self.max_iter), class_weight={1: w, 0: 1.0})
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            model.fit(X, pos.astype(np.int64))
        self.fit_time_ = time.perf_counter() - t0
        self.converged_ = not any(issubclass(c.category, ConvergenceWarning) for c in caught)
        self.coef_ = np.asarray(model.coef_, dtype=np.float64).ravel()
        self.intercept_ = float(model.intercept_[0])
        self.positive_weight_ = w
        self.n_iter_ = int(np.max(model.n_iter_))
        self.n_features_in_ = self.coef_.shape[0]
        self.extra_ = {"positive_weight": w, "converged": self.converged_}
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """w.x + b per document; O(nnz(X))."""
        X = self._predict_input(X)
        return np.asarray(X @ self.coef_).ravel() + self.intercept_

    def predict(self, X: Any) -> np.ndarray:
        """Same as ``decision_function`` (a ranker's scores)."""
        return self.decision_function(X)


@register_solver("class_weighted_svm")
def _make_class_weighted_svm(params: dict[str, Any]) -> ClassWeightedSVM:
    return ClassWeightedSVM(**params)
