"""Every pair oracle against the numpy brute force (value, gradient, Hv), and the brute force
against finite differences and hand-worked pairs."""

import numpy as np
import pytest
import scipy.sparse as sp

from rankbench.objective import (
    ORACLES,
    count_pairs,
    make_oracle,
    pairs_with_margin,
    ranksvm_objective,
)

FAST = [name for name in ORACLES if name != "brute"]


def _problem(seed, sizes, n_levels, d=5, integer=True, sparse=False):
    """Random grouped problem; integer data and half-integer w make margins hit t = 1 exactly."""
    rng = np.random.default_rng(seed)
    ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(ptr[-1])
    if integer:
        X = rng.integers(-2, 3, size=(n, d)).astype(float)
        w = rng.integers(-2, 3, size=d) / 2.0
    else:
        X = rng.standard_normal((n, d))
        w = rng.standard_normal(d)
    y = rng.integers(0, n_levels, size=n) * 3 - 1  # labels need not start at 0
    if sparse:
        X[rng.random(X.shape) < 0.5] = 0.0
        X = sp.csr_matrix(X)
    return X, y, ptr, w, rng.standard_normal(d)


CASES = [
    # (seed, query sizes, levels, integer data, sparse)
    (0, [1, 5, 8, 3, 12, 7], 2, True, False),
    (1, [1, 5, 8, 3, 12, 7], 3, True, True),
    (2, [20, 1, 1, 9, 30], 5, True, False),
    (3, [40], 2, False, True),
    (4, [6, 6, 6, 25], 4, False, False),
    (5, [2, 3, 50], 5, True, True),
]


@pytest.mark.parametrize("loss", ["squared_hinge", "huber", "hinge"])
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("oracle", FAST)
def test_oracle_matches_brute_force(oracle, case, loss):
    seed, sizes, k, integer, sparse = case
    X, y, ptr, w, v = _problem(seed, sizes, k, integer=integer, sparse=sparse)
    ref = make_oracle("brute", X, y, ptr, C=0.37, loss=loss)
    got = make_oracle(oracle, X, y, ptr, C=0.37, loss=loss)
    f_ref, f = ref.fun(w), got.fun(w)
    assert f == pytest.approx(f_ref, rel=1e-10, abs=1e-12)
    np.testing.assert_allclose(got.grad(w), ref.grad(w), rtol=1e-10, atol=1e-10 * np.abs(ref.grad(w)).max())
    if loss != "hinge":
        h_ref = ref.hess_vec(v)
        np.testing.assert_allclose(got.hess_vec(v), h_ref, rtol=1e-10, atol=1e-10 * np.abs(h_ref).max())


def test_margin_ties_are_counted_the_same_everywhere():
    # every pair difference sits exactly on t = 1 or t = 0: the generalized Hessian
    # convention (active iff t < 1 strictly) must be shared by all oracles
    X = np.array([[1.0], [0.0], [1.0], [0.0], [2.0], [1.0]])
    y = np.array([1, 0, 1, 0, 2, 1])
    ptr = np.array([0, 6])
    w = np.array([1.0])
    ref = make_oracle("brute", X, y, ptr, C=1.0)
    ref.fun(w)
    # pairs: (1,0)-labelled with t=1 -> inactive; label 2 (z=2) over label 1 (z=1,1,1): t=1 -> inactive;
    # label 2 over label 0 (z=0): t=2 -> inactive; label-1 docs over label-0 docs: t in {1} -> inactive
    assert ref.fun(w) == pytest.approx(0.5)
    assert np.allclose(ref.hess_vec(np.array([1.0])), [1.0])
    for name in FAST:
        o = make_oracle(name, X, y, ptr, C=1.0)
        assert o.fun(w) == ref.fun(w)
        assert np.allclose(o.hess_vec(np.array([1.0])), [1.0])
    # shift one document by 0.5 so exactly its pairs become active
    w2 = np.array([0.5])
    for name in ORACLES:
        o = make_oracle(name, X, y, ptr, C=1.0)
        # z = (.5,0,.5,0,1,.5): pairs 1>0 t=.5 (6 of them: 3 label-1 x 2 label-0, loss .25 each),
        # 2>1 t=.5 (3 pairs, .25 each), 2>0 t=1 (2 pairs, 0)
        assert o.fun(w2) == pytest.approx(0.125 + 9 * 0.25)


