"""Support runs: the runs an artefact or a claim reads that are not a paper's table or figure
(an independent f*, an exact optimum), listed run by run with what they reached."""

from __future__ import annotations

from rankbench.report.caption import build_caption
from rankbench.report.compare import plan_status
from rankbench.report.context import Artefact, RenderContext
from rankbench.report.labels import data_title, solver_label
from rankbench.report.output import write_table
from rankbench.report.records import flag, value
from rankbench.report.renderers import RENDERERS

COLUMNS = ["dataset", "fold", "solver", "loss", "C", "tol", "objective", "converged",
           "stopping", "n_iter", "train s", "test ndcg@10", "note"]


@RENDERERS.register()
def support_runs_table(ctx: RenderContext) -> Artefact:
    """One row per planned run: its parameters, the objective it reached, how it stopped (the
    solver's own accuracy statement), its time and test NDCG@10."""
    plan = ctx.plan()
    rows = []
    for r in sorted(plan.runs, key=lambda r: (r.dataset_key, r.spec["fold"], r.spec["solver"],
                                              r.spec["params"].get("C") or 0)):
        res = plan.resolutions[r.dataset_key]
        p = r.spec["params"]
        train = (r.record or {}).get("train") or {}
        conv = train.get("convergence") or {}
        stop = conv.get("message") or ((r.record or {}).get("extra") or {}).get("peer") or ""
        rows.append(flag({
            "dataset": data_title(res),
            "fold": r.spec["fold"], "solver": solver_label(r.spec["solver"]),
            "loss": p.get("loss"), "C": p.get("C"), "tol": p.get("tol"),
            "objective": value(r.record, "train.objective"), "converged": train.get("converged"),
            "stopping": stop, "n_iter": value(r.record, "train.n_iter"),
            "train s": value(r.record, "train.wall_s"),
            "test ndcg@10": value(r.record, "test.ndcg@10"),
            "note": "data not present" if not res.present else "" if r.ok else r.status,
        }, [r] if r.ok else [], "objective"))
    notes = ["objective: Chapelle's eq. (1), 1/2 ||w||^2 + C sum over preference pairs of the "
             "loss, evaluated by our tree oracle at the run's weights (peers included)."]
    caption = build_caption(ctx, plan.runs)
    files = write_table(ctx, rows, COLUMNS, caption, notes)
    return Artefact(ctx.artefact.id, ctx.paper.key, "table", ctx.artefact.title, files, caption,
                    plan_status(plan), notes, [])
