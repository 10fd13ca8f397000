"""Harness configuration: structured schema, validation, and run specs from a composed Hydra config.

One path for every run, whether a user types ``rankbench ...`` or ``make reproduce`` runs
a paper's experiment config: compose (Hydra) -> ``validate`` -> ``build_specs`` -> run.
``validate(cfg)`` checks a composed config (types through an OmegaConf structured schema,
then meaning: known solver and a valid solver x loss x oracle pairing, positive C, known
dataset, fold lists, per-fold values) and raises one ``ConfigError`` listing every problem
before any data is read.  It also decides how the job's data is served (``DataUse``): the
real files, a declared stand-in (``missing_data=stand_in``, or ``profile=quick``), or
nothing ("data not present", ``missing_data=skip|stand_in``), and whether a declared
``limits`` entry skips the job.  It returns a typed ``Job`` (the settings as
``HarnessConf``, the folds, how the data is served, why it runs nothing), and ``build_specs``
turns a ``Job`` into its ``RunSpec``s: one per fold (times the solver grid with
``use_grid=true``; with ``warm_start=true`` too, each fold's grid of C values runs as one
warm-started path, which the solver declares).  Solver-specific checks belong to each
estimator (``check_params``, run through its registered ``Solver``), never to this module.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import itertools
import os
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from rankbench.metrics.names import METRIC_KEYS  # the one list of metric names
from rankbench.store import check_experiment_tag

if TYPE_CHECKING:
    from rankbench.spec import RunSpec

MODES = ("select", "fixed", "per_fold")
PROFILES = ("full", "quick")
MISSING_DATA = ("error", "skip", "stand_in")
TIERS = ("default", "peers")  # which make target trains an experiment
SPLITS = ("train", "vali", "test")
# Solver config keys that are not estimator parameters.
SOLVER_META_KEYS = ("name", "grid")
LOG10_PREFIX = "log10_"


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
    label: str | None = None  # how tables and figures call it (the papers' name)
    variant: str | None = None
    folds: list[int] = field(default_factory=lambda: [1, 2, 3, 4, 5])
    data_params: dict[str, Any] = field(default_factory=dict)
    path: str | None = None  # dataset=sharded: the sharded folder (conf/dataset/sharded.yaml)
    eval_splits: list[str] | None = None
    report_metrics: list[str] | None = None
    # {dataset, variant, data_params, label}: served when the data is absent and
    # missing_data=stand_in (labelled as a substitution everywhere)
    stand_in: Any = None
    quick_stand_in: Any = None  # the same, served whenever profile=quick
    # a data set a paper names that rankbench cannot read (why, and what to use instead):
    # always "data not present" (or an error with missing_data=error)
    unavailable: str | None = None


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
class MetricsConf:
    """How recorded metrics are computed: ``convention`` (letor | letor4 | trec | exp-log2,
    ``rankbench.metrics``); the default ``letor`` is the papers' (LETOR 3.0's Eval-Score)."""

    convention: str = "letor"


@dataclass
class HarnessConf:
    """The whole composed config minus ``hydra`` (the solver block is free-form)."""

    dataset: DatasetConf = field(default_factory=DatasetConf)
    solver: dict[str, Any] = field(default_factory=dict)
    protocol: ProtocolConf = field(default_factory=ProtocolConf)
    metrics: MetricsConf = field(default_factory=MetricsConf)
    experiment_name: str = "adhoc"
    seed: int = 0
    data_root: str | None = None
    store: str = "results/store"
    n_jobs: int = 1
    progress: bool = True
    record_history: bool = False
    use_grid: bool = False
    # with use_grid: each fold's solver.grid.C values fitted as one warm-started path
    warm_start: bool = False
    rerun: bool = False
    isolate: bool = False
    timeout_s: float | None = None
    # modules whose registrations (solvers, data sets) a job needs: imported before validation
    solver_modules: list[str] = field(default_factory=list)
    preflight: bool = True
    profile: str = "full"
    missing_data: str = "error"
    # values an experiment config looks up by interpolation: ${lookup.C.${dataset.name}}
    lookup: dict[str, Any] = field(default_factory=dict)
    # {solver name: {param: value, grid: {...}}} merged into the solver chosen by a sweep
    per_solver: dict[str, Any] = field(default_factory=dict)
    # {solver name: {n_max: N, reason: "..."}}: jobs with data_params.n > N are skipped
    limits: dict[str, Any] = field(default_factory=dict)
    # a paper artefact's rendering (rankbench.report): renderer, title, reads, options ...
    report: dict[str, Any] = field(default_factory=dict)
    # choose one solver parameter on validation inside each run (rankbench.tuning)
    tune: dict[str, Any] | None = None
    # default: make reproduce trains it; peers: only make reproduce-peers (hours of peer runs)
    tier: str = "default"


@dataclass(frozen=True)
class DataUse:
    """How a job's dataset is served: the real files, a stand-in, or nothing (absent)."""

    key: str                      # the dataset config's name (what the experiment asked for)
    label: str
    present: bool
    dataset: str | None = None    # what is loaded (a stand-in's dataset when substituted)
    variant: str | None = None
    data_params: dict = field(default_factory=dict)
    substitution: str | None = None  # human-readable note when not the real data

    @property
    def served(self) -> str:
        """What the runs train on, as a log line says it: the label, or the stand-in and what
        it stands in for (``synthetic/letor_like (stand-in for OHSUMED)``)."""
        if self.substitution is None or self.dataset is None:
            return self.label
        what = self.dataset + (f"/{self.variant}" if self.variant else "")
        return f"{what} (stand-in for {self.label})"


