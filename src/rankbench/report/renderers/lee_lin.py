"""Lee & Lin 2014 supplement: Fig. (II) (Tree-TRON vs cutting plane per iteration) and Table (I)."""

from __future__ import annotations

import numpy as np

from rankbench.report.caption import build_caption
from rankbench.report.compare import comparison_row, data_kind, plan_status
from rankbench.report.context import Artefact, RenderContext
from rankbench.report.labels import solver_label
from rankbench.report.output import left_out, new_figure, write_figure, write_table
from rankbench.report.records import PlannedRun, choose_per_fold, flag, history, value
from rankbench.report.renderers import RENDERERS

# LIBLINEAR's TRON stops at ||g|| <= eps ||g0|| with eps = 1e-3 for RankSVM (Lee & Lin's
# "default stopping condition"); the dashed line of Fig. (II) marks that iterate.
DEFAULT_TRON_EPS = 1e-3


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
        row = {"x": x, "objective": h.get("objective"), "grad_norm": h.get("grad_norm")}
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


@RENDERERS.register()
def cg_convergence_figure(ctx: RenderContext) -> Artefact:
    """Fig. (II): relative function value (log), test pairwise accuracy and NDCG@10 per iteration."""
    plan = ctx.plan()
    shown = [d for d in plan.datasets if any(r.ok for r in plan.runs if r.dataset_key == d)]
    omitted = {plan.resolutions[d].label: "data not present" if not plan.resolutions[d].present
               else "no stored run yet" for d in plan.datasets if d not in shown}
    fig, axes = new_figure(len(shown), 3) if shown else (None, [])
    data_rows, notes = [], []
    for i, ds in enumerate(shown):
        res = plan.resolutions[ds]
        ax_f, ax_p, ax_n = axes[i]
        name = res.label + (" (stand-in)" if res.substitution else "")
        ax_f.set_title(f"{name}: relative function value")
        ax_p.set_title(f"{name}: test pairwise accuracy")
        ax_n.set_title(f"{name}: test NDCG@10")
        every = [r for r in plan.runs if r.dataset_key == ds and r.ok]
        best, best_from = best_objective_per_problem(every)
        # C per method as the supplement: the run with the best validation pairwise accuracy
        chosen = choose_per_fold(every, SELECTION_METRIC)
        runs = [rs[0] for (d, solver), rs in sorted(chosen.items())
                if d == ds and solver not in REFERENCE_SOLVERS]
        if not chosen:  # runs without validation scores (older records): every plotted solver's run
            runs = [r for r in every if r.spec["solver"] not in REFERENCE_SOLVERS]
        for run in runs:
            solver = run.spec["solver"]
            pts = iterate_scores(run)
            objs = [p["objective"] for p in pts if p["objective"] is not None]
            if not objs:
                continue
            # f*: the best objective any run reached on the same problem (loss and C)
            f_star = best[problem_key(run)]
            notes.append(f"{res.label} {solver}: C = {run.spec['params'].get('C'):g} "
                         f"(best {SELECTION_METRIC}), f* = {f_star:.10g} from "
                         f"{', '.join(sorted(best_from[problem_key(run)]))}")
            xs = np.array([p["x"] for p in pts], dtype=float)
            rel = np.array([(p["objective"] - f_star) / abs(f_star) for p in pts])
            keep = (rel > 0) & (xs > 0)  # log axes: a point at f* and x = 0 cannot show
            lab = solver_label(solver) + (" (CG iterations)" if solver.startswith("tron") else "")
            ax_f.plot(xs[keep], rel[keep], label=lab)
            if all("pairwise_accuracy" in p for p in pts):
                pos = xs > 0
                ax_p.plot(xs[pos], np.array([p["pairwise_accuracy"] for p in pts])[pos], label=lab)
                ax_n.plot(xs[pos], np.array([p["ndcg@10"] for p in pts])[pos], label=lab)
            else:
                notes.append(f"{res.label} {solver}: the record holds no test scores per iterate")
            for p, r in zip(pts, rel, strict=True):
                data_rows.append({"dataset": res.label, "solver": solver, "iteration_axis": p["x"],
                                  "objective": p["objective"], "relative_function_value": r,
                                  "test_pairwise_accuracy": p.get("pairwise_accuracy"),
                                  "test_ndcg@10": p.get("ndcg@10")})
            if solver.startswith("tron"):
                stop = default_stop_point(run, pts)
                if stop is not None:
                    if "pairwise_accuracy" in stop:
                        ax_p.axhline(stop["pairwise_accuracy"], color="k", linestyle="--",
                                     linewidth=0.8, marker="", label="Tree-TRON, default stop")
                        ax_n.axhline(stop["ndcg@10"], color="k", linestyle="--", linewidth=0.8,
                                     marker="", label="Tree-TRON, default stop")
        ax_f.set_yscale("log")
        for ax, yl in ((ax_f, "(f - f*) / f*"), (ax_p, "pairwise accuracy"), (ax_n, "NDCG@10")):
            ax.set_xscale("log")
            ax.set_xlabel("iterations (CG iterations for Tree-TRON)")
            ax.set_ylabel(yl)
    extra = [left_out(omitted)] if omitted else []
    extra += [
        "f* is the best objective any stored run reached on the same problem (same loss and C: "
        "for the L2-loss problem Tree-TRON's and Newton-tree's to 1e-12, for the L1-loss problem "
        "the cutting plane's own), not each curve's own last value; Tree-TRON solves the L2-loss "
        "problem, the cutting-plane method the L1-loss one, each at the C of its best validation "
        "pairwise accuracy.",
        "Tree-TRON's points are its CG iterates w + s_k (one per CG iteration, the supplement's "
        "axis); a trial point the trust region rejects can lie above the previous one.",
        f"Dashed line: Tree-TRON's iterate at the default stopping rule ||g|| <= {DEFAULT_TRON_EPS:g} ||g0||.",
        "The supplement's Fig. (II) gives no numbers: nothing to mark from the paper.",
    ]
    caption = build_caption(ctx, plan.runs, extra)
    files = write_figure(ctx, fig, caption, data_rows, sorted(set(notes)))
    return Artefact(ctx.artefact.id, ctx.paper.key, "figure", ctx.artefact.title, files, caption,
                    plan_status(plan), sorted(set(notes)), [])


SELECTION_METRIC = "vali.pairwise_accuracy"
# solvers run only to give f* of their problem (not plotted)
REFERENCE_SOLVERS = ("newton_tree",)


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
