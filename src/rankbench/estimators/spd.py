"""SPDRanker: Stochastic Pairwise Descent (Sculley 2009) as a scikit-learn style ranker.

Learners ``sgd_svm``, ``pegasos``, ``pa1``, ``romma`` (Sculley sect. 3.2), ``perceptron``
and ``margin_perceptron`` (Sculley sect. 3.4, sofia-ml's margin-perceptron) and
``sgd_squared_hinge`` (Chapelle & Keerthi Alg. 2); step sizes ``eta`` = ``pegasos``
(1/(lambda t)), ``basic`` (c/(c+t), sofia-ml's default c = 10) or ``constant`` (c, sofia-ml's
0.02); samplers ``indexed`` (the paper's,
query- and label-pair-normalised), ``uniform`` (exactly uniform over the pairs P),
``rejection`` (index-free, also uniform over P) and ``sofia`` (what sofia-ml's rank loop
does: a uniform document, then one of another label in its query).  See rankbench.optim.samplers for the
objective each sampler really minimises and rankbench.optim.pair_steps for the
update rules.

Registered solvers: ``spd_sgd_svm``, ``spd_pegasos``, ``spd_pa1``, ``spd_romma``,
``spd_sgd_squared_hinge``, ``spd_perceptron``, ``spd_margin_perceptron`` (``make_solver("spd_pegasos", {"lam": 1e-3})``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

import numpy as np
import scipy.sparse as sp

from rankbench.data.ranking_data import RankingData, check_ranking_arrays
from rankbench.data.row_order import canonical_order, group_by_query
from rankbench.estimators.base import EstimatorBase, RankerMixin
from rankbench.estimators.registry import register_solver
from rankbench.optim.pair_steps import ETA_LEARNERS, ETA_SCHEDULES, LEARNERS
from rankbench.optim.samplers import SAMPLERS, build_pair_index, seed_rng_state
from rankbench.optim.spd import (
    SPDState,
    prepare_X,
    run_segment,
    spd_segment_dense,
    spd_segment_sparse,
)
from rankbench.verbose import verbose_line

_EVAL_METRICS = ("map", "ndcg@10")
_log = logging.getLogger(__name__)


def log_checkpoints(n_iter: int, start: int = 100) -> list[int]:
    """Iterations 1, 2, 5 x 10^k from ``start`` up to ``n_iter``, plus ``n_iter`` itself."""
    out = []
    k = 0
    while True:
        for m in (1, 2, 5):
            it = m * 10**k
            if it > n_iter:
                return sorted(set(out) | {n_iter})
            if it >= start:
                out.append(it)
        k += 1


class SPDRanker(RankerMixin, EstimatorBase):
    """Linear ranker trained by Stochastic Pairwise Descent; O(n log n) index + O(n_iter * nnz) steps.

    Parameters
    ----------
    learner : "pegasos" | "sgd_svm" | "pa1" | "romma" | "sgd_squared_hinge" | "perceptron"
        | "margin_perceptron"
    lam : regularisation lambda of ``lambda/2 ||w||^2 + 1/|P| sum_P loss`` (> 0); also
        sets the step size eta_t = 1/(lambda t) (``eta="pegasos"``) and the Pegasos radius
        1/sqrt(lambda).  The perceptrons do not regularise (lambda only enters their eta).
        The equivalent RankSVM constant of Chapelle eq. (1) is C = 1/(lambda |P|).
    n_iter : number of stochastic steps (pairs drawn).
    sampler : "indexed" (paper, default) | "uniform" | "rejection" | "sofia".
    random_state : int seed (same seed: bit-identical ``coef_``), or None.
    checkpoints : None (no history), "log" (1, 2, 5 x 10^k from 100 up to n_iter) or
        increasing iteration numbers; at each the training objective (O(n log n)) and,
        with an eval set, MAP and NDCG@10 are recorded in ``history_`` without
        restarting the run.
    C : PA-I aggressiveness, tau = min(C, loss / ||x||^2) (> 0; only read by ``pa1``).
    margin : ``margin_perceptron`` updates when y <w, x> <= margin (sofia-ml's
        ``--perceptron_margin_size``, default 1; >= 0); ``perceptron`` is margin 0.
    eta : step-size schedule of the learners that take one (sgd_svm, pegasos,
        sgd_squared_hinge, the perceptrons): "pegasos" 1/(lambda t), "basic" c/(c + t),
        "constant" c (sofia-ml's ``--eta_type``); PA-I and ROMMA refuse any but "pegasos";
        "inverse" c/t (Chapelle Alg. 2's literal 1/t rate scaled by c).
    eta_c : the c of "basic" (default 10, sofia-ml's), "constant" (default 0.02) or
        "inverse" (default 1).
    verbose : log each checkpoint (iteration, objective, eval metrics, seconds) at INFO
        on the ``rankbench.estimators.spd`` logger (shown on stderr when logging is not
        configured).
    eval_set : optional (X, y, qid) evaluated at the checkpoints.
    keep_coef_history : also store w (as a list) in each history row, so a report can
        score any split afterwards.
    """

    def __init__(self, learner: str = "pegasos", lam: float = 1e-3, n_iter: int = 100_000,
                 sampler: str = "indexed", random_state: int | None = 0,
                 checkpoints: str | Iterable[int] | None = None, C: float = 1.0,
                 eval_set: tuple | None = None, keep_coef_history: bool = False,
                 margin: float = 1.0, eta: str = "pegasos", eta_c: float | None = None,
                 verbose: bool = False):
        self.learner = learner
        self.lam = lam
        self.n_iter = n_iter
        self.sampler = sampler
        self.random_state = random_state
        self.checkpoints = checkpoints
        self.C = C
        self.eval_set = eval_set
        self.keep_coef_history = keep_coef_history
        self.margin = margin
        self.eta = eta
        self.eta_c = eta_c
        self.verbose = verbose

    # -- parameter checks (all before any kernel runs) --------------------------------
    def check_params(self) -> None:
        """ValueError for a parameter no fit could use (before any data is read)."""
        self._checked_params()

    def _checked_params(self) -> tuple[str, float, int, str, float, list[int]]:
        if self.learner not in LEARNERS:
            raise ValueError(f"unknown learner {self.learner!r}; known learners: {', '.join(LEARNERS)}")
        if self.sampler not in SAMPLERS:
            raise ValueError(f"unknown sampler {self.sampler!r}; known samplers: {', '.join(SAMPLERS)}")
        lam = _positive_float("lam", self.lam)
        C = _positive_float("C", self.C)
        n_iter = self.n_iter
        if isinstance(n_iter, bool) or not isinstance(n_iter, int | np.integer) or n_iter < 1:
            raise ValueError(f"n_iter must be an integer >= 1, got {n_iter!r}")
        n_iter = int(n_iter)
        seed_rng_state(self.random_state)  # validates the seed
        if self.eta not in ETA_SCHEDULES:
            raise ValueError(f"unknown eta schedule {self.eta!r}; known: {', '.join(ETA_SCHEDULES)}")
        if self.eta != "pegasos" and self.learner not in ETA_LEARNERS:
            raise ValueError(f"learner {self.learner!r} chooses its own step length; eta="
                             f"{self.eta!r} applies to {', '.join(ETA_LEARNERS)}")
        if self.eta_c is not None:
            if self.eta == "pegasos":
                raise ValueError("eta_c is the c of eta='basic', 'constant' or 'inverse'; eta='pegasos' "
                                 "takes none (its step is 1/(lam t))")
            _positive_float("eta_c", self.eta_c)
        try:
            margin = float(self.margin)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"margin must be a number >= 0, got {self.margin!r}") from exc
        if not np.isfinite(margin) or margin < 0:
            raise ValueError(f"margin must be a finite number >= 0, got {self.margin!r}")
        # The kernel's constant c is sofia-ml's: PA-I's aggressiveness or the perceptron margin.
        if self.learner == "margin_perceptron":
            C = margin
        elif self.learner == "perceptron":
            C = 0.0
        return self.learner, lam, n_iter, self.sampler, C, self._checkpoint_list(n_iter)

    def _checkpoint_list(self, n_iter: int) -> list[int]:
        cp = self.checkpoints
        if cp is None:
            return []
        if isinstance(cp, str):
            if cp != "log":
                raise ValueError(f"checkpoints must be None, 'log' or a list of iterations, got {cp!r}")
            return log_checkpoints(n_iter)
        try:
            its = [int(c) for c in cp]
        except (TypeError, ValueError) as exc:
            raise ValueError(f"checkpoints must be None, 'log' or a list of iterations, got {cp!r}") from exc
        if any(c < 1 or c > n_iter for c in its):
            raise ValueError(f"checkpoints must lie in 1..n_iter={n_iter}, got {its}")
        return sorted(set(its) | {n_iter})

    # -- fit ------------------------------------------------------------------------------
    def fit(self, X: Any, y: Any, qid: Any = None, eval_set: tuple | None = None,
            group: Any = None) -> SPDRanker:
        """Train on (X, y, qid); ``eval_set`` = (X, y, qid) overrides the constructor's; ``group`` (query sizes) instead of ``qid``."""
        from rankbench.parallel import numba_threads

        # the steps are serial; the grouping and index kernels take the cores idle now
        with numba_threads(None):
            return self._fit(X, y, qid, eval_set, group)

    def _fit(self, X, y, qid, eval_set, group) -> SPDRanker:
        X, y, qid = self._fit_inputs(X, y, qid, group)
        learner, lam, n_iter, sampler, C, checkpoints = self._checked_params()
        # Canonical row order: the same rows in any order give the same model.
        data, rows = None, None
        if checkpoints or sampler == "rejection":
            # The objective's sums and the rejection sampler's uniform draws follow row
            # positions: they need the rows gathered into the canonical order.
            data = RankingData.from_arrays(X, y, qid, canonical=True)
            Xk, y_index, query_ptr = prepare_X(data.X), data.y, data.query_ptr
        else:
            # The other samplers reach rows only through the pair index: index the canonical
            # order and map its positions to the rows of X as given (PairIndex.on_rows): the
            # same draws, rows and steps, without a gathered copy of X.
            Xv, yv, qv = check_ranking_arrays(X, y, qid)
            rows = canonical_order(Xv, yv, qv)
            y_index = yv if rows is None else yv[rows]
            _, query_ptr = group_by_query(qv if rows is None else qv[rows])
            Xk = prepare_X(Xv)
        n_features = int(Xk.shape[1])
        eval_set = eval_set if eval_set is not None else self.eval_set
        eval_data = None
        if eval_set is not None:
            if len(eval_set) != 3:
                raise ValueError("eval_set must be a tuple (X, y, qid)")
            eval_data = RankingData.from_arrays(*eval_set, canonical=True)
            if eval_data.n_features != n_features:
                raise ValueError(f"eval_set has {eval_data.n_features} features, training data "
                                 f"{n_features}")
        objective_fn = _ranksvm_objective() if checkpoints else None

        self.compile_time_ = _warm_up(Xk)
        t0 = time.perf_counter()
        index = build_pair_index(y_index, query_ptr)  # raises ValueError when P is empty
        if rows is not None:
            index = index.on_rows(rows)
        state = SPDState.start(n_features, self.random_state)
        train_s = time.perf_counter() - t0

        self.n_pairs_ = index.n_pairs
        self.C_equiv_ = 1.0 / (lam * index.n_pairs)
        loss = "squared_hinge" if learner == "sgd_squared_hinge" else "hinge"
        history = []
        segment_ends = checkpoints or [n_iter]
        for end in segment_ends:
            t1 = time.perf_counter()
            run_segment(Xk, index, state, end - state.n_steps, learner, lam, C, sampler,
                        self.eta, self.eta_c)
            train_s += time.perf_counter() - t1
            if not (np.isfinite(state.fstate).all() and np.isfinite(state.v).all()):
                # ROMMA's |w| never shrinks and can grow without bound on noisy pairs.
                raise FloatingPointError(
                    f"SPD {learner} weights overflowed by step {state.n_steps}: the iterate is "
                    "no longer finite; use fewer iterations (or another learner)")
            if checkpoints:
                history.append(self._checkpoint_row(state, data, Xk, eval_data, objective_fn,
                                                    loss, lam, train_s))
                if self.verbose:
                    verbose_line(_log, _checkpoint_line(learner, history[-1], n_iter))
        if self.verbose and not checkpoints:
            verbose_line(_log, f"spd_{learner}: {state.n_steps} steps, "
                               f"{state.n_updates} updates, {train_s:.3f}s")
        self.coef_ = state.coef()
        self.n_iter_ = state.n_steps
        self.n_updates_ = state.n_updates
        self.n_rejected_ = state.n_rejected
        self.fit_time_ = train_s
        self.history_ = history
        if history:
            self.objective_ = history[-1]["objective"]
        self.n_features_in_ = n_features
        return self

    def _checkpoint_row(self, state, data, Xk, eval_data, objective_fn, loss, lam, train_s):
        t = time.perf_counter()
        w = state.coef()
        eq1 = float(objective_fn(w, Xk, data.y, data.query_ptr, self.C_equiv_, loss=loss))
        row = {"iteration": state.n_steps, "objective": lam * eq1, "ranksvm_objective": eq1,
               "C_equiv": self.C_equiv_, "loss": loss, "elapsed": train_s,
               "n_updates": state.n_updates, "n_rejected": state.n_rejected}
        if eval_data is not None:
            from rankbench.metrics import mean_average_precision, ndcg_at_k
            from rankbench.objective import count_pairs

            scores = eval_data.X @ w
            n_eval_pairs = count_pairs(eval_data.y, eval_data.query_ptr)
            if n_eval_pairs:
                # Sculley Fig. 2 (right): the same lambda-scaled objective on the eval pairs.
                row["eval_objective"] = lam * float(objective_fn(
                    w, prepare_X(eval_data.X), eval_data.y, eval_data.query_ptr,
                    1.0 / (lam * n_eval_pairs), loss=loss))
            row["eval_map"] = float(mean_average_precision(eval_data.y, scores, eval_data.qid))
            row["eval_ndcg@10"] = float(ndcg_at_k(eval_data.y, scores, eval_data.qid, k=10))
        if self.keep_coef_history:
            row["coef"] = w.tolist()
        row["eval_seconds"] = time.perf_counter() - t
        return row

    # -- predict --------------------------------------------------------------------------
    def decision_function(self, X: Any) -> np.ndarray:
        """Scores <w, x> of each row of X; O(nnz(X))."""
        X = self._predict_input(X)
        return np.asarray(X @ self.coef_, dtype=np.float64).ravel()

    predict = decision_function


def _checkpoint_line(learner: str, row: dict, n_iter: int) -> str:
    parts = [f"spd_{learner}: iter {row['iteration']}/{n_iter}",
             f"objective={row['objective']:.6g}"]
    for key in ("eval_objective", "eval_map", "eval_ndcg@10"):
        if key in row:
            parts.append(f"{key}={row[key]:.4f}")
    parts.append(f"updates={row['n_updates']}")
    parts.append(f"elapsed={row['elapsed']:.3f}s")
    return " ".join(parts)


def _positive_float(name: str, value: Any) -> float:
    try:
        f = float(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a positive number, got {value!r}") from exc
    if not np.isfinite(f) or f <= 0.0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return f


def _ranksvm_objective():
    try:
        from rankbench.objective import ranksvm_objective
    except ImportError as exc:
        raise ValueError(
            "checkpoints need rankbench.objective.ranksvm_objective, which is not available"
        ) from exc
    return ranksvm_objective


def _warm_up(Xk) -> float:
    """Compile (or load from numba's cache) the kernels for Xk's types on a tiny problem.

    Returns the seconds spent when some kernel had no matching signature yet in this
    process, else 0.0, so compilation is reported apart from training time.
    """
    kernel = spd_segment_sparse if sp.issparse(Xk) else spd_segment_dense
    before = len(kernel.signatures)
    t = time.perf_counter()
    y = np.array([0, 1, 0, 1], dtype=np.int64)
    qptr = np.array([0, 4], dtype=np.int64)
    index = build_pair_index(y, qptr)
    state = SPDState.start(1, 0)
    if sp.issparse(Xk):
        # The exact index dtypes of Xk: numba specialises on them.
        data = np.ones(4)
        indices = np.zeros(4, dtype=Xk.indices.dtype)
        indptr = np.arange(5).astype(Xk.indptr.dtype)
        spd_segment_sparse(data, indices, indptr, 2, 0, 1.0, 1.0, 0, 10.0, 0,
                           *index.sampler_arrays(),
                           state.rng, state.v, state.fstate, state.counters)
    else:
        spd_segment_dense(np.ones((4, 1)), 2, 0, 1.0, 1.0, 0, 10.0, 0, *index.sampler_arrays(),
                          state.rng, state.v, state.fstate, state.counters)
    elapsed = time.perf_counter() - t
    return elapsed if len(kernel.signatures) > before else 0.0


def _factory(learner: str):
    def make(params: dict[str, Any]) -> SPDRanker:
        params = dict(params)
        if params.pop("learner", learner) != learner:
            raise ValueError(f"solver spd_{learner} fixes learner={learner!r}")
        return SPDRanker(learner=learner, **params)

    make.__doc__ = f"SPDRanker(learner={learner!r}, **params)."
    return make


for _name in LEARNERS:
    register_solver(f"spd_{_name}")(_factory(_name))
