"""RankSVM estimator: any registered optimizer x any pair oracle x any loss, scikit-learn style.

``solver`` names an optimizer x oracle pairing, ``<optimizer>_<oracle>`` (optimizers from
``rankbench.optim.registry``: newton, tron, cutting_plane, sgd_queries, lbfgs, ...; oracles:
pairs | counting | tree | brute), or a paper's name from ``ALIASES``: ``prsvm`` (=
newton_pairs, Chapelle sect. 3), ``prsvm_plus`` (= newton_counting, sect. 4); ``tron_tree`` is
Lee & Lin's.  ``loss`` names a loss of ``rankbench.objective.LOSSES`` (or is a ``PairLoss``).
``check_params`` refuses a combination that cannot run, naming what would.  Every pairing
is registered as a solver of the harness (``register_ranksvm_solvers``).
The non-linear route of Chapelle sect. 6.3 is ``kernel="rbf"|...``: documents are
mapped by the kernel PCA map (``rankbench.estimators.kernel_map.KernelMap``) and any linear
solver runs on the result.  ``ranksvm_path`` fits a grid of C values in increasing order, each
from the previous solution, to the accuracy of cold fits (``RankSVMPath``).
"""

from __future__ import annotations

import functools
import inspect
import time
import warnings
from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp

from rankbench.data.ranking_data import RankingData
from rankbench.estimators.base import EstimatorBase, RankerMixin, convergence_warning
from rankbench.estimators.registry import register_solver
from rankbench.objective import ORACLES, margin_pairs
from rankbench.objective.base import check_C
from rankbench.objective.readiness import check_representable, warm_up_kernels  # noqa: F401 (API)
from rankbench.optim.newton_cg import WARM, WarmStart
from rankbench.optim.registry import (
    check_pairing,
    check_solver_options,
    get_optimizer,
    ranksvm_solvers,
    resolve_solver,
)
from rankbench.parallel import numba_threads, one_blas_thread, resolve_n_jobs

# the kernel PCA map's parameters, deprecated on RankSVM: Pipeline(KernelMap(...), RankSVM())
KERNEL_PARAMS = ("kernel", "n_components", "gamma")


