"""Chapelle & Keerthi 2010: Tables 3-4 (NDCG@10 and 5-fold time), Fig. 1 (C sweep), Fig. 3 (time vs n)."""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np

from rankbench.report.caption import build_caption
from rankbench.report.compare import comparison_row, data_kind, plan_status, ratio, runs_status
from rankbench.report.context import Artefact, RenderContext
from rankbench.report.labels import solver_label
from rankbench.report.output import left_out, new_figure, write_figure, write_table
from rankbench.report.records import flag, mean_of, skipped_reason, sum_of, value

TABLE_COLUMNS = ["dataset", "method", "solver", "folds", "ndcg@10 ours", "ndcg@10 paper",
                 "ndcg@10 diff", "time ours (s, all folds)", "time paper (s)", "time ratio ours/paper",
                 "note"]
_AT_C = re.compile(r"^(?P<metric>.+)@C=(?P<c>[0-9.eE+-]+)$")


def ranksvm_time_table(ctx: RenderContext) -> Artefact:
    """Tables 3 and 4: per dataset and solver, mean test NDCG@10 and summed training time."""
    plan = ctx.plan()
    exp = plan
    rows, comps = [], []
    aid = ctx.artefact.paper_artefact
    for ds in exp.datasets:
        res = plan.resolutions[ds]
        for solver in exp.solvers:
            runs = [r for r in plan.runs if r.dataset_key == ds and r.spec["solver"] == solver]
            ok = [r for r in runs if r.ok]
            p_ndcg = next(iter(ctx.values(dataset=ds, solver=solver, metric="test.ndcg@10")), None)
            p_time = next(iter(ctx.values(dataset=ds, solver=solver, metric="train.wall_s_total")), None)
            ndcg = mean_of(ok, "test.ndcg@10") if ok else None
            wall = sum_of(ok, "train.wall_s") if ok else None
            if not res.present:
                note = "data not present"
            elif skipped_reason(runs) and not ok:
                note = skipped_reason(runs)
            elif len(ok) < len(runs):
                note = f"only {len(ok)} of {len(runs)} folds stored"
            else:
                note = "stand-in data" if res.substitution else ""
            rows.append(flag({
                "dataset": res.label, "method": solver_label(solver), "solver": solver,
                "folds": f"{len(ok)}/{len(runs)}" if runs else "0",
                "ndcg@10 ours": ndcg, "ndcg@10 paper": p_ndcg and p_ndcg["value"],
                "ndcg@10 diff": None if ndcg is None or p_ndcg is None or res.substitution
                else ndcg - p_ndcg["value"],
                "time ours (s, all folds)": wall, "time paper (s)": p_time and p_time["value"],
                "time ratio ours/paper": None if res.substitution else ratio(wall, p_time and p_time["value"]),
                "note": note,
            }, ok, "ndcg@10 ours", "time ours (s, all folds)"))
            if p_ndcg:
                comps.append(comparison_row(aid, res.label, solver_label(solver), "test NDCG@10",
                                            p_ndcg, ndcg, data=data_kind(res)))
            if p_time:
                comps.append(comparison_row(aid, res.label, solver_label(solver),
                                            "training time, all folds (s)", p_time, wall, "ratio",
                                            data_kind(res)))
        # the paper's other methods (SVMLight, SVMLight#): published reference, not run here
        refs = defaultdict(dict)
        for v in ctx.values(dataset=ds, solver=""):
            refs[v["method"]][v["metric"]] = v
        for method, m in refs.items():
            rows.append({
                "dataset": res.label, "method": method, "solver": "(published only)", "folds": "",
                "ndcg@10 paper": m.get("test.ndcg@10", {}).get("value"),
                "time paper (s)": m.get("train.wall_s_total", {}).get("value"),
                "note": m.get("test.ndcg@10", {}).get("note", ""),
            })
    notes = [
        "ours: mean over folds of test NDCG@10 (LETOR convention) and the sum over folds of the "
        "training wall time (numba compilation excluded), as the paper reports.",
        "Times come from a different machine (and, during development, a loaded one): compare "
        "ratios between solvers, not absolute seconds.",
    ]
    caption = build_caption(ctx, plan.runs)
    files = write_table(ctx, rows, TABLE_COLUMNS, caption, notes)
    return Artefact(ctx.artefact.id, ctx.paper.key, "table", ctx.artefact.title, files, caption,
                    plan_status(plan), notes, comps)


