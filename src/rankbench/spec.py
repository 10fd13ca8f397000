"""Run specs: the one description of a run, its normalization, and its run id.

A *run spec* is a plain dict (docs/interfaces.md): (experiment, dataset, variant, fold,
solver, params, seed, data_params, record_history, eval_splits, loader, tune, warm_start), plus
presentation fields that are not part of the run's identity.  Every part of rankbench that
names a run (the CLI's jobs, ``make reproduce``'s plan, the report, the store) goes
through ``normalize_spec`` and ``run_id`` here, so two spellings of one run share one record.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np

from rankbench.store import check_experiment_tag, to_jsonable

SPLITS = ("train", "vali", "test")

# Spec fields and their defaults; fields absent here are rejected (typos must not pass).
SPEC_DEFAULTS: dict[str, Any] = {
    "experiment": "default",
    "dataset": None,
    "variant": None,
    "fold": None,
    "solver": None,
    "params": {},
    "seed": 0,
    "data_params": {},
    "record_history": False,
    "eval_splits": ["vali", "test"],
    "loader": None,
    # inner tuning of one parameter on validation before training (rankbench.tuning)
    "tune": None,
    # the C values of a warm-started path this run is one point of (sorted; params.C among
    # them): its fold's runs are fitted together by ``ranksvm_path`` (rankbench.runner.run_path)
    "warm_start": None,
}
# Fields that say where or how to show things, not what is computed: not hashed.
PRESENTATION_FIELDS = ("data_root", "note")
# Solver parameters that change only console output.
PRESENTATION_PARAMS = ("verbose",)


def normalize_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """Fill defaults and check a run spec; ValueError naming the bad field."""
    if not isinstance(spec, dict):
        raise ValueError(f"a run spec is a dict, got {type(spec).__name__}")
    unknown = sorted(set(spec) - set(SPEC_DEFAULTS) - set(PRESENTATION_FIELDS))
    if unknown:
        raise ValueError(
            f"unknown run spec field(s) {unknown}; known: {sorted(SPEC_DEFAULTS)} "
            f"and presentation fields {list(PRESENTATION_FIELDS)}"
        )
    out = {k: spec.get(k, v) for k, v in SPEC_DEFAULTS.items()}
    for k in PRESENTATION_FIELDS:
        if spec.get(k) is not None:
            out[k] = spec[k]
    for k in ("dataset", "solver"):
        if not isinstance(out[k], str) or not out[k]:
            raise ValueError(f"run spec field {k!r} must be a non-empty string, got {out[k]!r}")
    check_experiment_tag(out["experiment"])
    fold = out["fold"]
    if isinstance(fold, bool) or not isinstance(fold, int | np.integer) or fold < 1:
        raise ValueError(f"run spec field 'fold' must be an integer >= 1, got {fold!r}")
    out["fold"] = int(fold)
    seed = out["seed"]
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"run spec field 'seed' must be an integer >= 0, got {seed!r}")
    out["seed"] = int(seed)
    for k in ("params", "data_params"):
        if not isinstance(out[k], dict):
            raise ValueError(f"run spec field {k!r} must be a dict, got {type(out[k]).__name__}")
        out[k] = dict(out[k])
    splits = list(out["eval_splits"])
    bad = [s for s in splits if s not in SPLITS]
    if bad or not splits:
        raise ValueError(f"eval_splits must be a non-empty subset of {SPLITS}, got {splits}")
    out["eval_splits"] = splits
    out["record_history"] = bool(out["record_history"])
    if out["tune"] is not None:
        from rankbench.tuning import check_tune

        problems = check_tune(out["tune"])
        if problems:
            raise ValueError("run spec field 'tune': " + "; ".join(problems))
        out["tune"] = {k: (list(v) if isinstance(v, tuple) else v) for k, v in out["tune"].items()}
    if out["warm_start"] is not None:
        out["warm_start"] = _check_warm_start(out)
    return out


def _check_warm_start(spec: dict[str, Any]) -> list[float]:
    """A warm-start path's C values, sorted; ValueError unless params.C is one of them."""
    from rankbench.estimators.ranksvm import check_Cs

    try:
        Cs = [float(c) for c in check_Cs(spec["warm_start"])]
    except ValueError as exc:
        raise ValueError(f"run spec field 'warm_start': {exc}") from None
    if spec["tune"] is not None:
        raise ValueError("run spec fields 'warm_start' and 'tune' exclude each other (a tuned run "
                         "chooses its own parameter)")
    C = spec["params"].get("C")
    if isinstance(C, bool) or not isinstance(C, int | float) or float(C) not in Cs:
        raise ValueError(f"run spec field 'warm_start': params.C ({C!r}) must be one of the path's "
                         f"C values {Cs}")
    return Cs


def _canonical(obj: Any) -> Any:
    # 1 and 1.0 (C=1 from YAML, C=1.0 from a sweep) must hash alike.
    if isinstance(obj, dict):
        return {str(k): _canonical(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_canonical(v) for v in obj]
    if isinstance(obj, float) and obj.is_integer():
        return int(obj)
    return obj


def hashed_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """The part of a spec that identifies the run (presentation fields removed)."""
    s = normalize_spec(spec)
    for k in PRESENTATION_FIELDS:
        s.pop(k, None)
    for k in ("tune", "warm_start"):  # absent = not used: earlier runs keep their run ids
        if s[k] is None:
            del s[k]
    # None means "the solver's default", exactly like leaving the parameter out
    s["params"] = {k: v for k, v in s["params"].items()
                   if k not in PRESENTATION_PARAMS and v is not None}
    return _canonical(to_jsonable(s))


def run_id(spec: dict[str, Any]) -> str:
    """sha1 of the canonical JSON of the spec minus presentation fields (data_root, note, verbose).

    A parameter set to None hashes like an absent one (both mean the solver's default),
    so a Hydra job and a hand-written spec of the same run share one record.
    """
    text = json.dumps(hashed_spec(spec), sort_keys=True, separators=(",", ":"))
    return hashlib.sha1(text.encode("utf-8")).hexdigest()
