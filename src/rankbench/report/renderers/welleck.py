"""Welleck 2016: Tables 1-3 (MAUC, MAP, class-reference AUC), Fig. 2 (precision@k), binary AUC."""

from __future__ import annotations

import numpy as np

from rankbench.report.caption import build_caption
from rankbench.report.compare import comparison_row, data_kind, plan_status
from rankbench.report.context import Artefact, RenderContext
from rankbench.report.labels import data_title, solver_label
from rankbench.report.output import left_out, new_figure, write_figure, write_table
from rankbench.report.records import (
    choose_per_fold,
    flag,
    mean_of,
    paired_values,
    sd_of,
    skipped_reason,
    table_tests,
)
from rankbench.report.renderers import RENDERERS

_VERDICT = {1.0: "LambdaMART higher", 0.0: "similar", -1.0: "LambdaMART lower"}
# |difference| below this counts as "similar" when we phrase our own verdict
SIMILAR = 0.005


def _note(plan, ds: str, solver: str, chosen: list) -> str:
    res = plan.resolutions[ds]
    if not res.present:
        return "data not present"
    runs = [r for r in plan.runs if r.dataset_key == ds and r.spec["solver"] == solver]
    if not chosen and skipped_reason(runs):
        return skipped_reason(runs)
    if not chosen:
        return "not run yet"
    return "stand-in data" if res.substitution else ""


@RENDERERS.register()
def selected_metric_table(ctx: RenderContext) -> Artefact:
    """Test metric(s) of the per-fold selected model, per dataset and solver, paper beside ours."""
    plan = ctx.plan()
    opts = ctx.artefact.options
    metrics = opts.get("metric", "map")
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    select_on = opts.get("select_on", "vali.ndcg@10")
    chosen = choose_per_fold(plan.runs, select_on)
    cols = ["dataset", "metric", "method", "solver", "folds", "ours", "paper", "diff",
            "p (paired, queries)", "p holm", "note"]
    rows, comps, pairs = [], [], {}
    solvers = plan.solvers
    for ds in plan.datasets:
        res = plan.resolutions[ds]
        for metric in metrics:
            ours_by = {}
            for solver in solvers:
                c = chosen.get((ds, solver), [])
                ours = mean_of(c, f"test.{metric}") if c else None
                ours_by[solver] = ours
                p = next(iter(ctx.values(dataset=ds, solver=solver, metric=f"test.{metric}")), None)
                rows.append(flag({"dataset": res.label, "metric": metric,
                                  "method": solver_label(solver), "solver": solver,
                                  "folds": len(c), "ours": ours, "paper": p and p["value"],
                                  "diff": None if ours is None or p is None or res.substitution
                                  else ours - p["value"],
                                  "note": _note(plan, ds, solver, c)}, c, "ours"))
                if p:
                    comps.append(comparison_row(ctx.artefact.paper_artefact, res.label,
                                                solver_label(solver), f"test {metric}", p, ours,
                                                data=data_kind(res)))
            verdict = next(iter(ctx.values(dataset=ds, metric=f"test.{metric}_sign")), None)
            if len(solvers) == 2 and (verdict or res.present):
                a, b = ours_by[solvers[0]], ours_by[solvers[1]]
                d = None if a is None or b is None else a - b
                ours_v = None if d is None else ("similar" if abs(d) < SIMILAR else
                                                 "LambdaMART higher" if d > 0 else "LambdaMART lower")
                ca, cb = chosen.get((ds, solvers[0]), []), chosen.get((ds, solvers[1]), [])
                pairs[(ds, metric)] = paired_values(ca, cb, metric) if ca and cb else None
                said = f"paper (qualitative): {_VERDICT[verdict['value']]}; " if verdict else ""
                rows.append({"dataset": res.label, "metric": metric,
                             "method": f"{solver_label(solvers[0])} - {solver_label(solvers[1])}",
                             "solver": "(difference)", "ours": d, "paper": None,
                             "p (paired, queries)": None, "p holm": None, "_key": (ds, metric),
                             "note": f"{said}ours: {ours_v or 'n/a'}"})
    tests = table_tests(pairs)  # one family: every comparison of this table
    for row in rows:
        t = tests.get(row.pop("_key", None))
        if t:
            row["p (paired, queries)"], row["p holm"] = t["p"], t["p_adjusted"]
    mauc_note = ("One reading of MAUC throughout (model selection, Tables 1 and 3): mauc_pooled, "
                 "the MAUC of each fold's whole test set as one ranking, mean over folds (no "
                 "per-query values: its test is over folds, in the claims ledger). That reading is "
                 "our inference: the paper says only that its value is 'the average MAUC across "
                 "all dataset folds', and its Table 1 numbers sit near this reading. Beside it, "
                 "mauc: the mean over test queries of each query's MAUC (the per-list reading of "
                 "Theorem 4.1). ")
    # the MAUC reading is said only where a MAUC is shown (this renderer also draws AUC tables)
    shown_mauc = any("mauc" in m for m in metrics) or "mauc" in select_on
    notes = [f"Per fold, the hyper-parameters with the best {select_on} are chosen; the table "
             "shows the mean over folds of the chosen models' test values.",
             (mauc_note if shown_mauc else "") + "AUC: mean over test queries. "
             "p: paired randomization test over all test queries of the per-query values the "
             "records keep (NDCG@10, MAP, AUC, MAUC); p holm: Holm-Bonferroni corrected over "
             "this table's comparisons.",
             f"'similar' in our verdict: |difference| < {SIMILAR}."]
    caption = build_caption(ctx, plan.runs)
    files = write_table(ctx, rows, cols, caption, notes)
    return Artefact(ctx.artefact.id, ctx.paper.key, "table", ctx.artefact.title, files, caption,
                    plan_status(plan), notes, comps)