@dataclass(frozen=True)
class Job:
    """One validated Hydra job: its settings (``conf``), the folds and splits it runs, how its
    data is served, and why it runs nothing (``skip``: data not present, a declared limit)."""

    conf: HarnessConf
    folds: tuple[int, ...]
    eval_splits: tuple[str, ...]
    data_use: DataUse
    skip: str | None = None

    @property
    def solver_name(self) -> str:
        """The solver the job runs."""
        return self.conf.solver["name"]

    def with_paths(self, base: str | os.PathLike | None) -> Job:
        """The job with ``store`` and ``data_root`` made absolute against ``base``."""
        c = self.conf
        conf = dataclasses.replace(c, store=resolve_path(c.store, base),
                                   data_root=resolve_path(c.data_root, base) if c.data_root else None)
        return dataclasses.replace(self, conf=conf)


def _conf(data: dict[str, Any]) -> HarnessConf:
    """The typed settings of a checked config dict."""
    return HarnessConf(**{**data, "dataset": DatasetConf(**data["dataset"]),
                          "protocol": ProtocolConf(**data["protocol"]),
                          "metrics": MetricsConf(**data["metrics"])})


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
            if "hydra" in cfg:  # it needs a live HydraConfig to resolve; it is not ours anyway
                cfg = OmegaConf.masked_copy(cfg, [k for k in cfg.keys() if k != "hydra"])
            data = OmegaConf.to_container(cfg, resolve=True)
        except OmegaConfBaseException as exc:
            raise ConfigError([f"cannot resolve the config: {exc}"]) from None
    else:
        data = dict(cfg)
    data.pop("hydra", None)
    return data


@functools.lru_cache(maxsize=1)
def _schema():
    return OmegaConf.structured(HarnessConf)


def _fast_typed(data: dict[str, Any]) -> dict[str, Any] | None:
    """``data`` with the schema's defaults filled in when every value already has its type, else None.

    The common case of a composed config, checked without OmegaConf's (slow) structured
    merge; anything unusual goes through that merge, which gives the precise message.
    """
    import dataclasses
    import typing

    def fits(value, hint) -> bool:
        origin = typing.get_origin(hint)
        if hint is Any:
            return True
        if origin in (typing.Union, types.UnionType):
            return any(fits(value, h) for h in typing.get_args(hint))
        if hint is type(None):
            return value is None
        if origin is list:
            (item,) = typing.get_args(hint)
            return isinstance(value, list) and all(fits(v, item) for v in value)
        if origin is dict:
            return isinstance(value, dict) and all(isinstance(k, str) for k in value)
        if hint is float:
            return isinstance(value, int | float) and not isinstance(value, bool)
        if hint is int:
            return isinstance(value, int) and not isinstance(value, bool)
        if dataclasses.is_dataclass(hint):
            return isinstance(value, dict) and check(hint, value) is not None
        return isinstance(value, hint)

    def check(cls, d: dict) -> dict | None:
        hints = typing.get_type_hints(cls)
        names = {f.name for f in dataclasses.fields(cls)}
        if set(d) - names:
            return None
        out = {}
        for f in dataclasses.fields(cls):
            if f.name not in d:
                default = (f.default_factory() if f.default_factory is not dataclasses.MISSING
                           else f.default)
                out[f.name] = dataclasses.asdict(default) if dataclasses.is_dataclass(default) else default
                continue
            if not fits(d[f.name], hints[f.name]):
                return None
            v = d[f.name]
            if dataclasses.is_dataclass(hints[f.name]):
                v = check(hints[f.name], v)
            elif isinstance(v, int) and hints[f.name] is float:
                v = float(v)
            out[f.name] = v
        return out

    return check(HarnessConf, data)


