"""Runner: one run = (dataset, fold, solver, params, seed) -> fit, score, evaluate, one record.

``run_one`` turns a run spec (``rankbench.spec``) into a self-describing record and never
raises for a solver or data failure: the record then has ``status="failed"`` and the
traceback, or ``status="skipped"`` when the solver cannot run on this machine (an external
peer not built).  ``run_many`` skips runs already stored with status ok, so a killed sweep
re-run does only what is missing, failed or skipped.  The runner never plots and never
selects: what the report needs per iterate (convergence curves) is recorded here.
"""

from __future__ import annotations

import copy
import importlib
import json
import logging
import os
import sys
import time
import traceback
import warnings
from typing import Any

import numpy as np

from rankbench.parallel import thread_share
from rankbench.spec import hashed_spec, normalize_spec, run_id
from rankbench.store import CorruptRecordError, ResultStore, encode_scores, to_jsonable
from rankbench.sysinfo import PeakMemory, git_commit, library_versions, machine_info, now

log = logging.getLogger(__name__)

# Per-query test values kept in every record (paired significance tests after the fact).
PER_QUERY_METRICS = ("ndcg@10", "map", "auc", "mauc")
# Test metrics computed for every history row that holds the iterate's coefficients
# (Lee & Lin Fig. (II): pairwise accuracy and NDCG@10 against iterations).
HISTORY_METRICS = ("pairwise_accuracy", "ndcg@10")
# Test scores of splits larger than this many documents stay out of the record (the
# committed store must stay small; such records say so in ``scores.test.omitted``).
MAX_STORED_SCORES = 100_000


# ---------------------------------------------------------------- data
def _import_object(ref: str) -> Any:
    mod, sep, name = ref.partition(":")
    if not sep or not mod or not name:
        raise ValueError(f"loader {ref!r} must look like 'package.module:function'")
    return getattr(importlib.import_module(mod), name)


def load_split(spec: dict[str, Any], split: str):
    """The RankingData of one split of the spec's (dataset, variant, fold).

    A ``loader`` ("module:function", called as ``f(fold=, split=, seed=, variant=,
    **data_params)``) takes precedence; otherwise ``rankbench.data.load_fold`` under
    ``data_root`` (default: RANKBENCH_DATA) with ``data_params`` as its keyword
    arguments (``null_policy``, synthetic generator sizes, RCV1 options).  One data
    parameter is the runner's own: ``train_fraction``, a subsample of the training
    queries seeded by (seed, fold), for scaling curves.
    """
    s = normalize_spec(spec)
    dp = dict(s["data_params"])
    frac = dp.pop("train_fraction", None)
    if s["loader"]:
        fn = _import_object(s["loader"])
        data = fn(fold=s["fold"], split=split, seed=s["seed"], variant=s["variant"], **dp)
    else:
        from rankbench.data import load_fold

        data = load_fold(s["dataset"], s["fold"], split, variant=s["variant"],
                         root=s.get("data_root"), **dp)
    if frac is not None and split == "train":
        frac = float(frac)
        if not 0.0 < frac <= 1.0:
            raise ValueError(f"data_params.train_fraction must be in (0, 1], got {frac}")
        if frac < 1.0:
            rng = np.random.default_rng([s["seed"], s["fold"]])
            k = max(1, round(frac * data.n_queries))
            data = data.subset_queries(np.sort(rng.choice(data.n_queries, size=k, replace=False)))
    return data


# ---------------------------------------------------------------- evaluation
def evaluate_split(data, scores: np.ndarray) -> dict[str, float]:
    """Every metric name (``metrics.names.METRIC_KEYS``: evaluate's defaults, R-precision, pooled
    MAUC) plus ``auc_class<c>`` (class c against the rest, Welleck Table 3)."""
    from rankbench.metrics import METRIC_KEYS, class_auc, evaluate

    out = {k: float(v) for k, v in evaluate(data.y, scores, data.qid, METRIC_KEYS).items()}
    if np.unique(data.y).shape[0] > 2:  # graded labels: binary data has only auc itself
        out.update({f"auc_class{c}": float(v) for c, v in class_auc(data.y, scores, data.qid).items()})
    return out


