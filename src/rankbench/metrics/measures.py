"""Ranking metrics over queries: NDCG@k, MAP, P@k (micro/macro), MRR, AUC, MAUC, class AUC,
pairwise accuracy.

Every public function takes ``(y, scores, qid)`` with the documents of a query contiguous or
not, sorts each query once (stable, descending score) and returns the mean over queries, or
with ``per_query=True`` one value per query in order of first appearance of each query id.
Queries on which a metric is undefined (AUC with one class only, skipped queries) hold NaN
in the per-query array and are left out of the mean.  No query leaves a mean silently: a
metric undefined on some queries (AUC, MAUC and class AUC on a query of one class,
pairwise accuracy averaged over queries on a query without a preference pair) warns with
``UndefinedMetricWarning`` saying how many it left out; only ``skip_no_relevant=True``,
which asks for it, drops queries without a word.  NDCG is defined for any label: the
exponential gain of a query with a label above 900 is scaled by a power of two, which the
ratio DCG / IDCG does not see, so no sum overflows (a label of 1100 once made its query NaN).

Conventions (``convention=``); tests/test_metrics.py works an example through by hand:

``"letor"`` (default)
    LETOR's evaluation scripts (Eval-Score-3.0.pl / Eval-Score-4.0.pl): gain ``2^r - 1``;
    ranks 1 and 2 undiscounted, rank ``r >= 3`` divided by ``log2(r)``; ideal DCG from the
    query's own labels; a query without relevant documents scores NDCG = AP = 0 and counts
    in the mean; equal scores keep input order (stable sort on descending score).  A query
    with fewer than k documents gets NDCG@k over all its documents (NDCG@k = NDCG@n_q),
    where both scripts add 0: equal to Eval-Score-3.0.pl on every query of at least k
    documents (all of LETOR 3.0's data; docs/metrics.md, tests/test_metrics_parity.py).
``"letor4"``
    ``"letor"`` plus the one quirk of Eval-Score-4.0.pl: it computes NDCG only at positions
    up to the query's size and adds nothing (0) for NDCG@k of a query with fewer than k
    documents, while still dividing by all queries.  This is what the LETOR 4.0 baselines
    report for MQ2007/MQ2008 NDCG@k at large k (tests/test_metrics_realdata.py reproduces
    the published MQ2008 table's shape).  On OHSUMED (>= 35 documents per query) and the
    Gov sets (about 1000) the two LETOR conventions give identical numbers.
``"trec"``
    trec_eval exactly (its ``ndcg_cut.k``, ``map``, ``P.k``, ``recip_rank``, ``Rprec``):
    gain = the label itself (linear), discount ``1/log2(r + 1)`` at every rank, ideal DCG
    from the query's judged documents, and trec_eval's order of equal scores: descending
    document id (``strcmp``).  Pass the documents' ids as ``docids=`` (``RankingData.doc_ids()``:
    LETOR's ``#docid = ...`` comments, else ``L<line>``); without them the input position in
    decimal is the id.  tests/test_metrics_parity.py checks every value per query against
    pytrec_eval and ir-measures on real runs.
``"exp-log2"``
    Burges' NDCG: gain ``2^r - 1``, discount ``1/log2(r + 1)`` at every rank; equal scores in
    input order.  ``"standard"`` is a deprecated alias (it is not trec_eval's, whose gain is
    linear).

Independent of the convention: ``ties="worst"`` orders equal scores with lower labels
first (relevant after non-relevant: the pessimistic bound), ``ties="docid"`` by descending
document id (the ``"trec"`` convention's default); ``skip_no_relevant=True`` leaves
queries without a relevant document out of the mean (NaN per query).
Relevant means label > 0 for MAP, MRR, P@k and (binary) AUC.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rankbench.metrics import kernels
from rankbench.metrics.ranked_lists import RankedLists, label_classes, rank_queries


class UndefinedMetricWarning(UserWarning):
    """A metric's mean left out queries on which it is undefined (the message counts them)."""


CONVENTIONS = ("letor", "letor4", "trec", "exp-log2")
DEPRECATED_CONVENTIONS = {"standard": "exp-log2"}
PRECISION_AVERAGES = ("micro", "macro")
PAIR_AVERAGES = ("pairs", "queries")


# ---------------------------------------------------------------- argument checks


