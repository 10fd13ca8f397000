"""Cutting-plane (bundle) method for the hinge-loss RankSVM (Joachims 2006; TreeRankSVM, Airola et al.).

R(w) = C * sum_{(i,j) in P} max(0, 1 - w.(x_i - x_j)) is convex and piecewise linear
(the squared hinge and Huber losses work too: R only needs to be convex and >= 0);
each iteration asks the oracle for R(w_t) and a subgradient a_t (one sort plus the
O(n log n) counting of Joachims' Alg. 2 / Lee & Lin supplement Alg. I), adds the plane
R(w) >= a_t.w + b_t, and minimizes 1/2||w||^2 + max_t (a_t.w + b_t) exactly through its
dual, a small QP over the simplex (``simplex_qp``: an active-set method).
Stops when the gap between the best objective seen and the dual lower bound is below
``tol`` times the best objective: a certificate, f_best - f* <= gap (Joachims 2006, sect. 4;
Teo, Vishwanathan, Smola & Le 2010), so the default tol = 1e-6 certifies 1e-6 relative
accuracy.  Otherwise it ends unconverged, saying why: ``max_iter`` iterations (default 2000),
``max_time`` seconds (default 3600), or float64 precision (a new plane no longer cuts off the
master problem's solution, so no later plane can close the gap: C |x|^2 too large for float64
to resolve the master problem).

The master QP was solved by SMO on the most violating pair (pairwise Frank-Wolfe) to 1e-13 of
its scale: its planes have norms ~ C |P| |x| and, with few features, are affinely dependent as
soon as they outnumber d + 1, so SMO crawled (100,000 Python steps per master problem at
C = 1e6 on 96 documents, the bundle's support growing past 200 planes with 5 features) and the
method did not return for minutes.  The active-set method solves each master problem exactly in
a few steps from the last solution (the support stays at most d + 1 planes when planes are
dependent), and the same 57 iterations reach 1e-6 at C = 1 and at C = 1e9.
"""

from __future__ import annotations

import time

import numpy as np

from rankbench.optim.accuracy import accuracy_dict
from rankbench.optim.history import History, OptimResult
from rankbench.optim.registry import register_optimizer

_EPS = np.finfo(np.float64).eps


def simplex_qp(G: np.ndarray, b: np.ndarray, lam: np.ndarray, tol: float = 0.0,
               max_steps: int | None = None) -> np.ndarray:
    """argmin over the simplex {lam >= 0, sum lam = 1} of q(lam) = 1/2 lam.G.lam - b.lam, from a
    feasible ``lam``, by a primal active-set method (Nocedal & Wright 2006, Alg. 16.3).

    G = A A^T is the Gram matrix of the planes (positive semi-definite, singular when planes are
    affinely dependent).  On the free set F, the equality-constrained problem is solved in the
    coordinates lam = e_r + sum_i mu_i (e_i - e_r) (r: the largest lam in F), whose Hessian
    M_ij = G_ij - G_ir - G_jr + G_rr is the Gram matrix of the differences a_i - a_r; when M is
    singular q is linear along its null space, and a step along it removes a plane from F.  A
    plane outside F enters when its gradient is below F's by more than ``tol`` (absolute) and
    than the rounding of the gradients; it stops when q no longer decreases beyond its rounding.
    O(|F|^3 + t^2) per step; ``max_steps`` (None: 10 t + 100) bounds the steps."""
    t = lam.shape[0]
    lam = np.array(lam, dtype=np.float64)
    free = lam > 0.0
    max_steps = 10 * t + 100 if max_steps is None else max_steps
    q_priced = np.inf
    for _ in range(max_steps):
        F = np.flatnonzero(free)
        r = F[np.argmax(lam[F])]
        o = F[F != r]
        if o.size:
            Gor = G[o, r]
            M = G[np.ix_(o, o)] - Gor[:, None] - Gor[None, :] + G[r, r]
            h = (b[o] - b[r]) - (Gor - G[r, r])
            vals, vecs = np.linalg.eigh(M)
            top = max(float(vals[-1]), 0.0)
            if top <= 0.0 or vals[0] <= 1e-12 * top:
                # affinely dependent planes: q is linear (slope -h.n) along the null vector n
                n = vecs[:, 0] if h @ vecs[:, 0] >= 0.0 else -vecs[:, 0]
                p = np.zeros(t)
                p[o] = n
                p[r] = -n.sum()
                if _step(lam, free, p, np.inf):
                    continue
                # no bound in the way (a null vector at rounding level): price as it is
            else:
                mu = vecs @ ((vecs.T @ h) / vals)
                p = np.zeros(t)
                p[o] = mu
                p[r] = 1.0 - mu.sum()
                p -= np.where(free, lam, 0.0)
                if np.max(np.abs(p)) > 1e-14 and _step(lam, free, p, 1.0):
                    continue  # a bound blocked the step: one plane fewer, solve again
        # lam solves the problem on F: price the planes outside it
        Glam = G @ lam
        grad = Glam - b
        lam_b = float(lam @ b)
        q = 0.5 * float(lam @ Glam) - lam_b
        if q >= q_priced - 4.0 * _EPS * (abs(q) + abs(lam_b)):
            break  # the last plane taken in gave no decrease above rounding
        out = np.flatnonzero(~free)
        if out.size == 0:
            break
        j = out[np.argmin(grad[out])]
        g_free = float(lam @ grad)  # the gradient on F (equal on F at its solution)
        if grad[j] >= g_free - max(tol, 4.0 * _EPS * (abs(float(grad[j])) + abs(g_free))):
            break
        free[j] = True
        q_priced = q
    return lam


