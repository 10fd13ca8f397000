"""Command line: the Hydra experiment app, its multirun summary callback, and ``rankbench results``.

``rankbench [hydra overrides]`` (or ``python -m rankbench``) runs one Hydra job = one
(dataset, solver, params, seed) over the protocol's folds, one record per fold;
``-m`` sweeps (``solver.C=1e-6,1e-5`` or ``solver.log10_C='range(-6,1)'``) through
any Hydra launcher.  ``rankbench results`` lists, filters and model-selects stored records.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from rankbench.config import ConfigError, ProtocolConf
from rankbench.plan import conf_dir, expand_sweep, plan_jobs, prepare  # noqa: F401 (conf_dir: API)

log = logging.getLogger("rankbench")

DEFAULT_COLUMNS = ["experiment", "dataset", "fold", "solver", "params", "status",
                   "test.ndcg@10", "test.map", "train.wall_s", "train.n_iter"]
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
        log.info("%s (%s): nothing to run: %s", job.data_use.label, job.solver_name, job.skip)
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
    log.info("%s runs of %s on %s:\n%s", len(records), job.solver_name, job.data_use.label,
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


_QUIET_PARAMS = ("verbose", "random_state", "checkpoints")


def _fmt_params(params_json: str, hide: frozenset[str] = frozenset()) -> str:
    params = json.loads(params_json)
    # None = "the solver's default": not worth a column of noise
    shown = {k: v for k, v in params.items()
             if v is not None and k not in _QUIET_PARAMS and k not in hide}
    return " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in shown.items())


def params_column(col):
    """Parameters as short text, leaving out those with one value in every row (when others vary)."""
    parsed = [json.loads(p) for p in col]
    keys = {k for p in parsed for k in p}
    constant = frozenset(k for k in keys if len({json.dumps(p.get(k)) for p in parsed}) == 1)
    hide = constant if constant != keys and len(parsed) > 1 else frozenset()
    return col.map(lambda p: _fmt_params(p, hide) or "(defaults)")


def mark_synthetic(frame):
    """Dataset names of generated data (stand-ins included) get a visible ``[synthetic]``."""
    if "synthetic" not in frame.columns or frame.empty:
        return frame
    flag = frame["synthetic"].astype("boolean").fillna(False).astype(bool)
    if not flag.any():
        return frame
    out = frame.copy()
    out.loc[flag, "dataset"] = out.loc[flag, "dataset"].astype(str) + " [synthetic]"
    return out


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
    Table 3); per_fold: per-fold values, then means per solver.
    """
    from rankbench.selection import mean_over_folds, select_per_fold

    if frame.empty:
        return "no stored records for this sweep"
    frame = mark_synthetic(frame)
    ok = frame[frame["status"] == "ok"]
    lines = [f"{len(ok)} ok / {len(frame) - len(ok)} failed runs"]
    if ok.empty:
        return lines[0]
    metrics = [m for m in protocol.report_metrics if m in frame.columns]
    fmt = {"float_format": lambda x: f"{x:.4g}", "index": False}
    mode = protocol.mode
    if mode == "per_fold":
        per = natural_sort(ok.copy(), fold_first=True)
        per["params"] = params_column(per["params"])
        cols = ["dataset", "solver", "fold", "params", *metrics, "train.wall_s"]
        lines += ["", "per fold (parameters given per fold):", per[cols].to_string(**fmt)]
        g = ok.groupby(["dataset", "solver"])
        agg = g[metrics].mean()
        agg["train.wall_s (all folds)"] = g["train.wall_s"].sum()
        agg["n_folds"] = g["fold"].nunique()
        lines += ["", "mean over folds:", agg.reset_index().to_string(**fmt)]
        return "\n".join(lines)
    means = mean_over_folds(frame, metrics + ["train.wall_s"])
    sums = ok.groupby(["solver", "params"])["train.wall_s"].sum().rename("train.wall_s (all folds)")
    means = natural_sort(means.join(sums, on=["solver", "params"]))
    means["params"] = params_column(means["params"])
    cols = ["dataset", "solver", "params", "n_folds", *metrics, "train.wall_s (all folds)"]
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
            agg = sel.groupby(["dataset", "solver"])[metrics].mean().reset_index()
            lines += ["", "test metrics of the selected models, mean over folds:", agg.to_string(**fmt)]
    return "\n".join(lines)