def check_convention(convention: str) -> str:
    """Validate a convention name; the canonical name (a deprecated alias warns and maps)."""
    if convention in DEPRECATED_CONVENTIONS:
        import warnings

        new = DEPRECATED_CONVENTIONS[convention]
        warnings.warn(f"convention={convention!r} is deprecated: it means {new!r} (gain 2^r - 1, "
                      "discount 1/log2(r + 1)), which is not trec_eval's; use "
                      f"convention={new!r}, or 'trec' for trec_eval's numbers",
                      FutureWarning, stacklevel=3)
        return new
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}, got {convention!r}")
    return convention


def ties_for(convention: str, ties: str) -> str:
    """The tie order a convention implies: trec_eval breaks score ties by document id."""
    return "docid" if convention == "trec" and ties == "stable" else ties


def check_cutoff(k: Any, name: str = "k") -> int:
    """Validate a rank cutoff (a positive integer)."""
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"{name} must be a positive integer, got {k!r}")
    return int(k)


def _check_nonnegative_labels(r: RankedLists, metric: str) -> None:
    if r.y.min() < 0:
        raise ValueError(f"{metric} needs non-negative relevance labels (gain 2^r - 1); "
                         f"found label {int(r.y.min())}")


def mean_defined(values: np.ndarray, metric: str | None = None, why: str = "",
                 stacklevel: int = 3) -> float:
    """Mean over the finite entries (NaN marks an undefined or skipped query); NaN if none.

    With ``metric``, NaN entries are undefined values (not requested skips): an
    ``UndefinedMetricWarning`` names the metric, how many queries it left out and ``why``."""
    ok = ~np.isnan(values)
    if metric is not None and not ok.all():
        import warnings

        n_bad = int(values.shape[0] - np.count_nonzero(ok))
        warnings.warn(f"{metric}: {n_bad} of {values.shape[0]} queries left out of the mean: "
                      f"undefined there ({why})", UndefinedMetricWarning, stacklevel=stacklevel)
    if not ok.any():
        return float("nan")
    return float(values[ok].mean())


ONE_CLASS = "documents of one class only"
ONE_LABEL = "every document of the query has the same label"


def _finish(per_query_values: np.ndarray, per_query: bool, metric: str | None = None,
            why: str = "") -> float | np.ndarray:
    return per_query_values if per_query else mean_defined(per_query_values, metric, why, stacklevel=4)


# ---------------------------------------------------------------- position-based metrics


def ndcg_table(r: RankedLists, kmax: int, convention: str = "letor",
               skip_no_relevant: bool = False) -> np.ndarray:
    """NDCG@1..kmax of every ranked query, shape (n_queries, kmax); NaN rows for skipped queries."""
    convention = check_convention(convention)
    _check_nonnegative_labels(r, "NDCG")
    mode = kernels.DISCOUNT_LETOR if convention in ("letor", "letor4") else kernels.DISCOUNT_STANDARD
    gain = kernels.GAIN_LINEAR if convention == "trec" else kernels.GAIN_EXP
    table = kernels.ndcg_table(r.y, r.ptr, kmax, mode, gain)
    if convention == "letor4":
        short = r.sizes[:, None] <= np.arange(kmax)[None, :]
        table[short] = 0.0
    if skip_no_relevant:
        has_rel = np.maximum.reduceat(r.y, r.ptr[:-1]) > 0
        table[~has_rel, :] = np.nan
    return table


def ndcg_at_k(y: Any, scores: Any, qid: Any, k: int = 10, convention: str = "letor",
              per_query: bool = False, ties: str = "stable",
              skip_no_relevant: bool = False, docids: Any = None) -> float | np.ndarray:
    """Mean NDCG@k over queries (gain and discount per ``convention``); O(n log n)."""
    k = check_cutoff(k)
    convention = check_convention(convention)
    r = rank_queries(y, scores, qid, ties_for(convention, ties), docids)
    return _finish(ndcg_table(r, k, convention, skip_no_relevant)[:, k - 1], per_query)


def binary_stats(r: RankedLists, kmax: int = 1):
    """(AP, n relevant, reciprocal rank, relevant count in top 1..kmax) per ranked query."""
    return kernels.binary_rank_stats(r.y, r.ptr, kmax)


