"""RankSVM objective (Chapelle & Keerthi eq. 1) and its pair oracles.

``f(w) = 1/2 ||w||^2 + C * sum_{(i,j) in P} loss(w.x_i - w.x_j)``, P = same-query pairs
with y_i > y_j.  Oracles differ in how they count pairs: ``brute`` (all pairs, numpy,
test reference), ``pairs`` (explicit pair matrix, PRSVM), ``counting`` (sort + count per
level pair, PRSVM+), ``tree`` (Fenwick order-statistic tree, Lee & Lin), ``direct`` (Lee &
Lin supplement sect. II.1: per-level counters, two sweeps) and ``joachims`` (supplement
Alg. (I), Joachims 2006: one sweep per level).  The loss is an
object (``losses.py``): a sum of shifted hinge / squared-hinge pieces, which every oracle
evaluates, or a smooth loss, which pairs and brute evaluate exactly and counting and tree
through its piecewise approximation (``logistic.py``).

``ORACLES`` holds every class decorated with ``@register_oracle`` (``objective/base.py``); this
package imports all its modules (``rankbench.plugins.import_submodules``), so an oracle in a new
module of it is found with no other edit, and one defined elsewhere registers on import.
"""

from __future__ import annotations

import numpy as np

from rankbench.objective.base import ORACLES, PairOracle, check_problem, register_oracle
from rankbench.objective.losses import LOSSES, PairLoss, get_loss, loss_names
from rankbench.objective.products import XProducts
from rankbench.objective.query_levels import QueryLevels
from rankbench.objective.score_order import sort_within_queries
from rankbench.objective.sweep_oracle import SweepOracle
from rankbench.plugins import import_submodules

# isort: off
# the package's oracles register in the papers' order (PRSVM's pairs, PRSVM+'s counting, Lee &
# Lin's tree, direct and Joachims), which error messages and solver listings follow
from rankbench.objective.brute_force import BruteForceOracle
from rankbench.objective.explicit_pairs import ExplicitPairsOracle
from rankbench.objective.counting import CountingOracle
from rankbench.objective.tree import TreeOracle, tree_active_pairs
from rankbench.objective.direct import DirectOracle
from rankbench.objective.joachims import JoachimsOracle
# isort: on

import_submodules(__name__)  # every other module of the package: its oracles register on import

__all__ = [
    "LOSSES", "ORACLES", "BruteForceOracle", "CountingOracle", "DirectOracle", "ExplicitPairsOracle",
    "JoachimsOracle", "PairLoss", "PairOracle", "QueryLevels", "TreeOracle", "count_pairs", "get_loss",
    "loss_names", "make_oracle", "margin_pairs", "pairs_with_margin", "ranksvm_objective", "register_oracle",
]


def make_oracle(name: str, X, y, query_ptr=None, C: float = 1.0, loss: str | PairLoss = "squared_hinge",
                **kwargs) -> PairOracle:
    """Build the oracle registered as ``name`` (brute | pairs | counting | tree | direct | joachims
    | any other of ``ORACLES``) for (X, y, query_ptr)."""
    if name not in ORACLES:
        raise ValueError(f"unknown oracle {name!r}; expected one of {', '.join(ORACLES)}")
    return ORACLES[name](X, y, query_ptr, C=C, loss=loss, **kwargs)


def ranksvm_objective(w, X, y, query_ptr, C: float, loss: str | PairLoss = "squared_hinge",
                      oracle: str = "tree") -> float:
    """Chapelle eq. (1) at w: 0.5 ||w||^2 + C * sum over pairs of loss; O(nd + n log n) (tree)."""
    X, y, query_ptr = check_problem(X, y, query_ptr)
    w = _check_w(w, X.shape[1])
    return make_oracle(oracle, X, y, query_ptr, C=C, loss=loss).fun(w)


def pairs_with_margin(w, X, y, query_ptr, levels: QueryLevels | None = None) -> tuple[int, int]:
    """(|P|, number of pairs with w.x_i - w.x_j >= 1): zero dual variables of the L2 RankSVM; O(n log n).

    ``levels``: the problem's ``QueryLevels`` when the caller has them (an oracle's), so they
    are not computed a second time (their construction needs several n-vectors)."""
    X, y, query_ptr = check_problem(X, y, query_ptr)
    w = _check_w(w, X.shape[1])
    lv = QueryLevels.from_labels(y, query_ptr) if levels is None else levels
    if lv.n_docs != y.shape[0]:
        raise ValueError(f"levels are of {lv.n_docs} documents, the data of {y.shape[0]}")
    prod = XProducts(X, query_ptr, centre=True)
    if prod.refs is not None:  # columns with an offset: their scores centred per query (exact margins)
        z = prod.matvec(w)
    else:
        z = np.ascontiguousarray(np.asarray(X @ w, dtype=np.float64).ravel())
    return _margin_counts(z, sort_within_queries(z, query_ptr), query_ptr, lv)


def _margin_counts(z, order, query_ptr, lv: QueryLevels) -> tuple[int, int]:
    """(|P|, pairs with z_i - z_j >= 1) from scores z sorted within queries by ``order``."""
    active = tree_active_pairs(order, query_ptr, lv.qrank, lv.n_levels, z, 1.0)
    p = lv.n_pairs()
    return p, p - int(active)


def margin_pairs(oracle: PairOracle, w) -> tuple[int, int]:
    """``pairs_with_margin`` on an oracle's own data: its checked X, label ranks and centred
    products (no second check of X, no second centring), and the scores and order of its last
    ``fun`` when that was at this w (an optimizer's last point); else X w sorted, seeded by the
    oracle's last order (the order by (score, index) is unique, so the seed changes only the time)."""
    w = _check_w(w, oracle.n_features)
    z = order = None
    at_w = False
    if isinstance(oracle, SweepOracle):  # the oracles that keep the scores and their order
        last, z, order = oracle._last_fun, oracle._z, oracle._order
        at_w = (last is not None and oracle._score_shift is None and z is not None
                and order is not None and np.array_equal(last[0], w))
    if not at_w:  # (with a score shift the oracle's z is shifted: the margins are of X w)
        z = oracle.scores(w)
        order = sort_within_queries(z, oracle.query_ptr, order)
    return _margin_counts(z, order, oracle.query_ptr, oracle.levels)


def count_pairs(y, query_ptr) -> int:
    """|P| = number of same-query pairs with y_i > y_j; O(n log n)."""
    y = np.asarray(y)
    if query_ptr is None:
        query_ptr = np.array([0, y.shape[0]], dtype=np.int64)
    _, y, query_ptr = check_problem(np.zeros((y.shape[0], 0)), y, query_ptr)
    return QueryLevels.from_labels(y, query_ptr).n_pairs()


def _check_w(w, d: int) -> np.ndarray:
    w = np.asarray(w, dtype=np.float64)
    if w.ndim != 1 or w.shape[0] != d:
        raise ValueError(f"w must be 1-D with one weight per feature ({d}), got shape {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ValueError("w contains NaN or inf")
    return w
