"""Inner parameter tuning of one run: choose a parameter on the validation split, then train.

Some experiments fix a parameter the paper chose on validation for the fold at hand and then
run something expensive with it (Sculley 2009, Fig. 2: lambda "determined as optimal for
RankSVM using the validation set for this fold", then 1e8 SPD iterations with their
convergence history).  A run spec's ``tune`` block says how:

    tune: {param: lam, grid: [1e-6, 1e-5, 1e-4], metric: vali.map,
           solver: spd_pegasos, params: {n_iter: 100000}}

Each grid value is fitted with ``solver`` (default: the run's own solver) and ``params``
(merged over the run's parameters) on the training split, scored on the validation split,
and the value is chosen by ``rankbench.selection.select_per_fold`` (the one selection rule:
best metric, ties to the smaller value).  The run then trains with that value; its record
holds every candidate's validation value and the choice (``extra.tuning``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

TUNE_KEYS = ("param", "grid", "metric", "solver", "params")


def check_tune(tune: Any) -> list[str]:
    """Problems of a ``tune`` block (empty when valid or absent)."""
    if tune is None:
        return []
    if not isinstance(tune, dict):
        return [f"tune must be a mapping with keys {list(TUNE_KEYS)}, got {tune!r}"]
    problems = []
    unknown = sorted(set(tune) - set(TUNE_KEYS))
    if unknown:
        problems.append(f"tune has unknown key(s) {unknown}; known: {list(TUNE_KEYS)}")
    if not isinstance(tune.get("param"), str) or not tune.get("param"):
        problems.append("tune.param must name the solver parameter to choose")
    grid = tune.get("grid")
    if not isinstance(grid, list | tuple) or not grid:
        problems.append(f"tune.grid must be a non-empty list of values, got {grid!r}")
    metric = tune.get("metric")
    if not isinstance(metric, str) or not metric.startswith("vali."):
        problems.append(f"tune.metric must be a validation metric such as vali.map, got {metric!r}")
    if tune.get("params") is not None and not isinstance(tune["params"], dict):
        problems.append(f"tune.params must be a mapping, got {tune['params']!r}")
    return problems


def tune_parameter(tune: dict[str, Any], solver: str, params: dict[str, Any], train, vali,
                   make_solver: Callable[[str, dict], Any], fit: Callable[[Any, Any], None],
                   evaluate: Callable[[Any, Any], dict[str, float]]) -> tuple[Any, dict[str, Any]]:
    """(chosen value, ``extra.tuning`` block) for ``tune`` on (train, vali)."""
    import numpy as np
    import pandas as pd

    from rankbench.selection import select_per_fold

    problems = check_tune(tune)
    if problems:
        raise ValueError("; ".join(problems))
    if vali is None:
        raise ValueError("tune needs the validation split, and this dataset has none")
    name, metric = tune["param"], tune["metric"]
    key = metric.partition(".")[2]
    tuner = tune.get("solver") or solver
    rows = []
    for i, v in enumerate(tune["grid"]):
        p = {**params, **(tune.get("params") or {}), name: v}
        est = make_solver(tuner, p)
        fit(est, train)
        scores = np.asarray(est.decision_function(vali.X), dtype=float)
        m = evaluate(vali, scores)
        if key not in m:
            raise ValueError(f"tune.metric {metric!r}: the evaluation has no {key!r} "
                             f"(it has {sorted(m)})")
        rows.append({"status": "ok", "run_id": str(i), "seed": 0, "fold": 0,
                     "params": json.dumps({name: v}), f"params.{name}": v, metric: m[key]})
    sel = select_per_fold(pd.DataFrame(rows), metric, keys=("fold",))
    chosen = tune["grid"][int(sel.iloc[0]["run_id"])]
    block = {"param": name, "metric": metric, "solver": tuner,
             "params": dict(tune.get("params") or {}),
             "candidates": [{"value": tune["grid"][int(r["run_id"])], metric: r[metric]} for r in rows],
             "chosen": chosen}
    return chosen, block
