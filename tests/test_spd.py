"""SPD learners: single steps against the paper's rules, whole runs against a Python loop,
determinism, checkpoints, convergence to the exact RankSVM optimum, and input errors."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

from rankbench.estimators.registry import make_solver
from rankbench.estimators.spd import SPDRanker, log_checkpoints
from rankbench.optim.pair_steps import LEARNERS, pair_step_dense, pair_step_sparse
from rankbench.optim.samplers import build_pair_index, draw_pairs, pair_probabilities
from rankbench.optim.spd import SPDState, run_segment

# ---------------------------------------------------------------------------------------
# Plain-Python reference of each update rule, written from the papers' formulas.


def reference_step(learner, w, xa, xb, ya, yb, t, lam, C):
    """Sculley 2009 sect. 3.2 (and Chapelle Alg. 2 for the squared hinge), on numpy vectors."""
    x = np.asarray(xa, float) - np.asarray(xb, float)
    y = 1.0 if ya > yb else -1.0
    w = np.asarray(w, float).copy()
    m = y * (w @ x)
    if learner in ("sgd_svm", "pegasos"):
        eta = 1.0 / (lam * t)
        w = w - eta * lam * w + (eta * y * x if m < 1 else 0.0)
        if learner == "pegasos":
            w = w * min(1.0, 1.0 / (np.sqrt(lam) * np.linalg.norm(w))) if w.any() else w
        return w
    if learner == "sgd_squared_hinge":
        eta = 1.0 / (lam * t)
        w = (1 - eta * lam) * w + eta * 2 * max(0.0, 1 - m) * y * x
        norm = np.linalg.norm(w)
        return w * min(1.0, np.sqrt(2.0 / lam) / norm) if norm > 0 else w
    if learner in ("perceptron", "margin_perceptron"):
        # sofia-ml's margin perceptron: w <- w + eta y x when y <w, x> <= margin (C here)
        margin = 0.0 if learner == "perceptron" else C
        return w + (1.0 / (lam * t)) * y * x if m <= margin else w
    if learner == "pa1":
        if m < 1 and x @ x > 0:
            w = w + min(C, (1 - m) / (x @ x)) * y * x
        return w
    assert learner == "romma"
    if m < 1:
        xx, ww, wx = x @ x, w @ w, w @ x
        if ww == 0:
            return y * x / xx  # min-norm w with y <w, x> = 1
        den = xx * ww - wx**2
        c = (xx * ww - y * wx) / den
        d = ww * (y - wx) / den
        return c * w + d * x
    return w


def _run_step(kind, learner, w, X, a, b, y, t, lam, C):
    """Apply the library's step to w (given as a plain vector, stored as scale * v)."""
    scale = 0.5  # w stored as scale * v to exercise the representation
    v = np.asarray(w, float) / scale
    vsq = v @ v
    yab = 1.0 if y[a] > y[b] else -1.0
    if kind == "dense":
        scale, vsq, _ = pair_step_dense(np.asarray(X, float), a, b, yab, t, LEARNERS[learner],
                                        lam, C, 0, 10.0, v, scale, vsq)
    else:
        Xs = sp.csr_matrix(np.asarray(X, float))
        scale, vsq, _ = pair_step_sparse(Xs.data, Xs.indices, Xs.indptr, a, b, yab, t,
                                         LEARNERS[learner], lam, C, 0, 10.0, v, scale, vsq)
    np.testing.assert_allclose(vsq, v @ v, rtol=1e-10, atol=1e-14)
    return scale * v


KINDS = ["dense", "sparse"]


@pytest.mark.parametrize("kind", KINDS)
def test_pegasos_step_hand_worked(kind):
    # w = (0.5, 0), x = a - b = (1, 1), y = +1: margin 0.5 < 1.  lam = 0.5, t = 2: eta = 1,
    # shrink to (0.25, 0), add x: (1.25, 1), |w|^2 = 2.5625 > 1/lam = 2, so scale by
    # sqrt(2 / 2.5625) = 0.8834522...
    X = [[1.0, 2.0], [0.0, 1.0]]
    w = _run_step(kind, "pegasos", [0.5, 0.0], X, 0, 1, np.array([1, 0]), 2, 0.5, 1.0)
    np.testing.assert_allclose(w, [1.1043152607, 0.8834522086], rtol=1e-9)


