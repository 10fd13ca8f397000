"""Harness configuration: structured schema, validation, and run specs from a composed Hydra config.

``validate(cfg)`` checks a composed config (types through an OmegaConf structured
schema, then meaning: known solver, positive C, known dataset and present files,
fold lists, per-fold values) and raises one ``ConfigError`` listing every problem
before any data is read.  ``build_specs`` turns a valid config into the run specs of
one Hydra job: one per fold (times the solver grid with ``use_grid=true``).
"""

from __future__ import annotations

import importlib
import itertools
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from rankbench.store import check_experiment_tag

MODES = ("select", "fixed", "per_fold")
SPLITS = ("train", "vali", "test")
# Keys of metrics.evaluate (docs/interfaces.md); selection and report columns use them.
METRIC_KEYS = (
    tuple(f"ndcg@{k}" for k in range(1, 11))
    + ("map", "mrr", "auc", "mauc", "pairwise_accuracy")
    + tuple(f"p@{k}" for k in range(1, 11))
    + tuple(f"p@{k}_macro" for k in range(1, 11))
)
# Solver config keys that are not estimator parameters.
SOLVER_META_KEYS = ("name", "grid")
LOG10_PREFIX = "log10_"

# Parameter rules shared by every solver family (a solver's own checks run in fit).
_POSITIVE = ("C", "lam", "tol", "learning_rate", "sigma", "alpha")
_POSITIVE_INT = ("max_iter", "n_iter", "n_estimators")


class ConfigError(ValueError):
    """An invalid harness configuration; the message lists every problem found."""

    def __init__(self, problems: list[str], where: str = ""):
        self.problems = list(problems)
        head = "invalid rankbench configuration" + (f" ({where})" if where else "")
        super().__init__(head + ":\n  - " + "\n  - ".join(self.problems))


@dataclass
class DatasetConf:
    """Which data set, variant and folds; ``data_params`` go to the data layer's loader."""

    name: str = "???"
    variant: str | None = None
    folds: list[int] = field(default_factory=lambda: [1, 2, 3, 4, 5])
    data_params: dict[str, Any] = field(default_factory=dict)
    loader: str | None = None
    eval_splits: list[str] | None = None
    report_metrics: list[str] | None = None


@dataclass
class ProtocolConf:
    """Fold protocol and model selection (select | fixed | per_fold)."""

    mode: str = "select"
    folds: list[int] | None = None
    selection_metric: str = "vali.ndcg@10"
    report_metrics: list[str] = field(default_factory=lambda: ["test.ndcg@10", "test.map"])
    per_fold: dict[str, list[Any]] = field(default_factory=dict)
    eval_splits: list[str] = field(default_factory=lambda: ["vali", "test"])


@dataclass
class HarnessConf:
    """The whole composed config minus ``hydra`` (the solver block is free-form)."""

    dataset: DatasetConf = field(default_factory=DatasetConf)
    solver: dict[str, Any] = field(default_factory=dict)
    protocol: ProtocolConf = field(default_factory=ProtocolConf)
    experiment_name: str = "adhoc"
    seed: int = 0
    data_root: str | None = None
    store: str = "results/store"
    n_jobs: int = 1
    progress: bool = True
    record_history: bool = False
    use_grid: bool = False
    rerun: bool = False
    isolate: bool = False
    timeout_s: float | None = None
    solver_modules: list[str] = field(default_factory=list)
    preflight: bool = True


def import_solver_modules(modules: list[str]) -> None:
    """Import user modules so their ``@register_solver`` decorators run."""
    for mod in modules:
        try:
            importlib.import_module(mod)
        except ImportError as exc:
            raise ConfigError([f"solver_modules: cannot import {mod!r}: {exc}"]) from None


def to_container(cfg: Any) -> dict[str, Any]:
    """The resolved config as plain Python (without the ``hydra`` node)."""
    if isinstance(cfg, DictConfig):
        try:
            # the hydra node needs a live HydraConfig to resolve; it is not ours anyway
            keep = [k for k in cfg.keys() if k != "hydra"]
            data = OmegaConf.to_container(OmegaConf.masked_copy(cfg, keep), resolve=True)
        except OmegaConfBaseException as exc:
            raise ConfigError([f"cannot resolve the config: {exc}"]) from None
    else:
        data = dict(cfg)
    data.pop("hydra", None)
    return data


def _typed(data: dict[str, Any]) -> dict[str, Any]:
    schema = OmegaConf.structured(HarnessConf)
    try:
        merged = OmegaConf.merge(schema, OmegaConf.create(data))
    except OmegaConfBaseException as exc:
        msg = str(exc).split("\n")[0]
        key = getattr(exc, "full_key", None)
        raise ConfigError([f"{key}: {msg}" if key else msg]) from None
    return OmegaConf.to_container(merged, resolve=True)


def solver_params(solver: dict[str, Any]) -> dict[str, Any]:
    """Estimator parameters of a solver config: meta keys dropped, ``log10_X`` mapped to ``X``."""
    params = {k: v for k, v in solver.items() if k not in SOLVER_META_KEYS}
    for key in [k for k in params if k.startswith(LOG10_PREFIX)]:
        value = params.pop(key)
        if value is not None:
            params[key[len(LOG10_PREFIX):]] = 10.0 ** float(value)
    return params


