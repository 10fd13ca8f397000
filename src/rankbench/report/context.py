"""What a renderer gets (the paper, its plans with records attached) and what it returns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rankbench.report.plan import ArtefactDef, ExperimentPlan, Paper, PlannedRun

# Artefact status, from best to worst; an artefact's status is its worst part.
STATUSES = ("ok", "partial", "pending", "data not present")


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
        """Planned runs of one experiment (default: the artefact's first)."""
        tag = tag or self.artefact.experiments[0]
        return self.plans[tag].runs

    def plan(self, tag: str | None = None) -> ExperimentPlan:
        """The plan of one experiment (default: the artefact's first)."""
        return self.plans[tag or self.artefact.experiments[0]]

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


Renderer = Callable[[RenderContext], Artefact]
_RENDERERS: dict[str, Renderer] = {}


def renderer(name: str) -> Callable[[Renderer], Renderer]:
    """Decorator: register a renderer under the name experiments.yaml uses."""

    def deco(fn: Renderer) -> Renderer:
        if name in _RENDERERS and _RENDERERS[name] is not fn:
            raise ValueError(f"renderer {name!r} registered twice")
        _RENDERERS[name] = fn
        return fn

    return deco


def get_renderer(name: str) -> Renderer:
    """The renderer registered as ``name``; ValueError listing the known ones otherwise."""
    from rankbench.report import renderers  # noqa: F401  (registers them)

    if name not in _RENDERERS:
        raise ValueError(f"unknown renderer {name!r}; known: {', '.join(sorted(_RENDERERS))}")
    return _RENDERERS[name]


def worst_status(statuses: list[str]) -> str:
    """The least complete of ``statuses`` (ok < partial < pending < data not present)."""
    if not statuses:
        return "pending"
    return max(statuses, key=STATUSES.index)
