"""Paired significance tests: identities, exact enumeration, scipy agreement, validation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from rankbench.significance import (
    exact_randomization_p_value,
    paired_randomization_test,
    paired_t_test,
)


def test_identical_inputs_give_p_one():
    a = np.random.default_rng(0).random(30)
    assert paired_randomization_test(a, a.copy()) == 1.0
    assert paired_t_test(a, a.copy()) == 1.0
    assert exact_randomization_p_value(a[:10], a[:10]) == 1.0


def test_large_consistent_shift_gives_tiny_p():
    rng = np.random.default_rng(1)
    b = rng.random(50)
    a = b + 0.2 + 0.01 * rng.random(50)
    p = paired_randomization_test(a, b, n_resamples=5000)
    assert p == pytest.approx(1 / 5001)  # no sign pattern reaches the observed mean
    assert paired_t_test(a, b) < 1e-30
    c = np.arange(10) / 4  # exact in binary, so c + 0.5 - c is exactly constant
    assert paired_t_test(c + 0.5, c) == 0.0  # constant shift: zero variance


def test_exact_enumeration_by_hand():
    # d = (1, 2, 3): |sum| over the 8 sign patterns: 6, 0, 2, 4, 4, 2, 0, 6 -> two reach 6
    assert exact_randomization_p_value([1, 2, 3], [0, 0, 0]) == pytest.approx(2 / 8)
    # d = (1, 1): |sum| in {2, 0, 0, 2} -> p = 1/2
    assert exact_randomization_p_value([1, 1], [0, 0]) == pytest.approx(0.5)


def test_exact_enumeration_matches_itertools_oracle():
    rng = np.random.default_rng(2)
    d = np.round(rng.normal(0.1, 1.0, 9), 2)
    obs = abs(sum(d))
    hits = sum(abs(sum(s * x for s, x in zip(signs, d, strict=True))) >= obs - 1e-9
               for signs in itertools.product((-1, 1), repeat=len(d)))
    assert exact_randomization_p_value(d, np.zeros_like(d)) == pytest.approx(hits / 2 ** len(d))


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_randomization_agrees_with_exact_within_monte_carlo_error(seed):
    rng = np.random.default_rng(seed)
    b = rng.random(12)
    a = b + rng.normal(0.15, 0.3, 12)
    exact = exact_randomization_p_value(a, b)
    B = 20000
    p = paired_randomization_test(a, b, n_resamples=B, seed=seed)
    se = math.sqrt(exact * (1 - exact) / B)
    assert abs(p - exact) <= 4 * se + 2 / B
    assert 0.0 < exact < 1.0  # the case is not degenerate


def test_randomization_is_reproducible_and_seed_dependent():
    rng = np.random.default_rng(6)
    a, b = rng.random(40), rng.random(40)
    assert paired_randomization_test(a, b, seed=7) == paired_randomization_test(a, b, seed=7)
    assert paired_randomization_test(a, b, seed=7) != paired_randomization_test(a, b, seed=8)


def test_randomization_with_many_queries_uses_blocks():
    rng = np.random.default_rng(9)
    b = rng.random(300_000)
    a = b + rng.normal(0.0, 1.0, b.shape[0])
    p = paired_randomization_test(a, b, n_resamples=50)
    assert 0.0 < p <= 1.0


def test_t_test_agrees_with_scipy():
    rng = np.random.default_rng(10)
    for n in (2, 5, 100):
        a, b = rng.random(n), rng.random(n)
        assert paired_t_test(a, b) == pytest.approx(stats.ttest_rel(a, b).pvalue, rel=1e-12)
        # and with the textbook formula t = mean(d) / (sd(d) / sqrt(n)), n - 1 dof
        d = a - b
        t = d.mean() / (d.std(ddof=1) / math.sqrt(n))
        assert paired_t_test(a, b) == pytest.approx(2 * stats.t.sf(abs(t), n - 1), rel=1e-9)


def test_nan_policy_omit_drops_undefined_queries():
    rng = np.random.default_rng(11)
    a, b = rng.random(15), rng.random(15)
    a_nan, b_nan = a.copy(), b.copy()
    a_nan[3] = np.nan
    b_nan[7] = np.nan
    keep = np.ones(15, bool)
    keep[[3, 7]] = False
    assert paired_t_test(a_nan, b_nan, nan_policy="omit") == paired_t_test(a[keep], b[keep])
    assert paired_randomization_test(a_nan, b_nan, nan_policy="omit") == \
        paired_randomization_test(a[keep], b[keep])
    assert exact_randomization_p_value(a_nan, b_nan, nan_policy="omit") == \
        exact_randomization_p_value(a[keep], b[keep])


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: paired_randomization_test([1.0, 2.0], [1.0]), "same length"),
        (lambda: paired_randomization_test([1.0, np.nan], [1.0, 2.0]), "a contains NaN"),
        (lambda: paired_t_test([1.0, 2.0], [1.0, np.inf]), "b contains NaN or inf"),
        (lambda: paired_t_test([1.0], [2.0]), "at least 2"),
        (lambda: paired_randomization_test([], []), "empty"),
        (lambda: paired_randomization_test([[1.0]], [[1.0]]), "1-D"),
        (lambda: paired_randomization_test([1.0], [2.0], n_resamples=0), "n_resamples"),
        (lambda: exact_randomization_p_value(np.zeros(21), np.ones(21)), "n <= 20"),
        (lambda: paired_t_test([1.0, 2.0], [1.0, 2.0], nan_policy="drop"), "nan_policy"),
        (lambda: paired_t_test([np.nan], [1.0], nan_policy="omit"), "after dropping"),
    ],
)
def test_bad_input_raises_clear_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ---------------------------------------------------------------- a table of comparisons
def test_holm_hand_worked():
    from rankbench.significance import holm

    # sorted p: 0.01, 0.02, 0.04 -> 3*0.01, 2*0.02, 1*0.04 -> monotone max -> 0.03, 0.04, 0.04
    np.testing.assert_allclose(holm([0.04, 0.01, 0.02]), [0.04, 0.03, 0.04])
    np.testing.assert_allclose(holm([0.5, 0.6]), [1.0, 1.0])
    out = holm([0.01, np.nan, 0.2])
    assert np.isnan(out[1]) and out[0] == pytest.approx(0.02) and out[2] == pytest.approx(0.2)


def test_randomization_test_agrees_with_scipy_permutation_test():
    """Our sign-flip test against scipy.stats.permutation_test (paired 'samples' permutations)."""
    from scipy.stats import permutation_test

    from rankbench.significance import paired_randomization_test

    rng = np.random.default_rng(3)
    for shift in (0.0, 0.03, 0.1):
        a = rng.random(40)
        b = a - shift + 0.1 * rng.normal(size=40)
        ours = paired_randomization_test(a, b, n_resamples=20000, seed=1)
        ref = permutation_test((a, b), lambda x, y: np.mean(x - y), permutation_type="samples",
                               n_resamples=20000, alternative="two-sided", random_state=2).pvalue
        assert abs(ours - ref) < 0.015, (shift, ours, ref)


def test_compare_systems_interval_effect_size_and_correction():
    from rankbench.significance import bootstrap_ci, compare_systems, effect_size

    rng = np.random.default_rng(0)
    base = rng.random(100)
    better = base + 0.05 + 0.02 * rng.normal(size=100)
    same = base + 0.02 * rng.normal(size=100)
    rows = compare_systems([("better", better, base), ("same", same, base)])
    by = {r["comparison"]: r for r in rows}
    d = better - base
    assert by["better"]["diff"] == pytest.approx(d.mean())
    assert by["better"]["ci_low"] < d.mean() < by["better"]["ci_high"]
    assert by["better"]["d_z"] == pytest.approx(d.mean() / d.std(ddof=1))
    assert by["better"]["p"] < 0.001 and by["same"]["p"] > 0.01
    assert all(r["p_adjusted"] >= r["p"] for r in rows) and rows[0]["correction"] == "holm"
    # the interval is the percentile bootstrap of the mean: it narrows like 1/sqrt(n)
    lo, hi = bootstrap_ci(np.tile(d, 4))
    assert (hi - lo) < 0.6 * (by["better"]["ci_high"] - by["better"]["ci_low"])
    assert effect_size(np.zeros(5)) == 0.0 and effect_size(np.ones(5)) == np.inf
    # NaN queries of either system are left out
    a = better.copy()
    a[:10] = np.nan
    assert compare_systems([("x", a, base)])[0]["n_queries"] == 90


def test_bootstrap_interval_agrees_with_scipy_bootstrap():
    from scipy.stats import bootstrap

    from rankbench.significance import bootstrap_ci

    d = np.random.default_rng(7).normal(0.02, 0.1, size=80)
    lo, hi = bootstrap_ci(d, n_resamples=20000, seed=1)
    ref = bootstrap((d,), np.mean, n_resamples=20000, method="percentile", confidence_level=0.95,
                    random_state=2).confidence_interval
    assert abs(lo - ref.low) < 0.004 and abs(hi - ref.high) < 0.004


def test_holm_equals_the_step_down_procedure():
    """Holm's adjusted p-values reject exactly what the step-down procedure rejects, at any alpha."""
    from rankbench.significance import holm

    rng = np.random.default_rng(11)
    for _ in range(50):
        p = rng.random(rng.integers(1, 9)) ** 3
        adj = holm(p)
        for alpha in (0.01, 0.05, 0.1):
            order = np.argsort(p)
            reject = np.zeros(p.shape[0], bool)
            for i, j in enumerate(order):  # compare p_(i) with alpha / (m - i), stop at the first miss
                if p[j] > alpha / (p.shape[0] - i):
                    break
                reject[j] = True
            assert np.array_equal(adj <= alpha, reject)


