"""``python -m rankbench.reproduce [--quick] [--report-only]``: run the papers' experiments, then report.

1. Read the experiments (``experiments/<paper>/experiments.yaml``) and expand them into run
   specs; datasets absent from the data root become stand-ins (when one is defined) or
   "data not present"; solvers not in this build are "pending".
2. Unless ``--report-only``: ``run_many`` every runnable spec into the store, resuming what
   is stored already (a second run only re-renders).
3. Render every table and figure from the stored records into ``results/`` (``--quick``:
   ``results/_quick``) and index them in ``README.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from rankbench.report import attach_records, generated_stamp, render_all, write_index
from rankbench.report.plan import (
    ExperimentPlan,
    all_experiments,
    expand_experiment,
    load_datasets,
    load_papers,
)


def find_experiments_dir(explicit: str | None) -> Path:
    """``--experiments``, else ./experiments, else the source checkout's experiments/."""
    candidates = [Path(explicit)] if explicit else [
        Path.cwd() / "experiments", Path(__file__).resolve().parents[2] / "experiments"]
    for c in candidates:
        if (c / "datasets.yaml").is_file():
            return c
    raise ValueError(f"no experiments folder (with datasets.yaml) at {', '.join(map(str, candidates))}; "
                     "pass --experiments DIR")


def availability(data_root: str | None):
    """``available(name, variant) -> bool`` over the data registry (False for unknown names)."""
    from rankbench.data import dataset_available, list_datasets

    known = set(list_datasets())

    def available(name: str, variant: str | None) -> bool:
        return name in known and dataset_available(name, variant, root=data_root)

    return available


def build_plans(experiments_dir: Path, quick: bool, data_root: str | None,
                only: list[str] | None = None):
    """Papers and every experiment's plan for this mode (``only``: restrict to these tags)."""
    from rankbench.estimators.registry import solver_names

    papers = load_papers(experiments_dir)
    datasets = load_datasets(experiments_dir / "datasets.yaml")
    known = set(solver_names())
    available = availability(data_root)
    plans: dict[str, ExperimentPlan] = {}
    for tag, exp in all_experiments(papers).items():
        plans[tag] = expand_experiment(exp, datasets, quick, available, known)
        if data_root:
            for r in plans[tag].runs:
                r.spec["data_root"] = data_root  # presentation field: not part of the run id
    if only:
        unknown = sorted(set(only) - set(plans))
        if unknown:
            raise ValueError(f"--only names unknown experiments {unknown}; known: {sorted(plans)}")
        papers = [p for p in papers if any(t in only for a in p.artefacts for t in a.experiments)]
        for p in papers:
            p.artefacts = [a for a in p.artefacts if all(t in only for t in a.experiments)]
        plans = {t: pl for t, pl in plans.items() if t in only}
    return papers, plans


