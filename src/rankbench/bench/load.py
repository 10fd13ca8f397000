"""Fits on a busy machine (issue 21): each fit at default settings beside competing processes,
against the same fit with ``NUMBA_NUM_THREADS=1`` in the same conditions.

Loads, each started and stopped by this part: ``idle`` (none), ``busy loop`` (one pure-Python
``while True: pass`` process) and ``rankbench process`` (another Python process fitting
``RankSVM()`` on MQ2008 Fold1 train in a loop, with rankbench's default settings, as a second
sweep or a job of Hydra's joblib launcher does).

Under each load every fit runs in fresh worker processes (``python -m rankbench.bench.load
--worker``): one with the default thread settings, which times each fit at its defaults and
again with ``n_jobs=1``, and one with ``NUMBA_NUM_THREADS=1`` (the serial reference); the two
alternate ``rounds`` times and each time is the minimum over rounds and repeats (a warm-up fit
first, numba compilation excluded).  Problems: OHSUMED and MQ2008 QueryLevelNorm Fold1 train
(when ``RANKBENCH_DATA`` has them) and the 480k x 46 dense LETOR-like problem of the targets
part; fits: the RankSVM solvers of the papers (PRSVM on explicit pairs only where its pairs fit
in memory), SPD (``SPDRanker()``, 1e5 Pegasos steps) and LambdaMART (``LambdaMART()``).

Targets (rows with a goal): default / serial <= 1.25 under every load; ``n_jobs=1`` / serial
<= 1.05; idle, the 2-thread speed-up of ``tron_tree`` on the 480k problem >= 1.6; on OHSUMED
and MQ2008, ``tron_tree``'s training time at its defaults against LIBLINEAR ranksvm's at its
defaults (``fit_time_`` of both: LIBLINEAR's file parsing excluded) <= 1, under every load.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from rankbench.bench import PARTS

PART = "load"
RANKSVM_SOLVERS = ("tron_tree", "tron_counting", "newton_tree", "prsvm_plus", "prsvm",
                   "lbfgs_tree", "cutting_plane", "sgd_queries")
LIBLINEAR = "LIBLINEAR ranksvm"
PAIRS_LIMIT = 3_000_000  # PRSVM's explicit pairs (46 float64 each): 1.1 GB, skipped above
LOADS = ("idle", "busy loop", "rankbench process")

_COMPETITOR = """
import sys
from rankbench import RankSVM
from rankbench.bench.load import competitor_problem
X, y, qid = competitor_problem()
RankSVM().fit(X, y, qid=qid)
print("ready", flush=True)
while True:
    RankSVM().fit(X, y, qid=qid)
"""


def competitor_problem():
    """MQ2008 Fold1 train, or an 81k-document LETOR-like problem when the data is absent."""
    try:
        from rankbench.data import load_fold

        d = load_fold("mq2008", 1, "train")
        return d.X, d.y, d.qid
    except Exception:  # noqa: BLE001 - no data here: a synthetic problem loads the cores as well
        from rankbench.data.synthetic import make_letor_like

        d = make_letor_like(n_queries=2_000, docs_per_query=(30, 50), n_features=46, seed=3)
        return d.X, d.y, d.qid


def _problems(quick: bool):
    """(name, X, y, qid, C) of each problem present."""
    from rankbench.data.synthetic import make_letor_like

    for name in ("ohsumed", "mq2008"):
        try:
            from rankbench.data import load_fold

            d = load_fold(name, 1, "train")
        except Exception:  # noqa: BLE001 - data absent: the problem is left out (stated in the rows)
            continue
        yield f"{name.upper()} Fold1", d.X, d.y, d.qid, 1e-4 if name == "ohsumed" else 1e-3
    d = make_letor_like(n_queries=1_200 if quick else 12_000, docs_per_query=(30, 50),
                        n_features=46, n_levels=3, seed=0)
    yield f"dense {d.n_docs} x 46", d.X, d.y, d.qid, 1e-3


def _fits(X, y, qid, C, n_pairs):
    """(fit name, make(n_jobs) -> estimator) of every fit timed on one problem."""
    from rankbench import LambdaMART, RankSVM, SPDRanker

    for solver in RANKSVM_SOLVERS:
        if solver == "prsvm" and n_pairs > PAIRS_LIMIT:
            continue
        yield solver, (lambda n, s=solver: RankSVM(C=C, solver=s, n_jobs=n))
    yield "SPD", (lambda n: SPDRanker())  # serial by construction: n_jobs does not apply
    yield "LambdaMART", (lambda n: LambdaMART(n_jobs=1 if n is None else n))
    from rankbench.peers import built

    if built("liblinear"):  # the reference of the small-problem target, at its own defaults
        from rankbench.peers.solvers import LiblinearRankSVM

        yield LIBLINEAR, (lambda n: LiblinearRankSVM(C=C))


def _n_pairs(y, qid) -> int:
    """|P| of (y, qid): ``objective.count_pairs`` on the rows grouped by query."""
    from rankbench.data.row_order import group_by_query
    from rankbench.objective import count_pairs

    order, query_ptr = group_by_query(qid)
    return int(count_pairs(y if order is None else y[order], query_ptr))


def worker(quick: bool, with_n_jobs: bool) -> dict:
    """{problem: {fit: {"default": s, "n_jobs=1": s}}}: each the minimum over repeats after a
    warm-up fit, in this process's thread settings."""
    out: dict = {}
    for name, X, y, qid, C in _problems(quick):
        repeats = 3 if X.shape[0] > 100_000 else 7
        n_pairs = _n_pairs(y, qid)
        out[name] = {}
        for fit, make in _fits(X, y, qid, C, n_pairs):
            variants = [("default", None)] + ([("n_jobs=1", 1)] if with_n_jobs else [])
            times: dict = {}
            for _label, n in variants:
                make(n).fit(X, y, qid=qid)  # compiled, caches warm
            if fit == LIBLINEAR:
                variants = variants[:1]  # a program of its own: n_jobs does not apply
            for _ in range(repeats):  # variants interleaved: they see the same load
                for label, n in variants:
                    t = time.perf_counter()
                    est = make(n).fit(X, y, qid=qid)
                    times[label] = min(times.get(label, float("inf")), time.perf_counter() - t)
                    # the estimator's own training time (LIBLINEAR's: file parsing excluded)
                    own = getattr(est, "fit_time_", None)
                    if own is not None:
                        key = f"{label} fit_time_"
                        times[key] = min(times.get(key, float("inf")), float(own))
            out[name][fit] = times
    return out


