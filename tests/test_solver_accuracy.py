"""Certified accuracy at default settings (issue 11): every exact RankSVM solver (optimizer x oracle,
each loss it supports) ends within 1e-6 relative objective of the optimum, or says it did not
(``converged_ = False`` and a scikit-learn ``ConvergenceWarning`` naming what to change).

The reference optimum is computed independently of the solver under test: a tight-tolerance run
of another pairing (Newton on the explicit pairs or the brute-force oracle, tol 1e-13), its
objective re-evaluated by the brute-force numpy oracle, and never above any solver's objective
by more than rounding (a solver below the reference would mean the reference is wrong).
CI runs OHSUMED (QueryLevelNorm, Feature-min, Feature-null with query_min) and MQ2008 Fold1 at
C = 1e-2, two of them at C = 2^20 as well, and synthetic problems with one feature scaled from
1e-6 to 1e12; the full matrix (every data set x C up to 2^20 x every pairing: about 8 minutes
here) is marked ``matrix`` and runs with ``make test-matrix``, not in ``make test``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from rankbench import RankSVM
from rankbench.objective import ranksvm_objective

REL = 1e-6
# every pairing with a distinct kernel path, with the loss it is run on
SQUARED = ("tron_tree", "tron_counting", "tron_pairs", "newton_tree", "prsvm_plus", "prsvm",
           "lbfgs_tree")
CI_SOLVERS = ("tron_tree", "prsvm_plus", "prsvm", "lbfgs_tree")
LETOR = [("OHSUMED", "QueryLevelNorm", {}), ("OHSUMED", "Feature-min", {}),
         ("OHSUMED", "Feature-null", {"null_policy": "query_min"}), ("MQ2008", None, {})]
FULL_C = (1e-6, 1e-4, 1e-2, 1.0, 1e2, 2.0**10, 2.0**20)


def _fit_checked(solver, C, X, y, qid, loss="squared_hinge"):
    """Fit at defaults, recording ConvergenceWarnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = RankSVM(C=C, solver=solver, loss=loss).fit(X, y, qid)
    conv = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    return m, conv


def _reference(X, y, qid, ptr, C, loss="squared_hinge", oracle_solver="prsvm"):
    """Optimum of eq. (1) by a tight run of a pairing not under test, re-evaluated by brute force."""
    ref = RankSVM(C=C, solver=oracle_solver, loss=loss, tol=1e-13, max_iter=500).fit(X, y, qid)
    f = ranksvm_objective(ref.coef_, X, y, ptr, C, loss=loss, oracle="brute")
    assert f == pytest.approx(ref.objective_, rel=1e-10)
    return f


def _assert_accurate(m, conv, f_ref, what):
    """Within REL of the optimum, or an honest unconverged result with a warning saying what to do."""
    assert m.objective_ >= 0.0, what
    assert m.objective_ >= f_ref * (1 - 1e-9), (what, m.objective_, f_ref)  # reference is the optimum
    rel = (m.objective_ - f_ref) / f_ref
    if m.converged_:
        assert rel <= REL, (what, rel, m.convergence_)
        assert not conv, what
    else:
        assert conv, f"{what}: converged_ False without a ConvergenceWarning"
        msg = str(conv[0].message)
        assert ("max_iter" in msg or "scale the features" in msg) and "tol" in msg
    # the achieved accuracy is stated, and it is what the record will carry
    acc = m.convergence_
    assert acc["converged"] == m.converged_ and acc["tol"] == pytest.approx(1e-6)
    assert any(acc.get(k) is not None for k in ("relative_decrement", "relative_certificate",
                                                 "relative_gap"))
    return rel


def _letor(data_root, name, variant, params):
    from rankbench.data import load_fold

    return load_fold(name, 1, "train", variant=variant, root=data_root, **params)


def _run_letor(data_root, name, variant, params, C, solvers):
    tr = _letor(data_root, name, variant, params)
    f_ref = _reference(tr.X, tr.y, tr.qid, tr.query_ptr, C)
    for s in solvers:
        m, conv = _fit_checked(s, C, tr.X, tr.y, tr.qid)
        _assert_accurate(m, conv, f_ref, f"{name}/{variant}/C={C:g}/{s}")


# CI's cases: every data set at a moderate C, and C = 2^20 (Lee & Lin's, the worst conditioned)
# on the two where it costs seconds; Feature-null at 2^20 (minutes) is in the matrix below
CI_CASES = [(*case, 1e-2) for case in LETOR] + [(*LETOR[1], 2.0**20), (*LETOR[3], 2.0**20)]


@pytest.mark.realdata
@pytest.mark.parametrize("name,variant,params,C", CI_CASES,
                         ids=[f"{n}-{v}-C{C:g}" for n, v, _, C in CI_CASES])
def test_letor_fold1_defaults_within_1e6_or_warned(data_root, name, variant, params, C):
    _run_letor(data_root, name, variant, params, C, CI_SOLVERS)