def _per_query(data, scores: np.ndarray) -> dict[str, list]:
    from rankbench.metrics import evaluate_per_query

    table = evaluate_per_query(data.y, scores, data.qid, metrics=PER_QUERY_METRICS)
    return {k: np.asarray(v).tolist() for k, v in table.items()}


def data_facts(data) -> dict[str, Any]:
    """What a split is (Chapelle Table 1): queries, documents, features, label counts, pairs; O(n log n)."""
    from rankbench.data.sharded import ShardedDataset
    from rankbench.objective import count_pairs

    if isinstance(data, ShardedDataset):  # its manifest says (the driver never loads it)
        return data.facts()

    labels, counts = np.unique(data.y, return_counts=True)
    return {"n_queries": data.n_queries, "n_docs": data.n_docs, "n_features": data.n_features,
            "labels": {str(int(lab)): int(c) for lab, c in zip(labels, counts, strict=True)},
            "n_pairs": int(count_pairs(data.y, data.query_ptr))}


def _score_history(rows: list[dict], data) -> list[dict]:
    """History rows with test metrics of each iterate that kept its coefficients (coef dropped)."""
    from rankbench.metrics import ndcg_at_k, pairwise_accuracy

    out = []
    for h in rows:
        h = dict(h)
        coef = h.pop("coef", None)
        if coef is not None and data is not None:
            s = np.asarray(data.X @ np.asarray(coef, dtype=float)).ravel()
            h["test_pairwise_accuracy"] = float(pairwise_accuracy(data.y, s, data.qid))
            h["test_ndcg@10"] = float(ndcg_at_k(data.y, s, data.qid, k=10))
        out.append(h)
    return out


def _fit(est: Any, train, vali, test=None) -> None:
    """Fit on train; vali feeds early stopping, test (history runs only) feeds convergence curves."""
    import inspect

    kwargs: dict[str, Any] = {}
    try:
        fit_params = inspect.signature(est.fit).parameters
    except (TypeError, ValueError):
        fit_params = {}
    # Boosters stop early on the validation split: that is the LETOR protocol's use of it.
    if vali is not None and "eval_set" in fit_params and getattr(est, "early_stopping_rounds", None):
        kwargs["eval_set"] = [(vali.X, vali.y, vali.qid)]
    elif test is not None and "eval_set" in fit_params:
        # evaluation only (no early stopping): the test curve of Sculley's Fig. 2
        kwargs["eval_set"] = (test.X, test.y, test.qid)
    from rankbench.data.sharded import ShardedDataset

    if isinstance(train, ShardedDataset):  # Ray actors load its shards (rankbench.distributed)
        est.fit(train)
        return
    est.fit(train.X, train.y, train.qid, **kwargs)


def _opt_float(est: Any, name: str) -> float | None:
    v = getattr(est, name, None)
    if v is None:
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _env(started: str, pid: int | None) -> dict[str, Any]:
    import numba

    # numba_threads: the kernels' thread count during the run (a timing means little without it)
    return {"versions": library_versions(), "git_commit": git_commit(), "machine": machine_info(),
            "pid": pid, "argv": list(sys.argv), "started": started, "finished": now(),
            "numba_threads": int(numba.get_num_threads())}


def empty_record(spec: dict[str, Any], status: str = "ok", error: str | None = None) -> dict[str, Any]:
    """The record skeleton of a spec (identity fields filled, results empty)."""
    s = normalize_spec(spec)
    return {"run_id": run_id(s), "status": status, "error": error, "experiment": s["experiment"],
            "dataset": s["dataset"], "variant": s["variant"], "synthetic": None, "fold": s["fold"],
            "solver": s["solver"], "params": s["params"], "seed": s["seed"], "spec": hashed_spec(s),
            "metrics": {}, "per_query": {}, "scores": {}, "train": {}, "history": [], "extra": {}}


