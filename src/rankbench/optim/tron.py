"""Trust-region Newton (TRON, Lin & More 1999) as in LIBLINEAR's tron.cpp.

The trust-region subproblem is solved by Steihaug's truncated CG (LIBLINEAR's trcg,
CG tolerance 0.1 ||g||_{M^-1}); the radius update uses LIBLINEAR's constants (Lin, Weng &
Keerthi 2008, Alg. 2 and sect. 2.2).  With ``precondition`` the CG is Jacobi-preconditioned
and the trust region measured in the M-norm, as LIBLINEAR's trpcg (Hsia, Chiang & Lin 2018),
with M = (1 - a) I + a diag(H), a = ``precond_mix``.

Stopping rule (scale-free; ``rankbench.optim.accuracy``): stop when the Newton decrement
lambda^2/2 = g.H^-1.g / 2 -- the model decrease of a CG step that ended inside the trust
region by the CG residual rule (Boyd & Vandenberghe 2004, sect. 9.5.1: an estimate of
f - f*) -- is <= tol * |f|, or when the certificate ||g||^2 / 2 >= f - f* (f is 1-strongly
convex) is <= tol * |f|.  LIBLINEAR's ||g|| <= eps ||g0|| is not scale-free: with one feature
multiplied by 1e12 it holds after one step at w ~ 0.
"""

from __future__ import annotations

import numpy as np

from rankbench.optim.accuracy import (
    accuracy_dict,
    certificate,
    decrement_bound,
    want_preconditioner,
)
from rankbench.optim.history import History, OptimResult
from rankbench.optim.registry import register_optimizer

ETA0, ETA1, ETA2 = 1e-4, 0.25, 0.75
SIGMA1, SIGMA2, SIGMA3 = 0.25, 0.5, 4.0


def steihaug_cg(hess_vec, g: np.ndarray, delta: float, cg_tol: float,
                max_iter: int, M: np.ndarray | None = None, info: dict | None = None,
                on_step=None) -> tuple[np.ndarray, np.ndarray, int]:
    """Approximately minimize g.s + s.Hs/2 within ||s||_M <= delta (M diagonal, None = I) by
    (preconditioned) CG; stops when sqrt(z.r) <= cg_tol; returns (s, r = -g - Hs, iterations).
    ``info["interior"]`` (when a dict is given) says whether CG stopped by its residual rule
    inside the region (then g.s + s.Hs/2 estimates -lambda^2/2, the Newton decrement).
    ``on_step(s)`` is called with the CG iterate after every CG iteration."""
    interior = False
    Mv = np.ones_like(g) if M is None else M
    s = np.zeros_like(g)
    r = -g.copy()
    z = r / Mv
    d = z.copy()
    zTr = float(z @ r)
    it = 0
    while it < max_iter:
        if np.sqrt(max(zTr, 0.0)) <= cg_tol:
            interior = True
            break
        it += 1
        Hd = hess_vec(d)
        dHd = float(d @ Hd)
        if not np.isfinite(dHd) or dHd <= 0.0:
            break
        alpha = zTr / dHd
        s += alpha * d
        if np.sqrt(float(s @ (Mv * s))) > delta:
            s -= alpha * d
            std, sts, dtd = float(s @ (Mv * d)), float(s @ (Mv * s)), float(d @ (Mv * d))
            dsq = delta * delta
            rad = np.sqrt(max(std * std + dtd * (dsq - sts), 0.0))
            alpha = (dsq - sts) / (std + rad) if std >= 0 else (rad - std) / dtd
            s += alpha * d
            r -= alpha * Hd
            if on_step is not None:
                on_step(s)
            break
        r -= alpha * Hd
        if on_step is not None:
            on_step(s)
        z = r / Mv
        znew = float(z @ r)
        d = z + (znew / zTr) * d
        zTr = znew
    else:
        interior = np.sqrt(max(zTr, 0.0)) <= cg_tol
    if info is not None:
        info["interior"] = bool(interior)
    return s, r, it


@register_optimizer(
    "tron", needs=("fun", "grad", "hess_vec", "hess_diag"),
    stopping_rule="Newton decrement lambda^2/2 (model decrease of an interior CG step) <= tol * |f|, "
                  "or ||g||^2/2 <= tol * |f| (Boyd & Vandenberghe 9.5.1, eq. 9.9)",
    paper="Lin & More 1999; Lin, Weng & Keerthi 2008 (LIBLINEAR's tron.cpp); Tree-TRON of Lee & Lin 2014")