def mean_average_precision(y: Any, scores: Any, qid: Any, convention: str = "letor",
                           per_query: bool = False, ties: str = "stable",
                           skip_no_relevant: bool = False, docids: Any = None) -> float | np.ndarray:
    """MAP, relevant = label > 0: AP averages precision at each relevant rank over the query's
    relevant documents; a query without relevant documents scores 0 (or is skipped); O(n log n).
    The conventions differ only in the order of equal scores (``"trec"``: by document id)."""
    convention = check_convention(convention)
    r = rank_queries(y, scores, qid, ties_for(convention, ties), docids)
    ap, nrel, _, _ = binary_stats(r)
    if skip_no_relevant:
        ap = np.where(nrel > 0, ap, np.nan)
    return _finish(ap, per_query)


def mrr(y: Any, scores: Any, qid: Any, per_query: bool = False, ties: str = "stable",
        skip_no_relevant: bool = False, docids: Any = None) -> float | np.ndarray:
    """Mean reciprocal rank of the first relevant (label > 0) document; 0 for a query without one
    (trec_eval's ``recip_rank`` with ``ties="docid"``)."""
    r = rank_queries(y, scores, qid, ties, docids)
    _, nrel, rr, _ = binary_stats(r)
    if skip_no_relevant:
        rr = np.where(nrel > 0, rr, np.nan)
    return _finish(rr, per_query)


def precision_table(r: RankedLists, kmax: int, average: str) -> np.ndarray:
    """P@1..kmax of every ranked query, shape (n_queries, kmax), micro or macro (see precision_at_k)."""
    if average not in PRECISION_AVERAGES:
        raise ValueError(f"average must be one of {PRECISION_AVERAGES}, got {average!r}")
    cut = np.arange(1, kmax + 1, dtype=np.float64)
    if average == "micro":
        _, _, _, top = binary_stats(r, kmax)
        return top / cut[None, :]
    levels, cls = label_classes(r.y)
    top, total = kernels.class_counts_top(cls, r.ptr, kmax, levels.shape[0])
    rel = levels > 0
    tp = top[:, :, rel].astype(np.float64)                     # (nq, kmax, L_rel)
    fp = cut[None, :] - tp.sum(axis=2)                          # non-relevant and holes
    denom = tp + fp[:, :, None]
    present = (total[:, rel] > 0)[:, None, :] & (denom > 0)
    prec = np.divide(tp, denom, out=np.zeros_like(tp), where=present)
    n_cls = present.sum(axis=2)
    return np.divide(prec.sum(axis=2), n_cls, out=np.zeros(n_cls.shape), where=n_cls > 0)


def precision_at_k(y: Any, scores: Any, qid: Any, k: int, average: str = "micro",
                   per_query: bool = False, ties: str = "stable",
                   docids: Any = None) -> float | np.ndarray:
    """Precision@k, micro- or macro-averaged over the relevant classes (Welleck 2016, sect. 3.1).

    The top k documents of a query are its predicted-relevant set; positions beyond the end of
    a short query count as non-relevant (the denominator is always k, as in Eval-Score-4.0.pl).
    For relevance class c >= 1: TP_c = top-k documents with label c; FP = top-k documents
    that are not relevant (label 0, or a hole).
    ``micro``: the contingency tables pooled over classes, sum_c TP_c / (sum_c TP_c + FP)
    = (relevant documents in the top k) / k, the usual P@k; pooled over queries it is the
    mean over queries since every query has denominator k.
    ``macro``: the mean over the relevant classes present in the query of
    TP_c / (TP_c + FP) (a class with TP_c + FP = 0 is left out), then the mean over queries.
    With binary labels both equal the usual P@k; a query without relevant documents scores 0.
    Why FP is the non-relevant set: the paper's formulas (1)-(4) did not survive, and with a
    one-vs-rest table per class (FP_c = top-k documents not of class c) every class has
    TP_c + FP_c = k, which makes micro and macro identical; counting only non-relevant
    documents as false positives is the reading under which the paper's remarks (micro
    follows the prevalent classes, macro weighs every class equally) hold.
    """
    k = check_cutoff(k)
    r = rank_queries(y, scores, qid, ties, docids)
    return _finish(precision_table(r, k, average)[:, k - 1], per_query)


def r_precision_per_query(r: RankedLists) -> np.ndarray:
    """R-precision of every ranked query: relevant documents in the top R over R, R = the
    query's number of relevant documents; 0 for a query without one (trec_eval's Rprec)."""
    nrel = np.add.reduceat((r.y > 0).astype(np.int64), r.ptr[:-1]) if r.n_queries else np.zeros(0)
    out = np.zeros(r.n_queries)
    for q in range(r.n_queries):
        R = int(nrel[q])
        if R:
            a = r.ptr[q]
            out[q] = float((r.y[a:a + R] > 0).sum()) / R
    return out


