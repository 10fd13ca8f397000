"""Plans: a Hydra sweep composed job by job into run specs, exactly as the command line runs it.

``rankbench -m experiment=chapelle2010/table3`` and ``make reproduce`` share this path:
Hydra composes the multirun config, the basic sweeper's grammar expands it into jobs, each
job is composed with its overrides (as every launcher does) and goes through
``config.validate`` and ``config.build_specs``.  The CLI checks a sweep with it before the
first job starts; ``make reproduce`` and the report use it to know which runs belong to a
paper's artefact.  Nothing here trains.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from rankbench.config import ConfigError, DataUse, Job, build_specs, validate
from rankbench.spec import RunSpec

# The directory rankbench was started in, for paths in conf/ (Hydra's job folders). Cached,
# and Hydra hands each job its driver's resolver cache, so a remote worker (Ray, Slurm)
# with another working directory resolves the same folder.
OmegaConf.register_new_resolver("rankbench_launch_dir", os.getcwd, use_cache=True, replace=True)

EXPERIMENT_GROUP = "experiment"
QUICK_PREFIX = "quick/"


def conf_dir() -> Path:
    """The Hydra config directory: RANKBENCH_CONF_DIR, else the package's own ``conf/`` (package
    data: the same configs in a checkout, where the top-level ``conf`` links to it, and in a wheel).

    Solvers without a YAML of their own (every optimizer x oracle pairing) are put in
    Hydra's ConfigStore here, so ``solver=lbfgs_tree`` composes wherever conf/ is used.
    """
    env = os.environ.get("RANKBENCH_CONF_DIR")
    path = Path(env).resolve() if env else Path(__file__).resolve().parent / "conf"
    return register_hydra_solver_configs(path)


def register_hydra_solver_configs(conf: str | os.PathLike) -> Path:
    """Put a node in Hydra's ConfigStore (group "solver") for every RankSVM solver that has no
    ``conf/solver/<name>.yaml``, built from ``solver/base/ranksvm.yaml`` with its name and
    its optimizer's loss; returns ``conf`` (Hydra's config directory)."""
    conf = Path(conf)
    base_file = conf / "solver" / "base" / "ranksvm.yaml"
    if not base_file.is_file():
        return conf
    from hydra.core.config_store import ConfigStore

    from rankbench.optim.registry import get_optimizer, ranksvm_solvers

    base = OmegaConf.load(base_file)
    store = ConfigStore.instance()
    for name, (opt, _) in ranksvm_solvers().items():
        # a node named like a YAML file would be merged into it as a schema: skip those
        if not (conf / "solver" / f"{name}.yaml").exists():
            node = OmegaConf.merge(base, {"name": name, "loss": get_optimizer(opt).default_loss})
            store.store(group="solver", name=name, node=node)
    return conf


def explain_compose_error(exc: BaseException, overrides: list[str] | tuple[str, ...] = ()) -> str:
    """A Hydra composition error in the user's words: an unknown config choice lists the group's
    options, an unknown key the valid keys of its node, each with the closest names."""
    from hydra.errors import MissingConfigException

    from rankbench.plugins import closest

    if isinstance(exc, MissingConfigException) and exc.options is not None:
        group, _, name = str(exc.missing_cfg_file or "").rpartition("/")
        opts = sorted(exc.options)
        return (f"unknown {group or 'config'} {name!r}{closest(name, opts)}; "
                f"{group or 'options'}: {', '.join(opts)}")
    cause = exc.__cause__ or exc.__context__
    key = getattr(cause, "full_key", None)
    if key:
        parent, _, leaf = str(key).rpartition(".")
        try:  # the valid keys of the node, from the config composed without the bad override
            from hydra import compose

            base = compose(config_name="config",
                           overrides=[o for o in overrides if not o.lstrip("+~").startswith(key)])
            node = OmegaConf.select(base, parent) if parent else base
            valid = sorted(str(k) for k in node.keys()) if hasattr(node, "keys") else []
        except Exception:  # noqa: BLE001 - the plain message below still names the key
            valid = []
        hint = f"{closest(leaf, valid)}; valid keys of {parent or 'the config'}: " \
               f"{', '.join(valid)}" if valid else ""
        return f"unknown config key {key!r}{hint} (a new key needs a leading +, e.g. +{key}=...)"
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"{type(exc).__name__}: {first}"


def check_overrides(overrides: list[str]) -> str | None:
    """Why ``rankbench [-m] <overrides>`` cannot be composed, or None: its overrides that are not
    sweeps are composed here first, so an unknown choice or key is a config error (exit 2) in
    the user's words (each job of a sweep is checked by the multirun's preflight)."""
    from hydra import compose
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except Exception as exc:  # noqa: BLE001 - a grammar error: Hydra's message says where
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0]}"
    # hydra.searchpath decides where configs are found; other hydra.* keys (launcher, run
    # directories) do not change the job's config
    overrides = [o.input_line for o in parsed if not o.is_sweep_override() and (
        not o.get_key_element().lstrip("+~").startswith("hydra")
        or o.get_key_element().lstrip("+~") == "hydra.searchpath")]
    try:
        with hydra_context():
            compose(config_name="config", overrides=overrides)
    except Exception as exc:  # noqa: BLE001 - any composition error is the user's config
        with hydra_context():
            return explain_compose_error(exc, overrides)
    return None


def launch_dir() -> str:
    """The directory rankbench was started from (also on remote Ray / Slurm workers)."""
    try:
        from hydra.core.hydra_config import HydraConfig

        return HydraConfig.get().runtime.cwd
    except (ImportError, ValueError):
        return os.getcwd()


def prepare(cfg: Any, check_data: bool = True) -> tuple[Job, list[RunSpec]]:
    """Validate one composed job config and build its run specs (paths resolved); raises ConfigError."""
    job = validate(cfg, check_data=check_data).with_paths(launch_dir())
    try:
        return job, build_specs(job)
    except ValueError as exc:  # a spec the config's checks let through: still a config error
        raise ConfigError([str(exc)]) from None


def expand_sweep(config) -> list[list[str]]:
    """The override lists of every job of a basic-sweeper multirun (config sweeper params + CLI),
    in the basic sweeper's order: the product of the sweeps, the last override varying fastest
    (Hydra's public override grammar; tests/test_config.py checks it against Hydra's own
    BasicSweeper)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    target = str(config.hydra.sweeper.get("_target_", ""))
    if not target.endswith("BasicSweeper"):
        raise ValueError(f"sweeper {target} is not the basic sweeper")
    args = [f"{k}={v}" for k, v in (config.hydra.sweeper.get("params") or {}).items()]
    args.extend(config.hydra.overrides.task)
    choices = []
    for o in OverridesParser.create().parse_overrides(args):
        key = o.get_key_element()
        values = [o.get_value_element_as_str()] if not o.is_sweep_override() else \
            list(o.sweep_string_iterator())
        choices.append([f"{key}={v}" for v in values])
    return [list(job) for job in itertools.product(*choices)]


