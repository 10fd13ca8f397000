"""Solvers composed from objects: the optimizer registry's declarations, optimizer x oracle x loss
pairings (accepted, or refused naming what works), the same optimum from every pairing, and the
Hydra configs of pairings without a YAML file (composed, validated, refused in a sweep preflight)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from rankbench import RankSVM
from rankbench.cli import conf_dir
from rankbench.config import ConfigError, build_specs, validate
from rankbench.data.ranking_data import RankingData
from rankbench.objective import ORACLES, count_pairs, make_oracle
from rankbench.objective.logistic import MAX_ERROR
from rankbench.optim.registry import ALIASES, ORACLE_METHODS, optimizers, ranksvm_solvers

TESTS = Path(__file__).resolve().parent
LOSSES = ("squared_hinge", "huber", "hinge", "logistic")


def _data(seed=0, n_queries=5, d=4):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 20, size=n_queries)
    qid = np.repeat(np.arange(n_queries), sizes)
    X = rng.standard_normal((qid.shape[0], d))
    y = np.clip(np.round(X @ rng.standard_normal(d) / 2 + rng.standard_normal(qid.shape[0]) * 0.5), 0, 3)
    return X, y.astype(int), qid


def test_every_optimizer_declares_its_needs_rule_paper_and_unchanged_defaults():
    opts = optimizers()
    assert {"newton", "tron", "cutting_plane", "sgd_queries", "lbfgs"} <= set(opts)
    for opt in opts.values():
        assert opt.needs and opt.needs <= set(ORACLE_METHODS), opt.name
        assert opt.stopping_rule and opt.paper, opt.name
        assert {"keep_coef", "verbose"} <= opt.parameters, opt.name
    # every exact optimizer's default tol is a relative objective accuracy of 1e-6 (issue 11)
    assert {n: (o.tol, o.max_iter) for n, o in opts.items() if n != "lbfgs"} == {
        "newton": (1e-6, 200), "tron": (1e-6, 1000), "cutting_plane": (1e-6, 2000),
        "sgd_queries": (None, None), "sgd_pairs": (None, None)}
    assert "decrement" in opts["newton"].stopping_rule and "decrement" in opts["tron"].stopping_rule
    assert opts["lbfgs"].needs == {"fun", "grad"} and opts["lbfgs"].tol == opts["tron"].tol


def test_every_pairing_is_a_solver_and_the_papers_names_stay():
    solvers = ranksvm_solvers()
    for opt in optimizers():
        for oracle in ORACLES:
            assert solvers[f"{opt}_{oracle}"] == (opt, oracle)
    assert {k: solvers[k] for k in ALIASES} == {
        "prsvm": ("newton", "pairs"), "prsvm_plus": ("newton", "counting"),
        "cutting_plane": ("cutting_plane", "counting"), "sgd_queries": ("sgd_queries", "counting")}
    assert solvers["tron_tree"] == ("tron", "tree")


@pytest.mark.parametrize("loss", LOSSES)
def test_pairings_are_accepted_exactly_when_the_oracle_gives_what_the_optimizer_calls(loss):
    for solver, (opt, oracle) in ranksvm_solvers().items():
        model = RankSVM(solver=solver, loss=loss)
        # from first principles: the hinge has neither gradient nor Hessian; all others have both
        ok = loss != "hinge" or opt in ("cutting_plane", "sgd_queries", "sgd_pairs")
        if opt == "sgd_pairs" and loss not in ("hinge", "squared_hinge"):
            # SGD on pairs runs the SPD kernels, which take these two losses only
            with pytest.raises(ValueError, match=f"takes the losses hinge, squared_hinge, not {loss}"):
                model.check_params()
        elif ok:
            model.check_params()
        else:
            with pytest.raises(ValueError, match=f"the hinge loss (has no Hessian|is not differentiable); "
                                                 f"optimizers for this loss on the {oracle} oracle: "
                                                 "cutting_plane, sgd_pairs, sgd_queries"):
                model.check_params()


def test_refusals_name_what_would_work():
    from rankbench.objective.losses import SmoothLoss

    cubic = SmoothLoss("softplus2", fun=lambda t: np.logaddexp(0, -2 * t), grad=lambda t: -2 / (1 + np.exp(2 * t)),
                       hess=None, curvature_bound=1.0)
    with pytest.raises(ValueError, match="the tree oracle evaluates piecewise losses .* oracles that "
                                         "evaluate it: brute, pairs"):
        RankSVM(solver="lbfgs_tree", loss=cubic).check_params()
    RankSVM(solver="lbfgs_pairs", loss=cubic).check_params()  # needs only fun and grad
    with pytest.raises(ValueError, match="optimizer 'newton' needs hess_diag, hess_vec .* softplus2 loss "
                                         "has no Hessian; optimizers for this loss on the pairs oracle: "
                                         "cutting_plane, lbfgs, sgd_queries"):
        RankSVM(solver="newton_pairs", loss=cubic).check_params()
    with pytest.raises(ValueError, match="margin rescaling with label-pair costs .*; use one of the oracles brute, pairs, counting$"):
        RankSVM(solver="lbfgs_tree", rescaling="margin").check_params()
    with pytest.raises(ValueError, match="unknown RankSVM solver 'lbfgs_heap'.* oracle in brute, pairs"):
        RankSVM(solver="lbfgs_heap").check_params()


@pytest.mark.parametrize("loss", ["squared_hinge", "huber"])
def test_lbfgs_newton_and_tron_reach_the_same_optimum_on_every_oracle(loss):
    X, y, qid = _data(1)
    ref = RankSVM(C=2.0, solver="newton_brute", loss=loss, tol=1e-14).fit(X, y, qid)
    for oracle in ORACLES:
        for opt, tol in (("lbfgs", 1e-9), ("tron", 1e-9), ("newton", 1e-12)):
            m = RankSVM(C=2.0, solver=f"{opt}_{oracle}", loss=loss, tol=tol).fit(X, y, qid)
            assert m.converged_, (opt, oracle)
            assert m.objective_ == pytest.approx(ref.objective_, rel=1e-10), (opt, oracle)
            np.testing.assert_allclose(m.coef_, ref.coef_, rtol=1e-5, atol=1e-7)
            assert (m.extra_["optimizer"], m.extra_["oracle"]) == (opt, oracle)


def test_logistic_loss_through_the_estimator():
    X, y, qid = _data(2, n_queries=6)
    data = RankingData.from_arrays(X, y, qid)
    C = 0.5
    exact = {s: RankSVM(C=C, solver=s, loss="logistic", tol=tol).fit(X, y, qid)
             for s, tol in (("newton_pairs", 1e-13), ("tron_brute", 1e-10), ("lbfgs_pairs", 1e-10))}
    approx = {s: RankSVM(C=C, solver=s, loss="logistic", tol=tol).fit(X, y, qid)
              for s, tol in (("newton_tree", 1e-13), ("tron_counting", 1e-10), ("lbfgs_tree", 1e-10))}
    e, a = exact["newton_pairs"], approx["newton_tree"]
    for m in exact.values():
        assert m.objective_ == pytest.approx(e.objective_, rel=1e-10)
        assert "loss_evaluated" not in m.extra_
    for m in approx.values():
        assert m.objective_ == pytest.approx(a.objective_, rel=1e-10)
        assert m.extra_["loss_evaluated"] == "logistic_piecewise"
    # objective_ of an approximating solver is the approximation's, recomputed independently here
    o = make_oracle("brute", data.X, data.y, data.query_ptr, C=C, loss="logistic")
    assert o.fun(e.coef_) == pytest.approx(e.objective_, rel=1e-12)
    bound = MAX_ERROR * C * count_pairs(data.y, data.query_ptr)
    assert abs(a.objective_ - e.objective_) <= bound
    assert o.fun(a.coef_) - e.objective_ <= 2 * bound
    assert np.linalg.norm(a.coef_ - e.coef_) <= 2 * np.sqrt(bound)
    # SGD on queries and cutting planes take the logistic loss too (subgradients suffice)
    sgd = RankSVM(C=C, solver="sgd_queries_pairs", loss="logistic", max_iter=3000).fit(X, y, qid)
    assert e.objective_ <= sgd.objective_ <= 1.05 * e.objective_


# ---- Hydra: pairings without a YAML of their own ------------------------------------------
@pytest.fixture
def hydra_conf():
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        yield


def _composed(*overrides):
    return compose(config_name="config", overrides=list(overrides))


def test_lbfgs_tree_composes_from_the_base_and_validates(hydra_conf):
    conf = conf_dir()
    assert not (conf / "solver" / "lbfgs_tree.yaml").exists()
    base = OmegaConf.to_container(OmegaConf.load(conf / "solver" / "base" / "ranksvm.yaml"))
    cfg = _composed("solver=lbfgs_tree", "protocol=fixed")
    assert OmegaConf.to_container(cfg.solver) == {**base, "name": "lbfgs_tree"}
    data = validate(cfg, check_data=False)
    assert {s.solver for s in build_specs(data)} == {"lbfgs_tree"}
    validate(_composed("solver=lbfgs_tree", "solver.loss=logistic"), check_data=False)
    cfg = _composed("solver=cutting_plane_pairs")
    assert cfg.solver.loss == "hinge"  # the loss of the optimizer, as cutting_plane.yaml
    validate(cfg, check_data=False)
    with pytest.raises(ConfigError, match="solver 'lbfgs_tree' refuses .*optimizers for this loss on the "
                                          "tree oracle: cutting_plane, sgd_pairs, sgd_queries"):
        validate(_composed("solver=lbfgs_tree", "solver.loss=hinge"), check_data=False)


def test_every_ranksvm_solver_composes_with_the_base_keys_and_validates(hydra_conf):
    base = OmegaConf.load(conf_dir() / "solver" / "base" / "ranksvm.yaml")
    for name in ranksvm_solvers():
        cfg = _composed(f"solver={name}")
        assert cfg.solver.name == name
        assert set(cfg.solver) == set(base), name
        validate(cfg, check_data=False)


def test_sweep_preflight_sees_the_generated_solvers_and_refuses_a_bad_pairing(tmp_path, monkeypatch, capsys):
    from rankbench.__main__ import main

    store = tmp_path / "store"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["rankbench"])
    args = ["-m", "dataset=synthetic", "solver=lbfgs_tree,newton_brute,cutting_plane_pairs",
            "solver.loss=hinge", f"store={store}", "progress=false"]
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "3 sweep jobs checked" in err
    assert "solver=lbfgs_tree solver.loss=hinge" in err and "solver=newton_brute solver.loss=hinge" in err
    assert "cutting_plane_pairs" not in err  # the hinge is its loss
    assert not store.exists()  # not one run started


def test_a_generated_solver_runs_end_to_end_and_records_its_pairing(tmp_path, monkeypatch):
    from rankbench.__main__ import main
    from rankbench.store import ResultStore

    (tmp_path / "conf" / "dataset").mkdir(parents=True)
    (tmp_path / "conf" / "dataset" / "toy.yaml").write_text(
        "name: toy\nvariant: null\nfolds: [1, 2, 3, 4, 5]\ndata_params: {}\n"
        "eval_splits: null\n")
    store = tmp_path / "store"
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setattr(sys, "argv", ["rankbench"])
    main([f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "dataset=toy", "solver=lbfgs_counting",
          "solver.loss=logistic", "solver.C=0.1", "protocol.folds=[1]", f"store={store}",
          "progress=false", "experiment_name=lbfgs", "solver_modules=[test_runner_toys]"])
    records, corrupt = ResultStore(store).scan()
    assert not corrupt and len(records) == 1
    rec = records[0]
    assert rec["status"] == "ok" and rec["solver"] == "lbfgs_counting", json.dumps(rec)[:500]
    assert rec["params"]["loss"] == "logistic"