class RankSVM(RankerMixin, EstimatorBase):
    """Linear RankSVM, f(w) = 1/2||w||^2 + C sum_{(i,j) in P} loss(w.x_i - w.x_j) (Chapelle eq. 1).

    ``solver``: ``<optimizer>_<oracle>`` or an alias (module docstring); ``loss``: a name of
    ``rankbench.objective.LOSSES`` (squared_hinge (default), huber, hinge, logistic) or a
    ``PairLoss``: the counting and tree oracles evaluate a smooth loss through its piecewise
    approximation (then ``extra_["loss_evaluated"]`` names it), optimizers that need a Hessian
    refuse the hinge (``check_params``); ``tol``: the optimizer's stopping rule
    (``rankbench.optim.registry``; None = its default, 1e-6 relative objective accuracy for
    every exact optimizer: Newton decrement or ||g||^2/2 certificate for newton and tron, the
    certificate for lbfgs, the gap for cutting_plane; sgd_queries and sgd_pairs take none; see
    ``rankbench.optim.accuracy``).  An unconverged fit sets ``converged_ = False`` and warns
    (``ConvergenceWarning``); ``convergence_`` states the achieved accuracy; ``max_iter``: outer
    iterations (SGD: number of query steps, default 20 epochs; sgd_pairs: pair steps).
    ``solver_options``: the optimizer's own tuning options, a mapping validated against what it
    declares (``rankbench.optim.registry.Optimizer.options``): e.g. ``max_cg_iter``,
    ``precondition``, ``confirm_rtol`` (newton, tron), ``cg_rtol``, ``precond_mix``,
    ``cg_history`` (tron: one history row per CG iteration besides the outer ones, Lee & Lin
    suppl. Fig. (II)), ``eta0``, ``average``, ``step`` (sgd_queries: ``"documented"`` or
    ``"paper"``, Chapelle Alg. 2 / 3's literal 1/t rate), ``memory`` (lbfgs); an option the
    chosen optimizer does not take is a ValueError naming the optimizers that take it.
    ``rescaling`` (None | "margin" | "slack") with the
    pair cost ``delta`` (Chapelle 6.2; None = "gain_difference"): a label-pair cost
    ("gain_difference", "label_difference", a callable or a K x K matrix; brute, pairs, counting),
    the position-based "dcg_swap" (DCG difference of swapping the two documents at their ideal
    positions; brute, pairs) or a per-document delta_ij = (delta_i - delta_j)^2 ("gain",
    "ideal_dcg"; margin rescaling on every oracle, slack on brute and pairs); an oracle that
    cannot apply it is refused by ``check_params`` naming those that can.  ``random_state``: the
    stochastic optimizers' seed.  ``n_jobs``: numba threads
    of the oracles' kernels (None: numba's current count, all unless a runner worker or launcher
    job set its share; -1: all; ``rankbench.parallel``); the weights do not depend on it.
    ``n_shards``: split the queries
    into that many shards held by Ray actors (``rankbench.distributed.ShardedOracle``; tron,
    newton, lbfgs and cutting_plane), joining the Ray cluster at ``ray_address`` ("auto", "host:port")
    when Ray is not initialized (None = a new local cluster for the fit).
    ``kernel``, ``n_components``, ``gamma``: deprecated (a FutureWarning; removed in 0.3):
    non-linear RankSVM (Chapelle 6.3) is ``Pipeline([("map", KernelMap(kernel=..., ...)),
    ("rank", RankSVM())])``.
    """

    def __init__(self, C: float = 1.0, solver: str = "prsvm_plus", loss="squared_hinge",
                 tol: float | None = None, max_iter: int | None = None,
                 solver_options: dict | None = None, verbose: bool = False,
                 keep_coef_history: bool = False, rescaling: str | None = None, delta=None,
                 random_state=0, n_jobs: int | None = None, n_shards: int | None = None,
                 ray_address: str | None = None, kernel: str | None = None,
                 n_components: int | None = None, gamma: float | None = None, **misplaced):
        if misplaced:  # an optimizer's option passed as a parameter: say where it goes
            raise TypeError(misplaced_options_message(solver, misplaced))
        self.C = C
        self.solver = solver
        self.loss = loss
        self.tol = tol
        self.max_iter = max_iter
        self.solver_options = solver_options
        self.verbose = verbose
        self.keep_coef_history = keep_coef_history
        self.rescaling = rescaling
        self.delta = delta
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.n_shards = n_shards
        self.ray_address = ray_address
        self.kernel = kernel
        self.n_components = n_components
        self.gamma = gamma

    # the signature scikit-learn reads (get_params, clone, its checks): the parameters alone;
    # ``**misplaced`` only catches an optimizer option passed as a parameter, to say where it goes
    __init__.__signature__ = inspect.Signature(
        [p for p in inspect.signature(__init__).parameters.values() if p.kind != p.VAR_KEYWORD])

    def check_params(self) -> None:
        """ValueError unless solver x loss x parameters can run: unknown solver or loss, an oracle
        that cannot evaluate the loss or an optimizer needing what the oracle cannot give for it
        (the message names the oracles / optimizers that would work), C, tol, max_iter, rescaling."""
        self._resolve()

    def _resolve(self):
        """(optimizer, oracle class, loss form the oracle evaluates) after every check."""
        optimizer, oracle = resolve_solver(self.solver)
        check_C(self.C)
        form = check_pairing(optimizer, oracle, self.loss)
        check_solver_options(optimizer, self.solver_options)
        ORACLES[oracle].check_rescaling(self.rescaling, self.delta)
        if self.tol is not None:
            if optimizer.tol is None:
                raise ValueError(f"optimizer {optimizer.name!r} takes no tol: {optimizer.stopping_rule}")
            if not (np.isfinite(self.tol) and self.tol > 0):
                raise ValueError(f"tol must be > 0, got {self.tol}")
        if self.max_iter is not None and (int(self.max_iter) != self.max_iter or self.max_iter < 1):
            raise ValueError(f"max_iter must be a positive integer, got {self.max_iter}")
        resolve_n_jobs(self.n_jobs)
        if self.n_shards is not None:
            from rankbench.distributed import SHARDABLE_OPTIMIZERS

            if (isinstance(self.n_shards, bool) or not isinstance(self.n_shards, int | np.integer)
                    or self.n_shards < 1):
                raise ValueError(f"n_shards must be a positive integer or None, got {self.n_shards!r}")
            if optimizer.name not in SHARDABLE_OPTIMIZERS:
                raise ValueError(f"n_shards: optimizer {optimizer.name!r} does not run on query shards; "
                                 f"use one of {', '.join(SHARDABLE_OPTIMIZERS)}")
        return optimizer, ORACLES[oracle], form

    def fit(self, X, y=None, qid=None, group=None):
        """Train on (X, y) grouped by ``qid`` (or LightGBM-style query sizes ``group``; neither =
        one query: AUC optimization), or on a ``rankbench.data.sharded.ShardedDataset`` (``fit(ds)``:
        Ray actors load its shards where they run, ``n_shards`` of them, None = one per shard)."""
        from rankbench.data.sharded import ShardedDataset

        if isinstance(X, ShardedDataset):
            if y is not None or qid is not None or group is not None:
                raise ValueError("fit(ShardedDataset) takes no y, qid or group: the shards hold them")
            from rankbench.distributed import fit_sharded

            return fit_sharded(self, X, self.n_shards)
        X, y, qid = self._fit_inputs(X, y, qid, group)
        optimizer, oracle_cls, _ = self._resolve()
        if self.kernel is not None:
            warnings.warn("RankSVM(kernel=..., n_components=..., gamma=...) is deprecated and will "
                          "be removed in 0.3: use Pipeline([('map', KernelMap(kernel=..., "
                          "n_components=..., gamma=...)), ('rank', RankSVM())])", FutureWarning,
                          stacklevel=2)
        # one thread count for the whole fit (grouping, oracle, optimizer): n_jobs=None takes the
        # cores idle now, so no kernel of this fit waits for a core another process holds
        with numba_threads(self.n_jobs) as n_threads:
            data = RankingData.from_arrays(X, y, qid)
            self.compile_time_ = warm_up_kernels((oracle_cls.name,),
                                                 sparse=sp.issparse(data.X) and self.kernel is None)
            return self._fit_data(data, optimizer, oracle_cls, threads=n_threads)

    def _optimizer_kwargs(self, optimizer) -> dict:
        """Keyword arguments of ``optimizer.function`` from the estimator's parameters."""
        kwargs = {"keep_coef": self.keep_coef_history, "verbose": self.verbose}
        if "random_state" in optimizer.parameters:
            kwargs["random_state"] = self.random_state
        kwargs.update(check_solver_options(optimizer, self.solver_options))
        if optimizer.tol is not None:
            kwargs["tol"] = optimizer.tol if self.tol is None else float(self.tol)
        if self.max_iter is not None:
            kwargs["max_iter"] = int(self.max_iter)
        return kwargs

    def _fit_data(self, data: RankingData, optimizer, oracle_cls, w0: np.ndarray | None = None,
                  warm: WarmStart | None = None, shared: dict | None = None,
                  threads: int | None = None):
        """Fit on checked data from ``w0`` (None: the optimizer's own start, w = 0), newton_cg
        following the warm-start policy ``warm`` (None: the cold algorithm).
        ``shared`` (a dict, or None): what fits of the same data reuse, the oracle's label ranks
        (``shared["levels"]``, a ``QueryLevels``), set by the first fit that gets the dict;
        ``fit_time_`` counts the kernel map, the oracle's construction and the optimizer run;
        ``n_threads_`` is the numba threads they ran on: ``threads`` (the count ``fit`` resolved
        for its grouping) or else ``n_jobs`` resolved now."""
        with numba_threads(self.n_jobs if threads is None else threads) as n_threads:
            self.n_threads_ = n_threads
            return self._fit_data_threads(data, optimizer, oracle_cls, w0, warm, shared)

    def _fit_data_threads(self, data, optimizer, oracle_cls, w0, warm, shared):
        t0 = time.perf_counter()
        Xt = data.X
        self.kernel_map_ = None
        if self.kernel is not None:
            from rankbench.estimators.kernel_map import KernelMap

            self.kernel_map_ = KernelMap(kernel=self.kernel, n_components=self.n_components,
                                         gamma=self.gamma, random_state=self.random_state).fit(Xt)
            Xt = self.kernel_map_.transform(Xt)
        if self.n_shards is None:
            levels = None if shared is None else shared.get("levels")
            # the stats of from_arrays' check when Xt is the array it checked: one read less
            # (a registered oracle class with an __init__ of its own may not take them)
            extra = {"x_stats": data.checked_stats(Xt)} if _takes_x_stats(oracle_cls) else {}
            oracle = oracle_cls(Xt, data.y, data.query_ptr, C=self.C, loss=self.loss,
                                rescaling=self.rescaling, delta=self.delta, levels=levels,
                                **extra)
            if shared is not None:
                shared["levels"] = oracle.levels
        else:
            from rankbench.distributed import ShardedOracle

            oracle = ShardedOracle(Xt, data.y, data.query_ptr, C=self.C, loss=self.loss,
                                   oracle=oracle_cls.name, n_shards=int(self.n_shards),
                                   address=self.ray_address, rescaling=self.rescaling, delta=self.delta)
        try:
            check_representable(oracle, Xt)
            kwargs = self._optimizer_kwargs(optimizer)
            if w0 is not None:
                kwargs["w0"] = w0
            if warm is not None:
                kwargs["warm"] = warm
            # BLAS on one thread (parallel.one_blas_thread); the kernels use n_jobs numba threads
            with one_blas_thread():
                res = optimizer.function(oracle, **kwargs)
            self.fit_time_ = time.perf_counter() - t0
            self._finish(res, oracle, data, optimizer.name)
        finally:
            if self.n_shards is not None:
                oracle.close()
        return self

    def _finish(self, res, oracle, data, optimizer: str):
        """Fitted attributes from an OptimResult; refuses non-finite weights."""
        if not np.all(np.isfinite(res.w)):
            raise FloatingPointError(f"RankSVM solver {self.solver!r} diverged (non-finite weights)")
        self.coef_ = res.w
        self.objective_ = float(res.f)
        self.n_iter_ = int(res.n_iter)
        self.n_cg_iter_ = int(res.n_cg_iter)
        self.history_ = res.history
        self.converged_ = bool(res.converged)
        self.stop_message_ = res.message
        # the achieved accuracy as the optimizer states it (the runner records it as
        # train.convergence): relative gradient norm, certificate, Newton decrement or gap
        self.convergence_ = {"converged": self.converged_, "message": res.message,
                             "n_iter": int(res.n_iter), **dict(res.accuracy or {})}
        if not self.converged_ and get_optimizer(optimizer).tol is not None:  # a stopping rule
            warnings.warn(self._convergence_advice(res), convergence_warning(), stacklevel=3)
        self.n_features_in_ = oracle.n_features if data is None else data.n_features
        self.n_pairs_ = oracle.n_pairs()
        if hasattr(oracle, "pairs_with_margin"):  # a sharded oracle: the shards count their pairs
            n_pairs, n_ge1 = oracle.pairs_with_margin(res.w)
        else:
            n_pairs, n_ge1 = margin_pairs(oracle, res.w)
        # share of pairs with margin >= 1 = share of zero dual variables of the L2-loss dual
        self.zero_dual_share_ = n_ge1 / n_pairs if n_pairs else float("nan")
        # solver facts the harness copies into a record's "extra"
        self.extra_ = {"zero_dual_share": self.zero_dual_share_, "n_pairs": int(n_pairs),
                       "n_pairs_margin_ge_1": int(n_ge1), "converged": self.converged_,
                       "stop_message": res.message, "optimizer": optimizer, "oracle": oracle.name}
        if self.n_shards is not None:
            self.extra_["n_shards"] = int(oracle.n_shards)
        if oracle.loss is not oracle.requested_loss:
            # objective_ is then the approximation's: say so in the record
            self.extra_["loss_evaluated"] = oracle.loss.name

    def _convergence_advice(self, res) -> str:
        """What a user should change when the optimizer stopped before its stopping rule held."""
        from rankbench.optim.accuracy import stop_advice

        acc = res.accuracy or {}
        reached = ", ".join(f"{k} {acc[k]:.3g}" for k in ("relative_decrement", "relative_certificate",
                                                           "relative_gap") if acc.get(k) is not None)
        return (f"RankSVM solver {self.solver!r} (C={self.C:g}) did not reach its stopping rule "
                f"({acc.get('stopping_rule', '?')} <= tol={acc.get('tol')}) after {res.n_iter} "
                f"iterations: {res.message}; reached {reached or 'unknown'}. Its objective may be "
                f"off the optimum by more than tol (relative): {stop_advice(res.message, acc)}.")

    def decision_function(self, X):
        """Scores w.x (after the kernel map when ``kernel`` is set); O(nnz(X))."""
        X = self._predict_input(X)
        if self.kernel_map_ is not None:
            X = self.kernel_map_.transform(X)
        return np.asarray(X @ self.coef_).ravel()

    def predict(self, X):
        """Same as decision_function (ranking scores)."""
        return self.decision_function(X)


