"""Limited-memory BFGS on the oracle's f and gradient: scipy's L-BFGS-B without bounds.

A quasi-Newton method needs no Hessian-vector products, so it runs on any loss with a
gradient (squared hinge, Huber, logistic) and any oracle: one f + gradient evaluation (one
sort, one counting pass) per line-search step.  The stopping rule is TRON's, checked after
every iteration: ||grad f(w)|| <= tol * ||grad f(w0)||, so lbfgs_<oracle> and tron_<oracle>
stop at the same accuracy; scipy's own tests (ftol, gtol) are switched off.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from rankbench.optim.history import History, OptimResult
from rankbench.optim.registry import register_optimizer


@register_optimizer(
    "lbfgs", needs=("fun", "grad"),
    stopping_rule="||grad f(w)|| <= tol * ||grad f(w0)|| (TRON's rule), after each iteration",
    paper="Liu & Nocedal 1989; L-BFGS-B of Byrd, Lu, Nocedal & Zhu 1995 (scipy)")
def lbfgs(oracle, w0: np.ndarray | None = None, tol: float = 1e-3, max_iter: int = 1000,
          memory: int = 10, keep_coef: bool = False, verbose: bool = False) -> OptimResult:
    """Minimize oracle.fun by L-BFGS (``memory`` correction pairs); stop when ||g|| <= tol ||g0||.

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
    state = {"it": 0, "converged": g0norm == 0.0, "w": w, "f": f0}

    def on_iteration(intermediate_result):
        x = intermediate_result.x
        if last["w"] is None or not np.array_equal(x, last["w"]):
            fun_grad(x)  # the accepted point is normally the last one evaluated
        gnorm = float(np.linalg.norm(last["g"]))
        state.update(it=state["it"] + 1, w=last["w"].copy(), f=last["f"])
        hist.record(state["it"], last["f"], gnorm, last["n_eval"], last["w"])
        if gnorm <= tol * g0norm:
            state["converged"] = True
            raise StopIteration

    message = "initial point optimal"
    if not state["converged"]:
        r = minimize(fun_grad, w, jac=True, method="L-BFGS-B", callback=on_iteration,
                     options={"maxiter": max_iter, "maxcor": memory, "ftol": 0.0, "gtol": 0.0,
                              "maxfun": max(15000, 20 * max_iter)})
        message = "||g|| <= tol * ||g0||" if state["converged"] else f"scipy: {r.message}"
    w, f = state["w"], state["f"]
    oracle.fun(w)  # leave the oracle's cache at the returned point
    return OptimResult(w=w, f=float(f), n_iter=state["it"], n_cg_iter=last["n_eval"],
                       converged=bool(state["converged"]), message=message, history=hist.rows)
