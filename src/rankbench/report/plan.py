"""Experiment plans: the papers' experiments (``experiments/<paper>/experiments.yaml``) as run specs.

The plan is data, not code: each experiment names datasets, folds, solvers and a parameter
grid; :func:`expand_experiment` turns it into the runner's spec dicts, deciding per dataset
whether the real data is used, a labelled stand-in, or nothing ("data not present").
The same expansion serves the driver (what to run) and the report (which stored records
belong to an artefact), so both always agree.
"""

from __future__ import annotations

import csv
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

DEFAULT_FOLDS = (1, 2, 3, 4, 5)
EXPERIMENT_KEYS = {
    "description", "datasets", "folds", "solvers", "params", "solver_params", "dataset_params",
    "fold_params", "data_grid", "solver_limits", "seeds", "record_history", "eval_splits",
    "n_jobs", "budget_s", "first_present", "quick",
}
ARTEFACT_KEYS = {"id", "kind", "renderer", "paper_artefact", "title", "experiments", "options"}


@dataclass(frozen=True)
class DatasetEntry:
    """One dataset of ``experiments/datasets.yaml``: its label, variant, folds and stand-ins."""

    key: str
    label: str
    variant: str | None
    folds: tuple[int, ...]
    stand_in: dict | None = None
    quick_stand_in: dict | None = None
    loader: str | None = None


@dataclass(frozen=True)
class Resolution:
    """How a dataset is served in this run: real files, a stand-in, or absent."""

    key: str
    label: str
    present: bool
    dataset: str | None = None
    variant: str | None = None
    data_params: dict = field(default_factory=dict)
    substitution: str | None = None  # human-readable note when not the real data


@dataclass
class ExperimentDef:
    """One experiment of a paper: a grid of run specs (see experiments/README.md)."""

    tag: str
    paper: str
    description: str
    datasets: list[str]
    folds: list[int] | None = None
    solvers: list[str] = field(default_factory=list)
    params: dict[str, list] = field(default_factory=dict)
    solver_params: dict[str, dict[str, list]] = field(default_factory=dict)
    dataset_params: dict[str, dict[str, list]] = field(default_factory=dict)
    fold_params: dict[str, dict[int, dict]] = field(default_factory=dict)
    data_grid: dict[str, list] = field(default_factory=dict)
    solver_limits: dict[str, dict] = field(default_factory=dict)
    seeds: list[int] = field(default_factory=lambda: [0])
    record_history: bool = False
    eval_splits: list[str] = field(default_factory=lambda: ["vali", "test"])
    n_jobs: int = 1
    budget_s: float = 60.0
    first_present: bool = False
    quick: dict = field(default_factory=dict)

    def for_mode(self, quick: bool) -> ExperimentDef:
        """This experiment with its ``quick:`` overrides applied when ``quick``."""
        if not quick or not self.quick:
            return self
        merged = {k: getattr(self, k) for k in self.__dataclass_fields__}
        merged.update(self.quick)
        merged["quick"] = {}
        return ExperimentDef(**merged)


@dataclass
class ArtefactDef:
    """One table or figure of a paper and the experiments whose records it reads."""

    id: str
    paper: str
    kind: str
    renderer: str
    title: str
    experiments: list[str]
    paper_artefact: str | None = None
    options: dict = field(default_factory=dict)


@dataclass
class Paper:
    """A paper folder: citation, experiments, artefacts and the published numbers (as rows)."""

    key: str
    citation: str
    file: str | None
    folder: Path
    experiments: dict[str, ExperimentDef]
    artefacts: list[ArtefactDef]
    values: list[dict[str, Any]]

    def paper_values(self, artefact: str | None, **match: Any) -> list[dict[str, Any]]:
        """Published-number rows of ``artefact`` whose columns equal ``match``."""
        ds = match.pop("dataset", None)
        return [r for r in self.values if r["artefact"] == artefact
                and (ds is None or same_dataset(r["dataset"], ds))
                and all(r.get(k) == v for k, v in match.items())]


@dataclass
class PlannedRun:
    """One run spec of an experiment, the dataset resolution it came from, and its record."""

    spec: dict[str, Any]
    resolution: Resolution
    dataset_key: str
    solver_available: bool
    record: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """Whether a stored record with status ok is attached."""
        return self.record is not None and self.record.get("status") == "ok"


@dataclass
class ExperimentPlan:
    """An experiment expanded for one mode: the runs, and what could not be planned."""

    experiment: ExperimentDef
    runs: list[PlannedRun]
    resolutions: dict[str, Resolution]
    pending_solvers: list[str]

    def runnable(self) -> list[dict[str, Any]]:
        """Specs whose solver exists (the rest are pending)."""
        return [r.spec for r in self.runs if r.solver_available]