def _train_block(est: Any, wall: float, cpu: float, mem: PeakMemory) -> dict[str, Any]:
    """Timings (numba compilation excluded where the estimator reports it) and solver facts."""
    compile_s = _opt_float(est, "compile_time_") or 0.0
    fit_time = _opt_float(est, "fit_time_")
    n_iter, n_cg = getattr(est, "n_iter_", None), getattr(est, "n_cg_iter_", None)
    conv = getattr(est, "converged_", None)
    block = {
        "wall_s": fit_time if fit_time is not None else wall,
        "cpu_s": max(0.0, cpu - compile_s),
        "compile_s": compile_s,
        "wall_total_s": _opt_float(est, "wall_total_s_") or wall,
        "cpu_total_s": cpu,
        "n_iter": int(n_iter) if n_iter is not None else None,
        "n_cg_iter": int(n_cg) if n_cg is not None else None,
        "objective": _opt_float(est, "objective_"),
        "converged": None if conv is None else bool(conv),
        "peak_mem_mb": mem.peak_mb,
        "mem_start_mb": mem.start_mb,
    }
    accuracy = getattr(est, "convergence_", None)  # the achieved accuracy, as the solver states it
    if isinstance(accuracy, dict):
        block["convergence"] = to_jsonable(accuracy)
    return block


def _score_into(record: dict[str, Any], est: Any, data: dict[str, Any], s: dict[str, Any]) -> None:
    """Each evaluated split's metrics, the test split's per-query values and scores, the history
    (record_history) and the estimator's ``extra_``, written into ``record``."""
    for split in s["eval_splits"]:
        d = data[split]
        scores = np.asarray(est.decision_function(d.X), dtype=float)
        if scores.shape != (d.n_docs,):
            raise ValueError(f"{s['solver']}.decision_function returned shape {scores.shape} "
                             f"for {d.n_docs} documents")
        if not np.all(np.isfinite(scores)):
            raise ValueError(f"{s['solver']} produced non-finite scores on {split}")
        record["metrics"][split] = evaluate_split(d, scores)
        if split == "test":
            record["per_query"]["test"] = _per_query(d, scores)
            record["scores"]["test"] = (encode_scores(scores) if d.n_docs <= MAX_STORED_SCORES
                                        else {"n": d.n_docs, "omitted": f"more than "
                                              f"{MAX_STORED_SCORES:,} documents: not stored"})
    if s["record_history"]:
        rows = list(getattr(est, "history_", None) or [])
        # converted here so a value JSON cannot hold fails this run, not the sweep
        record["history"] = to_jsonable(_score_history(rows, data.get("test")))
    extra = getattr(est, "extra_", None)
    if isinstance(extra, dict):
        record["extra"].update(to_jsonable(extra))


