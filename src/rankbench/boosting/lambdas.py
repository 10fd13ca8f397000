"""Lambda-gradients for LambdaMART: Delta-NDCG, Delta-AUC (Welleck Thm 4.1) and Delta-MAUC.

For every query, documents are ranked by the current scores (stable: ties keep document
order, as LightGBM's ``std::stable_sort``).  For each pair ``(h, l)`` with ``y_h > y_l``,
at 0-based positions ``r_h, r_l`` in that ranking, with ``ds = s_h - s_l``::

    rho        = 1 / (1 + exp(sigma * ds))
    lambda_hl  = -sigma * rho * |Delta Z_hl|            (added to grad[h], subtracted from grad[l])
    hess_hl    = sigma^2 * rho * (1 - rho) * |Delta Z_hl|  (added to both)

``|Delta Z_hl|`` is the change of the target metric of the query when ``h`` and ``l``
swap positions (all other documents stay put):

``ndcg``: ``(g[y_h] - g[y_l]) * |D(r_h) - D(r_l)| / maxDCG@k`` with ``g[y] = 2^y - 1``
    and the ideal DCG taken at ``k``; only pairs whose better-ranked member sits in the top
    ``k`` are used.  ``ndcg_delta="lightgbm"`` (default): ``D(r) = 1 / log2(2 + r)`` for
    every position, LightGBM's ``lambdarank`` exactly (``lambdarank_truncation_level = k``),
    i.e. the change of the full-list DCG over the ideal DCG@k; our hook reproduces its
    gradients.  ``ndcg_delta="exact"``: ``D(r) = 0`` for ``r >= k``, the true change of
    NDCG@k (a pair with one member below the cut only gets the upper member's discount).
``auc`` (binary: relevant = label > 0; P relevant, N irrelevant documents in the query):
    ``|r_h - r_l| / (P N)`` when exactly one of the two is relevant, else 0 (Welleck
    Thm 4.1: a swap across the class boundary changes the number of correctly ordered
    pairs by exactly the distance of the two positions).
``mauc`` (Welleck eq. 5: ``MAUC = sum_{c >= 1} p(c) AUC(c vs rest)``; per query,
    ``P_c`` documents of class ``c``, ``N_c = n - P_c``, a class is *defined* when
    ``P_c > 0`` and ``N_c > 0``; ``p(c) = P_c / R`` with ``R`` the number of documents in
    defined classes ``c >= 1``, i.e. absent classes are dropped and the weights
    renormalised).  Swapping ``h`` and ``l`` only touches the AUCs of their own two classes,
    and in *opposite* directions: the document moving up improves its class's AUC, the one
    moving down worsens its own.  With ``t(c) = p(c) / (P_c N_c) = 1 / (R N_c)`` for a
    defined class ``c >= 1`` and ``t(0) = 0`` (class 0 is no reference class)::

        exact:    |Delta MAUC| = |r_h - r_l| * |t(y_h) - t(y_l)|
        sum_abs:  |r_h - r_l| * (t(y_h) + t(y_l))   (the per-class |Delta AUC| added up,
                                                      one reading of Welleck eq. 18)

    ``exact`` is the true metric change (checked against brute force in the tests); for a
    pair (c, 0) both readings agree: ``|r_h - r_l| / (R N_c)``.

``norm=True`` applies LightGBM's ``lambdarank_norm``: once the query's scores are not all
equal, ``|Delta Z|`` is divided by ``0.01 + |ds|``, and the query's gradients and
Hessians are scaled by ``log2(1 + S) / S`` with ``S`` the sum of ``2 |lambda|`` over pairs.

Cost per query of ``n`` documents: ``O(n log n)`` for the sort plus ``O(n min(n, k))``
pairs (``k = n`` for auc/mauc); pairs are never stored.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

METRICS = ("ndcg", "auc", "mauc")
MAUC_DELTAS = ("exact", "sum_abs")
NDCG_DELTAS = ("lightgbm", "exact")

NDCG, AUC, MAUC = 0, 1, 2
# LightGBM adds the float literal 0.01f to |ds| when normalising.
_NORM_EPS = float(np.float32(0.01))


def metric_code(metric: str) -> int:
    """The kernel code of a metric name; ValueError for unknown names."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    return METRICS.index(metric)


