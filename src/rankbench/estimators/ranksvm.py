"""RankSVM estimator: any optimizer x any pair oracle, scikit-learn style.

Solver names are ``<optimizer>_<oracle>`` (optimizer: newton | tron; oracle: pairs |
counting | tree | brute) plus the papers' names ``prsvm`` (= newton_pairs, Chapelle
sect. 3), ``prsvm_plus`` (= newton_counting, sect. 4) and ``tron_tree`` (Lee & Lin), and
``cutting_plane[_<oracle>]`` (hinge loss) and ``sgd_queries`` (Chapelle Alg. 3).
The non-linear route of Chapelle sect. 6.3 is ``kernel="rbf"|...``: documents are
mapped by the kernel PCA map (``KernelMap``) and any linear solver runs on the result.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.metrics.pairwise import pairwise_kernels
from threadpoolctl import threadpool_limits

from rankbench.data.ranking_data import RankingData, check_feature_matrix
from rankbench.estimators.registry import register_solver
from rankbench.objective import LOSSES, ORACLES, make_oracle, pairs_with_margin
from rankbench.objective.base import check_C
from rankbench.optim.cutting_plane import cutting_plane
from rankbench.optim.newton_cg import newton_cg
from rankbench.optim.sgd_queries import sgd_queries
from rankbench.optim.tron import tron

ALIASES = {"prsvm": "newton_pairs", "prsvm_plus": "newton_counting"}
OPTIMIZERS = ("newton", "tron", "cutting_plane", "sgd_queries")
DEFAULT_TOL = {"newton": 1e-6, "tron": 1e-3, "cutting_plane": 1e-4}
DEFAULT_MAX_ITER = {"newton": 200, "tron": 1000, "cutting_plane": 2000}
REGISTERED = ("prsvm", "prsvm_plus", "tron_tree", "newton_tree", "tron_counting", "tron_pairs",
              "newton_counting", "newton_pairs", "cutting_plane", "cutting_plane_tree",
              "sgd_queries")


def parse_solver(solver: str) -> tuple[str, str]:
    """(optimizer, oracle) of a solver name such as 'prsvm_plus', 'tron_tree', 'cutting_plane'."""
    if not isinstance(solver, str):
        raise ValueError(f"solver must be a string, got {solver!r}")
    name = ALIASES.get(solver, solver)
    if name == "sgd_queries":
        return "sgd_queries", "counting"
    if name.startswith("cutting_plane"):
        rest = name[len("cutting_plane"):]
        oracle = rest[1:] if rest.startswith("_") else ("counting" if rest == "" else None)
        if oracle in ORACLES:
            return "cutting_plane", oracle
    else:
        opt, _, oracle = name.partition("_")
        if opt in ("newton", "tron") and oracle in ORACLES:
            return opt, oracle
    raise ValueError(f"unknown RankSVM solver {solver!r}; use prsvm, prsvm_plus, tron_tree, "
                     f"cutting_plane[_<oracle>], sgd_queries or <newton|tron>_<{'|'.join(ORACLES)}>")


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


_WARM = {"done": False}


def warm_up_kernels() -> float:
    """Compile (or load from numba's cache) every oracle kernel on a tiny problem; returns seconds spent."""
    if _WARM["done"]:
        return 0.0
    t = time.perf_counter()
    X = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [1.0, 1.0]])
    y = np.array([2, 0, 1, 0])
    ptr = np.array([0, 4], dtype=np.int64)
    for name in ("pairs", "counting", "tree"):
        for loss in ("squared_hinge", "hinge"):
            o = make_oracle(name, X, y, ptr, C=1.0, loss=loss)
            o.fun(np.array([0.1, -0.2]))
            o.grad(np.array([0.1, -0.2]))
            if loss != "hinge":
                o.hess_vec(np.ones(2))
    o = make_oracle("tree", sp.csr_matrix(X), y, ptr, C=1.0)
    o.fun(np.zeros(2))
    pairs_with_margin(np.ones(2), X, y, ptr)
    _WARM["done"] = True
    return time.perf_counter() - t


