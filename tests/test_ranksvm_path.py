"""ranksvm_path: a warm-started C grid fitted to the accuracy of cold fits (issue 14).

Reference: a cold ``RankSVM(C=c, **params).fit`` per C and a tight-tolerance fit (tol 1e-12).
Both the cold fit and the path's fit stop by the same rule at tol, each certifying
f(w) - f* <= tol |f| (``rankbench.optim.accuracy``); f is 1-strongly convex, so
||w - w*||^2 / 2 <= f(w) - f* and two certified solutions lie within 2 sqrt(2 tol |f|).
"""

import re
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rankbench import RankSVM, ranksvm_path
from rankbench.data.synthetic import make_letor_like

TOL = 1e-6
GRID = [1.0, 1e-3, 1e-2, 1e-1, 1e-4, 10.0, 100.0]  # unsorted on purpose


@pytest.fixture(scope="module")
def toy():
    return make_letor_like(n_queries=60, docs_per_query=30, n_features=15, seed=1)


def _check_against_cold(path, d, solver, params=None):
    """Each C of the path certified like its cold fit; returns the cold fits' CG steps."""
    params = params or {}
    cold_cg = []
    for k, c in enumerate(path.Cs):
        cold = RankSVM(C=c, solver=solver, **params).fit(d.X, d.y, d.qid)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tight reference may stop at rounding level
            ref = RankSVM(C=c, solver=solver, tol=1e-12, max_iter=500).fit(d.X, d.y, d.qid)
        f_p, f_c, f_ref = path.objective[k], cold.objective_, ref.objective_
        tol = cold.convergence_["tol"]
        assert path.converged[k] and cold.converged_, (c, path.convergence[k])
        # the same stopping rule and tolerance as the cold fit
        assert path.convergence[k]["stopping_rule"] == cold.convergence_["stopping_rule"]
        assert path.convergence[k]["tol"] == tol
        assert path.models[k].C == c and path.models[k].objective_ == f_p
        # both certified within tol of the optimum
        assert f_p - f_ref <= tol * abs(f_ref) + 1e-15 * abs(f_ref), (c, f_p, f_ref)
        assert abs(f_p - f_c) <= tol * abs(f_c), (c, f_p, f_c)
        bound = 2.0 * np.sqrt(2.0 * tol * abs(f_c))
        assert np.linalg.norm(path.coefs[k] - cold.coef_) <= bound, c
        cold_cg.append(cold.n_cg_iter_)
    return cold_cg


@pytest.mark.parametrize("solver", ["prsvm_plus", "prsvm", "tron_tree", "lbfgs_counting"])
def test_path_reaches_the_cold_fits_accuracy(toy, solver):
    path = ranksvm_path(toy.X, toy.y, toy.qid, GRID, solver=solver)
    np.testing.assert_array_equal(path.Cs, np.sort(GRID))  # sorted, increasing
    assert path.coefs.shape == (len(GRID), toy.n_features)
    assert path.warm_start
    # newton solvers: the warm-started C values run newton_cg's warm-start options (warm_newton)
    newton = solver in ("prsvm_plus", "prsvm")
    assert [m.extra_.get("warm_newton", False) for m in path.models] == [False] + [newton] * (len(GRID) - 1)
    _check_against_cold(path, toy, solver)
    assert path.total_time == pytest.approx(path.fit_time.sum())
    assert np.all(path.fit_time > 0)


@pytest.mark.parametrize("solver", ["prsvm_plus", "tron_tree"])
def test_path_at_a_tight_tol_agrees_to_1e9(toy, solver):
    # up to C = 10: at C = 100 Newton's decrement reaches rounding level (~1e-17) before the
    # certificate reaches 1e-10 and its cold fit runs out of iterations
    path = ranksvm_path(toy.X, toy.y, toy.qid, GRID[:-1], solver=solver, tol=1e-10)
    for k, c in enumerate(path.Cs):
        cold = RankSVM(C=c, solver=solver, tol=1e-10).fit(toy.X, toy.y, toy.qid)
        assert path.objective[k] == pytest.approx(cold.objective_, rel=1e-9), c
        np.testing.assert_allclose(path.coefs[k], cold.coef_, rtol=0,
                                   atol=1e-4 * np.linalg.norm(cold.coef_))