@dataclass
class JobPlan:
    """One job of a sweep: its overrides, validated config, run specs, and why it runs nothing."""

    overrides: list[str]
    job: Job
    specs: list[RunSpec]

    @property
    def use(self) -> DataUse:
        """How the job's dataset is served."""
        return self.job.data_use

    @property
    def skip(self) -> str | None:
        """Why the job runs nothing (data not present, a declared limit), or None."""
        return self.job.skip


class _JobComposer:
    """Composes sweep jobs as Hydra's launchers do, composing each set of group choices once.

    Hydra composes a job from its config-group choices (the defaults list) and then applies
    its value overrides (``ConfigLoaderImpl._apply_overrides_to_config``). A sweep of 189 jobs
    has a handful of distinct group choices, so the composition is cached per choice set and
    the value overrides are applied to a copy: the same config, 10x faster.
    """

    def __init__(self, master, loader):
        from hydra.core.override_parser.overrides_parser import OverridesParser

        self.master, self.loader = master, loader
        self.parser = OverridesParser.create()
        self.cache: dict[tuple[str, ...], Any] = {}
        self.disk = _ComposeCache(master)

    def _is_group(self, override) -> bool:
        key = override.key_or_group
        return "." not in key and self.loader.repository.group_exists(key)

    def compose(self, overrides: list[str]):
        # private, pinned: hydra-core >=1.3.2,<1.4 (pyproject.toml); tests/test_report.py
        # checks the result against load_sweep_config, Hydra's own composition of a job
        from hydra._internal.config_loader_impl import ConfigLoaderImpl

        parsed = self.parser.parse_overrides(list(overrides))
        groups = tuple(o.input_line for o in parsed if self._is_group(o))
        # hydra.* values (launcher settings) do not change the job's own config
        values = [o for o in parsed if not self._is_group(o)
                  and not o.key_or_group.lstrip("+~").startswith("hydra.")]
        if groups not in self.cache:
            hit = self.disk.get(groups)
            if hit is None:
                full = self.loader.load_sweep_config(self.master, list(groups))
                # unresolved: interpolations stay strings, resolved per job after its overrides
                app = OmegaConf.to_container(full, resolve=False)
                app.pop("hydra")
                hit = (app, dict(full.hydra.runtime.choices))
                self.disk.put(groups, *hit)
            self.cache[groups] = hit
        app, choices = self.cache[groups]
        cfg = OmegaConf.create(app)  # a fresh config per job: the cache stays untouched
        OmegaConf.set_struct(cfg, True)
        ConfigLoaderImpl._apply_overrides_to_config(values, cfg)
        return cfg, choices


