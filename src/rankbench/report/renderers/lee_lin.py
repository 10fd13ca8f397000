"""Lee & Lin 2014 supplement: Fig. (II) (Tree-TRON vs cutting plane per iteration) and Table (I)."""

from __future__ import annotations

import numpy as np

from rankbench.report.caption import build_caption
from rankbench.report.compare import comparison_row, data_kind, plan_status
from rankbench.report.context import Artefact, RenderContext
from rankbench.report.labels import data_title, solver_label
from rankbench.report.output import left_out, new_figure, write_figure, write_table
from rankbench.report.records import PlannedRun, choose_per_fold, flag, history, value
from rankbench.report.renderers import RENDERERS

# LIBLINEAR's TRON stops at ||g|| <= eps ||g0|| with eps = 1e-3 for RankSVM (Lee & Lin's
# "default stopping condition"); the dashed line of Fig. (II) marks that iterate.
DEFAULT_TRON_EPS = 1e-3
SELECTION_METRIC = "vali.pairwise_accuracy"
# solvers run only to give f* of their problem (not plotted)
REFERENCE_SOLVERS = ("newton_tree",)
REFERENCE_SOLVERS_DEFAULT = REFERENCE_SOLVERS


def iterate_scores(run: PlannedRun) -> list[dict]:
    """Per history row: x (CG iterations for TRON, iterations otherwise), objective, test metrics.

    The runner scored every iterate on the test split at run time (``test_pairwise_accuracy``,
    ``test_ndcg@10`` in each history row of a ``keep_coef_history`` run): nothing is read here.
    A TRON run recorded with ``cg_history`` gives one point per CG iteration (its rows marked
    ``cg_step``: the trial point w + s_k); without it, one per outer iteration at its
    cumulative CG count.
    """
    rows = []
    hist = history(run.record)
    if any(h.get("cg_step") for h in hist):
        hist = [h for h in hist if h.get("cg_step") or h.get("iter") == 0]
    for i, h in enumerate(hist):
        x = h.get("cg_iter") if run.spec["solver"].startswith("tron") else h.get("iter", i + 1)
        row = {"x": x, "objective": h.get("objective"), "grad_norm": h.get("grad_norm"),
               "elapsed": h.get("elapsed")}
        if h.get("test_pairwise_accuracy") is not None:
            row["pairwise_accuracy"] = float(h["test_pairwise_accuracy"])
            row["ndcg@10"] = float(h["test_ndcg@10"])
        rows.append(row)
    return rows


def default_stop_point(run: PlannedRun, pts: list[dict]) -> dict | None:
    """The point of ``pts`` where TRON's default rule ||g|| <= 1e-3 ||g0|| first holds: read on the
    outer iterations (the CG rows carry no gradient norm), at that iterate's CG count."""
    outer = [h for h in history(run.record) if not h.get("cg_step")]
    g0 = outer[0].get("grad_norm") if outer else None
    if not g0:
        return None
    hit = next((h for h in outer if h.get("grad_norm") is not None
                and h["grad_norm"] <= DEFAULT_TRON_EPS * g0), outer[-1])
    at = [p for p in pts if p["x"] == hit.get("cg_iter")]
    return at[-1] if at else None


def independent_f_star(plans, dataset: str, loss: str, C: float | None,
                       reference_solvers=REFERENCE_SOLVERS_DEFAULT) -> tuple[float, PlannedRun] | None:
    """(f*, run) of the problem (loss, C) on ``dataset`` from the independent tight solves: every
    run of ``plans[0]`` (the reference experiment) and the ``reference_solvers`` runs of the
    others; the lowest objective when several; None when none is stored."""
    best = None
    for i, plan in enumerate(plans):
        for r in plan.runs:
            if not r.ok or r.dataset_key != dataset or (i and r.spec["solver"] not in reference_solvers):
                continue
            if problem_key(r) != (loss, C):
                continue
            f = value(r.record, "train.objective")
            if f is not None and (best is None or f < best[0]):
                best = (f, r)
    return best


def solve_tolerance(run: PlannedRun) -> str:
    """How tightly an f* run solved its problem, as its solver states it."""
    p = run.spec["params"]
    if run.spec["solver"] == "liblinear_pairs":
        return f"LIBLINEAR dual coordinate descent (-s 3), eps = {p.get('tol'):g}"
    conv = (run.record.get("train") or {}).get("convergence") or {}
    return (f"{solver_label(run.spec['solver'])}, tol = {p.get('tol'):g} "
            f"({conv.get('message', 'its stopping rule')})")


