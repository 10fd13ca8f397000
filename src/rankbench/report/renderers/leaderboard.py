"""Leaderboard (beyond the papers): every solver per dataset, with paired tests against RankSVM."""

from __future__ import annotations

import csv

from rankbench.report.caption import build_caption
from rankbench.report.compare import plan_status
from rankbench.report.context import Artefact, RenderContext, worst_status
from rankbench.report.labels import solver_label
from rankbench.report.output import markdown_table
from rankbench.report.records import choose_per_fold, flag, mean_of, paired_values, table_tests
from rankbench.report.renderers import RENDERERS
from rankbench.report.renderers.sculley import letor_published

METRICS = ["ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "map", "auc"]
ALPHA = 0.05


@RENDERERS.register()
def leaderboard_table(ctx: RenderContext) -> Artefact:
    """Per dataset: test metrics of each solver's per-fold selected model, sorted by NDCG@10.

    Beside NDCG@10 and MAP: the p-value of a paired randomization test over all test
    queries (5 folds pooled; the folds' test queries are disjoint) against the reference
    RankSVM solver, so a reader sees which differences are real.
    """
    opts = ctx.artefact.options
    select_on = opts.get("select_on", "vali.ndcg@10")
    ref = opts.get("reference_solver", "prsvm_plus")
    plans = [ctx.plans[t] for t in ctx.artefact.experiments]
    main = plans[0]
    runs = [r for p in plans for r in p.runs]
    chosen = choose_per_fold(runs, select_on)
    solvers = []
    for p in plans:
        solvers += [s for s in p.solvers if s not in solvers]
    pending = sorted({s for p in plans for s in p.pending_solvers})
    cols = ["rank", "solver", "method", "objective", "folds", *[f"test {m}" for m in METRICS],
            "p ndcg@10 vs ref", "p map vs ref", "p holm ndcg@10", "p holm map",
            "ndcg@10 diff 95% CI", "train s/fold", "chosen params"]
    sections, all_rows = [], []
    experiments_dir = ctx.paper.folder.parent
    for ds in main.datasets:
        res = main.resolutions[ds]
        title = f"## {res.label}" + (f" (stand-in: {res.substitution})" if res.substitution else "")
        if not res.present:
            sections += [title, "", "data not present: add it under the data root and rerun "
                         "`make reproduce` to fill this leaderboard.", ""]
            all_rows.append({"dataset": res.label, "solver": "", "note": "data not present"})
            continue
        ref_runs = chosen.get((ds, ref), [])
        rows = []
        pairs = {"ndcg@10": {}, "map": {}}
        for s in solvers:
            c = chosen.get((ds, s), [])
            if not c:
                continue
            row = {"dataset": res.label, "solver": s, "method": solver_label(s), "folds": len(c)}
            for m in METRICS:
                row[f"test {m}"] = mean_of(c, f"test.{m}")
            if s != ref and ref_runs:
                for m in ("ndcg@10", "map"):
                    pairs[m][s] = paired_values(c, ref_runs, m)
            row["train s/fold"] = mean_of(c, "train.wall_s")
            params = [r.spec["params"] for r in c]
            keys = sorted({k for p in params for k in p if k in ("C", "lam", "learning_rate")})
            row["chosen params"] = "; ".join(
                f"{k}: " + ",".join(f"{p.get(k):g}" if isinstance(p.get(k), float) else str(p.get(k))
                                    for p in params) for k in keys)
            rows.append(flag(row, c, *[f"test {m}" for m in METRICS]))
        # one family per dataset and metric: Holm-Bonferroni over its comparisons with the reference
        tests = {m: table_tests(pairs[m]) for m in pairs}
        for r in rows:
            for m in ("ndcg@10", "map"):
                t = tests[m].get(r["solver"])
                if t:
                    r[f"p {m} vs ref"], r[f"p holm {m}"] = t["p"], t["p_adjusted"]
                    if m == "ndcg@10":
                        r["ndcg@10 diff 95% CI"] = (f"{t['diff']:+.4f} [{t['ci_low']:+.4f}, "
                                                    f"{t['ci_high']:+.4f}]")
        grids = {s: len({json_params(r) for r in runs if r.dataset_key == ds and r.spec["solver"] == s})
                 for s in solvers}
        rank_rows(rows, chosen, ds, grids)
        for r in rows:
            for key in ("p holm ndcg@10", "p holm map"):
                if r.get(key) is not None and r[key] < ALPHA:
                    r["method"] = r["method"] + (" *" if key.endswith("ndcg@10") else " +")
        pub = {m: letor_published(experiments_dir, ds, m) for m in METRICS}
        if any(pub.values()):
            rows.append({"rank": "", "solver": "(published)", "method": next(
                v["method"] for v in pub.values() if v), "folds": 5,
                **{f"test {m}": (pub[m] or {}).get("value") for m in METRICS}})
        missing = [s for s in solvers if not chosen.get((ds, s)) and s not in pending]
        sections += [title, "", markdown_table(rows, cols), ""]
        if any(pub.values()) and ds in ("mq2007", "mq2008"):
            sections += ["The published LETOR 4.0 NDCG@9-10 are not comparable: LETOR 4.0's "
                         "evaluation script scores queries with fewer than k documents as 0 there.", ""]
        if missing:
            sections += [f"Not run yet: {', '.join(missing)}.", ""]
        all_rows += rows
    notes = [
        f"Reference for the paired tests: {solver_label(ref)} ({ref}); p-values from a paired "
        f"randomization (sign-flip) test over all test queries of the 5 folds; 'p holm': "
        f"Holm-Bonferroni corrected over the dataset's comparisons with the reference (one family "
        f"per metric); the NDCG@10 difference with its 95% bootstrap interval over queries. "
        f"'*': NDCG@10 differs at corrected p < {ALPHA}; '+': MAP differs at corrected p < {ALPHA}.",
        f"Model selection: per fold, the hyper-parameters with the best {select_on}.",
        "rank: by test NDCG@10, one rank per objective: exact solvers of one objective (the same "
        "loss and C give the same model) share their rank and are listed together, ordered by "
        "the member with the widest C grid, since they differ only by the grid they select C "
        "from; a solver whose selected runs stopped short of their accuracy (†, not converged) "
        "gets no rank ('n.c.') and is listed after the ranked ones.",
        "train s/fold: mean training wall time of the selected models (numba compilation excluded).",
    ]
    if pending:
        notes.append(f"Pending (solver not in this build): {', '.join(pending)}.")
    caption = build_caption(ctx, runs)
    md = ctx.path(".md")
    md.write_text("\n".join([f"# {ctx.artefact.title}", "", *[f"- {n}" for n in notes], "",
                             *sections, "```text", caption, "```", ""]))
    csv_path = ctx.path(".csv")
    with csv_path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["dataset", *cols, "note"], extrasaction="ignore")
        w.writeheader()
        for r in all_rows:
            w.writerow({k: ("" if v is None else v) for k, v in r.items()})
    st = worst_status([plan_status(p) for p in plans])
    return Artefact(ctx.artefact.id, ctx.paper.key, "table", ctx.artefact.title, [md, csv_path],
                    caption, st, notes, [])