class _ComposeCache:
    """Composed job configs (before value overrides and resolution) on disk, between processes.

    The key holds everything a composition depends on: the group choices, the master's
    Hydra overrides (search path), the content of every config file on the search path,
    the configs registered in Hydra's ConfigStore, and the Hydra version.  Files live under
    ``$RANKBENCH_CACHE/compose`` (``RANKBENCH_CACHE=off`` disables the cache).
    """

    VERSION = 1

    def __init__(self, master):
        import hashlib
        import json

        self.dir = _cache_root()
        if self.dir is None:
            return
        h = hashlib.sha256()
        h.update(json.dumps([self.VERSION, _hydra_version(),
                             OmegaConf.to_container(master.hydra.overrides.hydra),
                             master.hydra.job.config_name]).encode())
        for src in master.hydra.runtime.config_sources:
            h.update(f"{src.provider}|{src.schema}|{src.path}".encode())
            if src.schema == "file":
                for f in sorted(Path(src.path).rglob("*.yaml")):
                    h.update(str(f.relative_to(src.path)).encode() + f.read_bytes())
        h.update(_config_store_fingerprint())
        self.base = h.hexdigest()

    def _path(self, groups: tuple[str, ...]) -> Path:
        import hashlib

        key = hashlib.sha256((self.base + "\0" + "\0".join(groups)).encode()).hexdigest()
        return self.dir / "compose" / f"{key}.json"

    def get(self, groups: tuple[str, ...]):
        if self.dir is None:
            return None
        import json

        try:
            stored = json.loads(self._path(groups).read_text())
            return stored["app"], dict(stored["choices"])
        except Exception:  # noqa: BLE001 - absent or unreadable: compose again
            return None

    def put(self, groups: tuple[str, ...], app, choices: dict) -> None:
        if self.dir is None:
            return
        import json
        import tempfile

        path = self._path(groups)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            text = json.dumps({"app": app, "choices": choices})
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
            with os.fdopen(fd, "w") as fh:
                fh.write(text)
            os.replace(tmp, path)
        except OSError:
            pass  # a cache that cannot be written only costs time


def _cache_root() -> Path | None:
    env = os.environ.get("RANKBENCH_CACHE")
    if env and env.strip().lower() in ("off", "0", "none", "false"):
        return None
    return Path(env).expanduser() if env else Path.home() / ".cache" / "rankbench"


def _hydra_version() -> str:
    import hydra

    return hydra.__version__


def _config_store_fingerprint() -> bytes:
    """The configs code registered in Hydra's ConfigStore (e.g. generated solver configs)."""
    from hydra.core.config_store import ConfigStore

    out = []

    def walk(node, prefix):
        for name, v in sorted(node.items()):
            if isinstance(v, dict):
                walk(v, f"{prefix}{name}/")
            else:
                out.append(f"{prefix}{name}|{v.package}|{OmegaConf.to_yaml(v.node)}")

    walk(ConfigStore.instance().repo, "")
    return "\n".join(out).encode()


def plan_jobs(master, job_overrides: list[list[str]], loader=None,
              check_data: bool = True) -> tuple[list[JobPlan], list[str]]:
    """Compose and validate every job (as the launchers compose them); (plans, problems)."""
    if loader is None:
        from hydra.core.global_hydra import GlobalHydra

        loader = GlobalHydra.instance().config_loader()
    composer = _JobComposer(master, loader)
    jobs, problems = [], []
    for overrides in job_overrides:
        where = " ".join(overrides) or "(no overrides)"
        try:
            job_cfg, choices = composer.compose(overrides)
            job, specs = prepare(job_cfg, check_data=check_data)
            choice = choices.get("dataset")
            if choice and choice != job.data_use.key:  # e.g. ohsumed_featmin: name ohsumed
                job = replace(job, data_use=replace(job.data_use, key=choice))
        except ConfigError as exc:
            problems.extend(f"[{where}] {p}" for p in exc.problems)
            continue
        except Exception as exc:  # noqa: BLE001 - any composition error stops the sweep, named
            problems.append(f"[{where}] {explain_compose_error(exc, overrides)}")
            continue
        jobs.append(JobPlan(list(overrides), job, specs))
    return jobs, problems


