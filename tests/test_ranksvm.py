"""RankSVM estimator: solver names, agreement between optimizer x oracle pairings, inputs, kernel map."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.pipeline import make_pipeline

from rankbench import RankSVM
from rankbench.estimators.ranksvm import KernelMap
from rankbench.estimators.registry import make_solver, solver_names
from rankbench.objective import ORACLES, make_oracle, pairs_with_margin
from rankbench.optim.registry import optimizers, resolve_solver


def _data(seed=0, n_queries=6, d=5, sparse=False):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 25, size=n_queries)
    qid = np.repeat(np.arange(n_queries) * 7 + 3, sizes)
    n = qid.shape[0]
    X = rng.standard_normal((n, d))
    y = np.clip(np.round(X @ rng.standard_normal(d) / 2 + rng.standard_normal(n) * 0.5), 0, 3).astype(int)
    if sparse:
        X[rng.random(X.shape) < 0.6] = 0.0
        X = sp.csr_matrix(X)
    return X, y, qid


def test_solver_names_resolve_and_every_pairing_is_registered():
    def resolved(name):
        opt, oracle = resolve_solver(name)
        return opt.name, oracle

    assert resolved("prsvm") == ("newton", "pairs")
    assert resolved("prsvm_plus") == ("newton", "counting")
    assert resolved("tron_tree") == ("tron", "tree")
    assert resolved("newton_brute") == ("newton", "brute")
    assert resolved("cutting_plane") == ("cutting_plane", "counting")
    assert resolved("cutting_plane_tree") == ("cutting_plane", "tree")
    assert resolved("sgd_queries") == ("sgd_queries", "counting")
    assert resolved("lbfgs_tree") == ("lbfgs", "tree")
    for bad in ("tron", "newton_magic", "lbfgs_trees", "cutting_plane_x", 3):
        with pytest.raises(ValueError, match="solver"):
            resolve_solver(bad)
    names = solver_names()
    pairings = {f"{opt}_{oracle}" for opt in optimizers() for oracle in ORACLES}
    assert len(pairings) == len(optimizers()) * len(ORACLES) >= 20
    for name in sorted(pairings | {"prsvm", "prsvm_plus", "cutting_plane", "sgd_queries"}):
        assert name in names
        m = make_solver(name, {"C": 0.5})
        assert isinstance(m, RankSVM) and m.solver == name and m.C == 0.5
        # the loss the optimizer is made for (the hinge for cutting planes and SGD on queries)
        assert m.loss == resolve_solver(name)[0].default_loss


@pytest.mark.parametrize("sparse", [False, True])
def test_all_second_order_solvers_reach_the_same_optimum(sparse):
    X, y, qid = _data(1, sparse=sparse)
    fits = {}
    for solver in ("prsvm", "prsvm_plus", "tron_tree", "newton_tree", "tron_counting", "tron_pairs",
                   "newton_brute"):
        tol = 1e-12
        fits[solver] = RankSVM(C=3.0, solver=solver, tol=tol).fit(X, y, qid)
    ref = fits["newton_brute"]
    for solver, m in fits.items():
        assert m.objective_ == pytest.approx(ref.objective_, rel=1e-10), solver
        np.testing.assert_allclose(m.coef_, ref.coef_, rtol=1e-5, atol=1e-7)
        assert m.converged_
    # the objective_ attribute is eq. (1) at coef_, recomputed by an independent oracle
    o = make_oracle("brute", X.toarray() if sparse else X, y, None, C=3.0)
    # qid groups documents: rebuild the grouping the estimator used
    from rankbench.data.ranking_data import RankingData
    data = RankingData.from_arrays(X, y, qid)
    o = make_oracle("brute", data.X, data.y, data.query_ptr, C=3.0)
    assert o.fun(ref.coef_) == pytest.approx(ref.objective_, rel=1e-12)


def test_dense_and_sparse_inputs_give_the_same_model():
    X, y, qid = _data(2, sparse=True)
    a = RankSVM(C=0.3, tol=1e-12).fit(X, y, qid)
    b = RankSVM(C=0.3, tol=1e-12).fit(X.toarray(), y, qid)
    # decrement/f < 1e-12 pins w to ~1e-6 relative (f - f* ~ ||w - w*||^2)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-12)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X.toarray()), rtol=1e-6, atol=1e-9)


def test_interleaved_qid_is_grouped_and_none_is_one_query():
    X, y, qid = _data(3)
    perm = np.random.default_rng(0).permutation(len(y))
    a = RankSVM(C=1.0, tol=1e-12).fit(X, y, qid)
    b = RankSVM(C=1.0, tol=1e-12).fit(X[perm], y[perm], qid[perm])
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-8, atol=1e-10)
    auc = RankSVM(C=1.0, tol=1e-12).fit(X, y)
    assert auc.n_pairs_ > a.n_pairs_  # one query: every pair of different labels counts
    assert np.array_equal(auc.predict(X), auc.decision_function(X))


def test_fit_attributes_history_and_zero_dual_share():
    X, y, qid = _data(4)
    m = RankSVM(C=10.0, solver="tron_tree", tol=1e-8, keep_coef_history=True).fit(X, y, qid)
    assert m.n_iter_ == len(m.history_) - 1 >= 1
    assert m.n_cg_iter_ == m.history_[-1]["cg_iter"] > 0
    assert {"iter", "objective", "grad_norm", "cg_iter", "elapsed", "coef"} <= set(m.history_[-1])
    np.testing.assert_array_equal(m.history_[-1]["coef"], m.coef_)
    assert m.fit_time_ > 0 and m.compile_time_ >= 0
    from rankbench.data.ranking_data import RankingData
    data = RankingData.from_arrays(X, y, qid)
    z = data.X @ m.coef_
    n_ge, n_all = 0, 0
    for a, b in zip(data.query_ptr[:-1], data.query_ptr[1:], strict=True):
        for i in range(a, b):
            for j in range(a, b):
                if data.y[i] > data.y[j]:
                    n_all += 1
                    n_ge += z[i] - z[j] >= 1
    assert m.n_pairs_ == n_all
    assert m.zero_dual_share_ == pytest.approx(n_ge / n_all)
    assert pairs_with_margin(m.coef_, data.X, data.y, data.query_ptr) == (n_all, n_ge)
    assert m.extra_["zero_dual_share"] == m.zero_dual_share_ and m.extra_["n_pairs"] == n_all
    assert (m.extra_["optimizer"], m.extra_["oracle"]) == ("tron", "tree")


def test_hinge_huber_and_rescaling_through_the_estimator():
    X, y, qid = _data(5)
    cp = RankSVM(C=0.5, solver="cutting_plane", loss="hinge", tol=1e-8).fit(X, y, qid)
    sg = RankSVM(C=0.5, solver="sgd_queries", loss="hinge", max_iter=3000).fit(X, y, qid)
    assert cp.converged_ and cp.objective_ <= sg.objective_ + 1e-9
    hub = RankSVM(C=0.5, solver="newton_tree", loss="huber", tol=1e-12).fit(X, y, qid)
    hub2 = RankSVM(C=0.5, solver="tron_pairs", loss="huber", tol=1e-10).fit(X, y, qid)
    assert hub.objective_ == pytest.approx(hub2.objective_, rel=1e-9)
    s1 = RankSVM(C=0.5, solver="prsvm_plus", rescaling="slack", tol=1e-12).fit(X, y, qid)
    s2 = RankSVM(C=0.5, solver="prsvm", rescaling="slack", tol=1e-12).fit(X, y, qid)
    plain = RankSVM(C=0.5, solver="prsvm", tol=1e-12).fit(X, y, qid)
    assert s1.objective_ == pytest.approx(s2.objective_, rel=1e-10)
    assert s1.objective_ > plain.objective_  # weights 2^a - 2^b >= 1 make every pair cost more
    m1 = RankSVM(C=0.5, solver="tron_counting", rescaling="margin", tol=1e-10).fit(X, y, qid)
    m2 = RankSVM(C=0.5, solver="prsvm", rescaling="margin", tol=1e-12).fit(X, y, qid)
    assert m1.objective_ == pytest.approx(m2.objective_, rel=1e-8)


def test_bad_parameters_and_inputs_are_refused_clearly():
    X, y, qid = _data(6)
    with pytest.raises(ValueError, match="hinge"):
        RankSVM(solver="prsvm_plus", loss="hinge").fit(X, y, qid)
    with pytest.raises(ValueError, match="C must be"):
        RankSVM(C=0.0).fit(X, y, qid)
    with pytest.raises(ValueError, match="tol"):
        RankSVM(tol=-1).fit(X, y, qid)
    with pytest.raises(ValueError, match="rescaling"):
        RankSVM(solver="tron_tree", rescaling="slack").fit(X, y, qid)
    with pytest.raises(ValueError, match="not fitted"):
        RankSVM().decision_function(X)
    m = RankSVM().fit(X, y, qid)
    with pytest.raises(ValueError, match="features"):
        m.decision_function(X[:, :2])
    with pytest.raises(ValueError, match="NaN"):
        RankSVM().fit(np.full_like(X, np.nan), y, qid)
    assert clone(m).get_params()["solver"] == "prsvm_plus"


def test_kernel_pca_map_reproduces_the_kernel_and_fits_nonlinear_relevance():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((120, 2))
    km = KernelMap(kernel="rbf", gamma=0.5).fit(X)
    P = km.transform(X)
    np.testing.assert_allclose(P @ P.T, rbf_kernel(X, gamma=0.5), atol=1e-6)
    # relevance depends on the distance to the origin: no linear ranker can order it
    y = (np.linalg.norm(X, axis=1) < 1.0).astype(int)
    lin = RankSVM(C=1.0).fit(X, y)
    ker = make_pipeline(KernelMap(kernel="rbf", gamma=0.5), RankSVM(C=1.0)).fit(X, y)
    nys = make_pipeline(KernelMap(kernel="rbf", gamma=0.5, n_components=40, random_state=0),
                        RankSVM(C=1.0)).fit(X, y)
    # the deprecated spelling is the same model, with a FutureWarning
    with pytest.warns(FutureWarning, match="Pipeline"):
        old = RankSVM(C=1.0, kernel="rbf", gamma=0.5).fit(X, y)
    np.testing.assert_allclose(old.decision_function(X), ker.decision_function(X), rtol=1e-10)

    def auc(s):
        pos, neg = s[y == 1], s[y == 0]
        return np.mean(pos[:, None] > neg[None, :])

    assert auc(lin.decision_function(X)) < 0.75
    assert auc(ker.decision_function(X)) > 0.97
    assert auc(nys.decision_function(X)) > 0.9
    with pytest.raises(ValueError, match="n_components"):
        KernelMap(n_components=0).fit(X)


def test_registry_factory_refuses_bad_parameters_at_build_time():
    with pytest.raises(ValueError, match="C must be"):
        make_solver("prsvm_plus", {"C": -1.0})
    with pytest.raises(ValueError, match="hinge"):
        make_solver("tron_tree", {"loss": "hinge"})
    with pytest.raises(ValueError, match="unknown loss"):
        make_solver("tron_tree", {"loss": "exponential"})
    with pytest.raises(ValueError, match="optimizers for this loss on the tree oracle: cutting_plane, sgd_pairs, sgd_queries"):
        make_solver("lbfgs_tree", {"loss": "hinge"})
    with pytest.raises(ValueError, match="takes no tol"):
        make_solver("sgd_queries", {"tol": 1e-3})
    with pytest.raises(ValueError, match="unknown RankSVM parameter.*'not_a_parameter'"):
        make_solver("prsvm", {"not_a_parameter": 1})


def test_scaling_benchmark_rows_show_linear_memory_for_counting_and_tree(monkeypatch):
    from rankbench.bench.ranksvm import scaling_rows
    from rankbench.objective import tree

    # the tree's sweep scratch kept by small problems (SMALL_WORK_DOCS) left out: the accounting
    # below is of the state both oracles need (test_oracles counts the kept scratch)
    monkeypatch.setattr(tree, "SMALL_WORK_DOCS", 0)
    rows = scaling_rows(quick=True, sizes=(400, 800))
    by = {(r["n"], r["solver"]): r for r in rows}
    for n in (400, 800):
        assert by[(n, "prsvm")]["objective"] == pytest.approx(by[(n, "prsvm_plus")]["objective"], rel=1e-6)
    # PRSVM keeps O(p) state (p quadruples when n doubles), the counting/tree oracles O(n)
    ratio_pairs = by[(800, "prsvm")]["oracle_state_mb"] / by[(400, "prsvm")]["oracle_state_mb"]
    ratio_tree = by[(800, "tron_tree")]["oracle_state_mb"] / by[(400, "tron_tree")]["oracle_state_mb"]
    ratio_p = by[(800, "prsvm")]["n_pairs"] / by[(400, "prsvm")]["n_pairs"]
    assert ratio_pairs == pytest.approx(ratio_p, rel=0.15)
    assert ratio_tree == pytest.approx(2.0, rel=0.05)
    # counting keeps the same per-document arrays as tree but for its level-grouped order (n int64)
    # and the scores gathered in that order (n float64, once per sort) where tree keeps its sweeps'
    # pointers (2n int32) and their row per loss piece (one int64)
    extra = by[(800, "prsvm_plus")]["oracle_state_mb"] - by[(800, "tron_tree")]["oracle_state_mb"]
    assert extra * 2**20 == pytest.approx(800 * 8 + 800 * 8 - 2 * 800 * 4 - 8)


@pytest.mark.parametrize("solver", ["prsvm", "prsvm_plus", "tron_tree", "cutting_plane", "sgd_queries"])
def test_no_preference_pairs_gives_the_zero_model(solver):
    X = np.random.default_rng(0).standard_normal((10, 3))
    m = make_solver(solver, {"C": 1.0}).fit(X, np.ones(10, dtype=int), np.repeat([1, 2], 5))
    assert np.all(m.coef_ == 0.0) and m.objective_ == 0.0 and m.converged_ and m.n_pairs_ == 0
    assert np.isnan(m.zero_dual_share_)
