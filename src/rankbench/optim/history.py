"""What every RankSVM optimizer returns: the solution, counts and one history row per iteration."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np


@dataclass
class OptimResult:
    """Solution ``w``, objective ``f``, outer iterations, total CG (or inner) iterations, history rows,
    achieved accuracy."""

    w: np.ndarray
    f: float
    n_iter: int
    n_cg_iter: int
    converged: bool
    message: str
    history: list[dict] = field(default_factory=list)
    # achieved accuracy at w (rankbench.optim.accuracy.accuracy_dict): relative gradient norm,
    # certificate ||g||^2/2/|f|, Newton decrement / |f| or relative gap, the rule and its tol
    accuracy: dict = field(default_factory=dict)


class History:
    """Collects rows {iter, objective, grad_norm, cg_iter (cumulative), elapsed [, coef]}."""

    def __init__(self, keep_coef: bool = False, verbose: bool = False, name: str = ""):
        self.rows: list[dict] = []
        self.keep_coef = keep_coef
        self.verbose = verbose
        self.name = name
        self.t0 = time.perf_counter()

    def record(self, it: int, f: float, grad_norm: float, cg_iter: int, w: np.ndarray, **extra) -> None:
        """Append one row (and print it when verbose)."""
        row = {"iter": int(it), "objective": float(f), "grad_norm": float(grad_norm),
               "cg_iter": int(cg_iter), "elapsed": time.perf_counter() - self.t0, **extra}
        if self.keep_coef:
            row["coef"] = np.array(w, dtype=np.float64, copy=True)
        self.rows.append(row)
        if self.verbose:
            more = " ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in extra.items())
            print(f"[{self.name}] iter {it:4d}  f={f:.10g}  |g|={grad_norm:.3e}  cg={cg_iter} {more}")
