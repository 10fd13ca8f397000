"""Solvers at equal accuracy (issue 11, benchopt's view): relative suboptimality against wall time.

Each solver runs with a tight tolerance and records its objective after every iteration
(``history_``); the reference is the best objective any solver reached on that problem.  Rows
give, per problem and solver, the wall time to reach relative suboptimality 1e-2, 1e-4 and 1e-6
(``nan`` = never reached), and one figure per problem draws (f_t - f_best) / f_best against wall
time (``results/bench/accuracy_<problem>.png``).  Wall time of an iterate = the optimizer's
elapsed time plus the oracle's setup (``fit_time_`` minus the optimizer's own time: the pair list
of PRSVM, the label levels, the sort structures), numba compilation excluded.

Problems: OHSUMED (QueryLevelNorm) and MQ2008 Fold1 at the papers' C, a 480,000-document
LETOR-like synthetic (12,000 queries of 40 documents, 46 features) and a 1,000,000-document
sparse AUC problem (RCV1-like, one query).  ``--quick`` shrinks the synthetic ones to 48,000 and
100,000 documents.  The machine is shared: times are upper bounds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rankbench.estimators.ranksvm import RankSVM, warm_up_kernels

LEVELS = (1e-2, 1e-4, 1e-6)
SOLVERS = ("prsvm", "prsvm_plus", "newton_tree", "tron_tree", "tron_counting", "lbfgs_tree")
TIGHT = 1e-12
OUT = Path("results/bench")


def _problems(quick: bool):
    """(name, C, X, y, qid, solvers) per problem; data sets not on disk are skipped."""
    from rankbench.data import dataset_available, load_fold
    from rankbench.data.synthetic import make_letor_like, make_rcv1_like

    for name, C in (("OHSUMED", 1e-4), ("MQ2008", 1e-3)):
        if dataset_available(name):
            tr = load_fold(name, 1, "train")
            yield f"{name}_fold1", C, tr.X, tr.y, tr.qid, SOLVERS
    nq = 1_200 if quick else 12_000
    d = make_letor_like(n_queries=nq, docs_per_query=(30, 50), n_features=46, n_levels=3, seed=0)
    yield f"synthetic_letor_{d.n_docs}", 1e-3, d.X, d.y, d.qid, SOLVERS
    n = 100_000 if quick else 1_000_000
    a = make_rcv1_like(n=n, seed=0)
    # explicit pairs of a one-query AUC problem are O(n^2): PRSVM is left out
    yield f"auc_sparse_{a.n_docs}", 0.005, a.X, a.y, None, tuple(s for s in SOLVERS if s != "prsvm")


def _curve(m: RankSVM) -> tuple[np.ndarray, np.ndarray]:
    """(wall seconds, objective) per iterate, setup time included."""
    t = np.array([h["elapsed"] for h in m.history_])
    f = np.array([h["objective"] for h in m.history_])
    setup = max(0.0, m.fit_time_ - float(t[-1])) if t.size else 0.0
    return t + setup, f


def _time_to(t: np.ndarray, sub: np.ndarray, level: float) -> float:
    hit = np.flatnonzero(sub <= level)
    return float(t[hit[0]]) if hit.size else float("nan")


def _figure(problem: str, curves: dict, f_best: float, out: Path) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.2, 3.0))
    styles = ["-", "--", "-.", ":"]
    for k, (solver, (t, f)) in enumerate(sorted(curves.items())):
        sub = np.maximum((f - f_best) / f_best, 1e-16)
        ax.semilogy(t, sub, styles[k % 4], marker="o", ms=2.5, lw=1.1, label=solver)
    for level in LEVELS:
        ax.axhline(level, color="0.8", lw=0.6, zorder=0)
    ax.set_xlabel("wall time (s, shared machine)")
    ax.set_ylabel("(f - f_best) / f_best")
    ax.set_title(problem, fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path = out / f"accuracy_{problem}.png"
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return str(path)


def run(quick: bool = False, out: Path = OUT) -> list[dict]:
    """Rows: per problem x solver, time to 1e-2 / 1e-4 / 1e-6 relative suboptimality; figures."""
    warm_up_kernels()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    for problem, C, X, y, qid, solvers in _problems(quick):
        curves, fits = {}, {}
        for s in solvers:
            m = RankSVM(C=C, solver=s, tol=TIGHT, max_iter=2000 if s == "lbfgs_tree" else 500,
                        keep_coef_history=False)
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m.fit(X, y, qid)
            fits[s] = m
            curves[s] = _curve(m)
        f_best = min(float(np.min(f)) for _, f in curves.values())
        fig = _figure(problem, curves, f_best, out)
        for s, (t, f) in curves.items():
            sub = (f - f_best) / f_best
            m = fits[s]
            row = {"part": "accuracy", "case": f"accuracy/{problem}/{s}", "problem": problem,
                   "solver": s, "C": C, "n": int(np.asarray(y).shape[0]), "f_best": f_best,
                   "final_rel_subopt": float(sub[-1]), "converged": m.converged_,
                   "seconds": float(t[-1]), "figure": fig}
            for level in LEVELS:
                row[f"t_{level:g}"] = _time_to(t, sub, level)
            rows.append(row)
    return rows
