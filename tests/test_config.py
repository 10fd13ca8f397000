"""Config groups compose, and validation refuses bad configs with one error naming every problem."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir

from rankbench.cli import conf_dir
from rankbench.config import (
    METRIC_KEYS,
    ConfigError,
    build_specs,
    solver_params,
    validate,
)

CONF = conf_dir()
TOYS = ["solver_modules=[test_runner_toys]"]
# Solver names of the contract (docs/interfaces.md / the issue): every one has a config file.
CONTRACT_SOLVERS = {
    "prsvm", "prsvm_plus", "tron_tree", "newton_tree", "tron_counting", "cutting_plane",
    "sgd_queries", "spd_pegasos", "spd_sgd_svm", "spd_pa1", "spd_romma", "spd_sgd_squared_hinge",
    "lambdamart_auc", "lambdamart_mauc", "lambdamart_ndcg", "lgbm_lambdarank", "xgb_pairwise",
    "xgb_ndcg", "auc_svm",
}


@pytest.fixture
def toy_conf(tmp_path):
    """An extra config dir with the toy dataset and solver, and its search-path override."""
    (tmp_path / "dataset").mkdir()
    (tmp_path / "solver").mkdir()
    (tmp_path / "dataset" / "toy.yaml").write_text(
        "name: toy\nvariant: null\nfolds: [1, 2, 3, 4, 5]\ndata_params: {}\n"
        "eval_splits: null\n")
    (tmp_path / "solver" / "toy_lsq.yaml").write_text(
        "name: toy_lsq\nalpha: 1.0\nlog10_alpha: null\ngrid:\n  alpha: [0.1, 1.0]\n")
    return [f"hydra.searchpath=[file://{tmp_path}]", "dataset=toy", "solver=toy_lsq", *TOYS]


@pytest.fixture(scope="module", autouse=True)
def hydra_conf():
    """The repository's conf/ as Hydra's config source for this module."""
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        yield


def composed(overrides):
    return compose(config_name="config", overrides=list(overrides))


def test_every_metric_key_config_accepts_is_one_evaluate_computes():
    import numpy as np

    from rankbench.metrics import evaluate
    from rankbench.metrics.names import DEFAULT_METRICS

    assert set(DEFAULT_METRICS) <= set(METRIC_KEYS)
    y, s, q = np.array([2, 1, 0, 0]), np.array([0.3, 0.2, 0.4, 0.1]), np.zeros(4, int)
    assert set(evaluate(y, s, q, METRIC_KEYS)) == set(METRIC_KEYS)


def test_every_contract_solver_has_a_config_with_valid_defaults():
    files = {p.stem: p for p in (CONF / "solver").glob("*.yaml")}
    assert CONTRACT_SOLVERS <= set(files)
    for name, path in files.items():
        raw = yaml.safe_load(path.read_text())
        assert raw["name"] == name
        cfg = composed([f"solver={name}", "seed=7"])
        params = solver_params(dict(cfg.solver))
        assert "grid" not in params and not any(k.startswith("log10_") for k in params)
        if "random_state" in params:
            assert params["random_state"] == 7  # ${seed} interpolation
        for key, values in (raw.get("grid") or {}).items():
            assert key in params and values, (name, key)
        if name in _registered():
            # the registered estimator accepts the defaults and every grid point
            validate(cfg, check_data=False)
            cfg.use_grid = True
            validate(cfg, check_data=False)


def test_every_dataset_config_composes():
    from rankbench.data.registry import dataset_info, dataset_names, list_datasets

    for path in sorted((CONF / "dataset").glob("*.yaml")):
        cfg = composed([f"dataset={path.stem}"])
        if cfg.dataset.eval_splits and "vali" not in cfg.dataset.eval_splits:
            with pytest.raises(ConfigError, match="use protocol=fixed"):
                validate(cfg, check_data=False)  # nothing to select on
            cfg = composed([f"dataset={path.stem}", "protocol=fixed"])
        data = validate(cfg, check_data=False) if cfg.solver.name in _registered() else None
        if cfg.dataset.get("unavailable"):  # a paper's data set rankbench cannot read: says why
            assert "rankbench" in cfg.dataset.unavailable or "read" in cfg.dataset.unavailable
            continue
        if cfg.dataset.name not in list_datasets():  # defined in code (data/single_query.py)
            assert cfg.dataset.name in dataset_names(), path
            continue
        info = dataset_info(cfg.dataset.name)
        variants = [v.lower() if v else v for v in info["variants"]]
        assert (cfg.dataset.variant.lower() if cfg.dataset.variant else None) in variants, path
        assert max(cfg.dataset.folds) <= info["n_folds"], path
        if data is not None:
            assert len(build_specs(data)) == len(cfg.dataset.folds)


def _registered():
    from rankbench.estimators.registry import solver_names

    return set(solver_names())


def test_toy_config_builds_one_spec_per_fold(toy_conf):
    data = validate(composed(toy_conf + ["solver.log10_alpha=-3", "seed=4"]))
    specs = build_specs(data)
    assert [s.fold for s in specs] == [1, 2, 3, 4, 5]
    assert specs[0].params == {"alpha": pytest.approx(1e-3)}  # log10 mapped, meta keys gone
    assert specs[0].seed == 4 and specs[0].dataset == "toy"  # a registered data set, by name


def test_per_fold_and_grid_modes(toy_conf):
    data = validate(composed(toy_conf + ["protocol=per_fold",
                                         "+protocol.per_fold.alpha=[0.01,0.1,1,10,100]"]))
    assert [s.params["alpha"] for s in build_specs(data)] == [0.01, 0.1, 1, 10, 100]
    data = validate(composed(toy_conf + ["use_grid=true", "protocol.folds=[2,4]"]))
    got = [(s.params["alpha"], s.fold) for s in build_specs(data)]
    assert got == [(0.1, 2), (0.1, 4), (1.0, 2), (1.0, 4)]


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["solver.alpha=-1"], "alpha must be a positive finite number, got -1"),
        (["solver.alpha=0"], "alpha must be a positive finite number, got 0"),
        (["solver.name=nope"], "unknown solver 'nope'; registered solvers:"),
        (["solver.name=toy_lsqq"], "unknown solver 'toy_lsqq' (did you mean 'toy_lsq'?)"),
        (["+solver.beta=2"], "refuses parameters"),
        (["protocol.mode=best"], "protocol.mode must be one of"),
        (["protocol.selection_metric=vali.ndcg@11"], "protocol.selection_metric 'vali.ndcg@11'"),
        (["protocol.selection_metric=test.map"], "protocol.selection_metric 'test.map'"),
        (["protocol.folds=[1,7]"], "not all among dataset"),
        (["protocol=per_fold", "+protocol.per_fold.alpha=[1,2]"], "one value per fold (5 folds)"),
        (["protocol=per_fold"], "needs protocol.per_fold"),
        (["protocol=per_fold", "+protocol.per_fold.alpha=[1,2,-3,4,5]"],
         "alpha must be a positive finite number, got -3"),
        (["seed=abc"], "seed"),
        (["experiment_name=a/b"], "experiment_name"),
        (["n_jobs=0"], "n_jobs"),
        (["timeout_s=-5"], "timeout_s must be > 0"),
        (["+dataset.loader=no_module_here:f"], "dataset.loader"),  # no import path, ever
    ],
)
def test_invalid_configs_are_refused_with_a_clear_message(toy_conf, overrides, message):
    with pytest.raises(ConfigError) as err:
        validate(composed(toy_conf + overrides))
    assert message in str(err.value)


def test_spd_sampler_name_is_checked_before_fit():
    cfg = composed(["solver=spd_pegasos", "solver.sampler=bogus", "solver.lam=-1"])
    with pytest.raises(ConfigError) as err:
        validate(cfg, check_data=False)
    # the estimator's own check (SPDRanker.check_params), before any data is read
    assert "unknown sampler 'bogus'; known samplers:" in str(err.value)
    assert "indexed" in str(err.value)


def test_all_problems_reported_at_once(tmp_path):
    cfg = composed(["dataset=ohsumed", "solver=prsvm_plus", "solver.C=-1", f"data_root={tmp_path}",
                    "protocol.mode=nope", *TOYS])
    with pytest.raises(ConfigError) as err:
        validate(cfg)
    text = str(err.value)
    assert "protocol.mode must be one of" in text
    assert f"dataset ohsumed (variant QueryLevelNorm) not found under the data root {tmp_path}" in text
    assert "OHSUMED/QueryLevelNorm/Fold{1..5}" in text and "allow_synthetic=true" in text
    # an unregistered solver is named; a registered one gets its C checked
    assert "unknown solver 'prsvm_plus'" in text or "C must be finite and > 0, got -1" in text
    assert len(err.value.problems) >= 3


def test_missing_dataset_says_where_to_put_files(tmp_path, toy_conf):
    cfg = composed(toy_conf + ["dataset=mq2008", f"data_root={tmp_path}"])
    with pytest.raises(ConfigError, match=r"MQ2008/Fold\{1..5\}"):
        validate(cfg)
    cfg = composed(toy_conf + ["dataset=ohsumed", "dataset.name=nosuchset"])
    with pytest.raises(ConfigError, match="unknown dataset 'nosuchset'"):
        validate(cfg)


def test_cluster_launcher_configs_compose():
    cfg = compose(config_name="config", overrides=["hydra/launcher=slurm"], return_hydra_config=True)
    assert cfg.hydra.launcher._target_.endswith("submitit_launcher.SlurmLauncher")
    assert cfg.hydra.launcher.cpus_per_task == 1 and cfg.hydra.launcher.timeout_min == 120
    cfg = compose(config_name="config", return_hydra_config=True,
                  overrides=["hydra/launcher=ray_cluster", "hydra.launcher.ray.init.address=h:1"])
    assert cfg.hydra.launcher._target_.endswith("ray_launcher.RayLauncher")
    # present and null, so hydra-ray-launcher's setdefault cannot add one Ray refuses
    assert "object_store_memory" in cfg.hydra.launcher.ray.init
    assert cfg.hydra.launcher.ray.init.object_store_memory is None
    assert cfg.hydra.launcher.ray.init.address == "h:1"


def test_experiment_configs_compose_and_validate():
    for path in sorted((CONF / "experiment").glob("*.yaml")):
        cfg = compose(config_name="config", overrides=[f"experiment={path.stem}"],
                      return_hydra_config=True)
        assert cfg.experiment_name != "adhoc", path
        assert cfg.hydra.sweeper.params, path
        data = validate(cfg, check_data=False)
        assert build_specs(data), path


def test_conf_dir_is_the_package_conf_linked_from_the_checkout():
    import rankbench

    assert CONF == Path(rankbench.__file__).resolve().parent / "conf"
    assert (Path(__file__).resolve().parents[1] / "conf").resolve() == CONF  # top-level link
    assert (CONF / "config.yaml").is_file()


@pytest.mark.parametrize("overrides", [
    ["solver=prsvm,prsvm_plus", "solver.C=1e-3,1e-2", "dataset=synthetic"],
    ["experiment=chapelle2010/table3"],
    ["solver.log10_C=range(-3,0)", "seed=1,2", "protocol.folds=[1]"],
])
def test_sweep_expansion_is_hydras_basic_sweeper(overrides):
    """plan.expand_sweep (Hydra's public override parser) gives the jobs, in the order, of
    Hydra's own BasicSweeper (private: checked here, hydra-core pinned < 1.4)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from rankbench.plan import compose_multirun, expand_sweep

    master, _ = compose_multirun(overrides)
    args = [f"{k}={v}" for k, v in (master.hydra.sweeper.get("params") or {}).items()]
    args.extend(master.hydra.overrides.task)
    batches = BasicSweeper.split_arguments(OverridesParser.create().parse_overrides(args), None)
    assert expand_sweep(master) == [list(job) for batch in batches for job in batch]
