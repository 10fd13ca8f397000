"""Cutting-plane (bundle) method for the hinge-loss RankSVM (Joachims 2006; TreeRankSVM, Airola et al.).

R(w) = C * sum_{(i,j) in P} max(0, 1 - w.(x_i - x_j)) is convex and piecewise linear
(the squared hinge and Huber losses work too: R only needs to be convex and >= 0);
each iteration asks the oracle for R(w_t) and a subgradient a_t (one sort plus the
O(n log n) counting of Joachims' Alg. 2 / Lee & Lin supplement Alg. I), adds the plane
R(w) >= a_t.w + b_t, and minimizes 1/2||w||^2 + max_t (a_t.w + b_t) exactly through its
dual, a small QP over the simplex (solved here by SMO on the most violating pair).
Stops when the gap between the best objective seen and the dual lower bound is below
``tol`` times the best objective: a certificate, f_best - f* <= gap (Joachims 2006, sect. 4;
Teo, Vishwanathan, Smola & Le 2010), so the default tol = 1e-6 certifies 1e-6 relative
accuracy; without it after max_iter the run ends unconverged.
"""

from __future__ import annotations

import numpy as np

from rankbench.optim.accuracy import accuracy_dict
from rankbench.optim.history import History, OptimResult
from rankbench.optim.registry import register_optimizer


def simplex_qp(G: np.ndarray, b: np.ndarray, lam: np.ndarray, tol: float = 1e-13,
               max_iter: int = 100_000) -> np.ndarray:
    """argmin over the simplex of 1/2 lam.G.lam - b.lam by SMO on the most violating pair (warm start lam)."""
    lam = lam.copy()
    grad = G @ lam - b
    scale = max(1.0, float(np.max(np.abs(np.diag(G)))), float(np.max(np.abs(b))))
    for _ in range(max_iter):
        i = int(np.argmin(grad))
        support = lam > 0.0
        gs = np.where(support, grad, -np.inf)
        j = int(np.argmax(gs))
        viol = gs[j] - grad[i]
        if viol <= tol * scale or i == j:
            break
        curv = G[i, i] + G[j, j] - 2.0 * G[i, j]
        step = lam[j] if curv <= 0.0 else min(lam[j], viol / curv)
        lam[i] += step
        lam[j] -= step
        if lam[j] < 1e-300:
            lam[j] = 0.0
        grad += step * (G[:, i] - G[:, j])
    return lam


@register_optimizer(
    "cutting_plane", needs=("fun", "subgrad"), default_loss="hinge",
    stopping_rule="best f - dual bound of the master problem <= tol * best f",
    paper="Joachims 2006 (SVM-perf); TreeRankSVM (Airola et al. 2011); Lee & Lin 2014 Fig. II")
def cutting_plane(oracle, w0: np.ndarray | None = None, tol: float = 1e-6, max_iter: int = 2000,
                  keep_coef: bool = False, verbose: bool = False) -> OptimResult:
    """Minimize 1/2||w||^2 + C * pairwise loss by cutting planes (any of the convex losses; the
    papers use the hinge, where it is the method of choice because Newton does not apply)."""
    d = oracle.n_features
    w = np.zeros(d) if w0 is None else np.array(w0, dtype=np.float64)
    hist = History(keep_coef=keep_coef, verbose=verbose, name="cutting_plane")
    # the zero plane (R >= 0) keeps the first master problem bounded
    cap = min(max_iter, 63) + 1  # grown by doubling: d x (planes) can be large for sparse text data
    A = np.zeros((cap, d))
    bvec = np.zeros(cap)
    lam = np.zeros(cap)
    lam[0] = 1.0
    G = np.zeros((cap, cap))
    f_best, w_best = np.inf, w.copy()
    converged, message = False, "max_iter reached"
    it = 0
    lower = -np.inf
    for it in range(1, max_iter + 1):
        f = oracle.fun(w)
        a = oracle.grad(w) - w  # subgradient of R at w
        R = f - 0.5 * float(w @ w)
        if f < f_best:
            f_best, w_best = f, w.copy()
        if it == cap:
            cap = min(2 * cap, max_iter + 1)
            A = np.vstack([A, np.zeros((cap - A.shape[0], d))])
            bvec = np.concatenate([bvec, np.zeros(cap - bvec.shape[0])])
            lam = np.concatenate([lam, np.zeros(cap - lam.shape[0])])
            G2 = np.zeros((cap, cap))
            G2[: G.shape[0], : G.shape[1]] = G
            G = G2
        A[it] = a
        bvec[it] = R - float(a @ w)
        row = A[: it + 1] @ a
        G[it, : it + 1] = row
        G[: it + 1, it] = row
        lam[: it + 1] = simplex_qp(G[: it + 1, : it + 1], bvec[: it + 1], lam[: it + 1])
        w = -(lam[: it + 1] @ A[: it + 1])
        # dual value of the master problem = its optimum = a lower bound on min f
        lower = max(lower, -0.5 * float(w @ w) + float(lam[: it + 1] @ bvec[: it + 1]))
        gap = f_best - lower
        hist.record(it, f_best, float(np.linalg.norm(a + w)), it, w_best, gap=gap)
        if gap <= tol * abs(f_best):
            converged, message = True, "gap <= tol * objective"
            break
    oracle.fun(w_best)
    acc = accuracy_dict(f_best, gap=f_best - lower, rule="gap", tol=tol)
    return OptimResult(w=w_best, f=f_best, n_iter=it, n_cg_iter=it, converged=converged,
                       message=message, history=hist.rows, accuracy=acc)
