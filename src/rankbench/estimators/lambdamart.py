"""LambdaMART (NDCG / AUC / MAUC lambda-gradients on LightGBM trees) and the native GBDT rankers.

- ``LambdaMART``: LightGBM's tree learner driven through its custom-objective hook by
  the lambda-gradients of ``rankbench.boosting.lambdas`` (Welleck 2016 for AUC / MAUC).
- ``LightGBMLambdaRank``: LightGBM's own ``lambdarank`` objective, the reference
  LambdaMART-NDCG, with the same tree settings.
- ``XGBoostRanker``: XGBoost ``rank:pairwise`` / ``rank:ndcg`` with comparable trees
  (``grow_policy="lossguide"``, ``max_leaves = num_leaves``).

Any keyword beyond the named parameters is a parameter of the library's booster, passed
through unchanged (``XGBoostRanker(max_depth=6)``, ``LightGBMLambdaRank(feature_fraction=0.8)``),
as xgboost's and lightgbm's own scikit-learn wrappers take ``**kwargs``; where the named
defaults differ from the libraries' is tabled in docs/sklearn.md.  ``fit`` takes the libraries'
``eval_set=[(X, y)]`` with ``eval_group=[sizes]`` (LightGBM) or ``eval_qid=[qid]`` (XGBoost)
beside our ``eval_set=(X, y, qid)``, and ``sample_weight`` where the library takes one;
``feature_importances_`` comes from the fitted booster.

Solvers registered: ``lambdamart_auc``, ``lambdamart_mauc``, ``lambdamart_ndcg``,
``lgbm_lambdarank``, ``xgb_pairwise``, ``xgb_ndcg``.
"""

from __future__ import annotations

import logging
import time
from numbers import Integral, Real
from typing import Any

import numpy as np

from rankbench.boosting.lambdas import MAUC_DELTAS, METRICS, NDCG_DELTAS
from rankbench.data.ranking_data import RankingData
from rankbench.estimators.base import (
    EstimatorBase,
    RankerMixin,
    check_document_weights,
    qid_from_group,
    query_weights,
)
from rankbench.estimators.registry import register_solver
from rankbench.verbose import verbose_line

_log = logging.getLogger(__name__)


