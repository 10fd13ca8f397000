"""Reading numbers out of stored records: planned runs, dotted metric paths, selection, fold means."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from rankbench.config import DataUse

_METRIC_BLOCKS = ("train", "vali", "test")


@dataclass
class PlannedRun:
    """One run spec of an experiment, how its dataset was served, and its stored record."""

    spec: dict[str, Any]
    resolution: DataUse
    dataset_key: str
    record: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """Whether a stored record with status ok is attached."""
        return self.record is not None and self.record.get("status") == "ok"

    @property
    def status(self) -> str:
        """'ok', 'failed', 'skipped' (the solver cannot run here) or 'missing' (no record)."""
        return "missing" if self.record is None else str(self.record.get("status"))


def value(record: dict[str, Any] | None, path: str) -> float | None:
    """``record`` value at a dotted path: ``test.ndcg@10`` (metrics), ``train.wall_s``, ``extra.x``.

    ``train.<metric>`` looks in the training-split metrics first, then in the timing block
    (``train`` holds both in the record schema). Missing or non-finite values give None.
    """
    if record is None:
        return None
    block, _, key = path.partition(".")
    candidates = []
    if block in _METRIC_BLOCKS:
        candidates.append((record.get("metrics") or {}).get(block) or {})
    if block in ("train", "extra", "params"):
        candidates.append(record.get(block) or {})
    for c in candidates:
        if key in c and c[key] is not None:
            v = c[key]
            if isinstance(v, bool):
                return float(v)
            if isinstance(v, int | float) and math.isfinite(float(v)):
                return float(v)
    return None


def choose_per_fold(runs: list[PlannedRun], metric: str) -> dict[tuple[str, str], list[PlannedRun]]:
    """Per (dataset entry, solver), the run selected in each fold (``rankbench.selection``'s rule).

    Model selection as in LETOR: the validation metric picks the hyper-parameters fold by
    fold, with the selection module's seed averaging and tie rule; a fold where no run has
    the metric has no selection.  Runs of several seeds of the chosen parameters are all
    returned for that fold.
    """
    import pandas as pd

    from rankbench.selection import select_per_fold
    from rankbench.store import flatten_record

    ok = [r for r in runs if r.ok]
    if not ok:
        return {}
    frame = pd.DataFrame([_row(r, flatten_record) for r in ok])
    if metric not in frame.columns:
        return {}
    sel = select_per_fold(frame, metric, keys=("dataset_key", "fold", "solver"))
    by_id = {r.record["run_id"]: r for r in ok}
    chosen: dict[tuple[str, str], list[PlannedRun]] = {}
    for row in sel.sort_values(["dataset_key", "solver", "fold"], kind="mergesort").itertuples():
        chosen.setdefault((row.dataset_key, row.solver), []).extend(by_id[i] for i in row.run_ids)
    return chosen


def _row(run: PlannedRun, flatten_record) -> dict[str, Any]:
    """A record's frame row with its identity taken from the planned spec (what was asked)."""
    import json

    row = {k: v for k, v in flatten_record(run.record).items() if not k.startswith("params")}
    params = {k: v for k, v in run.spec["params"].items() if v is not None}
    row.update({"dataset_key": run.dataset_key, "fold": run.spec["fold"],
                "solver": run.spec["solver"], "seed": run.spec.get("seed", 0),
                "params": json.dumps(params, sort_keys=True),
                **{f"params.{k}": v for k, v in params.items()}})
    return row


def not_converged(runs: list[PlannedRun]) -> list[PlannedRun]:
    """The ok runs whose solver said it stopped short of its accuracy (``train.converged`` false)."""
    return [r for r in runs if r.ok and (r.record.get("train") or {}).get("converged") is False]


def not_converged_text(runs: list[PlannedRun]) -> str:
    """' (2 of 5 runs not converged: folds 1, 3)', or '' when every run converged."""
    bad = not_converged(runs)
    if not bad:
        return ""
    folds = ", ".join(str(r.spec["fold"]) for r in bad)
    return f" ({len(bad)} of {len(runs)} runs not converged: fold{'s' * (len(bad) > 1)} {folds})"


def flag(row: dict[str, Any], runs: list[PlannedRun], *columns: str) -> dict[str, Any]:
    """Mark ``columns`` of ``row`` (a dagger in Markdown) and say so in its note when a run of
    ``runs`` did not converge: a number from an unconverged solver is never shown silently."""
    bad = not_converged(runs)
    if bad:
        row["_flag"] = set(row.get("_flag", set())) | set(columns)
        msg = f"† {len(bad)} of {len(runs)} runs did not converge"
        row["note"] = f"{row['note']}; {msg}" if row.get("note") else msg
    return row


def skipped_reason(runs: list[PlannedRun]) -> str | None:
    """Why the runs were not run here (a skipped record's message, e.g. a peer not built), or None."""
    for r in runs:
        if r.status == "skipped":
            why = str(r.record.get("error") or "solver unavailable").splitlines()[0]
            if "make peers" in why:
                return "peer not built (run make peers): " + why
            return "not run here: " + why
    return None


def mean_of(runs: list[PlannedRun], metric: str) -> float | None:
    """Mean of ``metric`` over ``runs`` (None when any run lacks it)."""
    vals = [value(r.record, metric) for r in runs]
    if not vals or any(v is None for v in vals):
        return None
    return float(np.mean(vals))


def sd_of(runs: list[PlannedRun], metric: str) -> float | None:
    """Standard deviation over ``runs`` (folds) of ``metric``; None with fewer than two values."""
    vals = [v for v in (value(r.record, metric) for r in runs) if v is not None]
    return float(np.std(vals)) if len(vals) >= 2 else None


def sum_of(runs: list[PlannedRun], metric: str) -> float | None:
    """Sum of ``metric`` over ``runs`` (None when any run lacks it)."""
    vals = [value(r.record, metric) for r in runs]
    if not vals or any(v is None for v in vals):
        return None
    return float(np.sum(vals))


def per_query(runs: list[PlannedRun], metric: str, split: str = "test") -> tuple[np.ndarray, np.ndarray] | None:
    """Concatenated per-query ``metric`` over ``runs`` (folds), keyed by (fold, qid) strings.

    Returns (keys, values) sorted by key so two solvers' arrays pair up query by query;
    None when a run did not store per-query values for ``metric``.
    """
    keys, vals = [], []
    for r in runs:
        pq = ((r.record or {}).get("per_query") or {}).get(split) or {}
        if metric not in pq or "qid" not in pq:
            return None
        for q, v in zip(pq["qid"], pq[metric], strict=True):
            keys.append(f"{r.spec['fold']}:{q}")
            vals.append(np.nan if v is None else float(v))
    order = np.argsort(np.asarray(keys))
    return np.asarray(keys)[order], np.asarray(vals, dtype=float)[order]


def paired_values(a_runs: list[PlannedRun], b_runs: list[PlannedRun],
                  metric: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Per-query test ``metric`` of two selections on the same queries (all folds), or None
    when either lacks per-query values or they cover different queries."""
    a, b = per_query(a_runs, metric), per_query(b_runs, metric)
    if a is None or b is None or a[0].shape != b[0].shape or not np.array_equal(a[0], b[0]):
        return None
    return a[1], b[1]


def table_tests(pairs: dict[Any, tuple[np.ndarray, np.ndarray] | None]) -> dict[Any, dict]:
    """One table's paired comparisons (``rankbench.significance.compare_systems``: randomization
    p-value, Holm-Bonferroni over the family, bootstrap interval, d_z), keyed like ``pairs``."""
    from rankbench.significance import compare_systems

    usable = {k: v for k, v in pairs.items()
              if v is not None and (~(np.isnan(v[0]) | np.isnan(v[1]))).sum() >= 2}
    rows = compare_systems([(str(i), a, b) for i, (a, b) in enumerate(usable.values())])
    return dict(zip(usable, rows, strict=True))


def history(record: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The convergence history stored in ``record`` (empty list when none)."""
    if not record:
        return []
    return list(record.get("history") or [])
