"""Scale-free stopping rules and the accuracy an optimizer reports with its result.

Every RankSVM objective f(w) = 1/2 ||w||^2 + C L(Xw) is 1-strongly convex, so at any w

    f(w) - f* <= ||grad f(w)||^2 / 2                   (Boyd & Vandenberghe 2004, eq. 9.9, m = 1)

a *certificate* that needs no knowledge of f*.  It is tight when the Hessian is near I (small C)
and loose when C ||X||^2 is large; then the Newton decrement

    lambda(w)^2 / 2 = g.H^-1.g / 2                     (Boyd & Vandenberghe 2004, sect. 9.5.1)

is the estimate of f - f* that does not change under any linear change of variables (feature
scaling included): exact for a quadratic, and f piecewise quadratic is one near its optimum.
CG gives lambda^2 / 2 as the decrease of the Newton model at a step s that solves H s = -g to
the CG residual rule (-(g.s + s.Hs/2), a lower estimate, within a factor 1 - eta^2).  For the
hinge loss (cutting plane) the gap between the best objective and the master problem's dual
bound is a certificate (Joachims 2006, sect. 4; Teo et al. 2010).

Each rule compares with ``tol * |f|``: a *relative* accuracy, independent of the scale of C,
of X and of the number of pairs.  ``accuracy_dict`` is what ``OptimResult.accuracy`` holds.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def certificate(g: np.ndarray) -> float:
    """||g||^2 / 2, an upper bound on f(w) - f* for a 1-strongly convex f."""
    g = np.asarray(g, dtype=np.float64)
    return 0.5 * float(g @ g)


def decrement_bound(prered: float, r: np.ndarray) -> float:
    """A certified upper bound on the Newton decrement lambda^2/2 = g.H^-1.g / 2 from an inexact
    Newton step s with residual r = -g - H s: ``prered`` = -(g.s + s.Hs/2) plus r.H^-1.r / 2,
    which is at most ||r||^2 / 2 because H >= I (f = ||w||^2/2 + C L is 1-strongly convex).
    Exact: -q(s*) = -q(s) + (s* - s).H.(s* - s) / 2 with H (s* - s) = r.  A stop on it needs no
    tighter solve, so the Newton path does not depend on tol (tol decides only where it ends)."""
    r = np.asarray(r, dtype=np.float64)
    return float(prered) + 0.5 * float(r @ r)


def want_preconditioner(oracle, precondition) -> bool:
    """Whether to Jacobi-precondition CG: True/False as given; "auto": for sparse X, or for dense X
    whose column norms differ by more than 1e3 (badly scaled features, e.g. OHSUMED Feature-min
    or one feature times 1e12, where unpreconditioned CG resolves only the largest direction)."""
    if precondition != "auto":
        return bool(precondition) and hasattr(oracle, "hess_diag")
    X = getattr(oracle, "X", None)
    if not hasattr(oracle, "hess_diag"):
        return False
    if X is None:  # an oracle without X at hand (query shards elsewhere) decides from its own stats
        return bool(getattr(oracle, "auto_precondition", False))
    if sp.issparse(X):
        return True
    col_sq = getattr(oracle, "col_sq_norms", None)  # from the oracle's check of X (one read)
    if col_sq is None:
        col_sq = np.einsum("ij,ij->j", X, X) if X.size else np.zeros(0)
    return columns_apart(col_sq)


def columns_apart(col_sq_norms: np.ndarray) -> bool:
    """Whether the non-zero column norms (given squared) differ by more than 1e3."""
    norms = np.sqrt(np.asarray(col_sq_norms, dtype=np.float64))
    norms = norms[norms > 0]
    return bool(norms.size and norms.max() > 1e3 * norms.min())


def accuracy_dict(f: float, g: np.ndarray | None = None, g0: np.ndarray | None = None,
                  decrement: float | None = None, gap: float | None = None, rule: str = "",
                  tol: float | None = None) -> dict:
    """The achieved accuracy at the returned point: relative gradient norm ||g|| / ||g0||,
    certificate ||g||^2/2 / |f|, Newton decrement lambda^2/2 / |f|, relative gap; None when not
    known."""
    af = abs(float(f)) if np.isfinite(f) and f != 0 else 1.0
    out: dict = {"stopping_rule": rule, "tol": None if tol is None else float(tol)}
    if g is not None:
        gn = float(np.linalg.norm(g))
        out["grad_norm"] = gn
        out["relative_certificate"] = certificate(g) / af
        if g0 is not None:
            g0n = float(np.linalg.norm(g0))
            out["relative_grad_norm"] = gn / g0n if g0n > 0 else 0.0
    if decrement is not None:
        out["relative_decrement"] = float(decrement) / af
    if gap is not None:
        out["relative_gap"] = float(gap) / af
    return out


# below this relative accuracy float64 cannot tell f(w) from f*: f sums |P| losses, each rounded
# to ~1e-16 relative, so the decrement, certificate or gap of a converged run is rounding noise
RESOLUTION = 1e-15


def stop_advice(message: str, accuracy: dict | None) -> str:
    """What to change after a run that stopped before its rule held, from its cause: a tol below
    float64's resolution of f, float64 rounding (the message says "rounding" or "precision"),
    the time limit, the iteration limit, or else the conditioning (large C |x|^2)."""
    tol = (accuracy or {}).get("tol")
    if tol is not None and tol < RESOLUTION:
        return (f"tol={tol:g} asks for more than float64 resolves of the objective (about "
                f"{RESOLUTION:g} relative): pass tol >= {RESOLUTION:g}")
    if "rounding" in message or "precision" in message:
        return ("float64 rounding stopped it before the stopping rule held (large C times "
                "|x|^2, or features of very different scales): scale the features (e.g. "
                "query-level or standard normalisation) or lower C, or pass a larger tol")
    if "max_time" in message:
        return "raise max_time, or lower C, or pass a larger tol"
    if "max_iter" in message or "LIMIT" in message:
        return "raise max_iter, or pass a larger tol"
    return ("scale the features (e.g. query-level or standard normalisation) or lower C, or "
            "pass a larger tol")
