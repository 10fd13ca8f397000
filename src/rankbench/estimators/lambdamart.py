"""LambdaMART (NDCG / AUC / MAUC lambda-gradients on LightGBM trees) and the native GBDT rankers.

- ``LambdaMART``: LightGBM's tree learner driven through its custom-objective hook by
  the lambda-gradients of ``rankbench.boosting.lambdas`` (Welleck 2016 for AUC / MAUC).
- ``LightGBMLambdaRank``: LightGBM's own ``lambdarank`` objective, the reference
  LambdaMART-NDCG, with the same tree settings.
- ``XGBoostRanker``: XGBoost ``rank:pairwise`` / ``rank:ndcg`` with comparable trees
  (``grow_policy="lossguide"``, ``max_leaves = num_leaves``).

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
from rankbench.estimators.base import EstimatorBase, RankerMixin
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


def _check_eval_set(eval_set: Any) -> tuple[Any, Any, Any]:
    """(X, y, qid) from ``(X, y, qid)``, ``(X, y)`` or a one-element list of those (sklearn style)."""
    if isinstance(eval_set, list) and len(eval_set) == 1 and isinstance(eval_set[0], tuple | list):
        eval_set = eval_set[0]
    if not (isinstance(eval_set, tuple | list) and len(eval_set) in (2, 3)) or isinstance(
            eval_set[0], tuple | list):
        raise ValueError("eval_set must be a tuple (X, y, qid) or (X, y), or a list holding one")
    X, y, *rest = eval_set
    return X, y, (rest[0] if rest else None)


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


class _TreeParams(RankerMixin, EstimatorBase):
    """Tree settings shared by LambdaMART and the native LightGBM ranker."""

    _fitted_attribute = "booster_"

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
               eval_metric: str, recorder_objective=None):
        import lightgbm as lgb

        from rankbench.boosting.lightgbm_hook import (
            NativeFatalFilter,
            QueryMetricEval,
            RoundRecorder,
        )

        data = _ranking_data(X, y, qid, "fit")
        self.n_features_in_ = data.n_features
        train_set = lgb.Dataset(data.X, label=data.y, group=np.diff(data.query_ptr),
                                free_raw_data=False)
        valid_sets, fevals, callbacks = [], [], []
        if eval_set is not None:
            ex, ey, eq = _check_eval_set(eval_set)
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
        params = {**self._lgb_params(), **obj_params, "objective": objective}
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
                 verbose: bool = False):
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

    def fit(self, X: Any, y: Any, qid: Any = None, eval_set: Any = None, group: Any = None) -> LambdaMART:
        """Boost ``n_estimators`` trees on the lambda-gradients of ``metric`` (early stopping on eval_set); ``group`` (query sizes) instead of ``qid``."""
        X, y, qid = self._fit_inputs(X, y, qid, group)
        import numba

        from rankbench.boosting.lightgbm_hook import LambdaObjective

        self._check_params()
        self.compile_time_ = _compile_seconds()
        data = _ranking_data(X, y, qid, "fit")
        objective = LambdaObjective(data.y, data.query_ptr, self.metric, self.ndcg_at, self.sigma,
                                    self.norm, self.mauc_delta, self.ndcg_delta)
        threads = numba.get_num_threads()
        numba.set_num_threads(min(int(self.n_jobs), numba.config.NUMBA_NUM_THREADS))
        try:
            self._train(objective, {}, data, None, None, eval_set, self.metric,
                        recorder_objective=objective)
        finally:
            numba.set_num_threads(threads)
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
                 norm: bool = True, max_bin: int = 255, verbose: bool = False):
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

    def fit(self, X: Any, y: Any, qid: Any = None, eval_set: Any = None,
            group: Any = None) -> LightGBMLambdaRank:
        """Boost with LightGBM's built-in lambdarank gradients; ``group`` (query sizes) instead of ``qid``."""
        X, y, qid = self._fit_inputs(X, y, qid, group)
        _check_pos("sigma", self.sigma)
        self._check_tree_params()
        self.compile_time_ = _compile_seconds()
        obj_params = {"lambdarank_truncation_level": int(self.ndcg_at), "sigmoid": float(self.sigma),
                      "lambdarank_norm": bool(self.norm)}
        return self._train("lambdarank", obj_params, X, y, qid, eval_set, "ndcg")


