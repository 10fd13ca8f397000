"""Run specs: the one description of a run, validated and normalized once, and its run id.

A ``RunSpec`` is frozen: it is built once (``RunSpec.create`` or ``RunSpec.from_dict``: every
problem listed at once, defaults filled, the solver's parameters in their canonical spelling)
and hashed into ``run_id`` then.  It names a registered dataset and a registered solver, never
an import path.  Every part of rankbench that names a run (the CLI's jobs, ``make reproduce``'s
plan, the report, the store) builds a RunSpec, so two spellings of one run share one record.

The hashed form (``RunSpec.hashed()``) is the record's ``spec`` and is exactly the one of the
earlier dict specs, so a stored record keeps its run id: (experiment, dataset, variant, fold,
solver, params, seed, data_params, record_history, eval_splits, loader = null) plus ``tune``
and ``warm_start`` (the C values of a warm-started path) when used; presentation fields
(``data_root``, ``note``) and parameters that only change console output (``verbose``) are
not hashed, and a parameter set to None hashes like an absent one (the solver's default).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rankbench.estimators.registry import SOLVERS, Solver
from rankbench.store import canonical, check_experiment_tag, spec_digest

SOLVERS.include("rankbench.peers")  # the harness's solvers: the papers' peer programs

SPLITS = ("train", "vali", "test")
# Parameters that change only console output: not part of a run's identity.
PRESENTATION_PARAMS = ("verbose",)
# Fields a spec dict may hold (the record's ``spec`` plus presentation fields).
FIELDS = ("experiment", "dataset", "variant", "fold", "solver", "params", "seed", "data_params",
          "record_history", "eval_splits", "loader", "tune", "warm_start", "data_root", "note")


@dataclass(frozen=True, kw_only=True)
class RunSpec:
    """One run: (dataset, variant, fold, solver, params, seed, ...), validated and hashed once.

    ``path``: the sorted C values of the warm-started path this run is one point of (hashed as
    ``warm_start``; params["C"] among them); its fold's runs are fitted together by the
    solver's declared path.  ``tune``: choose one parameter on validation inside the run
    (``rankbench.tuning``).  ``data_root`` and ``note`` say where or how to show things.
    """

    experiment: str = "default"
    dataset: str
    variant: str | None = None
    fold: int
    solver: str
    params: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    data_params: dict[str, Any] = field(default_factory=dict)
    record_history: bool = False
    eval_splits: tuple[str, ...] = ("vali", "test")
    tune: dict[str, Any] | None = None
    path: tuple[float, ...] | None = None
    data_root: str | None = None
    note: str | None = None
    run_id: str = field(default="", compare=False)

    @classmethod
    def create(cls, **fields: Any) -> RunSpec:
        """A validated, normalized spec with its run id; ValueError listing every problem."""
        problems: list[str] = []
        spec = cls._normalized(fields, problems)
        if problems:
            raise ValueError("invalid run spec: " + "; ".join(problems))
        object.__setattr__(spec, "run_id", spec_digest(spec.hashed()))
        return spec

    @classmethod
    def from_dict(cls, spec: dict[str, Any]) -> RunSpec:
        """The spec of a dict (a record's ``spec``, a hand-written run): fields of ``FIELDS``."""
        if isinstance(spec, RunSpec):
            return spec
        if not isinstance(spec, dict):
            raise ValueError(f"a run spec is a dict, got {type(spec).__name__}")
        unknown = sorted(set(spec) - set(FIELDS))
        if unknown:
            raise ValueError(f"unknown run spec field(s) {unknown}; known: {list(FIELDS)}")
        if spec.get("loader") is not None:
            raise ValueError(f"run spec field 'loader' ({spec['loader']!r}) names an import path; "
                             "a run names a registered dataset instead (rankbench.data."
                             "register_dataset), never code to import")
        fields = {k: v for k, v in spec.items() if k != "loader" and v is not None}
        if "warm_start" in fields:
            fields["path"] = fields.pop("warm_start")
        return cls.create(**fields)

    @classmethod
    def _normalized(cls, f: dict[str, Any], problems: list[str]) -> RunSpec:
        out: dict[str, Any] = {}
        for k in ("dataset", "solver"):
            v = f.get(k)
            if not isinstance(v, str) or not v:
                problems.append(f"{k!r} must be a non-empty string, got {v!r}")
            out[k] = v
        try:
            out["experiment"] = check_experiment_tag(f.get("experiment", "default"))
        except ValueError as exc:
            problems.append(str(exc))
            out["experiment"] = "default"
        for k, low in (("fold", 1), ("seed", 0)):
            v = f.get(k, 0 if k == "seed" else None)
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < low:
                problems.append(f"{k!r} must be an integer >= {low}, got {v!r}")
                v = low
            out[k] = int(v)
        for k in ("params", "data_params"):
            v = f.get(k, {})
            if not isinstance(v, dict):
                problems.append(f"{k!r} must be a dict, got {type(v).__name__}")
                v = {}
            out[k] = dict(v)
        splits = list(f.get("eval_splits", ("vali", "test")))
        if not splits or any(s not in SPLITS for s in splits):
            problems.append(f"'eval_splits' must be a non-empty subset of {SPLITS}, got {splits}")
        out["eval_splits"] = tuple(splits)
        out["record_history"] = bool(f.get("record_history", False))
        out["variant"] = f.get("variant")
        for k in ("data_root", "note"):
            out[k] = None if f.get(k) is None else str(f[k])
        _dataset(out["dataset"], problems)
        solver = _solver(out["solver"], problems)
        if solver is not None:
            try:
                out["params"] = solver.canonical(out["params"])
            except ValueError as exc:
                problems.append(f"'params': {exc}")
        out["tune"] = _tune(f.get("tune"), problems)
        out["path"] = _path(f.get("path"), out, solver, problems)
        unknown = sorted(set(f) - {fl.name for fl in dataclasses.fields(cls)} - {"run_id"})
        if unknown:
            problems.append(f"unknown field(s) {unknown}")
        return cls(**out)

    def hashed(self) -> dict[str, Any]:
        """The part of the spec that identifies the run: the record's ``spec``."""
        h: dict[str, Any] = {
            "experiment": self.experiment, "dataset": self.dataset, "variant": self.variant,
            "fold": self.fold, "solver": self.solver,
            "params": {k: v for k, v in self.params.items()
                       if k not in PRESENTATION_PARAMS and v is not None},
            "seed": self.seed, "data_params": self.data_params,
            "record_history": self.record_history, "eval_splits": list(self.eval_splits),
            "loader": None,  # the earlier import-path field: always null, kept for the run ids
        }
        if self.tune is not None:
            h["tune"] = self.tune
        if self.path is not None:
            h["warm_start"] = list(self.path)
        return canonical(h)

    def to_dict(self) -> dict[str, Any]:
        """The hashed form plus the presentation fields that are set."""
        d = self.hashed()
        d["params"] = dict(self.params)
        for k in ("data_root", "note"):
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        return d

    def with_params(self, **params: Any) -> RunSpec:
        """The same run with ``params`` changed (a new spec, a new run id)."""
        return RunSpec.from_dict({**self.to_dict(), "params": {**self.params, **params}})

    def path_members(self) -> list[RunSpec]:
        """The specs of every C of this spec's path, increasing C ([self] without a path)."""
        if self.path is None:
            return [self]
        return [self.with_params(C=c) for c in self.path]

    def path_key(self) -> str | None:
        """What the runs of one path share (their spec but params.C); None without a path."""
        if self.path is None:
            return None
        h = self.hashed()
        h["params"] = {k: v for k, v in h["params"].items() if k != "C"}
        return json.dumps(h, sort_keys=True)

    def solver_entry(self) -> Solver:
        """The registered solver this spec names."""
        return SOLVERS.get(self.solver)


def _solver(name: Any, problems: list[str]) -> Solver | None:
    if not isinstance(name, str) or not name:
        return None
    try:
        return SOLVERS.get(name)
    except ValueError as exc:
        problems.append(str(exc))
        return None


def _dataset(name: Any, problems: list[str]) -> None:
    """A problem unless ``name`` is a registered data set (a name, never a path or code)."""
    if not isinstance(name, str) or not name:
        return
    from rankbench.data.registry import dataset_names
    from rankbench.plugins import closest

    known = dataset_names()
    if name not in known:
        problems.append(f"unknown dataset {name!r}{closest(name, known)}; known: {', '.join(known)}")


def _tune(tune: Any, problems: list[str]) -> dict[str, Any] | None:
    if tune is None:
        return None
    from rankbench.tuning import check_tune

    bad = check_tune(tune)
    if bad:
        problems.append("'tune': " + "; ".join(bad))
        return None
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in tune.items()}


def _path(path: Any, out: dict[str, Any], solver: Solver | None,
          problems: list[str]) -> tuple[float, ...] | None:
    """A warm-started path's C values, sorted; a problem unless params.C is one of them."""
    if path is None:
        return None
    if out["tune"] is not None:
        problems.append("'warm_start' and 'tune' exclude each other (a tuned run chooses its own "
                        "parameter)")
    try:
        Cs = sorted(float(c) for c in path)
    except (TypeError, ValueError):
        problems.append(f"'warm_start' must be a list of C values, got {path!r}")
        return None
    if solver is not None:
        problems.extend(f"'warm_start': {p}" for p in solver.path_problems(out["params"], Cs))
    C = out["params"].get("C")
    if isinstance(C, bool) or not isinstance(C, int | float) or float(C) not in Cs:
        problems.append(f"'warm_start': params.C ({C!r}) must be one of the path's C values {Cs}")
    return tuple(Cs)


def run_id(spec: RunSpec | dict[str, Any]) -> str:
    """sha1 of the canonical JSON of the spec's hashed form (``RunSpec.hashed``)."""
    return RunSpec.from_dict(spec).run_id