def test_hand_worked_single_pair():
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    y = np.array([1, 0])
    w = np.array([0.25, -0.25])  # t = 0.5: loss 0.25, dL/dt = -1
    for name in ORACLES:
        o = make_oracle(name, X, y, None, C=2.0)
        assert o.fun(w) == pytest.approx(0.0625 + 2.0 * 0.25)
        np.testing.assert_allclose(o.grad(w), w + 2.0 * np.array([-1.0, 1.0]))
        np.testing.assert_allclose(o.hess_vec(np.array([1.0, 0.0])), [1.0 + 4.0, -4.0])


@pytest.mark.parametrize("loss", ["squared_hinge", "huber"])
def test_brute_force_gradient_and_hessian_match_finite_differences(loss):
    X, y, ptr, w, v = _problem(7, [9, 14], 3, integer=False)
    o = make_oracle("brute", X, y, ptr, C=0.8, loss=loss)
    f0 = o.fun(w)
    g = o.grad(w)
    hv = o.hess_vec(v)
    eps = 1e-6
    fd = np.array([(o.fun(w + eps * e) - o.fun(w - eps * e)) / (2 * eps) for e in np.eye(len(w))])
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)
    o.fun(w + eps * v)
    gp = o.grad(w + eps * v)
    o.fun(w - eps * v)
    gm = o.grad(w - eps * v)
    np.testing.assert_allclose(hv, (gp - gm) / (2 * eps), rtol=1e-5, atol=1e-5)
    assert np.isfinite(f0)


@pytest.mark.parametrize("rescaling", ["margin", "slack"])
@pytest.mark.parametrize("oracle", ["pairs", "counting"])
def test_label_pair_rescaling_matches_brute_force(oracle, rescaling):
    X, y, ptr, w, v = _problem(11, [7, 15, 4, 30], 4, integer=False, sparse=True)
    w = w * 0.3
    y = np.abs(y) % 4  # gains 2^y - 2^y' stay moderate
    kw = dict(C=0.5, rescaling=rescaling, delta="gain_difference")
    ref = make_oracle("brute", X, y, ptr, **kw)
    got = make_oracle(oracle, X, y, ptr, **kw)
    assert got.fun(w) == pytest.approx(ref.fun(w), rel=1e-10)
    np.testing.assert_allclose(got.grad(w), ref.grad(w), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got.hess_vec(v), ref.hess_vec(v), rtol=1e-10, atol=1e-12)
    plain = make_oracle("brute", X, y, ptr, C=0.5)
    assert plain.fun(w) != pytest.approx(ref.fun(w))


def test_tree_refuses_rescaling():
    X, y, ptr, w, v = _problem(0, [5, 5], 3)
    with pytest.raises(ValueError, match="rescaling"):
        make_oracle("tree", X, y, ptr, rescaling="slack")


def test_count_pairs_and_margin_share():
    y = np.array([2, 1, 0, 0, 1, 1, 1])
    ptr = np.array([0, 4, 7])
    # query 1: labels 2,1,0,0 -> 1 + 2 + 2 = 5 pairs; query 2: labels 1,1,1 -> none
    assert count_pairs(y, ptr) == 5
    X = np.array([[3.0], [1.5], [0.0], [1.0], [0.0], [0.0], [0.0]])
    # pairs (z diff): 2>1 (1.5), 2>0 (3, 2), 1>0 (1.5, 0.5) -> four with margin >= 1
    assert pairs_with_margin(np.array([1.0]), X, y, ptr) == (5, 4)
    f = ranksvm_objective(np.array([1.0]), X, y, ptr, C=2.0)
    assert f == pytest.approx(0.5 + 2.0 * 0.25)
    assert ranksvm_objective(np.array([1.0]), X, y, ptr, C=2.0, loss="hinge") == pytest.approx(0.5 + 2.0 * 0.5)