def _typed(data: dict[str, Any]) -> dict[str, Any]:
    fast = _fast_typed(data)
    if fast is not None and "???" not in (fast["dataset"]["name"],):
        return fast
    schema = _schema()
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
            try:
                params[key[len(LOG10_PREFIX):]] = 10.0 ** float(value)
            except (TypeError, ValueError):
                raise ConfigError([f"solver.{key} must be a number (the exponent of 10), "
                                   f"got {value!r}"]) from None
    return params


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


def validate(cfg: Any, check_data: bool = True) -> Job:
    """Check a composed config; the typed ``Job``, or one ConfigError listing every problem.

    ``Job.data_use`` says how the data is served (with ``check_data=False`` the real files are
    assumed) and ``Job.skip`` why the job runs nothing (data not present, or a ``limits``
    entry; None when it runs).
    """
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
    if data["profile"] not in PROFILES:
        problems.append(f"profile must be one of {PROFILES}, got {data['profile']!r}")
    if data["missing_data"] not in MISSING_DATA:
        problems.append(f"missing_data must be one of {MISSING_DATA}, got {data['missing_data']!r}")
    if data["tier"] not in TIERS:
        problems.append(f"tier must be one of {TIERS}, got {data['tier']!r}")
    from rankbench.metrics.measures import CONVENTIONS

    if data["metrics"]["convention"] not in CONVENTIONS:
        problems.append(f"metrics.convention must be one of {', '.join(CONVENTIONS)}, got "
                        f"{data['metrics']['convention']!r}")
    from rankbench.tuning import check_tune

    problems.extend(check_tune(data["tune"]))
    tuner = (data["tune"] or {}).get("solver") if isinstance(data["tune"], dict) else None
    from rankbench.spec import SOLVERS  # the harness's solver registry (peers included)

    solver_names = SOLVERS.names
    if tuner is not None and tuner not in solver_names():
        problems.append(f"tune.solver {tuner!r} is not a registered solver")

    # ---- solver (a sweep's per-solver values merged in first)

    solver = data["solver"]
    name = solver.get("name")
    over = data["per_solver"].get(name) if isinstance(name, str) else None
    if over is not None:
        if not isinstance(over, dict):
            problems.append(f"per_solver.{name} must be a mapping of solver parameters, got {over!r}")
        else:
            solver.update(over)  # shallow: a grid given here replaces the solver's whole grid
    unknown_ps = sorted(set(data["per_solver"]) - set(solver_names()))
    if unknown_ps:
        problems.append(f"per_solver names unknown solvers {unknown_ps}")
    known = solver_names()
    try:
        params = solver_params(solver)
    except ConfigError as exc:
        problems.extend(exc.problems)
        params = None
    if not isinstance(name, str) or name not in known:
        from rankbench.plugins import closest

        problems.append(f"unknown solver {name!r}{closest(name, known)}; registered solvers: "
                        f"{', '.join(known) or '(none)'}")
    elif params is not None:
        problems.extend(_check_solver_points(data, SOLVERS.get(name), solver, params))
        if data["warm_start"]:
            problems.extend(_check_warm_start(data, SOLVERS.get(name), solver, params))

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
    for key in ("stand_in", "quick_stand_in"):
        bad = _check_stand_in(ds[key], f"dataset.{key}")
        if bad:
            problems.append(bad)
    # a data set rankbench cannot read is never present, even when the files are not checked
    use = DataUse(ds["name"], ds["label"] or ds["name"], not ds["unavailable"], ds["name"],
                  ds["variant"], dict(ds["data_params"]))
    if check_data and data["profile"] in PROFILES and data["missing_data"] in MISSING_DATA:
        use, bad = resolve_data(ds, data["profile"], data["missing_data"], data["data_root"])
        problems.extend(bad)
    if problems:
        raise ConfigError(problems)
    skip = None if use.present else "data not present"
    lim = data["limits"].get(solver["name"]) or {}
    n = use.data_params.get("n")
    if use.present and "n_max" in lim and n is not None and float(n) > float(lim["n_max"]):
        skip = f"limit n <= {lim['n_max']:,}: {lim.get('reason', 'declared in limits')}"
    return Job(_conf(data), tuple(folds), tuple(splits), use, skip)


