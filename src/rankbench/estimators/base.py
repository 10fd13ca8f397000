"""scikit-learn conventions every rankbench estimator shares (``RankerMixin``).

- ``fit(X, y, qid=None, group=None)``: queries as one id per document (``qid``) or as
  LightGBM's consecutive query sizes (``group``), never both; ``qid=group=None`` is one query
  (the AUC setting).
- ``score(X, y, qid=None, group=None)``: mean NDCG@10 over queries, LETOR convention
  (``rankbench.metrics.measures``), the number scikit-learn's model selection maximises.
- ``NotFittedError`` (scikit-learn's class) from ``decision_function`` / ``score`` before fit.
- ``feature_names_in_`` when fitted on a pandas DataFrame with string column names; a
  DataFrame given later must have the same columns.
- metadata routing: ``qid`` and ``group`` are requested by ``fit`` and ``score`` by default,
  so with ``sklearn.set_config(enable_metadata_routing=True)``
  ``GridSearchCV(RankSVM(), {"C": [...]}, cv=GroupKFold(5)).fit(X, y, groups=qid, qid=qid)``
  trains and scores every split on its own queries.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.exceptions import NotFittedError

from rankbench.data.ranking_data import check_feature_matrix


def qid_from_group(group: Any, n: int) -> np.ndarray:
    """Per-document query ids 0, 0, ..., 1, ... from LightGBM-style query sizes summing to ``n``."""
    g = np.asarray(group)
    if g.ndim != 1 or g.size == 0:
        raise ValueError(f"group must be a non-empty 1-d array of query sizes, got shape {g.shape}")
    if not np.issubdtype(g.dtype, np.number) or not np.all(np.isfinite(g)) or np.any(g != np.round(g)):
        raise ValueError("group must hold integer query sizes")
    if np.any(g < 1):
        raise ValueError(f"group sizes must be >= 1, found {int(g.min())}")
    if int(g.sum()) != n:
        raise ValueError(f"group sizes sum to {int(g.sum())} but X has {n} rows")
    return np.repeat(np.arange(g.size, dtype=np.int64), g.astype(np.int64))


def resolve_queries(n: int, qid: Any = None, group: Any = None) -> Any:
    """``qid`` as given, or derived from ``group``; ValueError when both are given."""
    if group is None:
        return qid
    if qid is not None:
        raise ValueError("pass either qid (one id per document) or group (query sizes), not both")
    return qid_from_group(group, n)


def _is_frame(X: Any) -> bool:
    return hasattr(X, "columns") and hasattr(X, "to_numpy")


def _check_shape(X: Any, name: str) -> tuple[int, ...]:
    """X's shape; scikit-learn's wording for what it checks first: complex data, 1-d X, no features."""
    dtype = getattr(X, "dtype", None)
    if dtype is not None and np.issubdtype(dtype, np.complexfloating):
        raise ValueError(f"{name}: Complex data not supported")
    shape = np.shape(X) if not hasattr(X, "shape") else X.shape
    if len(shape) == 1:
        raise ValueError(f"{name}: Expected 2D array, got 1D array instead. Reshape your data "
                         "either using array.reshape(-1, 1) if your data has a single feature "
                         "or array.reshape(1, -1) if it contains a single sample.")
    if len(shape) == 2 and shape[1] == 0:
        raise ValueError(f"{name}: 0 feature(s) (shape={tuple(shape)}) while a minimum of 1 is required.")
    return tuple(shape)


class RankerMixin:
    """scikit-learn conventions for a ranker (module docstring)."""

    __metadata_request__fit = {"qid": True, "group": True}  # noqa: RUF012 (scikit-learn's protocol)
    __metadata_request__score = {"qid": True, "group": True}  # noqa: RUF012
    _fitted_attribute = "coef_"

    def _fit_inputs(self, X: Any, y: Any, qid: Any = None, group: Any = None) -> tuple[Any, Any, Any]:
        """(X as an array, y, qid) for fit; records ``feature_names_in_`` from a DataFrame."""
        name = type(self).__name__
        if y is None:
            raise ValueError(f"{name} requires y to be passed, but the target y is None")
        y = np.asarray(y)
        if y.dtype.kind in "USO":
            try:
                y = y.astype(np.float64)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{name}.fit: Unknown label type: relevance labels must be "
                                 f"integers, got {y.dtype} values such as {y.ravel()[:3]!r}") from exc
        if _is_frame(X):
            names = np.asarray(X.columns, dtype=object)
            if all(isinstance(c, str) for c in names):
                self.feature_names_in_ = names
            elif hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
            X = X.to_numpy(dtype=np.float64)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        shape = _check_shape(X, f"{name}.fit")
        if np.iscomplexobj(y):
            raise ValueError(f"{name}.fit: Complex data not supported (y)")
        if shape[0] == 1:
            raise ValueError(f"{name}.fit: got 1 sample; a ranker needs at least two documents")
        return X, y, resolve_queries(y.shape[0] if y.ndim else 0, qid, group)

    def _check_fitted(self) -> None:
        if not hasattr(self, self._fitted_attribute):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet: "
                                 "call fit(X, y, qid) first")

    def _predict_input(self, X: Any) -> Any:
        """X checked for prediction (``check_feature_matrix`` against ``n_features_in_``):
        NotFittedError before fit; a DataFrame's columns checked against ``feature_names_in_``."""
        self._check_fitted()
        if _is_frame(X):
            names = getattr(self, "feature_names_in_", None)
            if names is not None and list(X.columns) != list(names):
                raise ValueError(f"{type(self).__name__} was fitted with feature names "
                                 f"{list(names)[:5]}...; X has {list(X.columns)[:5]}...")
            X = X.to_numpy(dtype=np.float64)
        _check_shape(X, type(self).__name__)
        return check_feature_matrix(X, self.n_features_in_, owner=type(self).__name__)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # CSR matrices are used as they are (no densifying)
        tags.target_tags.required = True
        return tags

    def score(self, X: Any, y: Any, qid: Any = None, group: Any = None) -> float:
        """Mean NDCG@10 over the queries of (X, y), LETOR convention; the higher the better."""
        from rankbench.metrics import ndcg_at_k

        self._check_fitted()
        qid = resolve_queries(np.shape(y)[0], qid, group)
        return float(ndcg_at_k(y, self.decision_function(X), qid, k=10, convention="letor"))
