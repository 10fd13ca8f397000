"""Chapelle & Keerthi 2010: Tables 3-4 (NDCG@10 and 5-fold time), Fig. 1 (C sweep), Fig. 3 (time vs n)."""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np

from rankbench.report.caption import build_caption
from rankbench.report.compare import comparison_row, data_kind, plan_status, ratio, runs_status
from rankbench.report.context import Artefact, RenderContext
from rankbench.report.labels import data_title, solver_label
from rankbench.report.output import (
    left_out,
    mark_not_converged,
    new_figure,
    write_figure,
    write_table,
)
from rankbench.report.records import (
    flag,
    mean_of,
    not_converged,
    not_converged_text,
    per_query,
    skipped_reason,
    sum_of,
    value,
)
from rankbench.report.renderers import RENDERERS

TABLE_COLUMNS = ["dataset", "method", "solver", "folds", "ndcg@10 ours", "ndcg@10 paper",
                 "ndcg@10 diff", "time ours (s, all folds)", "time paper (s)", "time ratio ours/paper",
                 "note"]
_AT_C = re.compile(r"^(?P<metric>.+)@C=(?P<c>[0-9.eE+-]+)$")


@RENDERERS.register()
def ranksvm_time_table(ctx: RenderContext) -> Artefact:
    """Tables 3 and 4: per dataset and solver, mean test NDCG@10 and summed training time."""
    plan = ctx.plan()
    exp = plan
    rows, comps = [], []
    aid = ctx.artefact.paper_artefact
    for ds in exp.datasets:
        res = plan.resolutions[ds]
        for solver in exp.solvers:
            if solver == hinge_solver(ctx):  # the SVMLight row: SVM-light's objective, solved exactly
                continue
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
            row = {
                "dataset": res.label, "method": method, "solver": "(published only)", "folds": "",
                "ndcg@10 paper": m.get("test.ndcg@10", {}).get("value"),
                "time paper (s)": m.get("train.wall_s_total", {}).get("value"),
                "note": m.get("test.ndcg@10", {}).get("note", ""),
            }
            measured = _svmlight_cells(ctx, ds, method)
            if measured is not None:
                row.update(measured)
                if row.get("ndcg@10 ours") is not None and row["ndcg@10 paper"] is not None \
                        and not res.substitution:
                    row["ndcg@10 diff"] = row["ndcg@10 ours"] - row["ndcg@10 paper"]
            rows.append(row)
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


HINGE_SOLVER = "cutting_plane"


def hinge_solver(ctx: RenderContext) -> str:
    """The solver whose runs are SVM-light's objective solved exactly (``options.hinge_solver``,
    default our cutting plane)."""
    return ctx.artefact.options.get("hinge_solver", HINGE_SOLVER)


def hinge_label(run) -> str:
    """'SVMLight's objective, our solver (cutting plane, relative gap 1e-06)' or LIBLINEAR's."""
    tol = run.spec["params"].get("tol")
    if run.spec["solver"] == "liblinear_pairs":
        return f"SVMLight's objective, LIBLINEAR's dual coordinate descent (eps {tol:g})"
    return f"SVMLight's objective, our solver (cutting plane, relative gap {tol:g})"