def _step(lam: np.ndarray, free: np.ndarray, p: np.ndarray, alpha_max: float) -> bool:
    """lam += alpha p with the largest alpha <= alpha_max keeping lam >= 0 on the free set; the
    blocking plane (if any) leaves it.  Returns whether a bound blocked the step."""
    neg = free & (p < 0.0)
    alpha, blocking = alpha_max, -1
    if neg.any():
        idx = np.flatnonzero(neg)
        ratios = lam[idx] / -p[idx]
        k = int(np.argmin(ratios))
        if ratios[k] < alpha_max:
            alpha, blocking = float(ratios[k]), int(idx[k])
    if not np.isfinite(alpha):
        return False
    lam += alpha * np.where(free, p, 0.0)
    np.maximum(lam, 0.0, out=lam)
    if blocking >= 0:
        lam[blocking] = 0.0
        free[blocking] = False
    free &= lam > 0.0
    if not free.any():  # rounding removed every plane: keep the largest
        free[int(np.argmax(lam))] = True
    lam /= lam.sum()
    return blocking >= 0


@register_optimizer(
    "cutting_plane", needs=("fun", "subgrad"), default_loss="hinge",
    stopping_rule="best f - dual bound of the master problem <= tol * best f",
    paper="Joachims 2006 (SVM-perf); TreeRankSVM (Airola et al. 2011); Lee & Lin 2014 Fig. II")
def cutting_plane(oracle, w0: np.ndarray | None = None, tol: float = 1e-6, max_iter: int = 2000,
                  max_time: float = 3600.0, keep_coef: bool = False,
                  verbose: bool = False) -> OptimResult:
    """Minimize 1/2||w||^2 + C * pairwise loss by cutting planes (any of the convex losses; the
    papers use the hinge, where it is the method of choice because Newton does not apply);
    at most ``max_iter`` iterations and about ``max_time`` seconds."""
    start = time.perf_counter()
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
    converged, message = False, f"max_iter={max_iter} iterations reached"
    it = 0
    lower = -np.inf
    for it in range(1, max_iter + 1):
        f = oracle.fun(w)
        a = oracle.grad(w) - w  # subgradient of R at w
        R = f - 0.5 * float(w @ w)
        if f < f_best:
            f_best, w_best = f, w.copy()
        if f_best - lower <= tol * abs(f_best):  # this point closed the gap of the last master
            converged, message = True, "gap <= tol * objective"
            break
        if it > 1:
            # the master's value of R at w: R(w) above it by more than rounding = a cut
            model = float(np.max(A[:it] @ w + bvec[:it]))
            rounding = 64.0 * _EPS * (abs(R) + float(np.abs(a) @ np.abs(w)) + abs(f_best))
            if R - model <= rounding:
                message = (f"float64 precision: the plane at the master problem's solution does not "
                           f"cut it off (R(w) - model = {R - model:.3g}, rounding {rounding:.3g}), "
                           f"so no later plane closes the gap of {(f_best - lower) / abs(f_best):.3g} "
                           f"(C |x|^2 too large for float64)")
                break
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
        lam[: it + 1] = simplex_qp(G[: it + 1, : it + 1], bvec[: it + 1], lam[: it + 1],
                                   tol=0.01 * tol * abs(f_best))
        w = -(lam[: it + 1] @ A[: it + 1])
        # dual value of the master problem = a lower bound on min f (any feasible lam gives one)
        lower = max(lower, -0.5 * float(w @ w) + float(lam[: it + 1] @ bvec[: it + 1]))
        gap = f_best - lower
        hist.record(it, f_best, float(np.linalg.norm(a + w)), it, w_best, gap=gap)
        if gap <= tol * abs(f_best):
            converged, message = True, "gap <= tol * objective"
            break
        if time.perf_counter() - start > max_time:
            message = f"time limit max_time={max_time:g} s reached"
            break
    oracle.fun(w_best)
    acc = accuracy_dict(f_best, gap=f_best - lower, rule="gap", tol=tol)
    return OptimResult(w=w_best, f=f_best, n_iter=it, n_cg_iter=it, converged=converged,
                       message=message, history=hist.rows, accuracy=acc)
