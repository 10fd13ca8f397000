"""RankSVM benchmark: training time per fold on LETOR (Chapelle Table 3 setting), time and NDCG
against C (Fig. 1), AUC scaling curve on RCV1-shaped synthetic data (Fig. 3), extreme C
(Lee & Lin Table I), the warm-started C path of Fig. 1's grid against its costliest cold fit,
TRON vs cutting plane along the iterations (Lee & Lin Fig. II), and the
cost of one f+gradient and one Hessian-vector product of every oracle against n and the
number of levels k (Lee & Lin supplement sect. II: direct and Joachims' counting vs tree).

Times are ``RankSVM.fit_time_`` (numba compilation excluded, best of ``repeats``); the
machine is shared, so treat them as upper bounds.  Memory is the bytes of arrays an
oracle keeps besides X (``state_nbytes``): O(n) for counting/tree, O(p) for PRSVM.
"""

from __future__ import annotations

import time

import numpy as np

from rankbench.bench import PARTS
from rankbench.estimators.ranksvm import RankSVM, warm_up_kernels
from rankbench.objective import count_pairs, make_oracle

LETOR_C = {"OHSUMED": 1e-4, "MQ2008": 1e-3}
LETOR_SOLVERS = ("prsvm", "prsvm_plus", "tron_tree", "newton_tree", "tron_counting")
SCALING_SOLVERS = ("prsvm", "prsvm_plus", "tron_tree")
SCALING_N = (1_200, 2_400, 4_800, 9_600, 19_200, 50_000, 100_000, 200_000, 500_000, 1_000_000)
SCALING_C = 0.005  # Chapelle sect. 5.2 (RCV1 CCAT)
PRSVM_MAX_PAIRS = 30_000_000  # ~0.7 GB of pair indices and curvature: beyond, PRSVM is skipped
PRSVM_MAX_PAIRS_QUICK = 6_000_000


def _best_fit(make, X, y, qid, repeats):
    best = None
    for _ in range(repeats):
        m = make().fit(X, y, qid)
        if best is None or m.fit_time_ < best.fit_time_:
            best = m
    return best


def _liblinear_seconds(tr, C: float, repeats: int = 3) -> float | None:
    """The peer column: LIBLINEAR ranksvm's training seconds at its defaults (best of ``repeats``,
    file parsing excluded, docs/peers.md), or None when not built (make peers)."""
    from rankbench.peers import built

    if not built("liblinear"):
        return None
    from rankbench.peers.solvers import LiblinearRankSVM

    return min(LiblinearRankSVM(C=C).fit(tr.X, tr.y, tr.qid).fit_time_ for _ in range(repeats))


def letor_rows(quick: bool) -> list[dict]:
    """Fit time, objective and test NDCG@10 per (dataset, fold, solver); plus 5-fold totals."""
    from rankbench.data import dataset_available, load_fold
    from rankbench.metrics import ndcg_at_k

    rows = []
    for name, C in LETOR_C.items():
        if not dataset_available(name):
            rows.append({"part": "ranksvm", "case": f"letor/{name}", "seconds": float("nan"),
                         "note": "dataset not available (set RANKBENCH_DATA)"})
            continue
        totals: dict[str, float] = {}
        ndcg: dict[str, list[float]] = {}
        folds = range(1, 6) if (not quick or name == "OHSUMED") else range(1, 2)
        for fold in folds:
            tr = load_fold(name, fold, "train")
            te = load_fold(name, fold, "test")
            peer_s = _liblinear_seconds(tr, C)
            for solver in LETOR_SOLVERS:
                m = _best_fit(lambda s=solver, c=C: RankSVM(C=c, solver=s), tr.X, tr.y, tr.qid,
                              repeats=3)
                nd = ndcg_at_k(te.y, m.decision_function(te.X), te.qid, k=10, convention="letor")
                totals[solver] = totals.get(solver, 0.0) + m.fit_time_
                ndcg.setdefault(solver, []).append(nd)
                rows.append({"part": "ranksvm", "case": f"letor/{name}/fold{fold}/{solver}",
                             "seconds": m.fit_time_, "dataset": name, "fold": fold, "solver": solver,
                             "C": C, "n": tr.n_docs, "n_pairs": m.n_pairs_, "objective": m.objective_,
                             "n_iter": m.n_iter_, "n_cg_iter": m.n_cg_iter_, "test_ndcg@10": nd,
                             "liblinear_s": peer_s,
                             "ratio_vs_liblinear": m.fit_time_ / peer_s if peer_s else None})
                totals["liblinear_ranksvm"] = totals.get("liblinear_ranksvm", 0.0) + (peer_s or float("nan"))
        peer_total = totals.pop("liblinear_ranksvm", None)
        for solver, total in totals.items():
            rows.append({"part": "ranksvm", "case": f"letor/{name}/total/{solver}", "seconds": total,
                         "dataset": name, "solver": solver, "C": C, "folds": len(ndcg[solver]),
                         "test_ndcg@10": float(np.mean(ndcg[solver])), "liblinear_s": peer_total,
                         "ratio_vs_liblinear": total / peer_total if peer_total else None})
    return rows