def _svmlight_cells(ctx: RenderContext, ds: str, method: str) -> dict | None:
    """The measured cells of the paper's other rows: SVMLight = SVM-light's objective (hinge, same
    C) solved exactly by our cutting plane (this table's own runs); SVMLight# = the SVM-light
    peer with -# 5000 on every fold (``svmlight_experiment``); MSR 2008's TD2004 number (Table
    4's footnote) = LETOR's published RankSVM; None for any other row."""
    res = ctx.plan().resolutions.get(ds)
    if method in ("SVMLight", "SVMLight#") and res is not None and not res.present:
        return {"note": "data not present"}
    if method == "SVMLight":
        solver = hinge_solver(ctx)
        runs = [r for r in ctx.plan().runs if r.dataset_key == ds and r.spec["solver"] == solver]
        ok = [r for r in runs if r.ok]
        budget = ctx.artefact.options.get("uncapped_budget_s", 1800)
        uncapped = (f"uncapped SVM-light itself is not run (budget {budget:,.0f} s per fold here; "
                    "its time per iteration: the svmlight_table artefacts)")
        if not runs:  # no hinge optimum in this table's experiment: the published row alone
            return None
        if not ok:
            return {"solver": solver, "note": f"{hinge_label(runs[0])}: not run yet (make "
                    f"reproduce); {uncapped}"}
        return flag({"method": hinge_label(runs[0]), "solver": solver,
                     "folds": f"{len(ok)}/{len(runs)}", "ndcg@10 ours": mean_of(ok, "test.ndcg@10"),
                     "time ours (s, all folds)": sum_of(ok, "train.wall_s"),
                     "note": f"the hinge-loss optimum at the same C: its time is that solver's, not "
                             f"SVM-light's; {uncapped}"}, ok, "ndcg@10 ours")
    if method == "SVMLight#":
        peer_exp = ctx.artefact.options.get("svmlight_experiment")
        if not peer_exp:
            return None
        runs = [r for r in ctx.plan(peer_exp).runs if r.dataset_key == ds]
        ok = [r for r in runs if r.ok]
        if not ok:
            why = skipped_reason(runs) or ("no run planned for this dataset" if not runs
                                           else "data not present" if not runs[0].resolution.present
                                           else "not run yet: make reproduce-peers")
            return {"solver": "svmlight", "note": f"measured SVMLight#: {why}"}
        folds = sorted(r.spec["fold"] for r in ok)
        conv = [(r.record.get("train") or {}).get("converged") for r in ok]
        part = len(ok) < len(runs)
        return flag({"solver": "svmlight", "folds": f"{len(ok)}/{len(runs)}",
                     "ndcg@10 ours": None if part else mean_of(ok, "test.ndcg@10"),
                     "time ours (s, all folds)": None if part else sum_of(ok, "train.wall_s"),
                     "note": "measured by the SVM-light peer (-# 5000, this table's C)"
                             + (f" on fold(s) {', '.join(map(str, folds))} only (mean "
                                f"{mean_of(ok, 'test.ndcg@10'):.4f}): no five-fold number yet"
                                if part else "")
                             + ("; stopped by the -# cap, not at the optimum" if False in conv else "")},
                    ok, "ndcg@10 ours")
    if method.startswith("MSR 2008"):
        from rankbench.report.renderers.sculley import letor_published

        pub = letor_published(ctx.paper.folder.parent, ds, "ndcg@10")
        if pub is None:
            return None
        return {"solver": "(published)", "folds": "5", "ndcg@10 ours": None,
                "note": f"the Table 4 footnote's number: LETOR's published RankSVM {ds.upper()} "
                        f"NDCG@10 is {pub['value']:.4f} ({pub['reference']}), the paper's 0.308"}
    return None


def _reference_points(ctx: RenderContext, ds: str) -> list[tuple[str, str, float, float]]:
    """(method, metric, C, value) of the paper's numbers pinned to a C (Table 3 on Fig. 1)."""
    out = []
    for v in ctx.values(dataset=ds):
        m = _AT_C.match(v["metric"])
        if m:
            out.append((v["method"], m["metric"], float(m["c"]), v["value"]))
    return out


@RENDERERS.register()
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
        title = data_title(res)
        ax_t.set_title(f"{title}: training time")
        ax_n.set_title(f"{title}: test NDCG@10")
        for solver in plan.solvers:
            by_c = defaultdict(list)
            for r in plan.runs:
                if r.dataset_key == ds and r.spec["solver"] == solver:
                    by_c[float(r.spec["params"]["C"])].append(r)
            cs, times, ndcgs, sds, bad = [], [], [], [], []
            for c in sorted(by_c):
                ok = [r for r in by_c[c] if r.ok]
                if not ok or len(ok) < len(by_c[c]):
                    continue
                per_fold = [value(r.record, "test.ndcg@10") for r in ok]
                cs.append(c)
                bad.append(bool(not_converged(ok)))
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
            mark_not_converged(ax_t, cs, times, bad)
            mark_not_converged(ax_n, cs, ndcgs, bad)
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