# ---------------------------------------------------------------- rankbench results
def results_parser() -> argparse.ArgumentParser:
    """Argument parser of ``rankbench results``."""
    p = argparse.ArgumentParser(
        prog="rankbench results",
        description="List, filter and model-select the records of a results store.",
    )
    p.add_argument("--store", action="append",
                   help="store directory, repeatable (default: $RANKBENCH_STORE, else both "
                        "results/local (ad-hoc runs) and results/store (the papers' runs) under "
                        "the current directory)")
    p.add_argument("-e", "--experiment", action="append", help="experiment tag (repeatable)")
    p.add_argument("-d", "--dataset", action="append", help="dataset name (repeatable)")
    p.add_argument("-s", "--solver", action="append", help="solver name (repeatable)")
    p.add_argument("--status", choices=["ok", "failed", "skipped"])
    p.add_argument("--fold", type=int, action="append")
    p.add_argument("-p", "--param", action="append", default=[], metavar="K=V",
                   help="parameter filter, e.g. -p C=1e-4 (repeatable)")
    p.add_argument("-c", "--columns", help="comma-separated columns (see --list-columns)")
    p.add_argument("--list-columns", action="store_true", help="print the available columns")
    p.add_argument("--select", nargs="?", const="vali.ndcg@10", metavar="METRIC",
                   help="model selection per fold on METRIC (default vali.ndcg@10)")
    p.add_argument("--mean", action="store_true", help="mean over folds per parameter set")
    p.add_argument("--compare", action="store_true",
                   help="paired randomization test between the solvers' per-fold selected models "
                        "(per-query test values; selection on --select METRIC, default vali.ndcg@10)")
    p.add_argument("--baseline", metavar="SOLVER", help="with --compare: every solver against this one")
    p.add_argument("--query-metric", default="ndcg@10", choices=["ndcg@10", "map", "auc"],
                   help="with --compare: the per-query test metric (default ndcg@10)")
    p.add_argument("--errors", action="store_true", help="show the first line of each failed run's error")
    p.add_argument("--export-trec", metavar="DIR",
                   help="write each listed ok run's test ranking as a TREC run (DIR/<run_id>.run, "
                        "from its stored scores) and the test split's qrels "
                        "(DIR/<dataset>[_<variant>]_fold<k>.qrels), for trec_eval / ir-measures / ranx")
    p.add_argument("--data-root", help="with --export-trec: the data root (default RANKBENCH_DATA)")
    p.add_argument("--sort", help="comma-separated sort columns")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.add_argument("--skip-corrupt", action="store_true",
                   help="list corrupt record files on stderr and show the rest (default: stop)")
    return p


def export_trec(records: list[dict[str, Any]], out: Path, data_root: str | None) -> int:
    """``rankbench results --export-trec DIR``: TREC run + qrels of each ok record's test split."""
    from rankbench.runner import load_split
    from rankbench.store import decode_scores
    from rankbench.trec import write_qrels, write_run

    ok = [r for r in records if r.get("status") == "ok"]
    if not ok:
        print("rankbench results: no ok runs to export", file=sys.stderr)
        return 0
    out.mkdir(parents=True, exist_ok=True)
    problems, written, splits = [], 0, {}
    for r in ok:
        try:
            scores = decode_scores((r.get("scores") or {}).get("test"))
            spec = {**r["spec"], "data_root": data_root} if data_root else dict(r["spec"])
            key = (r["dataset"], r.get("variant"), r["fold"], repr(r["spec"].get("data_params")))
            if key not in splits:
                splits[key] = load_split(spec, "test")
                name = "_".join(str(x) for x in (r["dataset"], r.get("variant")) if x)
                write_qrels(out / f"{name}_fold{r['fold']}.qrels", splits[key])
            write_run(out / f"{r['run_id']}.run", splits[key], scores,
                      tag=f"{r['solver']}_{r['run_id'][:8]}")
            written += 1
        except (ValueError, OSError) as exc:
            problems.append(f"{r['run_id'][:10]} ({r['dataset']} fold {r['fold']} {r['solver']}): {exc}")
    for p in problems:
        print(f"rankbench results: not exported: {p}", file=sys.stderr)
    print(f"wrote {written} TREC run(s) and {len(splits)} qrels file(s) to {out}")
    return 1 if problems else 0


