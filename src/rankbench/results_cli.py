"""``rankbench results``: list, filter, model-select, compare and export the records of results stores.

Also the table helpers the experiment command's summaries share (parameters as short text,
generated data marked, the natural row order).  Nothing here imports Hydra, unless an ``-e``
value names an experiment config rather than a store tag (then its tag is read from the
composed config).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

DEFAULT_COLUMNS = ["experiment", "dataset", "fold", "solver", "params", "status",
                   "test.ndcg@10", "test.map", "train.wall_s", "train.n_iter"]
# metrics whose standard deviation over folds the tables of means show
SD_METRICS = ("test.ndcg@10", "test.map", "test.auc", "test.mauc")
_QUIET_PARAMS = ("verbose", "random_state", "checkpoints")
_TEX_ESCAPES = {"\\": r"\textbackslash{}", "_": r"\_", "&": r"\&", "%": r"\%", "#": r"\#",
                "$": r"\$", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                "^": r"\textasciicircum{}"}


# ---------------------------------------------------------------- table helpers
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


def natural_sort(frame, fold_first: bool = False):
    """Rows by experiment, dataset, solver, then numeric parameter values and fold."""
    from rankbench.selection import _sortable

    pcols = sorted(c for c in frame.columns if c.startswith("params.") and _sortable(frame[c]))
    params = [*pcols, "params"]
    tail = ["fold", *params] if fold_first else [*params, "fold"]
    keys = [k for k in ("experiment", "dataset", "solver", *tail) if k in frame.columns]
    return frame.sort_values(keys, kind="mergesort", na_position="last")


def table_text(frame) -> str:
    """A frame as the console table every rankbench command prints (4 significant digits)."""
    import pandas as pd

    with pd.option_context("display.width", 250, "display.max_colwidth", 60):
        return frame.to_string(index=False, float_format=lambda x: f"{x:.4g}")


def _valid_tag(tag: str) -> bool:
    from rankbench.store import check_experiment_tag

    try:
        check_experiment_tag(tag)
    except ValueError:
        return False
    return True


class _MultiStore:
    """Several stores read as one (records are self-describing; run ids are unique)."""

    def __init__(self, stores):
        self.stores = stores

    def records(self, on_corrupt: str = "raise", **filters):
        from rankbench.store import CorruptRecordError

        out, problems = [], []
        tags = filters.get("experiment")
        # one folder per tag: read only the folders of the tags asked for (a value that is no
        # valid tag names no folder and matches no record: never a glob or a path)
        per_tag = ([{**filters, "experiment": t} for t in tags if _valid_tag(t)]
                   if isinstance(tags, list) else [filters])
        for st in self.stores:
            for f in per_tag:
                try:
                    out.extend(st.records(on_corrupt=on_corrupt, **f))
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

    def experiments(self) -> list[str]:
        return sorted({t for st in self.stores for t in st.experiments()})


# ---------------------------------------------------------------- the command
def results_parser() -> argparse.ArgumentParser:
    """Argument parser of ``rankbench results``."""
    from rankbench.metrics.measures import CONVENTIONS
    from rankbench.significance import CORRECTIONS, TESTS

    p = argparse.ArgumentParser(
        prog="rankbench results",
        description="List, filter, model-select, compare and export the records of results stores.",
    )
    p.add_argument("--store", action="append",
                   help="store directory, repeatable (default: $RANKBENCH_STORE, else both "
                        "results/local (ad-hoc runs) and results/store (the papers' runs) under "
                        "the current directory)")
    p.add_argument("-e", "--experiment", action="append",
                   help="experiment tag (repeatable); an experiment config's name "
                        "(chapelle2010/table3) stands for the tag it stores its runs under")
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
    p.add_argument("--mean", action="store_true",
                   help="mean and standard deviation over folds per parameter set")
    p.add_argument("--convention", choices=CONVENTIONS,
                   help="recompute every test metric (and per-query value) in this metric "
                        "convention from the stored test scores (trec: trec_eval's); needs the "
                        "test splits (--data-root); validation metrics stay as recorded")
    g = p.add_argument_group("significance (--compare)")
    g.add_argument("--compare", action="store_true",
                   help="paired significance tests between the solvers' per-fold selected models "
                        "(per-query test values; selection on --select METRIC, default "
                        "vali.ndcg@10)")
    g.add_argument("--baseline", metavar="SOLVER", help="every solver against this one")
    g.add_argument("--query-metric", default="ndcg@10", metavar="MEASURE",
                   help="the per-query test measure: any key of the records' per_query.test "
                        "(ndcg@10, map, auc, mauc; default ndcg@10)")
    g.add_argument("--test", default="randomization", choices=TESTS,
                   help="paired randomization (sign-flip, the default), paired t or Wilcoxon "
                        "signed-rank test")
    g.add_argument("--correction", default="holm", choices=CORRECTIONS,
                   help="multiple-comparison correction over each data set's comparisons "
                        "(default holm)")
    g.add_argument("--resamples", type=int, default=10000, metavar="N",
                   help="resamples of the randomization test and the bootstrap intervals "
                        "(default 10000)")
    g.add_argument("--seed", type=int, default=0, help="seed of the resampling (default 0)")
    g.add_argument("--alpha", type=float, default=0.05,
                   help="significance level of the table marks (default 0.05)")
    g.add_argument("--markdown", metavar="FILE",
                   help="write a Markdown table of the mean per system with significance marks")
    g.add_argument("--latex", metavar="FILE", help="the same table in LaTeX (booktabs)")
    p.add_argument("--errors", action="store_true", help="show the first line of each failed run's error")
    p.add_argument("--export-trec", metavar="DIR",
                   help="write one TREC run per system (experiment, dataset, variant, solver: "
                        "the test rankings of the model selected per fold on --select METRIC, "
                        "default vali.ndcg@10, folds concatenated), the qrels of each data set "
                        "and index.json, for trec_eval / ir-measures / ranx")
    p.add_argument("--data-root", help="with --export-trec / --convention: the data root "
                                       "(default RANKBENCH_DATA)")
    p.add_argument("--sort", help="comma-separated sort columns")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.add_argument("--skip-corrupt", action="store_true",
                   help="list corrupt record files on stderr and show the rest (default: stop)")
    return p


def _err(msg: str) -> None:
    print(msg, file=sys.stderr)


def results_main(argv: list[str] | None = None) -> int:
    """``rankbench results``: print stored records as a table; exit 2 on corrupt files or bad options."""
    from rankbench.selection import fold_means, mean_over_folds, select_per_fold
    from rankbench.store import CorruptRecordError, ResultStore, matches_filters

    args = results_parser().parse_args(argv)
    roots = args.store or ([os.environ["RANKBENCH_STORE"]] if os.environ.get("RANKBENCH_STORE")
                           else ["results/local", "results/store"])
    stores = [ResultStore(Path(r).resolve()) for r in roots]
    for st in stores:
        if st.root.exists() and not st.root.is_dir():
            _err(f"rankbench results: --store {st.root} is a file, not a results store (a "
                 "directory of <experiment>/<run_id>.json records)")
            return 2
    if args.resamples < 1:
        _err(f"rankbench results: --resamples must be a positive integer, got {args.resamples}")
        return 2
    _err("rankbench results: reading " + ", ".join(
        f"{s.root}" + ("" if s.root.is_dir() else " (absent)") for s in stores))
    store = _MultiStore(stores)
    if args.experiment:
        args.experiment = _experiment_tags(args.experiment, store.experiments())
    filters: dict[str, Any] = {"experiment": args.experiment, "dataset": args.dataset,
                               "solver": args.solver, "status": args.status, "fold": args.fold}
    for kv in args.param:
        k, sep, v = kv.partition("=")
        if not sep:
            _err(f"rankbench results: --param wants K=V, got {kv!r}")
            return 2
        filters[f"params__{k}"] = v
    try:
        records = store.records(on_corrupt="raise", **filters)
    except CorruptRecordError as exc:
        if not args.skip_corrupt:
            _err(f"rankbench results: {exc}\n(use --skip-corrupt to list the other records)")
            return 2
        for path, why in exc.problems:
            _err(f"rankbench results: corrupt record file {path}: {why}")
        records = [r for r in store.scan()[0] if matches_filters(r, filters)]
    if args.convention:
        from rankbench.stored_scores import recompute_convention

        records = recompute_convention(records, args.convention, args.data_root, warn=_err)
        _err(f"rankbench results: test metrics in the {args.convention} convention, recomputed "
             "from the stored test scores where recorded in another (validation metrics, which "
             "--select reads, stay as recorded)")
    frame = stores[0].to_frame(records=records)
    if args.list_columns:
        print("\n".join(frame.columns))
        return 0
    if frame.empty:
        _err(_no_records(stores, store, filters))
        return 0
    if args.export_trec:
        from rankbench.stored_scores import export_trec

        return export_trec(records, Path(args.export_trec), args.data_root,
                           args.select or "vali.ndcg@10", say=print, warn=_err)
    if args.format == "table":  # csv / json keep the plain name and the synthetic column
        frame = mark_synthetic(frame)
    summary = None
    if args.compare:
        return _compare(args, records)
    if args.select:
        try:
            frame = select_per_fold(frame, args.select)
        except ValueError as exc:
            _err(f"rankbench results: {exc}")
            return 2
        default = ["experiment", "dataset", "fold", "solver", "params", "selected_value",
                   "n_candidates", "test.ndcg@10", "test.map"]
        metrics = [c for c in ("test.ndcg@10", "test.map") if c in frame.columns]
        if not frame.empty and metrics:
            keys = [k for k in ("experiment", "dataset", "variant", "solver") if k in frame.columns]
            summary = fold_means(frame, keys, metrics, sd=metrics)
    elif args.mean:
        tests = [c for c in frame.columns if c.startswith("test.")]
        frame = mean_over_folds(frame, tests + ["train.wall_s"], sd=tests)
        default = ["experiment", "dataset", "solver", "params", "n_folds", "test.ndcg@10",
                   "test.ndcg@10.sd", "test.map", "test.map.sd", "train.wall_s"]
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
        _err(f"rankbench results: unknown column(s) {unknown}; see --list-columns")
        return 2
    frame = natural_sort(frame, fold_first=bool(args.select))
    if args.sort:  # stable: ties keep the natural order
        keys = args.sort.split(",")
        bad = [k for k in keys if k not in frame.columns]
        if bad:
            _err(f"rankbench results: unknown sort column(s) {bad}")
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
        print(table_text(out))
        if summary is not None and not args.columns:
            if "variant" in summary.columns and summary["variant"].isna().all():
                summary = summary.drop(columns=["variant"])
            print("\nselected models, mean and standard deviation over folds:\n"
                  + table_text(summary))
    return 0


def _experiment_tags(wanted: list[str], present: list[str]) -> list[str]:
    """``-e`` values as store tags: a value that is no tag present but an experiment config's name
    (``chapelle2010/table3``) becomes the tag that config stores its runs under (said on stderr)."""
    out = []
    for name in wanted:
        tag = None if name in present or "/" not in name else _config_tag(name)
        if tag is not None and tag != name:
            _err(f"rankbench results: -e {name}: the experiment config {name} stores its runs under "
                 f"the tag {tag} (with the other artefacts of that tag)")
            out.append(tag)
        else:
            out.append(name)
    return out


def _config_tag(name: str) -> str | None:
    """The ``experiment_name`` of the experiment config ``name``, or None when there is none."""
    from rankbench.plan import EXPERIMENT_GROUP, conf_dir

    if not (conf_dir() / EXPERIMENT_GROUP / f"{name}.yaml").is_file():
        return None
    from rankbench.plan import compose_multirun, hydra_context

    try:
        with hydra_context():
            master, _ = compose_multirun([f"{EXPERIMENT_GROUP}={name}"])
            return str(master.experiment_name)
    except Exception:  # noqa: BLE001 - a config that does not compose: no tag to offer
        return None


def _no_records(stores, store: _MultiStore, filters: dict[str, Any]) -> str:
    """Why nothing is shown: the stores read, and for an unknown ``-e`` the tags there are."""
    where = " or ".join(str(s.root) for s in stores)
    if not any(v for v in filters.values()):
        return f"no records in {where}"
    msg = f"no records in {where} matching the filters"
    wanted = filters.get("experiment") or []
    tags = store.experiments()
    absent = [w for w in wanted if w not in tags]
    if absent:
        msg += (f"; no experiment tag {', '.join(absent)} there. Tags present: "
                + (", ".join(tags) if tags else "(none)"))
    return msg


# ---------------------------------------------------------------- --compare
def _compare(args, records: list[dict[str, Any]]) -> int:
    """``--compare``: the comparisons' table on stdout, the optional Markdown / LaTeX tables."""
    from rankbench.selection import compare_selected, selected_per_query

    metric = args.select or "vali.ndcg@10"
    try:
        frame = compare_selected(records, metric, args.query_metric, args.baseline,
                                 n_resamples=args.resamples, seed=args.seed, test=args.test,
                                 correction=args.correction)
        groups = selected_per_query(records, metric, args.query_metric)
    except ValueError as exc:
        _err(f"rankbench results: {exc}")
        return 2
    if frame.empty:
        _err("nothing to compare: needs two solvers with selected runs on one data set"
             + (f", one of them {args.baseline!r}" if args.baseline else ""))
        return 0
    how = describe_test(args.test, args.correction, args.resamples, args.seed)
    print(f"per-query test {args.query_metric} of each solver's per-fold selected models "
          f"(selected on {metric}); {how}")
    out = natural_sort(frame)
    print(table_text(out.assign(variant=out["variant"].astype(object).where(
        out["variant"].notna(), ""))))
    note = (f"Mean per-query test {args.query_metric} of the models selected per fold on "
            f"{metric}. A superscript names each system this one is better than at level "
            f"{args.alpha:g}: {how}"
            + (f"; each system compared with {args.baseline} only" if args.baseline else "") + ".")
    for path, fmt in ((args.markdown, "markdown"), (args.latex, "latex")):
        if path:
            text = significance_table(groups, frame, args.query_metric, args.correction,
                                      args.alpha, note, fmt)
            Path(path).write_text(text)
            print(f"wrote {fmt} table to {path}")
    return 0