def test_bad_input_is_refused_before_any_kernel():
    X = np.zeros((4, 2))
    y = np.array([0, 1, 0, 1])
    with pytest.raises(ValueError, match="query_ptr"):
        ranksvm_objective(np.zeros(2), X, y, np.array([0, 3]), C=1.0)
    with pytest.raises(ValueError, match="C must be"):
        ranksvm_objective(np.zeros(2), X, y, None, C=-1.0)
    with pytest.raises(ValueError, match="unknown loss"):
        ranksvm_objective(np.zeros(2), X, y, None, C=1.0, loss="exponential")
    with pytest.raises(ValueError, match="w must be"):
        ranksvm_objective(np.zeros(3), X, y, None, C=1.0)
    with pytest.raises(ValueError, match="unknown oracle"):
        ranksvm_objective(np.zeros(2), X, y, None, C=1.0, oracle="magic")
    with pytest.raises(ValueError, match="NaN"):
        ranksvm_objective(np.zeros(2), np.full((4, 2), np.nan), y, None, C=1.0)
    with pytest.raises(ValueError, match="no Hessian"):
        o = make_oracle("tree", X, y, None, loss="hinge")
        o.fun(np.zeros(2))
        o.hess_vec(np.zeros(2))


@pytest.mark.parametrize("sparse", [False, True])
def test_jacobi_preconditioner_is_the_same_for_every_oracle(sparse):
    X, y, ptr, w, v = _problem(9, [10, 4, 22], 3, integer=False, sparse=sparse)
    diags = []
    for name in ORACLES:
        o = make_oracle(name, X, y, ptr, C=2.0)
        o.fun(w)
        diags.append(o.hess_diag())
    for dg in diags[1:]:
        np.testing.assert_allclose(dg, diags[0], rtol=1e-10)
    assert np.all(diags[0] >= 1.0)
    # the true Hessian diagonal, e_j . H e_j, is positive and within a factor of the estimate's scale
    o = make_oracle("brute", X, y, ptr, C=2.0)
    o.fun(w)
    true = np.array([o.hess_vec(e)[j] for j, e in enumerate(np.eye(len(w)))])
    assert np.all(true >= 1.0)
    assert np.all(diags[0] <= 2.0 * true)