# the paper's SVMPerf curve is drawn by our cutting plane: its method, not its program
FIG3_LABELS = {"cutting_plane": "SVMPerf's method, our code (cutting plane, gap 1e-5)"}


@RENDERERS.register()
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
                pts.append((n, value(r.record, "train.wall_s"), value(r.record, "test.auc"),
                            (r.record.get("train") or {}).get("converged") is False))
                data_rows.append({"solver": solver, "n": n, "train_wall_s": pts[-1][1],
                                  "test_auc": pts[-1][2],
                                  "peak_mem_mb": value(r.record, "train.peak_mem_mb"),
                                  "converged": not pts[-1][3]})
        pts = sorted(p for p in pts if p[0] is not None and p[1] is not None)
        if not pts:
            continue
        n, t, a, nc = map(np.asarray, zip(*pts, strict=True))
        label = FIG3_LABELS.get(solver, solver_label(solver))
        ax_t.plot(n, t, label=label)
        ax_a.plot(n, a.astype(float), label=label)
        mark_not_converged(ax_t, n, t, nc)
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
    ax_t.set_title(f"{data_title(res)}: time vs n")
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
    if st == "ok" and res.substitution:
        st = "stand-in"
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


@RENDERERS.register()
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


LETOR3_BASELINES = ("letor_baselines", "letor3_baselines.csv")


def letor3_published(experiments_dir, dataset: str, metric: str = "ndcg@10") -> dict[str, dict]:
    """{algorithm: {fold ('1'..'5', 'avg'): value}} of LETOR 3.0's published test baselines."""
    import csv

    from rankbench.report.paper import same_dataset

    path = experiments_dir.joinpath(*LETOR3_BASELINES)
    out: dict[str, dict] = defaultdict(dict)
    if not path.exists():
        return {}
    with path.open(newline="") as fh:
        for r in csv.DictReader(fh):
            if same_dataset(r["dataset"], dataset) and r["metric"] == metric and r["split"] == "test":
                out[r["algorithm"]][r["fold"]] = float(r["value"])
    return dict(out)


BASELINE_GROUPS = ("letor_baselines", "letor3_baseline_groups.csv")
FIG2_CAPTION_REMARK = ("Because of the limited number of queries (106), a difference of 0.1 is "
                       "typically not statistically significant")


def baseline_groups(experiments_dir) -> dict[str, str]:
    """{LETOR 3.0 algorithm: 'paper' (could be in the paper's Fig. 2) or 'later' (added to the
    LETOR site after it)}, from experiments/letor_baselines/letor3_baseline_groups.csv."""
    import csv

    path = experiments_dir.joinpath(*BASELINE_GROUPS)
    with path.open(newline="") as fh:
        return {r["algorithm"]: r["group"] for r in csv.DictReader(fh)}


def _c_list(runs) -> str:
    cs = [r.spec["params"].get("C") for r in sorted(runs, key=lambda r: r.spec["fold"])]
    return ", ".join(f"{c:g}" for c in cs)