def r_precision(y: Any, scores: Any, qid: Any, per_query: bool = False, ties: str = "stable",
                docids: Any = None) -> float | np.ndarray:
    """Mean R-precision over queries (trec_eval's ``Rprec`` with ``ties="docid"``); O(n log n)."""
    r = rank_queries(y, scores, qid, ties, docids)
    return _finish(r_precision_per_query(r), per_query)


# ---------------------------------------------------------------- ROC-based metrics


def auc_per_query(r: RankedLists, positive: int | None = None) -> np.ndarray:
    """Binary AUC (ties 1/2) of every ranked query; NaN where a query has one class only."""
    pos = (r.y > 0) if positive is None else (r.y == positive)
    wins, count = kernels.class_reference_wins(pos.astype(np.int64), r.scores, r.ptr, 2)
    denom = count[:, 1].astype(np.float64) * count[:, 0]
    return np.divide(wins[:, 1], denom, out=np.full(denom.shape, np.nan), where=denom > 0)


def auc(y: Any, scores: Any, qid: Any = None, per_query: bool = False,
        positive: int | None = None) -> float | np.ndarray:
    """Area under the ROC curve (Mann-Whitney), ties count 1/2; O(n log n).

    Positives are label > 0, or label == ``positive`` when given.  ``qid=None``: one ranking
    of all documents (the classification setting).  With ``qid``: the AUC of each query,
    averaged over the queries that have both classes (the others are NaN per query).
    """
    r = rank_queries(y, scores, qid)
    return _finish(auc_per_query(r, positive), per_query, "auc", ONE_CLASS)


def _class_indices(levels: np.ndarray, present: np.ndarray, classes: Any) -> np.ndarray:
    """Indices into ``levels`` of the class set named by ``classes``."""
    if isinstance(classes, str):
        if classes == "relevant":
            sel = present & (levels > 0)
        elif classes == "all":
            sel = present
        else:
            raise ValueError(f"classes must be 'relevant', 'all' or a list of labels, got {classes!r}")
        # an empty set (e.g. no relevant document anywhere) leaves MAUC undefined (NaN)
        return np.flatnonzero(sel)
    wanted = np.asarray(list(classes), dtype=np.int64)
    if wanted.shape[0] == 0:
        raise ValueError("classes is an empty list")
    idx = np.searchsorted(levels, wanted)
    ok = (idx < levels.shape[0]) & (levels[np.minimum(idx, levels.shape[0] - 1)] == wanted)
    ok &= present[np.minimum(idx, levels.shape[0] - 1)]
    if not ok.all():
        raise ValueError(f"class {int(wanted[~ok][0])} has no documents "
                         f"(labels present: {levels[present].tolist()})")
    return np.unique(idx)


def class_auc_table(r: RankedLists, classes: Any = "relevant"):
    """(labels of the class set, per-query AUC(c vs rest) of shape (n_queries, n_set),
    documents of each class per query (n_queries, n_set)); NaN where undefined."""
    levels, cls = label_classes(r.y)
    wins, count = kernels.class_reference_wins(cls, r.scores, r.ptr, levels.shape[0])
    idx = _class_indices(levels, count.sum(axis=0) > 0, classes)
    n = r.sizes[:, None].astype(np.float64)
    cnt = count[:, idx].astype(np.float64)
    denom = cnt * (n - cnt)
    table = np.divide(wins[:, idx], denom, out=np.full(denom.shape, np.nan), where=denom > 0)
    return levels[idx], table, cnt


def class_auc(y: Any, scores: Any, qid: Any = None,
              classes: Any = "relevant") -> dict[int, float]:
    """Class-reference AUC (class c positive, every other label negative) for each class c
    (Welleck 2016, Table 3), per-query mean over the queries where it is defined; O(n L)."""
    r = rank_queries(y, scores, qid)
    labels, table, _ = class_auc_table(r, classes)
    out = {}
    for j, c in enumerate(labels):
        out[int(c)] = mean_defined(table[:, j], f"class AUC of label {int(c)}",
                                   f"no document of label {int(c)}, or no other")
    return out