def _start_load(load: str):
    if load == "idle":
        return None
    code = "while True: pass" if load == "busy loop" else _COMPETITOR
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    if load == "rankbench process":
        if proc.stdout.readline().strip() != "ready":
            proc.kill()
            raise RuntimeError("the competing rankbench process did not start")
    else:
        time.sleep(1.0)
    return proc


def _run_worker(quick: bool, serial: bool) -> dict:
    env = dict(os.environ)
    if serial:
        env["NUMBA_NUM_THREADS"] = "1"
    args = [sys.executable, "-m", "rankbench.bench.load", "--worker"]
    if quick:
        args.append("--quick")
    if not serial:
        args.append("--n-jobs")
    res = subprocess.run(args, env=env, capture_output=True, text=True, timeout=3600)
    if res.returncode:
        raise RuntimeError(f"load worker failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def _merge_min(acc: dict, new: dict) -> None:
    for prob, fits in new.items():
        for fit, times in fits.items():
            slot = acc.setdefault(prob, {}).setdefault(fit, {})
            for k, v in times.items():
                slot[k] = min(slot.get(k, float("inf")), v)


def _target(case, measured, reference, ref_value, goal, higher_is_better=False, **extra):
    ratio = measured / ref_value if ref_value else float("nan")
    met = ratio >= goal if higher_is_better else ratio <= goal
    return {"part": PART, "case": case, "target": case, "reference": reference,
            "measured": measured, "reference_value": ref_value, "ratio": ratio, "goal": goal,
            "met": bool(met), "higher_is_better": higher_is_better, **extra}


@PARTS.register(PART)
def run(quick: bool = False, rounds: int | None = None) -> list[dict]:
    rounds = rounds or (1 if quick else 2)
    rows: list[dict] = []
    for load in LOADS:
        proc = _start_load(load)
        try:
            default: dict = {}
            serial: dict = {}
            for _ in range(rounds):
                _merge_min(default, _run_worker(quick, serial=False))
                _merge_min(serial, _run_worker(quick, serial=True))
        finally:
            if proc is not None:
                proc.kill()
                proc.wait()
        for prob, fits in default.items():
            lib = fits.get(LIBLINEAR, {}).get("default fit_time_")
            tron = fits.get("tron_tree", {}).get("default fit_time_")
            if lib and tron and not prob.startswith("dense"):
                rows.append(_target(f"{load}: {prob} tron_tree default vs LIBLINEAR", tron,
                                    "LIBLINEAR ranksvm at its defaults (training time)", lib, 1.0,
                                    load=load, problem=prob, fit="tron_tree"))
            for fit, times in fits.items():
                if fit == LIBLINEAR:
                    continue
                ref = serial[prob][fit]["default"]
                rows.append(_target(f"{load}: {prob} {fit} default", times["default"],
                                    "NUMBA_NUM_THREADS=1", ref, 1.25, load=load, problem=prob,
                                    fit=fit))
                if "n_jobs=1" in times and fit not in ("SPD",):
                    rows.append(_target(f"{load}: {prob} {fit} n_jobs=1", times["n_jobs=1"],
                                        "NUMBA_NUM_THREADS=1", ref, 1.05, load=load, problem=prob,
                                        fit=fit))
                if load == "idle" and fit == "tron_tree" and prob.startswith("dense"):
                    rows.append(_target(f"idle: {prob} tron_tree 2-thread speed-up", ref,
                                        "default (2 threads)", times["default"], 1.6,
                                        higher_is_better=True, load=load, problem=prob, fit=fit))
    return rows


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m rankbench.bench.load")
    ap.add_argument("--worker", action="store_true", help="time every fit in this process")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n-jobs", action="store_true", help="also time n_jobs=1")
    args = ap.parse_args(argv)
    if not args.worker:
        from rankbench.bench.__main__ import main as bench_main

        return bench_main([PART] + (["--quick"] if args.quick else []))
    print(json.dumps(worker(args.quick, args.n_jobs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