@RENDERERS.register()
def letor_ohsumed_figure(ctx: RenderContext) -> Artefact:
    """Fig. 2 as a dot plot in two panels: the paper's comparison (our RankSVM, LETOR's
    SVMLight# as published and as measured here, the LETOR 3.0 baselines of the time) and the
    baselines added to the LETOR site later; 5-fold mean test NDCG@10 (dot) and each fold
    (ticks); the caption's remark quoted beside the difference a paired test over all 106
    queries detects, computed from the two RankSVM rows' per-query differences."""
    from rankbench.report.claim_rules._common import min_detectable_difference, paired

    opts = ctx.artefact.options
    ours_plan = ctx.plan(opts.get("ours_experiment", "chapelle2010/table4"))
    peer_plan = ctx.plan(opts.get("svmlight_experiment", "chapelle2010/svmlight_table4"))
    ours_solver = opts.get("ours", "prsvm_plus")
    ours = sorted((r for r in ours_plan.runs if r.spec["solver"] == ours_solver
                   and r.spec["dataset"] == "ohsumed" and r.ok), key=lambda r: r.spec["fold"])
    peer_planned = [r for r in peer_plan.runs if r.spec["dataset"] == "ohsumed"]
    peer = sorted((r for r in peer_planned if r.ok), key=lambda r: r.spec["fold"])
    experiments_dir = ctx.paper.folder.parent
    published = letor3_published(experiments_dir, "OHSUMED")
    groups = baseline_groups(experiments_dir)
    rows, notes = [], []

    def folds_of(runs):
        return {r.spec["fold"]: value(r.record, "test.ndcg@10") for r in runs}

    def dagger(runs) -> str:  # a measured row from a solver that stopped short says so in its label
        text = not_converged_text(runs)
        return f" †{text}" if text else ""

    if ours:
        rows.append({"panel": "paper", "method": f"RankSVM, ours ({solver_label(ours_solver)}; C per "
                     f"fold {_c_list(ours)}){dagger(ours)}", "source": "measured", "folds": len(ours),
                     "ndcg@10": mean_of(ours, "test.ndcg@10"), "per_fold": folds_of(ours)})
    if peer:
        part = "" if len(peer) == len(peer_planned) else f", {len(peer)} of {len(peer_planned)} folds"
        rows.append({"panel": "paper", "method": f"SVMLight# measured here (SVM-light -# 5000; C per "
                     f"fold {_c_list(peer)}{part}){dagger(peer)}", "source": "measured (peer)", "folds": len(peer),
                     "ndcg@10": mean_of(peer, "test.ndcg@10") if len(peer) == len(peer_planned) else None,
                     "per_fold": folds_of(peer)})
    else:
        notes.append("SVMLight# measured: " + (skipped_reason(peer_planned)
                                               or "not run yet (make reproduce-peers)") + ".")
    for alg in sorted(published, key=lambda a: -published[a].get("avg", 0)):
        v = published[alg]
        group = groups.get(alg, "later")
        name = ("SVMLight#, LETOR's RankSVM (SVM-light -# 5000; C per fold 0.01, 0.001, 1e-04, 0.6, "
                "0.1)" if alg == "RankSVM" else alg)
        rows.append({"panel": group, "method": name, "source": "published (LETOR 3.0)", "folds": 5,
                     "ndcg@10": v.get("avg"),
                     "per_fold": {int(f): x for f, x in v.items() if f != "avg"}})
    # the caption's remark, beside what our paired test over all 106 queries detects
    pv = paired(ours, peer, "ndcg@10") if ours and peer else None
    n_q = 106
    quoted = f'The paper\'s caption: "{FIG2_CAPTION_REMARK}".'
    if pv is not None and len(peer) == len(peer_planned) and pv[0].shape[0] >= n_q:
        d = pv[0] - pv[1]
        mdd = min_detectable_difference(d, n_q)
        from rankbench.significance import paired_randomization_test

        notes.append(f"{quoted} Ours - SVMLight# measured, over all {d.shape[0]} queries: "
                     f"{d.mean():+.4f} NDCG@10, paired randomization p = "
                     f"{paired_randomization_test(*pv):.3g}; with that spread of per-query "
                     f"differences (sd {np.std(d, ddof=1):.3f}) a paired test over {n_q} queries "
                     f"detects a difference of {mdd:.3f} (5% level, 80% power).")
    else:
        allq = per_query(ours, "ndcg@10") if ours else None
        bound = (f" For two independent systems with our per-query spread over all {len(allq[1])} "
                 f"queries (sd {np.std(allq[1], ddof=1):.3f}), a paired test over {n_q} queries "
                 f"detects {min_detectable_difference(np.sqrt(2) * allq[1], n_q):.3f}: an upper "
                 "bound, correlated systems pair more tightly." if allq is not None else "")
        notes.append(f"{quoted} The difference our paired test over all {n_q} queries detects "
                     f"needs SVMLight# on every fold ({len(peer)} of {len(peer_planned)} stored): "
                     "pending, not extrapolated from a part." + bound)
    fig = None
    shown = [r for r in rows if r.get("ndcg@10") is not None or r.get("per_fold")]
    if shown:
        left = [r for r in shown if r["panel"] == "paper"]
        right = [r for r in shown if r["panel"] == "later"]
        import matplotlib.pyplot as plt

        plt.close(new_figure(1, 1)[0])  # the paper style
        fig, axes2 = plt.subplots(2, 1, figsize=(6.6, 0.24 * (len(left) + len(right)) + 2.0),
                                  gridspec_kw={"height_ratios": [len(left) + 1, len(right) + 1]},
                                  layout="constrained", sharex=True)
        lo = min(v for r in shown for v in [r.get("ndcg@10") or 1, *r["per_fold"].values()])
        hi = max(v for r in shown for v in [r.get("ndcg@10") or 0, *r["per_fold"].values()])
        for ax, group, title in ((axes2[0], left, "the paper's comparison: LETOR 3.0's baselines of 2008"),
                                 (axes2[1], right, "baselines added to the LETOR site after the paper")):
            ys = np.arange(len(group))[::-1]
            for y, r in zip(ys, group, strict=True):
                color = "C0" if r["source"].startswith("measured") else "0.35"
                xs = list(r["per_fold"].values())
                ax.plot(xs, [y] * len(xs), "|", color=color, markersize=7, linestyle="none",
                        label="_fold")
                if r.get("ndcg@10") is not None:
                    ax.plot([r["ndcg@10"]], [y], "o", color=color, markersize=5, linestyle="none",
                            label="_mean")
            ax.set_yticks(ys, [r["method"] for r in group], fontsize=6.5)
            ax.set_ylim(-0.7, len(group) - 0.3)
            ax.set_xlim(lo - 0.02, hi + 0.02)
            ax.set_title(title)
            ax.grid(True, axis="x", alpha=0.3)
            ax.grid(False, axis="y")
            if ours and group is right:
                ax.axvline(rows[0]["ndcg@10"], color="C0", linestyle="--", linewidth=0.8, marker="",
                           label="_ours")
        axes2[1].set_xlabel("test NDCG@10 on OHSUMED (dot: 5-fold mean; ticks: each fold)")
    notes.append("A dot plot (no bars, so no baseline to cut): the dot is the 5-fold mean, the "
                 "ticks the five folds. Blue: measured here; grey: published by LETOR 3.0 "
                 "(experiments/letor_baselines/letor3_baselines.csv). Top: the rows the paper "
                 "could draw (its first two rows are RankSVM implementations: ours and LETOR's "
                 "SVMLight#); below: baselines added to the LETOR site after the paper "
                 "(letor3_baseline_groups.csv says why each is there), our mean as the dashed line.")
    if ours:
        notes.append(f"Ours: {solver_label(ours_solver)} at Table 4's C per fold (MSR 2008's, the "
                     "setting of LETOR's RankSVM), from the chapelle2010/table4 runs.")
    caption = build_caption(ctx, peer_plan.runs + ours, notes)
    for r in rows:
        for f in range(1, 6):
            r[f"ndcg@10 fold {f}"] = r["per_fold"].get(f)
        del r["per_fold"]
    files = write_figure(ctx, fig, caption, rows, notes)
    # the figure's point is the peer against ours: pending until SVM-light ran, partial on some folds
    status = ("pending" if not ours or not peer else "ok" if len(peer) == len(peer_planned)
              else "partial")
    return Artefact(ctx.artefact.id, ctx.paper.key, "figure", ctx.artefact.title, files, caption,
                    status, notes, [])