# ---------------------------------------------------------------- Wilcoxon, corrections, tests by name
@pytest.mark.parametrize("n", [1, 5, 12, 40])
def test_wilcoxon_exact_agrees_with_scipy(n):
    from rankbench.significance import wilcoxon_test

    rng = np.random.default_rng(20 + n)
    b = rng.random(n)
    a = b + rng.normal(0.1, 0.3, n)  # continuous: no ties, no zeros
    assert wilcoxon_test(a, b) == pytest.approx(
        stats.wilcoxon(a, b, method="exact").pvalue, rel=1e-12)


def test_wilcoxon_by_hand():
    from rankbench.significance import wilcoxon_test

    # d = (1, 2, 3): ranks 1, 2, 3 all positive, W+ = 6; of the 8 sign patterns one reaches
    # W+ >= 6 and one W+ <= 0: p = 2/8
    assert wilcoxon_test([1, 2, 3], [0, 0, 0]) == pytest.approx(0.25)
    # zero differences are dropped: the same p with two zeros added
    assert wilcoxon_test([1, 2, 3, 5, 5], [0, 0, 0, 5, 5]) == pytest.approx(0.25)
    assert wilcoxon_test([1.0, 2.0], [1.0, 2.0]) == 1.0


@pytest.mark.parametrize("case", ["ties", "zeros", "large"])
def test_wilcoxon_normal_approximation_agrees_with_scipy(case):
    from rankbench.significance import wilcoxon_test

    rng = np.random.default_rng(30)
    n = 80 if case == "large" else 25
    b = rng.random(n)
    a = b + rng.normal(0.05, 0.3, n)
    if case == "ties":  # tied magnitudes: the variance's tie correction
        a = b + np.round(rng.normal(0.05, 0.3, n), 1)
    if case == "zeros":
        a[:5] = b[:5]
    d = a - b
    assert (np.unique(np.abs(d[d != 0])).shape[0] < np.count_nonzero(d)) == (case == "ties")
    # 20 nonzero differences without ties after dropping the zeros: exact, else the approximation
    method = "exact" if case == "zeros" else "approx"
    ref = stats.wilcoxon(a, b, method=method, zero_method="wilcox", correction=False).pvalue
    assert wilcoxon_test(a, b) == pytest.approx(ref, rel=1e-10)