def _class_shares(runs: list) -> dict[int, float]:
    """Percent of the positive-labelled training documents per label, mean over distinct folds
    (from the data facts the runner records for each split)."""
    per_fold: dict[object, dict[int, float]] = {}
    for run in runs:
        rec = run.record or {}
        labels = (((rec.get("extra") or {}).get("data") or {}).get("train") or {}).get("labels")
        if not labels:
            continue
        counts = {int(k): v for k, v in labels.items() if int(k) > 0}
        total = sum(counts.values())
        if total:
            per_fold[run.spec["fold"]] = {k: 100.0 * v / total for k, v in counts.items()}
    if not per_fold:
        return {}
    keys = sorted({k for d in per_fold.values() for k in d})
    return {k: sum(d.get(k, 0.0) for d in per_fold.values()) / len(per_fold) for k in keys}


@RENDERERS.register()
def class_auc_table(ctx: RenderContext) -> Artefact:
    """Table 3: class-reference AUC (class c against every other label) per class and solver."""
    plan = ctx.plan()
    opts = ctx.artefact.options
    classes = list(opts.get("classes", [1, 2, 3, 4]))
    chosen = choose_per_fold(plan.runs, opts.get("select_on", "vali.mauc"))
    pooled = opts.get("reading", "per_query") == "pooled"
    suffix = "_pooled" if pooled else ""
    cols = ["dataset", "method", "class", "ours", "paper", "diff",
            "ours (per-query reading)" if pooled else "ours (pooled reading)",
            "train share % ours", "train share % paper", "note"]
    rows, comps, notes = [], [], []
    for ds in plan.datasets:
        res = plan.resolutions[ds]
        shares = _class_shares([r for s in plan.solvers for r in chosen.get((ds, s), [])])
        for solver in plan.solvers:
            c = chosen.get((ds, solver), [])
            for k in classes:
                p = next(iter(ctx.values(dataset=ds, solver=solver, metric=f"test.auc_class{k}")), None)
                ours = mean_of(c, f"test.auc_class{k}{suffix}") if c else None
                other = mean_of(c, f"test.auc_class{k}" if pooled else f"test.auc_class{k}_pooled") if c else None
                if not res.present and p is None:
                    continue
                if c and ours is None and other is None and p is None and any(
                        mean_of(c, f"test.auc_class{j}") is not None for j in classes):
                    continue  # class k does not occur in this dataset's labels
                note = _note(plan, ds, solver, c)
                if c and ours is None:
                    note = f"auc_class{k}{suffix} not in these records (a newer runner records it: rerun)"
                    notes.append(f"Records without auc_class<c>{suffix}: the runner records the "
                                 "class-reference AUC over the pooled test set from this change on; "
                                 "until the runs are made again that column is empty.")
                ps = next(iter(ctx.values(dataset=ds, metric=f"train.class_share{k}")), None)
                rows.append(flag({"dataset": res.label, "method": solver_label(solver), "class": k,
                                  "ours": ours, "paper": p and p["value"],
                                  "diff": None if ours is None or p is None or res.substitution
                                  else ours - p["value"],
                                  cols[6]: other,
                                  "train share % ours": shares.get(k),
                                  "train share % paper": ps and ps["value"],
                                  "note": note}, c, "ours"))
                if p:
                    comps.append(comparison_row("table3", res.label, solver_label(solver),
                                                f"test AUC class {k}", p, ours, data=data_kind(res)))
    notes = sorted(set(notes)) + [
        "The paper reports this table for Yahoo! V1 only (classes 1-4).",
        ("ours: the class-reference AUC over each fold's pooled test set (the reading of MAUC used "
         "throughout, an inference), models selected on pooled validation MAUC; the per-query "
         "mean beside it." if pooled else "ours: the mean over test queries of the class-reference AUC."),
        "Train share %: the share of the positive-labelled training documents that carry the "
        "class's label (mean over the folds' training splits, from the records' data facts); "
        "the paper gives 48% for class 1 and 2.5% for class 4 on Yahoo! V1 (why MAUC's "
        "prevalence weights favour class 1)."]
    caption = build_caption(ctx, plan.runs)
    files = write_table(ctx, rows, cols, caption, notes)
    return Artefact(ctx.artefact.id, ctx.paper.key, "table", ctx.artefact.title, files, caption,
                    plan_status(plan), notes, comps)


