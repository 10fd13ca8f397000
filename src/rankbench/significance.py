"""Paired significance tests over per-query metric values (for leaderboards).

Both tests compare two systems evaluated on the same queries: ``a[i]`` and ``b[i]`` are the
metric values (e.g. NDCG@10) of the two systems on query ``i``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

# sign-flip batches are generated as (batch, n) blocks of about this many entries
_BLOCK_ENTRIES = 1 << 20


NAN_POLICIES = ("raise", "omit")


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
