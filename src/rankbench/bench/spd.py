"""SPD benchmarks (Sculley 2009): step speed, LETOR MAP against RankSVM, convergence to the optimum.

Cases (rows of ``run``; ``seconds`` is wall time, ``cpu_seconds`` process CPU time, both
with numba compilation excluded and the sampling index included):

- ``ohsumed_fold1_1e5``: 100,000 steps on OHSUMED QueryLevelNorm Fold1 train, per learner
  (the paper: 0.2-0.3 CPU s per LETOR task with sofia-ml).
- ``ohsumed_fold1_1e8``: 10^8 Pegasos steps (10^6 with ``quick``).
- ``rcv1_like_1e5``: 100,000 steps on a synthetic sparse problem shaped like RCV1 E311
  (781,265 x 47,236, ~75 non-zeros per row, 0.2% positive; one query), per sampler.
- ``map_<dataset>_<learner>``: test MAP per fold, lambda (PA-I: C) chosen on validation MAP,
  beside the published LETOR RankSVM MAP and our cutting-plane RankSVM (C chosen the same
  way) (Sculley Fig. 1); fold 1 only with ``quick``.
- ``optimum_ohsumed_fold1``: Pegasos with the exact-uniform sampler after 10^7 steps
  against the cutting-plane hinge RankSVM at C = 1/(lambda |P|).
- ``convergence_ohsumed_fold1``: Sculley Fig. 2 (the paper used hp2003, not obtainable
  here): train and test objective and test MAP at 1, 2, 5 x 10^k steps up to 10^7
  (10^5 with ``quick``), one uninterrupted run per learner.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np

from rankbench.estimators.spd import SPDRanker
from rankbench.optim.samplers import build_pair_index
from rankbench.optim.spd import SPDState, prepare_X, run_segment

PART = "spd"
LAM_GRID = (1.0, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5)
PA_C_GRID = (1e-3, 1e-2, 1e-1, 1.0)
RANKSVM_C_GRID = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2)  # C_equiv of lambda in [2.7e-4, 2.7] on OHSUMED
LEARNERS = ("pegasos", "sgd_svm", "pa1", "romma", "perceptron", "margin_perceptron")
# (data set name for load_fold, published baseline source)
LETOR_SETS = {"OHSUMED": "LETOR3.0", "MQ2008": "LETOR4.0"}


def published_ranksvm_map(dataset: str, root: str | Path | None = None) -> dict[int, float]:
    """Published per-fold test MAP of RankSVM: LETOR 3.0 RankSVM.xls (OHSUMED) or LETOR 4.0
    RankSVM-Struct.<set>.txt (MQ2007/MQ2008), read from ``<root>/baselines``."""
    from rankbench.data.registry import data_root

    base = data_root(root)
    if base is None:
        raise FileNotFoundError("no data root: set RANKBENCH_DATA")
    if dataset.upper().startswith("MQ"):
        return _letor4_test_map(base / "baselines" / "LETOR4.0" / f"RankSVM-Struct.{dataset.upper()}.txt")
    return _letor3_test_map(base / "baselines" / "LETOR3.0" / "RankSVM.xls", dataset.upper())


def _letor3_test_map(path: Path, sheet: str) -> dict[int, float]:
    import pandas as pd

    with warnings.catch_warnings():
        # pandas 3 deprecates its xlrd engine; LETOR 3.0 ships legacy .xls files only.
        warnings.simplefilter("ignore")
        df = pd.read_excel(path, sheet_name=sheet, header=None, engine="xlrd")
    col0 = df[0].astype(str).str.strip()
    col1 = df[1].astype(str).str.strip()
    # The first "Folds | MAP" table belongs to "Performance on testing set".
    start = int(np.flatnonzero((col0 == "Folds") & (col1 == "MAP"))[0])
    out = {}
    for k in range(1, 6):
        row = start + k
        if col0[row] != f"Fold{k}":
            raise ValueError(f"{path}, sheet {sheet}: expected Fold{k} at row {row + 1}, got {col0[row]!r}")
        out[k] = float(df.iloc[row, 1])
    return out


def _letor4_test_map(path: Path) -> dict[int, float]:
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Performance on testing set"))
    for i in range(start, len(lines)):
        cells = [c.strip() for c in lines[i].split("\t")]
        if cells[0] == "Para" and "MAP" in cells:
            col = cells.index("MAP")
            # Five rows follow, Fold1..Fold5 in order (first column is the chosen C).
            return {k: float(lines[i + k].split("\t")[col]) for k in range(1, 6)}
    raise ValueError(f"{path}: no MAP table under 'Performance on testing set'")


def _timed(fn, repeats: int) -> tuple[float, float]:
    """(min wall seconds, min CPU seconds) of ``fn()`` over ``repeats`` calls."""
    walls, cpus = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus)


def spd_steps_seconds(X, y, query_ptr, n_steps: int, learner: str = "pegasos",
                      sampler: str = "indexed", lam: float = 1e-3, repeats: int = 5
                      ) -> tuple[float, float]:
    """Wall and CPU seconds (best of ``repeats``) of index construction + ``n_steps`` SPD steps."""
    Xk = prepare_X(X)

    def once():
        index = build_pair_index(y, query_ptr)
        run_segment(Xk, index, SPDState.start(Xk.shape[1], 0), n_steps, learner, lam, 0.01, sampler)

    run_segment(Xk, build_pair_index(y, query_ptr), SPDState.start(Xk.shape[1], 0), 10, learner,
                lam, 0.01, sampler)  # compile / load outside the timing
    return _timed(once, repeats)


def _row(case: str, seconds: float, **extra) -> dict:
    row = {"part": PART, "case": case, "seconds": seconds, **extra}
    shown = {k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in row.items() if k != "part"}
    print(f"[spd] {shown}", flush=True)  # progress: the full table prints at the end
    return row


def timing_rows(quick: bool) -> list[dict]:
    """Speed of 1e5 and 1e8 steps on OHSUMED Fold1 train."""
    from rankbench.data import dataset_available, load_fold

    if not dataset_available("OHSUMED"):
        print("[spd] OHSUMED not under RANKBENCH_DATA: OHSUMED timings skipped")
        return []
    tr = load_fold("OHSUMED", 1, "train")
    rows = []
    for learner in LEARNERS + ("sgd_squared_hinge",):
        for sampler in ("indexed", "uniform", "rejection", "sofia"):
            if quick and sampler != "indexed":
                continue
            wall, cpu = spd_steps_seconds(tr.X, tr.y, tr.query_ptr, 100_000, learner, sampler)
            rows.append(_row("ohsumed_fold1_1e5", wall, cpu_seconds=cpu, learner=learner,
                             sampler=sampler, n_steps=100_000, target_s=0.02))
    n_big = 10**6 if quick else 10**8
    wall, cpu = spd_steps_seconds(tr.X, tr.y, tr.query_ptr, n_big, "pegasos", "indexed", repeats=1)
    rows.append(_row(f"ohsumed_fold1_1e{int(np.log10(n_big))}", wall, cpu_seconds=cpu,
                     learner="pegasos", sampler="indexed", n_steps=n_big,
                     target_s=15.0 if n_big == 10**8 else None))
    return rows


def rcv1_like_rows(quick: bool) -> list[dict]:
    """Speed of 1e5 steps on a sparse RCV1-E311-shaped single-query problem."""
    from rankbench.data.synthetic import make_rcv1_like

    n = 100_000 if quick else 781_265
    t = time.perf_counter()
    data = make_rcv1_like(n=n, d=47_236, nnz_per_row=75, positive_rate=0.002, seed=0)
    gen_s = time.perf_counter() - t
    rows = []
    for learner in ("pegasos", "pa1"):
        for sampler in ("indexed", "uniform", "rejection"):
            wall, cpu = spd_steps_seconds(data.X, data.y, data.query_ptr, 100_000, learner,
                                          sampler, lam=1e-5, repeats=3)
            rows.append(_row("rcv1_like_1e5", wall, cpu_seconds=cpu, learner=learner,
                             sampler=sampler, n_docs=n, nnz=int(data.X.nnz),
                             positives=int(data.y.sum()), generate_s=gen_s, target_s=1.0,
                             synthetic=True))
    return rows


def select_on_validation(candidates: list[tuple[dict, float, object]], solver: str) -> int:
    """Index of the candidate ``(params, vali_map, model)`` that ``rankbench.selection`` picks.

    The benchmark does not choose by itself (one selection rule: selection.select_per_fold,
    best validation MAP, ties to the smallest parameter values).
    """
    import json

    import pandas as pd

    from rankbench.selection import select_per_fold

    rows = [{"experiment": "bench.spd", "dataset": "", "variant": None, "fold": 0,
             "solver": solver, "params": json.dumps(p, sort_keys=True), "status": "ok",
             "run_id": str(i), "vali.map": v, **{f"params.{k}": x for k, x in p.items()}}
            for i, (p, v, _) in enumerate(candidates)]
    chosen = select_per_fold(pd.DataFrame(rows), "vali.map")
    return int(chosen["run_id"].iloc[0])


def select_and_test(train, vali, test, learner: str, n_iter: int = 100_000,
                    random_state: int = 0) -> dict:
    """Fit SPD over the grid (lambda; C for PA-I), select on validation MAP (selection.py), score test."""
    from rankbench.metrics import mean_average_precision

    if learner == "pa1":
        grid = [{"C": c} for c in PA_C_GRID]
    elif learner in ("romma", "perceptron", "margin_perceptron"):
        # no regularisation parameter (for the perceptrons lambda only scales every
        # step 1/(lambda t) alike, so it cannot change the ranking)
        grid = [{}]
    else:
        grid = [{"lam": lam} for lam in LAM_GRID]
    candidates = []
    for params in grid:
        model = SPDRanker(learner=learner, n_iter=n_iter, random_state=random_state,
                          **params).fit(train.X, train.y, train.qid)
        v = mean_average_precision(vali.y, model.decision_function(vali.X), vali.qid)
        candidates.append((params, float(v), model))
    params, vmap, model = candidates[select_on_validation(candidates, f"spd_{learner}")]
    ap = mean_average_precision(test.y, model.decision_function(test.X), test.qid, per_query=True)
    return {"params": params, "vali_map": float(vmap), "test_map": float(np.mean(ap)),
            "test_map_se": float(np.std(ap, ddof=1) / np.sqrt(len(ap))), "test_ap": ap,
            "fit_time_s": model.fit_time_}


def ranksvm_select_and_test(train, vali, test) -> dict:
    """Our hinge RankSVM (cutting plane), C chosen on validation MAP (selection.py); per-query test AP."""
    from rankbench.estimators.ranksvm import RankSVM
    from rankbench.metrics import mean_average_precision

    candidates = []
    for C in RANKSVM_C_GRID:
        model = RankSVM(C=C, solver="cutting_plane", loss="hinge").fit(train.X, train.y, train.qid)
        v = mean_average_precision(vali.y, model.decision_function(vali.X), vali.qid)
        candidates.append(({"C": C}, float(v), model))
    params, _, model = candidates[select_on_validation(candidates, "cutting_plane")]
    C = params["C"]
    ap = mean_average_precision(test.y, model.decision_function(test.X), test.qid, per_query=True)
    return {"C": C, "test_map": float(np.mean(ap)), "test_ap": ap}


def map_rows(quick: bool) -> list[dict]:
    """Sculley Fig. 1 on OHSUMED and MQ2008: per-fold test MAP of each SPD learner."""
    from rankbench.data import dataset_available, load_fold

    rows = []
    for dataset in LETOR_SETS:
        if not dataset_available(dataset):
            print(f"[spd] {dataset} not under RANKBENCH_DATA: MAP comparison skipped")
            continue
        published = published_ranksvm_map(dataset)
        for fold in (1,) if quick else (1, 2, 3, 4, 5):
            tr, va, te = (load_fold(dataset, fold, s) for s in ("train", "vali", "test"))
            t = time.perf_counter()
            ours = ranksvm_select_and_test(tr, va, te)
            ranksvm_s = time.perf_counter() - t
            for learner in LEARNERS:
                t = time.perf_counter()
                res = select_and_test(tr, va, te, learner)
                diff = res["test_ap"] - ours["test_ap"]
                rows.append(_row(
                    f"map_{dataset.lower()}_{learner}", time.perf_counter() - t, dataset=dataset,
                    fold=fold, learner=learner, chosen=res["params"], test_map=res["test_map"],
                    test_map_se=res["test_map_se"], published_ranksvm_map=published[fold],
                    ranksvm_cp_map=ours["test_map"], ranksvm_cp_C=ours["C"],
                    ranksvm_cp_s=ranksvm_s,
                    paired_diff_se=float(np.std(diff, ddof=1) / np.sqrt(len(diff))),
                    fit_time_s=res["fit_time_s"]))
    return rows


def optimum_rows(quick: bool) -> list[dict]:
    """Pegasos (uniform sampler) objective after 1e7 steps vs the cutting-plane optimum."""
    from rankbench.data import dataset_available, load_fold
    from rankbench.estimators.ranksvm import RankSVM
    from rankbench.objective import ranksvm_objective

    if not dataset_available("OHSUMED"):
        return []
    tr = load_fold("OHSUMED", 1, "train")
    rows = []
    n_iter = 10**6 if quick else 10**7
    for lam in (1e-2, 1e-3):
        spd = SPDRanker(learner="pegasos", sampler="uniform", lam=lam, n_iter=n_iter).fit(
            tr.X, tr.y, tr.qid)
        C = spd.C_equiv_
        t = time.perf_counter()
        cp = RankSVM(C=C, solver="cutting_plane", loss="hinge", tol=1e-4).fit(tr.X, tr.y, tr.qid)
        cp_s = time.perf_counter() - t
        f_spd = ranksvm_objective(spd.coef_, tr.X, tr.y, tr.query_ptr, C, loss="hinge")
        rows.append(_row("optimum_ohsumed_fold1", spd.fit_time_, lam=lam, C=C,
                         n_steps=n_iter, spd_objective=f_spd, cutting_plane_objective=cp.objective_,
                         relative_gap=(f_spd - cp.objective_) / cp.objective_,
                         cutting_plane_tol=1e-4,
                         cutting_plane_s=cp_s))
    return rows


def convergence_rows(quick: bool) -> list[dict]:
    """Sculley Fig. 2 on OHSUMED Fold1: objective on train and test at log-spaced iterations.

    lambda = 1/(C |P|) for the C our cutting-plane RankSVM picks on validation MAP, as the
    paper took the lambda that was optimal for RankSVM.  One run per learner, checkpoints
    without restarts.
    """
    from rankbench.data import dataset_available, load_fold

    if not dataset_available("OHSUMED"):
        return []
    tr, va, te = (load_fold("OHSUMED", 1, s) for s in ("train", "vali", "test"))
    C = ranksvm_select_and_test(tr, va, te)["C"]
    n_iter = 10**5 if quick else 10**7
    rows = []
    for learner in LEARNERS:
        model = SPDRanker(learner=learner, n_iter=n_iter, checkpoints="log", random_state=0,
                          lam=1.0, C=0.01)
        n_pairs = build_pair_index(tr.y, tr.query_ptr).n_pairs
        model.set_params(lam=1.0 / (C * n_pairs))
        try:
            model.fit(tr.X, tr.y, tr.qid, eval_set=(te.X, te.y, te.qid))
        except FloatingPointError as exc:  # ROMMA's norm can overflow on long runs
            rows.append(_row("convergence_ohsumed_fold1", float("nan"), learner=learner,
                             error=str(exc)))
            continue
        for h in model.history_:
            rows.append(_row("convergence_ohsumed_fold1", h["elapsed"], learner=learner,
                             lam=model.lam, iteration=h["iteration"], objective=h["objective"],
                             test_objective=h.get("eval_objective"), test_map=h.get("eval_map")))
    return rows


def run(quick: bool = False) -> list[dict]:
    """All SPD benchmark rows (see the module docstring)."""
    rows = timing_rows(quick)
    rows += rcv1_like_rows(quick)
    rows += optimum_rows(quick)
    rows += map_rows(quick)
    rows += convergence_rows(quick)
    return rows