@njit(cache=True)
def _discount(r):
    return 1.0 / math.log2(2.0 + r)


@njit(cache=True)
def query_delta_terms(y, metric, k):
    """Per-query constants of Delta Z: (inv_max_dcg, inv_pn, t) for ndcg, auc, mauc; O(n + L).

    ``t`` holds ``t(c) = 1 / (R N_c)`` per label value for mauc (0 for class 0 and
    undefined classes), the label gains ``2^c - 1`` for ndcg; unused otherwise.
    """
    top = 0
    for i in range(y.shape[0]):
        if y[i] > top:
            top = y[i]
    counts = np.empty(top + 1, dtype=np.int64)
    t = np.empty(top + 1)
    inv_max_dcg, inv_pn = _delta_terms_into(y, metric, k, counts, t)
    return inv_max_dcg, inv_pn, t


@njit(cache=True)
def _delta_terms_into(y, metric, k, counts, t):
    """query_delta_terms into scratch ``counts`` / ``t`` of at least max(y) + 1 entries
    (entries up to max(y) are written); returns (inv_max_dcg, inv_pn); O(n + L)."""
    n = y.shape[0]
    top = 0
    for i in range(n):
        if y[i] > top:
            top = y[i]
    for c in range(top + 1):
        counts[c] = 0
        t[c] = 0.0
    for i in range(n):
        counts[y[i]] += 1
    inv_max_dcg = 0.0
    inv_pn = 0.0
    if metric == NDCG:
        for c in range(top + 1):
            t[c] = 2.0**c - 1.0
        # ideal DCG@k: labels in decreasing order
        r = 0
        dcg = 0.0
        for c in range(top, -1, -1):
            for _ in range(counts[c]):
                if r >= k:
                    break
                dcg += t[c] * _discount(r)
                r += 1
        if dcg > 0.0:
            inv_max_dcg = 1.0 / dcg
    elif metric == AUC:
        p = n - counts[0]
        m = counts[0]
        if p > 0 and m > 0:
            inv_pn = 1.0 / (float(p) * float(m))
    else:
        rel = 0
        for c in range(1, top + 1):
            if counts[c] > 0 and counts[c] < n:
                rel += counts[c]
        for c in range(1, top + 1):
            if counts[c] > 0 and counts[c] < n:
                t[c] = 1.0 / (float(rel) * float(n - counts[c]))
    return inv_max_dcg, inv_pn


@njit(cache=True)
def pair_delta(metric, rh, rl, yh, yl, inv_max_dcg, inv_pn, t, k, exact, disc):
    """|Delta Z| of swapping the documents at positions rh, rl (labels yh > yl); O(1).

    ``exact``: ndcg with discounts cut at k (else LightGBM's), mauc exact (else sum_abs).
    ``disc[r]`` is the discount ``1 / log2(2 + r)`` of position r (``discount_table``).
    """
    dist = float(abs(rh - rl))
    if metric == NDCG:
        dh = disc[rh] if (rh < k or not exact) else 0.0
        dl = disc[rl] if (rl < k or not exact) else 0.0
        return (t[yh] - t[yl]) * abs(dh - dl) * inv_max_dcg
    if metric == AUC:
        if (yh > 0) != (yl > 0):
            return dist * inv_pn
        return 0.0
    if exact:
        return dist * abs(t[yh] - t[yl])
    return dist * (t[yh] + t[yl])