def test_bonferroni_and_the_corrections_by_name():
    from rankbench.significance import bonferroni, correct, holm

    np.testing.assert_allclose(bonferroni([0.01, 0.2, 0.5]), [0.03, 0.6, 1.0])
    out = bonferroni([0.01, np.nan])
    assert out[0] == pytest.approx(0.01) and np.isnan(out[1])  # NaN not in the family
    p = [0.04, 0.01, 0.02]
    np.testing.assert_allclose(correct(p, "holm"), holm(p))
    np.testing.assert_allclose(correct(p, "none"), p)
    with pytest.raises(ValueError, match="correction must be one of"):
        correct(p, "fdr")


def test_compare_systems_with_each_test():
    from rankbench.significance import compare_systems, paired_t_test, wilcoxon_test

    rng = np.random.default_rng(31)
    b = rng.random(30)
    pairs = [("x", b + rng.normal(0.1, 0.2, 30), b), ("y", b + rng.normal(0, 0.2, 30), b)]
    for test, fn in (("t", paired_t_test), ("wilcoxon", wilcoxon_test)):
        rows = compare_systems(pairs, correction="bonferroni", test=test)
        for r, (_, a, bb) in zip(rows, pairs, strict=True):
            assert r["p"] == fn(a, bb) and r["test"] == test
            assert r["p_adjusted"] == pytest.approx(min(1.0, 2 * r["p"]))
    with pytest.raises(ValueError, match="test must be one of"):
        compare_systems(pairs, test="sign")
