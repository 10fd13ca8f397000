"""Toy solver and toy data for the harness tests (also importable by subprocess tests).

``toy_lsq`` is a ridge least-squares linear scorer (closed form), so every number the
harness records can be recomputed here independently.  ``toy_split`` is a seeded
LETOR-like data set with 5 folds.  Environment knobs for crash tests:
``TOY_HANG_AFTER=k`` makes the (k+1)-th fit in a process write ``TOY_HANG_MARKER`` and
hang; ``TOY_FAIL_ALPHA=a`` makes fits with ``alpha == a`` raise; ``TOY_KILL_ALPHA`` /
``TOY_HANG_ALPHA`` (``repr(float(alpha))``) make them SIGKILL their process / hang.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import numpy as np

from rankbench.data.ranking_data import RankingData
from rankbench.data.registry import register_dataset
from rankbench.estimators.registry import register_solver

N_FEATURES = 5
TRUE_W = np.array([1.0, -0.5, 0.25, 0.0, 2.0])
_FITS = {"n": 0}


class ToyLeastSquares:
    """Ridge regression of the labels on the features: w = (X'X + alpha I)^-1 X'y."""

    def __init__(self, alpha: float = 1.0, max_iter: int = 1):
        self.alpha = alpha
        self.max_iter = max_iter

    def check_params(self):
        """ValueError unless alpha > 0 (the harness runs it before any data is read)."""
        a = self.alpha
        if isinstance(a, bool) or not isinstance(a, int | float) or not np.isfinite(a) or a <= 0:
            raise ValueError(f"alpha must be a positive finite number, got {a!r}")

    def fit(self, X, y, qid=None):
        hang_after = os.environ.get("TOY_HANG_AFTER")
        if hang_after is not None and _FITS["n"] >= int(hang_after):
            Path(os.environ["TOY_HANG_MARKER"]).write_text(str(os.getpid()))
            time.sleep(600)
        _FITS["n"] += 1
        if os.environ.get("TOY_KILL_ALPHA") == repr(float(self.alpha)):
            os.kill(os.getpid(), signal.SIGKILL)  # what the kernel's OOM killer does
        if os.environ.get("TOY_HANG_ALPHA") == repr(float(self.alpha)):
            time.sleep(600)
        fail = os.environ.get("TOY_FAIL_ALPHA")
        if fail is not None and float(fail) == float(self.alpha):
            raise ValueError(f"toy failure for alpha={self.alpha}")
        X = np.asarray(X, dtype=float)
        t0 = time.perf_counter()
        A = X.T @ X + self.alpha * np.eye(X.shape[1])
        self.coef_ = np.linalg.solve(A, X.T @ np.asarray(y, dtype=float))
        self.n_iter_ = 1
        self.objective_ = float(
            0.5 * self.alpha * self.coef_ @ self.coef_ + 0.5 * np.sum((X @ self.coef_ - y) ** 2)
        )
        self.fit_time_ = time.perf_counter() - t0
        self.compile_time_ = 0.0
        self.history_ = [{"iter": 1, "objective": self.objective_}]
        return self

    def decision_function(self, X):
        return np.asarray(X, dtype=float) @ self.coef_


@register_solver("toy_lsq")
def make_toy(params: dict) -> ToyLeastSquares:
    """Factory for the toy solver (unknown params raise TypeError like a real estimator)."""
    return ToyLeastSquares(**params)


@register_dataset("toy")
def toy_split(fold: int, split: str, seed: int = 0, variant=None, n_queries: int = 12,
              noise: float = 0.5) -> RankingData:
    """A seeded LETOR-like split: 3 relevance levels from a noisy linear model."""
    stream = {"train": 0, "vali": 1, "test": 2}[split]
    rng = np.random.default_rng([fold, stream, 12345])
    sizes = rng.integers(4, 9, size=n_queries)
    X = rng.normal(size=(int(sizes.sum()), N_FEATURES))
    latent = X @ TRUE_W + noise * rng.normal(size=X.shape[0])
    y = np.digitize(latent, [0.0, 1.5])
    qid = np.repeat(np.arange(n_queries) + 1000 * fold + 100 * stream, sizes)
    return RankingData.from_arrays(X, y, qid, name="toy", synthetic=True)


def test_toy_solver_recovers_ridge_solution():
    d = toy_split(1, "train")
    est = ToyLeastSquares(alpha=0.5).fit(d.X, d.y, d.qid)
    # normal equations hold at the solution: X'(Xw - y) + alpha w = 0
    grad = d.X.T @ (d.X @ est.coef_ - d.y) + 0.5 * est.coef_
    assert np.max(np.abs(grad)) < 1e-9
    assert d.n_queries == 12 and set(np.unique(d.y)) <= {0, 1, 2}
