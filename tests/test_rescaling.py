"""Chapelle & Keerthi sect. 6.2: position-based costs (DCG swap) in the pairs and brute oracles,
per-document margins (delta_i - delta_j)^2 in the counting (and every one-margin) oracle, each
against an explicit loop over the pairs and the brute force; refusals name the oracles that can."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from rankbench.estimators.ranksvm import RankSVM
from rankbench.objective import make_oracle

C = 0.6


def _problem(seed, sizes, k, d=5):
    rng = np.random.default_rng(seed)
    ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(ptr[-1])
    X = rng.standard_normal((n, d))
    y = rng.integers(0, k, size=n)
    return X, y, ptr, rng.standard_normal(d) * 0.7, rng.standard_normal(d)


def _ideal_positions_by_hand(y, ptr):
    """Position (1-based) in each query's ideal ranking: higher labels first, ties by index."""
    pos = np.zeros(len(y))
    for q in range(len(ptr) - 1):
        docs = list(range(ptr[q], ptr[q + 1]))
        docs.sort(key=lambda i: (-y[i], i))
        for p, i in enumerate(docs, start=1):
            pos[i] = p
    return pos


def _cost_by_hand(delta, y, ptr, i, j, pos):
    """delta_ij, pair by pair, from the paper's formulas (DCG discount 1 / log2(1 + p))."""
    if delta == "dcg_swap":
        return (2.0 ** y[i] - 2.0 ** y[j]) * abs(1 / math.log2(1 + pos[i]) - 1 / math.log2(1 + pos[j]))
    if delta == "gain":
        di, dj = 2.0 ** y[i] - 1, 2.0 ** y[j] - 1
    else:  # ideal_dcg
        di = (2.0 ** y[i] - 1) / math.log2(1 + pos[i])
        dj = (2.0 ** y[j] - 1) / math.log2(1 + pos[j])
    return (di - dj) ** 2


def _loop_objective(X, y, ptr, w, rescaling, delta):
    """f(w) with the squared hinge, by an explicit loop over the preference pairs."""
    z = X @ w
    pos = _ideal_positions_by_hand(y, ptr)
    L = 0.0
    for q in range(len(ptr) - 1):
        for i in range(ptr[q], ptr[q + 1]):
            for j in range(ptr[q], ptr[q + 1]):
                if y[i] > y[j]:
                    cost = _cost_by_hand(delta, y, ptr, i, j, pos)
                    m, c = (math.sqrt(cost), 1.0) if rescaling == "margin" else (1.0, cost)
                    L += c * max(0.0, m - (z[i] - z[j])) ** 2
    return 0.5 * w @ w + C * L


CASES = [(0, [9, 14, 1, 6], 3), (1, [25], 5), (2, [4, 7, 30], 4)]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("rescaling,delta", [("margin", "dcg_swap"), ("slack", "dcg_swap"),
                                             ("margin", "gain"), ("slack", "gain"),
                                             ("margin", "ideal_dcg"), ("slack", "ideal_dcg")])
def test_brute_force_matches_the_loop_over_pairs(case, rescaling, delta):
    X, y, ptr, w, _ = _problem(*case)
    o = make_oracle("brute", X, y, ptr, C=C, rescaling=rescaling, delta=delta)
    assert o.fun(w) == pytest.approx(_loop_objective(X, y, ptr, w, rescaling, delta), rel=1e-12)
    # the gradient by central differences of the loop
    g, eps = o.grad(w), 1e-6
    for t in range(len(w)):
        e = np.zeros_like(w)
        e[t] = eps
        fd = (_loop_objective(X, y, ptr, w + e, rescaling, delta)
              - _loop_objective(X, y, ptr, w - e, rescaling, delta)) / (2 * eps)
        assert g[t] == pytest.approx(fd, rel=1e-5, abs=1e-6)