def _number(v: Any) -> Any:
    # PyYAML reads "1e-4" (no dot) as a string; the grids mean numbers.
    if isinstance(v, str):
        try:
            return int(v) if v.lstrip("-").isdigit() else float(v)
        except ValueError:
            return v
    return v


def _grid(d: dict | None, where: str) -> dict[str, list]:
    out: dict[str, list] = {}
    for k, v in (d or {}).items():
        if not isinstance(v, list):
            raise ValueError(f"{where}: grid entry {k!r} must be a list of values, got {v!r}")
        out[str(k)] = [_number(x) if not isinstance(x, list) else [_number(y) for y in x]
                       for x in v]
    return out


def load_datasets(path: str | Path) -> dict[str, DatasetEntry]:
    """Read ``experiments/datasets.yaml`` into entries keyed by registry name."""
    path = Path(path)
    raw = yaml.safe_load(path.read_text()) or {}
    out = {}
    for key, d in raw.items():
        if key.startswith("_"):
            continue
        if not isinstance(d, dict) or "label" not in d:
            raise ValueError(f"{path}: dataset {key!r} needs at least a 'label'")
        out[key] = DatasetEntry(
            key=key, label=d["label"], variant=d.get("variant"),
            folds=tuple(d.get("folds", DEFAULT_FOLDS)), stand_in=d.get("stand_in"),
            quick_stand_in=d.get("quick_stand_in"), loader=d.get("loader"),
        )
    return out


def _experiment(tag: str, paper: str, d: dict, path: Path) -> ExperimentDef:
    unknown = set(d) - EXPERIMENT_KEYS
    if unknown:
        raise ValueError(f"{path}: experiment {tag!r} has unknown keys {sorted(unknown)}")
    if not d.get("datasets") or not d.get("solvers"):
        raise ValueError(f"{path}: experiment {tag!r} needs 'datasets' and 'solvers'")
    quick = dict(d.get("quick") or {})
    for k in ("params", "data_grid"):
        if k in quick:
            quick[k] = _grid(quick[k], f"{path}: {tag}.quick.{k}")
    for k in ("solver_params", "dataset_params"):
        if k in quick:
            quick[k] = {s: _grid(g, f"{path}: {tag}.quick.{k}.{s}") for s, g in quick[k].items()}
    bad = set(quick) - EXPERIMENT_KEYS
    if bad:
        raise ValueError(f"{path}: experiment {tag!r} quick block has unknown keys {sorted(bad)}")
    return ExperimentDef(
        tag=tag, paper=paper, description=" ".join(str(d.get("description", "")).split()),
        datasets=list(d["datasets"]), folds=d.get("folds"), solvers=list(d["solvers"]),
        params=_grid(d.get("params"), f"{path}: {tag}.params"),
        solver_params={s: _grid(g, f"{path}: {tag}.solver_params.{s}")
                       for s, g in (d.get("solver_params") or {}).items()},
        dataset_params={s: _grid(g, f"{path}: {tag}.dataset_params.{s}")
                        for s, g in (d.get("dataset_params") or {}).items()},
        fold_params={ds: {int(f): {k: _number(v) for k, v in p.items()} for f, p in fp.items()}
                     for ds, fp in (d.get("fold_params") or {}).items()},
        data_grid=_grid(d.get("data_grid"), f"{path}: {tag}.data_grid"),
        solver_limits=d.get("solver_limits") or {},
        seeds=list(d.get("seeds", [0])), record_history=bool(d.get("record_history", False)),
        eval_splits=list(d.get("eval_splits", ["vali", "test"])),
        n_jobs=int(d.get("n_jobs", 1)), budget_s=float(d.get("budget_s", 60)),
        first_present=bool(d.get("first_present", False)), quick=quick,
    )


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
    """Read one paper folder: ``experiments.yaml`` and ``paper_values.csv``."""
    folder = Path(folder)
    path = folder / "experiments.yaml"
    raw = yaml.safe_load(path.read_text()) or {}
    meta = raw.get("paper") or {}
    key = meta.get("key") or folder.name
    exps = {tag: _experiment(tag, key, d, path) for tag, d in (raw.get("experiments") or {}).items()}
    arts = []
    for a in raw.get("artefacts") or []:
        unknown = set(a) - ARTEFACT_KEYS
        if unknown:
            raise ValueError(f"{path}: artefact {a.get('id')!r} has unknown keys {sorted(unknown)}")
        arts.append(ArtefactDef(
            id=a["id"], paper=key, kind=a["kind"], renderer=a["renderer"], title=a["title"],
            experiments=list(a.get("experiments", [])), paper_artefact=a.get("paper_artefact"),
            options=dict(a.get("options") or {}),
        ))
    return Paper(key=key, citation=meta.get("citation", key), file=meta.get("file"),
                 folder=folder, experiments=exps, artefacts=arts,
                 values=_read_values(folder / "paper_values.csv"))