@dataclass
class RankSVMPath:
    """What ``ranksvm_path`` returns: one entry per C, in increasing C.

    ``coefs[k]`` is the solution at ``Cs[k]`` (shape (n_Cs, n_features), as scikit-learn's
    logistic-regression path); ``fit_time[k]`` the seconds of that C alone (its oracle and
    its optimizer run from ``coefs[k - 1]``: the incremental time of a warm-started path);
    ``models[k]`` the fitted ``RankSVM(C=Cs[k], **params)`` (every fitted attribute of a cold
    fit, ``fit_time_`` being the incremental time).
    """

    Cs: np.ndarray
    coefs: np.ndarray
    objective: np.ndarray
    n_iter: np.ndarray
    n_cg_iter: np.ndarray
    fit_time: np.ndarray
    cpu_time: np.ndarray  # process CPU seconds of each C, like fit_time
    converged: np.ndarray
    convergence: list[dict]
    warm_start: bool
    compile_time: float
    models: list[RankSVM] = field(repr=False)

    @property
    def total_time(self) -> float:
        """Seconds of the whole path (numba compilation excluded)."""
        return float(self.fit_time.sum())


@functools.cache
def _takes_x_stats(oracle_cls) -> bool:
    """Whether the oracle class's constructor takes ``x_stats`` (PairOracle's does; a registered
    class may write its own ``__init__`` without it, or with ``**kwargs``)."""
    params = inspect.signature(oracle_cls.__init__).parameters
    return "x_stats" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def check_Cs(Cs) -> np.ndarray:
    """The C values of a path as a sorted float array; ValueError when empty, not 1-d, not a
    finite positive number, or repeated."""
    if Cs is None or isinstance(Cs, str):
        raise ValueError(f"Cs must be a non-empty list of C values > 0, got {Cs!r}")
    try:
        arr = np.asarray(Cs, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"Cs must be a non-empty list of C values > 0, got {Cs!r}") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"Cs must be a non-empty 1-d list of C values > 0, got shape {arr.shape}")
    bad = ~np.isfinite(arr) | (arr <= 0)
    if bad.any():
        where = np.flatnonzero(bad)
        raise ValueError(f"Cs must be finite and > 0; got {arr[where][:5].tolist()} at position(s) "
                         f"{where[:5].tolist()}")
    out = np.sort(arr)
    dup = out[1:][np.diff(out) == 0]
    if dup.size:
        raise ValueError(f"Cs holds the value(s) {np.unique(dup).tolist()} more than once")
    return out