def _check_int(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def _check_pos(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def _ranking_data(X: Any, y: Any, qid: Any, what: str) -> RankingData:
    # Canonical row order (rankbench.data.row_order): score ties and LightGBM's sums follow
    # row positions, so this makes any order of the same rows give the same model.
    if isinstance(X, RankingData):
        data = X
    else:
        data = RankingData.from_arrays(X, y, qid, canonical=True)
    if data.y.min() < 0:
        raise ValueError(f"{what}: relevance labels must be >= 0, found {int(data.y.min())}")
    if data.y.max() > 30:
        raise ValueError(f"{what}: relevance labels above 30 are not supported (gain 2^y - 1)")
    return data


def _check_has_pairs(data: RankingData) -> None:
    """ValueError when no query holds two documents with different labels: every lambda-gradient
    would be 0 and the model one constant tree (SPDRanker raises the same way). O(n)."""
    starts = data.query_ptr[:-1]
    if not np.any(np.maximum.reduceat(data.y, starts) > np.minimum.reduceat(data.y, starts)):
        raise ValueError("no valid pairs: every query has a single relevance label (or a single "
                         "document), so there is no pair of documents of one query with different "
                         "labels to learn from")


def _eval_data(eval_set: Any, eval_group: Any = None, eval_qid: Any = None) -> tuple | None:
    """(X, y, qid) of the one eval set, from ours or the libraries' shapes; None without one.

    Ours: ``(X, y, qid)`` or ``(X, y)`` (one query).  The libraries': ``[(X, y)]`` with
    ``eval_group=[sizes]`` (LightGBM) or ``eval_qid=[qid]`` (XGBoost); a bare tuple with them
    works too.  One eval set only: early stopping and ``history_`` watch it.
    """
    if eval_set is None:
        if eval_group is not None or eval_qid is not None:
            raise ValueError("eval_group / eval_qid given without an eval_set")
        return None
    if isinstance(eval_set, list):
        if len(eval_set) != 1:
            raise ValueError(f"eval_set: one eval set is supported (early stopping and history_ "
                             f"watch it), got a list of {len(eval_set)}")
        eval_set = eval_set[0]
    if not (isinstance(eval_set, tuple | list) and len(eval_set) in (2, 3)) or isinstance(
            eval_set[0], tuple | list):
        raise ValueError("eval_set must be a tuple (X, y, qid) or (X, y), or a list holding one "
                         "(X, y) with eval_group=[sizes] or eval_qid=[qid]")
    X, y, *rest = eval_set
    qid = rest[0] if rest else None
    given = [(name, v) for name, v in (("eval_group", eval_group), ("eval_qid", eval_qid))
             if v is not None]
    if len(given) == 2:
        raise ValueError("pass either eval_group (query sizes) or eval_qid (query ids), not both")
    if given:
        name, value = given[0]
        if qid is not None:
            raise ValueError(f"eval_set holds a qid and {name} is given too: pass one of them")
        if isinstance(value, list | tuple) and len(value) == 1 and np.ndim(value[0]) == 1:
            value = value[0]  # the libraries' list of one array per eval set
        n = np.shape(y)[0]
        qid = qid_from_group(value, n) if name == "eval_group" else np.asarray(value)
    return X, y, qid


def _document_weights(sample_weight: Any, data: RankingData) -> np.ndarray | None:
    """``sample_weight`` (one per document, in the caller's row order) in ``data``'s row order
    (``from_arrays`` may have reordered the rows: ``meta["order"]``)."""
    if sample_weight is None:
        return None
    w = check_document_weights(sample_weight, data.n_docs)
    order = data.meta.get("order")
    return w if order is None else w[order]


def _keep_extra(est: Any, extra: dict[str, Any]) -> None:
    """Store ``__init__``'s extra keywords on ``est`` (a function, not a method: scikit-learn's
    tests build a BaseEstimator from our ``__init__`` alone)."""
    for key in extra:
        _check_extra_name(est, key)
    est._extra_params = list(extra)
    for key, value in extra.items():
        setattr(est, key, value)


def _check_extra_name(est: Any, key: str) -> None:
    if key.startswith("_") or key.endswith("_") or hasattr(type(est), key):
        raise TypeError(f"{type(est).__name__}() got an unexpected keyword argument {key!r}")


class _PassThrough:
    """Keywords beyond the named parameters are booster parameters, passed through unchanged.

    The rule of ``xgboost.XGBModel`` and ``lightgbm.LGBMModel``: each extra keyword is an
    attribute, a key of ``get_params`` and settable by ``set_params``, so ``clone`` and
    ``GridSearchCV`` handle it like a named one.  ``_check_extra`` refuses, at fit, a library
    name for one of the named parameters (``eta`` for ``learning_rate``) so one value cannot
    silently override the other.
    """

    def _check_extra_name(self, key: str) -> None:
        _check_extra_name(self, key)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Named parameters and the extra booster parameters."""
        out = super().get_params(deep)
        out.update((k, getattr(self, k)) for k in getattr(self, "_extra_params", ()))
        return out

    def set_params(self, **params: Any) -> Any:
        """Set named or extra parameters; a name that is neither becomes an extra booster
        parameter (checked at fit), as in xgboost's and lightgbm's wrappers."""
        named = set(self._get_param_names())
        extra = getattr(self, "_extra_params", [])
        for key in [k for k in params if "__" not in k and k not in named]:
            self._check_extra_name(key)
            setattr(self, key, params.pop(key))
            if key not in extra:
                extra.append(key)
        self._extra_params = extra
        return super().set_params(**params)

    def _library_names(self) -> dict[str, tuple[str, ...]]:
        """Named parameter (or a setting the wrapper fixes) -> the library's names for it."""
        return {}

    def _extra(self) -> dict[str, Any]:
        """The extra booster parameters, checked against the named ones."""
        extra = {k: getattr(self, k) for k in getattr(self, "_extra_params", ())}
        for ours, theirs in self._library_names().items():
            clash = sorted(set(theirs) & set(extra))
            if clash and ours in self._get_param_names():
                raise ValueError(f"{clash[0]}= is the library's name for {ours}=, a named "
                                 f"parameter of {type(self).__name__}: pass {ours}= instead")
            if clash:
                raise ValueError(f"{clash[0]}= is set by {type(self).__name__} itself ({ours}) "
                                 "and cannot be passed through")
        return extra


def _lightgbm_names(*main: str) -> tuple[str, ...]:
    """Every LightGBM name (aliases included) of the parameters ``main``."""
    from lightgbm.basic import _ConfigAliases

    return tuple(sorted(_ConfigAliases.get(*main)))


def _check_lightgbm_known(extra: dict[str, Any]) -> None:
    """ValueError for a key LightGBM does not know (it would ignore it, silently at verbosity -1)."""
    try:
        from lightgbm.basic import _ConfigAliases

        _ConfigAliases.get("objective")  # loads the table from the library
        known = set().union(*_ConfigAliases.aliases.values())
    except (ImportError, AttributeError):  # a LightGBM without the table: nothing to check against
        return
    import lightgbm

    unknown = sorted(set(extra) - known)
    if unknown:
        import difflib

        near = difflib.get_close_matches(unknown[0], sorted(known), n=3)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        raise ValueError(f"{unknown[0]!r} is not a LightGBM {lightgbm.__version__} parameter "
                         f"(https://lightgbm.readthedocs.io/en/latest/Parameters.html){hint}")


def _compile_seconds() -> float:
    """Compile (or load from cache) the numba kernels once; seconds spent, 0.0 when already loaded."""
    from rankbench.boosting import lambdas, query_metrics

    if lambdas._lambda_gradients.signatures and query_metrics._per_query.signatures:
        return 0.0
    t0 = time.perf_counter()
    s = np.array([0.3, 0.1, 0.2])
    y = np.array([1, 0, 2])
    ptr = np.array([0, 3])
    lambdas.lambda_gradients(s, y, ptr, "auc")
    query_metrics.per_query_metric(s, y, ptr, "auc")
    return time.perf_counter() - t0


class _TreeParams(_PassThrough, RankerMixin, EstimatorBase):
    """Tree settings shared by LambdaMART and the native LightGBM ranker; extra keywords are
    LightGBM parameters (``lgb.train``'s ``params``), applied after the wrapper's own."""

    _fitted_attribute = "booster_"
    # named parameter (or a setting the wrapper fixes) -> LightGBM's main name for it
    _LIGHTGBM = {"n_estimators": "num_iterations", "learning_rate": "learning_rate",  # noqa: RUF012
                 "num_leaves": "num_leaves", "min_data_in_leaf": "min_data_in_leaf",
                 "max_bin": "max_bin", "n_jobs": "num_threads", "random_state": "seed",
                 "early_stopping_rounds": "early_stopping_round", "objective": "objective"}

    def _library_names(self) -> dict[str, tuple[str, ...]]:
        return {ours: _lightgbm_names(main) for ours, main in self._LIGHTGBM.items()}

    @property
    def feature_importances_(self) -> np.ndarray:
        """LightGBM's feature importance of the kept trees (``importance_type``: ``"split"``,
        the default as in ``lightgbm.LGBMModel``, counts splits; ``"gain"`` sums their gains)."""
        self._check_fitted()
        kind = getattr(self, "importance_type", "split")
        return self.booster_.feature_importance(importance_type=kind,
                                                iteration=self.best_iteration_)

    def check_params(self) -> None:
        """ValueError for a parameter no fit could use (before any data is read)."""
        self._check_tree_params()

    def _check_tree_params(self) -> None:
        _check_int("n_estimators", self.n_estimators, 1)
        _check_pos("learning_rate", self.learning_rate)
        _check_int("num_leaves", self.num_leaves, 2)
        _check_int("min_data_in_leaf", self.min_data_in_leaf, 1)
        _check_int("ndcg_at", self.ndcg_at, 1)
        _check_int("n_jobs", self.n_jobs, 1)
        _check_int("max_bin", self.max_bin, 2)
        if self.early_stopping_rounds is not None:
            _check_int("early_stopping_rounds", self.early_stopping_rounds, 1)
        _check_int("random_state", self.random_state, 0)
        if not isinstance(self.verbose, bool | np.bool_):
            raise ValueError(f"verbose must be True or False, got {self.verbose!r}")

    def _lgb_params(self) -> dict[str, Any]:
        # deterministic: same seed and thread count -> bit-identical model
        return {
            "learning_rate": float(self.learning_rate),
            "num_leaves": int(self.num_leaves),
            "min_data_in_leaf": int(self.min_data_in_leaf),
            "max_bin": int(self.max_bin),
            "num_threads": int(self.n_jobs),
            "seed": int(self.random_state),
            "deterministic": True,
            "force_row_wise": True,
            "verbosity": -1,
            "metric": "None",
        }

    def _train(self, objective: Any, obj_params: dict[str, Any], X, y, qid, eval_set,
               eval_metric: str, recorder_objective=None, sample_weight=None):
        import lightgbm as lgb

        from rankbench.boosting.lightgbm_hook import (
            NativeFatalFilter,
            QueryMetricEval,
            RoundRecorder,
        )

        extra = self._extra()
        _check_lightgbm_known({k: v for k, v in extra.items() if k != "importance_type"})
        data = _ranking_data(X, y, qid, "fit")
        self.n_features_in_ = data.n_features
        train_set = lgb.Dataset(data.X, label=data.y, group=np.diff(data.query_ptr),
                                weight=_document_weights(sample_weight, data), free_raw_data=False)
        valid_sets, fevals, callbacks = [], [], []
        if eval_set is not None:
            ex, ey, eq = eval_set
            edata = _ranking_data(ex, ey, eq, "eval_set")
            if edata.n_features != data.n_features:
                raise ValueError(f"eval_set has {edata.n_features} features, training data {data.n_features}")
            valid_sets.append(lgb.Dataset(edata.X, label=edata.y, group=np.diff(edata.query_ptr),
                                          reference=train_set, free_raw_data=False))
            fevals.append(QueryMetricEval(edata.y, edata.query_ptr, eval_metric, self.ndcg_at))
            if self.early_stopping_rounds is not None:
                callbacks.append(lgb.early_stopping(int(self.early_stopping_rounds),
                                                    first_metric_only=True, verbose=False))
        elif self.early_stopping_rounds is not None:
            raise ValueError("early_stopping_rounds needs an eval_set")
        on_row = None
        if getattr(self, "verbose", False):
            name = type(self).__name__
            if getattr(self, "metric", None):
                name += f"-{self.metric}"
            total = int(self.n_estimators)
            t_start = time.perf_counter()

            def on_row(row: dict) -> None:
                evals = " ".join(f"{k}={v:.4f}" for k, v in row.items() if k.startswith("vali."))
                verbose_line(_log, f"{name}: round {row['iteration']}/{total} "
                                   f"{row['round_s']:.3f}s (elapsed "
                                   f"{time.perf_counter() - t_start:.2f}s) {evals}".rstrip())

        recorder = RoundRecorder(recorder_objective, on_row)
        callbacks.append(recorder)
        extra.pop("importance_type", None)  # read by feature_importances_, not LightGBM's
        params = {**self._lgb_params(), **obj_params, **extra, "objective": objective}
        recorder.start()
        t0 = time.perf_counter()
        native = NativeFatalFilter()  # LightGBM's own [Fatal] lines must not precede our error
        try:
            with native:
                booster = lgb.train(params, train_set, num_boost_round=int(self.n_estimators),
                                    valid_sets=valid_sets, valid_names=["vali"] * len(valid_sets),
                                    feval=fevals or None, callbacks=callbacks)
        except BaseException as exc:
            if not (isinstance(exc, lgb.basic.LightGBMError) and "num_features" in str(exc)):
                native.release()  # not ours to explain: show LightGBM's lines after all
                raise
            # LightGBM drops every feature it cannot split on; with none left it aborts deep inside.
            raise ValueError(
                f"no feature can be split with {train_set.num_data()} training documents and "
                f"min_data_in_leaf={self.min_data_in_leaf}: lower min_data_in_leaf or give "
                "more data") from exc
        self.fit_time_ = time.perf_counter() - t0
        self.booster_ = booster
        self.history_ = recorder.rows
        best = booster.best_iteration
        self.best_iteration_ = int(best) if best and best > 0 else booster.current_iteration()
        self.n_iter_ = len(recorder.rows)  # rounds run (the booster keeps only up to the best)
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Raw scores of the first ``best_iteration_`` trees; O(n * trees * depth)."""
        Xm = self._predict_input(X)
        return self.booster_.predict(Xm, num_iteration=self.best_iteration_, raw_score=True)

    def predict(self, X: Any) -> np.ndarray:
        """Same as ``decision_function``."""
        return self.decision_function(X)


class LambdaMART(_TreeParams):
    """LambdaMART with our lambda-gradients (``metric`` = ``ndcg``, ``auc`` or ``mauc``) on LightGBM trees.

    ``sigma`` is the RankNet scale, ``ndcg_at`` the NDCG truncation level (ndcg only; also
    the eval cutoff), ``norm`` LightGBM's ``lambdarank_norm`` (see
    ``rankbench.boosting.lambdas``), ``mauc_delta`` ``"exact"`` (true metric change) or
    ``"sum_abs"``, ``ndcg_delta`` ``"lightgbm"`` (LightGBM's lambdarank exactly) or
    ``"exact"`` (true Delta NDCG@k).  ``fit(X, y, qid=None, eval_set=(X, y, qid))``: ``qid=None`` makes all
    documents one query (an AUC problem; O(n^2) pairs per round).  After fit:
    ``booster_``, ``history_`` (per round: ``round_s``, ``gradient_s``, ``vali.<metric>``),
    ``best_iteration_``, ``n_iter_``, ``fit_time_``, ``compile_time_``, ``gradient_time_``.
    ``verbose=True`` logs one line per round (seconds, elapsed, eval values) at INFO on the
    ``rankbench.estimators.lambdamart`` logger (stderr when logging is not configured).
    """

    def __init__(self, metric: str = "auc", n_estimators: int = 100, learning_rate: float = 0.1,
                 num_leaves: int = 31, min_data_in_leaf: int = 20, sigma: float = 1.0,
                 ndcg_at: int = 10, early_stopping_rounds: int | None = None,
                 random_state: int = 0, n_jobs: int = 1, norm: bool = True,
                 mauc_delta: str = "exact", max_bin: int = 255, ndcg_delta: str = "lightgbm",
                 verbose: bool = False, **kwargs: Any):
        self.metric = metric
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.min_data_in_leaf = min_data_in_leaf
        self.sigma = sigma
        self.ndcg_at = ndcg_at
        self.early_stopping_rounds = early_stopping_rounds
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.norm = norm
        self.mauc_delta = mauc_delta
        self.ndcg_delta = ndcg_delta
        self.max_bin = max_bin
        self.verbose = verbose
        _keep_extra(self, kwargs)

    def check_params(self) -> None:
        """ValueError for a parameter no fit could use (before any data is read)."""
        self._check_params()

    def _check_params(self) -> None:
        if self.metric not in METRICS:
            raise ValueError(f"metric must be one of {METRICS}, got {self.metric!r}")
        if self.mauc_delta not in MAUC_DELTAS:
            raise ValueError(f"mauc_delta must be one of {MAUC_DELTAS}, got {self.mauc_delta!r}")
        if self.ndcg_delta not in NDCG_DELTAS:
            raise ValueError(f"ndcg_delta must be one of {NDCG_DELTAS}, got {self.ndcg_delta!r}")
        _check_pos("sigma", self.sigma)
        if not isinstance(self.norm, bool | np.bool_):
            raise ValueError(f"norm must be True or False, got {self.norm!r}")
        self._check_tree_params()

    def fit(self, X: Any, y: Any, qid: Any = None, eval_set: Any = None, group: Any = None,
            eval_group: Any = None, eval_qid: Any = None) -> LambdaMART:
        """Boost ``n_estimators`` trees on the lambda-gradients of ``metric`` (early stopping on
        eval_set); ``group`` (query sizes) instead of ``qid``; eval_set as ``_eval_data`` reads it."""
        X, y, qid = self._fit_inputs(X, y, qid, group)
        eval_set = _eval_data(eval_set, eval_group, eval_qid)

        from rankbench.boosting.lightgbm_hook import LambdaObjective

        self._check_params()
        self.compile_time_ = _compile_seconds()
        from rankbench.parallel import numba_threads

        with numba_threads(int(self.n_jobs)):  # the grouping too: n_jobs threads for the whole fit
            data = _ranking_data(X, y, qid, "fit")
            _check_has_pairs(data)
            objective = LambdaObjective(data.y, data.query_ptr, self.metric, self.ndcg_at,
                                        self.sigma, self.norm, self.mauc_delta, self.ndcg_delta)
            self._train(objective, {}, data, None, None, eval_set, self.metric,
                        recorder_objective=objective)
        self.gradient_time_ = objective.seconds
        return self


class LightGBMLambdaRank(_TreeParams):
    """LightGBM's native ``lambdarank`` objective (reference LambdaMART-NDCG) with LambdaMART's tree settings.

    ``ndcg_at`` is passed as ``lambdarank_truncation_level`` and is the eval cutoff;
    ``norm`` is ``lambdarank_norm``.  Same attributes after fit as ``LambdaMART``.
    """

    def __init__(self, n_estimators: int = 100, learning_rate: float = 0.1, num_leaves: int = 31,
                 min_data_in_leaf: int = 20, sigma: float = 1.0, ndcg_at: int = 10,
                 early_stopping_rounds: int | None = None, random_state: int = 0, n_jobs: int = 1,
                 norm: bool = True, max_bin: int = 255, verbose: bool = False, **kwargs: Any):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.min_data_in_leaf = min_data_in_leaf
        self.sigma = sigma
        self.ndcg_at = ndcg_at
        self.early_stopping_rounds = early_stopping_rounds
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.norm = norm
        self.max_bin = max_bin
        self.verbose = verbose
        _keep_extra(self, kwargs)

    _LIGHTGBM = {**_TreeParams._LIGHTGBM, "ndcg_at": "lambdarank_truncation_level",  # noqa: RUF012
                 "sigma": "sigmoid", "norm": "lambdarank_norm"}

    def fit(self, X: Any, y: Any, qid: Any = None, eval_set: Any = None, group: Any = None,
            sample_weight: Any = None, eval_group: Any = None,
            eval_qid: Any = None) -> LightGBMLambdaRank:
        """Boost with LightGBM's built-in lambdarank gradients; ``group`` (query sizes) instead
        of ``qid``; ``sample_weight`` one weight per document (LightGBM scales each document's
        gradient by it); eval_set as ``_eval_data`` reads it."""
        X, y, qid = self._fit_inputs(X, y, qid, group)
        eval_set = _eval_data(eval_set, eval_group, eval_qid)
        _check_pos("sigma", self.sigma)
        self._check_tree_params()
        self.compile_time_ = _compile_seconds()
        obj_params = {"lambdarank_truncation_level": int(self.ndcg_at), "sigmoid": float(self.sigma),
                      "lambdarank_norm": bool(self.norm)}
        return self._train("lambdarank", obj_params, X, y, qid, eval_set, "ndcg",
                           sample_weight=sample_weight)


class XGBoostRanker(_PassThrough, RankerMixin, EstimatorBase):
    """XGBoost ``rank:pairwise``, ``rank:ndcg`` or ``rank:map`` with loss-guided trees of
    ``num_leaves`` leaves (0: no limit).

    Queries are passed as consecutive integer group ids; ``eval_set`` enables early
    stopping on XGBoost's own ``ndcg@ndcg_at``.  ``history_`` holds that eval per round.
    Extra keywords go to ``xgboost.XGBRanker`` unchanged and override the wrapper's tree
    settings (``tree_method="hist"``, ``grow_policy="lossguide"``, ``max_depth=0``), e.g.
    ``XGBoostRanker(num_leaves=0, grow_policy="depthwise", max_depth=6)``; XGBoost itself
    warns about a key it does not use.
    """

    _fitted_attribute = "model_"
    OBJECTIVES = ("rank:pairwise", "rank:ndcg", "rank:map")

    def __init__(self, objective: str = "rank:pairwise", n_estimators: int = 100,
                 learning_rate: float = 0.1, num_leaves: int = 31, min_child_weight: float = 1.0,
                 ndcg_at: int = 10, early_stopping_rounds: int | None = None,
                 random_state: int = 0, n_jobs: int = 1, **kwargs: Any):
        self.objective = objective
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.min_child_weight = min_child_weight
        self.ndcg_at = ndcg_at
        self.early_stopping_rounds = early_stopping_rounds
        self.random_state = random_state
        self.n_jobs = n_jobs
        _keep_extra(self, kwargs)

    def _library_names(self) -> dict[str, tuple[str, ...]]:
        return {"learning_rate": ("eta",), "num_leaves": ("max_leaves",), "random_state": ("seed",),
                "n_jobs": ("nthread",), "n_estimators": ("num_boost_round",)}

    @property
    def feature_importances_(self) -> np.ndarray:
        """``xgboost.XGBRanker.feature_importances_`` (by ``importance_type``, XGBoost's
        default gain, normalised to sum 1)."""
        self._check_fitted()
        return self.model_.feature_importances_

    def fit(self, X: Any, y: Any, qid: Any = None, eval_set: Any = None, group: Any = None,
            sample_weight: Any = None, eval_group: Any = None, eval_qid: Any = None) -> XGBoostRanker:
        """Train an ``xgboost.XGBRanker``; O(rounds * n * features) histogram boosting; ``group``
        (query sizes) instead of ``qid``; ``sample_weight`` one weight per document, equal inside
        a query (XGBoost weighs queries: ``query_weights``); eval_set as ``_eval_data`` reads it."""
        X, y, qid = self._fit_inputs(X, y, qid, group)
        eval_set = _eval_data(eval_set, eval_group, eval_qid)
        if self.objective not in self.OBJECTIVES:
            raise ValueError(f"objective must be one of {self.OBJECTIVES}, got {self.objective!r}")
        _check_int("n_estimators", self.n_estimators, 1)
        _check_pos("learning_rate", self.learning_rate)
        if self.num_leaves != 0:
            _check_int("num_leaves (0: no limit)", self.num_leaves, 2)
        _check_int("ndcg_at", self.ndcg_at, 1)
        _check_int("n_jobs", self.n_jobs, 1)
        _check_int("random_state", self.random_state, 0)
        if self.early_stopping_rounds is not None:
            _check_int("early_stopping_rounds", self.early_stopping_rounds, 1)
            if eval_set is None:
                raise ValueError("early_stopping_rounds needs an eval_set")
        if not (np.isfinite(self.min_child_weight) and self.min_child_weight >= 0):
            raise ValueError(f"min_child_weight must be >= 0, got {self.min_child_weight!r}")
        extra = self._extra()
        import xgboost as xgb

        data = _ranking_data(X, y, qid, "fit")
        self.n_features_in_ = data.n_features
        model = xgb.XGBRanker(**{
            "objective": self.objective, "n_estimators": int(self.n_estimators),
            "learning_rate": float(self.learning_rate), "tree_method": "hist",
            "grow_policy": "lossguide", "max_leaves": int(self.num_leaves), "max_depth": 0,
            "min_child_weight": float(self.min_child_weight),
            "random_state": int(self.random_state), "n_jobs": int(self.n_jobs),
            "eval_metric": f"ndcg@{int(self.ndcg_at)}",
            "early_stopping_rounds": self.early_stopping_rounds, **extra})
        kw: dict[str, Any] = {}
        weights = _document_weights(sample_weight, data)
        if weights is not None:
            kw["sample_weight"] = query_weights(weights, data.qid, data.n_docs)
        if eval_set is not None:
            edata = _ranking_data(*eval_set, "eval_set")
            kw.update(eval_set=[(edata.X, edata.y)], eval_qid=[_group_ids(edata)], verbose=False)
        self.compile_time_ = 0.0
        t0 = time.perf_counter()
        model.fit(data.X, data.y, qid=_group_ids(data), **kw)
        self.fit_time_ = time.perf_counter() - t0
        self.model_ = model
        ev = model.evals_result() if eval_set is not None else {}
        metrics = ev.get("validation_0", {})
        rounds = max((len(v) for v in metrics.values()), default=0)
        self.history_ = [{"iteration": i + 1, **{f"vali.{name}": float(v[i])
                                                 for name, v in metrics.items()}}
                         for i in range(rounds)]
        best = getattr(model, "best_iteration", None)
        self.best_iteration_ = int(best) + 1 if best is not None else int(self.n_estimators)
        self.n_iter_ = model.get_booster().num_boosted_rounds()
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Raw ranking scores of the best iteration."""
        X = self._predict_input(X)
        return self.model_.predict(X, iteration_range=(0, self.best_iteration_))

    def predict(self, X: Any) -> np.ndarray:
        """Same as ``decision_function``."""
        return self.decision_function(X)


def _group_ids(data: RankingData) -> np.ndarray:
    # XGBoost wants sorted qids; RankingData is grouped, so consecutive ids per group suffice
    return np.repeat(np.arange(data.n_queries, dtype=np.int64), np.diff(data.query_ptr))


def _lambdamart_factory(metric: str):
    def make(params: dict[str, Any]) -> LambdaMART:
        if "metric" in params and params["metric"] != metric:
            raise ValueError(f"solver lambdamart_{metric} fixes metric={metric!r}, got {params['metric']!r}")
        return LambdaMART(**{**params, "metric": metric})

    return make


for _metric in METRICS:
    register_solver(f"lambdamart_{_metric}")(_lambdamart_factory(_metric))


@register_solver("lgbm_lambdarank")
def _make_lgbm_lambdarank(params: dict[str, Any]) -> LightGBMLambdaRank:
    return LightGBMLambdaRank(**params)


@register_solver("xgb_pairwise")
def _make_xgb_pairwise(params: dict[str, Any]) -> XGBoostRanker:
    return XGBoostRanker(**{**params, "objective": "rank:pairwise"})


@register_solver("xgb_ndcg")
def _make_xgb_ndcg(params: dict[str, Any]) -> XGBoostRanker:
    return XGBoostRanker(**{**params, "objective": "rank:ndcg"})
