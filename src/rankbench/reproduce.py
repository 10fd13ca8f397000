"""``python -m rankbench.reproduce [--quick] [--report-only] [--launcher L]``: the papers, then the report.

Every paper artefact is an experiment config, ``conf/experiment/<paper>/<artefact>.yaml``.
1. Plan each one (``rankbench.plan``: the sweep composed job by job, validated, run specs);
   datasets absent from the data root become their declared stand-ins or "data not present".
2. Unless ``--report-only``: run each one exactly as ``rankbench -m experiment=<name>``
   would (the same compose -> validate -> run path, through any Hydra launcher), resuming
   what is stored (a second call only re-renders).
3. Render every table and figure from the stored records into ``results/`` (``--quick``:
   small synthetic stand-ins and reduced grids, ``results/_quick``) and index them.
Exit status: 0 when every run and artefact is ok, 1 when a run or a renderer failed,
2 on a usage or configuration error (nothing ran).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from rankbench.config import ConfigError
from rankbench.plan import (
    QUICK_PREFIX,
    artefact_name,
    conf_dir,
    experiment_names,
    hydra_context,
    plan_experiment,
)
from rankbench.report import attach_records, generated_stamp, render_all, write_index

LAUNCHERS = ("basic", "joblib", "ray", "ray_cluster", "slurm", "submitit_local")


def papers_dir() -> Path:
    """The papers as data (``experiments/``: citations, published numbers, the DISCUSSION
    template), shipped inside the package like ``conf/``."""
    return Path(__file__).resolve().parent / "experiments"


def select_names(quick: bool, only: list[str] | None) -> list[str]:
    """The experiment configs to run: every artefact's (its quick/ variant with ``quick``).

    ``only`` names artefacts (``chapelle2010/table3``) or papers (``chapelle2010``);
    an unknown name is a ValueError listing the known ones.
    """
    names = experiment_names(quick)
    if not only:
        return names
    known = {artefact_name(n): n for n in names}
    papers = {a.split("/")[0] for a in known}
    unknown = [o for o in only if o not in known and o not in papers]
    if unknown:
        raise ValueError(f"--only names unknown artefacts {unknown}; known: papers "
                         f"{sorted(papers)} or artefacts {sorted(known)}")
    return [n for a, n in known.items() if a in only or a.split("/")[0] in only]


def _read_name(read: str, quick: bool) -> str:
    q = QUICK_PREFIX + read
    return q if quick and (conf_dir() / "experiment" / f"{q}.yaml").is_file() else read


def plan_all(names: list[str], quick: bool, overrides: list[str]):
    """Plans of ``names`` and of every experiment config they read; ``reads`` per name."""
    plans, reads = {}, {}
    with hydra_context():
        todo = list(names)
        while todo:
            name = todo.pop(0)
            if name in plans:
                continue
            plans[name] = plan_experiment(name, overrides)
            reads[name] = [_read_name(r, quick) for r in plans[name].report.get("reads") or []]
            todo.extend(r for r in reads[name] if r not in plans)
    return plans, reads


BUDGET_NOTE = ("budget: the training time an experiment config allows itself from an empty "
               "store on the 2-core reference machine (its report.budget_s); a stored run costs "
               "nothing")


def describe(plans, names: list[str], quick: bool = False) -> str:
    """One line per experiment config: runs, absent datasets, stand-ins, time budget (full mode:
    ``report.budget_s``, explained by a last line; quick configs inherit the full budget, which
    says nothing of their small runs, so it is not shown)."""
    lines = []
    for name in names:
        p = plans[name]
        absent = [r.label for r in p.resolutions.values() if not r.present]
        subst = [r.label for r in p.resolutions.values() if r.substitution]
        budget = p.report.get("budget_s") if not quick else None
        parts = [f"{name} ({p.tag}): {len(p.specs)} runs in {len(p.jobs)} jobs"
                 + (f", budget {budget:.0f} s" if budget else "")]
        if absent:
            parts.append(f"data not present: {absent}")
        if subst:
            parts.append(f"stand-ins: {subst}")
        lines.append("; ".join(parts))
    if any(plans[n].report.get("budget_s") for n in names) and not quick:
        lines.append(f"({BUDGET_NOTE})")
    return "\n".join(lines)


def run_experiment(name: str, overrides: list[str], launcher: str, progress: bool) -> int:
    """``rankbench -m experiment=<name> <overrides>`` in a fresh process; its exit status."""
    cmd = [sys.executable, "-m", "rankbench", "-m", f"experiment={name}", *overrides,
           f"progress={str(progress).lower()}"]
    if launcher != "basic":
        cmd.append(f"hydra/launcher={launcher}")
    print("  $ " + shell_command(cmd), flush=True)
    return subprocess.run(cmd).returncode


def shell_command(cmd: list[str]) -> str:
    """``cmd`` as a line a user can paste into a shell: the interpreter by a path relative to the
    current folder when it lies inside it (``.venv/bin/python``), every word quoted as needed."""
    exe = cmd[0]
    try:
        rel = os.path.relpath(exe)
        if not rel.startswith(".."):
            exe = rel if os.sep in rel else f".{os.sep}{rel}"
    except ValueError:  # another drive (Windows)
        pass
    return shlex.join([exe, *cmd[1:]])


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    ap = argparse.ArgumentParser(prog="python -m rankbench.reproduce", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="reduced grids on small synthetic data, into results/_quick")
    ap.add_argument("--report-only", action="store_true", help="render from stored records, train nothing")
    ap.add_argument("--results", help="output folder (default results/, or results/_quick with --quick)")
    ap.add_argument("--store", help="results store folder (default <results>/store)")
    ap.add_argument("--data-root", help="data root (default: RANKBENCH_DATA)")
    ap.add_argument("--launcher", default=os.environ.get("LAUNCHER") or "basic",
                    help=f"Hydra launcher for the runs: {', '.join(LAUNCHERS)} or any "
                         "hydra/launcher config (default basic: one job after another)")
    ap.add_argument("--only", nargs="+", metavar="NAME",
                    help="only these artefacts (chapelle2010/table3) or papers (chapelle2010)")
    ap.add_argument("--no-progress", action="store_true", help="no progress bars")
    ap.add_argument("--rerun", action="store_true",
                    help="train every run again, also those stored with status ok (their records "
                         "are replaced); default: resume, training only what is missing or failed")
    ap.add_argument("--peers", action="store_true",
                    help="train the tier-peers experiments too (hours: the papers' peer programs "
                         "on real data; make reproduce-peers); without it they are only rendered")
    args = ap.parse_args(argv)

    from rankbench.report.paper import load_papers
    from rankbench.store import ResultStore

    # results/ goes where rankbench runs (the checkout's root under make), never into the package
    results = Path(args.results) if args.results else Path("results") / ("_quick" if args.quick else "")
    store = ResultStore(Path(args.store) if args.store else results / "store")
    data_root = args.data_root or os.environ.get("RANKBENCH_DATA") or None
    overrides = [f"store={store.root.resolve()}"] + (["rerun=true"] if args.rerun else [])
    if data_root:
        overrides.append(f"data_root={Path(data_root).resolve()}")
    try:
        names = select_names(args.quick, args.only)
        plans, reads = plan_all(names, args.quick, overrides)
    except (ValueError, ConfigError) as exc:
        print(f"rankbench.reproduce: {exc}", file=sys.stderr)
        return 2
    print(f"rankbench.reproduce: {'quick' if args.quick else 'full'} mode, data root "
          f"{data_root or '(none: RANKBENCH_DATA unset)'}, store {store.root}, launcher {args.launcher}")
    print(describe(plans, names, args.quick))
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    failed_runs = []
    if not args.report_only:
        try:
            store.check_writable()
        except OSError as exc:
            print(f"rankbench.reproduce: {exc}", file=sys.stderr)
            return 2
        stored_ok = {r["run_id"] for r in store.scan()[0] if r["status"] == "ok"}
        for name in names:
            if plans[name].tier == "peers" and not args.peers:
                print(f"  {name}: peer runs, trained by make reproduce-peers (--peers)")
                continue
            ids = {s.run_id for s in plans[name].specs}
            if not ids or (ids <= stored_ok and not args.rerun):  # every run is stored
                print(f"  {name}: all {len(ids)} runs stored")
                continue
            t = time.perf_counter()
            code = run_experiment(name, overrides, args.launcher, not args.no_progress)
            timings[name] = time.perf_counter() - t
            print(f"  {name}: {len(plans[name].specs)} runs in {timings[name]:.1f} s"
                  + (f", exit status {code}" if code else ""), flush=True)
            if code:
                failed_runs.append(name)
            stored_ok |= {i for i in ids if store.has(i, ok_only=True)}
    timings_file = results / "timings.json"
    if sum(timings.values()) > 1.0:  # the wall times of the last invocation that trained
        results.mkdir(parents=True, exist_ok=True)
        timings_file.write_text(json.dumps({
            "finished": generated_stamp(), "train_s_total": round(sum(timings.values()), 1),
            "launcher": args.launcher,
            "experiments_s": {t: round(s, 1) for t, s in timings.items()}}, indent=1) + "\n")
    counts = attach_records(plans, store)
    for line in counts["corrupt_files"]:
        print(f"rankbench.reproduce: corrupt record file skipped: {line}", file=sys.stderr)
    papers = load_papers(papers_dir())
    artefacts = render_all(papers, plans, names, reads, results, quick=args.quick,
                           data_root=Path(data_root) if data_root else None)
    header = [
        # no clock and no path of this machine: make report on a clean clone gives the same bytes
        f"Generated by `python -m rankbench.reproduce{' --quick' if args.quick else ''}` from "
        f"the records in `{_rel(store.root, results)}` ({counts['found']} of "
        f"{counts['found'] + counts['missing']} planned runs stored, the latest finished "
        f"{counts['last_finished'][:16].replace('T', ' ') or '-'}"
        + (f", {counts['corrupt']} corrupt record files skipped" if counts["corrupt"] else "") + ").",
        f"Data root: {'RANKBENCH_DATA' if data_root else 'not set'}. Experiments: `conf/experiment/<paper>/<artefact>.yaml` "
        "(`rankbench -m experiment=<paper>/<artefact>` runs one); published numbers: "
        "`experiments/<paper>/paper_values.csv`.",
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
    discussion_problems: list[str] = []
    if not args.quick:  # the reading of a full run; quick numbers are a smoke test
        from rankbench.report.discussion import write_discussion

        _, discussion_problems = write_discussion(papers_dir() / "discussion.md", results)
        for p in discussion_problems:
            print(f"rankbench.reproduce: DISCUSSION.md placeholder not filled: {p}", file=sys.stderr)
    index = write_index(results, artefacts, header)
    bad = [a for a in artefacts if a.status == "failed"]
    print(f"wrote {len(artefacts)} artefacts and {index} in {time.perf_counter() - t0:.1f} s")
    for a in artefacts:
        print(f"  [{a.status}] {a.id}")
    if failed_runs:
        print(f"rankbench.reproduce: runs failed in {failed_runs} (their records hold the error: "
              "rankbench results --errors)", file=sys.stderr)
    if counts["corrupt"]:
        print(f"rankbench.reproduce: {counts['corrupt']} corrupt record file(s) in {store.root} "
              "were skipped (listed above)", file=sys.stderr)
    return 1 if bad or failed_runs or counts["corrupt"] or discussion_problems else 0


def _rel(p: Path, base: Path) -> str:
    try:
        return os.path.relpath(p, base)
    except ValueError:
        return str(p)


if __name__ == "__main__":
    sys.exit(main())