def _load_data(s: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """The spec's train split and evaluated splits; the record gains the data facts."""
    data = {"train": load_split(s, "train")}
    for split in s["eval_splits"]:
        if split != "train":
            data[split] = load_split(s, split)
    record["synthetic"] = bool(getattr(data["train"], "synthetic", False))
    stand_in = (getattr(data["train"], "meta", None) or {}).get("stand_in_for")
    if stand_in:
        record["extra"]["stand_in_for"] = stand_in
    record["extra"]["data"] = {k: data_facts(d) for k, d in data.items()}
    return data


def run_one(spec: dict[str, Any]) -> dict[str, Any]:
    """Load the splits, fit the solver on train, score and evaluate; one record (never raises on failure).

    Timings: ``wall_s`` is the estimator's ``fit_time_`` (numba compilation excluded)
    when it reports one, else the measured fit wall time; ``compile_s`` is its
    ``compile_time_``; ``cpu_s`` is this process's CPU time over ``fit`` minus
    ``compile_s``; ``wall_total_s`` / ``cpu_total_s`` include everything.
    The record keeps each evaluated split's metrics, the test split's per-query values and
    its scores (float32, ``decode_scores``), so any metric can be recomputed later.
    """
    from rankbench.estimators.registry import SolverUnavailable, make_solver

    s = normalize_spec(spec)
    if s["warm_start"] is not None:  # one point of a warm-started path: the path runs
        rid = run_id(s)
        return next(r for r in run_path(s) if r["run_id"] == rid)
    started = now()
    record = empty_record(s)
    try:
        data = _load_data(s, record)
        if s["tune"]:
            from rankbench.tuning import tune_parameter

            vali = data.get("vali") or load_split(s, "vali")
            value, record["extra"]["tuning"] = tune_parameter(
                s["tune"], s["solver"], s["params"], data["train"], vali, make_solver,
                lambda e, d: _fit(e, d, None), evaluate_split)
            s["params"] = {**s["params"], s["tune"]["param"]: value}
            record["params"] = dict(s["params"])
        est = make_solver(s["solver"], s["params"])
        with PeakMemory() as mem:
            wall0, cpu0 = time.perf_counter(), time.process_time()
            _fit(est, data["train"], data.get("vali"),
                 data.get("test") if s["record_history"] else None)
            wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        record["train"] = _train_block(est, wall, cpu, mem)
        _score_into(record, est, data, s)
    except SolverUnavailable as exc:
        record["status"], record["error"] = "skipped", str(exc)
        log.warning("run %s (%s) skipped: %s", record["run_id"][:10], s["solver"], exc)
    except Exception as exc:  # noqa: BLE001 - a failed run is data, recorded with its traceback
        record["status"] = "failed"
        record["error"] = f"{type(exc).__name__}: {exc}\n" + traceback.format_exc()
        log.warning("run %s (%s fold %s %s %s) failed: %s", record["run_id"][:10], s["dataset"],
                    s["fold"], s["solver"], s["params"], exc)
    record["env"] = _env(started, os.getpid())
    return to_jsonable(record)


# ---------------------------------------------------------------- warm-started C paths
def path_members(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The run specs of every C of a warm-start spec's path, in increasing C (the spec itself
    when it has no ``warm_start``)."""
    s = normalize_spec(spec)
    if s["warm_start"] is None:
        return [s]
    return [normalize_spec({**s, "params": {**s["params"], "C": c}}) for c in s["warm_start"]]


def _path_key(s: dict[str, Any]) -> str | None:
    """What the runs of one path share (their spec but params.C); None without warm_start."""
    if s["warm_start"] is None:
        return None
    h = hashed_spec(s)
    h["params"] = {k: v for k, v in h["params"].items() if k != "C"}
    return json.dumps(h, sort_keys=True)


def run_path(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """One record per C of the spec's ``warm_start`` path (increasing C), the data loaded once and
    the C values fitted by ``ranksvm_path`` (each from the previous C's solution, to the accuracy
    of a cold fit); never raises on failure (every record failed or skipped).

    Each record is what ``run_one`` would write for its C, except the times: ``train.wall_s`` /
    ``cpu_s`` are that C's incremental time on the path (its oracle and its optimizer run from
    the previous solution), marked by ``train.warm_start: true`` with ``warm_start_from_C``
    (None for the first C, which starts at w = 0 like a cold fit) and ``path_wall_s`` (the
    whole path).  Cold per-C runs, the papers' tables, keep their own records (other run ids).
    """
    from rankbench.estimators.ranksvm import RankSVM, ranksvm_path
    from rankbench.estimators.registry import SolverUnavailable, make_solver

    members = path_members(spec)
    s = members[0]
    if s["warm_start"] is None:
        raise ValueError("run_path needs a run spec with warm_start (the path's C values)")
    started = now()
    records = [empty_record(m) for m in members]
    try:
        data = _load_data(s, records[0])
        est = make_solver(s["solver"], s["params"])
        if not isinstance(est, RankSVM):
            raise ValueError(f"warm_start: solver {s['solver']!r} is not a RankSVM solver; a "
                             "warm-started C path needs one (rankbench.ranksvm_path)")
        params = {k: v for k, v in est.get_params().items() if k != "C"}
        tr = data["train"]
        with PeakMemory() as mem:
            wall0 = time.perf_counter()
            path = ranksvm_path(tr.X, tr.y, tr.qid, s["warm_start"], **params)
            path_wall = time.perf_counter() - wall0
        for k, (m, rec, ms) in enumerate(zip(path.models, records, members, strict=True)):
            if k:
                rec["synthetic"] = records[0]["synthetic"]
                rec["extra"] = copy.deepcopy(records[0]["extra"])
            # _train_block subtracts the compile time, which ran before the first C's clock
            rec["train"] = _train_block(m, m.fit_time_, path.cpu_time[k] + m.compile_time_, mem)
            rec["train"].update(warm_start=True, warm_start_from_C=float(path.Cs[k - 1]) if k else None,
                                path_wall_s=path_wall)
            _score_into(rec, m, data, ms)
    except SolverUnavailable as exc:
        records = [empty_record(m, "skipped", str(exc)) for m in members]
        log.warning("warm-started path of %s skipped: %s", s["solver"], exc)
    except Exception as exc:  # noqa: BLE001 - a failed run is data, recorded with its traceback
        error = f"{type(exc).__name__}: {exc}\n" + traceback.format_exc()
        records = [empty_record(m, "failed", error) for m in members]
        log.warning("warm-started path (%s fold %s %s, C in %s) failed: %s", s["dataset"], s["fold"],
                    s["solver"], s["warm_start"], exc)
    for rec in records:
        rec["env"] = _env(started, os.getpid())
    return [to_jsonable(r) for r in records]


def _run_unit(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The records of one unit of work: a run, or every run of a warm-started path."""
    return run_path(spec) if normalize_spec(spec)["warm_start"] is not None else [run_one(spec)]