def test_warm_newton_off_is_the_cold_algorithm_from_the_previous_solution(toy):
    # features scaled over two decades: CG steps are many, so the warm policy has work to save
    # (on the plain toy the certified decrement bound leaves both at the same count)
    toy = replace(toy, X=toy.X * np.logspace(0, 2, toy.X.shape[1]))
    off = ranksvm_path(toy.X, toy.y, toy.qid, GRID, solver="prsvm_plus", newton_policy=None)
    assert not any("warm_newton" in m.extra_ for m in off.models)
    _check_against_cold(off, toy, "prsvm_plus")
    on = ranksvm_path(toy.X, toy.y, toy.qid, GRID, solver="prsvm_plus")
    assert on.n_cg_iter[0] == off.n_cg_iter[0]  # the first C is a cold fit either way
    np.testing.assert_array_equal(on.coefs[0], off.coefs[0])
    assert on.n_cg_iter.sum() < off.n_cg_iter.sum()


def test_warm_start_saves_newton_iterations(toy):
    path = ranksvm_path(toy.X, toy.y, toy.qid, GRID, solver="prsvm_plus")
    cold = [RankSVM(C=c, solver="prsvm_plus").fit(toy.X, toy.y, toy.qid).n_iter_ for c in path.Cs]
    assert path.n_iter[0] == cold[0]  # the first C starts at w = 0 like a cold fit
    assert path.n_iter.sum() < sum(cold)


def test_cold_path_is_exactly_the_cold_fits(toy):
    path = ranksvm_path(toy.X, toy.y, toy.qid, [1e-2, 1e-3], solver="tron_tree", warm_start=False)
    assert not path.warm_start
    for k, c in enumerate(path.Cs):
        cold = RankSVM(C=c, solver="tron_tree").fit(toy.X, toy.y, toy.qid)
        np.testing.assert_array_equal(path.coefs[k], cold.coef_)
        assert path.n_iter[k] == cold.n_iter_


def test_solver_without_starting_point_is_refused_or_fitted_cold(toy):
    with pytest.raises(ValueError, match="sgd_queries.*takes no starting point.*warm_start=False"):
        ranksvm_path(toy.X, toy.y, toy.qid, [1e-3, 1e-2], solver="sgd_queries")
    path = ranksvm_path(toy.X, toy.y, toy.qid, [1e-2, 1e-3], solver="sgd_queries", warm_start=False,
                        max_iter=200)
    for k, c in enumerate(path.Cs):
        cold = RankSVM(C=c, solver="sgd_queries", max_iter=200).fit(toy.X, toy.y, toy.qid)
        np.testing.assert_array_equal(path.coefs[k], cold.coef_)


def test_path_models_predict_like_cold_fits(toy):
    path = ranksvm_path(toy.X, toy.y, None, [1e-3], group=np.unique(toy.qid, return_counts=True)[1], solver="prsvm_plus")
    cold = RankSVM(C=1e-3).fit(toy.X, toy.y, toy.qid)
    np.testing.assert_allclose(path.models[0].decision_function(toy.X), cold.decision_function(toy.X))
    assert path.models[0].compile_time_ >= 0.0


