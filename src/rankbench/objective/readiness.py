"""Before a fit: numba kernels loaded (``warm_up_kernels``) and the problem representable in
float64 (``check_representable``); used by RankSVM and by the sharded fit."""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from rankbench.data.ranking_data import max_abs
from rankbench.objective.base import ORACLES

_WARM: set[tuple[str, bool]] = set()  # (oracle, sparse) whose kernels are loaded


def warm_up_kernels(oracles: tuple[str, ...] | None = None, sparse: bool | None = None) -> float:
    """Compile (or load from numba's cache) the kernels of ``oracles`` (None: every registered
    oracle with numba kernels of its own) by each class's ``warm_up``, dense and, with ``sparse``
    True (None: the tree oracle only, as CSR), on CSR input; plus ``pairs_with_margin``.  Each
    (oracle, layout) is warmed once per process; returns the seconds spent.  ``RankSVM.fit``
    warms its own oracle only, so a first run after a fresh install compiles what it uses, not
    every oracle."""
    from rankbench.objective import pairs_with_margin  # the package imports this module

    todo = []
    names = [n for n, cls in ORACLES.items() if cls.numba_kernels] if oracles is None else oracles
    for name in names:
        todo.append((name, False))
        if sparse or (sparse is None and name == "tree"):
            todo.append((name, True))
    todo = [key for key in todo if key not in _WARM]
    if not todo:
        return 0.0
    t = time.perf_counter()
    for name, is_sparse in todo:
        ORACLES[name].warm_up(sparse=is_sparse)
        _WARM.add((name, is_sparse))
    X = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [1.0, 1.0]])
    pairs_with_margin(np.ones(2), X, np.array([2, 0, 1, 0]), np.array([0, 4], dtype=np.int64))
    max_abs(X)  # the oracle check's read of X (feature_stats), inside the timed part of fit
    max_abs(sp.csr_matrix(X))
    return time.perf_counter() - t


def check_representable(oracle, X=None) -> None:
    """ValueError when float64 cannot represent the problem: f(0) = C * sum of losses at margin
    (or the scores' range) overflows, so no objective or gradient of it would be finite.
    ``X``: the oracle's matrix (None = ``oracle.X``)."""
    # the oracle's max |x| from its check's read of X (a sharded oracle: its shards'), unless
    # asked about another matrix
    xmax = getattr(oracle, "max_abs_x", None) if X is None or X is getattr(oracle, "X", None) else None
    if xmax is None:
        xmax = max_abs(oracle.X if X is None else X)  # no |X| copy
    f0 = oracle.fun(np.zeros(oracle.n_features))
    if not np.isfinite(f0):
        raise ValueError(f"the RankSVM objective overflows float64 at w = 0 (C={oracle.C:g} times "
                         f"{oracle.n_pairs()} pairs): lower C")
    # a Newton step multiplies C by |x|^2 in the Hessian; beyond 1e300 nothing is representable
    if oracle.C * xmax * xmax * max(oracle.n_pairs(), 1) > 1e300:
        raise ValueError(f"C * max|x|^2 * pairs = {oracle.C:g} * {xmax:.3g}^2 * {oracle.n_pairs()} "
                         "overflows float64 in the Hessian: scale the features or lower C")