SVMLIGHT_COLUMNS = ["dataset", "fold", "C", "SVMLight# ndcg@10", "LETOR RankSVM ndcg@10 (published)",
                    "hinge optimum ndcg@10", "PRSVM+ ndcg@10", "SVMLight# hinge objective",
                    "hinge optimum objective", "SVMLight# above optimum %", "SVMLight# iterations",
                    "SVMLight# stopped by -#", "SVMLight# s", "ms per iteration", "note"]


def _by_fold(runs, solver: str) -> dict:
    return {r.spec["fold"]: r for r in runs if r.spec["solver"] == solver and r.ok}


@RENDERERS.register()
def svmlight_folds_table(ctx: RenderContext) -> Artefact:
    """Tables 3-4's SVMLight# per fold: the SVM-light peer with LETOR's -# 5000 beside the exact
    hinge-loss optimum at the same C (our cutting plane: SVMLight's objective, our solver),
    our squared-hinge PRSVM+ and LETOR's published RankSVM per fold; the notes say where and
    why the capped runs stop (the fold-1 gap to LETOR, measured)."""
    plan = ctx.plan()
    ours_plan = ctx.plan(ctx.artefact.options.get("ours_experiment", "chapelle2010/table3"))
    rows, notes = [], []
    for ds in plan.datasets:
        res = plan.resolutions[ds]
        if not res.present:
            rows.append({"dataset": res.label, "note": "data not present"})
            continue
        peer = _by_fold([r for r in plan.runs if r.dataset_key == ds], "svmlight")
        ours_runs = [r for r in ours_plan.runs if r.dataset_key == ds]
        hinge, plus = _by_fold(ours_runs, hinge_solver(ctx)), _by_fold(ours_runs, "prsvm_plus")
        letor = letor3_published(ctx.paper.folder.parent, res.label).get("RankSVM", {})
        planned = {r.spec["fold"]: r for r in plan.runs if r.dataset_key == ds}
        for fold in sorted(planned):
            p, h, q = peer.get(fold), hinge.get(fold), plus.get(fold)
            f_p, f_h = value(p and p.record, "train.objective"), value(h and h.record, "train.objective")
            it, secs = value(p and p.record, "train.n_iter"), value(p and p.record, "train.wall_s")
            why = ("" if p else skipped_reason([planned[fold]]) or "not run yet: make reproduce-peers")
            rows.append(flag({
                "dataset": res.label, "fold": fold, "C": planned[fold].spec["params"].get("C"),
                "SVMLight# ndcg@10": value(p and p.record, "test.ndcg@10"),
                "LETOR RankSVM ndcg@10 (published)": letor.get(str(fold)),
                "hinge optimum ndcg@10": value(h and h.record, "test.ndcg@10"),
                "PRSVM+ ndcg@10": value(q and q.record, "test.ndcg@10"),
                "SVMLight# hinge objective": f_p, "hinge optimum objective": f_h,
                "SVMLight# above optimum %": None if f_p is None or f_h is None else 100 * (f_p / f_h - 1),
                "SVMLight# iterations": it,
                "SVMLight# stopped by -#": None if p is None else
                (p.record.get("train") or {}).get("converged") is False,
                "SVMLight# s": secs, "ms per iteration": None if not it or secs is None else 1e3 * secs / it,
                "note": why or ("" if h else "hinge optimum not stored yet: make reproduce")}, [h] if h else [],
                "hinge optimum ndcg@10"))
        done = [r for r in rows if r.get("dataset") == res.label and r.get("SVMLight# ndcg@10") is not None]
        if done:
            mean = {c: float(np.mean([r[c] for r in done if r.get(c) is not None]))
                    for c in SVMLIGHT_COLUMNS[3:8] if all(r.get(c) is not None for r in done)}
            rows.append({"dataset": res.label, "fold": f"mean of {len(done)}", **mean,
                         "note": "" if len(done) == len(planned) else
                         f"{len(done)} of {len(planned)} folds: not the paper's five-fold mean"})
            first = next((r for r in done if r["fold"] == 1), None)
            if first and first.get("hinge optimum objective"):
                notes.append(
                    f"The fold-1 gap to LETOR, measured: at C = {first['C']:g} SVM-light with -# 5000 "
                    f"(SVM-light V6.02, -z p -e 0.001, QueryLevelNorm data as LETOR's baselines) scores "
                    f"{first['SVMLight# ndcg@10']:.4f} against LETOR's published "
                    f"{_f(first['LETOR RankSVM ndcg@10 (published)'])}; it stopped after "
                    f"{_f(first['SVMLight# iterations'], ',.0f')} iterations "
                    + ("because -# ended it (no progress for 5000 iterations), " if first["SVMLight# stopped by -#"]
                       else "at its own tolerance, ")
                    + f"at a hinge objective {_f(first['SVMLight# above optimum %'], '.1f')}% above the "
                    f"exact optimum of the same problem, whose test NDCG@10 is "
                    f"{_f(first['hinge optimum ndcg@10'])}. A capped run's score is that of wherever "
                    "the cap stopped it, so two capped runs of one problem can differ; LETOR's "
                    "version of SVM-light, its file order of the pairs and its stopping point are "
                    "not in its baseline files, so its run cannot be rebuilt here (our inference: "
                    "the gap between the two capped numbers is where each run stopped, not the "
                    "data, whose statistics match Table 1). Neither capped number measures "
                    "RankSVM; the optimum does.")
    notes += [
        "SVMLight#: the SVM-light peer (`svm_learn -z p -c C -# 5000`, the paper's Sect. 5.1 and "
        "LETOR's setting); -# ends training when 5000 iterations bring no progress, so the "
        "runs marked 'stopped by -#' end short of the optimum (SVM-light prints 'Relaxing "
        "KT-Conditions due to slow progress').",
        "hinge optimum: SVM-light's objective (1/2 ||w||^2 + C sum of pair hinges, same C) solved "
        "exactly (the paper's uncapped SVMLight column): "
        + ("by LIBLINEAR's dual coordinate descent on the explicit difference vectors, eps 1e-6 "
           "(our cutting plane did not reach a relative gap of 1e-6 at C = 0.6 within 2,400 s here)"
           if hinge_solver(ctx) == "liblinear_pairs" else
           "SVMLight's objective, our solver: the cutting plane to a relative gap of 1e-6")
        + ". Objectives are evaluated by our tree oracle at each run's weights.",
        f"Uncapped SVM-light is not run: its budget here is "
        f"{ctx.artefact.options.get('uncapped_budget_s', 1800):,.0f} s per fold on a shared 2-core "
        "machine (the paper: 81,097 s and 55,750 s for five folds); 'ms per iteration' is what "
        "each of its iterations costs here.",
        "LETOR RankSVM: the published per-fold test NDCG@10 of LETOR 3.0's RankSVM baseline "
        "(experiments/letor_baselines/letor3_baselines.csv)."]
    caption = build_caption(ctx, plan.runs + [r for r in ours_plan.runs if r.spec["solver"] in
                                              (hinge_solver(ctx), "prsvm_plus")])
    files = write_table(ctx, rows, SVMLIGHT_COLUMNS, caption, notes)
    return Artefact(ctx.artefact.id, ctx.paper.key, "table", ctx.artefact.title, files, caption,
                    plan_status(plan), notes, [])


def _f(v, spec: str = ".4f") -> str:
    return "n/a" if v is None else format(v, spec)
