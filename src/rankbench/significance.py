"""Paired significance tests over per-query metric values (for leaderboards).

Every test compares two systems evaluated on the same queries: ``a[i]`` and ``b[i]`` are the
metric values (e.g. NDCG@10) of the two systems on query ``i``.  Tests: the paired
randomization (sign-flip) test, the paired t-test and the Wilcoxon signed-rank test
(``TESTS``); corrections for a family of tests: Holm, Bonferroni or none (``CORRECTIONS``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

# sign-flip batches are generated as (batch, n) blocks of about this many entries
_BLOCK_ENTRIES = 1 << 20


NAN_POLICIES = ("raise", "omit")
TESTS = ("randomization", "t", "wilcoxon")
CORRECTIONS = ("holm", "bonferroni", "none")
# the Wilcoxon signed-rank test enumerates its null distribution up to this many nonzero
# differences (without ties), as scipy.stats.wilcoxon's "exact" method does
WILCOXON_EXACT_MAX_N = 50


def _paired(a: Any, b: Any, nan_policy: str = "raise") -> tuple[np.ndarray, np.ndarray]:
    if nan_policy not in NAN_POLICIES:
        raise ValueError(f"nan_policy must be one of {NAN_POLICIES}, got {nan_policy!r}")
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"a and b must be 1-D per-query values, got shapes {a.shape} and {b.shape}")
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"a and b must have the same length (one value per query): "
                         f"{a.shape[0]} != {b.shape[0]}")
    if nan_policy == "omit":
        # a query undefined for either system (NaN, e.g. AUC of a one-class query) is dropped
        keep = ~(np.isnan(a) | np.isnan(b))
        a, b = a[keep], b[keep]
    if a.shape[0] == 0:
        raise ValueError("a and b are empty (after dropping NaN queries)" if nan_policy == "omit"
                         else "a and b are empty")
    for name, v in (("a", a), ("b", b)):
        if not np.all(np.isfinite(v)):
            bad = int(np.flatnonzero(~np.isfinite(v))[0])
            raise ValueError(f"{name} contains NaN or inf (first at index {bad}); drop undefined "
                             f"queries from both systems first or pass nan_policy='omit'")
    return a, b


def paired_randomization_test(a: Any, b: Any, n_resamples: int = 10000, seed: int = 0,
                              nan_policy: str = "raise") -> float:
    """Two-sided paired randomization (sign-flip) test of mean(a - b) = 0; returns the p-value.

    Under the null each per-query difference is equally likely to have either sign; the
    p-value is (1 + #{resamples with |mean(signs * d)| >= |mean(d)|}) / (1 + n_resamples),
    which is never 0 and is 1 when a == b.  O(n_resamples * n) as blocked matrix products.
    ``nan_policy="omit"`` drops queries where either value is NaN; ``"raise"`` rejects them.
    """
    a, b = _paired(a, b, nan_policy)
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int | np.integer) or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    d = a - b
    n = d.shape[0]
    observed = abs(d.sum())
    # summation order differs between the observed and the flipped statistics: compare with
    # a tolerance so that exactly tied patterns (e.g. all-zero differences) count as extreme
    tol = 1e-9 * max(float(np.abs(d).sum()), 1e-300)
    rng = np.random.default_rng(seed)
    batch = max(1, _BLOCK_ENTRIES // n)
    extreme = 0
    left = int(n_resamples)
    while left > 0:
        m = min(batch, left)
        signs = rng.integers(0, 2, size=(m, n), dtype=np.int8).astype(np.float64) * 2.0 - 1.0
        extreme += int(np.count_nonzero(np.abs(signs @ d) >= observed - tol))
        left -= m
    return (1.0 + extreme) / (1.0 + n_resamples)


def exact_randomization_p_value(a: Any, b: Any, nan_policy: str = "raise") -> float:
    """Exact two-sided sign-flip p-value by enumerating all 2^n sign patterns (n <= 20); O(2^n n)."""
    a, b = _paired(a, b, nan_policy)
    d = a - b
    n = d.shape[0]
    if n > 20:
        raise ValueError(f"exact enumeration needs n <= 20 queries, got {n}")
    patterns = (np.arange(1 << n)[:, None] >> np.arange(n)[None, :]) & 1
    sums = np.abs((patterns * 2.0 - 1.0) @ d)
    tol = 1e-9 * max(float(np.abs(d).sum()), 1e-300)
    return float(np.count_nonzero(sums >= abs(d.sum()) - tol) / sums.shape[0])


def paired_t_test(a: Any, b: Any, nan_policy: str = "raise") -> float:
    """Two-sided paired t-test p-value (scipy.stats.ttest_rel); 1.0 when a == b, 0.0 for a constant shift."""
    a, b = _paired(a, b, nan_policy)
    if a.shape[0] < 2:
        raise ValueError("the paired t-test needs at least 2 queries")
    d = a - b
    if np.all(d == 0.0):
        return 1.0
    if np.all(d == d[0]):
        return 0.0  # a constant nonzero shift: zero variance, t is infinite
    return float(stats.ttest_rel(a, b).pvalue)


def wilcoxon_test(a: Any, b: Any, nan_policy: str = "raise") -> float:
    """Two-sided Wilcoxon signed-rank test p-value of the paired differences a - b; O(n log n + n^3).

    Zero differences are dropped (Wilcoxon's rule; all zero: p = 1).  With at most
    ``WILCOXON_EXACT_MAX_N`` nonzero differences and no tied magnitudes the p-value is exact
    (the null distribution of the positive rank sum W+ counted over all 2^n sign patterns);
    otherwise it is the normal approximation with the tie correction of the variance and no
    continuity correction (scipy.stats.wilcoxon's ``method="approx"``).
    """
    a, b = _paired(a, b, nan_policy)
    d = a - b
    d = d[d != 0.0]
    n = d.shape[0]
    if n == 0:
        return 1.0
    mag = np.abs(d)
    ranks = stats.rankdata(mag)  # average ranks of tied magnitudes
    w_plus = float(ranks[d > 0].sum())
    _, tie_counts = np.unique(mag, return_counts=True)
    if n <= WILCOXON_EXACT_MAX_N and np.all(tie_counts == 1):
        # counts[s] = number of sign patterns whose positive ranks 1..n sum to s
        top = n * (n + 1) // 2
        counts = np.zeros(top + 1)
        counts[0] = 1.0
        for r in range(1, n + 1):
            counts[r:] = counts[r:] + counts[:-r].copy()
        cdf = np.cumsum(counts) / 2.0 ** n
        w = int(round(w_plus))
        lower = cdf[w]
        upper = 1.0 - (cdf[w - 1] if w > 0 else 0.0)
        return float(min(1.0, 2.0 * min(lower, upper)))
    mean = n * (n + 1) / 4.0
    var = n * (n + 1) * (2 * n + 1) / 24.0 - float(np.sum(tie_counts ** 3 - tie_counts)) / 48.0
    if var <= 0.0:
        return 1.0
    z = (w_plus - mean) / np.sqrt(var)
    return float(min(1.0, 2.0 * stats.norm.sf(abs(z))))


def paired_test(a: Any, b: Any, test: str = "randomization", n_resamples: int = 10000,
                seed: int = 0, nan_policy: str = "raise") -> float:
    """The two-sided p-value of ``test`` (one of ``TESTS``) on paired values a, b."""
    if test == "randomization":
        return paired_randomization_test(a, b, n_resamples, seed, nan_policy)
    if test == "t":
        return paired_t_test(a, b, nan_policy)
    if test == "wilcoxon":
        return wilcoxon_test(a, b, nan_policy)
    raise ValueError(f"test must be one of {TESTS}, got {test!r}")


# ---------------------------------------------------------------- a table of comparisons
def bonferroni(pvalues: Any) -> np.ndarray:
    """Bonferroni adjusted p-values: each times the family size (the non-NaN ones), capped at 1."""
    p = np.asarray(pvalues, dtype=np.float64)
    m = int(np.count_nonzero(~np.isnan(p)))
    return np.minimum(p * m, 1.0)


def correct(pvalues: Any, correction: str = "holm") -> np.ndarray:
    """``pvalues`` of one family adjusted by ``correction`` (one of ``CORRECTIONS``)."""
    if correction == "holm":
        return holm(pvalues)
    if correction == "bonferroni":
        return bonferroni(pvalues)
    if correction == "none":
        return np.asarray(pvalues, dtype=np.float64).copy()
    raise ValueError(f"correction must be one of {CORRECTIONS}, got {correction!r}")


def holm(pvalues: Any) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (step-down; monotone, capped at 1) of one family of
    tests: reject test i at level alpha when its adjusted p-value is <= alpha.  NaN stays NaN
    and does not count in the family."""
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = ok.shape[0]
    if m == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    adj = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out[order] = np.minimum(adj, 1.0)
    return out


def bootstrap_ci(d: Any, level: float = 0.95, n_resamples: int = 10000,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of the per-query differences ``d``."""
    d = np.asarray(d, dtype=np.float64)
    if d.ndim != 1 or d.shape[0] == 0:
        raise ValueError("d must be a non-empty 1-D array of per-query differences")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    rng = np.random.default_rng(seed)
    n = d.shape[0]
    means = np.empty(n_resamples)
    batch = max(1, _BLOCK_ENTRIES // n)
    for start in range(0, n_resamples, batch):
        m = min(batch, n_resamples - start)
        means[start:start + m] = d[rng.integers(0, n, size=(m, n))].mean(axis=1)
    lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def effect_size(d: Any) -> float:
    """Cohen's d_z of paired differences: mean(d) / sd(d) (ddof 1); 0 when d is all zero,
    +-inf for a constant nonzero shift, NaN with fewer than two queries."""
    d = np.asarray(d, dtype=np.float64)
    if d.shape[0] < 2:
        return float("nan")
    sd = float(np.std(d, ddof=1))
    mean = float(d.mean())
    if sd == 0.0:
        return 0.0 if mean == 0.0 else float(np.copysign(np.inf, mean))
    return mean / sd


def compare_systems(pairs: list[tuple[str, Any, Any]], correction: str = "holm",
                    n_resamples: int = 10000, seed: int = 0, level: float = 0.95,
                    test: str = "randomization") -> list[dict]:
    """The comparisons of one table, as IR papers report them now (PyTerrier, ranx).

    ``pairs``: ``(name, a, b)`` with the per-query values of system a and its reference b on
    the same queries (NaN where a query is undefined for either: dropped).  One row per pair:
    n queries, means, mean difference a - b, its ``level`` bootstrap interval, effect size
    d_z, the two-sided p-value of ``test`` (``TESTS``: the paired randomization test by
    default, the paired t-test or the Wilcoxon signed-rank test) and that p-value corrected for
    the whole family (``correction``: ``"holm"`` (Holm-Bonferroni, the default),
    ``"bonferroni"`` or ``"none"``).
    """
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {CORRECTIONS}, got {correction!r}")
    if test not in TESTS:
        raise ValueError(f"test must be one of {TESTS}, got {test!r}")
    rows = []
    for name, a, b in pairs:
        a, b = _paired(a, b, "omit")
        d = a - b
        lo, hi = bootstrap_ci(d, level, n_resamples, seed)
        p = (paired_t_test(a, b) if d.shape[0] >= 2 else float("nan")) if test == "t" \
            else paired_test(a, b, test, n_resamples, seed)
        rows.append({"comparison": name, "n_queries": int(d.shape[0]), "mean_a": float(a.mean()),
                     "mean_b": float(b.mean()), "diff": float(d.mean()), "ci_low": lo,
                     "ci_high": hi, "d_z": effect_size(d), "p": p, "test": test})
    adj = correct([r["p"] for r in rows], correction)
    for r, q in zip(rows, adj, strict=True):
        r["p_adjusted"] = float(q)
        r["correction"] = correction
    return rows