@RENDERERS.register()
def cg_convergence_figure(ctx: RenderContext) -> Artefact:
    """Fig. (II), fold 1, per dataset: relative function value (f - f*)/f* against iterations on
    separate axes (Tree-TRON's CG iterations below, the cutting plane's iterations above) and
    against seconds (one axis for both), test pairwise accuracy and NDCG@10 against seconds,
    and the two methods at one common C; f* from independent tight solves (the reference
    experiment), y floored at the solvers' tolerance, non-converged runs marked."""
    opts = ctx.artefact.options
    plan = ctx.plan()
    ref_exp = opts.get("reference_experiment")
    ref_plans = ([ctx.plan(ref_exp)] if ref_exp else []) + [plan]
    common_C = opts.get("common_C")
    shown = [d for d in plan.datasets if any(r.ok for r in plan.runs if r.dataset_key == d)]
    omitted = {plan.resolutions[d].label: "data not present" if not plan.resolutions[d].present
               else "no stored run yet" for d in plan.datasets if d not in shown}
    n_cols = 5 if common_C is not None else 4
    fig, axes = new_figure(len(shown), n_cols, width=3.0, height=2.5) if shown else (None, [])
    data_rows, notes = [], []
    colors = {"tron_tree": "C1", "cutting_plane": "C0"}
    for i, ds in enumerate(shown):
        res = plan.resolutions[ds]
        name = data_title(res)
        ax_it, ax_t, ax_p, ax_n = axes[i][:4]
        every = [r for r in plan.runs if r.dataset_key == ds and r.ok]
        chosen = choose_per_fold(every, SELECTION_METRIC)
        sel = [rs[0] for (d, s), rs in sorted(chosen.items()) if d == ds and s not in REFERENCE_SOLVERS]
        if not chosen:  # runs without validation scores (older records): every plotted solver's run
            sel = [r for r in every if r.spec["solver"] not in REFERENCE_SOLVERS]
        floor = max([float(r.spec["params"].get("tol") or 0) for r in sel] + [1e-12])
        ax_top = ax_it.twiny()
        for run in sel:
            pts, f_star = _relative(run, ds, ref_plans, notes, res.label)
            if pts is None:
                continue
            solver = run.spec["solver"]
            conv = (run.record.get("train") or {}).get("converged")
            lab = (f"{solver_label(solver)}, C = {run.spec['params'].get('C'):g}"
                   + (" (not converged)" if conv is False else ""))
            style = dict(color=colors.get(solver, "C2"), label=lab,
                         markerfacecolor="none" if conv is False else None)
            ax = ax_it if solver.startswith("tron") else ax_top
            _plot_relative(ax, [p["x"] for p in pts], [p["rel"] for p in pts], floor, style)
            _plot_relative(ax_t, [p["elapsed"] for p in pts], [p["rel"] for p in pts], floor, style)
            if all("pairwise_accuracy" in p for p in pts):
                ts = [p["elapsed"] for p in pts]
                ax_p.plot(ts, [p["pairwise_accuracy"] for p in pts], **style)
                ax_n.plot(ts, [p["ndcg@10"] for p in pts], **style)
            else:
                notes.append(f"{res.label} {solver}: the record holds no test scores per iterate")
            for p in pts:
                data_rows.append({"dataset": res.label, "panel": "selected C", "solver": solver,
                                  "C": run.spec["params"].get("C"), "iteration_axis": p["x"],
                                  "elapsed_s": p["elapsed"], "objective": p["objective"], "f_star": f_star,
                                  "relative_function_value": p["rel"],
                                  "test_pairwise_accuracy": p.get("pairwise_accuracy"),
                                  "test_ndcg@10": p.get("ndcg@10"), "converged": conv})
            if solver.startswith("tron"):
                stop = default_stop_point(run, iterate_scores(run))
                if stop is not None and "pairwise_accuracy" in stop:
                    for ax, key in ((ax_p, "pairwise_accuracy"), (ax_n, "ndcg@10")):
                        ax.axhline(stop[key], color="k", linestyle="--", linewidth=0.8, marker="",
                                   label="Tree-TRON, default stop")
        ax_it.set_xlabel("Tree-TRON: CG iterations", color=colors["tron_tree"])
        ax_top.set_xlabel("cutting plane: iterations", color=colors["cutting_plane"], fontsize=7)
        ax_top.set_xscale("log")
        ax_it.set_title(f"{name}: (f - f*)/f* per iteration", pad=18)
        ax_t.set_title(f"{name}: (f - f*)/f* against time")
        ax_p.set_title(f"{name}: test pairwise accuracy")
        ax_n.set_title(f"{name}: test NDCG@10")
        for ax in (ax_it, ax_t):
            ax.set_yscale("log")
            ax.set_ylim(bottom=floor / 3)
            ax.axhline(floor, color="0.4", linestyle=":", linewidth=0.8, marker="",
                       label=f"solver tolerance {floor:g} (floor)")
            ax.set_ylabel("(f - f*) / f*")
        ax_it.set_xscale("log")
        for ax, yl in ((ax_t, None), (ax_p, "pairwise accuracy"), (ax_n, "NDCG@10")):
            ax.set_xscale("log")
            ax.set_xlabel("training seconds")
            if yl:
                ax.set_ylabel(yl)
        if common_C is not None:
            ax_c = axes[i][4]
            for solver in ("tron_tree", "cutting_plane"):
                run = next((r for r in every if r.spec["solver"] == solver
                            and np.isclose(float(r.spec["params"].get("C") or 0), common_C)), None)
                if run is None:
                    continue
                pts, f_star = _relative(run, ds, ref_plans, notes, res.label)
                if pts is None:
                    continue
                conv = (run.record.get("train") or {}).get("converged")
                _plot_relative(ax_c, [p["elapsed"] for p in pts], [p["rel"] for p in pts], floor, dict(
                    color=colors[solver], linestyle="--",
                    **({"markerfacecolor": "none"} if conv is False else {}),  # hollow: not converged
                    label=f"{solver_label(solver)}, C = {common_C:g} (common C)"
                          + (" (not converged)" if conv is False else "")))
                n_it = value(run.record, "train.n_cg_iter" if solver.startswith("tron") else "train.n_iter")
                notes.append(f"{res.label}, common C = {common_C:g}: {solver_label(solver)} "
                             f"{n_it:.0f} {'CG ' if solver.startswith('tron') else ''}iterations in "
                             f"{value(run.record, 'train.wall_s'):.3g} s"
                             + (" (not converged)" if conv is False else ""))
                for p in pts:
                    data_rows.append({"dataset": res.label, "panel": f"common C = {common_C:g}",
                                      "solver": solver, "C": common_C, "iteration_axis": p["x"],
                                      "elapsed_s": p["elapsed"], "objective": p["objective"],
                                      "f_star": f_star, "relative_function_value": p["rel"],
                                      "converged": conv})
            ax_c.set_title(f"{name}: one C = {common_C:g}, against time")
            ax_c.set_xscale("log")
            ax_c.set_yscale("log")
            ax_c.set_ylim(bottom=floor / 3)
            ax_c.axhline(floor, color="0.4", linestyle=":", linewidth=0.8, marker="")
            ax_c.set_xlabel("training seconds")
            ax_c.set_ylabel("(f - f*) / f*")
    extra = [left_out(omitted)] if omitted else []
    extra += [
        "f* comes from an independent tight solve of the same problem (loss and C), never from "
        "the plotted runs: " + (f"{ref_exp} (LIBLINEAR's dual coordinate descent on the explicit "
                                f"difference vectors) for the L1-loss problem and " if ref_exp else "")
        + "Newton-CG with line search to a Newton decrement of 1e-12 for the L2-loss problem; "
        "each f* and its tolerance are listed below.",
        "Tree-TRON solves the L2-loss problem, the cutting-plane method the L1-loss one, each at "
        "the C of its best validation pairwise accuracy (the supplement's setting); their "
        "iterations are not the same unit, so the first panel gives each its own axis (CG "
        "iterations below, cutting-plane iterations above) and the others share training "
        "seconds. The last panel puts both at one common C.",
        "Values at or below the dotted line (the plotted solvers' own tolerance) are drawn on it: "
        "below it the curves measure rounding, not progress. Hollow markers: a run that stopped "
        "at its iteration cap (not converged); dashed lines, the common-C panel.",
        f"Dashed black line: Tree-TRON's iterate at the default stopping rule ||g|| <= "
        f"{DEFAULT_TRON_EPS:g} ||g0||. The supplement's Fig. (II) gives no numbers: nothing to "
        "mark from the paper.",
    ]
    runs = plan.runs + (ctx.plan(ref_exp).runs if ref_exp else [])
    caption = build_caption(ctx, runs, extra)
    files = write_figure(ctx, fig, caption, data_rows, sorted(set(notes)))
    return Artefact(ctx.artefact.id, ctx.paper.key, "figure", ctx.artefact.title, files, caption,
                    plan_status(plan), sorted(set(notes)), [])