def check_params(params: dict[str, Any], prefix: str = "solver") -> list[str]:
    """Problems with generic parameter values (positive C, lam, tol ...; positive iteration counts)."""
    problems = []
    for k, v in params.items():
        if k in _POSITIVE and v is not None:
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v <= 0:
                problems.append(f"{prefix}.{k} must be a positive finite number, got {v!r}")
        if k in _POSITIVE_INT and v is not None:
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                problems.append(f"{prefix}.{k} must be an integer >= 1, got {v!r}")
        if k == "num_leaves" and (isinstance(v, bool) or not isinstance(v, int) or v < 2):
            problems.append(f"{prefix}.num_leaves must be an integer >= 2, got {v!r}")
        if k == "sampler" and v is not None:
            # SPD builds its sampler only in fit: check the name here, before any work
            from rankbench.optim.samplers import SAMPLERS

            if v not in SAMPLERS:
                problems.append(f"{prefix}.sampler must be one of {sorted(SAMPLERS)}, got {v!r}")
        if k == "early_stopping_rounds" and v is not None and (
            isinstance(v, bool) or not isinstance(v, int) or v < 1
        ):
            problems.append(f"{prefix}.early_stopping_rounds must be null or an integer >= 1, got {v!r}")
    return problems


def _check_metric(name: str, what: str, splits: tuple[str, ...]) -> str | None:
    split, _, key = name.partition(".")
    if split not in splits or key not in METRIC_KEYS:
        return (f"{what} {name!r} is not '<split>.<metric>' with split in {list(splits)} "
                f"and metric one of {', '.join(METRIC_KEYS)}")
    return None


def grid_points(solver: dict[str, Any]) -> list[dict[str, Any]]:
    """Every combination of ``solver.grid`` (sorted keys), as parameter overrides."""
    grid = solver.get("grid") or {}
    keys = sorted(grid)
    for k in keys:
        if not isinstance(grid[k], list) or not grid[k]:
            raise ConfigError([f"solver.grid.{k} must be a non-empty list, got {grid[k]!r}"])
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(grid[k] for k in keys))]


def validate(cfg: Any, check_data: bool = True) -> dict[str, Any]:
    """Check a composed config; return it as a plain dict, or raise one ConfigError listing every problem."""
    data = _typed(to_container(cfg))
    import_solver_modules(data["solver_modules"])
    problems: list[str] = []
    try:
        check_experiment_tag(data["experiment_name"])
    except ValueError as exc:
        problems.append(f"experiment_name: {exc}")
    if data["seed"] < 0:
        problems.append(f"seed must be >= 0, got {data['seed']}")
    if data["timeout_s"] is not None and not data["timeout_s"] > 0:
        problems.append(f"timeout_s must be > 0 or null, got {data['timeout_s']}")
    if data["n_jobs"] == 0 or data["n_jobs"] < -1:
        problems.append(f"n_jobs must be >= 1 or -1 (all cores), got {data['n_jobs']}")

    # ---- solver
    from rankbench.estimators.registry import make_solver, solver_names

    solver = data["solver"]
    name = solver.get("name")
    known = solver_names()
    params = solver_params(solver)
    if not isinstance(name, str) or name not in known:
        problems.append(
            f"unknown solver {name!r}; registered solvers: {', '.join(known) or '(none)'}"
        )
    else:
        points = [{}]
        if data["use_grid"]:
            try:
                points = grid_points(solver)
            except ConfigError as exc:
                problems.extend(exc.problems)
        pf = data["protocol"]["per_fold"] if data["protocol"]["mode"] == "per_fold" else {}
        pf = {k: v for k, v in pf.items() if isinstance(v, list) and v}
        # every parameter set a job will build: grid points, and each fold's given values
        n_given = max((len(v) for v in pf.values()), default=1)
        points = [{**pt, **{k: v[min(i, len(v) - 1)] for k, v in pf.items()}}
                  for pt in points for i in range(n_given)]
        for point in points:
            p = {**params, **point}
            bad = (check_params({k: v for k, v in p.items() if k not in pf}, "solver")
                   + check_params({k: p[k] for k in pf}, "protocol.per_fold"))
            problems.extend(b for b in bad if b not in problems)
            if not bad:
                try:
                    make_solver(name, p)
                except Exception as exc:  # noqa: BLE001 - any constructor error is a config error
                    problems.append(f"solver {name!r} refuses parameters {p}: {type(exc).__name__}: {exc}")
                    break

    # ---- protocol
    proto = data["protocol"]
    if proto["mode"] not in MODES:
        problems.append(f"protocol.mode must be one of {MODES}, got {proto['mode']!r}")
    bad = _check_metric(proto["selection_metric"], "protocol.selection_metric", ("vali", "train"))
    if bad:
        problems.append(bad)
    for m in proto["report_metrics"]:
        bad = _check_metric(m, "protocol.report_metrics entry", SPLITS)
        if bad:
            problems.append(bad)
    splits = data["dataset"]["eval_splits"] or proto["eval_splits"]
    if not splits or any(s not in SPLITS for s in splits):
        problems.append(f"eval_splits must be a non-empty subset of {list(SPLITS)}, got {splits}")
    elif proto["mode"] == "select" and proto["selection_metric"].split(".")[0] not in splits:
        problems.append(
            f"protocol.mode=select picks on {proto['selection_metric']} but dataset "
            f"{data['dataset']['name']!r} evaluates only {splits}: use protocol=fixed"
        )
    if data["dataset"]["report_metrics"]:
        # a data set can say what is worth reporting (AUC for one-query tasks)
        proto["report_metrics"] = list(data["dataset"]["report_metrics"])
        for m in proto["report_metrics"]:
            bad = _check_metric(m, "dataset.report_metrics entry", SPLITS)
            if bad:
                problems.append(bad)

    # ---- dataset and folds
    ds = data["dataset"]
    folds = proto["folds"] if proto["folds"] is not None else ds["folds"]
    if not folds or len(set(folds)) != len(folds) or any(f < 1 for f in folds):
        problems.append(f"folds must be distinct integers >= 1, got {folds}")
    elif any(f not in ds["folds"] for f in folds):
        problems.append(f"protocol.folds {folds} not all among dataset {ds['name']!r} folds {ds['folds']}")
    if proto["mode"] == "per_fold":
        if not proto["per_fold"]:
            problems.append("protocol.mode=per_fold needs protocol.per_fold, e.g. +protocol.per_fold.C=[c1,...,c5]")
        for k, values in proto["per_fold"].items():
            if not isinstance(values, list) or len(values) != len(folds or []):
                problems.append(
                    f"protocol.per_fold.{k} must list one value per fold ({len(folds or [])} folds), got {values!r}"
                )
    if check_data:
        problems.extend(_check_dataset(ds, data["data_root"]))
    if problems:
        raise ConfigError(problems)
    data["folds"] = folds
    data["eval_splits"] = splits
    return data