# ---------------------------------------------------------------- many runs
def _run_and_store(spec: dict[str, Any], store_root: str, threads: int = 0) -> list[dict[str, Any]]:
    if threads:
        # parallel jobs share the cores: each worker's kernels get their share, not every core
        import numba

        numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))
    records = _run_unit(spec)
    store = ResultStore(store_root)
    for record in records:
        store.append(record)
    return records


def _stored_ok(store: ResultStore, rid: str) -> dict[str, Any] | None:
    try:
        rec = store.get(rid)
    except KeyError:
        return None
    except CorruptRecordError as exc:
        warnings.warn(f"{exc} -- the run will be redone", stacklevel=3)
        return None
    return rec if rec["status"] == "ok" else None


def _isolated_child(spec: dict[str, Any], store_root: str) -> None:
    _run_and_store(spec, store_root)


def crash_record(spec: dict[str, Any], reason: str, started: str) -> dict[str, Any]:
    """The failed record of a run whose process died or overran (no record of its own)."""
    record = empty_record(spec, "failed", reason)
    record["env"] = _env(started, None)
    return to_jsonable(record)


def run_isolated(spec: dict[str, Any], store: ResultStore | str | os.PathLike,
                 timeout_s: float | None = None) -> dict[str, Any]:
    """Run one spec in a fresh process and store its record; a crash or overrun is a failed record.

    A run killed by the kernel (out of memory: SIGKILL), by a signal, or past
    ``timeout_s`` seconds (then killed) leaves no record of its own: this stores one
    with ``status="failed"`` and the reason, so the sweep goes on.  A spec with
    ``warm_start`` runs (and stores) its whole path; the spec's own record is returned.
    """
    import multiprocessing as mp
    import signal as _signal

    if not isinstance(store, ResultStore):
        store = ResultStore(store)
    started = now()
    # spawn: a clean interpreter, no fork of a parent holding threads (joblib, Ray, tqdm)
    proc = mp.get_context("spawn").Process(target=_isolated_child, args=(spec, str(store.root)),
                                           daemon=True)
    proc.start()
    proc.join(timeout_s)
    reason = None
    if proc.is_alive():
        proc.kill()
        proc.join()
        reason = f"TimeoutError: run exceeded timeout_s={timeout_s:g} s and was killed"
    elif proc.exitcode != 0:
        code = proc.exitcode
        if code is not None and code < 0:
            name = _signal.Signals(-code).name
            hint = " (out of memory? the kernel's OOM killer sends SIGKILL)" if name == "SIGKILL" else ""
            reason = f"WorkerDied: the run's process was killed by {name}{hint}"
        else:
            reason = f"WorkerDied: the run's process exited with code {code}"
    if reason is None:
        return store.get(run_id(spec))
    for member in path_members(spec):  # a warm-started path's runs all died with it
        record = crash_record(member, reason, started)
        store.append(record)
    log.warning("run %s failed: %s", run_id(spec)[:10], reason)
    return store.get(run_id(spec))