def ranksvm_path(X, y, qid=None, Cs=None, *, group=None, warm_start: bool = True,
                 newton_policy: WarmStart | None = WARM, **params) -> RankSVMPath:
    """Fit ``RankSVM(C=c, **params)`` for every c of ``Cs`` in increasing order, each C started
    from the previous C's solution (scikit-learn's ``*_path`` convention; ``lasso_path``,
    the logistic-regression path).

    ``Cs`` is sorted (increasing; duplicates, non-finite or non-positive values: ValueError).
    Every C is fitted to the same accuracy as a cold ``RankSVM(C=c, **params).fit``: the same
    optimizer with the same stopping rule and ``tol`` (Newton decrement or ||g||^2/2 certificate
    <= tol |f| for newton and tron, the certificate for lbfgs, the gap for cutting_plane;
    ``rankbench.optim.accuracy``), each evaluated on C's own objective at the returned point,
    so only the way there changes.  The start for C_k is w(C_{k-1}) itself (scikit-learn does
    the same; no rescaling).  Solvers whose optimizer takes no starting point (sgd_queries,
    sgd_pairs) are refused unless ``warm_start=False``, which fits every C cold (from w = 0).
    ``kernel`` is refused: map the documents once with ``KernelMap`` and pass the result.
    The data are checked and converted once, and the pair oracles' label ranks (``QueryLevels``)
    computed once, by the first C's oracle; ``fit_time`` is per C (``RankSVMPath``).

    ``newton_policy`` (newton optimizer: prsvm, prsvm_plus, newton_<oracle>; others ignore it):
    the ``rankbench.optim.newton_cg.WarmStart`` policy every warm-started C (all but the first)
    runs with, its ``grad_origin`` (||grad f(0)||) scaled by C from the first fit's start.  The
    default, all parts on: the CG tolerance of each Newton step is the one a cold fit would
    use at the same gradient norm (the paper's rule, relative to the gradient at the start,
    keeps it at 0.1 after a warm start), the confirming CG solve goes on from the loose one,
    the certificate is tried at the loose step before the confirming solve, and CG keeps its
    residuals orthogonal (the steps of exact-arithmetic CG, fewer on the ill-conditioned
    systems of large C).  The stopping rule and ``tol`` are the cold fit's; only the CG work
    changes: on Chapelle Fig. 1's grid (OHSUMED fold 1) the path needs fewer CG steps than the
    seven cold fits together (tests/test_ranksvm_path.py).  The models of those C record
    ``extra_["warm_newton"] = True``.  None: the cold fit's ``newton_cg`` from the previous
    solution.
    """
    if "C" in params:
        raise ValueError("ranksvm_path takes the C values as Cs, not C")
    if params.get("kernel") is not None:
        raise ValueError("ranksvm_path does not take kernel: transform X once with "
                         "KernelMap(...).fit_transform(X) and pass the result")
    Cs = check_Cs(Cs)
    proto = RankSVM(C=float(Cs[0]), **params)
    optimizer, oracle_cls, _ = proto._resolve()
    check_path_start(optimizer, proto.solver, warm_start)
    X, y, qid = proto._fit_inputs(X, y, qid, group)
    with numba_threads(proto.n_jobs):  # each C's fit resolves n_jobs again when it starts
        data = RankingData.from_arrays(X, y, qid)
        compile_time = warm_up_kernels((oracle_cls.name,), sparse=sp.issparse(data.X))
    models: list[RankSVM] = []
    cpu = []
    w = None
    g_origin = np.nan
    shared: dict = {}  # the first C's oracle's label ranks and BLAS controller, for all the others
    for k, c in enumerate(Cs):
        cpu0 = time.process_time()
        m = RankSVM(**{**proto.get_params(), "C": float(c)})
        if hasattr(proto, "feature_names_in_"):
            m.feature_names_in_ = proto.feature_names_in_
        m.compile_time_ = compile_time if k == 0 else 0.0
        policy = None
        if warm_start and newton_policy is not None and k > 0 and "warm" in optimizer.parameters:
            # ||grad f_C(0)|| = C ||grad L(0)||; the first fit began at 0
            policy = replace(newton_policy, grad_origin=g_origin * float(c / Cs[0])
                             if np.isfinite(g_origin) else newton_policy.grad_origin)
        m._fit_data(data, optimizer, oracle_cls, w0=w if warm_start else None, warm=policy,
                    shared=shared)
        if policy is not None:
            m.extra_["warm_newton"] = True
        cpu.append(time.process_time() - cpu0)
        if k == 0 and m.history_:
            g_origin = float(m.history_[0].get("grad_norm", np.nan))
        w = m.coef_
        models.append(m)
    return RankSVMPath(
        Cs=Cs, coefs=np.array([m.coef_ for m in models]),
        objective=np.array([m.objective_ for m in models]),
        n_iter=np.array([m.n_iter_ for m in models]),
        n_cg_iter=np.array([m.n_cg_iter_ for m in models]),
        fit_time=np.array([m.fit_time_ for m in models]), cpu_time=np.array(cpu),
        converged=np.array([m.converged_ for m in models]),
        convergence=[m.convergence_ for m in models], warm_start=bool(warm_start),
        compile_time=compile_time, models=models)


