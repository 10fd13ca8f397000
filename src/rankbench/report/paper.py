"""The papers as data: ``experiments/<paper>/paper.yaml`` (citation), ``paper_values.csv`` (its
published numbers) and ``claims.csv`` (its claims, each with the rule that computes its verdict)."""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rankbench.report.claims_file import load_claims

# The order papers appear in results/README.md.
PAPERS = ("chapelle2010", "lee_lin2014", "sculley2009", "welleck2016", "leaderboard")


@dataclass
class Paper:
    """A paper folder: citation, source file, the published numbers (rows of paper_values.csv)
    and the claims (rows of claims.csv, ``report.ledger``)."""

    key: str
    citation: str
    file: str | None
    folder: Path
    values: list[dict[str, Any]]
    claims: list[dict[str, Any]] = field(default_factory=list)

    def paper_values(self, artefact: str | None, **match: Any) -> list[dict[str, Any]]:
        """Published-number rows of ``artefact`` whose columns equal ``match``."""
        ds = match.pop("dataset", None)
        return [r for r in self.values if r["artefact"] == artefact
                and (ds is None or same_dataset(r["dataset"], ds))
                and all(r.get(k) == v for k, v in match.items())]


def same_dataset(a: str, b: str) -> bool:
    """Whether two spellings name one dataset (``mq2007_list`` = ``MQ2007-list``)."""
    def norm(s: str) -> str:
        return "".join(ch for ch in s.lower() if ch.isalnum())

    return norm(a) == norm(b)


def _read_values(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    rows = []
    with path.open(newline="") as fh:
        for i, r in enumerate(csv.DictReader(fh), start=2):
            try:
                r["value"] = float(r["value"])
            except (KeyError, ValueError) as exc:
                raise ValueError(f"{path}:{i}: 'value' must be a number, got {r.get('value')!r}") from exc
            r["approximate"] = str(r.get("approximate", "")).strip().lower() == "true"
            rows.append(r)
    return rows


def load_paper(folder: str | Path) -> Paper:
    """Read one paper folder (``paper.yaml``, ``paper_values.csv``, ``claims.csv``)."""
    folder = Path(folder)
    path = folder / "paper.yaml"
    if not path.is_file():
        raise ValueError(f"{folder}: no paper.yaml (key, citation, file)")
    meta = yaml.safe_load(path.read_text()) or {}
    unknown = sorted(set(meta) - {"key", "citation", "file"})
    if unknown:
        raise ValueError(f"{path}: unknown keys {unknown}; expected key, citation, file")
    return Paper(key=meta.get("key") or folder.name, citation=meta.get("citation") or folder.name,
                 file=meta.get("file"), folder=folder,
                 values=_read_values(folder / "paper_values.csv"), claims=load_claims(folder))


def load_papers(root: str | Path) -> dict[str, Paper]:
    """Every paper folder under ``root`` (a folder holding ``paper.yaml``), by key."""
    papers = {}
    for p in sorted(Path(root).glob("*/paper.yaml")):
        paper = load_paper(p.parent)
        papers[paper.key] = paper
    return papers