class _Progress:
    """A tqdm bar on a terminal; elsewhere (logs, CI, Slurm) one log line per run with ETA."""

    def __init__(self, total: int, stored: int, enabled: bool):
        self.total, self.done, self.t0 = total, 0, time.perf_counter()
        self.bar = None
        self.enabled = enabled and total > 0
        if self.enabled and sys.stderr.isatty():
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc="runs", unit="run", file=sys.stderr,
                            dynamic_ncols=True, postfix={"already stored": stored})

    def step(self, record: dict[str, Any]) -> None:
        self.done += 1
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.set_description(f"{record['dataset']} f{record['fold']} {record['solver']}")
            self.bar.update(1)
            return
        el = time.perf_counter() - self.t0
        eta = el / self.done * (self.total - self.done)
        log.info("run %d/%d %s: %s fold %s %s (elapsed %.0f s, eta %.0f s)", self.done, self.total,
                 record["status"], record["dataset"], record["fold"], record["solver"], el, eta)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run_many(
    specs: list[dict[str, Any]],
    store: ResultStore | str | os.PathLike,
    n_jobs: int = 1,
    progress: bool = True,
    rerun: bool = False,
    isolate: bool = False,
    timeout_s: float | None = None,
) -> list[dict[str, Any]]:
    """Run every spec not already stored with status ok, appending each record as it finishes.

    Returns the records in spec order (stored ones included).  Duplicate specs run once.
    ``n_jobs > 1`` runs in joblib worker processes, each writing its own records.
    ``rerun=True`` runs everything again and replaces the stored records (``run_id``
    does not include the code version: after a solver change, rerun or use a new
    experiment tag; ``env.git_commit`` tells which code wrote a record).
    ``isolate=True`` (implied by ``timeout_s``) runs each spec in its own process
    (``run_isolated``): a run that runs out of memory, crashes or overruns becomes a
    failed record instead of ending the sweep; it costs one interpreter start per run.
    Specs with ``warm_start`` (one point of a warm-started C path each) run as one unit per
    path (``run_path``): when any of its runs is missing, the whole path runs again and every
    one of its records is replaced (its times depend on the whole path).
    The store is checked writable first; a record that cannot be written (disk full,
    read-only) is saved to a fallback file named in the ``StoreWriteError`` raised after
    the runs already finished are kept.
    """
    if not isinstance(store, ResultStore):
        store = ResultStore(store)
    if timeout_s is not None and not timeout_s > 0:
        raise ValueError(f"timeout_s must be > 0 or None, got {timeout_s!r}")
    isolate = isolate or timeout_s is not None
    specs = [normalize_spec(s) for s in specs]
    ids = [run_id(s) for s in specs]
    done: dict[str, dict] = {}
    todo: list[tuple[str, dict]] = []
    queued: set[str] = set()
    for rid, s in zip(ids, specs, strict=True):
        if rid in done or rid in queued:
            continue
        rec = None if rerun else _stored_ok(store, rid)
        if rec is not None:
            done[rid] = rec
        else:
            todo.append((rid, s))
            queued.add(rid)
    if todo:
        store.check_writable()
    bar = _Progress(len(todo), len(done), progress)
    # a warm-started path is one unit of work: its first missing run stands for all of them
    units, paths = [], set()
    for _, s in todo:
        key = _path_key(s)
        if key is None or key not in paths:
            units.append(s)
            paths.add(key)

    def one(s: dict[str, Any]) -> list[dict[str, Any]]:
        if isolate:
            run_isolated(s, store, timeout_s)
            return [store.get(run_id(m)) for m in path_members(s)]
        records = _run_unit(s)
        for record in records:
            store.append(record)  # StoreWriteError keeps the record in a fallback file
        return records

    def finished(records: list[dict[str, Any]]) -> None:
        for rec in records:
            done[rec["run_id"]] = rec
            if rec["run_id"] in queued:
                bar.step(rec)

    try:
        if n_jobs == 1 or len(units) <= 1:
            for s in units:
                finished(one(s))
        elif isolate:
            # each thread only waits on its child process
            from concurrent.futures import ThreadPoolExecutor, as_completed

            workers = (os.cpu_count() or 1) if n_jobs == -1 else n_jobs
            with ThreadPoolExecutor(max_workers=workers) as pool:
                futures = [pool.submit(one, s) for s in units]
                for fut in as_completed(futures):
                    finished(fut.result())
        else:
            from joblib import Parallel, delayed

            workers = (os.cpu_count() or 1) if n_jobs == -1 else n_jobs
            share = thread_share(min(workers, len(units)))
            results = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
                delayed(_run_and_store)(s, str(store.root), share) for s in units
            )
            for recs in results:
                finished(recs)
    finally:
        bar.close()
    return [done[rid] for rid in ids]
