"""Truncated Newton with linear conjugate gradient (Chapelle & Keerthi Alg. 1), with a line search.

The Newton system (I + C X^T H_L X) d = -g is solved by CG using only Hessian-vector
products of the oracle at the current w (one sort per outer iteration).  The stopping
rule is the paper's: Newton decrement g.H^{-1}g / 2 (an estimate of f - f*; Boyd &
Vandenberghe 2004, sect. 9.5.1, invariant under feature scaling) divided by |f| below ``tol``
(1e-6 in the paper), the decrement read from a CG step that met the CG residual rule
||r||_{M^-1} <= eta ||g||_{M^-1} (Jacobi M; scale-free when preconditioned); or the
certificate ||g||^2/2 >= f - f* below tol * |f| (``rankbench.optim.accuracy``).  The unit step is tried first; backtracking with
Armijo's rule keeps extreme C (e.g. 2^20) from diverging.  Options for a warm start (the C path,
``ranksvm_path``; off by default, so a cold fit is the paper's algorithm) change the CG work,
not the stopping rule: ``newton_cg``'s docstring.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rankbench.optim.accuracy import (
    RESOLUTION,
    accuracy_dict,
    certificate,
    decrement_bound,
    want_preconditioner,
)
from rankbench.optim.history import History, OptimResult
from rankbench.optim.registry import register_optimizer

# memory of the residual basis of a reorthogonalized CG run (reorth=True): at most this many
# bytes, and at most d vectors (CG ends within d steps in exact arithmetic)
REORTH_MAX_BYTES = 64 * 2**20


class CGState:
    """Where a (Jacobi-preconditioned) CG run on H x = b stands: iterate ``x``, residual ``r``,
    direction ``p``, r.M^-1 r (``rz``) and its start value ``rz0`` (the stopping rule's scale),
    iterations ``it``, and ``broke`` (stopped on a non-positive curvature: it cannot go on).
    ``reorth``: keep the residuals (M^-1-normalized, ``U``; ``V`` = M^-1 U) and reorthogonalize
    each new one against them (``cg_run``), up to ``REORTH_MAX_BYTES`` and d of them."""

    __slots__ = ("x", "r", "p", "rz", "rz0", "minv", "it", "broke", "U", "V", "nb")

    def __init__(self, b: np.ndarray, precond: np.ndarray | None, reorth: bool = False):
        self.x = np.zeros_like(b)
        self.r = b.copy()
        self.minv = None if precond is None else 1.0 / precond
        zr = self.r if self.minv is None else self.minv * self.r
        self.p = zr.copy()
        self.rz = float(self.r @ zr)
        self.rz0 = self.rz
        self.it = 0
        self.broke = False
        self.U = self.V = None
        self.nb = 0
        if reorth and b.size:
            per = b.size * 8 * (1 if self.minv is None else 2)
            m = int(min(b.size, REORTH_MAX_BYTES // per))
            if m >= 1:
                self.U = np.empty((m, b.size))
                self.V = self.U if self.minv is None else np.empty((m, b.size))
                self._keep(self.r, zr, self.rz)

    def _keep(self, r: np.ndarray, zr: np.ndarray, rz: float) -> None:
        if self.nb < self.U.shape[0] and rz > 0.0:
            scale = 1.0 / np.sqrt(rz)
            self.U[self.nb] = r * scale
            if self.V is not self.U:
                self.V[self.nb] = zr * scale
            self.nb += 1


def cg_run(state: CGState, hess_vec, rtol: float, max_iter: int) -> CGState:
    """Run CG from ``state`` until ||r||_{M^-1} <= rtol ||b||_{M^-1} or ``state.it`` reaches
    ``max_iter`` (iterations counted from the start of the run, not of this call).  A run
    resumed with a smaller ``rtol`` goes through exactly the iterates, bit for bit, of one
    run started with that ``rtol``: only its iterations already done are not done again.
    A state made with ``reorth`` makes each new residual M^-1-orthogonal to the kept ones
    (classical Gram-Schmidt, twice): the iterates of CG in exact arithmetic, which rounding
    otherwise loses on ill-conditioned H (more steps for the same residual; Golub & Van Loan
    2013, sect. 10.3.5 and 11.3.8)."""
    stop = (rtol**2) * state.rz0
    x, r, p, minv = state.x, state.r, state.p, state.minv
    rz, it = state.rz, state.it
    while not state.broke and it < max_iter and rz > stop:
        Hp = hess_vec(p)
        pHp = float(p @ Hp)
        it += 1
        if not np.isfinite(pHp) or pHp <= 0.0:
            # H >= I in exact arithmetic; a non-positive curvature is rounding: keep what we have
            state.broke = True
            break
        alpha = rz / pHp
        x += alpha * p
        r -= alpha * Hp
        if state.U is not None:
            U, V = state.U[: state.nb], state.V[: state.nb]
            for _ in range(2):
                r -= (V @ r) @ U
        zr = r if minv is None else minv * r
        rz_new = float(r @ zr)
        if state.U is not None:
            state._keep(r, zr, rz_new)
        p = zr + (rz_new / rz) * p
        rz = rz_new
    state.p, state.rz, state.it = p, rz, it
    return state


def conjugate_gradient(hess_vec, b: np.ndarray, rtol: float, max_iter: int,
                       precond: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """Approximate solution of H x = b (H SPD) by CG, Jacobi-preconditioned when ``precond`` (diag H)
    is given; stops when ||r||_{M^-1} <= rtol ||b||_{M^-1} (the plain norm without M); returns
    (x, iterations)."""
    state = cg_run(CGState(b, precond), hess_vec, rtol, max_iter)
    return state.x, state.it


@dataclass(frozen=True)
class WarmStart:
    """How ``newton_cg`` treats a start near the solution: one policy, its four parts described
    in ``newton_cg``'s docstring.  ``WarmStart()`` is ``ranksvm_path``'s policy for every
    warm-started C (all parts on); ``COLD`` (every part off) is the paper's algorithm.
    ``grad_origin``: ||grad f(0)|| when the caller knows it (a C path scales its first fit's)."""

    forcing: str = "origin"
    resume_confirm: bool = True
    probe_certificate: bool = True
    cg_reorth: bool = True
    grad_origin: float | None = None

    def __post_init__(self) -> None:
        if self.forcing not in ("start", "origin"):
            raise ValueError(f"forcing must be 'start' or 'origin', got {self.forcing!r}")
        g = self.grad_origin
        if g is not None and not (np.isfinite(g) and g >= 0):
            raise ValueError(f"grad_origin must be a finite norm >= 0, got {g!r}")


COLD = WarmStart(forcing="start", resume_confirm=False, probe_certificate=False, cg_reorth=False)
WARM = WarmStart()  # ranksvm_path's policy


@register_optimizer(
    "newton", needs=("fun", "grad", "hess_vec", "hess_diag"),
    stopping_rule="Newton decrement g.H^-1.g / 2 (estimate of f - f*) <= tol * |f|, "
                  "or ||g||^2/2 <= tol * |f| (Boyd & Vandenberghe 9.5.1, eq. 9.9)",
    paper="Chapelle & Keerthi 2010, Alg. 1 (truncated Newton-CG of PRSVM and PRSVM+)")
def newton_cg(oracle, w0: np.ndarray | None = None, tol: float = 1e-6, max_iter: int = 200,
              max_cg_iter: int = 2000, precondition: bool | str = "auto", confirm_rtol: float = 1e-4,
              warm: WarmStart | None = None, keep_coef: bool = False,
              verbose: bool = False) -> OptimResult:
    """Minimize oracle.fun by truncated Newton-CG; stop when decrement/objective < tol.

    ``precondition``: Jacobi preconditioner from ``oracle.hess_diag()``; "auto" = for sparse X
    only (text features of very different frequency cost hundreds of CG iterations without it;
    on dense normalised LETOR features it saves nothing and costs O(nd) per iteration).

    The defaults are Chapelle's algorithm as the paper runs it from w0 = 0.  ``warm``, a
    ``WarmStart`` policy (None: off), makes a warm start (``w0`` near the solution, e.g. the
    previous C of ``ranksvm_path``) cheaper without changing the stopping rule (from w0 = 0
    ``forcing`` is a no-op and ``resume_confirm`` changes only the CG count); its fields:

    ``forcing``: the CG relative tolerance of Newton step k is eta_k = min(0.1, sqrt(||g_k|| /
    ||g_ref||)) (a superlinear forcing sequence, Eisenstat & Walker 1996; Dembo, Eisenstat &
    Steihaug 1982).  "start": g_ref = g(w0) (the paper's code); then a warm start, whose
    gradient is already small, keeps eta = 0.1 on every step and converges only linearly.
    "origin": eta_1 = 0.1 (the first step of any start; after a change of C it mostly moves
    the active set) and g_ref = grad f(0) of this objective (one more f and g, at w = 0), so
    every later step gets the eta a cold fit would use at the same gradient norm.
    ``grad_origin``: ||grad f(0)|| when the caller knows it (f = ||w||^2/2 + C L: it is C
    ||grad L(0)||, so a C path scales its first fit's), saving that evaluation; None: evaluated.
    ``resume_confirm``: the confirming solve (to ``confirm_rtol``) of a candidate stop goes on
    from the loose CG run instead of restarting at 0: the same step, bit for bit, without
    repeating the loose run's iterations.  ``probe_certificate``: at a candidate stop, first
    try the loose step (unit step, Armijo's rule); if the certificate ||g||^2/2 <= tol |f|
    holds there, stop there (a stopping rule of the cold fit too), else confirm as usual (one
    more f, and g, per failed probe).  ``cg_reorth``: CG keeps its residuals and makes each new
    one orthogonal to them (``CGState``; O(k d) per CG step and k d floats, k <= d, at most
    ``REORTH_MAX_BYTES``): on an ill-conditioned Newton system (large C) plain CG loses the
    orthogonality of its residuals and needs more steps for the same residual (more than d,
    where exact-arithmetic CG ends; tests/test_newton_warm.py); the step it returns is still a
    CG step meeting the same tolerance."""
    warm = COLD if warm is None else warm
    forcing, grad_origin, cg_reorth = warm.forcing, warm.grad_origin, warm.cg_reorth
    resume_confirm, probe_certificate = warm.resume_confirm, warm.probe_certificate
    precondition = want_preconditioner(oracle, precondition)
    d = oracle.n_features
    w = np.zeros(d) if w0 is None else np.array(w0, dtype=np.float64)
    hist = History(keep_coef=keep_coef, verbose=verbose, name="newton_cg")
    g_ref = None
    if forcing == "origin" and np.any(w) and grad_origin is not None:
        g_ref = float(grad_origin)
    elif forcing == "origin" and np.any(w):
        zero = np.zeros(d)
        oracle.fun(zero)
        g_ref = float(np.linalg.norm(oracle.grad(zero)))
    f = oracle.fun(w)
    g = oracle.grad(w)
    g0 = float(np.linalg.norm(g))
    if g_ref is None:
        g_ref = g0
    g_first = g.copy()
    decrement = None
    n_cg = 0
    hist.record(0, f, g0, 0, w)
    converged, message = False, "max_iter reached"
    it = 0
    for it in range(1, max_iter + 1):
        gnorm = float(np.linalg.norm(g))
        if gnorm == 0.0 or certificate(g) <= tol * abs(f):
            converged, message = True, "||g||^2/2 (>= f - f*) <= tol * |f|"
            it -= 1
            break
        # forcing term: loose CG far away, tight near the optimum (superlinear convergence)
        eta = 0.1 if forcing == "origin" and it == 1 else min(0.1, np.sqrt(gnorm / max(g_ref, 1e-300)))
        M = oracle.hess_diag() if precondition and hasattr(oracle, "hess_diag") else None
        cg = cg_run(CGState(-g, M, reorth=cg_reorth), oracle.hess_vec, eta, max_cg_iter)
        step, k = cg.x, cg.it
        n_cg += k
        gd = float(g @ step)
        # a certified upper bound on the decrement from the loose solve itself: where it holds,
        # the stop needs no tighter solve and the path stays the one every tol follows
        bound = decrement_bound(-0.5 * (gd - float(step @ cg.r)), cg.r)
        certified = bound <= tol * abs(f)
        if not certified and -0.5 * gd <= tol * abs(f) and eta > confirm_rtol:
            # candidate stop: a loose CG underestimates the decrement and the bound (||r||^2 is
            # not scale-free) does not settle it; confirm it with the Newton system solved to
            # confirm_rtol (as TRON does)
            if probe_certificate and gd < 0.0:
                w_try = w + step
                f_try = oracle.fun(w_try)
                if f_try <= f + 1e-4 * gd:
                    g_try = oracle.grad(w_try)
                    if certificate(g_try) <= tol * abs(f_try):
                        w, f, g, decrement = w_try, f_try, g_try, -0.5 * gd
                        hist.record(it, f, float(np.linalg.norm(g)), n_cg, w, step=1.0,
                                    decrement=decrement)
                        converged, message = True, "||g||^2/2 (>= f - f*) <= tol * |f|"
                        break
                oracle.fun(w)  # back to the oracle's state at w for the confirming solve
            if resume_confirm:
                cg = cg_run(cg, oracle.hess_vec, confirm_rtol, max_cg_iter)
                step, k = cg.x, cg.it - k
            else:
                cg = cg_run(CGState(-g, M, reorth=cg_reorth), oracle.hess_vec, confirm_rtol, max_cg_iter)
                step, k = cg.x, cg.it
            n_cg += k
            gd = float(g @ step)
        if not gd < 0.0:
            step, gd, certified = -g, -gnorm * gnorm, False  # fall back on steepest descent
        decrement = bound if certified else -0.5 * gd
        t = 1.0
        f_new = oracle.fun(w + step)
        n_back = 0
        while not (f_new <= f + 1e-4 * t * gd) and n_back < 40:
            # minimizer of the quadratic through f, the slope gd and f_new, kept in [0.1 t, 0.5 t]
            denom = 2.0 * (f_new - f - t * gd)
            t_q = -gd * t * t / denom if np.isfinite(f_new) and denom > 0 else 0.1 * t
            t = min(0.5 * t, max(0.1 * t, t_q))
            f_new = oracle.fun(w + t * step)
            n_back += 1
        if not f_new < f:  # no decrease (an equal f is rounding too: w would creep on, f stuck)
            oracle.fun(w)  # restore the oracle's cache at w
            # a decrement within 10 tol of f is the rule's own answer; a tol below what float64
            # resolves of f can never be met (stop_advice says so)
            converged = decrement <= tol * abs(f) * 10 and tol >= RESOLUTION
            message = "line search found no decrease (at rounding level)"
            it -= 1
            break
        w = w + t * step
        f = f_new
        g = oracle.grad(w)
        hist.record(it, f, float(np.linalg.norm(g)), n_cg, w, step=t, decrement=decrement)
        if decrement <= tol * abs(f) and t == 1.0:
            converged, message = True, "Newton decrement / objective < tol"
            break
        if certificate(g) <= tol * abs(f):
            converged, message = True, "||g||^2/2 (>= f - f*) <= tol * |f|"
            break
    acc = accuracy_dict(f, g, g_first, decrement=decrement, rule="newton_decrement", tol=tol)
    return OptimResult(w=w, f=f, n_iter=it, n_cg_iter=n_cg, converged=converged,
                       message=message, history=hist.rows, accuracy=acc)