@pytest.mark.parametrize("sparse", [False, True])
def test_degenerate_queries_single_level_single_document_and_empty(sparse):
    rng = np.random.default_rng(12)
    # queries: one document; all labels equal; empty; five levels with tied scores; two levels
    y = np.concatenate([[3], [1, 1, 1, 1], [], [0, 1, 2, 3, 4, 4, 2, 0], [0, 1, 1, 0]]).astype(int)
    ptr = np.array([0, 1, 5, 5, 13, 17])
    X = rng.integers(-1, 2, size=(17, 3)).astype(float)
    X[5:9] = X[5]  # identical documents in the 5-level query: tied scores across levels
    if sparse:
        X = sp.csr_matrix(X)
    w, v = np.array([0.5, -1.0, 1.0]), rng.standard_normal(3)
    ref = make_oracle("brute", X, y, ptr, C=1.5)
    f_ref, g_ref, h_ref = ref.fun(w), ref.grad(w), ref.hess_vec(v)
    assert ref.n_pairs() == 0 + 0 + 0 + (64 - 14) // 2 + 4  # level counts 2,1,2,1,2 and 2,2
    for name in FAST:
        o = make_oracle(name, X, y, ptr, C=1.5)
        assert o.n_pairs() == ref.n_pairs()
        assert o.fun(w) == pytest.approx(f_ref, rel=1e-12)
        np.testing.assert_allclose(o.grad(w), g_ref, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(o.hess_vec(v), h_ref, rtol=1e-12, atol=1e-12)
    # documents of queries without pairs get no gradient in score space
    o = make_oracle("tree", X, y, ptr, C=1.5)
    o.fun(w)
    assert np.all(o.grad_scores()[:5] == 0.0)


@pytest.mark.parametrize("seed", range(12))
def test_random_problems_many_levels_all_oracles_agree(seed):
    rng = np.random.default_rng(100 + seed)
    sizes = rng.integers(1, 40, size=rng.integers(1, 6))
    levels = int(rng.integers(1, 30))
    X, y, ptr, w, v = _problem(200 + seed, list(sizes), levels, d=int(rng.integers(1, 7)),
                               integer=bool(seed % 2), sparse=bool(seed % 3 == 0))
    loss = ["squared_hinge", "huber", "hinge"][seed % 3]
    ref = make_oracle("brute", X, y, ptr, C=0.9, loss=loss)
    f_ref, g_ref = ref.fun(w), ref.grad(w)
    h_ref = ref.hess_vec(v) if loss != "hinge" else None
    for name in FAST:
        o = make_oracle(name, X, y, ptr, C=0.9, loss=loss)
        assert o.n_pairs() == ref.n_pairs()
        assert o.fun(w) == pytest.approx(f_ref, rel=1e-10, abs=1e-12)
        np.testing.assert_allclose(o.grad(w), g_ref, rtol=1e-10, atol=1e-10 * (1 + np.abs(g_ref).max()))
        if h_ref is not None:
            np.testing.assert_allclose(o.hess_vec(v), h_ref, rtol=1e-10, atol=1e-10 * (1 + np.abs(h_ref).max()))


# ---- logistic loss: exact for pairs / brute, piecewise approximation for counting / tree
def _agree(got, ref, w, v, rel=1e-10):
    f_ref = ref.fun(w)
    assert got.fun(w) == pytest.approx(f_ref, rel=rel, abs=1e-12)
    g_ref = ref.grad(w)
    np.testing.assert_allclose(got.grad(w), g_ref, rtol=rel, atol=rel * (1 + np.abs(g_ref).max()))
    h_ref = ref.hess_vec(v)
    np.testing.assert_allclose(got.hess_vec(v), h_ref, rtol=rel, atol=rel * (1 + np.abs(h_ref).max()))
    d_ref = ref.hess_diag()
    np.testing.assert_allclose(got.hess_diag(), d_ref, rtol=rel)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("oracle", ["counting", "tree"])
def test_logistic_on_counting_and_tree_is_the_piecewise_approximation_to_brute_force(oracle, case):
    from rankbench.objective.logistic import LOGISTIC_PIECEWISE

    seed, sizes, k, integer, sparse = case
    X, y, ptr, w, v = _problem(seed, sizes, k, integer=integer, sparse=sparse)
    got = make_oracle(oracle, X, y, ptr, C=0.37, loss="logistic")
    assert got.loss is LOGISTIC_PIECEWISE and got.requested_loss.name == "logistic"
    _agree(got, make_oracle("brute", X, y, ptr, C=0.37, loss=LOGISTIC_PIECEWISE), w, v)


@pytest.mark.parametrize("case", CASES)
def test_logistic_on_pairs_is_exact_and_matches_brute_force(case):
    seed, sizes, k, integer, sparse = case
    X, y, ptr, w, v = _problem(seed, sizes, k, integer=integer, sparse=sparse)
    ref = make_oracle("brute", X, y, ptr, C=0.37, loss="logistic")
    got = make_oracle("pairs", X, y, ptr, C=0.37, loss="logistic")
    assert got.loss.name == ref.loss.name == "logistic"
    _agree(got, ref, w, v)
    # against the definition, pair by pair
    z = np.asarray(X @ w).ravel()
    total = sum(np.logaddexp(0.0, -(z[i] - z[j])) for a, b in zip(ptr[:-1], ptr[1:], strict=True)
                for i in range(a, b) for j in range(a, b) if y[i] > y[j])
    assert ref.fun(w) == pytest.approx(0.5 * w @ w + 0.37 * total, rel=1e-12)


@pytest.mark.parametrize("rescaling", ["margin", "slack"])
def test_logistic_with_label_pair_rescaling_pairs_and_counting_match_brute_force(rescaling):
    from rankbench.objective.logistic import LOGISTIC_PIECEWISE

    X, y, ptr, w, v = _problem(11, [7, 15, 4, 30], 4, integer=False, sparse=True)
    y = np.abs(y) % 4
    kw = dict(C=0.5, rescaling=rescaling, delta="gain_difference")
    _agree(make_oracle("pairs", X, y, ptr, loss="logistic", **kw),
           make_oracle("brute", X, y, ptr, loss="logistic", **kw), w * 0.3, v)
    _agree(make_oracle("counting", X, y, ptr, loss="logistic", **kw),
           make_oracle("brute", X, y, ptr, loss=LOGISTIC_PIECEWISE, **kw), w * 0.3, v)


def test_brute_force_logistic_gradient_and_hessian_match_finite_differences():
    X, y, ptr, w, v = _problem(7, [9, 14], 3, integer=False)
    o = make_oracle("brute", X, y, ptr, C=0.8, loss="logistic", rescaling="margin")
    o.fun(w)
    g, hv = o.grad(w), o.hess_vec(v)
    eps = 1e-6
    fd = np.array([(o.fun(w + eps * e) - o.fun(w - eps * e)) / (2 * eps) for e in np.eye(len(w))])
    np.testing.assert_allclose(g, fd, rtol=1e-7, atol=1e-7)
    o.fun(w + eps * v)
    gp = o.grad(w + eps * v)
    o.fun(w - eps * v)
    gm = o.grad(w - eps * v)
    np.testing.assert_allclose(hv, (gp - gm) / (2 * eps), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("oracle", FAST)
def test_logistic_approximation_error_on_the_objective_is_within_its_bound(oracle):
    from rankbench.objective.logistic import MAX_ERROR

    X, y, ptr, w, v = _problem(4, [6, 6, 6, 25], 4, integer=False)
    for scale in (0.0, 0.3, 1.0, 3.0):
        exact = make_oracle("brute", X, y, ptr, C=0.6, loss="logistic").fun(scale * w)
        got = make_oracle(oracle, X, y, ptr, C=0.6, loss="logistic").fun(scale * w)
        assert abs(got - exact) <= MAX_ERROR * 0.6 * count_pairs(y, ptr)
        if oracle == "pairs":
            assert got == pytest.approx(exact, rel=1e-12)


def test_a_smooth_loss_without_approximation_is_refused_by_counting_and_tree():
    from rankbench.objective.losses import SmoothLoss

    square = SmoothLoss("square", fun=lambda t: (1 - t) ** 2, grad=lambda t: -2 * (1 - t),
                        hess=lambda t: 2 + 0 * t, curvature_bound=2.0)
    X, y, ptr, w, v = _problem(0, [5, 8], 3, integer=False)
    for name in ("counting", "tree"):
        with pytest.raises(ValueError, match="oracles that evaluate it: brute, pairs"):
            make_oracle(name, X, y, ptr, loss=square)
    # the pairs oracle evaluates it exactly: everywhere quadratic, so it is the brute force's value
    _agree(make_oracle("pairs", X, y, ptr, loss=square), make_oracle("brute", X, y, ptr, loss=square), w, v)


def test_state_nbytes_counts_every_kept_buffer_once():
    """``state_nbytes`` after fun and Hv of one 40,000-document query (past WORK_MIN_DOCS): the
    sweep oracles keep X w, dL/dz, the curvature, X v (``_vecs``, the first three also named by
    the state attributes: counted once; the tree's Hv of the squared hinge finishes H_L d in
    place, without a gamma vector), the order, the pointers and the tree's work arrays
    (4 n-vectors and two (n + 1) x 2 tables), besides the label ranks."""
    from rankbench.objective.tree import WORK_MIN_DOCS

    n = 40_000
    assert n >= WORK_MIN_DOCS
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, 3))
    y = (rng.random(n) < 0.3).astype(float)
    o = make_oracle("tree", X, y, np.array([0, n]), C=0.1)
    before = o.state_nbytes()
    o.fun(np.ones(3))
    o.hess_vec(np.ones(3))
    # 4 float vectors, the int64 order, int32 pointers pa and pd (one row), the work arrays
    added = 4 * 8 * n + 8 * n + 2 * 4 * n + (4 * 8 * n + 2 * 8 * 2 * (n + 1))
    assert o.state_nbytes() - before == added
