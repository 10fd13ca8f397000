"""Runner: one run = (dataset, fold, solver, params, seed) -> fit, score, evaluate, one record.

A *run spec* is a plain dict (see docs/interfaces.md).  ``run_one`` turns it into a
self-describing record and never raises for a solver or data failure (the record then
has ``status="failed"`` and the traceback); ``run_many`` skips runs already stored with
status ok, so a killed sweep re-run does only what is missing or failed.
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import importlib
import json
import logging
import os
import platform
import socket
import subprocess
import sys
import threading
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from rankbench.store import CorruptRecordError, ResultStore, check_experiment_tag, to_jsonable

log = logging.getLogger(__name__)

SPLITS = ("train", "vali", "test")

# Spec fields and their defaults; fields absent here are rejected (typos must not pass).
SPEC_DEFAULTS: dict[str, Any] = {
    "experiment": "default",
    "dataset": None,
    "variant": None,
    "fold": None,
    "solver": None,
    "params": {},
    "seed": 0,
    "data_params": {},
    "record_history": False,
    "eval_splits": ["vali", "test"],
    "loader": None,
}
# Fields that say where or how to show things, not what is computed: not hashed.
PRESENTATION_FIELDS = ("data_root", "note")
# Solver parameters that change only console output.
PRESENTATION_PARAMS = ("verbose",)
# Per-query test values kept for significance tests.
PER_QUERY_METRICS = ("ndcg@10", "map", "auc")


# ---------------------------------------------------------------- specs and ids
def normalize_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """Fill defaults and check a run spec; ValueError naming the bad field."""
    if not isinstance(spec, dict):
        raise ValueError(f"a run spec is a dict, got {type(spec).__name__}")
    unknown = sorted(set(spec) - set(SPEC_DEFAULTS) - set(PRESENTATION_FIELDS))
    if unknown:
        raise ValueError(
            f"unknown run spec field(s) {unknown}; known: {sorted(SPEC_DEFAULTS)} "
            f"and presentation fields {list(PRESENTATION_FIELDS)}"
        )
    out = {k: spec.get(k, v) for k, v in SPEC_DEFAULTS.items()}
    for k in PRESENTATION_FIELDS:
        if spec.get(k) is not None:
            out[k] = spec[k]
    for k in ("dataset", "solver"):
        if not isinstance(out[k], str) or not out[k]:
            raise ValueError(f"run spec field {k!r} must be a non-empty string, got {out[k]!r}")
    check_experiment_tag(out["experiment"])
    fold = out["fold"]
    if isinstance(fold, bool) or not isinstance(fold, int | np.integer) or fold < 1:
        raise ValueError(f"run spec field 'fold' must be an integer >= 1, got {fold!r}")
    out["fold"] = int(fold)
    seed = out["seed"]
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"run spec field 'seed' must be an integer >= 0, got {seed!r}")
    out["seed"] = int(seed)
    for k in ("params", "data_params"):
        if not isinstance(out[k], dict):
            raise ValueError(f"run spec field {k!r} must be a dict, got {type(out[k]).__name__}")
        out[k] = dict(out[k])
    splits = list(out["eval_splits"])
    bad = [s for s in splits if s not in SPLITS]
    if bad or not splits:
        raise ValueError(f"eval_splits must be a non-empty subset of {SPLITS}, got {splits}")
    out["eval_splits"] = splits
    out["record_history"] = bool(out["record_history"])
    return out


def _canonical(obj: Any) -> Any:
    # 1 and 1.0 (C=1 from YAML, C=1.0 from a sweep) must hash alike.
    if isinstance(obj, dict):
        return {str(k): _canonical(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_canonical(v) for v in obj]
    if isinstance(obj, float) and obj.is_integer():
        return int(obj)
    return obj


def hashed_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """The part of a spec that identifies the run (presentation fields removed)."""
    s = normalize_spec(spec)
    for k in PRESENTATION_FIELDS:
        s.pop(k, None)
    # None means "the solver's default", exactly like leaving the parameter out
    s["params"] = {k: v for k, v in s["params"].items()
                   if k not in PRESENTATION_PARAMS and v is not None}
    return _canonical(to_jsonable(s))


def run_id(spec: dict[str, Any]) -> str:
    """sha1 of the canonical JSON of the spec minus presentation fields (data_root, note, verbose).

    A parameter set to None hashes like an absent one (both mean the solver's default),
    so a Hydra job and a hand-written spec of the same run share one record.
    """
    text = json.dumps(hashed_spec(spec), sort_keys=True, separators=(",", ":"))
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------- environment
@functools.lru_cache(maxsize=1)
def _git_commit() -> str | None:
    env = os.environ.get("RANKBENCH_GIT_COMMIT")
    if env:
        return env
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no", "--", "."],
            capture_output=True, text=True, timeout=20, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("-dirty" if dirty else "")


@functools.lru_cache(maxsize=1)
def library_versions() -> dict[str, str | None]:
    """Versions of the libraries that change numbers or timings."""
    from importlib import metadata

    out: dict[str, str | None] = {"python": platform.python_version()}
    for dist in ("rankbench", "numpy", "scipy", "numba", "scikit-learn", "lightgbm",
                 "xgboost", "pandas", "hydra-core"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


@functools.lru_cache(maxsize=1)
def machine_info() -> dict[str, Any]:
    """Host facts stored with every record (timings mean little without them)."""
    info: dict[str, Any] = {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
    }
    try:
        import psutil

        info["memory_gb"] = round(psutil.virtual_memory().total / 2**30, 1)
    except ImportError:
        pass
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return info


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _maxrss_mb() -> float:
    try:
        import resource
    except ImportError:  # not POSIX
        return float("nan")
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024.0 if sys.platform != "darwin" else kb / 2**20  # macOS reports bytes


class PeakMemory:
    """Context manager: peak resident memory (MB) of this process while the block runs.

    Sampled every ``interval`` seconds by a daemon thread (RSS, so numba / LightGBM
    allocations count too); the start and end values are always included.  A numba
    kernel holding the GIL hides its transient peak from the sampler, so when the
    kernel-tracked lifetime maximum (``ru_maxrss``) rose during the block, that exact
    value is the peak.
    """

    def __init__(self, interval: float = 0.01):
        self.interval = interval
        self.peak_mb = float("nan")
        self.start_mb = float("nan")

    def _rss(self) -> float:
        return self._proc.memory_info().rss / 2**20

    def __enter__(self) -> PeakMemory:
        import psutil

        self._proc = psutil.Process()
        self._maxrss0 = _maxrss_mb()
        self.start_mb = self.peak_mb = self._rss()
        self._stop = threading.Event()

        def sample() -> None:
            while not self._stop.wait(self.interval):
                self.peak_mb = max(self.peak_mb, self._rss())

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self.peak_mb = max(self.peak_mb, self._rss())
        maxrss = _maxrss_mb()
        if maxrss > self._maxrss0:
            self.peak_mb = max(self.peak_mb, maxrss)


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
def _evaluate_split(data, scores: np.ndarray) -> dict[str, float]:
    """metrics.evaluate's keys plus ``auc_class<c>`` (class c against the rest, Welleck Table 3)."""
    from rankbench.metrics import class_auc, evaluate

    out = {k: float(v) for k, v in evaluate(data.y, scores, data.qid).items()}
    if np.unique(data.y).shape[0] > 2:  # graded labels: binary data has only auc itself
        out.update({f"auc_class{c}": float(v) for c, v in class_auc(data.y, scores, data.qid).items()})
    return out


def _per_query(data, scores: np.ndarray) -> dict[str, list]:
    from rankbench.metrics import evaluate_per_query

    table = evaluate_per_query(data.y, scores, data.qid, metrics=PER_QUERY_METRICS)
    return {k: np.asarray(v).tolist() for k, v in table.items()}


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
    est.fit(train.X, train.y, train.qid, **kwargs)


def _opt_float(est: Any, name: str) -> float | None:
    v = getattr(est, name, None)
    if v is None:
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def run_one(spec: dict[str, Any]) -> dict[str, Any]:
    """Load the splits, fit the solver on train, score and evaluate; one record (never raises on failure).

    Timings: ``wall_s`` is the estimator's ``fit_time_`` (numba compilation excluded)
    when it reports one, else the measured fit wall time; ``compile_s`` is its
    ``compile_time_``; ``cpu_s`` is this process's CPU time over ``fit`` minus
    ``compile_s``; ``wall_total_s`` / ``cpu_total_s`` include everything.
    """
    s = normalize_spec(spec)
    rid = run_id(s)
    started = _now()
    record: dict[str, Any] = {
        "run_id": rid,
        "status": "ok",
        "error": None,
        "experiment": s["experiment"],
        "dataset": s["dataset"],
        "variant": s["variant"],
        "synthetic": None,
        "fold": s["fold"],
        "solver": s["solver"],
        "params": s["params"],
        "seed": s["seed"],
        "spec": hashed_spec(s),
        "metrics": {},
        "per_query": {},
        "train": {},
        "history": [],
        "extra": {},
    }
    try:
        from rankbench.estimators.registry import make_solver

        data = {"train": load_split(s, "train")}
        for split in s["eval_splits"]:
            if split != "train":
                data[split] = load_split(s, split)
        record["synthetic"] = bool(getattr(data["train"], "synthetic", False))
        stand_in = (getattr(data["train"], "meta", None) or {}).get("stand_in_for")
        if stand_in:
            record["extra"]["stand_in_for"] = stand_in
        record["extra"]["data"] = {
            k: {"n_queries": d.n_queries, "n_docs": d.n_docs, "n_features": d.n_features}
            for k, d in data.items()
        }
        est = make_solver(s["solver"], s["params"])
        with PeakMemory() as mem:
            wall0, cpu0 = time.perf_counter(), time.process_time()
            _fit(est, data["train"], data.get("vali"),
                 data.get("test") if s["record_history"] else None)
            wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        compile_s = _opt_float(est, "compile_time_") or 0.0
        fit_time = _opt_float(est, "fit_time_")
        n_iter = getattr(est, "n_iter_", None)
        n_cg = getattr(est, "n_cg_iter_", None)
        record["train"] = {
            "wall_s": fit_time if fit_time is not None else wall,
            "cpu_s": max(0.0, cpu - compile_s),
            "compile_s": compile_s,
            "wall_total_s": wall,
            "cpu_total_s": cpu,
            "n_iter": int(n_iter) if n_iter is not None else None,
            "n_cg_iter": int(n_cg) if n_cg is not None else None,
            "objective": _opt_float(est, "objective_"),
            "peak_mem_mb": mem.peak_mb,
            "mem_start_mb": mem.start_mb,
        }
        for split in s["eval_splits"]:
            scores = np.asarray(est.decision_function(data[split].X), dtype=float)
            if scores.shape != (data[split].n_docs,):
                raise ValueError(
                    f"{s['solver']}.decision_function returned shape {scores.shape} "
                    f"for {data[split].n_docs} documents"
                )
            if not np.all(np.isfinite(scores)):
                raise ValueError(f"{s['solver']} produced non-finite scores on {split}")
            record["metrics"][split] = _evaluate_split(data[split], scores)
            if split == "test":
                record["per_query"]["test"] = _per_query(data[split], scores)
        # converted here so a value JSON cannot hold fails this run, not the sweep
        if s["record_history"]:
            record["history"] = to_jsonable(list(getattr(est, "history_", None) or []))
        extra = getattr(est, "extra_", None)
        if isinstance(extra, dict):
            record["extra"].update(to_jsonable(extra))
    except Exception as exc:  # noqa: BLE001 - a failed run is data, recorded with its traceback
        record["status"] = "failed"
        record["error"] = f"{type(exc).__name__}: {exc}\n" + traceback.format_exc()
        log.warning("run %s (%s fold %s %s %s) failed: %s", rid[:10], s["dataset"], s["fold"],
                    s["solver"], s["params"], exc)
    record["env"] = {
        "versions": library_versions(),
        "git_commit": _git_commit(),
        "machine": machine_info(),
        "pid": os.getpid(),
        "argv": list(sys.argv),
        "started": started,
        "finished": _now(),
    }
    return to_jsonable(record)


# ---------------------------------------------------------------- many runs
def _run_and_store(spec: dict[str, Any], store_root: str) -> dict[str, Any]:
    record = run_one(spec)
    ResultStore(store_root).append(record)
    return record


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
    s = normalize_spec(spec)
    return to_jsonable({
        "run_id": run_id(s), "status": "failed", "error": reason,
        "experiment": s["experiment"], "dataset": s["dataset"], "variant": s["variant"],
        "synthetic": None, "fold": s["fold"], "solver": s["solver"], "params": s["params"],
        "seed": s["seed"], "spec": hashed_spec(s), "metrics": {}, "per_query": {}, "train": {},
        "history": [], "extra": {},
        "env": {"versions": library_versions(), "git_commit": _git_commit(),
                "machine": machine_info(), "pid": None, "argv": list(sys.argv),
                "started": started, "finished": _now()},
    })


def run_isolated(spec: dict[str, Any], store: ResultStore | str | os.PathLike,
                 timeout_s: float | None = None) -> dict[str, Any]:
    """Run one spec in a fresh process and store its record; a crash or overrun is a failed record.

    A run killed by the kernel (out of memory: SIGKILL), by a signal, or past
    ``timeout_s`` seconds (then killed) leaves no record of its own: this stores one
    with ``status="failed"`` and the reason, so the sweep goes on.
    """
    import multiprocessing as mp
    import signal as _signal

    if not isinstance(store, ResultStore):
        store = ResultStore(store)
    started = _now()
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
    record = crash_record(spec, reason, started)
    store.append(record)
    log.warning("run %s failed: %s", record["run_id"][:10], reason)
    return record


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
    bar = None
    if progress and todo:
        from tqdm.auto import tqdm

        # disable=None: a bar on a terminal, silence in logs (CI, Slurm output files)
        bar = tqdm(total=len(todo), desc="runs", unit="run", file=sys.stderr, dynamic_ncols=True,
                   disable=None, postfix={"already stored": len(done)})

    def one(s: dict[str, Any]) -> dict[str, Any]:
        if isolate:
            return run_isolated(s, store, timeout_s)
        return _run_and_store(s, str(store.root))

    try:
        if n_jobs == 1 or len(todo) <= 1:
            for rid, s in todo:
                if bar is not None:
                    bar.set_description(f"{s['dataset']} f{s['fold']} {s['solver']}")
                done[rid] = one(s)
                if bar is not None:
                    bar.update(1)
        elif isolate:
            # each thread only waits on its child process
            from concurrent.futures import ThreadPoolExecutor, as_completed

            workers = (os.cpu_count() or 1) if n_jobs == -1 else n_jobs
            with ThreadPoolExecutor(max_workers=workers) as pool:
                futures = [pool.submit(one, s) for _, s in todo]
                for fut in as_completed(futures):
                    rec = fut.result()
                    done[rec["run_id"]] = rec
                    if bar is not None:
                        bar.update(1)
        else:
            from joblib import Parallel, delayed

            results = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
                delayed(_run_and_store)(s, str(store.root)) for _, s in todo
            )
            for rec in results:
                done[rec["run_id"]] = rec
                if bar is not None:
                    bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return [done[rid] for rid in ids]


