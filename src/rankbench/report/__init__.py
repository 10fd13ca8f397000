"""Tables and figures from stored records only: paper artefacts, renderers, index.

``render_all`` never trains and never reads data: it reads the records the runner stored,
matched by run id to the runs each artefact's experiment config plans (``rankbench.plan``),
and writes Markdown/CSV tables, PNG/PDF figures and ``README.md`` indexing them with every
paper-vs-ours number.
"""

from __future__ import annotations

import datetime as _dt
import traceback
from pathlib import Path
from typing import Any

from rankbench.plan import ExperimentPlan
from rankbench.report.context import Artefact, ArtefactDef, RenderContext
from rankbench.report.index import write_index
from rankbench.report.paper import PAPERS, Paper
from rankbench.report.records import PlannedRun

__all__ = ["Artefact", "ArtefactDef", "attach_records", "render_all", "write_index"]


def attach_records(plans: dict[str, ExperimentPlan], store) -> dict[str, int]:
    """Give each plan its runs with their stored records (by run id); counts found / missing / corrupt.

    Reads the whole store once (O(records)); corrupt record files are counted (and listed
    in ``counts["corrupt_files"]``), never silently turned into numbers.  A solver whose
    every run is stored as skipped (a peer not built) is the plan's ``pending_solvers``.
    """
    records, problems = store.scan()
    by_id: dict[str, dict[str, Any]] = {}
    for rec in records:
        old = by_id.get(rec["run_id"])
        if old is None or (old.get("status") != "ok" and rec.get("status") == "ok"):
            by_id[rec["run_id"]] = rec
    found = missing = 0
    last = ""  # the latest finish time of a planned run's record: what the report is of
    for plan in plans.values():
        plan.runs = []
        for job in plan.jobs:
            for spec in job.specs:
                rec = by_id.get(spec.run_id)
                plan.runs.append(PlannedRun(spec.to_dict(), job.use, job.use.key, rec))
                found += rec is not None
                missing += rec is None
                if rec is not None:
                    last = max(last, str((rec.get("env") or {}).get("finished") or ""))
        by_solver: dict[str, set[str]] = {}
        for r in plan.runs:
            by_solver.setdefault(r.spec["solver"], set()).add(r.status)
        plan.pending_solvers = sorted(s for s, st in by_solver.items() if st == {"skipped"})
    return {"found": found, "missing": missing, "corrupt": len(problems), "last_finished": last,
            "corrupt_files": [f"{p}: {why}" for p, why in problems]}


def artefact_of(plan: ExperimentPlan, reads: list[str]) -> ArtefactDef:
    """The artefact an experiment config's ``report:`` block describes."""
    from rankbench.plan import artefact_name

    art = ArtefactDef.from_report(artefact_name(plan.name), plan.report, reads)
    art.experiments[0] = plan.name  # the quick/ variant's own runs in quick mode
    return art


def render_all(papers: dict[str, Paper], plans: dict[str, ExperimentPlan], names: list[str],
               reads: dict[str, list[str]], out_dir: str | Path, quick: bool = False,
               data_root: Path | None = None) -> list[Artefact]:
    """Render the artefact of every experiment config in ``names`` into ``out_dir``.

    ``reads[name]`` are the (planned) experiment configs whose runs the artefact reads
    besides its own.  A renderer error becomes a failed entry; the others still render.
    Artefacts come in paper order (``PAPERS``), then by name.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    order = {k: i for i, k in enumerate(PAPERS)}
    arts = [(name, artefact_of(plans[name], reads.get(name, []))) for name in names]
    arts.sort(key=lambda na: (order.get(na[1].paper, len(order)), na[1].paper, na[0]))
    done = []
    for _name, art in arts:
        paper = papers.get(art.paper)
        try:
            if paper is None:
                raise ValueError(f"no experiments/{art.paper}/paper.yaml for artefact {art.id}")
            ctx = RenderContext(paper, art, {n: plans[n] for n in art.experiments}, out_dir, quick,
                                data_root)
            from rankbench.report.renderers import get_renderer

            done.append(get_renderer(art.renderer)(ctx))
        except Exception as exc:  # noqa: BLE001 - one broken artefact must not hide the rest
            done.append(Artefact(art.id, art.paper, art.kind, art.title, [],
                                 f"renderer {art.renderer!r} failed: {exc}", "failed",
                                 [traceback.format_exc()], []))
    return with_ledgers(done, papers, plans, out_dir, quick)


def with_ledgers(artefacts: list[Artefact], papers: dict[str, Paper],
                 plans: dict[str, ExperimentPlan], out_dir: Path, quick: bool) -> list[Artefact]:
    """``artefacts`` with each paper's claims ledger (``report.ledger``) first among its own."""
    from rankbench.report.ledger import ledger_artefact

    out: list[Artefact] = []
    for a in artefacts:
        if not any(b.paper == a.paper for b in out):
            paper = papers.get(a.paper)
            if paper is not None and paper.claims:
                out.append(ledger_artefact(paper, plans, out_dir, quick))
        out.append(a)
    return out


def generated_stamp() -> str:
    """UTC time stamp for the index."""
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