@pytest.mark.parametrize("kind", KINDS)
def test_pa1_step_hand_worked(kind):
    # margin 0.5, loss 0.5, |x|^2 = 2: tau = min(C, 0.25).
    X = [[1.0, 2.0], [0.0, 1.0]]
    y = np.array([1, 0])
    np.testing.assert_allclose(_run_step(kind, "pa1", [0.5, 0.0], X, 0, 1, y, 7, 0.5, 0.1),
                               [0.6, 0.1], rtol=1e-12)
    np.testing.assert_allclose(_run_step(kind, "pa1", [0.5, 0.0], X, 0, 1, y, 7, 0.5, 1.0),
                               [0.75, 0.25], rtol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_romma_step_hand_worked(kind):
    # w = (1, 0), x = (0, 2), y = +1: <w,x> = 0, |x|^2 = 4, |w|^2 = 1: c = 1, d = 1/4.
    X = [[0.0, 3.0], [0.0, 1.0]]
    w = _run_step(kind, "romma", [1.0, 0.0], X, 0, 1, np.array([2, 1]), 5, 0.1, 1.0)
    np.testing.assert_allclose(w, [1.0, 0.5], rtol=1e-12)
    # The new w meets both ROMMA constraints with equality.
    assert w @ [0.0, 2.0] == pytest.approx(1.0)
    assert w @ [1.0, 0.0] == pytest.approx(1.0)


HAND_CASES = [
    # (w, a, b, ya, yb, t, lam, C): a hinge-active step, an inactive one, reversed labels,
    # a step where the Pegasos projection binds, overlapping sparse supports.
    ([0.3, -0.2, 0.0, 1.0], [1.0, 0.0, 2.0, 0.0], [0.0, 1.0, 0.5, 0.0], 2, 0, 3, 0.1, 0.5),
    ([2.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.5], [0.0, 0.0, 0.0, 0.0], 1, 0, 10, 0.01, 0.5),
    ([0.3, -0.2, 0.0, 1.0], [1.0, 0.0, 2.0, 0.0], [0.0, 1.0, 0.5, 0.0], 0, 1, 4, 0.2, 5.0),
    ([3.0, -4.0, 1.0, 0.0], [0.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 3.0], 2, 1, 50, 0.5, 0.01),
    ([0.0, 0.0, 0.0, 0.0], [1.0, 2.0, 0.0, 0.0], [0.0, 2.0, 1.0, 0.0], 1, 0, 1, 0.3, 1.0),
    ([0.1, 0.1, 0.1, 0.1], [0.0, 0.0, 4.0, 0.0], [0.0, 0.0, 1.0, 0.0], 3, 0, 2, 0.05, 2.0),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("learner", list(LEARNERS))
@pytest.mark.parametrize("case", range(len(HAND_CASES)))
def test_single_step_matches_reference(kind, learner, case):
    w, xa, xb, ya, yb, t, lam, C = HAND_CASES[case]
    expect = reference_step(learner, w, xa, xb, ya, yb, t, lam, C)
    got = _run_step(kind, learner, w, [xa, xb], 0, 1, np.array([ya, yb]), t, lam, C)
    np.testing.assert_allclose(got, expect, rtol=1e-10, atol=1e-12)


def test_pa1_skips_pair_with_identical_vectors():
    w = _run_step("dense", "pa1", [0.2, 0.1], [[1.0, 1.0], [1.0, 1.0]], 0, 1, np.array([1, 0]),
                  3, 0.1, 1.0)
    np.testing.assert_allclose(w, [0.2, 0.1])


# ---------------------------------------------------------------------------------------
# Whole runs.


def ranking_problem(seed=0, n_queries=12, d=8, sparse=False):
    """Queries of 8..29 documents, labels 0/1/2 from a noisy linear score."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(8, 30, n_queries)
    n = int(sizes.sum())
    X = rng.normal(size=(n, d))
    if sparse:
        X[rng.random(X.shape) < 0.6] = 0.0
    s = X @ rng.normal(size=d) + 2.0 * rng.normal(size=n)
    y = np.digitize(s, np.quantile(s, [0.6, 0.85])).astype(np.int64)
    qid = np.repeat(np.arange(n_queries) * 7 + 3, sizes)
    return X, y, qid


def brute_pairs(y, qid):
    return np.array([(i, j) for i in range(len(y)) for j in range(len(y))
                     if qid[i] == qid[j] and y[i] > y[j]])


def brute_objective(w, X, y, qid, C, loss="hinge"):
    """Chapelle eq. (1) over all pairs, O(n^2)."""
    P = brute_pairs(y, qid)
    slack = np.maximum(0.0, 1.0 - (X[P[:, 0]] - X[P[:, 1]]) @ w)
    return 0.5 * w @ w + C * np.sum(slack if loss == "hinge" else slack**2)


@pytest.mark.parametrize("learner", list(LEARNERS))
@pytest.mark.parametrize("sampler", ["indexed", "uniform", "rejection", "sofia"])
def test_run_equals_python_loop_over_the_same_pairs(learner, sampler):
    X, y, qid = ranking_problem(seed=1)
    n_iter, lam, C = 3000, 0.05, 0.3
    model = SPDRanker(learner=learner, lam=lam, C=C, margin=C, n_iter=n_iter, sampler=sampler,
                      random_state=9).fit(X, y, qid)
    # SPD trains on the canonical row order (qid, label, features): draw on that order too
    o = np.lexsort(tuple(X.T[::-1]) + (y, qid))
    X, y, qid = X[o], y[o], qid[o]
    a, b, _ = draw_pairs(build_pair_index(y, np.array([0, *np.flatnonzero(np.diff(qid)) + 1,
                                                       len(y)])), sampler, n_iter, 9)
    w = np.zeros(X.shape[1])
    for t in range(1, n_iter + 1):
        w = reference_step(learner, w, X[a[t - 1]], X[b[t - 1]], y[a[t - 1]], y[b[t - 1]], t,
                           lam, C)
    tol = 1e-6 if learner == "romma" else 1e-9  # ROMMA's norms grow large on noisy pairs
    np.testing.assert_allclose(model.coef_, w, rtol=tol, atol=tol * np.abs(w).max())
    assert model.n_iter_ == n_iter


def test_same_seed_is_bit_identical_and_seed_matters():
    X, y, qid = ranking_problem(seed=2)
    fit = lambda seed: SPDRanker(lam=0.01, n_iter=20_000, random_state=seed).fit(X, y, qid).coef_  # noqa: E731
    assert np.array_equal(fit(5), fit(5))
    assert not np.array_equal(fit(5), fit(6))


@pytest.mark.parametrize("sampler", ["uniform", "indexed", "sofia", "rejection"])
@pytest.mark.parametrize("sparse", [False, True])
def test_segmented_run_is_bit_identical_to_one_run(sparse, sampler):
    """Segments (the dense kernel draws each pair one step ahead) continue the one run exactly."""
    X, y, qid = ranking_problem(seed=3, sparse=sparse)
    Xk = sp.csr_matrix(X) if sparse else X
    qp = np.array([0, *np.flatnonzero(np.diff(qid)) + 1, len(y)])
    index = build_pair_index(y, qp)
    one = SPDState.start(X.shape[1], 4)
    run_segment(Xk, index, one, 50_000, "pegasos", 1e-3, 1.0, sampler)
    cut = SPDState.start(X.shape[1], 4)
    for end in (1, 100, 101, 101, 7000, 50_000):
        run_segment(Xk, index, cut, end - cut.n_steps, "pegasos", 1e-3, 1.0, sampler)
    assert np.array_equal(one.coef(), cut.coef())
    assert np.array_equal(one.rng, cut.rng)
    assert np.array_equal(one.counters, cut.counters)


@pytest.mark.parametrize("learner", list(LEARNERS))
def test_sparse_and_dense_kernels_agree(learner):
    X, y, qid = ranking_problem(seed=4, sparse=True)
    kw = dict(learner=learner, lam=0.02, n_iter=5000, random_state=1)
    dense = SPDRanker(**kw).fit(X, y, qid).coef_
    csr = SPDRanker(**kw).fit(sp.csr_matrix(X), y, qid).coef_
    # ROMMA's |w| grows by orders of magnitude on noisy pairs, amplifying rounding.
    tol = 1e-5 if learner == "romma" else 1e-8
    np.testing.assert_allclose(csr, dense, rtol=tol, atol=tol * 1e-2 * np.abs(dense).max())


def exact_hinge_ranksvm(X, y, qid, C):
    """Exact optimum of ``0.5 |w|^2 + sum_p C_p hinge_p`` (C scalar or one per pair of
    brute_pairs), via its box-constrained dual (L-BFGS-B).

    Returns the primal value and the duality gap that certifies it.
    """
    P = brute_pairs(y, qid)
    Z = X[P[:, 0]] - X[P[:, 1]]
    Cp = np.broadcast_to(np.asarray(C, dtype=float), (len(P),))

    def neg_dual(alpha):
        u = Z.T @ alpha
        return 0.5 * u @ u - alpha.sum(), Z @ u - 1.0

    res = minimize(neg_dual, np.zeros(len(P)), jac=True, method="L-BFGS-B",
                   bounds=list(zip(np.zeros(len(P)), Cp, strict=True)),
                   options={"maxiter": 100_000, "ftol": 1e-15, "gtol": 1e-12})
    w = Z.T @ res.x
    primal = 0.5 * w @ w + Cp @ np.maximum(0.0, 1.0 - Z @ w)
    return primal, primal + res.fun


def test_pegasos_uniform_converges_to_the_ranksvm_hinge_optimum():
    X, y, qid = ranking_problem(seed=0)
    lam = 1e-3
    model = SPDRanker(learner="pegasos", lam=lam, n_iter=10_000_000, sampler="uniform",
                      random_state=0).fit(X, y, qid)
    C = 1.0 / (lam * model.n_pairs_)
    assert model.C_equiv_ == pytest.approx(C)
    optimum, gap = exact_hinge_ranksvm(X, y, qid, C)
    assert gap < 1e-6 * optimum
    reached = brute_objective(model.coef_, X, y, qid, C)
    assert optimum <= reached + 1e-9 < 1.01 * optimum
    # Far from converged after 1000 steps: the 1% bound is not vacuous.
    early = SPDRanker(learner="pegasos", lam=lam, n_iter=1000, sampler="uniform").fit(X, y, qid)
    assert brute_objective(early.coef_, X, y, qid, C) > 1.01 * optimum


def test_pegasos_indexed_converges_to_its_documented_weighted_objective():
    # The indexed sampler minimises lambda/2 |w|^2 + sum_p pi(p) hinge_p with the pi of
    # samplers.py: that is 0.5 |w|^2 + sum_p (pi(p)/lambda) hinge_p up to the factor lambda.
    X, y, qid = ranking_problem(seed=12, n_queries=6)
    qp = np.array([0, *np.flatnonzero(np.diff(qid)) + 1, len(y)])
    hi, lo, pi = pair_probabilities(build_pair_index(y, qp), "indexed")
    order = {(int(h), int(m)): p for h, m, p in zip(hi, lo, pi, strict=True)}
    pairs = brute_pairs(y, qid)
    lam = 1e-3
    Cp = np.array([order[(i, j)] for i, j in pairs]) / lam
    optimum, gap = exact_hinge_ranksvm(X, y, qid, Cp)
    assert gap < 1e-6 * optimum
    Z = X[pairs[:, 0]] - X[pairs[:, 1]]
    weighted = lambda w: 0.5 * w @ w + Cp @ np.maximum(0.0, 1.0 - Z @ w)  # noqa: E731
    w_idx = SPDRanker(learner="pegasos", lam=lam, n_iter=10_000_000, sampler="indexed",
                      random_state=0).fit(X, y, qid).coef_
    assert optimum <= weighted(w_idx) + 1e-9 < 1.01 * optimum
    # The uniform sampler's solution is not optimal for this objective.
    w_uni = SPDRanker(learner="pegasos", lam=lam, n_iter=2_000_000, sampler="uniform",
                      random_state=0).fit(X, y, qid).coef_
    assert weighted(w_uni) > 1.02 * optimum


def test_sgd_squared_hinge_converges_to_the_squared_hinge_optimum():
    X, y, qid = ranking_problem(seed=5)
    lam = 1e-2
    model = SPDRanker(learner="sgd_squared_hinge", lam=lam, n_iter=3_000_000, sampler="uniform",
                      random_state=2).fit(X, y, qid)
    C = 1.0 / (lam * model.n_pairs_)
    P = brute_pairs(y, qid)
    Z = X[P[:, 0]] - X[P[:, 1]]

    def f(w):
        s = np.maximum(0.0, 1.0 - Z @ w)
        return 0.5 * w @ w + C * s @ s, w - 2 * C * Z.T @ s

    ref = minimize(f, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B",
                   options={"ftol": 1e-15, "gtol": 1e-10})
    assert np.linalg.norm(ref.jac) < 1e-6 * ref.fun
    reached = brute_objective(model.coef_, X, y, qid, C, loss="squared_hinge")
    assert ref.fun <= reached + 1e-9 < 1.01 * ref.fun


def test_indexed_sampler_weights_queries_not_pairs():
    # One query with many pairs, one with a single pair: uniform over P follows the big
    # query, the indexed sampler gives both the same weight, so their solutions differ.
    X, y, qid = ranking_problem(seed=6, n_queries=2)
    kw = dict(learner="pegasos", lam=0.01, n_iter=200_000, random_state=0)
    w_idx = SPDRanker(sampler="indexed", **kw).fit(X, y, qid).coef_
    w_uni = SPDRanker(sampler="uniform", **kw).fit(X, y, qid).coef_
    w_rej = SPDRanker(sampler="rejection", **kw).fit(X, y, qid).coef_
    C = 1.0 / (0.01 * len(brute_pairs(y, qid)))
    f = lambda w: brute_objective(w, X, y, qid, C)  # noqa: E731
    # rejection and uniform optimise the same objective; indexed another one.
    assert abs(f(w_rej) - f(w_uni)) < 0.01 * f(w_uni)
    assert f(w_idx) > f(w_uni)


@pytest.mark.parametrize("learner", ["pegasos", "sgd_squared_hinge"])
def test_checkpoint_history_reports_the_objective_without_changing_the_run(learner):
    from rankbench.metrics import mean_average_precision

    X, y, qid = ranking_problem(seed=10)
    Xe, ye, qe = ranking_problem(seed=11)
    kw = dict(learner=learner, lam=0.01, n_iter=5000, random_state=3)
    plain = SPDRanker(**kw).fit(X, y, qid)
    tracked = SPDRanker(checkpoints=[10, 1000], keep_coef_history=True, **kw).fit(
        X, y, qid, eval_set=(Xe, ye, qe))
    assert np.array_equal(plain.coef_, tracked.coef_)
    assert np.array_equal(tracked.history_[-1]["coef"], tracked.coef_)
    assert "coef" not in SPDRanker(checkpoints=[10], **kw).fit(X, y, qid).history_[0]
    hist = tracked.history_
    assert [h["iteration"] for h in hist] == [10, 1000, 5000]
    assert all(h1["elapsed"] >= h0["elapsed"] for h0, h1 in zip(hist, hist[1:], strict=False))
    loss = "hinge" if learner == "pegasos" else "squared_hinge"
    C = 1.0 / (0.01 * len(brute_pairs(y, qid)))
    eq1 = brute_objective(tracked.coef_, X, y, qid, C, loss=loss)
    assert hist[-1]["loss"] == loss
    assert hist[-1]["C_equiv"] == pytest.approx(C)
    assert hist[-1]["ranksvm_objective"] == pytest.approx(eq1, rel=1e-10)
    # sofia-ml's scaling: lambda/2 |w|^2 + mean loss over P = lambda * eq. (1) at C.
    assert hist[-1]["objective"] == pytest.approx(0.01 * eq1, rel=1e-10)
    assert tracked.objective_ == hist[-1]["objective"]
    assert hist[-1]["eval_map"] == pytest.approx(
        mean_average_precision(ye, Xe @ tracked.coef_, qe), rel=1e-12)
    assert 0.0 <= hist[0]["eval_ndcg@10"] <= 1.0
    Ce = 1.0 / (0.01 * len(brute_pairs(ye, qe)))
    assert hist[-1]["eval_objective"] == pytest.approx(
        0.01 * brute_objective(tracked.coef_, Xe, ye, qe, Ce, loss=loss), rel=1e-10)


# ---------------------------------------------------------------------------------------
# Estimator surface.


def test_decision_function_and_fitted_attributes():
    X, y, qid = ranking_problem(seed=7)
    model = SPDRanker(lam=0.01, n_iter=1000).fit(X, y, qid)
    np.testing.assert_allclose(model.decision_function(X), X @ model.coef_)
    np.testing.assert_allclose(model.predict(sp.csr_matrix(X)), X @ model.coef_)
    assert model.fit_time_ > 0 and model.compile_time_ >= 0
    assert model.history_ == []
    assert model.n_pairs_ == len(brute_pairs(y, qid))
    with pytest.raises(ValueError, match="features"):
        model.decision_function(X[:, :3])
    with pytest.raises(ValueError, match="not fitted"):
        SPDRanker().decision_function(X)


def test_interleaved_queries_are_grouped():
    X, y, qid = ranking_problem(seed=8)
    perm = np.random.default_rng(0).permutation(len(y))
    a = SPDRanker(lam=0.01, n_iter=100).fit(X, y, qid)
    b = SPDRanker(lam=0.01, n_iter=100).fit(X[perm], y[perm], qid[perm])
    assert a.n_pairs_ == b.n_pairs_


@pytest.mark.parametrize("params, message", [
    ({"lam": 0.0}, "lam must be a finite number > 0"),
    ({"lam": -1.0}, "lam must be a finite number > 0"),
    ({"lam": float("nan")}, "lam must be a finite number > 0"),
    ({"learner": "adam"}, "unknown learner 'adam'"),
    ({"sampler": "stratified"}, "unknown sampler 'stratified'"),
    ({"n_iter": 0}, "n_iter must be an integer >= 1"),
    ({"n_iter": 2.5}, "n_iter must be an integer >= 1"),
    ({"C": 0}, "C must be a finite number > 0"),
    ({"checkpoints": "linear"}, "checkpoints must be"),
    ({"checkpoints": [10, 10**9]}, "checkpoints must lie in"),
    ({"random_state": -3}, "random_state"),
])
def test_bad_parameters_are_value_errors(params, message):
    X, y, qid = ranking_problem(seed=9)
    with pytest.raises(ValueError, match=message):
        SPDRanker(**{"n_iter": 100, **params}).fit(X, y, qid)


def test_no_valid_pair_is_a_value_error():
    X = np.ones((4, 2))
    with pytest.raises(ValueError, match="no valid pairs"):
        SPDRanker().fit(X, [1, 1, 0, 0], [1, 1, 2, 2])


def test_registered_solvers_build_the_right_learner():
    for learner in LEARNERS:
        model = make_solver(f"spd_{learner}", {"lam": 0.1, "n_iter": 10})
        assert isinstance(model, SPDRanker)
        assert model.learner == learner and model.lam == 0.1
    with pytest.raises(ValueError, match="fixes learner"):
        make_solver("spd_pegasos", {"learner": "romma"})


def test_log_checkpoints():
    assert log_checkpoints(1000) == [100, 200, 500, 1000]
    assert log_checkpoints(3000) == [100, 200, 500, 1000, 2000, 3000]
    assert log_checkpoints(50) == [50]


@pytest.mark.parametrize("kernel", ["spd_segment_dense", "spd_segment_sparse"])
def test_segment_kernels_do_no_reference_counting(kernel):
    # Issue 21: reference counting of the arrays handed to the inlined step and sampler
    # cost about a quarter of a Pegasos step.  Compile the kernel afresh with its own
    # options (a cached compile cannot be inspected) and look for the runtime's calls.
    import numba

    import rankbench.optim.spd as spd_module
    from rankbench.optim.pair_steps import ETA_SCHEDULES
    from rankbench.optim.samplers import sampler_code

    disp = getattr(spd_module, kernel)
    opts = {k: v for k, v in disp.targetoptions.items() if k not in ("cache", "nopython")}
    assert opts.get("_nrt") is False
    fresh = numba.njit(**opts)(disp.py_func)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 5))
    y = rng.integers(0, 3, 40)
    index = build_pair_index(y, np.array([0, 20, 40]))
    state = SPDState.start(5, 0)
    if kernel == "spd_segment_dense":
        rows = (X,)
    else:
        Xs = sp.csr_matrix(X)
        rows = (Xs.data, Xs.indices, Xs.indptr)
    # 50 Pegasos steps (lambda 1e-2, C 0.1) under the Pegasos schedule, sofia-ml's sampler
    fresh(*rows, 50, LEARNERS["pegasos"], 1e-2, 0.1, ETA_SCHEDULES["pegasos"], 0.0,
          sampler_code("sofia"), *index.sampler_arrays(), state.rng, state.v, state.fstate,
          state.counters)
    assert state.n_steps == 50
    ir = fresh.inspect_llvm(fresh.signatures[0])
    assert "NRT_incref" not in ir and "NRT_decref" not in ir