def load_papers(root: str | Path) -> list[Paper]:
    """Every paper folder under ``root`` (a folder holding ``experiments.yaml``), sorted.

    Experiment tags are one namespace across papers (they are the store's experiment
    tags): an artefact may read another paper's experiment, e.g. the leaderboard reads
    Chapelle's C sweep, so runs are shared instead of repeated.
    """
    root = Path(root)
    papers = [load_paper(p.parent) for p in sorted(root.glob("*/experiments.yaml"))]
    seen: dict[str, str] = {}
    for p in papers:
        for tag in p.experiments:
            if tag in seen:
                raise ValueError(f"experiment tag {tag!r} defined in both {seen[tag]} and {p.key}")
            seen[tag] = p.key
    for p in papers:
        for a in p.artefacts:
            missing = [t for t in a.experiments if t not in seen]
            if missing:
                raise ValueError(f"{p.folder}/experiments.yaml: artefact {a.id!r} names unknown "
                                 f"experiments {missing}")
    return papers


def all_experiments(papers: list[Paper]) -> dict[str, ExperimentDef]:
    """Every experiment of every paper, by tag."""
    return {tag: e for p in papers for tag, e in p.experiments.items()}


def same_dataset(a: str, b: str) -> bool:
    """Whether two spellings name one dataset (``mq2007_list`` = ``MQ2007-list``)."""
    def norm(s: str) -> str:
        return "".join(ch for ch in s.lower() if ch.isalnum())

    return norm(a) == norm(b)


def resolve_dataset(entry: DatasetEntry, quick: bool, available) -> Resolution:
    """Decide how ``entry`` is served: ``available(name, variant) -> bool`` checks the data root."""
    if quick and entry.quick_stand_in:
        s = entry.quick_stand_in
        return Resolution(entry.key, entry.label, True, s["dataset"], s.get("variant"),
                          dict(s.get("data_params") or {}),
                          f"{entry.label} replaced by a small synthetic stand-in (quick mode)")
    if entry.loader != "none" and available(entry.key, entry.variant):
        return Resolution(entry.key, entry.label, True, entry.key, entry.variant, {}, None)
    if entry.stand_in and not quick:
        s = entry.stand_in
        return Resolution(entry.key, entry.label, True, s["dataset"], s.get("variant"),
                          dict(s.get("data_params") or {}),
                          f"{entry.label} absent: {s.get('label', 'synthetic stand-in')} "
                          f"({s['dataset']}/{s.get('variant')}, {s.get('data_params')})")
    return Resolution(entry.key, entry.label, False)


def _product(grid: dict[str, list]) -> list[dict[str, Any]]:
    if not grid:
        return [{}]
    keys = list(grid)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*grid.values())]


def expand_experiment(
    exp: ExperimentDef,
    datasets: dict[str, DatasetEntry],
    quick: bool,
    available,
    solvers_known: set[str],
) -> ExperimentPlan:
    """All run specs of ``exp`` (quick overrides applied), with dataset resolutions. O(grid size)."""
    e = exp.for_mode(quick)
    runs: list[PlannedRun] = []
    resolutions: dict[str, Resolution] = {}
    used_one = False
    for ds in e.datasets:
        if ds not in datasets:
            raise ValueError(f"experiment {e.tag!r} names dataset {ds!r}, not in datasets.yaml")
        entry = datasets[ds]
        res = resolve_dataset(entry, quick, available)
        if e.first_present and used_one:
            continue
        resolutions[ds] = res
        if not res.present:
            continue
        used_one = True
        folds = [f for f in (e.folds or entry.folds) if f in entry.folds or res.substitution]
        # data points outermost: consecutive runs reuse the generated / cached data
        for point in _product(e.data_grid):
            for solver in e.solvers:
                grid = dict(e.params)
                grid.update(e.solver_params.get(solver, {}))
                grid.update(e.dataset_params.get(ds, {}))
                limits = e.solver_limits.get(solver, {})
                if "n_max" in limits and point.get("n", 0) > float(limits["n_max"]):
                    continue
                for combo in _product(grid):
                    for fold in folds:
                        params = dict(combo)
                        params.update(e.fold_params.get(ds, {}).get(fold, {}))
                        for seed in e.seeds:
                            data_params = dict(res.data_params)
                            data_params.update(point)
                            spec = {
                                "experiment": e.tag, "dataset": res.dataset,
                                "variant": res.variant, "fold": int(fold), "solver": solver,
                                "params": params, "seed": int(seed),
                                "data_params": data_params,
                                "record_history": e.record_history,
                                "eval_splits": list(e.eval_splits),
                            }
                            runs.append(PlannedRun(spec, res, ds, solver in solvers_known))
    pending = sorted({r.spec["solver"] for r in runs if not r.solver_available})
    return ExperimentPlan(e, runs, resolutions, pending)