def tron(oracle, w0: np.ndarray | None = None, tol: float = 1e-6, max_iter: int = 1000,
         max_cg_iter: int = 2000, cg_rtol: float = 0.1, precondition: bool | str = "auto",
         precond_mix: float = 0.01, confirm_rtol: float = 1e-4, keep_coef: bool = False,
         verbose: bool = False, cg_history: bool = False) -> OptimResult:
    """Minimize oracle.fun by trust-region Newton; stop when lambda^2/2 <= tol |f| (module docstring).

    ``cg_history``: also one history row per CG iteration (``cg_step: True``, Lee & Lin suppl.
    Fig. (II)): the trial point w + s_k of the k-th CG iterate s_k, its objective (evaluated on a
    shallow copy of the oracle, so the Hessian state of w stays; one more f per CG iteration,
    counted in ``elapsed``) and, with ``keep_coef``, its coefficients."""
    import copy
    use_m = want_preconditioner(oracle, precondition)

    def precond():
        return (1.0 - precond_mix) + precond_mix * oracle.hess_diag() if use_m else None

    def mnorm_inv(v, M):
        return float(np.sqrt(v @ (v / M))) if M is not None else float(np.linalg.norm(v))

    d = oracle.n_features
    w = np.zeros(d) if w0 is None else np.array(w0, dtype=np.float64)
    hist = History(keep_coef=keep_coef, verbose=verbose, name="tron")
    f = oracle.fun(w)
    g = oracle.grad(w)
    g_first = g.copy()
    gnorm = float(np.linalg.norm(g))
    M = precond()
    delta = mnorm_inv(g, M)
    n_cg = 0
    hist.record(0, f, gnorm, 0, w)
    it = 1
    decrement = None
    converged, message = False, "max_iter reached"
    if certificate(g) <= tol * abs(f):
        converged, message = True, "initial point: ||g||^2/2 <= tol * |f|"
    info: dict = {}
    probe = copy.copy(oracle) if cg_history else None  # shares the data, not the cached state

    def on_step(s_k):
        n_now = n_cg + len(steps) + 1
        steps.append(n_now)
        w_k = w + s_k
        hist.record(it, probe.fun(w_k), float("nan"), n_now, w_k, cg_step=True)

    while it <= max_iter and not converged:
        steps: list[int] = []
        s, r, k = steihaug_cg(oracle.hess_vec, g, delta, cg_rtol * mnorm_inv(g, M), max_cg_iter, M,
                              info, on_step if cg_history else None)
        n_cg += k
        gs = float(g @ s)
        prered = -0.5 * (gs - float(s @ r))
        # a certified bound on the decrement from the loose solve: where it holds, no tighter
        # solve, and the path stays the one every tol follows (CG steps non-increasing in tol)
        bound = decrement_bound(prered, r) if info["interior"] else np.inf
        certified = bound <= tol * abs(f)
        if (info["interior"] and not certified and prered <= tol * abs(f)
                and cg_rtol > confirm_rtol):
            # a loose CG underestimates lambda^2 by up to its energy-norm error: confirm the
            # candidate stop with the full Newton step solved to confirm_rtol (Newton's forcing
            # term near the optimum, Eisenstat & Walker 1996), no trust region
            steps = []
            s, r, k = steihaug_cg(oracle.hess_vec, g, np.inf, confirm_rtol * mnorm_inv(g, M),
                                  max_cg_iter, M, info, on_step if cg_history else None)
            n_cg += k
            gs = float(g @ s)
            prered = -0.5 * (gs - float(s @ r))
        if certified:
            decrement = bound  # an upper bound on lambda^2/2 at w
        elif info["interior"]:
            decrement = prered  # Newton decrement lambda^2/2 at w, to the CG residual rule
        w_new = w + s
        f_new = oracle.fun(w_new)
        actred = f - f_new
        snorm = float(np.sqrt(s @ (M * s))) if M is not None else float(np.linalg.norm(s))
        if it == 1:
            delta = min(delta, snorm)
        if not np.isfinite(f_new):
            alpha = SIGMA1
        elif f_new - f - gs <= 0:
            alpha = SIGMA3
        else:
            alpha = max(SIGMA1, -0.5 * (gs / (f_new - f - gs)))
        if not np.isfinite(f_new) or actred < ETA0 * prered:
            delta = min(max(alpha, SIGMA1) * snorm, SIGMA2 * delta)
        elif actred < ETA1 * prered:
            delta = max(SIGMA1 * delta, min(alpha * snorm, SIGMA2 * delta))
        elif actred < ETA2 * prered:
            delta = max(SIGMA1 * delta, min(alpha * snorm, SIGMA3 * delta))
        else:
            delta = max(delta, min(alpha * snorm, SIGMA3 * delta))
        small_decrement = info["interior"] and prered <= tol * abs(f)
        if np.isfinite(f_new) and (actred > ETA0 * prered or (small_decrement and actred >= 0)):
            w, f = w_new, f_new
            g = oracle.grad(w)
            gnorm = float(np.linalg.norm(g))
            M = precond()
            hist.record(it, f, gnorm, n_cg, w, delta=delta,
                        decrement=decrement if decrement is not None else float("nan"))
            it += 1
            if small_decrement:
                converged, message = True, "Newton decrement lambda^2/2 <= tol * |f|"
                break
            if certificate(g) <= tol * abs(f):
                converged, message = True, "||g||^2/2 (>= f - f*) <= tol * |f|"
                break
        else:
            oracle.fun(w)  # the rejected trial point overwrote the oracle's cache
            if small_decrement:  # the model says w is optimal to tol; rounding refused the step
                converged, message = True, "Newton decrement lambda^2/2 <= tol * |f| (step refused)"
                break
        if actred <= 0 and prered <= 0:
            message = "actred and prered <= 0 (rounding level before the stopping rule held)"
            break
        if abs(actred) <= 1e-12 * abs(f) and abs(prered) <= 1e-12 * abs(f):
            message = "actred and prered too small (rounding level before the stopping rule held)"
            converged = decrement is not None and decrement <= tol * abs(f)
            break
    acc = accuracy_dict(f, g, g_first, decrement=decrement, rule="newton_decrement", tol=tol)
    return OptimResult(w=w, f=f, n_iter=it - 1, n_cg_iter=n_cg, converged=converged,
                       message=message, history=hist.rows, accuracy=acc)
