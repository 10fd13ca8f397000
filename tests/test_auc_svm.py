"""AUC-SVM baseline (Welleck sect. 5): per-class pooled ROCArea SVMs against an explicit-pair scipy solve."""

import numpy as np
import pytest
from scipy.optimize import minimize

pytest.importorskip("rankbench.estimators.ranksvm")

from rankbench.estimators.auc_svm import AUCSVM  # noqa: E402
from rankbench.estimators.registry import make_solver  # noqa: E402


def make_data(seed=0, n=120, d=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    latent = X @ np.array([1.0, -0.5, 0.3, 0.0]) + rng.normal(0, 0.7, n)
    y = np.digitize(latent, np.quantile(latent, [0.6, 0.85]))
    qid = rng.integers(0, 6, size=n)
    return X, y, qid


def pooled_objective(w, X, pos, C, loss):
    """1/2||w||^2 + 100 C/(PN) sum over (pos, neg) pairs of loss(1 - w.(x_i - x_j)), explicit pairs."""
    D = X[pos][:, None, :] - X[~pos][None, :, :]
    m = 1.0 - D.reshape(-1, X.shape[1]) @ w
    pn = pos.sum() * (~pos).sum()
    viol = np.maximum(m, 0.0)
    return 0.5 * w @ w + 100.0 * C / pn * (np.sum(viol**2) if loss == "squared_hinge" else np.sum(viol))


def scipy_l2_solution(X, pos, C):
    D = (X[pos][:, None, :] - X[~pos][None, :, :]).reshape(-1, X.shape[1])
    k = 100.0 * C / D.shape[0]

    def f(w):
        v = np.maximum(1.0 - D @ w, 0.0)
        return 0.5 * w @ w + k * v @ v, w - 2 * k * (D.T @ v)

    return minimize(f, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B",
                    options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 5000}).x


@pytest.mark.long
def test_l2_variant_matches_explicit_pair_solution_per_class():
    X, y, qid = make_data(1)
    m = AUCSVM(C=0.5, solver="prsvm_plus", loss="squared_hinge", tol=1e-10).fit(X, y, qid)
    assert list(m.classes_) == [1, 2]
    coef = np.zeros(X.shape[1])
    for c, est in zip([1, 2], m.estimators_, strict=True):
        ref = scipy_l2_solution(X, y == c, 0.5)
        np.testing.assert_allclose(est.coef_, ref, rtol=1e-4, atol=1e-6)
        coef += c * ref  # combine="level": sum_c c f_c
    np.testing.assert_allclose(m.decision_function(X), X @ coef, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(m.class_scores(X)[:, 1], X @ m.estimators_[1].coef_)


def test_hinge_variant_minimises_the_pooled_hinge_objective():
    X, y, qid = make_data(2)
    C = 0.5
    m = AUCSVM(C=C, tol=1e-6).fit(X, y, qid)
    for c, est in zip(m.classes_, m.estimators_, strict=True):
        pos = y == c
        f = pooled_objective(est.coef_, X, pos, C, "hinge")
        assert f == pytest.approx(est.objective_, rel=1e-6)
        # no better than the hinge solution: the L2 solution and small perturbations are worse
        assert f <= pooled_objective(scipy_l2_solution(X, pos, C), X, pos, C, "hinge") + 1e-6
        rng = np.random.default_rng(0)
        for _ in range(20):
            w = est.coef_ + 0.05 * rng.normal(size=X.shape[1])
            assert f <= pooled_objective(w, X, pos, C, "hinge") + 1e-4 * f


def test_queries_are_pooled_and_combination_weights():
    X, y, qid = make_data(3)
    a = AUCSVM(C=1.0, solver="prsvm_plus", loss="squared_hinge").fit(X, y, qid)
    b = AUCSVM(C=1.0, solver="prsvm_plus", loss="squared_hinge").fit(X, y, None)
    np.testing.assert_allclose(a.coef_, b.coef_)
    p = AUCSVM(C=1.0, solver="prsvm_plus", loss="squared_hinge", combine="prevalence").fit(X, y)
    share = np.array([np.sum(y == 1), np.sum(y == 2)]) / np.sum(y > 0)
    np.testing.assert_allclose(p.class_weights_, share)
    np.testing.assert_allclose(p.coef_, share @ np.array([e.coef_ for e in a.estimators_]))
    binary = AUCSVM(C=1.0, solver="prsvm_plus", loss="squared_hinge").fit(X, (y > 0).astype(int))
    assert len(binary.estimators_) == 1
    # binary=True on graded labels is the same relevant-vs-rest classifier
    graded = AUCSVM(C=1.0, solver="prsvm_plus", loss="squared_hinge", binary=True).fit(X, y)
    np.testing.assert_allclose(graded.coef_, binary.coef_)
    assert not np.allclose(a.coef_, binary.coef_)


def test_registry_and_bad_parameters():
    X, y, qid = make_data(4)
    est = make_solver("auc_svm", {"C": 0.1, "solver": "prsvm_plus", "loss": "squared_hinge"})
    assert est.fit(X, y, qid).decision_function(X).shape == (len(y),)
    with pytest.raises(ValueError, match="C must be"):
        AUCSVM(C=0.0).fit(X, y)
    with pytest.raises(ValueError, match="combine"):
        AUCSVM(combine="max").fit(X, y)
    with pytest.raises(ValueError, match="label > 0"):
        AUCSVM().fit(X, np.zeros(len(y), int))
    with pytest.raises(ValueError, match="not fitted"):
        AUCSVM().decision_function(X)
