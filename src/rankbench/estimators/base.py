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

``EstimatorBase`` implements scikit-learn's estimator protocol (``get_params`` /
``set_params``, ``clone``, tags, metadata routing, text and HTML repr) without importing
scikit-learn when the estimator module is imported: ``import sklearn`` alone costs more than
a whole RankSVM fit on OHSUMED.  ``sklearn.base.clone`` needs only ``get_params``; the parts
that need scikit-learn's own classes (tags, metadata routing, HTML repr, ``NotFittedError``
and ``ConvergenceWarning``) import it when they are used, and every scikit-learn tool that
uses them has imported it already.
The one difference from inheriting ``sklearn.base.BaseEstimator``:
``isinstance(est, sklearn.base.BaseEstimator)`` is False (``check_estimator`` says so in a
UserWarning and runs every check).
"""

from __future__ import annotations

import inspect
import io
import pprint
import re
import sys
from typing import Any

import numpy as np

from rankbench.data.ranking_data import check_feature_matrix

# scikit-learn's SIMPLE_METHODS (sklearn.utils._metadata_requests): the methods that get a
# ``set_<method>_request`` when their signature or ``__metadata_request__<method>`` has metadata
_SIMPLE_METHODS = ("fit", "partial_fit", "predict", "predict_proba", "predict_log_proba",
                   "decision_function", "score", "split", "transform", "inverse_transform")
_NOT_METADATA = frozenset({"X", "y", "Y", "Xt", "yt"})
_UNUSED = "$UNUSED$"  # sklearn.utils.metadata_routing.UNUSED


def not_fitted_error(message: str) -> Exception:
    """scikit-learn's ``NotFittedError`` (imported when raised)."""
    from sklearn.exceptions import NotFittedError

    return NotFittedError(message)


def convergence_warning() -> type[Warning]:
    """scikit-learn's ``ConvergenceWarning`` class (imported when a fit warns)."""
    from sklearn.exceptions import ConvergenceWarning

    return ConvergenceWarning


