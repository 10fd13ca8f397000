"""Limited-memory BFGS on the oracle's f and gradient: scipy's L-BFGS-B without bounds.

A quasi-Newton method needs no Hessian-vector products, so it runs on any loss with a
gradient (squared hinge, Huber, logistic) and any oracle: one f + gradient evaluation (one
sort, one counting pass) per line-search step.  Stopping rule, checked after every iteration:
the certificate ||grad f(w)||^2 / 2 >= f(w) - f* (f is 1-strongly convex; Boyd & Vandenberghe
2004, eq. 9.9) is <= tol * |f|: the returned w is then certified within tol relative objective,
whatever the scale of C or of the features (no Hessian, so no Newton decrement).  scipy's own
tests (ftol, gtol) are switched off; a stall of its line search ends the run unconverged.
"""

from __future__ import annotations

import numpy as np

from rankbench.optim.accuracy import accuracy_dict, certificate
from rankbench.optim.history import History, OptimResult
from rankbench.optim.registry import register_optimizer


@register_optimizer(
    "lbfgs", needs=("fun", "grad"),
    stopping_rule="||g||^2/2 (>= f - f*, 1-strong convexity) <= tol * |f|, after each iteration",
    paper="Liu & Nocedal 1989; L-BFGS-B of Byrd, Lu, Nocedal & Zhu 1995 (scipy)")
def lbfgs(oracle, w0: np.ndarray | None = None, tol: float = 1e-6, max_iter: int = 1000,
          memory: int = 10, keep_coef: bool = False, verbose: bool = False) -> OptimResult:
    """Minimize oracle.fun by L-BFGS (``memory`` correction pairs); stop when ||g||^2/2 <= tol |f|.

    History rows count function + gradient evaluations in ``cg_iter`` (the inner work)."""
    d = oracle.n_features
    w = np.zeros(d) if w0 is None else np.array(w0, dtype=np.float64)
    hist = History(keep_coef=keep_coef, verbose=verbose, name="lbfgs")
    last = {"w": None, "f": np.inf, "g": None, "n_eval": 0}

    def fun_grad(x):
        f = oracle.fun(x)
        g = oracle.grad(x)
        last.update(w=x.copy(), f=f, g=g, n_eval=last["n_eval"] + 1)
        return f, g

    f0, g0 = fun_grad(w)
    g0norm = float(np.linalg.norm(g0))
    hist.record(0, f0, g0norm, 1, w)
    state = {"it": 0, "converged": certificate(g0) <= tol * abs(f0), "w": w, "f": f0, "g": g0}

    def on_iteration(intermediate_result):
        x = intermediate_result.x
        if last["w"] is None or not np.array_equal(x, last["w"]):
            fun_grad(x)  # the accepted point is normally the last one evaluated
        gnorm = float(np.linalg.norm(last["g"]))
        state.update(it=state["it"] + 1, w=last["w"].copy(), f=last["f"], g=last["g"].copy())
        hist.record(state["it"], last["f"], gnorm, last["n_eval"], last["w"])
        if certificate(last["g"]) <= tol * abs(last["f"]):
            state["converged"] = True
            raise StopIteration

    message = "initial point optimal"
    if not state["converged"]:
        from scipy.optimize import minimize  # here: scipy.optimize costs more to import than a fit

        r = minimize(fun_grad, w, jac=True, method="L-BFGS-B", callback=on_iteration,
                     options={"maxiter": max_iter, "maxcor": memory, "ftol": 0.0, "gtol": 0.0,
                              "maxfun": max(15000, 20 * max_iter)})
        message = "||g||^2/2 (>= f - f*) <= tol * |f|" if state["converged"] else f"scipy: {r.message}"
    w, f = state["w"], state["f"]
    oracle.fun(w)  # leave the oracle's cache at the returned point
    acc = accuracy_dict(f, state["g"], g0, rule="certificate", tol=tol)
    return OptimResult(w=w, f=float(f), n_iter=state["it"], n_cg_iter=last["n_eval"],
                       converged=bool(state["converged"]), message=message, history=hist.rows,
                       accuracy=acc)