@njit(cache=True)
def discount_table(n):
    """``[_discount(r) for r in range(n)]``: the same values, two log2 per pair saved; O(n)."""
    disc = np.empty(max(n, 1))
    for r in range(n):
        disc[r] = _discount(r)
    return disc


_RUN = 8  # insertion-sorted run length of the merge sort


@njit(cache=True)
def _stable_order_desc(s, order, tmp):
    """``order`` = np.argsort(-s, kind="mergesort"): positions by decreasing score, ties in
    document order; O(n log n) bottom-up merge sort over insertion-sorted runs of 8, with
    ``tmp`` (>= n entries) as scratch, so no allocation.

    (A plain insertion sort was O(n^2) on the common case of a query whose documents come in
    increasing score order, e.g. canonical order = increasing label with a fitted model.)
    """
    n = s.shape[0]
    for lo in range(0, n, _RUN):
        hi = min(lo + _RUN, n)
        for i in range(lo, hi):
            si = s[i]
            j = i
            # strict <: an equal score stays after the earlier document (stable)
            while j > lo and s[order[j - 1]] < si:
                order[j] = order[j - 1]
                j -= 1
            order[j] = i
    width = _RUN
    in_order = True  # the current runs are in ``order`` (else in ``tmp``)
    while width < n:
        src = order if in_order else tmp
        dst = tmp if in_order else order
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i = lo
            j = mid
            for o in range(lo, hi):
                # the left run first on ties (stable)
                if j >= hi or (i < mid and s[src[i]] >= s[src[j]]):
                    dst[o] = src[i]
                    i += 1
                else:
                    dst[o] = src[j]
                    j += 1
        in_order = not in_order
        width *= 2
    if not in_order:
        for i in range(n):
            order[i] = tmp[i]


@njit(cache=True)
def query_lambdas(s, y, metric, k, sigma, norm, exact, grad, hess, disc=None):
    """Lambda-gradients and Hessian weights of one query into grad, hess; O(n log n + n min(n,k)).

    ``disc``: a ``discount_table`` of at least ``n`` entries (built here when None).
    """
    n = s.shape[0]
    top = 0
    for i in range(n):
        if y[i] > top:
            top = y[i]
    dtab = discount_table(n) if disc is None else disc
    m = max(n, 1)
    _query_lambdas_into(s, y, metric, k, sigma, norm, exact, grad, hess, dtab,
                        np.empty(m, dtype=np.int64), np.empty(top + 1, dtype=np.int64),
                        np.empty(top + 1), np.empty(m), np.empty(m, dtype=y.dtype), np.empty(m),
                        np.empty(m), np.empty(m, dtype=np.int64))