def check_path_start(optimizer, solver: str, warm_start: bool = True) -> None:
    """ValueError when a warm-started path cannot start each C from the previous solution."""
    if warm_start and "w0" not in optimizer.parameters:
        raise ValueError(f"solver {solver!r}: optimizer {optimizer.name!r} takes no starting "
                         "point, so a path cannot be warm-started; pass warm_start=False for cold "
                         "fits of every C (or use cold per-C runs)")


def split_params(params: dict) -> tuple[dict, dict | None]:
    """(RankSVM parameters, solver_options) of a flat parameter set (a config's spelling: the
    optimizer's options beside the estimator's, ``solver_options`` merged in); None values
    mean the default and are left out of the options; ValueError for a key that is neither a
    RankSVM parameter nor any optimizer's option (naming the closest)."""
    from rankbench.optim.registry import optimizers
    from rankbench.plugins import closest

    own = set(RankSVM._get_param_names())
    est = {k: v for k, v in params.items() if k in own and k not in ("solver", "solver_options")}
    options = {k: v for k, v in (params.get("solver_options") or {}).items() if v is not None}
    rest = {k: v for k, v in params.items() if k not in own}
    known_options = {k for o in optimizers().values() for k in o.options}
    unknown = sorted(k for k in rest if k not in known_options)
    if unknown:
        names = sorted(own | known_options)
        raise ValueError("unknown RankSVM parameter(s) " + ", ".join(
            f"{k!r}{closest(k, names)}" for k in unknown) + f"; parameters: {', '.join(sorted(own))}; "
            f"optimizer options: {', '.join(sorted(known_options))}")
    options.update({k: v for k, v in rest.items() if v is not None})
    return est, options or None