class XGBoostRanker(RankerMixin, EstimatorBase):
    """XGBoost ``rank:pairwise`` or ``rank:ndcg`` with loss-guided trees of ``num_leaves`` leaves.

    Queries are passed as consecutive integer group ids; ``eval_set`` enables early
    stopping on XGBoost's own ``ndcg@ndcg_at``.  ``history_`` holds that eval per round.
    """

    _fitted_attribute = "model_"

    def __init__(self, objective: str = "rank:pairwise", n_estimators: int = 100,
                 learning_rate: float = 0.1, num_leaves: int = 31, min_child_weight: float = 1.0,
                 ndcg_at: int = 10, early_stopping_rounds: int | None = None,
                 random_state: int = 0, n_jobs: int = 1):
        self.objective = objective
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.min_child_weight = min_child_weight
        self.ndcg_at = ndcg_at
        self.early_stopping_rounds = early_stopping_rounds
        self.random_state = random_state
        self.n_jobs = n_jobs

    def fit(self, X: Any, y: Any, qid: Any = None, eval_set: Any = None,
            group: Any = None) -> XGBoostRanker:
        """Train an ``xgboost.XGBRanker``; O(rounds * n * features) histogram boosting; ``group`` (query sizes) instead of ``qid``."""
        X, y, qid = self._fit_inputs(X, y, qid, group)
        if self.objective not in ("rank:pairwise", "rank:ndcg"):
            raise ValueError(f"objective must be 'rank:pairwise' or 'rank:ndcg', got {self.objective!r}")
        _check_int("n_estimators", self.n_estimators, 1)
        _check_pos("learning_rate", self.learning_rate)
        _check_int("num_leaves", self.num_leaves, 2)
        _check_int("ndcg_at", self.ndcg_at, 1)
        _check_int("n_jobs", self.n_jobs, 1)
        _check_int("random_state", self.random_state, 0)
        if self.early_stopping_rounds is not None:
            _check_int("early_stopping_rounds", self.early_stopping_rounds, 1)
            if eval_set is None:
                raise ValueError("early_stopping_rounds needs an eval_set")
        if not (np.isfinite(self.min_child_weight) and self.min_child_weight >= 0):
            raise ValueError(f"min_child_weight must be >= 0, got {self.min_child_weight!r}")
        import xgboost as xgb

        data = _ranking_data(X, y, qid, "fit")
        self.n_features_in_ = data.n_features
        model = xgb.XGBRanker(
            objective=self.objective, n_estimators=int(self.n_estimators),
            learning_rate=float(self.learning_rate), tree_method="hist", grow_policy="lossguide",
            max_leaves=int(self.num_leaves), max_depth=0, min_child_weight=float(self.min_child_weight),
            random_state=int(self.random_state), n_jobs=int(self.n_jobs),
            eval_metric=f"ndcg@{int(self.ndcg_at)}", early_stopping_rounds=self.early_stopping_rounds,
        )
        kw: dict[str, Any] = {}
        if eval_set is not None:
            ex, ey, eq = _check_eval_set(eval_set)
            edata = _ranking_data(ex, ey, eq, "eval_set")
            kw = {"eval_set": [(edata.X, edata.y)], "eval_qid": [_group_ids(edata)], "verbose": False}
        self.compile_time_ = 0.0
        t0 = time.perf_counter()
        model.fit(data.X, data.y, qid=_group_ids(data), **kw)
        self.fit_time_ = time.perf_counter() - t0
        self.model_ = model
        ev = model.evals_result() if eval_set is not None else {}
        vals = next(iter(ev.get("validation_0", {}).values()), [])
        self.history_ = [{"iteration": i + 1, f"vali.ndcg@{self.ndcg_at}": float(v)}
                         for i, v in enumerate(vals)]
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
