"""What a renderer gets (the paper, its plans with records attached) and what it returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rankbench.plan import ExperimentPlan
from rankbench.report.paper import Paper
from rankbench.report.records import PlannedRun

# Keys of an experiment config's ``report:`` block.
REPORT_KEYS = {"paper", "artefact", "id", "kind", "renderer", "title", "description", "reads",
               "options", "budget_s"}


@dataclass
class ArtefactDef:
    """One table or figure of a paper: how it is drawn and the experiments whose runs it reads.

    ``experiments[0]`` is the artefact's own experiment config; the others come from its
    ``report.reads``.
    """

    id: str
    paper: str
    kind: str
    renderer: str
    title: str
    experiments: list[str]
    paper_artefact: str | None = None
    options: dict = field(default_factory=dict)
    budget_s: float | None = None

    @classmethod
    def from_report(cls, name: str, report: dict[str, Any], reads: list[str]) -> ArtefactDef:
        """The artefact of experiment config ``name`` from its ``report:`` block (ValueError if bad)."""
        unknown = sorted(set(report) - REPORT_KEYS)
        missing = [k for k in ("paper", "kind", "renderer", "title") if not report.get(k)]
        if unknown or missing:
            raise ValueError(f"experiment {name}: report block "
                             + (f"has unknown keys {unknown}" if unknown else f"lacks {missing}"))
        if report["kind"] not in ("table", "figure"):
            raise ValueError(f"experiment {name}: report.kind must be table or figure")
        art = report.get("artefact") or name.split("/")[-1]
        return cls(id=report.get("id") or f"{report['paper']}_{art}", paper=report["paper"],
                   kind=report["kind"], renderer=report["renderer"], title=report["title"],
                   experiments=[name, *reads], paper_artefact=report.get("artefact"),
                   options=dict(report.get("options") or {}), budget_s=report.get("budget_s"))

# Artefact status, from best to worst; an artefact's status is its worst part.
STATUSES = ("ok", "stand-in", "partial", "pending", "data not present")


@dataclass
class RenderContext:
    """Everything a renderer may read: stored records only (attached to the planned runs)."""

    paper: Paper
    artefact: ArtefactDef
    plans: dict[str, ExperimentPlan]
    out_dir: Path
    quick: bool
    data_root: Path | None = None

    def runs(self, tag: str | None = None) -> list[PlannedRun]:
        """Planned runs of one experiment config (default: the artefact's own)."""
        return self.plan(tag).runs

    def plan(self, tag: str | None = None) -> ExperimentPlan:
        """The plan of one experiment config (default: the artefact's own); in quick mode a
        config named by its full name (``chapelle2010/table4``) is its ``quick/`` variant."""
        tag = tag or self.artefact.experiments[0]
        if tag not in self.plans and self.quick and f"quick/{tag}" in self.plans:
            tag = f"quick/{tag}"
        if tag not in self.plans:
            raise KeyError(f"artefact {self.artefact.id} reads experiment {tag!r}, which is not "
                           f"among its experiments {sorted(self.plans)}: declare it in `reads:`")
        return self.plans[tag]

    def values(self, **match: Any) -> list[dict[str, Any]]:
        """The paper's published numbers for this artefact (rows of paper_values.csv)."""
        return self.paper.paper_values(self.artefact.paper_artefact, **match)

    def path(self, suffix: str) -> Path:
        """Output path ``<out_dir>/<paper>/<artefact id><suffix>``."""
        p = self.out_dir / self.paper.key / f"{self.artefact.id}{suffix}"
        p.parent.mkdir(parents=True, exist_ok=True)
        return p


@dataclass
class Artefact:
    """A rendered table or figure: files written, its caption, and how complete it is."""

    id: str
    paper: str
    kind: str
    title: str
    files: list[Path]
    caption: str
    status: str
    notes: list[str] = field(default_factory=list)
    comparisons: list[dict[str, Any]] = field(default_factory=list)  # paper vs ours rows
    ledger: list[Any] = field(default_factory=list)  # kind "claims": the ledger.ClaimResult rows


def worst_status(statuses: list[str]) -> str:
    """The least complete of ``statuses`` (ok < stand-in < partial < pending < data not present)."""
    if not statuses:
        return "pending"
    return max(statuses, key=STATUSES.index)