def mauc_per_query(r: RankedLists, classes: Any = "relevant",
                   weights: Any = "prevalence") -> np.ndarray:
    """MAUC of every ranked query (see mauc); NaN where no class-reference AUC is defined."""
    labels, table, cnt = class_auc_table(r, classes)
    if isinstance(weights, str):
        if weights == "prevalence":
            w = cnt
        elif weights == "uniform":
            w = np.ones_like(cnt)
        else:
            raise ValueError(f"weights must be 'prevalence', 'uniform' or a dict label -> weight, "
                             f"got {weights!r}")
    elif isinstance(weights, Mapping):
        missing = [int(c) for c in labels if int(c) not in weights]
        if missing:
            raise ValueError(f"weights has no entry for class {missing[0]}")
        wv = np.array([float(weights[int(c)]) for c in labels])
        if not np.all(np.isfinite(wv)) or (wv < 0).any():
            raise ValueError("class weights must be finite and non-negative")
        w = np.broadcast_to(wv, cnt.shape)
    else:
        raise ValueError(f"weights must be 'prevalence', 'uniform' or a dict, got {type(weights)}")
    defined = ~np.isnan(table)
    w = np.where(defined, w, 0.0)
    wsum = w.sum(axis=1)
    num = np.where(defined, table, 0.0) * w
    return np.divide(num.sum(axis=1), wsum, out=np.full(wsum.shape, np.nan), where=wsum > 0)


def mauc(y: Any, scores: Any, qid: Any = None, classes: Any = "relevant",
         weights: Any = "prevalence", per_query: bool = False) -> float | np.ndarray:
    """Multi-class AUC (Welleck 2016 eq. 5, after Fawcett 2006): sum_c p(c) AUC(c vs rest).

    ``classes="relevant"`` (default, the paper's numbers and Table 3): the relevance classes
    c >= 1; ``"all"`` adds class 0; or a list of labels.  ``weights="prevalence"`` (default):
    p(c) = share of class c among the documents of the class set (within the query when
    ``qid`` is given, else in the pooled ranking); ``"uniform"``; or a dict label -> weight.
    Weights are renormalised over the classes whose AUC is defined.  ``qid``: per-query MAUC
    averaged over queries with a defined value (Welleck evaluates per query, sect. 3.1.3 and
    Theorem 4.1 work on one query's ranked list); ``qid=None``: one pooled ranking.  O(n L).
    """
    r = rank_queries(y, scores, qid)
    return _finish(mauc_per_query(r, classes, weights), per_query, "mauc", ONE_LABEL)


def pairwise_table(r: RankedLists):
    """(correctly ordered, tied, all) preference pairs per ranked query (pairs with y_i != y_j)."""
    levels, cls = label_classes(r.y)
    return kernels.preference_pair_counts(cls, r.scores, r.ptr, levels.shape[0])


def pairwise_accuracy(y: Any, scores: Any, qid: Any, per_query: bool = False,
                      tie_credit: float = 0.5, average: str = "pairs") -> float | np.ndarray:
    """Share of preference pairs (same query, y_i > y_j) with s_i > s_j; a score tie earns
    ``tie_credit`` (default 1/2; 0 counts ties as errors); O(n L) after the sort.

    ``average="pairs"`` (default): correct pairs over all pairs of all queries (Lee & Lin's
    pairwise accuracy); ``"queries"``: mean of the per-query shares.  Queries without a
    preference pair are NaN per query and carry no weight.
    """
    if not (0.0 <= float(tie_credit) <= 1.0):
        raise ValueError(f"tie_credit must lie in [0, 1], got {tie_credit!r}")
    if average not in PAIR_AVERAGES:
        raise ValueError(f"average must be one of {PAIR_AVERAGES}, got {average!r}")
    r = rank_queries(y, scores, qid)
    correct, tied, total = pairwise_table(r)
    good = correct + float(tie_credit) * tied
    per_q = np.divide(good, total, out=np.full(total.shape, np.nan), where=total > 0)
    if per_query:
        return per_q
    if average == "queries":
        return mean_defined(per_q, "pairwise_accuracy", ONE_LABEL)
    n_pairs = int(total.sum())
    return float(good.sum() / n_pairs) if n_pairs > 0 else float("nan")


__all__: Sequence[str] = (
    "CONVENTIONS", "UndefinedMetricWarning", "ndcg_at_k", "mean_average_precision", "mrr", "precision_at_k", "r_precision",
    "auc", "mauc", "class_auc", "pairwise_accuracy",
)