def _auc_data(n: int, seed: int = 0):
    from rankbench.data.synthetic import make_rcv1_like

    return make_rcv1_like(n=n, seed=seed)


def scaling_rows(quick: bool, sizes=None) -> list[dict]:
    """AUC problem (one query, binary labels), time vs n for PRSVM, PRSVM+ and TRON-tree."""
    rows = []
    if sizes is None:
        sizes = [n for n in SCALING_N if n <= (19_200 if quick else 1_000_000)]
    cap = PRSVM_MAX_PAIRS_QUICK if quick else PRSVM_MAX_PAIRS
    for n in sizes:
        t = time.perf_counter()
        data = _auc_data(n)
        gen = time.perf_counter() - t
        p = count_pairs(data.y, data.query_ptr)
        for solver in SCALING_SOLVERS:
            row = {"part": "ranksvm", "case": f"auc_scaling/n={n}/{solver}", "n": n, "n_pairs": p,
                   "nnz": int(data.X.nnz), "solver": solver, "C": SCALING_C, "generate_s": gen}
            if solver == "prsvm" and p > cap:
                row.update(seconds=float("nan"),
                           note=f"skipped: {p:.3g} pairs > {cap:.0e} (O(p) memory/time)")
                rows.append(row)
                continue
            repeats = 3 if n <= 20_000 else 1
            m = _best_fit(lambda s=solver: RankSVM(C=SCALING_C, solver=s), data.X, data.y, None,
                          repeats=repeats)
            oracle = {"prsvm": "pairs", "prsvm_plus": "counting", "tron_tree": "tree"}[solver]
            o = make_oracle(oracle, data.X, data.y, data.query_ptr, C=SCALING_C)
            o.fun(m.coef_)
            row.update(seconds=m.fit_time_, objective=m.objective_, n_iter=m.n_iter_,
                       n_cg_iter=m.n_cg_iter_, oracle_state_mb=o.state_nbytes() / 2**20,
                       workspace_mb=o.workspace_nbytes() / 2**20,
                       X_mb=(data.X.data.nbytes + data.X.indices.nbytes + data.X.indptr.nbytes) / 2**20)
            del o
            rows.append(row)
    return rows


def extreme_C_rows(quick: bool) -> list[dict]:
    """MQ2008 Fold1 at C = 2^20 (Lee & Lin Table I): time, convergence, share of pairs with margin >= 1."""
    from rankbench.data import dataset_available, load_fold

    if not dataset_available("MQ2008"):
        return []
    tr = load_fold("MQ2008", 1, "train")
    rows = []
    for solver in ("prsvm_plus", "tron_tree") if quick else ("prsvm", "prsvm_plus", "tron_tree"):
        m = RankSVM(C=2.0**20, solver=solver).fit(tr.X, tr.y, tr.qid)
        rows.append({"part": "ranksvm", "case": f"extreme_C/MQ2008/fold1/{solver}",
                     "seconds": m.fit_time_, "C": 2.0**20, "solver": solver, "objective": m.objective_,
                     "n_iter": m.n_iter_, "n_cg_iter": m.n_cg_iter_, "converged": m.converged_,
                     "zero_dual_share": m.zero_dual_share_, "paper_zero_dual_share": 0.2244})
    return rows