def misplaced_options_message(solver, options: dict) -> str:
    """Why RankSVM(**options) is refused: each key is an optimizer option (it goes in
    ``solver_options``, and only for the solvers whose optimizer takes it) or unknown."""
    from rankbench.optim.registry import option_owners
    from rankbench.plugins import closest

    try:
        optimizer = resolve_solver(solver)[0].name
    except ValueError:
        optimizer = None
    parts = []
    for k, v in options.items():
        owners = option_owners(k)
        if not owners:
            names = RankSVM._get_param_names()
            parts.append(f"RankSVM has no parameter {k!r}{closest(k, names)}")
        elif optimizer in owners:
            parts.append(f"{k!r} is an option of optimizer {optimizer!r}: pass "
                         f"solver_options={{{k!r}: {v!r}}}")
        else:
            solvers = ", ".join(f"{o}_<oracle>" for o in owners)
            parts.append(f"{k!r} does not apply to solver {solver!r} (optimizer {optimizer!r}); it "
                         f"is an option of the optimizer(s) {', '.join(owners)} (solvers {solvers}), "
                         f"set with solver_options={{{k!r}: ...}}")
    return "; ".join(parts)


def flat_params(params: dict) -> dict:
    """The one spelling of a RankSVM parameter set that names a run: ``solver_options``' keys
    beside the estimator's parameters (as the configs write them)."""
    out = {k: v for k, v in params.items() if k != "solver_options"}
    for k, v in (params.get("solver_options") or {}).items():
        if k in out and out[k] != v:
            raise ValueError(f"option {k!r} given twice, as {out[k]!r} and in solver_options as {v!r}")
        out[k] = v
    return out


