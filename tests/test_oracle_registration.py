"""Adding an oracle is one file: ``tests/toy_oracle.py`` registers itself on import and is then a
solver of every optimizer, warmed up and fused like the package's own oracles."""

from __future__ import annotations

import copy
import importlib
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from rankbench import RankSVM
from rankbench.objective import ORACLES, PairOracle, make_oracle, register_oracle
from rankbench.optim.registry import ranksvm_solvers


@pytest.fixture
def toy():
    """The toy oracle module imported afresh (so its decorator runs), unregistered afterwards so
    no other test sees it."""
    sys.modules.pop("toy_oracle", None)
    assert "toy" not in ORACLES
    module = importlib.import_module("toy_oracle")
    yield module
    ORACLES.pop("toy", None)
    sys.modules.pop("toy_oracle", None)
    from rankbench.objective import readiness

    readiness._WARM.difference_update({("toy", False), ("toy", True)})


def _data(seed=0, n_queries=30, sparse=False):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 15, n_queries)
    qid = np.repeat(np.arange(n_queries), sizes)
    X = rng.standard_normal((qid.shape[0], 6))
    y = rng.integers(0, 3, qid.shape[0])
    if sparse:
        X[rng.random(X.shape) < 0.5] = 0.0
        X = sp.csr_matrix(X)
    return X, y, qid


def test_importing_the_module_registers_the_oracle_and_its_solvers(toy):
    assert ORACLES["toy"] is toy.AllPairsToyOracle
    solvers = ranksvm_solvers()
    assert solvers["newton_toy"] == ("newton", "toy") and solvers["cutting_plane_toy"] == (
        "cutting_plane", "toy")


@pytest.mark.parametrize("sparse", [False, True])
def test_the_toy_oracle_fits_to_the_brute_force_optimum(toy, sparse):
    X, y, qid = _data(1, sparse=sparse)
    ref = RankSVM(C=0.5, solver="newton_brute", tol=1e-12).fit(X, y, qid)
    for solver in ("newton_toy", "tron_toy", "lbfgs_toy"):
        m = RankSVM(C=0.5, solver=solver, tol=1e-10).fit(X, y, qid)
        assert m.converged_ and m.extra_["oracle"] == "toy"
        assert m.objective_ == pytest.approx(ref.objective_, rel=1e-9), solver
    hinge = RankSVM(C=0.5, solver="cutting_plane_toy", loss="hinge").fit(X, y, qid)
    hinge_ref = RankSVM(C=0.5, solver="cutting_plane_brute", loss="hinge").fit(X, y, qid)
    assert hinge.objective_ == pytest.approx(hinge_ref.objective_, rel=1e-5)


@pytest.mark.parametrize("sparse", [False, True])
def test_its_declared_fused_pass_runs_and_equals_its_separate_products(toy, sparse):
    X, y, qid = _data(2, n_queries=6000, sparse=sparse)  # ~48k rows: at least 8 blocks of queries
    ptr = np.concatenate([[0], np.cumsum(np.bincount(qid))])
    rng = np.random.default_rng(3)
    fused = make_oracle("toy", X, y, ptr, C=0.3, loss="huber")
    plain = make_oracle("toy", X, y, ptr, C=0.3, loss="huber")
    brute = make_oracle("counting", X, y, ptr, C=0.3, loss="huber")  # an independent oracle
    assert fused._fused
    plain.fused_kernels = None
    for _ in range(2):
        w, v = rng.standard_normal(6), rng.standard_normal(6)
        f = fused.fun(w)
        assert f == pytest.approx(plain.fun(w), rel=1e-13) and f == pytest.approx(brute.fun(w), rel=1e-12)
        np.testing.assert_allclose(fused.grad(w), plain.grad(w), rtol=1e-12, atol=1e-10)
        np.testing.assert_allclose(fused.grad(w), brute.grad(w), rtol=1e-10, atol=1e-9)
        hv = fused.hess_vec(v)
        np.testing.assert_allclose(hv, plain.hess_vec(v), rtol=1e-11, atol=1e-9)
        np.testing.assert_allclose(hv, brute.hess_vec(v), rtol=1e-10, atol=1e-8)
        probe = copy.copy(fused)  # its own buffers: the original's state at w is kept
        probe.fun(-w)
        np.testing.assert_array_equal(fused.hess_vec(v), hv)


def test_warm_up_compiles_it_through_its_class_method(toy):
    from rankbench.estimators.ranksvm import warm_up_kernels

    assert warm_up_kernels(("toy",), sparse=True) > 0.0
    assert warm_up_kernels(("toy",), sparse=True) == 0.0  # once per process and layout


def test_a_second_class_under_a_taken_name_is_refused(toy):
    class Impostor(PairOracle):
        name = "toy"

    with pytest.raises(ValueError, match="oracle 'toy' registered twice"):
        register_oracle(Impostor)
    assert register_oracle(toy.AllPairsToyOracle) is toy.AllPairsToyOracle  # the same class again

    class Nameless(PairOracle):
        pass

    with pytest.raises(ValueError, match="must be an identifier other than 'base'"):
        register_oracle(Nameless)


def test_an_oracle_class_with_its_own_init_without_x_stats_still_fits():
    """``RankSVM.fit`` hands the oracle the stats of ``from_arrays``' check (``x_stats=``) only
    when the class's constructor takes them: a registered class written with the constructor
    arguments of an older release keeps working, and reads X for its own check."""
    from rankbench.estimators.ranksvm import _takes_x_stats
    from rankbench.objective.tree import TreeOracle

    seen = {}

    class OldStyle(TreeOracle):
        name = "old_style_tree"

        def __init__(self, X, y, query_ptr=None, C=1.0, loss="squared_hinge", rescaling=None,
                     delta="gain_difference", levels=None):
            seen["init"] = True
            super().__init__(X, y, query_ptr, C=C, loss=loss, rescaling=rescaling, delta=delta,
                             levels=levels)

    class WithKwargs(TreeOracle):
        name = "kwargs_tree"

        def __init__(self, X, y, query_ptr=None, **kw):
            seen["x_stats"] = kw.get("x_stats")
            super().__init__(X, y, query_ptr, **kw)

    assert _takes_x_stats(TreeOracle) and _takes_x_stats(WithKwargs)
    assert not _takes_x_stats(OldStyle)
    register_oracle(OldStyle)
    register_oracle(WithKwargs)
    try:
        X, y, qid = _data(3)
        ref = RankSVM(C=0.5, solver="tron_tree", tol=1e-10).fit(X, y, qid)
        old = RankSVM(C=0.5, solver="tron_old_style_tree", tol=1e-10).fit(X, y, qid)
        kw = RankSVM(C=0.5, solver="tron_kwargs_tree", tol=1e-10).fit(X, y, qid)
        assert seen["init"] and seen["x_stats"] is not None
        assert np.array_equal(old.coef_, ref.coef_) and np.array_equal(kw.coef_, ref.coef_)
    finally:
        ORACLES.pop("old_style_tree", None)
        ORACLES.pop("kwargs_tree", None)
        from rankbench.objective import readiness

        readiness._WARM.difference_update({(n, s) for n in ("old_style_tree", "kwargs_tree")
                                           for s in (False, True)})
