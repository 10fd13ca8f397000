"""``results/README.md``: every artefact with its status and files, then paper against ours."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rankbench.report.context import Artefact
from rankbench.report.output import fmt, markdown_table


def comparison_table(artefacts: list[Artefact]) -> list[dict[str, Any]]:
    """All paper-vs-ours rows of all artefacts, prefixed with the artefact id."""
    rows = []
    for a in artefacts:
        for c in a.comparisons:
            rows.append({"artefact": a.id, **{k: v for k, v in c.items() if k != "artefact"}})
    return rows


def write_index(out_dir: str | Path, artefacts: list[Artefact], header: list[str]) -> Path:
    """Write ``<out_dir>/README.md`` indexing ``artefacts``; returns its path."""
    out_dir = Path(out_dir)
    lines = ["# Reproduced tables and figures", "", *header, ""]
    if (out_dir / "DISCUSSION.md").is_file():  # hand-written reading of a committed full run
        lines += ["Gaps between the papers and these numbers are discussed in "
                  "[DISCUSSION.md](DISCUSSION.md) (written for the committed full run).", ""]
    lines += ["| artefact | kind | status | files |", "|---|---|---|---|"]
    for a in artefacts:
        links = ", ".join(f"[{p.suffix[1:]}]({p.relative_to(out_dir).as_posix()})" for p in a.files)
        lines.append(f"| {a.title} | {a.kind} | {a.status} | {links or '—'} |")
    lines += ["", "Status: ok = every planned run stored; partial = some runs or datasets "
              "missing (see the artefact's caption); pending = a solver not in this build or "
              "nothing run yet; data not present = no dataset of the artefact under the data "
              "root; failed = the renderer raised (message below).", ""]
    failed = [a for a in artefacts if a.status == "failed"]
    if failed:
        lines += ["## Renderer failures", ""]
        for a in failed:
            lines += [f"### {a.id}", "", "```text", a.caption, *(a.notes[:1]), "```", ""]
    rows = comparison_table(artefacts)
    lines += ["## Paper against ours", "",
              "Every number the papers publish that an artefact reproduces; `difference` = ours - "
              "paper for scores, `ratio` = ours / paper for times (different machines); no "
              "difference is computed where our number comes from a stand-in (`data`).", ""]
    if rows:
        cols = ["artefact", "dataset", "data", "method", "metric", "paper", "ours", "difference",
                "ratio", "reference"]
        for r in rows:
            if r.get("approximate"):
                r["paper"] = f"~{fmt(r['paper'])} (approx.)"
        lines.append(markdown_table(rows, cols))
    else:
        lines.append("(no stored runs yet)")
    lines.append("")
    path = out_dir / "README.md"
    path.write_text("\n".join(lines))
    return path
