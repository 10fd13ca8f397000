"""Tables and figures from stored records only: plans (experiments as data), renderers, index.

``render_all`` never trains: it reads the records the runner stored, matched to the
papers' experiment plans by run id, and writes Markdown/CSV tables, PNG/PDF figures and
``README.md`` indexing them with every paper-vs-ours number.
"""

from __future__ import annotations

import datetime as _dt
import traceback
from pathlib import Path
from typing import Any

from rankbench.report.context import Artefact, RenderContext, get_renderer
from rankbench.report.index import write_index
from rankbench.report.plan import ExperimentPlan, Paper

__all__ = ["Artefact", "attach_records", "render_all", "write_index"]


def attach_records(plans: dict[str, ExperimentPlan], store) -> dict[str, int]:
    """Attach each planned run's stored record (by run id); returns counts found / missing.

    Reads the whole store once (O(records)); corrupt record files are skipped with a
    warning in the counts, never silently turned into numbers.
    """
    from rankbench.runner import run_id

    records, problems = store.scan()
    by_id: dict[str, dict[str, Any]] = {}
    for rec in records:
        old = by_id.get(rec["run_id"])
        if old is None or (old.get("status") != "ok" and rec.get("status") == "ok"):
            by_id[rec["run_id"]] = rec
    found = missing = 0
    for plan in plans.values():
        for run in plan.runs:
            run.record = by_id.get(run_id(run.spec))
            if run.record is None:
                missing += 1
            else:
                found += 1
    return {"found": found, "missing": missing, "corrupt": len(problems)}


def render_all(papers: list[Paper], plans: dict[str, ExperimentPlan], out_dir: str | Path,
               quick: bool = False, data_root: Path | None = None) -> list[Artefact]:
    """Render every artefact of every paper into ``out_dir``; a renderer error becomes a failed entry."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    done = []
    for paper in papers:
        for art in paper.artefacts:
            ctx = RenderContext(paper, art, {t: plans[t] for t in art.experiments}, out_dir, quick,
                                data_root)
            try:
                done.append(get_renderer(art.renderer)(ctx))
            except Exception as exc:  # noqa: BLE001 - one broken artefact must not hide the rest
                done.append(Artefact(art.id, paper.key, art.kind, art.title, [],
                                     f"renderer {art.renderer!r} failed: {exc}", "failed",
                                     [traceback.format_exc()], []))
    return done


def generated_stamp() -> str:
    """UTC time stamp for the index."""
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