def _check_dataset(ds: dict[str, Any], root: str | None) -> list[str]:
    if ds["loader"]:
        mod, sep, fn = ds["loader"].partition(":")
        try:
            getattr(importlib.import_module(mod), fn) if sep else None
        except (ImportError, AttributeError) as exc:
            return [f"dataset.loader {ds['loader']!r} cannot be imported: {exc}"]
        return [] if sep else [f"dataset.loader {ds['loader']!r} must look like 'module:function'"]
    from rankbench.data import registry

    if ds["name"] not in registry.list_datasets():
        return [f"unknown dataset {ds['name']!r}; known: {', '.join(registry.list_datasets())}"]
    try:
        if registry.dataset_available(ds["name"], ds["variant"], root):
            return []
    except ValueError as exc:
        return [f"dataset {ds['name']!r}: {exc}"]
    if ds["data_params"].get("allow_synthetic"):
        return []  # the data layer generates a labelled stand-in
    alt = "+dataset.data_params.allow_synthetic=true for a labelled synthetic stand-in"
    try:
        # absent data fails fast here, with the data layer's message of what goes where
        registry.load_fold(ds["name"], ds["folds"][0], "train", ds["variant"], root)
    except registry.DatasetNotFound as exc:
        # its API hint (allow_synthetic=True) has a command-line form here
        msg, n = re.subn(r"pass allow_synthetic=True for a labelled (synthetic )?stand-in", alt, str(exc))
        return [msg if n else f"{msg}; or {alt}"]
    except Exception:  # noqa: BLE001 - any other problem: the generic message below
        pass
    where = f"under data_root {root}" if root else "because no data root is set (RANKBENCH_DATA or data_root=...)"
    label = ds["name"] + (f" (variant {ds['variant']})" if ds["variant"] else "")
    return [f"dataset {label} not found {where}; or {alt}"]


def resolve_path(path: str, base: str | os.PathLike | None) -> str:
    """``path`` made absolute against ``base`` (the directory rankbench was started from)."""
    p = Path(os.path.expanduser(path))
    if not p.is_absolute() and base is not None:
        p = Path(base) / p
    return str(p)


def build_specs(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Run specs of one job from a validated config: one per fold (times the grid with use_grid)."""
    solver = data["solver"]
    ds = data["dataset"]
    proto = data["protocol"]
    base = solver_params(solver)
    points = grid_points(solver) if data["use_grid"] else [{}]
    specs = []
    for point in points:
        for i, fold in enumerate(data["folds"]):
            params = {**base, **point}
            if proto["mode"] == "per_fold":
                params.update({k: v[i] for k, v in proto["per_fold"].items()})
            spec = {
                "experiment": data["experiment_name"],
                "dataset": ds["name"],
                "variant": ds["variant"],
                "fold": int(fold),
                "solver": solver["name"],
                "params": params,
                "seed": data["seed"],
                "data_params": dict(ds["data_params"]),
                "record_history": data["record_history"],
                "eval_splits": list(data["eval_splits"]),
                "loader": ds["loader"],
            }
            if data["data_root"]:
                spec["data_root"] = data["data_root"]
            specs.append(spec)
    return specs