def convergence_rows(quick: bool, name: str = "MQ2008", C_l2: float = 1e-3,
                     C_l1: float = 1e-3) -> list[dict]:
    """Lee & Lin supplement Fig. II: Tree-TRON (L2 loss, per CG iteration) vs cutting plane (hinge,
    per iteration): relative objective, test pairwise accuracy and NDCG@10 along the way."""
    from rankbench.data import dataset_available, load_fold
    from rankbench.metrics import ndcg_at_k, pairwise_accuracy

    if not dataset_available(name):
        return []
    tr = load_fold(name, 1, "train")
    te = load_fold(name, 1, "test")
    rows = []
    runs = (("tron_tree", "squared_hinge", C_l2, 1e-3, 1e-9),
            ("cutting_plane", "hinge", C_l1, 1e-4, 1e-8))
    for solver, loss, C, tol, tight in runs:
        ref = RankSVM(C=C, solver=solver, loss=loss, tol=tight, max_iter=20_000).fit(tr.X, tr.y, tr.qid)
        m = RankSVM(C=C, solver=solver, loss=loss, tol=tol if quick else tight, max_iter=20_000,
                    keep_coef_history=True).fit(tr.X, tr.y, tr.qid)
        default_stop = RankSVM(C=C, solver=solver, loss=loss).fit(tr.X, tr.y, tr.qid).n_cg_iter_
        for h in m.history_:
            s = te.X @ h["coef"]
            rows.append({"part": "ranksvm", "case": f"convergence/{name}/fold1/{solver}/it{h['iter']}",
                         "seconds": h["elapsed"], "solver": solver, "loss": loss, "C": C,
                         "cg_iter": h["cg_iter"], "objective": h["objective"],
                         "relative_objective": (h["objective"] - ref.objective_) / ref.objective_,
                         "test_pairwise_accuracy": pairwise_accuracy(te.y, s, te.qid),
                         "test_ndcg@10": ndcg_at_k(te.y, s, te.qid, k=10),
                         "default_stop_cg_iter": default_stop})
    return rows


def c_sweep_rows(quick: bool, name: str = "OHSUMED") -> list[dict]:
    """Chapelle Fig. 1: 5-fold training time and mean test NDCG@10 against C, PRSVM and PRSVM+."""
    from rankbench.data import dataset_available, load_fold
    from rankbench.metrics import ndcg_at_k

    if not dataset_available(name):
        return []
    folds = range(1, 2) if quick else range(1, 6)
    data = [(load_fold(name, f, "train"), load_fold(name, f, "test")) for f in folds]
    rows = []
    for C in (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0):
        for solver in ("prsvm", "prsvm_plus"):
            total, nd, cg = 0.0, [], 0
            for tr, te in data:
                m = RankSVM(C=C, solver=solver).fit(tr.X, tr.y, tr.qid)
                total += m.fit_time_
                cg += m.n_cg_iter_
                nd.append(ndcg_at_k(te.y, m.decision_function(te.X), te.qid, k=10, convention="letor"))
            rows.append({"part": "ranksvm", "case": f"c_sweep/{name}/C={C:g}/{solver}", "seconds": total,
                         "dataset": name, "solver": solver, "C": C, "folds": len(data),
                         "n_cg_iter": cg, "test_ndcg@10": float(np.mean(nd))})
    return rows


FIG1_CS = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0)  # Chapelle Fig. 1 (conf/experiment/chapelle2010/fig1.yaml)
PATH_TARGET_RATIO = 2.0  # issue 14: the whole warm path within 2x the grid's costliest cold fit


def path_rows(quick: bool, name: str = "OHSUMED", repeats: int = 3) -> list[dict]:
    """Warm-started C path (``ranksvm_path``) over Chapelle Fig. 1's 7 C values on Fold 1 against
    the single most expensive cold fit of the grid: best of ``repeats`` for the path's total
    time and for every cold fit (interleaved); ``ratio`` = path / costliest cold fit."""
    from rankbench.data import dataset_available, load_fold
    from rankbench.estimators.ranksvm import ranksvm_path

    if not dataset_available(name):
        return [{"part": "ranksvm", "case": f"path/{name}", "seconds": float("nan"),
                 "note": "dataset not available (set RANKBENCH_DATA)"}]
    tr = load_fold(name, 1, "train")
    rows = []
    for solver in ("prsvm_plus",) if quick else ("prsvm_plus", "tron_tree"):
        path_s, cold = np.inf, {C: np.inf for C in FIG1_CS}
        iters, cgs = {}, {}
        for _ in range(repeats):
            p = ranksvm_path(tr.X, tr.y, tr.qid, FIG1_CS, solver=solver)
            path_s = min(path_s, p.total_time)
            for C in FIG1_CS:
                m = RankSVM(C=C, solver=solver).fit(tr.X, tr.y, tr.qid)
                cold[C] = min(cold[C], m.fit_time_)
                iters[C], cgs[C] = m.n_iter_, m.n_cg_iter_
        worst = max(cold, key=cold.get)
        rows.append({"part": "ranksvm", "case": f"path/{name}/fold1/{solver}", "seconds": path_s,
                     "dataset": name, "solver": solver, "Cs": list(FIG1_CS),
                     "cold_max_s": cold[worst], "cold_max_C": worst,
                     "cold_sum_s": float(sum(cold.values())),
                     "ratio": path_s / cold[worst], "target_ratio": PATH_TARGET_RATIO,
                     "path_n_iter": p.n_iter.tolist(), "cold_n_iter": [iters[C] for C in FIG1_CS],
                     "path_n_cg_iter": p.n_cg_iter.tolist(), "cold_n_cg_iter": [cgs[C] for C in FIG1_CS],
                     "all_converged": bool(p.converged.all()), "repeats": repeats})
    return rows