def _reference_points(ctx: RenderContext, ds: str) -> list[tuple[str, str, float, float]]:
    """(method, metric, C, value) of the paper's numbers pinned to a C (Table 3 on Fig. 1)."""
    out = []
    for v in ctx.values(dataset=ds):
        m = _AT_C.match(v["metric"])
        if m:
            out.append((v["method"], m["metric"], float(m["c"]), v["value"]))
    return out


def c_sweep_figure(ctx: RenderContext) -> Artefact:
    """Fig. 1: total training time (log-log) and test NDCG@10 (mean, band = one sd over folds)
    against C, one row per dataset with stored runs; absent datasets are left out (caption)."""
    plan = ctx.plan()
    wanted = [d for d in (ctx.artefact.options.get("datasets") or plan.datasets) if d in plan.resolutions]
    shown = [d for d in wanted if any(r.ok for r in plan.runs if r.dataset_key == d)]
    omitted = {plan.resolutions[d].label: "data not present" if not plan.resolutions[d].present
               else "no stored run yet" for d in wanted if d not in shown}
    fig = None
    data_rows, comps = [], []
    if shown:
        fig, axes = new_figure(len(shown), 2)
    for i, ds in enumerate(shown):
        res = plan.resolutions[ds]
        ax_t, ax_n = axes[i]
        title = res.label + (" (stand-in)" if res.substitution else "")
        ax_t.set_title(f"{title}: training time")
        ax_n.set_title(f"{title}: test NDCG@10")
        for solver in plan.solvers:
            by_c = defaultdict(list)
            for r in plan.runs:
                if r.dataset_key == ds and r.spec["solver"] == solver:
                    by_c[float(r.spec["params"]["C"])].append(r)
            cs, times, ndcgs, sds = [], [], [], []
            for c in sorted(by_c):
                ok = [r for r in by_c[c] if r.ok]
                if not ok or len(ok) < len(by_c[c]):
                    continue
                per_fold = [value(r.record, "test.ndcg@10") for r in ok]
                cs.append(c)
                times.append(sum_of(ok, "train.wall_s"))
                ndcgs.append(mean_of(ok, "test.ndcg@10"))
                sds.append(float(np.std(per_fold)) if None not in per_fold else float("nan"))
                data_rows.append({"dataset": res.label, "solver": solver, "C": c, "folds": len(ok),
                                  "time_total_s": times[-1], "test_ndcg@10": ndcgs[-1],
                                  "test_ndcg@10_sd_over_folds": sds[-1]})
            if not cs:
                continue
            lab = solver_label(solver)
            ax_t.plot(cs, times, label=lab, gid=solver)
            (line,) = ax_n.plot(cs, ndcgs, label=lab)
            m, sd = np.asarray(ndcgs), np.asarray(sds)
            ax_n.fill_between(cs, m - sd, m + sd, color=line.get_color(), alpha=0.12, linewidth=0)
        colors = {line.get_label(): line.get_color() for line in ax_t.get_lines()}
        for method, metric, c, v in _reference_points(ctx, ds):
            ax = ax_t if metric.startswith("train.") else ax_n
            if not res.substitution:  # the paper's numbers are for the real data only
                ax.plot([c], [v], marker="*", markersize=11, linestyle="none", zorder=5,
                        color=colors.get(method, "k"), markeredgecolor="k",
                        label=f"paper {method} (Table 3)")
            ours = next((row["test_ndcg@10"] if not metric.startswith("train.") else row["time_total_s"]
                         for row in data_rows if row["dataset"] == res.label
                         and np.isclose(row["C"], c) and solver_label(row["solver"]) == method), None)
            comps.append(comparison_row(ctx.artefact.paper_artefact, res.label, method,
                                        f"{metric} at C={c:g}", {"value": v, "reference": "Table 3"},
                                        ours, "ratio" if metric.startswith("train.") else "difference",
                                        data_kind(res)))
        for ax in (ax_t, ax_n):
            ax.set_xscale("log")
            ax.set_xlabel("C")
        ax_t.set_yscale("log")
        ax_t.set_ylabel("training time, sum over folds (s)")
        ax_n.set_ylabel("test NDCG@10 (mean over folds)")
    runs = [r for r in plan.runs if r.dataset_key in wanted]
    extra = ["Stars: the paper's Table 3 values at its best C (Fig. 1 itself gives no numbers).",
             "Band: the mean test NDCG@10 plus or minus one standard deviation over the folds."]
    if left_out(omitted):
        extra.append(left_out(omitted))
    caption = build_caption(ctx, runs, extra)
    files = write_figure(ctx, fig, caption, data_rows)
    return Artefact(ctx.artefact.id, ctx.paper.key, "figure", ctx.artefact.title, files, caption,
                    plan_status(plan, wanted), [], comps)