class RankSVM(BaseEstimator):
    """Linear RankSVM, f(w) = 1/2||w||^2 + C sum_{(i,j) in P} loss(w.x_i - w.x_j) (Chapelle eq. 1).

    ``solver``: see ``parse_solver``; ``loss``: squared_hinge (default), huber, hinge
    (hinge needs ``cutting_plane`` or ``sgd_queries``; the registry's cutting_plane names
    default to the hinge); ``tol``: Newton decrement/objective
    (newton, default 1e-6 as the paper), relative gradient norm (tron, 1e-3), relative
    gap (cutting_plane, 1e-4); ``max_iter``: outer iterations (SGD: number of query steps,
    default 20 epochs).  ``rescaling``/``delta``: label-dependent margin or slack
    rescaling (Chapelle 6.2; counting/pairs oracles).  ``kernel``: non-linear RankSVM
    through the kernel PCA map (Chapelle 6.3).
    """

    def __init__(self, C: float = 1.0, solver: str = "prsvm_plus", loss: str = "squared_hinge",
                 tol: float | None = None, max_iter: int | None = None, max_cg_iter: int = 2000,
                 verbose: bool = False, keep_coef_history: bool = False,
                 rescaling: str | None = None, delta="gain_difference",
                 kernel: str | None = None, n_components: int | None = None,
                 gamma: float | None = None, eta0: float = 1.0, average: bool = False,
                 random_state=0):
        self.C = C
        self.solver = solver
        self.loss = loss
        self.tol = tol
        self.max_iter = max_iter
        self.max_cg_iter = max_cg_iter
        self.verbose = verbose
        self.keep_coef_history = keep_coef_history
        self.rescaling = rescaling
        self.delta = delta
        self.kernel = kernel
        self.n_components = n_components
        self.gamma = gamma
        self.eta0 = eta0
        self.average = average
        self.random_state = random_state

    def _check_params(self) -> tuple[str, str]:
        opt, oracle = parse_solver(self.solver)
        check_C(self.C)
        if self.loss not in LOSSES:
            raise ValueError(f"unknown loss {self.loss!r}; expected one of {', '.join(LOSSES)}")
        if self.loss == "hinge" and opt in ("newton", "tron"):
            raise ValueError(f"solver {self.solver!r} needs a twice differentiable loss; the hinge loss "
                             "is solved by 'cutting_plane' or 'sgd_queries'")
        if self.tol is not None and not (np.isfinite(self.tol) and self.tol > 0):
            raise ValueError(f"tol must be > 0, got {self.tol}")
        if self.max_iter is not None and (int(self.max_iter) != self.max_iter or self.max_iter < 1):
            raise ValueError(f"max_iter must be a positive integer, got {self.max_iter}")
        return opt, oracle

    def fit(self, X, y, qid=None):
        """Train on (X, y) grouped by ``qid`` (None = one query: AUC optimization)."""
        opt, oracle_name = self._check_params()
        data = RankingData.from_arrays(X, y, qid)
        self.compile_time_ = warm_up_kernels()
        t0 = time.perf_counter()
        Xt = data.X
        self.kernel_map_ = None
        if self.kernel is not None:
            self.kernel_map_ = KernelMap(kernel=self.kernel, n_components=self.n_components,
                                         gamma=self.gamma, random_state=self.random_state).fit(Xt)
            Xt = self.kernel_map_.transform(Xt)
        oracle = make_oracle(oracle_name, Xt, data.y, data.query_ptr, C=self.C, loss=self.loss,
                             rescaling=self.rescaling, delta=self.delta, levels=None)
        tol = DEFAULT_TOL.get(opt) if self.tol is None else float(self.tol)
        # the optimizers' vectors are short (d): multithreaded BLAS only adds thread wake-ups,
        # which cost 3x the whole fit on a loaded machine
        with threadpool_limits(limits=1, user_api="blas"):
            res = self._optimize(opt, oracle_name, oracle, data, Xt, tol)
        self.fit_time_ = time.perf_counter() - t0
        self._finish(res, oracle, data, Xt)
        return self

    def _optimize(self, opt, oracle_name, oracle, data, Xt, tol):
        """Run the optimizer ``opt`` on ``oracle``; returns its OptimResult."""
        common = dict(keep_coef=self.keep_coef_history, verbose=self.verbose)
        if opt == "newton":
            res = newton_cg(oracle, tol=tol, max_iter=self.max_iter or DEFAULT_MAX_ITER[opt],
                            max_cg_iter=self.max_cg_iter, **common)
        elif opt == "tron":
            res = tron(oracle, tol=tol, max_iter=self.max_iter or DEFAULT_MAX_ITER[opt],
                       max_cg_iter=self.max_cg_iter, **common)
        elif opt == "cutting_plane":
            res = cutting_plane(oracle, tol=tol, max_iter=self.max_iter or DEFAULT_MAX_ITER[opt], **common)
        else:
            query_oracles = []
            lv = oracle.levels
            for q in np.flatnonzero(lv.n_levels >= 2):
                a, b = int(data.query_ptr[q]), int(data.query_ptr[q + 1])
                query_oracles.append(make_oracle(oracle_name, Xt[a:b], data.y[a:b], None, C=self.C,
                                                 loss=self.loss, rescaling=self.rescaling, delta=self.delta))
            n_steps = self.max_iter or 20 * max(1, len(query_oracles))
            res = sgd_queries(query_oracles, oracle, n_iter=int(n_steps), eta0=self.eta0,
                              average=self.average, seed=self.random_state, **common)
        return res

    def _finish(self, res, oracle, data, Xt):
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
        self.n_features_in_ = data.n_features
        self.n_pairs_ = oracle.n_pairs()
        n_pairs, n_ge1 = pairs_with_margin(res.w, Xt, data.y, data.query_ptr)
        # share of pairs with margin >= 1 = share of zero dual variables of the L2-loss dual
        self.zero_dual_share_ = n_ge1 / n_pairs if n_pairs else float("nan")
        opt, oracle_name = parse_solver(self.solver)
        # solver facts the harness copies into a record's "extra"
        self.extra_ = {"zero_dual_share": self.zero_dual_share_, "n_pairs": int(n_pairs),
                       "n_pairs_margin_ge_1": int(n_ge1), "converged": self.converged_,
                       "stop_message": res.message, "optimizer": opt, "oracle": oracle_name}

    def decision_function(self, X):
        """Scores w.x (after the kernel map when ``kernel`` is set); O(nnz(X))."""
        if not hasattr(self, "coef_"):
            raise ValueError("RankSVM is not fitted: call fit(X, y, qid) first")
        X = check_feature_matrix(X, self.n_features_in_)
        if self.kernel_map_ is not None:
            X = self.kernel_map_.transform(X)
        return np.asarray(X @ self.coef_).ravel()

    def predict(self, X):
        """Same as decision_function (ranking scores)."""
        return self.decision_function(X)


def _factory(name: str):
    def make(params: dict) -> RankSVM:
        params = dict(params)
        params.pop("solver", None)
        if name.startswith("cutting_plane"):
            params.setdefault("loss", "hinge")  # the only loss the method solves
        model = RankSVM(solver=name, **params)
        model._check_params()  # a bad config fails when it is built, not after data loading
        return model

    make.__doc__ = f"RankSVM with solver={name!r}."
    return make


for _name in REGISTERED:
    register_solver(_name)(_factory(_name))