ORACLE_TIMING = ("pairs", "counting", "tree", "direct", "joachims")
ORACLE_PAIRS_MAX = 5_000_000  # the explicit pair list beyond this: skipped (O(p) memory)


def _time_min(fn, repeats: int) -> float:
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def fun_grad_call(oracle, w):
    """A call that evaluates f and the gradient at w, for timing: alternately at w with its last
    bit moved up and down (np.nextafter; neither is w, where the caller may just have called
    ``fun``), as an oracle returns f at the point of its last ``fun`` without evaluating it again
    (``PairOracle.fun``)."""
    w = np.asarray(w, dtype=np.float64)
    points = (np.nextafter(w, np.inf), np.nextafter(w, -np.inf))
    state = [0]

    def call():
        x = points[state[0]]
        state[0] ^= 1
        return oracle.fun(x), oracle.grad(x)

    return call


def oracle_rows(quick: bool) -> list[dict]:
    """Seconds per f+gradient and per Hessian-vector product of each oracle (Lee & Lin suppl.
    sect. II: direct O(nk), Joachims' Alg. (I) O(nk) in k sweeps, counting O(nk) per level pair
    merge, tree O(n log k), pairs O(p)) on one query of n documents with k relevance levels
    (uniform labels, Gaussian features, d = 20), min of the repeats, interleaved by oracle."""
    rows = []
    sizes = (2_000, 20_000) if quick else (2_000, 20_000, 200_000)
    for n in sizes:
        for k in (2, 5, 50, 500):
            rng = np.random.default_rng(n + k)
            X = rng.standard_normal((n, 20))
            y = rng.integers(0, k, size=n)
            ptr = np.array([0, n], dtype=np.int64)
            w = rng.standard_normal(20) * 0.1
            v = rng.standard_normal(20)
            p = count_pairs(y, ptr)
            oracles = {}
            for name in ORACLE_TIMING:
                if name == "pairs" and p > ORACLE_PAIRS_MAX:
                    rows.append({"part": "ranksvm", "case": f"oracle/n={n}/k={k}/{name}", "n": n, "k": k,
                                 "oracle": name, "n_pairs": p, "seconds": float("nan"),
                                 "note": f"skipped: {p:.3g} pairs > {ORACLE_PAIRS_MAX:.0e} (O(p) memory)"})
                    continue
                oracles[name] = make_oracle(name, X, y, ptr, C=1.0)
            repeats = 5 if n <= 20_000 else 2
            fg = {name: np.inf for name in oracles}
            hv = {name: np.inf for name in oracles}
            for _ in range(repeats):  # interleaved: each round times every oracle once
                for name, o in oracles.items():
                    fg[name] = min(fg[name], _time_min(fun_grad_call(o, w), 1))
                    hv[name] = min(hv[name], _time_min(lambda o=o, v=v: o.hess_vec(v), 1))
            f_ref = oracles["tree"].fun(w)
            for name, o in oracles.items():
                rows.append({"part": "ranksvm", "case": f"oracle/n={n}/k={k}/{name}", "n": n, "k": k,
                             "oracle": name, "n_pairs": p, "seconds": fg[name] + hv[name],
                             "fun_grad_s": fg[name], "hess_vec_s": hv[name],
                             "rel_diff_f_vs_tree": abs(o.fun(w) - f_ref) / abs(f_ref)})
    return rows


@PARTS.register("ranksvm")
def run(quick: bool = False) -> list[dict]:
    """All RankSVM benchmark rows (quick: OHSUMED folds, MQ2008 fold 1, n <= 19,200)."""
    compile_s = warm_up_kernels()
    rows = [{"part": "ranksvm", "case": "numba_warm_up", "seconds": compile_s}]
    rows += oracle_rows(quick)
    rows += letor_rows(quick)
    rows += extreme_C_rows(quick)
    rows += convergence_rows(quick)
    rows += c_sweep_rows(quick)
    rows += path_rows(quick)
    rows += scaling_rows(quick)
    return rows