@njit(cache=True)
def _query_lambdas_into(s, y, metric, k, sigma, norm, exact, grad, hess, disc, order, counts, t,
                        sorted_s, sorted_y, grad_pos, hess_pos, sort_tmp):
    """query_lambdas with caller-owned scratch: ``order``, ``sort_tmp``, ``sorted_s``, ``sorted_y``,
    ``grad_pos``, ``hess_pos`` (>= n entries), ``counts`` and ``t`` (>= max(y) + 1 entries),
    so a chunk of queries allocates once."""
    n = s.shape[0]
    if n < 2:
        for i in range(n):
            grad[i] = 0.0
            hess[i] = 0.0
        return
    inv_max_dcg, inv_pn = _delta_terms_into(y, metric, k, counts, t)
    _stable_order_desc(s, order[:n], sort_tmp[:n])
    # Scores and labels gathered in rank order and the sums kept per rank position, so the
    # pair loop reads and writes contiguous memory; every document still receives the same
    # additions in the same order (identical values), scattered back at the end.
    ss = sorted_s[:n]
    ys = sorted_y[:n]
    gpos = grad_pos[:n]
    hpos = hess_pos[:n]
    for i in range(n):
        ss[i] = s[order[i]]
        ys[i] = y[order[i]]
        gpos[i] = 0.0
        hpos[i] = 0.0
    scaled = norm and ss[0] != ss[n - 1]
    trunc = min(n - 1, k) if metric == NDCG else n - 1
    sum_lambdas = 0.0
    for i in range(trunc):
        ya = ys[i]
        sa = ss[i]
        # position i's sums live in registers over the j loop (same additions, same order)
        gi = gpos[i]
        hi = hpos[i]
        for j in range(i + 1, n):
            yb = ys[j]
            if ya == yb:
                continue
            if ya > yb:
                rh, rl, yh, yl = i, j, ya, yb
                ds = sa - ss[j]
            else:
                rh, rl, yh, yl = j, i, yb, ya
                ds = ss[j] - sa
            if metric == NDCG:  # pair_delta's NDCG branch, spelt out (the hot case)
                dh = disc[rh] if (rh < k or not exact) else 0.0
                dl = disc[rl] if (rl < k or not exact) else 0.0
                dz = (t[yh] - t[yl]) * abs(dh - dl) * inv_max_dcg
            else:
                dz = pair_delta(metric, rh, rl, yh, yl, inv_max_dcg, inv_pn, t, k, exact, disc)
            if dz == 0.0:
                continue
            if scaled:
                dz /= _NORM_EPS + abs(ds)
            rho = 1.0 / (1.0 + math.exp(sigma * ds))
            lam = -sigma * rho * dz
            hw = sigma * sigma * rho * (1.0 - rho) * dz
            if ya > yb:  # i is the preferred document h
                gi += lam
                gpos[j] -= lam
            else:
                gpos[j] += lam
                gi -= lam
            hi += hw
            hpos[j] += hw
            sum_lambdas -= 2.0 * lam
        gpos[i] = gi
        hpos[i] = hi
    f = 1.0
    if norm and sum_lambdas > 0.0:
        f = math.log2(1.0 + sum_lambdas) / sum_lambdas
    for i in range(n):
        d = order[i]
        if f != 1.0:
            grad[d] = gpos[i] * f
            hess[d] = hpos[i] * f
        else:
            grad[d] = gpos[i]
            hess[d] = hpos[i]


_CHUNKS = 64  # query chunks of the parallel loop: one scratch allocation per chunk