# ---------------------------------------------------------------- model selection
_GROUP_KEYS = ("experiment", "dataset", "variant", "fold", "solver")


def select_per_fold(frame, metric: str = "vali.ndcg@10"):
    """Model selection: per (experiment, dataset, variant, fold, solver) the params with the best ``metric``.

    ``frame`` is ``ResultStore.to_frame()`` output; failed runs and runs without the
    metric are ignored.  Runs of one parameter set with several seeds are averaged
    first (selecting the luckiest seed would bias the test numbers upwards): metrics are
    then means over seeds, ``n_seeds`` says how many, ``run_id`` is one of them and
    ``run_ids`` lists them all.  Ties go
    to the smallest numeric parameter values (parameters in name order), then to the
    canonical JSON (deterministic).  One row per group with the chosen ``params``,
    ``selected_by``, ``selected_value``, ``n_candidates`` and the chosen runs' metrics.
    """
    import pandas as pd

    if metric not in frame.columns:
        raise ValueError(
            f"selection metric {metric!r} is not a column of the frame; "
            f"metric columns: {sorted(c for c in frame.columns if c.startswith(('vali.', 'test.')))}"
        )
    f = frame[(frame["status"] == "ok") & frame[metric].notna()].copy()
    keys = [k for k in _GROUP_KEYS if k in f.columns]
    if f.empty:
        return pd.DataFrame(columns=[*keys, "params", "selected_by", "selected_value", "n_candidates"])
    f["variant"] = f["variant"].fillna("")
    f = _mean_over_seeds(f, [*keys, "params"])
    # ties: the smallest parameter values win (e.g. the smaller C), then the params JSON
    pcols = sorted(c for c in f.columns if c.startswith("params.") and _sortable(f[c]))
    order = [*keys, metric, *pcols, "params"]
    asc = [True] * len(keys) + [False] + [True] * (len(pcols) + 1)
    f = f.sort_values(order, ascending=asc, kind="mergesort", na_position="last")
    counts = f.groupby(keys, sort=False)["params"].nunique()
    best = f.groupby(keys, sort=False).head(1).copy()
    best["n_candidates"] = [counts.loc[tuple(r)] for r in best[keys].itertuples(index=False)]
    best["selected_by"] = metric
    best["selected_value"] = best[metric]
    best["variant"] = best["variant"].replace("", None)
    lead = [*keys, "params", "selected_by", "selected_value", "n_candidates", "n_seeds", "run_id",
            "run_ids"]
    params_cols = sorted(c for c in best.columns if c.startswith("params."))
    metric_cols = [c for c in best.columns if c.startswith(("vali.", "test."))]
    rest = [c for c in best.columns if c not in lead + params_cols + metric_cols]
    return best[lead + params_cols + metric_cols + rest].reset_index(drop=True)