@pytest.mark.parametrize("Cs,match", [
    ([], "non-empty"),
    (None, "non-empty"),
    ("1e-3", "non-empty"),
    ([[1e-3, 1e-2]], "1-d"),
    ([1e-3, 0.0], r"finite and > 0.*\[0.0\] at position\(s\) \[1\]"),
    ([1e-3, -1.0], "finite and > 0"),
    ([float("nan"), 1.0], r"finite and > 0.*position\(s\) \[0\]"),
    ([1.0, float("inf")], "finite and > 0"),
    (["a"], "non-empty list"),
    ([1e-3, 1e-2, 1e-3], r"\[0.001\] more than once"),
])
def test_bad_Cs_are_refused(toy, Cs, match):
    with pytest.raises(ValueError, match=match):
        ranksvm_path(toy.X, toy.y, toy.qid, Cs)


def test_bad_params_are_refused(toy):
    with pytest.raises(ValueError, match="C values as Cs"):
        ranksvm_path(toy.X, toy.y, toy.qid, [1.0], C=2.0)
    with pytest.raises(ValueError, match="KernelMap"):
        ranksvm_path(toy.X, toy.y, toy.qid, [1.0], kernel="rbf")
    with pytest.raises(ValueError, match="unknown RankSVM solver"):
        ranksvm_path(toy.X, toy.y, toy.qid, [1.0], solver="nope")
    with pytest.raises(ValueError, match="tol must be > 0"):
        ranksvm_path(toy.X, toy.y, toy.qid, [1.0], tol=-1.0)


def fig1_grid() -> list[float]:
    """Chapelle Fig. 1's C values, read from conf/experiment/chapelle2010/fig1.yaml."""
    from omegaconf import OmegaConf

    conf = Path(__file__).resolve().parents[1] / "conf" / "experiment" / "chapelle2010" / "fig1.yaml"
    spec = str(OmegaConf.load(conf).hydra.sweeper.params["solver.log10_C"])
    lo, hi = map(int, re.fullmatch(r"range\((-?\d+),\s*(-?\d+)\)", spec).groups())
    return [10.0**k for k in range(lo, hi)]


def test_fig1_grid_is_chapelles():
    assert fig1_grid() == [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0]


@pytest.mark.realdata
@pytest.mark.parametrize("solver", ["prsvm_plus", "tron_tree"])
def test_ohsumed_fold1_fig1_grid(data_root, solver):
    from rankbench.data import dataset_available, load_fold

    if not dataset_available("OHSUMED", root=data_root):
        pytest.skip("OHSUMED not present")
    tr = load_fold("OHSUMED", 1, "train", root=data_root)
    path = ranksvm_path(tr.X, tr.y, tr.qid, fig1_grid(), solver=solver)
    cold_cg = _check_against_cold(path, tr, solver)
    if solver == "prsvm_plus":
        # issue 14: warm_newton's path needs fewer CG steps than the seven cold fits together
        # (CG steps are deterministic); without it the warm path needed more than the cold fits
        assert all(m.extra_.get("warm_newton") for m in path.models[1:])
        assert path.n_cg_iter.sum() < sum(cold_cg), (path.n_cg_iter.tolist(), cold_cg)
        off = ranksvm_path(tr.X, tr.y, tr.qid, fig1_grid(), solver=solver, newton_policy=None)
        assert path.n_cg_iter.sum() < off.n_cg_iter.sum()


@pytest.mark.realdata
def test_bench_path_rows(data_root, monkeypatch):
    from rankbench.bench.ranksvm import FIG1_CS, path_rows
    from rankbench.data import dataset_available

    monkeypatch.setenv("RANKBENCH_DATA", str(data_root))
    if not dataset_available("OHSUMED"):
        pytest.skip("OHSUMED not present")
    assert list(FIG1_CS) == fig1_grid()
    (row,) = path_rows(quick=True, repeats=1)
    assert row["case"] == "path/OHSUMED/fold1/prsvm_plus" and row["all_converged"]
    assert row["cold_max_C"] in FIG1_CS and len(row["path_n_iter"]) == len(FIG1_CS)
    assert row["ratio"] == pytest.approx(row["seconds"] / row["cold_max_s"])
    assert row["cold_max_s"] <= row["cold_sum_s"]
