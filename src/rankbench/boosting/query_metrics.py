"""Per-query AUC, class-reference AUC, MAUC and NDCG@k on grouped data: the boosting loop's eval.

These run every boosting round on data already grouped by ``query_ptr`` (no regrouping),
which is why they live here rather than in ``rankbench.metrics``; the tests check them
against ``rankbench.metrics`` and brute force.  Definitions (per query, mean over the
queries where the value is defined):

- ``auc``: relevant = label > 0 vs the rest, ties in score count 1/2; undefined when the
  query has no relevant or no irrelevant document.
- ``class_auc(c)``: label == c vs the rest, same rules.
- ``mauc``: ``sum_c p(c) AUC(c vs rest)`` over classes ``c >= 1`` whose AUC is defined,
  ``p(c) = P_c / R`` (R = documents in those classes): Welleck eq. 5, absent classes
  dropped and weights renormalised; undefined when no class is defined.
- ``ndcg``: NDCG@k with gain ``2^y - 1``, discount ``1 / log2(1 + rank)`` (rank from 1),
  ranking by score with ties in document order; undefined when the ideal DCG@k is 0.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

EVAL_METRICS = ("ndcg", "auc", "mauc")


@njit(cache=True)
def _avg_ranks(s):
    """1-based ranks of s in increasing order, ties sharing their average rank; O(n log n)."""
    n = s.shape[0]
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(n)
    i = 0
    while i < n:
        j = i
        while j + 1 < n and s[order[j + 1]] == s[order[i]]:
            j += 1
        avg = 0.5 * (i + j) + 1.0
        for m in range(i, j + 1):
            ranks[order[m]] = avg
        i = j + 1
    return ranks


@njit(cache=True)
def _auc_from_ranks(ranks, positive):
    n = ranks.shape[0]
    p = 0
    rank_sum = 0.0
    for i in range(n):
        if positive[i]:
            p += 1
            rank_sum += ranks[i]
    m = n - p
    if p == 0 or m == 0:
        return np.nan
    return (rank_sum - 0.5 * p * (p + 1)) / (float(p) * float(m))


@njit(cache=True)
def query_auc(s, y):
    """AUC of relevant (y > 0) vs irrelevant documents of one query, ties 1/2; O(n log n)."""
    return _auc_from_ranks(_avg_ranks(s), y > 0)


@njit(cache=True)
def query_class_auc(s, y, c):
    """AUC of class c vs all other documents of one query, ties 1/2; NaN if undefined; O(n log n)."""
    return _auc_from_ranks(_avg_ranks(s), y == c)


@njit(cache=True)
def query_mauc(s, y):
    """Prevalence-weighted MAUC over defined classes c >= 1 of one query (Welleck eq. 5); O(n log n + nL)."""
    n = y.shape[0]
    top = 0
    for i in range(n):
        if y[i] > top:
            top = y[i]
    ranks = _avg_ranks(s)
    total = 0.0
    rel = 0
    for c in range(1, top + 1):
        a = _auc_from_ranks(ranks, y == c)
        if not math.isnan(a):
            pc = 0
            for i in range(n):
                if y[i] == c:
                    pc += 1
            total += pc * a
            rel += pc
    if rel == 0:
        return np.nan
    return total / rel


@njit(cache=True)
def query_ndcg(s, y, k):
    """NDCG@k of one query (gain 2^y-1, discount 1/log2(1+rank)); NaN if ideal DCG is 0; O(n log n)."""
    n = s.shape[0]
    order = np.argsort(-s, kind="mergesort")
    ideal = np.sort(y)[::-1]
    dcg = 0.0
    idcg = 0.0
    for r in range(min(k, n)):
        d = 1.0 / math.log2(2.0 + r)
        dcg += (2.0 ** y[order[r]] - 1.0) * d
        idcg += (2.0 ** ideal[r] - 1.0) * d
    if idcg == 0.0:
        return np.nan
    return dcg / idcg


@njit(cache=True, parallel=True)
def _per_query(s, y, query_ptr, metric, k):
    nq = query_ptr.shape[0] - 1
    out = np.empty(nq)
    for q in prange(nq):
        a = query_ptr[q]
        b = query_ptr[q + 1]
        if metric == 0:
            out[q] = query_ndcg(s[a:b], y[a:b], k)
        elif metric == 1:
            out[q] = query_auc(s[a:b], y[a:b])
        elif metric == 2:
            out[q] = query_mauc(s[a:b], y[a:b])
        else:
            out[q] = query_class_auc(s[a:b], y[a:b], metric - 10)
    return out


def per_query_metric(scores: np.ndarray, y: np.ndarray, query_ptr: np.ndarray, metric: str,
                     k: int = 10) -> np.ndarray:
    """One value per query (NaN where undefined) of ``ndcg``, ``auc``, ``mauc`` or ``auc_c<c>``; O(n log n)."""
    if metric in EVAL_METRICS:
        code = EVAL_METRICS.index(metric)
    elif metric.startswith("auc_c") and metric[5:].isdigit():
        code = 10 + int(metric[5:])
    else:
        raise ValueError(f"metric must be one of {EVAL_METRICS} or 'auc_c<class>', got {metric!r}")
    s = np.ascontiguousarray(scores, dtype=np.float64)
    yy = np.ascontiguousarray(y, dtype=np.int64)
    if s.shape != yy.shape:
        raise ValueError(f"scores and y differ in shape: {s.shape} vs {yy.shape}")
    return _per_query(s, yy, np.ascontiguousarray(query_ptr, dtype=np.int64), code, int(k))


def mean_query_metric(scores: np.ndarray, y: np.ndarray, query_ptr: np.ndarray, metric: str,
                      k: int = 10) -> float:
    """Mean of ``per_query_metric`` over the queries where it is defined (NaN if none); O(n log n)."""
    v = per_query_metric(scores, y, query_ptr, metric, k)
    v = v[~np.isnan(v)]
    return float(v.mean()) if v.size else float("nan")
