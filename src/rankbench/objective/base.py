"""PairOracle: f(w) = 1/2 ||w||^2 + C * sum_{(i,j) in P} loss(w.x_i - w.x_j), its gradient and Hv.

An oracle works in score space: it turns the scores z = X w into the pairwise loss
L(z), dL/dz and products with the (generalized) Hessian of L in z; the base class
adds the X and X^T products and the regularizer.  ``fun(w)`` must be called before
``grad(w)`` and ``hess_vec(v)`` at the same w (as in LIBLINEAR's function objects):
it computes the scores, the sort and the per-document counts those reuse.

An oracle class declares the loss families it evaluates (``loss_families``); what it can
answer for a given loss (``methods``: fun, subgrad, grad, hess_vec, hess_diag) follows from
the loss, so an optimizer x oracle x loss combination is checked before any data is read.

An oracle class registers itself with ``@register_oracle`` (it is then ``ORACLES[cls.name]`` and
every optimizer pairs with it as the solver ``<optimizer>_<name>``); the modules of
``rankbench.objective`` are imported by the package (``rankbench.plugins.import_submodules``), so
a new oracle is one new module.  ``warm_up(sparse)`` compiles what a class runs, on a toy problem.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from rankbench.data.ranking_data import FeatureStats, check_feature_matrix_stats, check_labels
from rankbench.objective.losses import (
    DOCUMENT_DELTAS,
    PairLoss,
    check_rescaling_name,
    delta_kind,
    get_loss,
    pair_costs,
    rescaling_matrices,
)
from rankbench.objective.products import XProducts
from rankbench.objective.query_levels import QueryLevels


def check_problem(X, y, query_ptr) -> tuple[object, np.ndarray, np.ndarray]:
    """Validate (X, y, query_ptr) before any kernel runs; ValueError naming the problem."""
    return check_problem_stats(X, y, query_ptr)[:3]


def check_problem_stats(X, y, query_ptr, known: FeatureStats | None = None
                        ) -> tuple[object, np.ndarray, np.ndarray, FeatureStats]:
    """``check_problem`` and the FeatureStats of its read of X (max |x|, column norms); with
    ``known`` (an earlier check's stats of this very X) X is not read again."""
    X, stats = check_feature_matrix_stats(X, known=known)
    n = X.shape[0]
    y = check_labels(y, n)
    if query_ptr is None:
        query_ptr = np.array([0, n], dtype=np.int64)
    query_ptr = np.asarray(query_ptr)
    if query_ptr.ndim != 1 or query_ptr.shape[0] < 2 or query_ptr.dtype.kind not in "iu":
        raise ValueError("query_ptr must be a 1-D integer array of query offsets (n_queries + 1 entries)")
    query_ptr = query_ptr.astype(np.int64)
    if query_ptr[0] != 0 or query_ptr[-1] != n:
        raise ValueError(f"query_ptr must start at 0 and end at n_docs={n}, got {query_ptr[0]}..{query_ptr[-1]}")
    if np.any(np.diff(query_ptr) < 0):
        raise ValueError("query_ptr must be non-decreasing")
    return X, y, query_ptr, stats


def check_C(C) -> float:
    """C as a float; ValueError unless finite and > 0."""
    try:
        C = float(C)
    except (TypeError, ValueError):
        raise ValueError(f"C must be a positive number, got {C!r}") from None
    if not np.isfinite(C) or C <= 0:
        raise ValueError(f"C must be finite and > 0, got {C}")
    return C


# every registered oracle class by name, in registration order (the package's own first)
ORACLES: dict[str, type[PairOracle]] = {}


def register_oracle(cls: type[PairOracle]) -> type[PairOracle]:
    """Class decorator: register ``cls`` in ``ORACLES`` under ``cls.name``; ValueError when the
    name is not an identifier or another class holds it."""
    name = cls.name
    if not isinstance(name, str) or not name.isidentifier() or name == PairOracle.name:
        raise ValueError(f"oracle class {cls.__qualname__}: name {name!r} must be an identifier "
                         f"other than {PairOracle.name!r}")
    old = ORACLES.get(name)
    if old is not None and (old.__module__, old.__qualname__) != (cls.__module__, cls.__qualname__):
        raise ValueError(f"oracle {name!r} registered twice: {old.__module__}.{old.__qualname__} "
                         f"and {cls.__module__}.{cls.__qualname__}")
    ORACLES[name] = cls
    return cls


# the toy problem every oracle class compiles its kernels on (``PairOracle.warm_up``)
_TOY_X = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [1.0, 1.0]])
_TOY_Y = np.array([2, 0, 1, 0])
_TOY_PTR = np.array([0, 4], dtype=np.int64)


