"""Stochastic gradient on the pairs (Chapelle & Keerthi 2010, Alg. 2) as a RankSVM optimizer.

Each step draws a preference pair uniformly from P (the exact-uniform SPD sampler, O(1) per
draw from the sampling index, P never materialised) and moves w along the stochastic
gradient of Chapelle eq. (1), in the SPD kernel (numba) with learner ``sgd_svm`` (hinge) or
``sgd_squared_hinge``, at lambda = 1/(C |P|):

``step="documented"`` (default)
    w <- w - (1/t) (w + C |P| l'(w.x) x): 1/t times the unbiased estimate of grad f (the
    Pegasos rate 1/(lambda t) of the lambda-scaled problem, the 1/(mu t) rate for f's
    strong convexity mu = 1); squared-hinge iterates are projected onto the ball of
    radius sqrt(2 C |P|) that holds the optimum.
``step="paper"``
    Alg. 2 literally: w <- w - (1/t) (w/|P| + C l'(w.x) x), i.e. 1/t times the gradient of
    l_ij = ||w||^2/(2|P|) + C l; |P| times smaller steps, no projection.

Only the label-pair hinge and squared hinge without rescaling.  History rows hold the full
objective (the oracle's fun) every ``record_every`` steps.
"""

from __future__ import annotations

import numpy as np

from rankbench.optim.history import History, OptimResult
from rankbench.optim.registry import register_optimizer

STEPS = ("documented", "paper")
_LEARNER = {"hinge": "sgd_svm", "squared_hinge": "sgd_squared_hinge"}


@register_optimizer(
    "sgd_pairs", needs=("fun", "subgrad"), default_loss="hinge", losses=("hinge", "squared_hinge"),
    stopping_rule="none: max_iter pair steps (default min(20 |P|, 10^6))",
    paper="Chapelle & Keerthi 2010, Alg. 2 (stochastic gradient on the pairs)")
def sgd_pairs(oracle, max_iter: int | None = None, step: str = "documented", random_state=0,
              record_every: int | None = None, keep_coef: bool = False,
              verbose: bool = False) -> OptimResult:
    """Run ``max_iter`` pair steps of Alg. 2 on ``oracle``'s problem (X, y, queries, C, loss)."""
    from rankbench.optim.samplers import build_pair_index
    from rankbench.optim.spd import SPDState, prepare_X, run_segment

    if step not in STEPS:
        raise ValueError(f"step must be one of {STEPS}, got {step!r}")
    loss = oracle.requested_loss.name
    if loss not in _LEARNER:
        raise ValueError(f"sgd_pairs takes the losses {', '.join(_LEARNER)}, not {loss!r}")
    if getattr(oracle, "rescaling", None) is not None:
        raise ValueError("sgd_pairs does not support rescaling; use an exact optimizer")
    d = oracle.n_features
    try:
        index = build_pair_index(oracle.y, oracle.query_ptr)
    except ValueError:  # no preference pair: f = ||w||^2 / 2, minimised by w = 0
        w = np.zeros(d)
        return OptimResult(w=w, f=oracle.fun(w), n_iter=0, n_cg_iter=0, converged=True,
                           message="no preference pairs", history=[])
    P = index.n_pairs
    n_iter = min(20 * P, 10**6) if max_iter is None else int(max_iter)
    if n_iter < 1:
        raise ValueError(f"max_iter must be >= 1, got {n_iter}")
    record_every = max(1, n_iter // 20) if record_every is None else max(1, int(record_every))
    lam = 1.0 / (oracle.C * P)
    eta, eta_c = ("pegasos", None) if step == "documented" else ("inverse", oracle.C)
    Xk = prepare_X(oracle.X)
    state = SPDState.start(d, random_state)
    hist = History(keep_coef=keep_coef, verbose=verbose, name="sgd_pairs")
    w = state.coef()
    hist.record(0, oracle.fun(w), float("nan"), 0, w)
    while state.n_steps < n_iter:
        k = min(record_every, n_iter - state.n_steps)
        run_segment(Xk, index, state, k, _LEARNER[loss], lam, 1.0, "uniform", eta, eta_c)
        w = state.coef()
        if not np.isfinite(w).all():
            raise FloatingPointError(f"sgd_pairs diverged by step {state.n_steps}")
        hist.record(state.n_steps, oracle.fun(w), float("nan"), state.n_steps, w)
    return OptimResult(w=w, f=oracle.fun(w), n_iter=n_iter, n_cg_iter=0, converged=False,
                       message="fixed number of steps", history=hist.rows)