@pytest.mark.realdata
def test_tron_tree_ohsumed_featmin_known_failure_fixed(data_root):
    """Issue 11: tron_tree at defaults ended at 3267.05 (optimum 3260.46) claiming convergence."""
    tr = _letor(data_root, "OHSUMED", "Feature-min", {})
    m, conv = _fit_checked("tron_tree", 1e-2, tr.X, tr.y, tr.qid)
    assert m.converged_ and not conv
    assert m.objective_ == pytest.approx(3260.4568595, rel=1e-6)


@pytest.mark.realdata
@pytest.mark.matrix
@pytest.mark.parametrize("name,variant,params", LETOR, ids=[f"{n}-{v}" for n, v, _ in LETOR])
@pytest.mark.parametrize("C", FULL_C)
def test_letor_fold1_full_matrix(data_root, name, variant, params, C):
    _run_letor(data_root, name, variant, params, C, SQUARED)


def _scaled_problem(scale, seed=1):
    from rankbench.data.synthetic import make_letor_like

    d = make_letor_like(n_queries=30, docs_per_query=20, n_features=8, seed=seed)
    X = np.array(d.X, dtype=np.float64)
    X[:, 2] *= scale
    return X, d.y, d.qid, d.query_ptr


@pytest.mark.parametrize("scale", [1e-6, 1.0, 1e6, 1e12])
@pytest.mark.parametrize("C", [1e-2, 1.0, 2.0**10])
def test_scaled_features_defaults_within_1e6_or_warned(scale, C):
    """One feature scaled by 1e-6 .. 1e12: TRON used to stop after one step near w = 0."""
    X, y, qid, ptr = _scaled_problem(scale)
    f_ref = _reference(X, y, qid, ptr, C, oracle_solver="newton_brute")
    for s in SQUARED:
        m, conv = _fit_checked(s, C, X, y, qid)
        _assert_accurate(m, conv, f_ref, f"scale={scale:g}/C={C:g}/{s}")
    if scale == 1e12:  # every TRON pairing now reaches it (was: one iteration, w ~ 0)
        for s in ("tron_tree", "tron_counting", "tron_pairs"):
            m, _ = _fit_checked(s, C, X, y, qid)
            assert m.converged_ and m.objective_ <= f_ref * (1 + REL)


HUBER = ("tron_tree", "newton_counting", "lbfgs_pairs")
HINGE = ("cutting_plane", "cutting_plane_tree")


@pytest.mark.parametrize("loss,solvers,scale", [
    ("huber", HUBER, 1.0), ("huber", HUBER, 1e6), ("hinge", HINGE, 1.0),
    pytest.param("hinge", HINGE, 1e6, marks=pytest.mark.long),
])
def test_other_losses_defaults_within_1e6_or_warned(loss, solvers, scale):
    X, y, qid, ptr = _scaled_problem(scale, seed=2)
    C = 0.1
    if loss == "hinge":  # no Hessian: the reference is a tight cutting-plane run on the brute oracle
        ref = RankSVM(C=C, solver="cutting_plane_brute", loss=loss, tol=1e-10,
                      max_iter=5000).fit(X, y, qid)
        f_ref = ranksvm_objective(ref.coef_, X, y, ptr, C, loss=loss, oracle="brute")
        f_ref -= ref.convergence_["relative_gap"] * f_ref  # the certified lower bound
    else:
        f_ref = _reference(X, y, qid, ptr, C, loss=loss, oracle_solver="newton_brute")
    for s in solvers:
        m, conv = _fit_checked(s, C, X, y, qid, loss=loss)
        _assert_accurate(m, conv, f_ref, f"{loss}/scale={scale:g}/{s}")


def test_extreme_C_and_scale_objective_is_finite_and_positive():
    """C = 1e30 or X * 1e12: the objective stays >= 0 and agrees with the brute-force oracle;
    where float64 cannot represent the problem, fit says so."""
    X, y, qid, ptr = _scaled_problem(1.0)
    for C, s in ((1e30, 1.0), (1.0, 1e12), (1e30, 1e12)):
        m, conv = _fit_checked("prsvm_plus", C, X * s, y, qid)
        brute = ranksvm_objective(m.coef_, X * s, y, ptr, C, oracle="brute")
        assert m.objective_ > 0 and brute == pytest.approx(m.objective_, rel=1e-9)
    with pytest.raises(ValueError, match="overflows float64"):
        RankSVM(C=1e305, solver="prsvm_plus").fit(X, y, qid)
    with pytest.raises(ValueError, match="overflows float64"):
        RankSVM(C=1.0, solver="tron_tree").fit(X * 1e160, y, qid)


def test_runner_records_the_achieved_accuracy():
    from rankbench.record import train_block

    class _Mem:
        peak_mb = start_mb = 0.0

    X, y, qid, _ = _scaled_problem(1.0)
    m = RankSVM(C=1.0, solver="tron_tree").fit(X, y, qid)
    block = train_block(m.fit_report(), 0.0, 0.0, _Mem())
    assert block["converged"] is True
    conv = block["convergence"]
    assert conv["relative_decrement"] <= 1e-6 and conv["stopping_rule"] == "newton_decrement"
    assert 0 < conv["relative_grad_norm"] < 1 and conv["relative_certificate"] >= 0