def _agree(name, X, y, ptr, w, v, **kw):
    ref = make_oracle("brute", X, y, ptr, C=C, **kw)
    got = make_oracle(name, X, y, ptr, C=C, **kw)
    assert got.fun(w) == pytest.approx(ref.fun(w), rel=1e-11)
    np.testing.assert_allclose(got.grad(w), ref.grad(w), rtol=1e-10, atol=1e-10)
    if got.loss.has_hessian:
        np.testing.assert_allclose(got.hess_vec(v), ref.hess_vec(v), rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(got.hess_diag(), ref.hess_diag(), rtol=1e-10)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("loss", ["squared_hinge", "huber", "hinge", "logistic"])
@pytest.mark.parametrize("rescaling,delta", [("margin", "dcg_swap"), ("slack", "dcg_swap"),
                                             ("slack", "gain"), ("margin", "ideal_dcg")])
def test_pairs_oracle_position_and_document_costs_match_brute_force(case, loss, rescaling, delta):
    X, y, ptr, w, v = _problem(*case)
    _agree("pairs", X, y, ptr, w, v, loss=loss, rescaling=rescaling, delta=delta)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("loss", ["squared_hinge", "huber", "hinge"])
@pytest.mark.parametrize("delta", ["gain", "ideal_dcg"])
@pytest.mark.parametrize("oracle", ["counting", "tree", "direct", "joachims"])
def test_document_margin_rescaling_by_score_shift_matches_brute_force(case, loss, delta, oracle):
    """Margin sqrt((d_i - d_j)^2) = d_i - d_j (d non-decreasing in the label): the O(n log n) case."""
    X, y, ptr, w, v = _problem(*case)
    _agree(oracle, X, y, ptr, w, v, loss=loss, rescaling="margin", delta=delta)


def test_document_margin_logistic_through_its_approximation():
    X, y, ptr, w, v = _problem(3, [12, 20], 3)
    from rankbench.objective.logistic import LOGISTIC_PIECEWISE

    ref = make_oracle("brute", X, y, ptr, C=C, loss=LOGISTIC_PIECEWISE, rescaling="margin", delta="gain")
    got = make_oracle("counting", X, y, ptr, C=C, loss="logistic", rescaling="margin", delta="gain")
    assert got.fun(w) == pytest.approx(ref.fun(w), rel=1e-11)
    np.testing.assert_allclose(got.hess_vec(v), ref.hess_vec(v), rtol=1e-10, atol=1e-10)


def test_position_costs_are_the_dcg_difference_of_swapping():
    """One query, labels 2, 0, 1: swapping two documents of the ideal ranking changes its DCG by
    delta_ij exactly."""
    y = np.array([2, 0, 1])
    ptr = np.array([0, 3])
    o = make_oracle("brute", np.eye(3), y, ptr, rescaling="slack", delta="dcg_swap")
    ideal = [0, 2, 1]  # documents by ideal position
    def dcg(order):
        return sum((2.0 ** y[d] - 1) / math.log2(2 + p) for p, d in enumerate(order))
    for i, j in [(0, 1), (0, 2), (2, 1)]:
        swapped = [j if d == i else i if d == j else d for d in ideal]
        _, W = o.pair_margin_weight(np.array([i]), np.array([j]))
        assert W[0] == pytest.approx(dcg(ideal) - dcg(swapped), rel=1e-14)


def test_refusals_name_the_oracles_that_can():
    X, y, ptr, _, _ = _problem(0, [10], 3)
    with pytest.raises(ValueError, match=r"counting oracle supports no margin rescaling with "
                                         r"position-based .* use one of the oracles brute, pairs$"):
        make_oracle("counting", X, y, ptr, rescaling="margin", delta="dcg_swap")
    with pytest.raises(ValueError, match=r"slack rescaling with per-document .* oracles brute, pairs$"):
        RankSVM(solver="tron_counting", rescaling="slack", delta="ideal_dcg").check_params()
    with pytest.raises(ValueError, match=r"tree oracle supports no slack rescaling with label-pair "
                                         r"costs .* brute, pairs, counting$"):
        RankSVM(solver="tron_tree", rescaling="slack").check_params()
    with pytest.raises(ValueError, match="unknown delta 'dcg'"):
        RankSVM(solver="prsvm", rescaling="margin", delta="dcg").check_params()
    with pytest.raises(ValueError, match="unknown rescaling 'both'"):
        RankSVM(solver="prsvm", rescaling="both").check_params()
    RankSVM(solver="tron_tree", rescaling="margin", delta="ideal_dcg").check_params()


def test_tron_counting_with_document_margins_reaches_prsvms_optimum():
    X, y, ptr, _, _ = _problem(4, [20, 30, 15], 3)
    qid = np.repeat(np.arange(3), np.diff(ptr))
    a = RankSVM(C=C, solver="tron_counting", rescaling="margin", delta="ideal_dcg", tol=1e-10).fit(X, y, qid)
    b = RankSVM(C=C, solver="prsvm", rescaling="margin", delta="ideal_dcg", tol=1e-12).fit(X, y, qid)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-8)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-4)


def test_config_validation_refuses_an_oracle_without_the_rescaling():
    from rankbench.cli import conf_dir
    from rankbench.config import ConfigError, validate

    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        ok = compose(config_name="config", overrides=["dataset=synthetic", "solver=prsvm",
                                                      "solver.rescaling=margin", "solver.delta=dcg_swap"])
        validate(ok, check_data=False)
        bad = compose(config_name="config", overrides=["dataset=synthetic", "solver=tron_tree",
                                                       "solver.rescaling=margin", "solver.delta=dcg_swap"])
        with pytest.raises(ConfigError, match="use one of the oracles brute, pairs"):
            validate(bad, check_data=False)