def auc_scaling_figure(ctx: RenderContext) -> Artefact:
    """Fig. 3: training time against n (log-log) per solver, with n and n^2 guide lines; test AUC beside."""
    plan = ctx.plan()
    data_rows, notes = [], []
    res = next(iter(plan.resolutions.values()))
    p = next(iter(ctx.values(method="PRSVM", metric="max_n_trained")), None)
    extra = [f"Paper: {p['note']}"] if p else []
    if not any(r.ok for r in plan.runs):  # nothing to draw: no figure, the caption says why
        caption = build_caption(ctx, plan.runs, extra + [
            f"No figure: {res.label} " + ("data not present." if not res.present else "has no stored run yet.")])
        files = write_figure(ctx, None, caption)
        return Artefact(ctx.artefact.id, ctx.paper.key, "figure", ctx.artefact.title, files,
                        caption, "data not present" if not res.present else "pending", [], [])
    fig, axes = new_figure(1, 2, width=3.6, height=2.9)
    ax_t, ax_a = axes[0]
    anchor = None
    for solver in plan.solvers:
        pts = []
        for r in plan.runs:
            if r.spec["solver"] == solver and r.ok:
                n = r.spec["data_params"].get("n")
                pts.append((n, value(r.record, "train.wall_s"), value(r.record, "test.auc")))
                data_rows.append({"solver": solver, "n": n, "train_wall_s": pts[-1][1],
                                  "test_auc": pts[-1][2],
                                  "peak_mem_mb": value(r.record, "train.peak_mem_mb")})
        pts = sorted(p for p in pts if p[0] is not None and p[1] is not None)
        if not pts:
            continue
        n, t, a = map(np.asarray, zip(*pts, strict=True))
        ax_t.plot(n, t, label=solver_label(solver))
        ax_a.plot(n, a.astype(float), label=solver_label(solver))
        if solver == "prsvm_plus":
            anchor = (n[0], t[0], n[-1])
    limits = plan.limits
    caps: dict[int, list[str]] = {}
    for solver, lim in limits.items():
        if "n_max" in lim:
            caps.setdefault(int(lim["n_max"]), []).append(solver_label(solver))
            notes.append(f"{solver_label(solver)} is run up to n = {lim['n_max']:,} only"
                         + (f": {lim['reason']}." if lim.get("reason") else "."))
    for n_max, names in caps.items():
        ax_t.axvline(n_max, color="0.5", linestyle=":", linewidth=1)
        ax_t.annotate(" cap: " + ", ".join(names), (n_max, 0.02), xycoords=("data", "axes fraction"),
                      fontsize=6, color="0.35", rotation=90, va="bottom")
    if anchor is not None:
        t_max = max(r["train_wall_s"] for r in data_rows if r["train_wall_s"] is not None)
        for power, style in ((1, "--"), (2, "-.")):
            # over PRSVM+'s range, stopped where the guide leaves the measured times' scale
            x_end = min(anchor[2], anchor[0] * (10 * t_max / anchor[1]) ** (1 / power))
            xs = np.geomspace(anchor[0], max(x_end, anchor[0] * 1.01), 20)
            ax_t.plot(xs, anchor[1] * (xs / xs[0]) ** power, color="0.6", linestyle=style,
                      marker="", linewidth=0.8, label=f"slope n^{power}")
    ax_t.axvspan(1200, 19200, color="0.9", zorder=0, label="paper's range of n")
    for ax in (ax_t, ax_a):
        ax.set_xscale("log")
        ax.set_xlabel("number of training documents n")
    ax_t.set_yscale("log")
    ax_t.set_ylabel("training time (s)")
    ax_t.set_title(f"{res.label}{' (stand-in)' if res.substitution else ''}: time vs n")
    ax_a.set_ylabel("test AUC")
    ax_a.set_title("test AUC (sanity check)")
    caption = build_caption(ctx, plan.runs, extra + notes)
    files = write_figure(ctx, fig, caption, data_rows, notes)
    comps = []
    if p:
        reached = max((r["n"] for r in data_rows if r["solver"] == "prsvm"), default=None)
        comps.append(comparison_row(ctx.artefact.paper_artefact, res.label, "PRSVM",
                                    "largest n trained", p, reached, data=data_kind(res)))
    st = runs_status(plan.runs) if res.present else "data not present"
    return Artefact(ctx.artefact.id, ctx.paper.key, "figure", ctx.artefact.title, files, caption,
                    st, notes, comps)