def _check_solver_points(data, solver_entry, solver, params) -> list[str]:
    """Problems of every parameter set a job will build (grid points, each fold's given values),
    as the solver's own checks see them (``Solver.problems``: the estimator's ``check_params``)."""
    problems: list[str] = []
    points = [{}]
    if data["use_grid"]:
        try:
            points = grid_points(solver)
        except ConfigError as exc:
            return exc.problems
    pf = data["protocol"]["per_fold"] if data["protocol"]["mode"] == "per_fold" else {}
    pf = {k: v for k, v in pf.items() if isinstance(v, list) and v}
    n_given = max((len(v) for v in pf.values()), default=1)
    for point in [{**pt, **{k: v[min(i, len(v) - 1)] for k, v in pf.items()}}
                  for pt in points for i in range(n_given)]:
        bad = solver_entry.problems({**params, **point})
        problems.extend(b for b in bad if b not in problems)
        if len(problems) >= 5:  # one bad value usually fails every grid point: enough said
            break
    return problems


def _check_warm_start(data, solver_entry, solver, params) -> list[str]:
    """Problems of ``warm_start=true``: it needs use_grid=true, a grid over C, a solver that
    declares a warm-started path taking these values (``Solver.path_problems``), no tune, no
    per-fold C."""
    if not data["use_grid"]:
        return ["warm_start=true needs use_grid=true (each fold's solver.grid.C values are fitted "
                "as one warm-started path)"]
    grid = solver.get("grid") or {}
    if "C" not in grid:
        return [f"warm_start=true needs solver.grid.C (the path's C values); solver.grid has "
                f"{sorted(grid) or 'no key'}"]
    problems = [f"warm_start=true: {p}" for p in solver_entry.path_problems(params, grid["C"])]
    if data["tune"]:
        problems.append("warm_start=true and tune exclude each other (a tuned run chooses its own "
                        "parameter)")
    proto = data["protocol"]
    if proto["mode"] == "per_fold" and "C" in (proto["per_fold"] or {}):
        problems.append("warm_start=true fits the grid's C values; protocol.per_fold.C gives one C "
                        "per fold: use one or the other")
    return problems


def _check_stand_in(s: Any, what: str) -> str | None:
    if s is None:
        return None
    if not isinstance(s, dict) or not isinstance(s.get("dataset"), str):
        return f"{what} must be a mapping with at least 'dataset' (and variant, data_params, label), got {s!r}"
    unknown = sorted(set(s) - {"dataset", "variant", "data_params", "label"})
    return f"{what} has unknown keys {unknown}" if unknown else None


