"""The AUC-optimizing linear SVM baseline of Welleck (2016), sect. 5: SVM-perf's ROCArea, one per class.

SVM-perf with the ROCArea loss (Joachims 2005) solves, on ALL training documents pooled
(no queries), ``min 1/2 ||w||^2 + C * Delta`` where the loss is the *percentage* of
swapped (positive, negative) pairs; its 1-slack problem is the pairwise hinge RankSVM
on one "query"::

    1/2 ||w||^2 + (100 C / (P N)) * sum_{i pos, j neg} max(0, 1 - w.(x_i - x_j))

so here each binary problem is ``RankSVM(C = 100 C / (P N), qid=None)`` on labels
``y == c``, with the cutting-plane solver and the hinge loss by default (SVM-perf's own
method); ``solver="prsvm_plus", loss="squared_hinge"`` gives the L2-loss variant.

Multi-class (Welleck sect. 5): "a binary classifier was trained for each individual
relevance class" (class c vs all other labels, c >= 1 present in training), and the
document score combines them; the paper's formula was lost in extraction (it involves the
number of classes K and the per-class classifiers f_c).  We use ``combine="level"``:
``score(x) = sum_c c * f_c(x)`` (an expected-relevance style score: higher classes count
more); ``"prevalence"`` weights by the training share of class c among relevant documents,
``"uniform"`` sums.  With binary labels (one class) all three are f_1.  ``binary=True``
trains the single relevant (label > 0) vs irrelevant classifier on graded labels (the
binary task on a graded data set, e.g. OHSUMED).  C is chosen on validation by the caller
(one C for all classes, as the paper's single search).
"""

from __future__ import annotations

import time
from numbers import Real
from typing import Any

import numpy as np

from rankbench.data.ranking_data import RankingData
from rankbench.estimators.base import EstimatorBase, RankerMixin
from rankbench.estimators.registry import register_solver

COMBINE = ("level", "prevalence", "uniform")


class AUCSVM(RankerMixin, EstimatorBase):
    """One linear ROCArea SVM per relevance class, scores combined (see module doc).

    ``C`` is on SVM-perf's scale (loss in percent of swapped pairs); ``qid`` is accepted
    and ignored in training (SVM-perf pools all documents), so the same harness call works.
    After fit: ``classes_``, ``class_weights_``, ``estimators_`` (one RankSVM per class),
    ``coef_`` (the combined linear model), ``fit_time_``, ``compile_time_``, ``n_iter_``
    (summed over classes), ``history_`` (one row per class).
    """

    _fitted_attribute = "estimators_"

    def __init__(self, C: float = 1.0, combine: str = "level", solver: str = "cutting_plane",
                 loss: str = "hinge", tol: float | None = None, max_iter: int | None = None,
                 binary: bool = False):
        self.C = C
        self.binary = binary
        self.combine = combine
        self.solver = solver
        self.loss = loss
        self.tol = tol
        self.max_iter = max_iter

    def check_params(self) -> None:
        """ValueError for a parameter no fit could use (before any data is read)."""
        if isinstance(self.C, bool) or not isinstance(self.C, Real) or not np.isfinite(self.C) or self.C <= 0:
            raise ValueError(f"C must be a positive finite number, got {self.C!r}")
        if self.combine not in COMBINE:
            raise ValueError(f"combine must be one of {COMBINE}, got {self.combine!r}")
        if not isinstance(self.binary, bool | np.bool_):
            raise ValueError(f"binary must be True or False, got {self.binary!r}")

    def fit(self, X: Any, y: Any, qid: Any = None, group: Any = None) -> AUCSVM:
        """Train one pooled ROCArea SVM per class c >= 1 present in ``y`` (class c vs rest);
        ``qid`` / ``group`` are accepted and ignored (SVM-perf pools every document)."""
        X, y, qid = self._fit_inputs(X, y, qid, group)
        from rankbench.estimators.ranksvm import RankSVM

        self.check_params()
        data = RankingData.from_arrays(X, y, None)  # pooled: SVM-perf ignores queries
        if np.any(data.y < 0):
            raise ValueError(f"labels must be >= 0, found {int(data.y.min())}")
        if self.binary:
            data = RankingData.from_arrays(data.X, (data.y > 0).astype(np.int64), None)
        classes = np.unique(data.y[data.y > 0])
        if classes.size == 0:
            raise ValueError("AUCSVM needs at least one document with a label > 0")
        n = data.n_docs
        counts = np.array([np.sum(data.y == c) for c in classes], dtype=np.float64)
        if np.any(counts == n):
            raise ValueError("every document has the same label: no (positive, negative) pairs")
        if self.combine == "level":
            weights = classes.astype(np.float64)
        elif self.combine == "prevalence":
            weights = counts / counts.sum()
        else:
            weights = np.ones(classes.size)
        self.classes_ = classes
        self.class_weights_ = weights
        self.estimators_, self.history_ = [], []
        self.compile_time_ = 0.0
        coef = np.zeros(data.n_features)
        t0 = time.perf_counter()
        for c, w, p in zip(classes, weights, counts, strict=True):
            c_pair = 100.0 * float(self.C) / (p * (n - p))
            est = RankSVM(C=c_pair, solver=self.solver, loss=self.loss, tol=self.tol,
                          max_iter=self.max_iter)
            est.fit(data.X, (data.y == c).astype(np.int64), None)
            self.compile_time_ += est.compile_time_
            self.estimators_.append(est)
            coef += w * est.coef_
            self.history_.append({"class": int(c), "weight": float(w), "C_pair": c_pair,
                                  "n_iter": int(est.n_iter_), "objective": float(est.objective_),
                                  "fit_s": float(est.fit_time_)})
        self.fit_time_ = time.perf_counter() - t0 - self.compile_time_
        self.coef_ = coef
        self.n_iter_ = int(sum(r["n_iter"] for r in self.history_))
        self.n_features_in_ = data.n_features
        return self

    def class_scores(self, X: Any) -> np.ndarray:
        """Per-class scores f_c(x), shape (n, n_classes); O(nnz(X) * classes)."""
        X = self._predict_input(X)
        return np.column_stack([e.decision_function(X) for e in self.estimators_])

    def decision_function(self, X: Any) -> np.ndarray:
        """Combined score sum_c weight_c f_c(x); O(nnz(X) * classes)."""
        return self.class_scores(X) @ self.class_weights_

    def predict(self, X: Any) -> np.ndarray:
        """Same as ``decision_function``."""
        return self.decision_function(X)


@register_solver("auc_svm")
def _make_auc_svm(params: dict[str, Any]) -> AUCSVM:
    return AUCSVM(**params)
