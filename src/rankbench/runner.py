"""Runner: a unit of work (a run, or every run of a warm-started path) -> one record per run.

A unit is built from ``RunSpec``s and a registered ``Solver``; a fit tells the runner what it
did through a ``FitReport``.  ``run_unit`` never raises for a solver or data failure: its
records then have ``status="failed"`` and the traceback, or ``status="skipped"`` when the
solver cannot run on this machine (an external peer not built).  ``run_many`` skips runs
already stored with status ok, so a killed sweep re-run does only what is missing, failed or
skipped.  The runner never plots and never selects: what the report needs per iterate
(convergence curves) is recorded here.
"""

from __future__ import annotations

import copy
import importlib
import logging
import os
import time
import traceback
from typing import Any

import numpy as np

from rankbench.estimators.fit_report import FitReport, report_of
from rankbench.estimators.registry import SOLVERS, SolverUnavailable
from rankbench.parallel import SIGNAL_WAKE_S, thread_share
from rankbench.record import (
    crash_record,
    data_facts,
    empty_record,
    env_block,
    evaluate_split,
    score_into,
    train_block,
)
from rankbench.spec import RunSpec
from rankbench.store import ResultStore, stored_ok, to_jsonable
from rankbench.sysinfo import PeakMemory, machine_load, now

log = logging.getLogger(__name__)
# seconds an overrunning isolated run gets to unwind after SIGTERM before SIGKILL
TERMINATE_GRACE_S = 10.0



# ---------------------------------------------------------------- data
def load_split(spec: RunSpec, split: str):
    """The RankingData of one split of the spec's (dataset, variant, fold), from the data set
    registry by name (``rankbench.data.registry.load_split``) with ``data_params`` as its
    keyword arguments.  One data parameter is the runner's own: ``train_fraction``, a subsample
    of the training queries seeded by (seed, fold), for scaling curves."""
    from rankbench.data.registry import load_split as load

    spec = RunSpec.from_dict(spec)
    dp = dict(spec.data_params)
    frac = dp.pop("train_fraction", None)
    data = load(spec.dataset, spec.fold, split, variant=spec.variant, root=spec.data_root,
                run_seed=spec.seed, **dp)
    if frac is not None and split == "train":
        frac = float(frac)
        if not 0.0 < frac <= 1.0:
            raise ValueError(f"data_params.train_fraction must be in (0, 1], got {frac}")
        if frac < 1.0:
            rng = np.random.default_rng([spec.seed, spec.fold])
            k = max(1, round(frac * data.n_queries))
            data = data.subset_queries(np.sort(rng.choice(data.n_queries, size=k, replace=False)))
    return data


def _load_data(s: RunSpec, record: dict[str, Any]) -> dict[str, Any]:
    """The spec's train split and evaluated splits; the record gains the data facts."""
    data = {"train": load_split(s, "train")}
    for split in s.eval_splits:
        if split != "train":
            data[split] = load_split(s, split)
    record["synthetic"] = bool(getattr(data["train"], "synthetic", False))
    stand_in = (getattr(data["train"], "meta", None) or {}).get("stand_in_for")
    if stand_in:
        record["extra"]["stand_in_for"] = stand_in
    record["extra"]["data"] = {k: data_facts(d) for k, d in data.items()}
    return data


# ---------------------------------------------------------------- fitting
def _fit(est: Any, train, vali, test=None) -> None:
    """Fit on train; vali feeds early stopping, test (history runs only) feeds convergence curves."""
    import inspect

    try:
        takes_eval = "eval_set" in inspect.signature(est.fit).parameters
    except (TypeError, ValueError):
        takes_eval = False
    kwargs: dict[str, Any] = {}
    # boosters stop early on the validation split: that is the LETOR protocol's use of it
    if takes_eval and vali is not None and est.get_params().get("early_stopping_rounds"):
        kwargs["eval_set"] = [(vali.X, vali.y, vali.qid)]
    elif takes_eval and test is not None:  # evaluation only: the test curve of Sculley's Fig. 2
        kwargs["eval_set"] = (test.X, test.y, test.qid)
    from rankbench.data.sharded import ShardedDataset

    if isinstance(train, ShardedDataset):  # Ray actors load its shards (rankbench.distributed)
        est.fit(train)
        return
    est.fit(train.X, train.y, train.qid, **kwargs)