def describe_test(test: str, correction: str, n_resamples: int, seed: int) -> str:
    """One phrase saying how significance was computed, with the resamples and seed."""
    name = {"randomization": "two-sided paired randomization test",
            "t": "two-sided paired t-test", "wilcoxon": "two-sided Wilcoxon signed-rank test"}[test]
    resampled = (f"{n_resamples} resamples, seed {seed}" if test == "randomization" else
                 f"bootstrap intervals of {n_resamples} resamples, seed {seed}")
    corrected = {"holm": "Holm-corrected", "bonferroni": "Bonferroni-corrected",
                 "none": "uncorrected"}[correction]
    return f"{name} ({resampled}), p-values {corrected} over each data set's comparisons"


def significance_table(groups: dict[tuple, dict[str, dict]], comparisons, query_metric: str,
                       correction: str, alpha: float, note: str, fmt: str = "markdown") -> str:
    """A table of the mean per-query value per system (rows) and data set (columns); a system
    better than another at the corrected level ``alpha`` gets that system's letter as a
    superscript (as ranx marks a table), the best mean of each column in bold."""
    import numpy as np

    columns = sorted(groups, key=str)
    solvers = sorted({s for g in groups.values() for s in g})
    letter = {s: chr(ord("a") + i) if i < 26 else f"s{i}" for i, s in enumerate(solvers)}
    p_col = "p_value" if correction == "none" else f"p_{correction}"
    marks: dict[tuple, set[str]] = {}
    for row in comparisons.to_dict("records"):
        if not row[p_col] <= alpha:
            continue
        better, worse = ((row["solver_a"], row["solver_b"]) if row["difference"] > 0
                         else (row["solver_b"], row["solver_a"]))
        variant = row["variant"] if isinstance(row["variant"], str) else None  # NaN: none
        col = (row["experiment"], row["dataset"], variant)
        marks.setdefault((col, better), set()).add(letter[worse])
    experiments = {c[0] for c in columns}
    heads = [("" if len(experiments) == 1 else f"{c[0]} ") + c[1] + (f" ({c[2]})" if c[2] else "")
             for c in columns]
    means = {(c, s): float(np.nanmean(list(groups[c][s].values())))
             for c in columns for s in groups[c] if groups[c][s]}
    best = {c: max((means[(c, s)] for s in groups[c] if (c, s) in means), default=None)
            for c in columns}

    def cell(c, s, tex: bool) -> str:
        if (c, s) not in means:
            return "--" if tex else "—"
        v = f"{means[(c, s)]:.4f}"
        if means[(c, s)] == best[c]:
            v = rf"\textbf{{{v}}}" if tex else f"**{v}**"
        sup = "".join(sorted(marks.get((c, s), ())))
        if sup:
            v += f"$^{{{sup}}}$" if tex else f"<sup>{sup}</sup>"
        return v

    if fmt == "markdown":
        lines = [f"| system | {' | '.join(heads)} |", "|" + "---|" * (len(heads) + 1)]
        lines += [f"| {letter[s]}: {s} | " + " | ".join(cell(c, s, False) for c in columns) + " |"
                  for s in solvers]
        return "\n".join(lines) + f"\n\n{note}\n"
    if fmt != "latex":
        raise ValueError(f"fmt must be 'markdown' or 'latex', got {fmt!r}")

    def tex(text: str) -> str:
        return "".join(_TEX_ESCAPES.get(ch, ch) for ch in text)

    lines = ["% needs \\usepackage{booktabs}", r"\begin{table}", r"\centering",
             rf"\caption{{{tex(note)}}}", r"\begin{tabular}{l" + "c" * len(heads) + "}",
             r"\toprule", "System & " + " & ".join(tex(h) for h in heads) + r" \\", r"\midrule"]
    lines += [f"{letter[s]}: {tex(s)} & " + " & ".join(cell(c, s, True) for c in columns) + r" \\"
              for s in solvers]
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"
