"""Reading numbers out of stored records: dotted metric paths, model selection, fold means."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np

from rankbench.report.plan import PlannedRun

_METRIC_BLOCKS = ("train", "vali", "test")


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
    """Per (dataset, solver), the ok run with the best ``metric`` in each fold (first on ties).

    Model selection as in LETOR: the validation metric picks the hyper-parameters fold by
    fold; folds whose runs lack the metric fall back to the first ok run of that fold.
    """
    groups: dict[tuple[str, str, int], list[PlannedRun]] = defaultdict(list)
    for r in runs:
        if r.ok:
            groups[(r.dataset_key, r.spec["solver"], r.spec["fold"])].append(r)
    chosen: dict[tuple[str, str], list[PlannedRun]] = defaultdict(list)
    for (ds, solver, _fold), rs in sorted(groups.items(), key=lambda kv: kv[0]):
        scored = [(value(r.record, metric), i, r) for i, r in enumerate(rs)]
        have = [t for t in scored if t[0] is not None]
        best = max(have, key=lambda t: (t[0], -t[1]))[2] if have else rs[0]
        chosen[(ds, solver)].append(best)
    return dict(chosen)


def mean_of(runs: list[PlannedRun], metric: str) -> float | None:
    """Mean of ``metric`` over ``runs`` (None when any run lacks it)."""
    vals = [value(r.record, metric) for r in runs]
    if not vals or any(v is None for v in vals):
        return None
    return float(np.mean(vals))


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


def history(record: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The convergence history stored in ``record`` (empty list when none)."""
    if not record:
        return []
    return list(record.get("history") or [])