def resolve_data(ds: dict[str, Any], profile: str, missing_data: str,
                 root: str | None) -> tuple[DataUse, list[str]]:
    """How the job's data is served, and problems (absent data with missing_data=error).

    quick profile: the dataset's ``quick_stand_in`` when it has one; otherwise the real
    files when present; otherwise its ``stand_in`` (missing_data=stand_in), else absent
    (missing_data=skip|stand_in: the job runs nothing) or an error naming what goes where.
    """
    label = ds["label"] or ds["name"]
    base = dict(ds["data_params"])

    def stand_in(s: dict, why: str) -> DataUse:
        params = {**(s.get("data_params") or {}), **base}
        what = s.get("label") or f"{s['dataset']}/{s.get('variant')}"
        return DataUse(ds["name"], label, True, s["dataset"], s.get("variant"), params,
                       f"{label} {why}: {what} ({s['dataset']}/{s.get('variant')}, "
                       f"{s.get('data_params') or {}})")

    if profile == "quick" and ds["quick_stand_in"]:
        q = ds["quick_stand_in"]
        return DataUse(ds["name"], label, True, q["dataset"], q.get("variant"),
                       {**(q.get("data_params") or {}), **base},
                       f"{label} replaced by a small synthetic stand-in (quick mode)"), []
    problems = [f"dataset {label}: {ds['unavailable']}"] if ds["unavailable"] else _check_dataset(ds, root)
    if not problems:
        return DataUse(ds["name"], label, True, ds["name"], ds["variant"], base), []
    if missing_data == "stand_in" and ds["stand_in"] and _stand_in_present(ds["stand_in"], root):
        return stand_in(ds["stand_in"], "absent"), []
    if missing_data in ("skip", "stand_in"):
        return DataUse(ds["name"], label, False), []
    return DataUse(ds["name"], label, False), problems


def _stand_in_present(s: dict[str, Any], root: str | None) -> bool:
    """Generated stand-ins always are (``synthetic``, or a registered set's own generated stand-in,
    ``data_params.allow_synthetic``); a real data set standing in must be under the data root."""
    from rankbench.data import registry

    if s["dataset"] == "synthetic" or (s.get("data_params") or {}).get("allow_synthetic"):
        return True
    try:
        return registry.dataset_available(s["dataset"], s.get("variant"), root)
    except (ValueError, OSError):
        return False


def _check_dataset(ds: dict[str, Any], root: str | None) -> list[str]:
    from rankbench.data import registry

    known = registry.dataset_names()
    if ds["name"] not in known:
        from rankbench.plugins import closest

        return [f"unknown dataset {ds['name']!r}{closest(ds['name'], known)}; known: "
                f"{', '.join(known)}"]
    if ds["name"] not in registry.list_datasets():  # a data set defined in code
        if registry.loader_available(ds["name"], ds["variant"], root):
            return []
        source = getattr(registry.LOADERS.get(ds["name"]), "source", None)
        return [f"dataset {ds['name']!r} is not present"
                + (f": it reads {source!r}, absent under the data root {root or '(not set)'} "
                   "(`rankbench data list` says where it looks; data_root=... moves it)"
                   if source else "")]
    try:
        if registry.dataset_available(ds["name"], ds["variant"], root):
            return []
    except (ValueError, OSError) as exc:  # two candidate files, a directory named like a file
        return [f"dataset {ds['name']!r}: {exc}"]
    if ds["data_params"].get("allow_synthetic"):
        return []  # the data layer generates a labelled stand-in
    # what goes where, in the config's own words
    return [registry.describe_missing(ds["name"], ds["variant"], root, root_option="data_root=...",
                                      stand_in_option="+dataset.data_params.allow_synthetic=true")]


def resolve_path(path: str, base: str | os.PathLike | None) -> str:
    """``path`` made absolute against ``base`` (the directory rankbench was started from)."""
    p = Path(os.path.expanduser(path))
    if not p.is_absolute() and base is not None:
        p = Path(base) / p
    return str(p)


def build_specs(job: Job) -> list[RunSpec]:
    """Run specs of one job: one per fold (times the grid with use_grid); none when the job runs
    nothing (``job.skip``: data not present, or over a declared limit)."""
    from rankbench.spec import RunSpec

    if job.skip:
        return []
    c, use = job.conf, job.data_use
    proto = c.protocol
    base = solver_params(c.solver)
    points = grid_points(c.solver) if c.use_grid else [{}]
    path = sorted(float(x) for x in c.solver["grid"]["C"]) if c.warm_start else None
    specs = []
    for point in points:
        for i, fold in enumerate(job.folds):
            params = {**base, **point}
            if proto.mode == "per_fold":
                params.update({k: v[i] for k, v in proto.per_fold.items()})
            specs.append(RunSpec.create(
                experiment=c.experiment_name, dataset=use.dataset, variant=use.variant,
                fold=int(fold), solver=c.solver["name"], params=params, seed=c.seed,
                data_params=dict(use.data_params), record_history=c.record_history,
                eval_splits=job.eval_splits, tune=c.tune, path=path,
                convention=c.metrics.convention, data_root=c.data_root))
    return specs