def compare_selected(records: list[dict[str, Any]], metric: str = "vali.ndcg@10",
                     query_metric: str = "ndcg@10", baseline: str | None = None,
                     n_resamples: int = 10000, seed: int = 0):
    """Paired significance of the per-fold selected models, solver against solver, per data set.

    For each (experiment, dataset, variant) the selected runs of every fold give one test
    value per query (``per_query.test[query_metric]``, averaged over seeds; the folds'
    test sets partition the queries).  Pairs are (baseline, other) when ``baseline`` is
    given, else every pair; each row holds the means over the queries both have, their
    difference and the paired randomization test's two-sided p-value (queries with an
    undefined value, e.g. AUC with one class, are left out).
    """
    import pandas as pd

    from rankbench.significance import paired_randomization_test
    from rankbench.store import flatten_record

    if not records:
        return pd.DataFrame()
    sel = select_per_fold(pd.DataFrame([flatten_record(r) for r in records]), metric)
    by_id = {r["run_id"]: r for r in records}
    values: dict[tuple, dict[Any, list[float]]] = {}
    for row in sel.to_dict("records"):
        key = (row["experiment"], row["dataset"], row.get("variant"), row["solver"])
        per_qid = values.setdefault(key, {})
        for rid in row["run_ids"]:
            pq = (by_id[rid].get("per_query") or {}).get("test") or {}
            if query_metric not in pq:
                raise ValueError(f"run {rid} has no per-query test {query_metric!r}; stored: "
                                 f"{sorted(k for k in pq if k != 'qid')}")
            for q, v in zip(pq["qid"], pq[query_metric], strict=True):
                per_qid.setdefault(q, []).append(np.nan if v is None else float(v))
    groups: dict[tuple, dict[str, dict]] = {}
    for (exp, ds, var, solver), per_qid in values.items():
        groups.setdefault((exp, ds, var), {})[solver] = {q: float(np.mean(v)) for q, v in per_qid.items()}
    rows = []
    for (exp, ds, var), solvers in sorted(groups.items(), key=lambda kv: str(kv[0])):
        names = sorted(solvers)
        if baseline is not None:
            if baseline not in solvers:
                continue
            pairs = [(baseline, n) for n in names if n != baseline]
        else:
            pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
        for a, b in pairs:
            qids = [q for q in solvers[a] if q in solvers[b]]
            va = np.array([solvers[a][q] for q in qids])
            vb = np.array([solvers[b][q] for q in qids])
            keep = ~(np.isnan(va) | np.isnan(vb))
            va, vb = va[keep], vb[keep]
            p = paired_randomization_test(va, vb, n_resamples=n_resamples, seed=seed) if len(va) else np.nan
            rows.append({"experiment": exp, "dataset": ds, "variant": var, "solver_a": a,
                         "solver_b": b, "n_queries": int(len(va)), f"a.{query_metric}": va.mean(),
                         f"b.{query_metric}": vb.mean(), "difference": va.mean() - vb.mean(),
                         "p_value": p})
    return pd.DataFrame(rows)