def describe_plan(plans: dict[str, ExperimentPlan]) -> str:
    """One line per experiment: runs, absent datasets, pending solvers, time budget."""
    lines = []
    for tag, plan in plans.items():
        absent = [r.label for r in plan.resolutions.values() if not r.present]
        subst = [r.label for r in plan.resolutions.values() if r.substitution]
        parts = [f"{tag}: {len(plan.runnable())} runs (budget {plan.experiment.budget_s:.0f} s)"]
        if plan.pending_solvers:
            parts.append(f"pending solvers {plan.pending_solvers}")
        if absent:
            parts.append(f"data not present: {absent}")
        if subst:
            parts.append(f"stand-ins: {subst}")
        lines.append("; ".join(parts))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    ap = argparse.ArgumentParser(prog="python -m rankbench.reproduce", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="reduced grids on small synthetic data, into results/_quick")
    ap.add_argument("--report-only", action="store_true", help="render from stored records, train nothing")
    ap.add_argument("--experiments", help="experiments folder (default ./experiments)")
    ap.add_argument("--results", help="output folder (default results/, or results/_quick with --quick)")
    ap.add_argument("--store", help="results store folder (default <results>/store)")
    ap.add_argument("--data-root", help="data root (default: RANKBENCH_DATA)")
    ap.add_argument("--n-jobs", type=int, default=2, help="upper bound on parallel runs (default 2)")
    ap.add_argument("--only", nargs="+", metavar="TAG", help="only these experiment tags")
    ap.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = ap.parse_args(argv)
    if args.n_jobs < 1:
        ap.error("--n-jobs must be >= 1")

    from rankbench.store import ResultStore

    exp_dir = find_experiments_dir(args.experiments)
    results = Path(args.results) if args.results else (
        exp_dir.parent / "results" / ("_quick" if args.quick else ""))
    store = ResultStore(Path(args.store) if args.store else results / "store")
    data_root = args.data_root or os.environ.get("RANKBENCH_DATA") or None
    papers, plans = build_plans(exp_dir, args.quick, args.data_root, args.only)
    print(f"rankbench.reproduce: {'quick' if args.quick else 'full'} mode, data root "
          f"{data_root or '(none: RANKBENCH_DATA unset)'}, store {store.root}")
    print(describe_plan(plans))
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    if not args.report_only:
        from rankbench.runner import run_many

        for tag, plan in plans.items():
            specs = plan.runnable()
            if not specs:
                continue
            t = time.perf_counter()
            n_jobs = max(1, min(args.n_jobs, plan.experiment.n_jobs))
            records = run_many(specs, store, n_jobs=n_jobs, progress=not args.no_progress)
            timings[tag] = time.perf_counter() - t
            failed = sum(r["status"] != "ok" for r in records)
            print(f"  {tag}: {len(records)} runs in {timings[tag]:.1f} s"
                  + (f", {failed} FAILED (see their records' error)" if failed else ""))
    timings_file = results / "timings.json"
    ran = {t: s for t, s in timings.items() if s > 1.0}
    if ran:  # keep the wall times of the last invocation that trained, for the index
        results.mkdir(parents=True, exist_ok=True)
        timings_file.write_text(json.dumps({
            "finished": generated_stamp(), "train_s_total": round(sum(timings.values()), 1),
            "experiments_s": {t: round(s, 1) for t, s in timings.items()}}, indent=1) + "\n")
    counts = attach_records(plans, store)
    artefacts = render_all(papers, plans, results, quick=args.quick,
                           data_root=Path(data_root) if data_root else None)
    header = [
        f"Generated {generated_stamp()} by `python -m rankbench.reproduce"
        f"{' --quick' if args.quick else ''}` from the records in `{_rel(store.root, results)}` "
        f"({counts['found']} of {counts['found'] + counts['missing']} planned runs stored"
        + (f", {counts['corrupt']} corrupt record files skipped" if counts["corrupt"] else "") + ").",
        f"Data root: {data_root or 'not set'}. Experiments: `{_rel(exp_dir, results)}`.",
    ]
    if timings_file.is_file():
        last = json.loads(timings_file.read_text())
        header.append(
            f"Last invocation that trained ({last['finished']}): {last['train_s_total']:.0f} s of "
            "runs; per experiment: "
            + ", ".join(f"{t} {s:.0f} s" for t, s in last["experiments_s"].items()) + ".")
    if args.quick:
        header.append("QUICK MODE: small synthetic stand-ins and reduced grids; the numbers are "
                      "a smoke test, not a reproduction.")
    index = write_index(results, artefacts, header)
    bad = [a for a in artefacts if a.status == "failed"]
    print(f"wrote {len(artefacts)} artefacts and {index} in {time.perf_counter() - t0:.1f} s")
    for a in artefacts:
        print(f"  [{a.status}] {a.id}")
    return 1 if bad else 0


def _rel(p: Path, base: Path) -> str:
    try:
        return os.path.relpath(p, base)
    except ValueError:
        return str(p)


if __name__ == "__main__":
    sys.exit(main())