@RENDERERS.register()
def precision_at_k_figure(ctx: RenderContext) -> Artefact:
    """Fig. 2: micro- and macro-averaged precision@k (k = 1..10, mean over folds, band = one sd)
    per solver, and the difference of the two solvers per k with its 95% interval and a paired
    randomization test per k (Holm over the dataset's 20 tests); one row per dataset with
    selected models, the others left out (caption)."""
    from rankbench.report.claim_rules._common import compare, paired

    plan = ctx.plan()
    chosen = choose_per_fold(plan.runs, ctx.artefact.options.get("select_on", "vali.mauc"))
    shown = [d for d in plan.datasets if any(chosen.get((d, s)) for s in plan.solvers)]
    omitted = {plan.resolutions[d].label: "data not present" if not plan.resolutions[d].present
               else "no stored run yet" for d in plan.datasets if d not in shown}
    two = len(plan.solvers) == 2
    fig, axes = new_figure(len(shown), 3 if two else 2) if shown else (None, [])
    data_rows, notes = [], []
    ks = list(range(1, 11))
    for i, ds in enumerate(shown):
        res = plan.resolutions[ds]
        ax_mi, ax_ma = axes[i][:2]
        name = data_title(res)
        ax_mi.set_title(f"{name}: micro-averaged P@k")
        ax_ma.set_title(f"{name}: macro-averaged P@k")
        for solver in plan.solvers:
            c = chosen.get((ds, solver), [])
            if not c:
                continue
            micro = [mean_of(c, f"test.p@{k}") for k in ks]
            macro = [mean_of(c, f"test.p@{k}_macro") for k in ks]
            for ax, mean, key in ((ax_mi, micro, "test.p@{}"), (ax_ma, macro, "test.p@{}_macro")):
                (line,) = ax.plot(ks, mean, label=solver_label(solver))
                sd = np.array([sd_of(c, key.format(k)) for k in ks], dtype=float)
                m = np.array(mean, dtype=float)
                ax.fill_between(ks, m - sd, m + sd, color=line.get_color(), alpha=0.12, linewidth=0)
            for k, a, b in zip(ks, micro, macro, strict=True):
                data_rows.append({"dataset": res.label, "solver": solver, "k": k,
                                  "p@k_micro": a, "p@k_macro": b})
        for ax, yl in ((ax_mi, "micro P@k"), (ax_ma, "macro P@k")):
            ax.set_xlabel("k")
            ax.set_ylabel(yl)
            ax.set_xticks(ks)
        if not two:
            continue
        a_s, b_s = plan.solvers
        ca, cb = chosen.get((ds, a_s), []), chosen.get((ds, b_s), [])
        family = []
        for avg, suffix in (("micro", ""), ("macro", "_macro")):
            for k in ks:
                pv = paired(ca, cb, f"p@{k}{suffix}") if ca and cb else None
                if pv is not None:
                    family.append((f"{avg}:{k}", *pv))
        ax_d = axes[i][2]
        ax_d.set_title(f"{name}: difference per k")
        if not family:
            msg = (f"{res.label}: no per-query P@k in these records (the runner keeps them from "
                   "this change on: rerun), so no test per k.")
            notes.append(msg)
            ax_d.text(0.5, 0.5, "no per-query P@k\nin these records:\nno test per k yet",
                      transform=ax_d.transAxes, ha="center", va="center", fontsize=7, color="0.3")
            ax_d.set_xticks([])
            ax_d.set_yticks([])
            continue
        tests = {r["comparison"]: r for r in compare(family)}
        for avg, off, color in (("micro", -0.12, "C0"), ("macro", 0.12, "C1")):
            rows = [tests.get(f"{avg}:{k}") for k in ks]
            xs = [k + off for k, r in zip(ks, rows, strict=True) if r]
            d = [r["diff"] for r in rows if r]
            err = [[r["diff"] - r["ci_low"] for r in rows if r], [r["ci_high"] - r["diff"] for r in rows if r]]
            ax_d.errorbar(xs, d, yerr=err, fmt="o", color=color, markersize=3, capsize=1.5,
                          linestyle="none", label=f"{avg} difference (95% CI)")
            for k, r in zip(ks, rows, strict=True):
                if r is None:
                    continue
                verdict = (("higher" if r["diff"] > 0 else "lower") if r["p_adjusted"] < 0.05
                           else "no significant difference")
                row = next(x for x in data_rows if x["dataset"] == res.label and x["solver"] == a_s
                           and x["k"] == k)
                row.update({f"{avg}_diff": r["diff"], f"{avg}_ci_low": r["ci_low"],
                            f"{avg}_ci_high": r["ci_high"], f"{avg}_p": r["p"],
                            f"{avg}_p_holm": r["p_adjusted"], f"{avg}_verdict": verdict})
        ax_d.axhline(0.0, color="k", linewidth=0.8, marker="")
        ax_d.set_xticks(ks)
        ax_d.set_xlabel("k")
        ax_d.set_ylabel(f"P@k: {solver_label(a_s)} minus {solver_label(b_s).split(' (')[0]}")
        lower = [k for k in ks if (tests.get(f"micro:{k}") or {}).get("diff", 0) < 0]
        sig = sorted(c for c, r in tests.items() if r["p_adjusted"] < 0.05)
        notes.append(f"{res.label}: {solver_label(a_s)} - {solver_label(b_s)} per k, paired "
                     f"randomization test over {next(iter(tests.values()))['n_queries']} queries, "
                     f"Holm over the {len(tests)} tests: significant at "
                     f"{', '.join(sig) or 'no k'}; micro point estimate lower at k = "
                     f"{', '.join(map(str, lower)) or 'none'} (every k's numbers in the CSV).")
    extra = ["The paper's Fig. 2 is for Yahoo! V1 and gives no numbers; its text says "
             "LambdaMART-MAUC had the higher micro and macro P@k on every dataset.",
             "Band: the mean over folds plus or minus one standard deviation. Models selected per "
             "fold on validation MAUC over the pooled split (the reading used throughout)."]
    if omitted:
        extra.append(left_out(omitted))
    caption = build_caption(ctx, plan.runs, extra + notes)
    files = write_figure(ctx, fig, caption, data_rows, notes)
    return Artefact(ctx.artefact.id, ctx.paper.key, "figure", ctx.artefact.title, files, caption,
                    plan_status(plan), notes, [])