def _report(est: Any) -> FitReport:
    """The fit's ``FitReport``; an estimator of a user's that has no ``fit_report`` is read by the
    fitted-attribute convention rankbench's estimators document (``report_of``)."""
    fit_report = getattr(est, "fit_report", None)
    return fit_report() if callable(fit_report) else report_of(est)


def _fit_unit(members: list[RunSpec], data: dict[str, Any], record: dict[str, Any]):
    """[(estimator, FitReport, wall s, cpu s)] of the unit's runs, and the params each ran with."""
    s = members[0]
    solver = s.solver_entry()
    tr = data["train"]
    if s.path is not None:  # the solver's own warm-started path: one (model, report) per C
        fits = solver.path({k: v for k, v in s.params.items() if k != "C"}, list(s.path),
                           tr.X, tr.y, tr.qid)
        return [(m, rep, rep.fit_time or 0.0, 0.0) for m, rep in fits], [m.params for m in members]
    params = dict(s.params)
    if s.tune:
        from rankbench.tuning import tune_parameter

        vali = data.get("vali") or load_split(s, "vali")
        value, record["extra"]["tuning"] = tune_parameter(
            s.tune, s.solver, params, tr, vali, lambda n, p: SOLVERS.get(n).make(p),
            lambda e, d: _fit(e, d, None), evaluate_split)
        params[s.tune["param"]] = value
    est = solver.make(params)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    _fit(est, tr, data.get("vali"), data.get("test") if s.record_history else None)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return [(est, _report(est), wall, cpu)], [params]


# ---------------------------------------------------------------- records
def run_unit(spec: RunSpec | dict[str, Any]) -> list[dict[str, Any]]:
    """The records of the spec's unit: the run itself, or every C of its warm-started path
    (increasing C; the data loaded once, the C values fitted by the solver's declared path,
    each record's times that C's incremental time on the path, ``train.warm_start: true``).

    Timings: ``wall_s`` is the fit's own ``fit_time`` (numba compilation excluded) when it
    reports one, else the measured fit wall time; ``compile_s`` its compile time; ``cpu_s``
    this process's CPU time over ``fit`` minus ``compile_s``; ``wall_total_s`` /
    ``cpu_total_s`` include everything.  The record keeps each evaluated split's metrics, the
    test split's per-query values and its scores (float32, ``decode_scores``), so any metric
    can be recomputed later.  Never raises on a failed run (the records say why).
    """
    members = RunSpec.from_dict(spec).path_members()
    started, load_start = now(), machine_load()
    records = [empty_record(m) for m in members]
    try:
        data = _load_data(members[0], records[0])
        with PeakMemory() as mem:
            fits, params = _fit_unit(members, data, records[0])
        for k, (rec, m, (est, rep, wall, cpu)) in enumerate(zip(records, members, fits, strict=True)):
            if k:
                rec["synthetic"] = records[0]["synthetic"]
                rec["extra"] = copy.deepcopy(records[0]["extra"])
            rec["params"] = dict(params[k])  # a tuned run's chosen value
            rec["train"] = train_block(rep, wall, cpu, mem)
            score_into(rec, est, rep, data, m)
    except SolverUnavailable as exc:
        records = [empty_record(m, "skipped", str(exc)) for m in members]
        log.warning("run %s (%s) skipped: %s", records[0]["run_id"][:10], members[0].solver, exc)
    except Exception as exc:  # noqa: BLE001 - a failed run is data, recorded with its traceback
        error = f"{type(exc).__name__}: {exc}\n" + traceback.format_exc()
        for rec in records:  # what was measured before the failure is kept
            rec["status"], rec["error"] = "failed", error
        s = members[0]
        log.warning("run %s (%s fold %s %s %s) failed: %s", records[0]["run_id"][:10], s.dataset,
                    s.fold, s.solver, s.params, exc)
    for rec in records:
        rec["env"] = env_block(started, os.getpid(), load_start)
    return [to_jsonable(r) for r in records]


