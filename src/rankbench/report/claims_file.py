"""Reading ``experiments/<paper>/claims.csv`` (the columns are described in
``rankbench.report.ledger``): below both the paper loader and the ledger, which read it."""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

import yaml

CLAIM_COLUMNS = ("id", "section", "claim", "quote", "kind", "experiments", "rule", "args", "note")
KINDS = ("numeric", "qualitative")


def load_claims(folder: str | Path) -> list[dict[str, Any]]:
    """Rows of ``<folder>/claims.csv`` (empty when absent); ValueError naming file, line and problem."""
    path = Path(folder) / "claims.csv"
    if not path.exists():
        return []
    rows, seen = [], set()
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        cols = tuple(reader.fieldnames or ())
        if cols != CLAIM_COLUMNS:
            raise ValueError(f"{path}:1: columns must be {','.join(CLAIM_COLUMNS)} (a verdict is "
                             f"computed by the rule, never typed), got {','.join(cols)}")
        for line, r in enumerate(reader, start=2):
            where = f"{path}:{line}"
            for key in ("id", "section", "claim", "kind", "rule"):
                if not (r.get(key) or "").strip():
                    raise ValueError(f"{where}: empty {key!r}")
            if r["id"] in seen:
                raise ValueError(f"{where}: claim id {r['id']!r} used twice")
            seen.add(r["id"])
            if r["kind"] not in KINDS:
                raise ValueError(f"{where}: kind must be one of {KINDS}, got {r['kind']!r}")
            try:
                args = yaml.safe_load(r["args"] or "{}") or {}
            except yaml.YAMLError as exc:
                raise ValueError(f"{where}: args is not a YAML mapping: {exc}") from exc
            if not isinstance(args, dict):
                raise ValueError(f"{where}: args must be a mapping like {{dataset: ohsumed}}, "
                                 f"got {r['args']!r}")
            rows.append({**r, "args": _numbers(args), "experiments": (r["experiments"] or "").split(),
                         "where": where})
    return rows


_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)$")


def _numbers(obj: Any) -> Any:
    """YAML 1.1 reads ``1e-4`` as a string: such strings become floats (recursively)."""
    if isinstance(obj, dict):
        return {k: _numbers(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_numbers(v) for v in obj]
    if isinstance(obj, str) and _NUMBER.match(obj):
        return float(obj)
    return obj
