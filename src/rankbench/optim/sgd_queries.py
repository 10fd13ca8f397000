"""Stochastic gradient on queries (Chapelle & Keerthi Alg. 3).

The objective is the sum over queries q of l_q(w) = ||w||^2 / (2Q) + C L_q(w); one step
draws a query, computes the gradient of its part with the O(n_q log n_q) counting
oracle and moves w <- w - eta_t * grad.  With ``eta0 = Q`` (default) the step is the
1/t rate on the unbiased estimate Q * grad l_q of grad f, which is stable for any C
(w stays an average of past loss gradients); ``eta0 = 1`` is the paper's literal rule.
"""

from __future__ import annotations

import numpy as np

from rankbench.optim.history import History, OptimResult


def sgd_queries(query_oracles: list, full_oracle, n_iter: int, eta0: float | None = None,
                t0: float = 1.0, average: bool = False, seed: int | None = 0,
                record_every: int | None = None, keep_coef: bool = False,
                verbose: bool = False) -> OptimResult:
    """Run ``n_iter`` query-level SGD steps; history rows (full objective) every ``record_every`` steps."""
    Q = len(query_oracles)
    if Q == 0:
        raise ValueError("sgd_queries needs at least one query with a preference pair")
    if n_iter < 1:
        raise ValueError(f"n_iter must be >= 1, got {n_iter}")
    eta0 = float(Q if eta0 is None else eta0)
    if not eta0 > 0:
        raise ValueError(f"eta0 must be > 0, got {eta0}")
    record_every = Q if record_every is None else max(1, int(record_every))
    rng = np.random.default_rng(seed)
    d = full_oracle.n_features
    w = np.zeros(d)
    w_avg = np.zeros(d)
    hist = History(keep_coef=keep_coef, verbose=verbose, name="sgd_queries")
    f = full_oracle.fun(w)
    hist.record(0, f, float(np.linalg.norm(full_oracle.grad(w))), 0, w)
    picks = rng.integers(0, Q, size=n_iter)
    for t in range(1, n_iter + 1):
        o = query_oracles[picks[t - 1]]
        o.fun(w)
        # grad of C L_q + ||w||^2/(2Q): the query oracle adds w, so rescale the regularizer part
        g = o.grad(w) - w + w / Q
        w = w - (eta0 / (t + t0)) * g
        if average:
            w_avg += (w - w_avg) / t
        if t % record_every == 0 or t == n_iter:
            wr = w_avg if average else w
            f = full_oracle.fun(wr)
            hist.record(t, f, float(np.linalg.norm(full_oracle.grad(wr))), t, wr)
    w_final = w_avg if average else w
    f = full_oracle.fun(w_final)
    return OptimResult(w=w_final, f=f, n_iter=n_iter, n_cg_iter=0, converged=False,
                       message="fixed number of steps", history=hist.rows)