def run_one(spec: RunSpec | dict[str, Any]) -> dict[str, Any]:
    """The record of one run (a warm-started path's point runs its whole path)."""
    s = RunSpec.from_dict(spec)
    return next(r for r in run_unit(s) if r["run_id"] == s.run_id)


# ---------------------------------------------------------------- many runs
def plugin_modules() -> list[str]:
    """The modules that registered the solvers and data sets known here: a fresh process (an
    isolated run, a joblib worker) imports them to know the same names."""
    from rankbench.data.registry import LOADERS

    return sorted(set(SOLVERS.modules()) | set(LOADERS.modules()))


def _run_and_store(spec: RunSpec, store_root: str, threads: int = 0,
                   modules: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    for mod in modules:
        importlib.import_module(mod)
    if threads:
        # parallel jobs share the cores: each worker's kernels get their share, not every core
        import numba

        numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))
    records = run_unit(spec)
    store = ResultStore(store_root)
    for record in records:
        store.append(record)  # StoreWriteError keeps the record in a fallback file
    return records


def _terminated(signum, frame) -> None:
    raise SystemExit(128 + signum)  # unwinds: a peer's process group and folder are cleaned up


def _isolated_child(spec: RunSpec, store_root: str, modules: tuple[str, ...]) -> None:
    import signal

    signal.signal(signal.SIGTERM, _terminated)
    _run_and_store(spec, store_root, 0, modules)


