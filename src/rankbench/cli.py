"""Command line: the Hydra experiment app and the summaries it prints.

``rankbench [hydra overrides]`` (or ``python -m rankbench``) runs one Hydra job = one
(dataset, solver, params, seed) over the protocol's folds, one record per fold;
``-m`` sweeps (``solver.C=1e-6,1e-5`` or ``solver.log10_C='range(-6,1)'``) through
any Hydra launcher (the multirun's callback: ``rankbench.sweep_callback``).
``rankbench results`` (lists, filters, model-selects, compares and exports stored records)
is ``rankbench.results_cli``.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from rankbench.config import ConfigError, ProtocolConf
from rankbench.plan import conf_dir, expand_sweep, plan_jobs, prepare  # noqa: F401 (conf_dir: API)
from rankbench.results_cli import (  # noqa: F401 (results_main, results_parser: API)
    mark_synthetic,
    natural_sort,
    params_column,
    results_main,
    results_parser,
    table_text,
)

log = logging.getLogger("rankbench")
# Exit statuses: 0 every run ok (or stored), 1 some run failed, 2 a configuration or usage
# error (nothing ran), 3 the results store could not be written.
EXIT_FAILED_RUNS, EXIT_CONFIG, EXIT_STORE = 1, 2, 3


def run_job(cfg: Any) -> dict[str, Any]:
    """Hydra task: validate, run the job's specs (resuming), print its table; returns a small summary.

    Exits 2 on a configuration error and 3 when the store cannot be written (the record
    is kept in the fallback file the message names); failed runs are counted, and a single
    run's command exits 1 (a multirun exits 1 at its end, after the other jobs ran).
    """
    from rankbench.runner import run_many
    from rankbench.store import ResultStore

    try:
        job, specs = prepare(cfg)
    except ConfigError as exc:
        print(f"rankbench: {exc}", file=sys.stderr)
        sys.exit(EXIT_CONFIG)
    c = job.conf
    if job.skip:
        log.info("%s (%s): nothing to run: %s", job.data_use.served, job.solver_name, job.skip)
        return {"run_ids": [], "n_failed": 0, "store": c.store, "skipped": job.skip}
    store = ResultStore(c.store)
    from rankbench.parallel import numba_threads

    try:
        with numba_threads(launcher_thread_share()):
            records = run_many(specs, store, n_jobs=c.n_jobs, progress=c.progress, rerun=c.rerun,
                               isolate=c.isolate, timeout_s=c.timeout_s)
    except OSError as exc:  # store not writable, disk full: finished records are kept
        print(f"rankbench: {exc}", file=sys.stderr)
        sys.exit(EXIT_STORE)
    frame = store.to_frame(records=records)
    # logging: the console and the job's own rankbench.log (Hydra's job logging) both get it
    log.info("%d run(s) of %s on %s:\n%s", len(records), job.solver_name, job.data_use.served,
             job_table(frame, c.protocol))
    if c.use_grid:  # the job holds a whole sweep: summarise it here
        log.info("grid summary:\n%s", sweep_summary(frame, c.protocol))
    n_failed = int((frame["status"] == "failed").sum())
    for status in ("failed", "skipped"):
        bad = [r for r in records if r["status"] == status]
        if bad:
            log.warning("%d run(s) %s; first: %s", len(bad), status, bad[0]["error"].splitlines()[0])
            print(f"{len(bad)} run(s) {status}; first: {bad[0]['error'].splitlines()[0]}",
                  file=sys.stderr)
    if n_failed and not _in_multirun():
        sys.exit(EXIT_FAILED_RUNS)
    return {"run_ids": [s.run_id for s in specs], "n_failed": n_failed, "store": c.store}


def launcher_thread_share(launcher: Any = None) -> int | None:
    """The numba threads of one job under Hydra's joblib launcher: the cores divided among the
    jobs it runs at once (``hydra.launcher.n_jobs``; -1 or None: one per core), at least 1.
    None (every thread) for any other launcher or outside Hydra.  ``launcher``: the launcher's
    config (default: the running Hydra's)."""
    if launcher is None:
        try:
            from hydra.core.hydra_config import HydraConfig

            launcher = HydraConfig.get().launcher
        except (ImportError, ValueError):  # not inside a Hydra job
            return None
    target = str(launcher.get("_target_", "") if hasattr(launcher, "get") else "")
    if "joblib" not in target.lower():
        return None
    from rankbench.parallel import thread_share

    n = launcher.get("n_jobs")
    return thread_share((os.cpu_count() or 1) if n is None or int(n) < 1 else int(n))


def _in_multirun() -> bool:
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        return HydraConfig.get().mode == RunMode.MULTIRUN
    except (ImportError, ValueError):
        return False


def job_table(frame, protocol: ProtocolConf) -> str:
    """One screen: per fold the report metrics, time and iterations of this job's runs."""
    if frame.empty:
        return "(no runs)"
    frame = mark_synthetic(frame)
    cols = ["fold", "solver", "params", "status"]
    cols += [m for m in protocol.report_metrics if m in frame.columns]
    cols += [c for c in ("train.wall_s", "train.n_iter", "train.peak_mem_mb") if c in frame.columns]
    f = frame[cols].copy()
    f["params"] = params_column(f["params"])
    return f.sort_values(["params", "fold"]).to_string(index=False, float_format=lambda x: f"{x:.4g}")


def sweep_summary(frame, protocol: ProtocolConf) -> str:
    """Text summary of a sweep, by protocol mode.

    select: means per parameter value, then the per-fold selection and its test means;
    fixed: means per parameter value (and training time summed over folds, as Chapelle's
    Table 3); per_fold: per-fold values, then means per solver.  Means over folds come with
    the standard deviation over folds (``<metric>.sd``) of NDCG@10, MAP, AUC and MAUC.
    """
    from rankbench.results_cli import SD_METRICS
    from rankbench.selection import fold_means, mean_over_folds, select_per_fold

    if frame.empty:
        return "no stored records for this sweep"
    frame = mark_synthetic(frame)
    ok = frame[frame["status"] == "ok"]
    lines = [f"{len(ok)} ok / {len(frame) - len(ok)} failed runs"]
    if ok.empty:
        return lines[0]
    metrics = [m for m in protocol.report_metrics if m in frame.columns]
    sd = [m for m in metrics if m in SD_METRICS]
    with_sd = [c for m in metrics for c in ((m, f"{m}.sd") if m in sd else (m,))]
    fmt = {"float_format": lambda x: f"{x:.4g}", "index": False}
    mode = protocol.mode
    if mode == "per_fold":
        per = natural_sort(ok.copy(), fold_first=True)
        per["params"] = params_column(per["params"])
        cols = ["dataset", "solver", "fold", "params", *metrics, "train.wall_s"]
        lines += ["", "per fold (parameters given per fold):", per[cols].to_string(**fmt)]
        agg = fold_means(ok, ["dataset", "solver"], metrics, sd)
        sums = ok.groupby(["dataset", "solver"])["train.wall_s"].sum()
        agg = agg.join(sums.rename("train.wall_s (all folds)"), on=["dataset", "solver"])
        lines += ["", "mean over folds:", agg.to_string(**fmt)]
        return "\n".join(lines)
    means = mean_over_folds(frame, metrics + ["train.wall_s"], sd=sd)
    sums = ok.groupby(["solver", "params"])["train.wall_s"].sum().rename("train.wall_s (all folds)")
    means = natural_sort(means.join(sums, on=["solver", "params"]))
    means["params"] = params_column(means["params"])
    cols = ["dataset", "solver", "params", "n_folds", *with_sd, "train.wall_s (all folds)"]
    lines += ["", "mean over folds per parameter value:", means[cols].to_string(**fmt)]
    metric = protocol.selection_metric
    if mode == "select" and metric not in frame.columns:
        lines += ["", f"no model selection: no run has {metric}"]
    elif mode == "select":
        sel = select_per_fold(frame, metric)
        sel["params"] = params_column(sel["params"])
        cols = ["dataset", "fold", "solver", "params", "selected_value", "n_candidates", *metrics]
        lines += ["", f"model selection on {metric} (per fold):", sel[cols].to_string(**fmt)]
        if metrics:
            agg = fold_means(sel, ["dataset", "solver"], metrics, sd)
            lines += ["", "test metrics of the selected models, mean (and sd) over folds:",
                      agg.to_string(**fmt)]
    return "\n".join(lines)