@RENDERERS.register()
def training_time_table(ctx: RenderContext) -> Artefact:
    """Training time per solver on the folds run (Sect. 5.3's MSLR-WEB10K remark), with the
    test MAUC of the same runs and the paper's (bound) statements beside them."""
    from rankbench.report.records import sum_of

    plan = ctx.plan()
    cols = ["dataset", "method", "solver", "folds", "train s (all folds run)", "test mauc",
            "paper", "note"]
    rows = []
    for ds in plan.datasets:
        res = plan.resolutions[ds]
        for solver in plan.solvers:
            runs = [r for r in plan.runs if r.dataset_key == ds and r.spec["solver"] == solver]
            ok = [r for r in runs if r.ok]
            p = next(iter(ctx.values(dataset=ds, solver=solver, metric="train.wall_s")), None)
            rows.append(flag({
                "dataset": data_title(res),
                "method": solver_label(solver), "solver": solver,
                "folds": ", ".join(str(r.spec["fold"]) for r in ok) or "0",
                "train s (all folds run)": sum_of(ok, "train.wall_s") if ok else None,
                "test mauc": mean_of(ok, "test.mauc") if ok else None,
                "paper": p and p["note"],
                "note": _note(plan, ds, solver, ok)}, ok, "train s (all folds run)"))
    notes = ["Times are training wall seconds on this machine (numba compilation excluded); the "
             "paper's are statements, not measurements we can difference: a lower bound for "
             "SVM-perf (12 h without converging on one fold) and an upper bound for "
             "LambdaMART-MAUC (five folds in under 5 h).",
             "Our AUC-SVM baseline solves SVM-perf's per-class ROCArea problem with rankbench's "
             "own cutting-plane solver (SVM-perf's method, our implementation), not SVM-perf "
             "itself: its time is ours, not SVM-perf's."]
    caption = build_caption(ctx, plan.runs)
    files = write_table(ctx, rows, cols, caption, notes)
    return Artefact(ctx.artefact.id, ctx.paper.key, "table", ctx.artefact.title, files, caption,
                    plan_status(plan), notes, [])