STATS_COLUMNS = ["dataset", "statistic", "ours", "paper", "diff", "note"]
_STATS = (("n_queries", "queries"), ("n_levels", "relevance levels"), ("n_features", "features"),
          ("docs_per_query", "average documents per query"), ("relevant_pct", "% relevant documents"),
          ("train_pairs_per_fold", "preference pairs per training split (mean over folds)"))


def dataset_statistics(runs) -> dict[str, float | None]:
    """Table 1's statistics from the data facts the runner records per split (no data is read):
    the test splits of the folds partition the queries, so their sums are the data set's."""
    folds = {}
    for r in runs:
        if r.ok:
            folds.setdefault(r.spec["fold"], r.record.get("extra", {}).get("data") or {})
    tests = [f.get("test") or {} for f in folds.values()]
    trains = [f.get("train") or {} for f in folds.values()]
    if not tests or any("labels" not in t for t in tests):
        return {}
    labels: dict[str, int] = {}
    for t in tests:
        for lab, c in t["labels"].items():
            labels[lab] = labels.get(lab, 0) + c
    n_docs = sum(t["n_docs"] for t in tests)
    n_q = sum(t["n_queries"] for t in tests)
    rel = sum(c for lab, c in labels.items() if int(lab) > 0)
    pairs = [t["n_pairs"] for t in trains if "n_pairs" in t]
    return {"n_queries": n_q, "n_levels": len(labels), "n_features": trains[0].get("n_features"),
            "docs_per_query": n_docs / n_q, "relevant_pct": 100.0 * rel / n_docs,
            "train_pairs_per_fold": float(np.mean(pairs)) if pairs else None}


def dataset_stats_table(ctx: RenderContext) -> Artefact:
    """Table 1 (and Sect. 5.1's pairs per fold): the data sets' statistics beside the paper's."""
    plan = ctx.plan()
    rows, comps = [], []
    for ds in plan.datasets:
        res = plan.resolutions[ds]
        runs = [r for r in plan.runs if r.dataset_key == ds]
        one = next((s for s in plan.solvers if any(r.ok for r in runs if r.spec["solver"] == s)), None)
        stats = dataset_statistics([r for r in runs if r.spec["solver"] == one]) if one else {}
        for key, what in _STATS:
            p = next(iter(ctx.values(dataset=ds, metric=key)), None)
            ours = stats.get(key)
            note = ("data not present" if not res.present else "stand-in data" if res.substitution
                    else "" if stats else "no stored run yet")
            rows.append({"dataset": res.label, "statistic": what, "ours": ours,
                         "paper": p and p["value"],
                         "diff": None if ours is None or p is None or res.substitution
                         else ours - p["value"], "note": note})
            if p:
                comps.append(comparison_row(ctx.artefact.paper_artefact, res.label, "dataset", what,
                                            p, ours, data=data_kind(res)))
    notes = ["Ours: counted from the data facts each run records per split (queries, documents, "
             "label counts, preference pairs); the folds' test splits partition the queries."]
    caption = build_caption(ctx, plan.runs)
    files = write_table(ctx, rows, STATS_COLUMNS, caption, notes)
    return Artefact(ctx.artefact.id, ctx.paper.key, "table", ctx.artefact.title, files, caption,
                    plan_status(plan), notes, comps)