def _join_awake(proc, timeout_s: float | None) -> None:
    """``proc.join(timeout_s)`` in slices of SIGNAL_WAKE_S seconds, so that a signal taken by
    another thread is handled within one (``parallel.SIGNAL_WAKE_S``)."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while proc.is_alive():
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return
        proc.join(SIGNAL_WAKE_S if left is None else min(SIGNAL_WAKE_S, left))


def _stop(proc) -> None:
    """SIGTERM first (the run unwinds; a peer it runs is killed with its group), SIGKILL after
    TERMINATE_GRACE_S seconds."""
    proc.terminate()
    proc.join(TERMINATE_GRACE_S)
    if proc.is_alive():
        proc.kill()
        proc.join()


def run_isolated(spec: RunSpec | dict[str, Any], store: ResultStore | str | os.PathLike,
                 timeout_s: float | None = None) -> dict[str, Any]:
    """Run one spec's unit in a fresh process and store its records; a crash or overrun is a
    failed record.

    A run killed by the kernel (out of memory: SIGKILL), by a signal, or past ``timeout_s``
    seconds (then killed) leaves no record of its own: this stores one with
    ``status="failed"`` and the reason, so the sweep goes on.  Returns the spec's own record.
    """
    import multiprocessing as mp
    import signal as _signal

    s = RunSpec.from_dict(spec)
    store = store if isinstance(store, ResultStore) else ResultStore(store)
    started = now()
    # spawn: a clean interpreter, no fork of a parent holding threads (joblib, Ray, tqdm)
    proc = mp.get_context("spawn").Process(
        target=_isolated_child, args=(s, str(store.root), tuple(plugin_modules())), daemon=True)
    proc.start()
    try:
        _join_awake(proc, timeout_s)
    except BaseException:  # the parent interrupted (Ctrl-C, SIGTERM): the run is not left behind
        _stop(proc)
        raise
    reason = None
    if proc.is_alive():
        _stop(proc)
        reason = f"TimeoutError: run exceeded timeout_s={timeout_s:g} s and was killed"
    elif proc.exitcode != 0:
        code = proc.exitcode
        if code is not None and code < 0:
            name = _signal.Signals(-code).name
            hint = " (out of memory? the kernel's OOM killer sends SIGKILL)" if name == "SIGKILL" else ""
            reason = f"WorkerDied: the run's process was killed by {name}{hint}"
        else:
            reason = f"WorkerDied: the run's process exited with code {code}"
    if reason is not None:
        for member in s.path_members():  # a warm-started path's runs all died with it
            store.append(crash_record(member, reason, started))
        log.warning("run %s failed: %s", s.run_id[:10], reason)
    return store.get(s.run_id)


def run_many(specs: list[RunSpec | dict[str, Any]], store: ResultStore | str | os.PathLike,
             n_jobs: int = 1, progress: bool = True, rerun: bool = False, isolate: bool = False,
             timeout_s: float | None = None) -> list[dict[str, Any]]:
    """Run every spec not already stored with status ok, appending each record as it finishes.

    Returns the records in spec order (stored ones included).  Duplicate specs run once.
    ``n_jobs > 1`` runs in joblib worker processes, each writing its own records.
    ``rerun=True`` runs everything again and replaces the stored records (``run_id`` does not
    include the code version: after a solver change, rerun or use a new experiment tag;
    ``env.git_commit`` tells which code wrote a record).  ``isolate=True`` (implied by
    ``timeout_s``) runs each unit in its own process (``run_isolated``).  A warm-started path
    is one unit: when any of its runs is missing, the whole path runs again and every one of
    its records is replaced (its times depend on the whole path).  The store is checked
    writable first; a record that cannot be written (disk full, read-only) is saved to a
    fallback file named in the ``StoreWriteError`` raised after the finished runs are kept.
    """
    from rankbench.progress import Progress

    store = store if isinstance(store, ResultStore) else ResultStore(store)
    if timeout_s is not None and not timeout_s > 0:
        raise ValueError(f"timeout_s must be > 0 or None, got {timeout_s!r}")
    isolate = isolate or timeout_s is not None
    specs = [RunSpec.from_dict(s) for s in specs]
    done: dict[str, dict] = {}
    todo: dict[str, RunSpec] = {}
    for s in specs:
        if s.run_id in done or s.run_id in todo:
            continue
        rec = None if rerun else stored_ok(store, s.run_id)
        if rec is not None:
            done[s.run_id] = rec
        else:
            todo[s.run_id] = s
    if todo:
        store.check_writable()
    bar = Progress(len(todo), len(done), progress)
    units: dict[str | None, RunSpec] = {}  # a path's first missing run stands for all of them
    for rid, s in todo.items():
        units.setdefault(s.path_key() or rid, s)
    units_list = list(units.values())

    def one(s: RunSpec) -> list[dict[str, Any]]:
        if isolate:
            run_isolated(s, store, timeout_s)
            return [store.get(m.run_id) for m in s.path_members()]
        return _run_and_store(s, str(store.root))

    def finished(records: list[dict[str, Any]]) -> None:
        for rec in records:
            done[rec["run_id"]] = rec
            if rec["run_id"] in todo:
                bar.step(rec)

    workers = (os.cpu_count() or 1) if n_jobs == -1 else n_jobs
    try:
        if workers == 1 or len(units_list) <= 1:
            for s in units_list:
                finished(one(s))
        elif isolate:  # each thread only waits on its child process
            from concurrent.futures import ThreadPoolExecutor, as_completed

            with ThreadPoolExecutor(max_workers=workers) as pool:
                for fut in as_completed([pool.submit(one, s) for s in units_list]):
                    finished(fut.result())
        else:
            from joblib import Parallel, delayed

            share, modules = thread_share(min(workers, len(units_list))), tuple(plugin_modules())
            for recs in Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
                    delayed(_run_and_store)(s, str(store.root), share, modules) for s in units_list):
                finished(recs)
    finally:
        bar.close()
    return [done[s.run_id] for s in specs]