def objective_of(solver: str, runs) -> str:
    """The objective a solver minimizes, for grouping: 'RankSVM, <loss>' for the exact RankSVM
    optimizers (any oracle), the solver itself otherwise (stochastic, boosted, peers)."""
    from rankbench.optim.registry import resolve_solver

    try:
        opt, _ = resolve_solver(solver)
    except ValueError:
        return solver
    if opt.name in ("sgd_queries",):  # stochastic: it approximates, its own entry
        return solver
    losses = {r.spec["params"].get("loss") or opt.default_loss for r in runs}
    return f"RankSVM, {'/'.join(sorted(losses))}"


def rank_rows(rows: list[dict], chosen: dict, ds: str, grids: dict[str, int]) -> None:
    """Order ``rows`` in place and give each its rank: converged rows by test NDCG@10, exact
    solvers of one objective together under one rank (ordered by the member with the widest
    grid, ``grids``: solver -> number of parameter sets), equal scores under one rank; rows whose
    selected runs did not converge last, ranked 'n.c.'."""
    from rankbench.report.records import not_converged

    for r in rows:
        runs = chosen.get((ds, r["solver"]), [])
        r["objective"] = objective_of(r["solver"], runs)
        r["_nc"] = bool(not_converged(runs))
    groups: dict[str, list[dict]] = {}
    for r in rows:
        if not r["_nc"]:
            groups.setdefault(r["objective"], []).append(r)
    lead = {k: max(v, key=lambda r: (grids.get(r["solver"], 0), r.get("test ndcg@10") or -1.0))
            for k, v in groups.items()}
    order = sorted(groups, key=lambda k: -(lead[k].get("test ndcg@10") or -1.0))
    out = []
    rank, last = 0, None
    for i, k in enumerate(order, start=1):
        score = lead[k].get("test ndcg@10")
        if score is None or score != last:  # equal scores share a rank (1, 2, 2, 4)
            rank, last = i, score
        members = sorted(groups[k], key=lambda r: (r is not lead[k], -(r.get("test ndcg@10") or -1.0)))
        for r in members:
            r["rank"] = rank
        out += members
    late = sorted((r for r in rows if r["_nc"]), key=lambda r: -(r.get("test ndcg@10") or -1.0))
    for r in late:
        r["rank"] = "n.c."
    for r in out + late:
        r.pop("_nc", None)
    rows[:] = out + late


def json_params(run) -> str:
    """A run's parameters as canonical JSON."""
    import json

    return json.dumps(run.spec["params"], sort_keys=True, default=str)