def results_main(argv: list[str] | None = None) -> int:
    """``rankbench results``: print stored records as a table; exit 2 on corrupt files or bad options."""
    from rankbench.selection import mean_over_folds, select_per_fold
    from rankbench.store import CorruptRecordError, ResultStore, matches_filters

    args = results_parser().parse_args(argv)
    roots = args.store or ([os.environ["RANKBENCH_STORE"]] if os.environ.get("RANKBENCH_STORE")
                           else ["results/local", "results/store"])
    stores = [ResultStore(Path(r).resolve()) for r in roots]
    for st in stores:
        if st.root.exists() and not st.root.is_dir():
            print(f"rankbench results: --store {st.root} is a file, not a results store (a "
                  "directory of <experiment>/<run_id>.json records)", file=sys.stderr)
            return 2
    print("rankbench results: reading " + ", ".join(
        f"{s.root}" + ("" if s.root.is_dir() else " (absent)") for s in stores), file=sys.stderr)
    store = _MultiStore(stores)
    filters: dict[str, Any] = {"experiment": args.experiment, "dataset": args.dataset,
                               "solver": args.solver, "status": args.status, "fold": args.fold}
    for kv in args.param:
        k, sep, v = kv.partition("=")
        if not sep:
            print(f"rankbench results: --param wants K=V, got {kv!r}", file=sys.stderr)
            return 2
        filters[f"params__{k}"] = v
    try:
        records = store.records(on_corrupt="raise", **filters)
    except CorruptRecordError as exc:
        if not args.skip_corrupt:
            print(f"rankbench results: {exc}\n(use --skip-corrupt to list the other records)",
                  file=sys.stderr)
            return 2
        for path, why in exc.problems:
            print(f"rankbench results: corrupt record file {path}: {why}", file=sys.stderr)
        records = [r for r in store.scan()[0] if matches_filters(r, filters)]
    frame = stores[0].to_frame(records=records)
    if args.list_columns:
        print("\n".join(frame.columns))
        return 0
    if frame.empty:
        print(f"no records in {' or '.join(str(s.root) for s in stores)}" + (
            " matching the filters" if any(v for v in filters.values()) else ""), file=sys.stderr)
        return 0
    if args.export_trec:
        return export_trec(records, Path(args.export_trec), args.data_root)
    if args.format == "table":  # csv / json keep the plain name and the synthetic column
        frame = mark_synthetic(frame)
    if args.compare:
        from rankbench.selection import compare_selected

        try:
            frame = compare_selected(records, args.select or "vali.ndcg@10", args.query_metric,
                                     args.baseline)
        except ValueError as exc:
            print(f"rankbench results: {exc}", file=sys.stderr)
            return 2
        if frame.empty:
            print("nothing to compare: needs two solvers with selected runs on one data set"
                  + (f", one of them {args.baseline!r}" if args.baseline else ""), file=sys.stderr)
            return 0
        args.select = None  # the rows are pairs of solvers, not folds
        default = list(frame.columns)
    elif args.select:
        try:
            frame = select_per_fold(frame, args.select)
        except ValueError as exc:
            print(f"rankbench results: {exc}", file=sys.stderr)
            return 2
        default = ["experiment", "dataset", "fold", "solver", "params", "selected_value",
                   "n_candidates", "test.ndcg@10", "test.map"]
    elif args.mean:
        frame = mean_over_folds(frame, [c for c in frame.columns if c.startswith("test.")]
                                + ["train.wall_s"])
        default = ["experiment", "dataset", "solver", "params", "n_folds", "test.ndcg@10",
                   "test.map", "train.wall_s"]
    elif args.errors:
        frame = frame[frame["status"] != "ok"].copy()
        if frame.empty:
            print("no failed or skipped runs among these records")
            return 0
        frame["error"] = frame["error"].fillna("").map(lambda e: (e.splitlines() or [""])[0])
        default = ["experiment", "dataset", "fold", "solver", "params", "error"]
    else:
        default = DEFAULT_COLUMNS
    cols = args.columns.split(",") if args.columns else [c for c in default if c in frame.columns]
    unknown = [c for c in cols if c not in frame.columns]
    if unknown:
        print(f"rankbench results: unknown column(s) {unknown}; see --list-columns", file=sys.stderr)
        return 2
    frame = natural_sort(frame, fold_first=bool(args.select))
    if args.sort:  # stable: ties keep the natural order
        keys = args.sort.split(",")
        bad = [k for k in keys if k not in frame.columns]
        if bad:
            print(f"rankbench results: unknown sort column(s) {bad}", file=sys.stderr)
            return 2
        frame = frame.sort_values(keys, kind="mergesort")
    out = frame[cols].copy()
    if "variant" in out.columns:  # the data set has no variants: a blank, not "NaN"
        out["variant"] = out["variant"].astype(object).where(out["variant"].notna(), "")
    if args.format == "table":
        if "params" in out.columns:
            out["params"] = params_column(out["params"])
    if args.format == "csv":
        sys.stdout.write(out.to_csv(index=False))
    elif args.format == "json":
        sys.stdout.write(out.to_json(orient="records", indent=1) + "\n")
    else:
        with _wide_pandas():
            print(out.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    return 0


class _MultiStore:
    """Several stores read as one (records are self-describing; run ids are unique)."""

    def __init__(self, stores):
        self.stores = stores

    def records(self, on_corrupt: str = "raise", **filters):
        from rankbench.store import CorruptRecordError

        out, problems = [], []
        for st in self.stores:
            try:
                out.extend(st.records(on_corrupt=on_corrupt, **filters))
            except CorruptRecordError as exc:
                problems.extend(exc.problems)
        if problems:
            raise CorruptRecordError(problems)
        return out

    def scan(self):
        recs, bad = [], []
        for st in self.stores:
            r, b = st.scan()
            recs.extend(r)
            bad.extend(b)
        return recs, bad


def natural_sort(frame, fold_first: bool = False):
    """Rows by experiment, dataset, solver, then numeric parameter values and fold."""
    from rankbench.selection import _sortable

    pcols = sorted(c for c in frame.columns if c.startswith("params.") and _sortable(frame[c]))
    params = [*pcols, "params"]
    tail = ["fold", *params] if fold_first else [*params, "fold"]
    keys = [k for k in ("experiment", "dataset", "solver", *tail) if k in frame.columns]
    return frame.sort_values(keys, kind="mergesort", na_position="last")


class _wide_pandas:
    def __enter__(self):
        import pandas as pd

        self._ctx = pd.option_context("display.width", 250, "display.max_colwidth", 60)
        self._ctx.__enter__()

    def __exit__(self, *exc):
        self._ctx.__exit__(*exc)