def _fit_path(name: str, default_loss: str, params: dict, Cs, X, y, qid):
    """The warm-started path of solver ``name`` over ``Cs``: one (model, FitReport) per C."""
    est, options = split_params({k: v for k, v in params.items() if k != "C"})
    est.setdefault("loss", default_loss)
    t0 = time.perf_counter()
    path = ranksvm_path(X, y, qid, Cs, solver=name, solver_options=options, **est)
    wall = time.perf_counter() - t0
    out = []
    for k, m in enumerate(path.models):
        # each C's own (incremental) time on the path
        own = m.fit_report()
        report = replace(own, wall_total=m.fit_time_, cpu_time=float(path.cpu_time[k]),
                         train_extra={**own.train_extra, "warm_start": True,
                                      "path_wall_s": wall,
                                      "warm_start_from_C": float(path.Cs[k - 1]) if k else None})
        out.append((m, report))
    return out


def _check_path(name: str, params: dict, Cs) -> list[str]:
    problems = []
    try:
        check_Cs(Cs)
    except ValueError as exc:
        problems.append(f"the path's C values: {exc}")
    try:
        optimizer, _ = resolve_solver(name)
        check_path_start(optimizer, name)
    except ValueError as exc:
        problems.append(str(exc))
    return problems


def _register(name: str, default_loss: str) -> None:
    def build(params: dict) -> RankSVM:
        est, options = split_params(params)
        est.setdefault("loss", default_loss)  # the loss the optimizer is made for
        return RankSVM(solver=name, solver_options=options, **est)

    build.__doc__ = f"RankSVM with solver={name!r}."
    register_solver(name, normalize=flat_params,
                    path=functools.partial(_fit_path, name, default_loss),
                    check_path=functools.partial(_check_path, name))(build)


def register_ranksvm_solvers() -> None:
    """Register every RankSVM solver name (optimizer x oracle pairings and ALIASES) with the
    solver registry; call again after registering an optimizer or oracle from outside rankbench."""
    for name, (opt, _) in ranksvm_solvers().items():
        if name not in _REGISTERED:
            _register(name, get_optimizer(opt).default_loss)
            _REGISTERED.add(name)


_REGISTERED: set[str] = set()


register_ranksvm_solvers()


def __getattr__(name: str):
    if name == "KernelMap":  # its home is rankbench.estimators.kernel_map (imports scikit-learn)
        from rankbench.estimators.kernel_map import KernelMap

        return KernelMap
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
