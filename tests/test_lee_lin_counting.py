"""Lee & Lin (2014) supplement, sect. II: the direct counting method (II.1) and Joachims' Alg. (I)
as oracles of their own, on the supplement's worked example and against the brute force."""

import numpy as np
import pytest

from rankbench.estimators.ranksvm import RankSVM
from rankbench.objective import ORACLES, make_oracle
from rankbench.objective.direct import direct_counts
from rankbench.objective.joachims import joachims_counts
from rankbench.optim.registry import ranksvm_solvers

# The worked example of sect. II.1: sorted scores -0.9 -0.7 -0.1 0.15 0.2 1.6 (margin 1), levels
# K = {1, 2, 3}.  The text gives count+ = (1, 2, 0), l_1^+ = 0 at i = 1 and count+ = (1, 2, 2),
# l_2^+ = 2 + 2 = 4 at i = 2; its figure of the labels is lost in the text, but those four facts
# fix them (by hand): the bound -0.9 + 1 = 0.1 covers -0.9, -0.7, -0.1, one of level 1 and two of
# level 2; l_1^+ = 0 means nothing above y_1 among them, so y_1 = 2; l_2^+ = 4 = count+(2) +
# count+(3) means y_2 = 1, so y_3 = 2; the bound 0.3 adds 0.15 and 0.2, both of level 3.
# y_6 (score 1.6, never under either bound) is not determined: every value is tried.
EXAMPLE_Z = np.array([-0.9, -0.7, -0.1, 0.15, 0.2, 1.6])
EXAMPLE_Y5 = [2, 1, 2, 3, 3]


def _brute_counts(z, y, m=1.0):
    lp = np.array([np.sum((y > y[i]) & (z < z[i] + m)) for i in range(len(z))], dtype=float)
    lm = np.array([np.sum((y < y[i]) & (z > z[i] - m)) for i in range(len(z))], dtype=float)
    return lp, lm


@pytest.mark.parametrize("y6", [1, 2, 3])
def test_direct_counting_worked_example(y6):
    y = np.array([*EXAMPLE_Y5, y6])
    lp, lm, trace = direct_counts(EXAMPLE_Z, y, trace=True)
    # count+(r) for r = 1, 2, 3 (label ranks 0, 1, 2) at i = 1 and i = 2, as the supplement
    np.testing.assert_array_equal(trace[0], [1, 2, 0])
    np.testing.assert_array_equal(trace[1], [1, 2, 2])
    assert lp[0] == 0 and lp[1] == 4
    # the other documents by the definition of l_i^+ and l_i^-
    blp, blm = _brute_counts(EXAMPLE_Z, y)
    np.testing.assert_array_equal(lp, blp)
    np.testing.assert_array_equal(lm, blm)


@pytest.mark.parametrize("y6", [1, 2, 3])
def test_joachims_algorithm_worked_example(y6):
    y = np.array([*EXAMPLE_Y5, y6])
    lp, lm = joachims_counts(EXAMPLE_Z, y)
    assert lp[0] == 0 and lp[1] == 4
    blp, blm = _brute_counts(EXAMPLE_Z, y)
    np.testing.assert_array_equal(lp, blp)
    np.testing.assert_array_equal(lm, blm)
    # by hand, y_6 = 3: l^- of the two level-3 documents 0.15 and 0.2 count the documents below
    # level 3 with z > z_i - 1: 0.15 -> -0.7, -0.1 (and not -0.9 <= -0.85): 2; 0.2 -> -0.7, -0.1: 2
    if y6 == 3:
        assert lm[3] == 2 and lm[4] == 2 and lm[5] == 0  # 1.6 - 1 = 0.6: no lower document above


def _ties_problem(seed, sizes, k, d=4):
    """Random queries with tied scores (duplicated rows, integer data) and repeated labels."""
    rng = np.random.default_rng(seed)
    ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(ptr[-1])
    X = rng.integers(-2, 3, size=(n, d)).astype(float)
    dup = rng.random(n) < 0.3
    X[dup] = X[np.maximum(np.flatnonzero(dup) - 1, 0)]
    y = rng.integers(0, k, size=n)
    return X, y, ptr, rng.integers(-3, 4, size=d) / 4.0, rng.standard_normal(d)


@pytest.mark.parametrize("oracle", ["direct", "joachims"])
@pytest.mark.parametrize("loss", ["squared_hinge", "hinge", "huber", "logistic"])
@pytest.mark.parametrize("seed,sizes,k", [(0, [7, 1, 30, 12], 3), (1, [60], 5), (2, [4, 9, 25, 2], 7)])
def test_counting_oracles_match_brute_force_with_ties(oracle, loss, seed, sizes, k):
    X, y, ptr, w, v = _ties_problem(seed, sizes, k)
    z = X @ w
    assert len(np.unique(z)) < len(z)  # the problem has tied scores
    ref = make_oracle("brute", X, y, ptr, C=0.7, loss=ORACLES[oracle].loss_form(loss))
    got = make_oracle(oracle, X, y, ptr, C=0.7, loss=loss)
    assert got.fun(w) == pytest.approx(ref.fun(w), rel=1e-12)
    np.testing.assert_allclose(got.grad(w), ref.grad(w), rtol=1e-11, atol=1e-11)
    if got.loss.has_hessian:
        np.testing.assert_allclose(got.hess_vec(v), ref.hess_vec(v), rtol=1e-11, atol=1e-11)
        np.testing.assert_allclose(got.hess_diag(), ref.hess_diag(), rtol=1e-11)
    # the counts themselves, on the same scores
    for q in range(len(sizes)):
        a, b = ptr[q], ptr[q + 1]
        blp, blm = _brute_counts(z[a:b], y[a:b])
        lp, lm = (direct_counts if oracle == "direct" else joachims_counts)(z[a:b], y[a:b])
        np.testing.assert_array_equal(lp, blp)
        np.testing.assert_array_equal(lm, blm)


def test_every_optimizer_pairs_with_the_new_oracles():
    solvers = ranksvm_solvers()
    for name in ("tron_direct", "newton_direct", "lbfgs_direct", "cutting_plane_direct",
                 "tron_joachims", "newton_joachims", "lbfgs_joachims", "sgd_queries_joachims"):
        assert name in solvers


def test_tron_direct_and_newton_joachims_reach_tron_trees_optimum():
    X, y, ptr, _, _ = _ties_problem(5, [30, 20, 40], 4, d=6)
    qid = np.repeat(np.arange(3), np.diff(ptr))
    ref = RankSVM(C=0.3, solver="tron_tree", tol=1e-10).fit(X, y, qid)
    for solver in ("tron_direct", "newton_joachims"):
        m = RankSVM(C=0.3, solver=solver, tol=1e-10).fit(X, y, qid)
        assert m.objective_ == pytest.approx(ref.objective_, rel=1e-9)
        np.testing.assert_allclose(m.coef_, ref.coef_, atol=1e-5)
        assert m.extra_["oracle"] == solver.split("_")[1]


def test_new_oracles_refuse_label_pair_rescaling():
    X, y, ptr, _, _ = _ties_problem(0, [10], 3)
    for name in ("direct", "joachims"):
        with pytest.raises(ValueError, match="use one of the oracles brute, pairs, counting"):
            make_oracle(name, X, y, ptr, rescaling="slack")