@njit(cache=True, parallel=True)
def _lambda_gradients(s, y, query_ptr, metric, k, sigma, norm, exact, grad, hess):
    nq = query_ptr.shape[0] - 1
    longest = 1
    for q in range(nq):
        longest = max(longest, query_ptr[q + 1] - query_ptr[q])
    top = 0
    for i in range(y.shape[0]):
        top = max(top, y[i])
    disc = discount_table(longest)  # shared, read-only
    n_chunks = min(nq, _CHUNKS)
    # Queries are independent and each writes only its own slice: the chunking (and the
    # thread count) cannot change any value.
    for c in prange(n_chunks):
        order = np.empty(longest, dtype=np.int64)
        counts = np.empty(top + 1, dtype=np.int64)
        t = np.empty(top + 1)
        sorted_s = np.empty(longest)
        sorted_y = np.empty(longest, dtype=y.dtype)
        grad_pos = np.empty(longest)
        hess_pos = np.empty(longest)
        sort_tmp = np.empty(longest, dtype=np.int64)
        for q in range(c * nq // n_chunks, (c + 1) * nq // n_chunks):
            a = query_ptr[q]
            b = query_ptr[q + 1]
            _query_lambdas_into(s[a:b], y[a:b], metric, k, sigma, norm, exact, grad[a:b],
                                hess[a:b], disc, order, counts, t, sorted_s, sorted_y,
                                grad_pos, hess_pos, sort_tmp)


def lambda_gradients(
    scores: np.ndarray,
    y: np.ndarray,
    query_ptr: np.ndarray,
    metric: str = "auc",
    k: int = 10,
    sigma: float = 1.0,
    norm: bool = True,
    mauc_delta: str = "exact",
    ndcg_delta: str = "lightgbm",
) -> tuple[np.ndarray, np.ndarray]:
    """Per-document lambda-gradients and Hessian weights (see module doc); O(sum_q n_q min(n_q, k)).

    Queries are the slices ``query_ptr[q]:query_ptr[q+1]``; queries are processed in
    parallel (numba threads), each writing only its own slice, so the result does not
    depend on the thread count.
    """
    code = metric_code(metric)
    exact = _exact_flag(code, mauc_delta, ndcg_delta)
    if not (sigma > 0 and math.isfinite(sigma)):
        raise ValueError(f"sigma must be a positive finite number, got {sigma!r}")
    if int(k) < 1:
        raise ValueError(f"k (NDCG truncation level) must be >= 1, got {k!r}")
    s = np.ascontiguousarray(scores, dtype=np.float64)
    yy = np.ascontiguousarray(y, dtype=np.int64)
    ptr = np.ascontiguousarray(query_ptr, dtype=np.int64)
    if s.ndim != 1 or s.shape != yy.shape:
        raise ValueError(f"scores and y must be 1-D of equal length, got {s.shape} and {yy.shape}")
    if ptr.ndim != 1 or ptr.shape[0] < 1 or ptr[0] != 0 or ptr[-1] != s.shape[0] or np.any(np.diff(ptr) < 0):
        raise ValueError("query_ptr must be non-decreasing from 0 to len(scores)")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores contain NaN or inf")
    if yy.size and yy.min() < 0:
        raise ValueError(f"labels must be >= 0 (relevance levels), found {int(yy.min())}")
    if yy.size and yy.max() > 30:
        raise ValueError(f"labels above 30 are not supported (gain 2^y - 1), found {int(yy.max())}")
    grad = np.zeros_like(s)
    hess = np.zeros_like(s)
    _lambda_gradients(s, yy, ptr, code, int(k), float(sigma), bool(norm), exact, grad, hess)
    return grad, hess


def _exact_flag(code: int, mauc_delta: str, ndcg_delta: str) -> bool:
    if mauc_delta not in MAUC_DELTAS:
        raise ValueError(f"mauc_delta must be one of {MAUC_DELTAS}, got {mauc_delta!r}")
    if ndcg_delta not in NDCG_DELTAS:
        raise ValueError(f"ndcg_delta must be one of {NDCG_DELTAS}, got {ndcg_delta!r}")
    return ndcg_delta == "exact" if code == NDCG else mauc_delta == "exact"


def delta_matrix(scores: np.ndarray, y: np.ndarray, metric: str, k: int = 10,
                 mauc_delta: str = "exact", ndcg_delta: str = "lightgbm") -> np.ndarray:
    """|Delta Z| for every document pair of ONE query as an n x n matrix (inspection, tests); O(n^2).

    Entry ``[a, b]`` is the metric change of swapping documents ``a`` and ``b`` in the
    ranking by ``scores``; 0 where labels are equal or the pair is truncated away (ndcg).
    """
    code = metric_code(metric)
    exact = _exact_flag(code, mauc_delta, ndcg_delta)
    s = np.asarray(scores, dtype=np.float64)
    yy = np.asarray(y, dtype=np.int64)
    n = s.shape[0]
    inv_max_dcg, inv_pn, t = query_delta_terms(yy, code, int(k))
    order = np.argsort(-s, kind="mergesort")
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    out = np.zeros((n, n))
    disc = discount_table(n)
    for a in range(n):
        for b in range(n):
            if yy[a] <= yy[b]:
                continue
            if code == NDCG and min(pos[a], pos[b]) >= k:
                continue
            d = pair_delta(code, pos[a], pos[b], yy[a], yy[b], inv_max_dcg, inv_pn, t, int(k), exact,
                           disc)
            out[a, b] = out[b, a] = d
    return out