class PairOracle:
    """Base class of the pair oracles; subclasses implement ``_loss_grad_z`` and ``_hess_z``."""

    name = "base"
    # whether the class runs numba kernels of its own, which ``warm_up_kernels`` compiles ahead
    # (brute is plain numpy)
    numba_kernels = True
    # (rescaling, kind of pair cost) pairs this oracle evaluates (Chapelle sect. 6.2): label-pair
    # costs by counting per pair of levels; ("margin", "document") by shifting every score by
    # -delta_i (any oracle with one margin); position costs and per-document slack need every pair
    rescalings: frozenset[tuple[str, str]] = frozenset({("margin", "label"), ("slack", "label")})
    # brute and pairs evaluate position / document costs pair by pair (per_pair_costs)
    per_pair_costs = False
    # whether ``sgd_steps`` runs SGD on queries in one kernel (SweepOracle: tree, counting);
    # else ``optim/sgd_queries.py`` steps through ``split_by_query``'s oracles
    has_sgd_steps = False
    loss_families: frozenset[str] = frozenset({"piecewise"})

    def __init__(self, X, y, query_ptr=None, C: float = 1.0, loss: str | PairLoss = "squared_hinge",
                 rescaling: str | None = None, delta="gain_difference",
                 levels: QueryLevels | None = None, x_stats: FeatureStats | None = None):
        self.X, self.y, self.query_ptr, stats = check_problem_stats(X, y, query_ptr, x_stats)
        # from the same read of X as the check: the overflow check's max |x| (readiness.py) and
        # the dense column norms that decide CG's preconditioner (optim/accuracy.py)
        self.max_abs_x = stats.max_abs
        self.col_sq_norms = stats.col_sq_norms
        self.C = check_C(C)
        self.requested_loss = get_loss(loss)
        self.loss = self.loss_form(self.requested_loss)
        self.levels = levels if levels is not None else QueryLevels.from_labels(self.y, self.query_ptr)
        if delta is None:
            delta = "gain_difference"
        self.check_rescaling(rescaling, delta)
        self.rescaling = rescaling
        self.delta = delta
        self.delta_kind = None if rescaling is None else delta_kind(delta)
        self.margin, self.weight = rescaling_matrices(self.levels.levels, rescaling, delta)
        # document margin rescaling without per-pair costs: max(0, |d_i - d_j| - z_i + z_j) =
        # max(0, u_j - u_i) with u = z - d (d non-decreasing in the label within each query)
        self._score_shift = None
        if self.delta_kind == "document" and rescaling == "margin" and not self.per_pair_costs:
            self._score_shift = self._document_shift()
        # X v, X^T z and the Jacobi diagonal on every core (objective/products.py; no copy of X),
        # each query's rows centred where a column has a large offset (objective/centring.py)
        self._prod = XProducts(self.X, self.query_ptr, centre=True)
        self._xtg = None  # X^T dL/dz when a subclass's own pass of fun computed it
        self._last_fun: tuple[np.ndarray, float, float] | None = None  # (w, C, f) of the state held
        self._gz: np.ndarray | None = None
        self._setup()

    # what this oracle can do, known before any data ------------------------------------
    @classmethod
    def loss_form(cls, loss: str | PairLoss) -> PairLoss:
        """The loss this oracle evaluates for ``loss``: the loss itself when the oracle takes its
        family, else its piecewise approximation; ValueError naming the oracles that take it."""
        loss = get_loss(loss)
        if loss.family in cls.loss_families:
            return loss
        approx = loss.approximation
        if approx is not None and approx.family in cls.loss_families:
            return approx
        able = [name for name, o in ORACLES.items() if loss.family in o.loss_families]
        raise ValueError(f"the {cls.name} oracle evaluates {' and '.join(sorted(cls.loss_families))} "
                         f"losses (sums of shifted hinge / squared-hinge pieces) and the {loss.name} loss "
                         f"is {loss.family} with no piecewise approximation; oracles that evaluate it: "
                         f"{', '.join(able)}")

    @classmethod
    def methods(cls, loss: str | PairLoss) -> frozenset[str]:
        """Oracle methods available for ``loss``: fun and subgrad always, grad for a differentiable
        loss, hess_vec and hess_diag for a loss with a (generalized) Hessian."""
        form = cls.loss_form(loss)
        out = {"fun", "subgrad"}
        if form.differentiable:
            out.add("grad")
        if form.has_hessian:
            out |= {"hess_vec", "hess_diag"}
        return frozenset(out)

    @classmethod
    def check_rescaling(cls, rescaling: str | None, delta="gain_difference") -> None:
        """ValueError when this oracle cannot apply ``rescaling`` (None | margin | slack) with the
        pair cost ``delta`` (its kind: label, position or document), naming the oracles that can."""
        check_rescaling_name(rescaling)
        if rescaling is None:
            return
        delta = "gain_difference" if delta is None else delta
        kind = delta_kind(delta)
        if (rescaling, kind) not in cls.rescalings:
            able = [name for name, o in ORACLES.items() if (rescaling, kind) in o.rescalings]
            what = {"label": "label-pair", "position": "position-based (DCG swap)",
                    "document": "per-document (delta_i - delta_j)^2"}[kind]
            raise ValueError(f"the {cls.name} oracle supports no {rescaling} rescaling with "
                             f"{what} costs (delta={delta!r}); use one of the oracles "
                             f"{', '.join(able)}")

    @classmethod
    def supported_rescalings(cls) -> list[str]:
        """'rescaling/kind' of every (rescaling, cost kind) this oracle evaluates, sorted."""
        return sorted(f"{r}/{k}" for r, k in cls.rescalings)

    def _document_shift(self) -> np.ndarray:
        """Per-document delta_i of a document cost, checked non-decreasing in the label within
        each query (else |delta_i - delta_j| != delta_i - delta_j and the shift is wrong)."""
        d = np.asarray(DOCUMENT_DELTAS[self.delta](self.y, self.query_ptr), dtype=np.float64)
        for q in range(self.query_ptr.shape[0] - 1):
            a, b = int(self.query_ptr[q]), int(self.query_ptr[q + 1])
            if b - a < 2:
                continue
            o = np.lexsort((d[a:b], self.y[a:b]))
            yq, dq = self.y[a:b][o], d[a:b][o]
            if np.any((yq[1:] > yq[:-1]) & (dq[1:] < dq[:-1])):
                raise ValueError(f"delta={self.delta!r}: per-document costs must not decrease with the "
                                 f"label within a query (query {q}) for margin rescaling by score shift")
        return d

    def pair_margin_weight(self, hi, lo) -> tuple[np.ndarray, np.ndarray]:
        """(margin, weight) of preference pairs (hi preferred over lo; global index arrays that
        broadcast): label-pair matrices, or sqrt(delta_ij) / delta_ij of a position or document cost."""
        if self.delta_kind in ("position", "document"):
            # only entries with y_hi > y_lo are used; the others are clipped to 0 (no NaN from sqrt)
            cost = np.maximum(pair_costs(self.delta_kind, self.delta, self.y, self.query_ptr, hi, lo), 0.0)
            one = np.ones_like(cost)
            return (np.sqrt(cost), one) if self.rescaling == "margin" else (one, cost)
        g = self.levels.grank
        return self.margin[g[hi], g[lo]], self.weight[g[hi], g[lo]]

    def split_by_query(self) -> list[PairOracle]:
        """One oracle of this kind per query with at least two relevance levels (same C, loss and
        rescaling): the per-query objectives of SGD on queries (Chapelle & Keerthi Alg. 3)."""
        out = []
        for q in np.flatnonzero(self.levels.n_levels >= 2):
            a, b = int(self.query_ptr[q]), int(self.query_ptr[q + 1])
            out.append(type(self)(self.X[a:b], self.y[a:b], None, C=self.C, loss=self.requested_loss,
                                  rescaling=self.rescaling, delta=self.delta))
        return out

    def __copy__(self):
        """A shallow copy sharing the data; a subclass whose fun writes buffers in place gives
        the copy its own (``SweepOracle``): TRON's cg_history probe evaluates f on a copy
        without touching the original's state at its own w."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._last_fun = None
        return new

    @classmethod
    def warm_up(cls, sparse: bool = False) -> None:
        """Compile (or load from numba's cache) the kernels this class runs, on a toy problem
        (dense, or CSR with ``sparse``), with the squared hinge and the hinge loss: f, gradient,
        Hv and the Jacobi diagonal, and the X products of many rows (``XProducts.warm_up``)."""
        X = sp.csr_matrix(_TOY_X) if sparse else _TOY_X
        w, v = np.array([0.1, -0.2]), np.ones(2)
        for loss in ("squared_hinge", "hinge"):
            cls(X, _TOY_Y, _TOY_PTR, C=1.0, loss=loss)._warm_up_paths(w, v)
        XProducts.warm_up(X)

    def _warm_up_paths(self, w: np.ndarray, v: np.ndarray) -> None:
        """Run every evaluation path of this instance once (``warm_up``)."""
        self.fun(w)
        self.grad(w)
        if self.loss.has_hessian:
            self.hess_vec(v)
            self.hess_diag()

    # subclass hooks -----------------------------------------------------------------
    def _setup(self) -> None:
        """Per-data work done once (e.g. the explicit pair list)."""

    def _loss_grad_z(self, z: np.ndarray) -> tuple[float, np.ndarray]:
        raise NotImplementedError

    def _hess_z(self, d: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    # public interface -----------------------------------------------------------------
    @property
    def n_docs(self) -> int:
        return int(self.y.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    def n_pairs(self) -> int:
        """|P|, the number of preference pairs; O(n)."""
        return self.levels.n_pairs()

    def scores(self, w: np.ndarray) -> np.ndarray:
        """z = X w up to a constant per query (the rows centred where a column has an offset:
        ``objective/centring.py``), which no pair loss sees; O(nnz(X))."""
        return self._prod.matvec(w)

    def loss_at_scores(self, z: np.ndarray) -> float:
        """sum_{(i,j) in P} loss(z_i - z_j), also caching dL/dz and the Hessian state."""
        self._xtg = None
        self._last_fun = None  # the state is now these scores', not the last fun's w
        z = np.ascontiguousarray(z, dtype=np.float64)
        if self._score_shift is not None:
            z = z - self._score_shift  # document margin rescaling: same L, dL/dz and Hessian in u
        L, gz = self._loss_grad_z(z)
        self._gz = gz
        return float(L)

    def fun(self, w: np.ndarray) -> float:
        """f(w) = 1/2 ||w||^2 + C L(Xw); caches what grad and hess_vec at this w reuse.  Called
        again at the w of the last call (an overflow check at w = 0, then the optimizer's start),
        it returns that value: the cached state is already this w's."""
        w = np.asarray(w, dtype=np.float64)
        last = self._last_fun
        if (last is not None and last[1] == self.C and last[0].shape == w.shape
                and np.array_equal(last[0], w)):
            return last[2]
        f = 0.5 * float(w @ w) + self.C * self._loss_at(w)
        self._last_fun = (w.copy(), self.C, f)
        return f

    def _loss_at(self, w: np.ndarray) -> float:
        """L(Xw), caching dL/dz and the Hessian state (a subclass may fuse it with the products)."""
        return self.loss_at_scores(self.scores(w))

    def grad(self, w: np.ndarray) -> np.ndarray:
        """Gradient (subgradient for the hinge) at the w of the last ``fun`` call; O(nnz(X))."""
        return np.asarray(w, dtype=np.float64) + self.C * self.loss_grad()

    def loss_grad(self) -> np.ndarray:
        """X^T dL/dz at the last ``fun`` point: the loss part of the gradient, without C and the
        regularizer (what a query shard contributes, ``rankbench.distributed``); O(nnz(X))."""
        if self._gz is None:
            raise RuntimeError("call fun(w) before grad(w)")
        if self._xtg is not None:  # summed by the fused pass of fun
            return self._xtg.copy()
        return self._prod.rmatvec(self._gz)

    def hess_vec(self, v: np.ndarray) -> np.ndarray:
        """(I + C X^T H_L X) v with the generalized Hessian H_L at the last ``fun`` point."""
        return np.asarray(v, dtype=np.float64) + self.C * self.loss_hess_vec(v)

    def loss_hess_vec(self, v: np.ndarray) -> np.ndarray:
        """X^T H_L X v at the last ``fun`` point: the loss part of ``hess_vec``, without C and the
        identity."""
        self._check_hessian()
        if self._gz is None:
            raise RuntimeError("call fun(w) before hess_vec(v)")
        return self._loss_hess_products(v)

    def _loss_hess_products(self, v: np.ndarray) -> np.ndarray:
        """X^T H_L X v at the state of the last ``fun`` (a subclass may fuse it)."""
        return self._prod.rmatvec(self._hess_z(self.scores(v)))

    def hess_diag(self) -> np.ndarray:
        """Jacobi preconditioner: diag of I + C X^T H_L X with H_L's off-diagonal part replaced by the
        per-query centering it would be for a complete pair graph; exact for one level per pair graph
        K_n, always >= 1; O(nnz(X))."""
        return 1.0 + self.C * self.loss_hess_diag()

    def loss_hess_diag(self) -> np.ndarray:
        """The loss part of ``hess_diag`` (1 + C * this), >= 0; a sum over queries, so the loss
        part of a set of query shards is the sum of theirs."""
        self._check_hessian()
        if self._gz is None:
            raise RuntimeError("call fun(w) first")
        # per feature j: sum_i D_i x_ij^2 - sum_q (sum_{i in q} D_i x_ij)^2 / sum_{i in q} D_i, in
        # one pass over X (no X o X copy, no per-query sum matrix)
        return np.maximum(self._prod.hess_diag_sum(2.0 * self._doc_curvature()), 0.0)

    def _check_hessian(self) -> None:
        if not self.loss.has_hessian:
            raise ValueError(f"the {self.loss.name} loss has no Hessian (not twice differentiable)")

    def _doc_curvature(self) -> np.ndarray:
        """Per document, the sum of the weights of its active pairs (diag of H_L / 2 in score space)."""
        return self._diag

    def grad_scores(self) -> np.ndarray:
        """dL/dz at the last ``fun`` point (a copy)."""
        if self._gz is None:
            raise RuntimeError("call fun(w) first")
        return self._gz.copy()

    def state_nbytes(self) -> int:
        """Bytes of the per-document / per-pair arrays this oracle keeps besides X and y (O(n) for
        counting/tree, O(p) for pairs); the products' fixed workspace is ``workspace_nbytes``."""
        seen: set[int] = set()

        def held(val) -> int:
            # buffers kept in tuples and dicts count too (the fused passes', the tree's pointers
            # and work arrays, the sweep oracles' ``_vecs``), each array once (the state
            # attributes name some of those buffers again)
            if isinstance(val, np.ndarray):
                if id(val) in seen:
                    return 0
                seen.add(id(val))
                return int(val.nbytes)
            if isinstance(val, tuple | list):
                return sum(held(v) for v in val)
            if isinstance(val, dict):
                return sum(held(v) for v in val.values())
            return 0

        total = 0
        for obj in (self.__dict__, self.levels.__dict__):
            for key, val in obj.items():
                if key in ("X", "y", "_xtg", "_last_fun", "_fused_args"):  # data, views, O(d)
                    continue
                total += held(val)
        return total

    def workspace_nbytes(self) -> int:
        """Bytes of the O(d) workspace: the X-product blocks (blocks x d floats, at most a quarter
        of nnz(X)) and the cached X^T dL/dz."""
        return self._prod.nbytes + (self._xtg.nbytes if self._xtg is not None else 0)

    def _pieces(self) -> list[tuple[float, float, int]]:
        """(margin offset, weight, power) of each piece of the (piecewise) loss evaluated."""
        return [(float(p.offset), float(p.weight), int(p.power)) for p in self.loss.pieces]