def _metadata_params(cls: type, method: str) -> list[str]:
    """Metadata ``cls.<method>`` can take, as scikit-learn's ``_MetadataRequester`` finds them:
    the signature's parameters after the first, except X/y and *args/**kwargs, updated by every
    ``__metadata_request__<method>`` attribute along the MRO (``UNUSED`` removes one)."""
    func = getattr(cls, method, None)
    if not inspect.isfunction(func):
        return []
    params = {name: None for name, p in list(inspect.signature(func).parameters.items())[1:]
              if name not in _NOT_METADATA and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    attr = f"__metadata_request__{method}"
    for base in reversed(inspect.getmro(cls)):
        for name, value in vars(base).items():
            if attr in name:
                params.update(value)
    return sorted(k for k, v in params.items() if v != _UNUSED)


class _RequestMethod:
    """``est.set_<method>_request(**requests)``: scikit-learn's ``RequestMethod`` descriptor,
    built when first looked up (so the class can be defined without importing scikit-learn)."""

    def __init__(self, method: str):
        self.method = method

    def __get__(self, instance: Any, owner: type) -> Any:
        from sklearn.utils._metadata_requests import RequestMethod

        keys = sorted(owner._get_class_level_metadata_request_values(self.method))
        return RequestMethod(self.method, keys).__get__(instance, owner)


def _requester() -> type:
    from sklearn.utils._metadata_requests import _MetadataRequester

    return _MetadataRequester


def _changed_params(est: Any) -> dict[str, Any]:
    """Parameters that differ from their ``__init__`` default (scikit-learn's rule: by repr,
    NaN equals NaN)."""
    defaults = {name: p.default for name, p in inspect.signature(type(est).__init__).parameters.items()}

    def is_nan(v: Any) -> bool:
        return isinstance(v, float) and v != v

    def changed(k: str, v: Any) -> bool:
        if defaults.get(k, inspect.Parameter.empty) is inspect.Parameter.empty:
            return True
        return repr(v) != repr(defaults[k]) and not (is_nan(v) and is_nan(defaults[k]))

    return {k: v for k, v in est.get_params(deep=False).items() if changed(k, v)}


def _estimator_repr(est: Any, n_char_max: int = 700, width: int = 80) -> str:
    """``Name(param=value, ...)`` as scikit-learn prints it: only the changed parameters unless
    ``print_changed_only=False`` is configured, lines wrapped at 80 columns under the first
    parameter, and the middle cut to ``...`` beyond ``n_char_max`` non-blank characters."""
    sk = sys.modules.get("sklearn")  # the option can only differ once scikit-learn is imported
    changed_only = sk is None or sk.get_config().get("print_changed_only", True)
    params = _changed_params(est) if changed_only else est.get_params(deep=False)
    name = type(est).__name__
    indent = " " * (len(name) + 1)
    items = [f"{k}={v!r}" for k, v in params.items()]
    lines, line = [], name + "("
    for i, (item, (k, v)) in enumerate(zip(items, params.items(), strict=True)):
        piece = item + ("," if i < len(items) - 1 else ")")
        if not line.endswith("(") and len(line) + 1 + len(piece) > width:
            lines.append(line)
            line = indent
        if len(line) + len(piece) > width and "\n" not in piece:
            # a long value (dataclass, list, string) is pretty-printed under its own first
            # column, as scikit-learn's printer (a pprint.PrettyPrinter) does
            col = len(line) + len(k) + 1
            out = io.StringIO()
            pprint.PrettyPrinter(width=width - col, compact=True)._format(v, out, 0, 1, {}, 0)
            piece = f"{k}=" + out.getvalue().replace("\n", "\n" + " " * col) + piece[len(item):]
        line += ("" if line.endswith(("(", " ")) else " ") + piece
    if not items:
        line += ")"
    text = "\n".join([*lines, line])
    if len("".join(text.split())) > n_char_max:
        lim = n_char_max // 2
        regex = rf"^(\s*\S){{{lim}}}"
        left = re.match(regex, text).end()
        right = re.match(regex, text[::-1]).end()
        if "\n" in text[left:-right]:
            right = re.match(regex + r"[^\n]*\n", text[::-1]).end()
        if left + 3 < len(text) - right:
            text = text[:left] + "..." + text[-right:]
    return text


class EstimatorBase:
    """scikit-learn's estimator protocol, scikit-learn imported only by the methods that need it
    (module docstring): parameters are the keyword arguments of ``__init__``, stored unchanged."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # what sklearn's _MetadataRequester.__init_subclass__ does: a set_<method>_request
        # for every method that takes metadata (here a lazy descriptor)
        super().__init_subclass__(**kwargs)
        # (an inherited _RequestMethod works for the subclass: it reads the keys of its owner)
        for method in _SIMPLE_METHODS:
            name = f"set_{method}_request"
            if inspect.getattr_static(cls, name, None) is None and _metadata_params(cls, method):
                setattr(cls, name, _RequestMethod(method))

    @classmethod
    def _get_param_names(cls) -> list[str]:
        """The parameter names of ``__init__``, sorted (scikit-learn's rule: no ``*args``)."""
        init = cls.__init__
        if init is object.__init__:
            return []
        params = [p for p in inspect.signature(init).parameters.values()
                  if p.name != "self" and p.kind != p.VAR_KEYWORD]
        for p in params:
            if p.kind == p.VAR_POSITIONAL:
                raise RuntimeError(f"scikit-learn estimators should always specify their parameters in "
                                   f"the signature of their __init__ (no varargs). {cls} with constructor "
                                   f"{inspect.signature(init)} doesn't follow this convention.")
        return sorted(p.name for p in params)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Parameter names mapped to their values; ``deep``: also ``<param>__<name>`` of
        parameters that are estimators themselves."""
        out: dict[str, Any] = {}
        for key in self._get_param_names():
            value = getattr(self, key)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{key}__{k}", v) for k, v in value.get_params().items())
            out[key] = value
        return out

    def set_params(self, **params: Any) -> Any:
        """Set parameters (``<param>__<name>`` for a nested estimator's); returns self.
        An unknown name is a ValueError naming the valid ones."""
        if not params:
            return self
        valid = self.get_params(deep=True)
        nested: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            key, delim, sub_key = key.partition("__")
            if key not in valid:
                raise ValueError(f"Invalid parameter {key!r} for estimator {self}. "
                                 f"Valid parameters are: {self._get_param_names()!r}.")
            if delim:
                nested.setdefault(key, {})[sub_key] = value
            else:
                setattr(self, key, value)
                valid[key] = value
        for key, sub_params in nested.items():
            valid[key].set_params(**sub_params)
        return self

    def __sklearn_tags__(self) -> Any:
        from sklearn.utils import Tags, TargetTags

        return Tags(estimator_type=None, target_tags=TargetTags(required=False),
                    transformer_tags=None, regressor_tags=None, classifier_tags=None)

    def __repr__(self, N_CHAR_MAX: int = 700) -> str:  # noqa: N803 (scikit-learn's name)
        return _estimator_repr(self, N_CHAR_MAX)

    # -- metadata routing: scikit-learn's _MetadataRequester methods, run on this estimator
    @classmethod
    def _get_class_level_metadata_request_values(cls, method_name, method=None, ignore_params=None):
        return _requester()._get_class_level_metadata_request_values.__func__(
            cls, method_name, method, ignore_params)

    def _get_metadata_request(self) -> Any:
        return _requester()._get_metadata_request(self)

    def get_metadata_routing(self) -> Any:
        """The ``MetadataRequest`` of this estimator (scikit-learn's metadata routing)."""
        return self._get_metadata_request()

    # -- HTML display (Jupyter), as scikit-learn's estimators have it
    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        from sklearn import get_config
        from sklearn.utils import estimator_html_repr

        out = {"text/plain": repr(self)}
        if get_config()["display"] == "diagram":
            out["text/html"] = estimator_html_repr(self)
        return out


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
            raise not_fitted_error(f"This {type(self).__name__} instance is not fitted yet: "
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

    def fit_report(self):
        """What the last fit tells the harness, a ``FitReport`` (times, iterations, convergence,
        history, facts; ``rankbench.estimators.fit_report``)."""
        from rankbench.estimators.fit_report import report_of

        self._check_fitted()
        return report_of(self)

    def score(self, X: Any, y: Any, qid: Any = None, group: Any = None) -> float:
        """Mean NDCG@10 over the queries of (X, y), LETOR convention; the higher the better."""
        from rankbench.metrics import ndcg_at_k

        self._check_fitted()
        qid = resolve_queries(np.shape(y)[0], qid, group)
        return float(ndcg_at_k(y, self.decision_function(X), qid, k=10, convention="letor"))
