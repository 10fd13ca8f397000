"""`evaluate`: every metric of a run from one sort per query, under the key names records use."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import numpy as np

from rankbench.metrics import measures as m
from rankbench.metrics.names import DEFAULT_METRICS  # noqa: F401 - re-exported
from rankbench.metrics.ranked_lists import RankedLists, rank_queries

_KEY = re.compile(r"^(ndcg|p)@([1-9][0-9]*)(_macro)?$")
_PLAIN = ("map", "mrr", "rprec", "auc", "mauc", "mauc_pooled", "pairwise_accuracy")
# set-level metrics: one value for the whole scored set, no per-query values
_POOLED = ("mauc_pooled",)


def _parse(key: str) -> tuple[str, int]:
    if key in _PLAIN:
        return key, 0
    hit = _KEY.match(key)
    if hit is None or (hit.group(1) == "ndcg" and hit.group(3)):
        raise ValueError(f"unknown metric {key!r}; known: ndcg@K, p@K, p@K_macro, {', '.join(_PLAIN)}")
    family = hit.group(1) + ("_macro" if hit.group(3) else "")
    return family, int(hit.group(2))


class _PerQuery:
    """Per-query values of the requested metrics, each family computed once from ``r``."""

    def __init__(self, r: RankedLists, keys: Iterable[str], convention: str,
                 skip_no_relevant: bool = False):
        self.r = r
        self.convention = convention
        self.skip = bool(skip_no_relevant)
        parsed = [(key, *_parse(key)) for key in keys]
        self.parsed = parsed
        self.kmax = {fam: max((k for _, f, k in parsed if f == fam), default=0)
                     for fam in ("ndcg", "p", "p_macro")}
        self._cache: dict[str, Any] = {}

    def _get(self, family: str) -> Any:
        if family in self._cache:
            return self._cache[family]
        r = self.r
        if family == "ndcg":
            val = m.ndcg_table(r, self.kmax["ndcg"], self.convention, self.skip)
        elif family == "binary":
            val = m.binary_stats(r, max(1, self.kmax["p"]))
        elif family == "p_macro":
            val = m.precision_table(r, self.kmax["p_macro"], "macro")
        elif family == "auc":
            val = m.auc_per_query(r)
        elif family == "mauc":
            val = m.mauc_per_query(r)
        elif family == "pairs":
            val = m.pairwise_table(r)
        else:  # pragma: no cover - families are fixed above
            raise KeyError(family)
        self._cache[family] = val
        return val

    def values(self, key: str) -> np.ndarray:
        """Per-query values of metric ``key``."""
        _, family, k = next(p for p in self.parsed if p[0] == key)
        if family == "ndcg":
            return self._get("ndcg")[:, k - 1]
        if family == "p":
            return self._get("binary")[3][:, k - 1] / k
        if family == "p_macro":
            return self._get("p_macro")[:, k - 1]
        if family in _POOLED:
            raise ValueError(f"{key} is one value for the whole set (no per-query values)")
        if family == "rprec":
            return m.r_precision_per_query(self.r)
        if family in ("map", "mrr"):
            ap, nrel, rr, _ = self._get("binary")
            vals = ap if family == "map" else rr
            return np.where(nrel > 0, vals, np.nan) if self.skip else vals
        if family in ("auc", "mauc"):
            return self._get(family)
        correct, tied, total = self._get("pairs")
        return np.divide(correct + 0.5 * tied, total, out=np.full(total.shape, np.nan),
                         where=total > 0)

    def mean(self, key: str) -> float:
        """The metric's value over the data set (mean over queries; pairs pooled for pairwise_accuracy)."""
        if key == "mauc_pooled":  # Welleck's MAUC over the pooled test set: one ranking
            pooled = rank_queries(self.r.y, self.r.scores, None)
            return float(m.mauc_per_query(pooled)[0])
        if key == "pairwise_accuracy":
            correct, tied, total = self._get("pairs")
            n = int(total.sum())
            return float((correct.sum() + 0.5 * tied.sum()) / n) if n else float("nan")
        _, family, _ = next(p for p in self.parsed if p[0] == key)
        if family in ("auc", "mauc"):  # undefined on a query of one class: counted in a warning
            return m.mean_defined(self.values(key), key,
                                  m.ONE_CLASS if family == "auc" else m.ONE_LABEL, stacklevel=5)
        # NaN elsewhere only marks a query skip_no_relevant asked to leave out
        return m.mean_defined(self.values(key))


def evaluate(y: Any, scores: Any, qid: Any, metrics: Iterable[str] | None = None,
             convention: str = "letor", ties: str = "stable",
             skip_no_relevant: bool = False, docids: Any = None) -> dict[str, float]:
    """All metrics of one scored data set (keys as in docs/interfaces.md); one sort, O(n log n + n L).

    ``metrics=None`` computes DEFAULT_METRICS: ndcg@1..10, map, mrr, auc, mauc,
    pairwise_accuracy, p@1..10 (micro) and p@1_macro..p@10_macro.  Position metrics follow
    ``convention``; AUC and MAUC are per-query means when ``qid`` is given (pooled when
    None), over the queries where they are defined; pairwise_accuracy pools all pairs.
    ``ties`` orders equal scores for the position metrics (AUC-type metrics count ties 1/2
    whatever the order); ``skip_no_relevant`` drops queries without a relevant document
    from NDCG, MAP and MRR.  ``rprec`` (R-precision) and ``mauc_pooled`` (MAUC of the
    whole set as one ranking, Welleck's other reading) are computed when asked for.
    ``docids`` name the documents for the ``"trec"`` convention's tie order.
    """
    convention = m.check_convention(convention)
    keys = list(DEFAULT_METRICS if metrics is None else metrics)
    r = rank_queries(y, scores, qid, m.ties_for(convention, ties), docids)
    table = _PerQuery(r, keys, convention, skip_no_relevant)
    return {key: table.mean(key) for key in keys}


def evaluate_per_query(y: Any, scores: Any, qid: Any,
                       metrics: Iterable[str] = ("ndcg@10", "map", "auc"),
                       convention: str = "letor", ties: str = "stable",
                       skip_no_relevant: bool = False, docids: Any = None) -> dict[str, np.ndarray]:
    """Per-query values: ``{"qid": query ids in order of first appearance, key: array, ...}``.

    Undefined or skipped values (e.g. AUC of a query with one class) are NaN.
    """
    convention = m.check_convention(convention)
    keys = list(metrics)
    r = rank_queries(y, scores, qid, m.ties_for(convention, ties), docids)
    table = _PerQuery(r, keys, convention, skip_no_relevant)
    out: dict[str, np.ndarray] = {"qid": r.query_ids}
    for key in keys:
        out[key] = table.values(key)
    return out