def compose_multirun(overrides: list[str], config_name: str = "config"):
    """The master multirun config of ``rankbench -m <overrides>`` and Hydra's config loader.

    Call inside ``hydra.initialize_config_dir`` (``with hydra_context(): ...``).
    """
    from hydra.core.global_hydra import GlobalHydra
    from hydra.types import RunMode

    loader = GlobalHydra.instance().config_loader()
    master = loader.load_configuration(config_name=config_name, overrides=list(overrides),
                                       run_mode=RunMode.MULTIRUN)
    return master, loader


class hydra_context:
    """``with hydra_context(): ...``: Hydra initialized on rankbench's conf/ (re-entrant)."""

    def __enter__(self):
        from hydra import initialize_config_dir
        from hydra.core.global_hydra import GlobalHydra

        self._ctx = None
        if not GlobalHydra.instance().is_initialized():
            self._ctx = initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3")
            self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        if self._ctx is not None:
            self._ctx.__exit__(*exc)


# ---------------------------------------------------------------- paper experiments
@dataclass
class ExperimentPlan:
    """A paper artefact's experiment config planned: its jobs, runs and dataset uses."""

    name: str                      # experiment config name, e.g. chapelle2010/table3
    tag: str                       # the store's experiment tag (experiment_name)
    report: dict[str, Any]
    jobs: list[JobPlan]
    datasets: list[str] = field(default_factory=list)   # dataset keys in sweep order
    solvers: list[str] = field(default_factory=list)    # solver names in sweep order
    resolutions: dict[str, DataUse] = field(default_factory=dict)
    limits: dict[str, Any] = field(default_factory=dict)
    runs: list[Any] = field(default_factory=list)       # PlannedRun (report.records)
    pending_solvers: list[str] = field(default_factory=list)  # every run stored as skipped
    tier: str = "default"          # peers: trained by make reproduce-peers only

    @property
    def specs(self) -> list[RunSpec]:
        """Every run spec of the experiment, in job order."""
        return [s for j in self.jobs for s in j.specs]

    @property
    def description(self) -> str:
        """What the experiment is, for captions."""
        return " ".join(str(self.report.get("description", "")).split())


def experiment_names(quick: bool = False, conf: Path | None = None) -> list[str]:
    """Every paper artefact's experiment config (``conf/experiment/<paper>/<artefact>.yaml``), sorted.

    With ``quick``, each name is replaced by its ``quick/`` variant where one exists.
    """
    root = (conf or conf_dir()) / EXPERIMENT_GROUP
    names = sorted(str(p.relative_to(root).with_suffix(""))
                   for p in root.glob("*/*.yaml") if not p.parent.name.startswith(("_", "quick")))
    if quick:
        names = [QUICK_PREFIX + n if (root / f"{QUICK_PREFIX}{n}.yaml").is_file() else n
                 for n in names]
    return names


def artefact_name(name: str) -> str:
    """An experiment config name without its quick/ prefix (the artefact it renders)."""
    return name[len(QUICK_PREFIX):] if name.startswith(QUICK_PREFIX) else name


def plan_experiment(name: str, extra: list[str] | tuple[str, ...] = (),
                    check_data: bool = True) -> ExperimentPlan:
    """Plan ``rankbench -m experiment=<name> <extra>`` (inside ``hydra_context``); ConfigError on problems."""
    master, loader = compose_multirun([f"{EXPERIMENT_GROUP}={name}", *extra])
    job_overrides = expand_sweep(master)
    if not job_overrides:
        raise ConfigError([f"experiment {name}: the sweep has no job"])
    jobs, problems = plan_jobs(master, job_overrides, loader, check_data=check_data)
    if problems:
        raise ConfigError(problems, where=f"experiment {name}")
    first = jobs[0].job.conf
    plan = ExperimentPlan(name=name, tag=first.experiment_name, report=dict(first.report),
                          jobs=jobs, limits=dict(first.limits), tier=first.tier)
    for job in jobs:
        key, solver = job.use.key, job.job.solver_name
        if key not in plan.resolutions:
            plan.resolutions[key] = job.use
            plan.datasets.append(key)
        if solver not in plan.solvers:
            plan.solvers.append(solver)
    return plan