def _relative(run: PlannedRun, ds: str, ref_plans, notes: list[str], label: str):
    """The run's iterates with (f - f*)/f* against the independent f* (None when not stored)."""
    loss, C = problem_key(run)
    ref = independent_f_star(ref_plans, ds, loss, C)
    if ref is None:
        notes.append(f"{label} {run.spec['solver']} (C = {C:g}): no independent f* stored for the "
                     f"{loss} problem: not drawn")
        return None, None
    f_star, ref_run = ref
    pts = [dict(p) for p in iterate_scores(run) if p["objective"] is not None and p["x"]]
    for p in pts:
        p["rel"] = (p["objective"] - f_star) / abs(f_star)
    low = min((p["rel"] for p in pts), default=0.0)
    notes.append(f"{label} {solver_label(run.spec['solver'])} (C = {C:g}, {loss}): f* = "
                 f"{f_star:.10g} from {solve_tolerance(ref_run)}; the run's lowest (f - f*)/f* = "
                 f"{low:.2g}")
    return pts, f_star


def _plot_relative(ax, xs, rel, floor: float, style: dict) -> None:
    """Relative function values on a log axis, values below ``floor`` drawn on it."""
    x = np.asarray(xs, dtype=float)
    y = np.maximum(np.asarray(rel, dtype=float), floor)
    keep = np.isfinite(x) & (x > 0)
    ax.plot(x[keep], y[keep], **{k: v for k, v in style.items() if v is not None})




