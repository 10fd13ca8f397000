"""numba kernels over ranked lists: arrays sorted by descending score inside each query.

Every kernel takes the ranked labels (or class indices) and ``ptr`` (query boundaries) and
does one O(n) or O(n L) pass per query (L = number of label levels).  Inputs are validated
in Python before these run.
"""

from __future__ import annotations

import numpy as np
from numba import njit

DISCOUNT_LETOR = 0
DISCOUNT_STANDARD = 1
GAIN_EXP = 0      # 2^r - 1 (Burges; LETOR)
GAIN_LINEAR = 1   # r (trec_eval's ndcg / ndcg_cut)
# Largest label whose exponential gain 2^r - 1 enters the sums as is: a query with a higher
# label has every gain scaled by 2^-(top - EXP_GAIN_TOP) (exact, powers of two), which NDCG's
# ratio DCG / IDCG does not see, so no sum overflows float64 (2^1024) for any label.
EXP_GAIN_TOP = 900


@njit(cache=True)
def argsort_within_queries(key: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    """Global permutation sorting ``key`` ascending inside each query, stably; O(n log n).

    Cheaper than a global lexsort on (query, key) when there are many queries.
    """
    out = np.empty(key.shape[0], dtype=np.int64)
    for q in range(ptr.shape[0] - 1):
        a = ptr[q]
        b = ptr[q + 1]
        local = np.argsort(key[a:b], kind="mergesort")
        for i in range(b - a):
            out[a + i] = a + local[i]
    return out


@njit(cache=True)
def _discount(pos: int, mode: int) -> float:
    # pos is 0-based; LETOR leaves ranks 1 and 2 undiscounted and divides rank r >= 3 by
    # log2(r); the textbook (Jarvelin-Kekalainen / Burges) discount is 1/log2(r + 1).
    if mode == DISCOUNT_LETOR:
        if pos < 2:
            return 1.0
        return np.log(2.0) / np.log(pos + 1.0)
    return np.log(2.0) / np.log(pos + 2.0)


@njit(cache=True)
def ndcg_table(y: np.ndarray, ptr: np.ndarray, kmax: int, mode: int,
               gain: int = GAIN_EXP) -> np.ndarray:
    """NDCG@1..kmax of every query, shape (n_queries, kmax); gain 2^y - 1 or y; O(n log n).

    A query with fewer than k documents gets NDCG over all of its documents (truncation);
    a query whose ideal DCG is 0 (no relevant document) gets 0.  Exponential gains of a
    query whose top label exceeds EXP_GAIN_TOP are scaled by a power of two (see there).
    """
    nq = ptr.shape[0] - 1
    out = np.zeros((nq, kmax))
    for q in range(nq):
        a = ptr[q]
        b = ptr[q + 1]
        n = b - a
        m = min(n, kmax)
        ideal = np.sort(y[a:b])[::-1]
        shift = 0.0
        if gain == GAIN_EXP and n > 0 and ideal[0] > EXP_GAIN_TOP:
            shift = float(ideal[0] - EXP_GAIN_TOP)
        dcg = 0.0
        idcg = 0.0
        for j in range(m):
            d = _discount(j, mode)
            if gain == GAIN_LINEAR:
                dcg += y[a + j] * d
                idcg += ideal[j] * d
            elif shift == 0.0:
                dcg += (2.0 ** y[a + j] - 1.0) * d
                idcg += (2.0 ** ideal[j] - 1.0) * d
            else:  # (2^r - 1) 2^-shift: the label-0 gain stays exactly 0
                dcg += (2.0 ** (y[a + j] - shift) - 2.0 ** -shift) * d
                idcg += (2.0 ** (ideal[j] - shift) - 2.0 ** -shift) * d
            out[q, j] = dcg / idcg if idcg > 0.0 else 0.0
        for j in range(m, kmax):
            out[q, j] = out[q, m - 1]
    return out


@njit(cache=True)
def binary_rank_stats(y: np.ndarray, ptr: np.ndarray, kmax: int):
    """Per query, with relevant = label > 0: (average precision, n relevant, reciprocal rank
    of the first relevant document, relevant count in the top 1..kmax); O(n).

    AP averages precision at each relevant position over the query's relevant documents
    (0 without relevant documents); the reciprocal rank is 0 without relevant documents.
    """
    nq = ptr.shape[0] - 1
    ap = np.zeros(nq)
    nrel = np.zeros(nq, dtype=np.int64)
    rr = np.zeros(nq)
    top = np.zeros((nq, kmax), dtype=np.int64)
    for q in range(nq):
        a = ptr[q]
        b = ptr[q + 1]
        hits = 0
        s = 0.0
        for j in range(b - a):
            if y[a + j] > 0:
                hits += 1
                s += hits / (j + 1.0)
                if hits == 1:
                    rr[q] = 1.0 / (j + 1.0)
            if j < kmax:
                top[q, j] = hits
        for j in range(b - a, kmax):
            top[q, j] = hits
        nrel[q] = hits
        ap[q] = s / hits if hits > 0 else 0.0
    return ap, nrel, rr, top


@njit(cache=True)
def class_counts_top(cls: np.ndarray, ptr: np.ndarray, kmax: int, n_classes: int):
    """Per query: documents of each class in the top 1..kmax, shape (n_queries, kmax, L),
    and in the whole query, shape (n_queries, L); O(n + n_queries kmax L)."""
    nq = ptr.shape[0] - 1
    top = np.zeros((nq, kmax, n_classes), dtype=np.int64)
    total = np.zeros((nq, n_classes), dtype=np.int64)
    for q in range(nq):
        a = ptr[q]
        b = ptr[q + 1]
        for j in range(b - a):
            c = cls[a + j]
            total[q, c] += 1
            if j < kmax:
                if j > 0:
                    top[q, j, :] = top[q, j - 1, :]
                top[q, j, c] += 1
        for j in range(b - a, kmax):
            top[q, j, :] = top[q, j - 1, :]
    return top, total


@njit(cache=True)
def class_reference_wins(cls: np.ndarray, scores: np.ndarray, ptr: np.ndarray, n_classes: int):
    """Per query and class c: (Mann-Whitney count of (c, not c) pairs ordered correctly with
    ties as 1/2, number of documents of class c); both shape (n_queries, L); O(n L).

    AUC(c vs rest) of query q is ``wins[q, c] / (n[q, c] * (size_q - n[q, c]))``.
    """
    nq = ptr.shape[0] - 1
    wins = np.zeros((nq, n_classes))
    count = np.zeros((nq, n_classes), dtype=np.int64)
    below = np.zeros(n_classes, dtype=np.int64)
    group = np.zeros(n_classes, dtype=np.int64)
    for q in range(nq):
        a = ptr[q]
        b = ptr[q + 1]
        below[:] = 0
        n_below = 0
        # walk tie groups from the lowest score upwards
        hi = b
        while hi > a:
            lo = hi - 1
            while lo > a and scores[lo - 1] == scores[hi - 1]:
                lo -= 1
            group[:] = 0
            for i in range(lo, hi):
                group[cls[i]] += 1
            size = hi - lo
            for c in range(n_classes):
                g = group[c]
                if g > 0:
                    wins[q, c] += g * (n_below - below[c]) + 0.5 * g * (size - g)
                below[c] += g
                count[q, c] += g
            n_below += size
            hi = lo
    return wins, count


@njit(cache=True)
def preference_pair_counts(cls: np.ndarray, scores: np.ndarray, ptr: np.ndarray, n_classes: int):
    """Per query over pairs with different labels (class index = label order): (pairs with
    the higher label scored strictly higher, pairs with equal scores, all such pairs); O(n L)."""
    nq = ptr.shape[0] - 1
    correct = np.zeros(nq, dtype=np.int64)
    tied = np.zeros(nq, dtype=np.int64)
    total = np.zeros(nq, dtype=np.int64)
    below = np.zeros(n_classes, dtype=np.int64)
    group = np.zeros(n_classes, dtype=np.int64)
    for q in range(nq):
        a = ptr[q]
        b = ptr[q + 1]
        below[:] = 0
        hi = b
        while hi > a:
            lo = hi - 1
            while lo > a and scores[lo - 1] == scores[hi - 1]:
                lo -= 1
            group[:] = 0
            for i in range(lo, hi):
                group[cls[i]] += 1
            lower_below = 0
            lower_group = 0
            for c in range(n_classes):
                g = group[c]
                correct[q] += g * lower_below
                tied[q] += g * lower_group
                lower_below += below[c]
                lower_group += g
                below[c] += g
            hi = lo
        n = b - a
        s2 = 0
        for c in range(n_classes):
            s2 += below[c] * below[c]
        total[q] = (n * n - s2) // 2
    return correct, tied, total
