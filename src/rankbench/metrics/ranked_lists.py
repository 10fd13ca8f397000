"""Validation of (labels, scores, query ids) and the one sort per query every metric reuses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from rankbench.data.ranking_data import check_qid, group_by_query, integer_labels
from rankbench.metrics.kernels import argsort_within_queries

TIE_ORDERS = ("stable", "worst", "docid")


@dataclass(frozen=True, eq=False)
class RankedLists:
    """Every query's documents in ranked order (descending score), queries by first appearance.

    Query ``q`` owns positions ``ptr[q]:ptr[q+1]`` of ``y`` (int64 labels) and ``scores``
    (float64, non-increasing inside a query).  ``query_ids`` holds the id of each query.
    ``ties`` records how equal scores were ordered: ``"stable"`` keeps input order,
    ``"worst"`` puts lower labels first (relevant documents after non-relevant ones),
    ``"docid"`` puts the larger document id first (trec_eval's order: descending score, then
    descending docno by ``strcmp``) and compares scores in float32, as trec_eval stores them.
    """

    y: np.ndarray
    scores: np.ndarray
    ptr: np.ndarray
    query_ids: np.ndarray
    ties: str

    @property
    def n_queries(self) -> int:
        return int(self.ptr.shape[0] - 1)

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.ptr)


def check_inputs(y: Any, scores: Any, qid: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Validate labels, scores and query ids; return them as int64, float64, int64-or-None arrays.

    Raises ValueError naming the problem: wrong shape or length, empty input, NaN score,
    non-integer or non-finite label, float query id that is NaN, infinite, fractional or
    beyond int64 (casting it would merge queries).
    """
    y = np.asarray(y)
    scores = np.asarray(scores)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D (one label per document), got shape {y.shape}")
    if scores.ndim != 1:
        raise ValueError(f"scores must be 1-D (one score per document), got shape {scores.shape}")
    n = y.shape[0]
    if n == 0:
        raise ValueError("empty input: no documents to evaluate")
    if scores.shape[0] != n:
        raise ValueError(f"scores has {scores.shape[0]} entries but y has {n}")
    y = integer_labels(y, where="index")
    if scores.dtype.kind not in "iubf":
        raise ValueError(f"scores must be numeric, got dtype {scores.dtype}")
    scores = scores.astype(np.float64, copy=False)
    if np.isnan(scores).any():
        bad = int(np.flatnonzero(np.isnan(scores))[0])
        raise ValueError(f"scores contain NaN (first at index {bad})")
    if qid is not None:
        qid = check_qid(qid, n, "document")
        # uint64 ids beyond int64 stay uint64: a cast would report them as negative ids
        if qid.dtype.kind in "ib" or (qid.dtype.kind == "u" and int(qid.max()) < 2**63):
            qid = qid.astype(np.int64, copy=False)
        # other dtypes (e.g. strings) are accepted: they are only compared for equality
    return y, scores, qid


def check_ties(ties: str) -> str:
    """Validate a tie-order name."""
    if ties not in TIE_ORDERS:
        raise ValueError(f"ties must be one of {TIE_ORDERS}, got {ties!r}")
    return ties


def doc_keys(docids: Any, n: int) -> np.ndarray:
    """Rank of each document id in byte order (``strcmp``), int64; ids default to the input
    position written in decimal ("0", "1", ...), the stable generated id of a bare call."""
    if docids is None:
        docids = np.arange(n).astype(str)
    ids = np.asarray(docids)
    if ids.shape != (n,):
        raise ValueError(f"docids must hold one id per document ({n}), got shape {ids.shape}")
    b = np.char.encode(ids.astype(str), "utf-8")
    _, inv = np.unique(b, return_inverse=True)
    return inv.astype(np.int64)


def rank_queries(y: Any, scores: Any, qid: Any = None, ties: str = "stable",
                 docids: Any = None) -> RankedLists:
    """Validate, group documents by query (stably) and sort each query by descending score.

    O(n log n): a stable argsort of -score inside each query (a global lexsort on
    (query, -score, label) for ``ties="worst"``, on (query, -score, -docid rank) for
    ``ties="docid"``).  ``qid=None`` is one query holding every document.
    """
    check_ties(ties)
    y, scores, qid = check_inputs(y, scores, qid)
    n = y.shape[0]
    dkey = doc_keys(docids, n) if ties == "docid" else None
    if qid is None:
        query_ids = np.zeros(1, dtype=np.int64)
        ptr = np.array([0, n], dtype=np.int64)
        qindex = None
    else:
        order, ptr = group_by_query(qid)
        if order is not None:
            y, scores, qid = y[order], scores[order], qid[order]
            if dkey is not None:
                dkey = dkey[order]
        query_ids = qid[ptr[:-1]]
        qindex = np.repeat(np.arange(ptr.shape[0] - 1, dtype=np.int64), np.diff(ptr))
    if ties == "docid":
        # trec_eval keeps scores as C float: scores equal in float32 are ties there (the ranked
        # scores stay non-increasing because they are the rounded ones)
        with np.errstate(over="ignore"):
            scores = scores.astype(np.float32).astype(np.float64)
    # -0.0 and 0.0 compare equal, so negating keeps ties as ties.
    neg = -scores
    many = qindex is not None and ptr.shape[0] > 2
    if ties == "worst":
        perm = np.lexsort((y, neg, qindex) if many else (y, neg))
    elif ties == "docid":
        perm = np.lexsort((-dkey, neg, qindex) if many else (-dkey, neg))
    elif many:
        perm = argsort_within_queries(neg, ptr)
    else:
        perm = np.argsort(neg, kind="stable")
    return RankedLists(
        y=np.ascontiguousarray(y[perm]),
        scores=np.ascontiguousarray(scores[perm]),
        ptr=np.ascontiguousarray(ptr, dtype=np.int64),
        query_ids=query_ids,
        ties=ties,
    )


def label_classes(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Map labels to dense class indices ordered by label value: ``(levels, class_index)``.

    O(n) when the label range is small (the usual 0..4), else O(n log n) via np.unique.
    Levels absent from ``y`` may appear in ``levels`` (with zero documents) in the O(n) path.
    """
    lo = int(y.min())
    hi = int(y.max())
    if hi - lo < 64:
        return np.arange(lo, hi + 1, dtype=np.int64), (y - lo).astype(np.int64)
    levels, inverse = np.unique(y, return_inverse=True)
    return levels.astype(np.int64), inverse.astype(np.int64).ravel()