def problem_key(run: PlannedRun) -> tuple[str, float | None]:
    """(loss, C): runs with the same key minimize the same objective on the same data."""
    from rankbench.optim.registry import resolve_solver

    params = run.spec["params"]
    loss = params.get("loss") or resolve_solver(run.spec["solver"])[0].default_loss
    return str(loss), params.get("C")


def best_objective_per_problem(runs: list[PlannedRun]) -> tuple[dict, dict]:
    """Per problem (loss, C): the lowest objective any of ``runs`` reached (history or final),
    and the solvers whose runs were compared."""
    best: dict[tuple[str, float | None], float] = {}
    best_from: dict[tuple[str, float | None], set[str]] = {}
    for run in runs:
        vals = [h.get("objective") for h in history(run.record)]
        vals.append(value(run.record, "train.objective"))
        vals = [float(v) for v in vals if v is not None and np.isfinite(float(v))]
        if not vals:
            continue
        key = problem_key(run)
        best_from.setdefault(key, set()).add(run.spec["solver"])
        best[key] = min(best.get(key, np.inf), min(vals))
    return best, best_from


def zero_dual_share(run: PlannedRun) -> tuple[float | None, str]:
    """Share of zero dual variables of a stored run (``extra.zero_dual_share``), and its source."""
    v = value(run.record, "extra.zero_dual_share")
    return (v, "record") if v is not None else (None, "not recorded")


@RENDERERS.register()
def dual_sparsity_table(ctx: RenderContext) -> Artefact:
    """Table (I): percentage of zero dual variables at C = 2^20, paper beside ours."""
    plan = ctx.plan()
    rows, comps = [], []
    cols = ["dataset", "zero dual % ours", "zero dual % paper", "diff (points)",
            "non-zero dual % ours", "> 75% non-zero (suppl. claim)", "n_iter",
            "converged objective", "source", "note"]
    for ds, res in plan.resolutions.items():
        p = next(iter(ctx.values(dataset=ds, metric="zero_dual_share_pct")), None)
        row = {"dataset": res.label, "zero dual % paper": p and p["value"]}
        runs = [r for r in plan.runs if r.dataset_key == ds]
        ok = [r for r in runs if r.ok]
        if not res.present:
            row["note"] = "data not present"
        elif not ok:
            row["note"] = "pending" if runs else "not planned"
        else:
            share, src = zero_dual_share(ok[0])
            pct = None if share is None else 100.0 * share
            row.update({"zero dual % ours": pct, "source": src,
                        "non-zero dual % ours": None if pct is None else 100.0 - pct,
                        # Sect. IV: "more than 75% of the elements are non-zero", checked on
                        # every set we run (OHSUMED is not in the supplement's table)
                        "> 75% non-zero (suppl. claim)": None if pct is None
                        else ("holds" if 100.0 - pct > 75.0 else "fails"),
                        "n_iter": value(ok[0].record, "train.n_iter"),
                        "converged objective": value(ok[0].record, "train.objective"),
                        "diff (points)": None if pct is None or p is None or res.substitution
                        else pct - p["value"],
                        "note": "stand-in data" if res.substitution else "fold 1 training split"})
            flag(row, ok, "zero dual % ours")
            if p:
                comps.append(comparison_row(ctx.artefact.paper_artefact, res.label,
                                            solver_label(ok[0].spec["solver"]), "zero dual variables (%)",
                                            p, pct, data=data_kind(res)))
        rows.append(row)
    notes = ["A dual variable of the L2-loss RankSVM is zero exactly when its pair has margin "
             "w.(x_i - x_j) >= 1 (Lee & Lin suppl. Sect. IV).",
             "The supplement's claim that more than 75% of the dual variables are non-zero is "
             "checked on every set run here, OHSUMED and MQ2008 included (column '> 75% non-zero'); "
             "the share is recorded at run time (extra.zero_dual_share)."]
    caption = build_caption(ctx, plan.runs)
    files = write_table(ctx, rows, cols, caption, notes)
    return Artefact(ctx.artefact.id, ctx.paper.key, "table", ctx.artefact.title, files, caption,
                    plan_status(plan), notes, comps)