def _mean_over_seeds(f, group: list[str]):
    """One row per ``group``: numeric metric and timing columns averaged over seeds."""
    import pandas as pd

    n_seeds = f.groupby(group, sort=False)["seed"].nunique() if "seed" in f.columns else None
    if n_seeds is None or n_seeds.max() <= 1:
        return f.assign(n_seeds=1, run_ids=[[r] for r in f["run_id"]])
    run_ids = f.groupby(group, sort=False)["run_id"].agg(list)
    numeric = [c for c in f.columns if c.startswith(("train.", "vali.", "test."))
               and pd.api.types.is_numeric_dtype(f[c]) and c not in group]
    how = {c: ("mean" if c in numeric else "first") for c in f.columns if c not in group}
    out = f.groupby(group, sort=False).agg(how)
    out["n_seeds"] = n_seeds
    out["run_ids"] = run_ids
    out["seed"] = None
    return out.reset_index()


def _sortable(col) -> bool:
    import pandas as pd

    return bool(pd.api.types.is_numeric_dtype(col)) and not pd.api.types.is_bool_dtype(col)


def mean_over_folds(frame, metrics: list[str] | None = None):
    """Per (experiment, dataset, variant, solver, params): the mean and count over folds of ``metrics``.

    The "fixed" protocol (one parameter value for every fold, Chapelle Table 3) and
    C-sweep curves (Chapelle Fig. 1) read this.  ``params.<p>`` columns are kept.
    """
    import pandas as pd

    f = frame[frame["status"] == "ok"].copy()
    metrics = metrics or ["test.ndcg@10", "test.map"]
    metrics = [m for m in metrics if m in f.columns]
    keys = [k for k in ("experiment", "dataset", "variant", "solver", "params") if k in f.columns]
    f["variant"] = f["variant"].fillna("")
    g = f.groupby(keys, sort=True)
    out = g[metrics].mean()
    out["n_folds"] = g["fold"].nunique()
    out = out.reset_index()
    out["variant"] = out["variant"].replace("", None)
    unpacked = pd.DataFrame([json.loads(p) for p in out["params"]], index=out.index)
    unpacked.columns = [f"params.{c}" for c in unpacked.columns]
    return pd.concat([out, unpacked], axis=1)
