"""Metrics against hand-worked examples, brute-force plain-Python oracles and scikit-learn."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import ndcg_score, roc_auc_score

from rankbench.metrics import (
    DEFAULT_METRICS,
    auc,
    class_auc,
    evaluate,
    evaluate_per_query,
    mauc,
    mean_average_precision,
    mrr,
    ndcg_at_k,
    pairwise_accuracy,
    precision_at_k,
)

# ----------------------------------------------------------------------------------------
# Hand-worked example: one query, five documents, a score tie between labels 2 and 1.
#   doc    0    1    2    3    4
#   y      2    0    1    0    1
#   s     .5   .9   .5   .1   .3
# Stable order on descending score (tie keeps input order): docs 1,0,2,4,3 -> labels 0,2,1,1,0
# Worst-case tie order (lower label first among equal scores): docs 1,2,0,4,3 -> 0,1,2,1,0
# Ideal order: labels 2,1,1,0,0; gains 2^r-1: 3,1,1,0,0.
#
# NDCG@3, letor (ranks 1,2 undiscounted, rank 3 / log2(3) = 1.5849625):
#   DCG  = 0 + 3 + 1/1.5849625 = 3.6309298;  IDCG = 3 + 1 + 1/1.5849625 = 4.6309298
#   NDCG = 0.7840606
# NDCG@3, standard (rank r / log2(r+1)):
#   DCG  = 0/1 + 3/log2(3) + 1/log2(4) = 1.8927893 + 0.5 = 2.3927893
#   IDCG = 3/1 + 1/log2(3) + 1/2      = 3 + 0.6309298 + 0.5 = 4.1309298
#   NDCG = 0.5792375
# NDCG@3, letor, worst ties: DCG = 0 + 1 + 3/log2(3) = 2.8927893 -> 0.6246654
# AP (relevant at ranks 2,3,4): (1/2 + 2/3 + 3/4) / 3 = 0.6388889;  RR = 1/2
# P@2 micro = 1/2; P@2 macro: class 2 TP=1, class 1 TP=0, FP=1 -> (1/2 + 0/1)/2 = 1/4
# AUC (positives 0,2,4 vs negatives 1,3): each positive beats doc 3 only -> 3/6 = 0.5
# Class AUC: c=1 (docs 2,4 vs 0,1,3): doc2 ties doc0 (1/2), beats doc3 -> 1.5; doc4 beats
#   doc3 -> 1; 2.5/6 = 0.4166667.  c=2 (doc0 vs 1,2,3,4): 0 + 1/2 + 1 + 1 = 2.5/4 = 0.625
# MAUC (relevant classes, prevalence 2/3 and 1/3): 2/3*5/12 + 1/3*5/8 = 0.4861111
# Pairwise: 8 preference pairs; correct: (0,3) (0,4) (2,3) (4,3); tie (0,2) -> 4.5/8
HAND_Y = np.array([2, 0, 1, 0, 1])
HAND_S = np.array([0.5, 0.9, 0.5, 0.1, 0.3])


def test_hand_example_ndcg_both_conventions():
    assert ndcg_at_k(HAND_Y, HAND_S, None, 3) == pytest.approx(3.6309298 / 4.6309298, abs=1e-7)
    assert ndcg_at_k(HAND_Y, HAND_S, None, 3, convention="exp-log2") == pytest.approx(
        2.3927893 / 4.1309298, abs=1e-7)
    with pytest.warns(FutureWarning, match="deprecated: it means 'exp-log2'"):
        assert ndcg_at_k(HAND_Y, HAND_S, None, 3, convention="standard") == pytest.approx(
            2.3927893 / 4.1309298, abs=1e-7)
    assert ndcg_at_k(HAND_Y, HAND_S, None, 3, ties="worst") == pytest.approx(
        2.8927893 / 4.6309298, abs=1e-7)
    # ranks 1 and 2 are undiscounted under letor: NDCG@2 = (0 + 3) / (3 + 1)
    assert ndcg_at_k(HAND_Y, HAND_S, None, 2) == pytest.approx(0.75)
    assert ndcg_at_k(HAND_Y, HAND_S, None, 1) == 0.0


def test_hand_example_other_metrics():
    assert mean_average_precision(HAND_Y, HAND_S, None) == pytest.approx((1 / 2 + 2 / 3 + 3 / 4) / 3)
    assert mrr(HAND_Y, HAND_S, None) == pytest.approx(0.5)
    assert precision_at_k(HAND_Y, HAND_S, None, 2) == pytest.approx(0.5)
    assert precision_at_k(HAND_Y, HAND_S, None, 2, average="macro") == pytest.approx(0.25)
    assert auc(HAND_Y, HAND_S) == pytest.approx(0.5)
    ca = class_auc(HAND_Y, HAND_S)
    assert ca == pytest.approx({1: 2.5 / 6, 2: 0.625})
    assert mauc(HAND_Y, HAND_S) == pytest.approx(2 / 3 * 2.5 / 6 + 1 / 3 * 0.625)
    assert pairwise_accuracy(HAND_Y, HAND_S, None) == pytest.approx(4.5 / 8)
    assert pairwise_accuracy(HAND_Y, HAND_S, None, tie_credit=0.0) == pytest.approx(4 / 8)


# ----------------------------------------------------------------------------------------
# Brute-force oracles: plain Python, O(n^2), written from the definitions.


def _queries(y, s, qid):
    """{query id: (labels, scores)} in order of first appearance."""
    out: dict = {}
    for yi, si, qi in zip(y.tolist(), s.tolist(), qid.tolist(), strict=True):
        out.setdefault(qi, ([], []))
        out[qi][0].append(yi)
        out[qi][1].append(si)
    return out


def _ranked_labels(labels, scores, ties="stable"):
    idx = range(len(labels))
    if ties == "stable":
        order = sorted(idx, key=lambda i: (-scores[i], i))
    else:
        order = sorted(idx, key=lambda i: (-scores[i], labels[i], i))
    return [labels[i] for i in order]


def _dcg(labels, k, convention):
    total = 0.0
    for pos, lab in enumerate(labels[:k]):
        r = pos + 1
        if convention in ("exp-log2", "trec"):
            d = 1.0 / math.log2(r + 1)
        else:
            d = 1.0 if r <= 2 else 1.0 / math.log2(r)
        total += (lab if convention == "trec" else 2**lab - 1) * d
    return total


def _ndcg_bf(labels, scores, k, convention="letor", ties="stable", ids=None):
    if convention == "trec" and ties == "stable":  # trec_eval: equal scores by descending docno
        order = sorted(range(len(labels)), key=lambda i: (-scores[i], [-ord(c) for c in ids[i]] + [1]))
        ranked = [labels[i] for i in order]
    else:
        ranked = _ranked_labels(labels, scores, ties)
    if convention == "letor4" and len(labels) < k:
        return 0.0
    ideal = _dcg(sorted(labels, reverse=True), k, convention)
    return _dcg(ranked, k, convention) / ideal if ideal > 0 else 0.0


def _ap_bf(labels, scores, ties="stable"):
    ranked = _ranked_labels(labels, scores, ties)
    hits, acc = 0, 0.0
    for pos, lab in enumerate(ranked):
        if lab > 0:
            hits += 1
            acc += hits / (pos + 1)
    return acc / hits if hits else 0.0


def _rr_bf(labels, scores):
    for pos, lab in enumerate(_ranked_labels(labels, scores)):
        if lab > 0:
            return 1.0 / (pos + 1)
    return 0.0


def _prec_bf(labels, scores, k, average):
    top = _ranked_labels(labels, scores)[:k]
    n_rel = sum(1 for lab in top if lab > 0)
    if average == "micro":
        return n_rel / k
    fp = k - n_rel  # non-relevant documents and holes
    vals = []
    for c in sorted({lab for lab in labels if lab > 0}):
        tp = sum(1 for lab in top if lab == c)
        if tp + fp > 0:
            vals.append(tp / (tp + fp))
    return sum(vals) / len(vals) if vals else 0.0


def _auc_bf(pos_flags, scores):
    num, den = 0.0, 0
    for i in range(len(scores)):
        for j in range(len(scores)):
            if pos_flags[i] and not pos_flags[j]:
                den += 1
                num += 1.0 if scores[i] > scores[j] else 0.5 if scores[i] == scores[j] else 0.0
    return num / den if den else float("nan")


def _mauc_bf(labels, scores, classes, weights="prevalence"):
    num, wsum = 0.0, 0.0
    for c in classes:
        a = _auc_bf([lab == c for lab in labels], scores)
        if math.isnan(a):
            continue
        w = sum(1 for lab in labels if lab == c) if weights == "prevalence" else 1.0
        num += w * a
        wsum += w
    return num / wsum if wsum > 0 else float("nan")


def _pairs_bf(labels, scores):
    good, total = 0.0, 0
    for i in range(len(labels)):
        for j in range(len(labels)):
            if labels[i] > labels[j]:
                total += 1
                good += 1.0 if scores[i] > scores[j] else 0.5 if scores[i] == scores[j] else 0.0
    return good, total


def _random_case(seed, n_queries=12, max_docs=25, levels=3, score_levels=6):
    """Interleaved queries of random sizes (some shorter than 10), scores with many ties."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_docs, size=n_queries)
    qid = np.repeat(rng.permutation(1000)[:n_queries] * 3 + 7, sizes)
    perm = rng.permutation(qid.shape[0])
    qid = qid[perm]
    y = rng.integers(0, levels, size=qid.shape[0])
    s = rng.integers(0, score_levels, size=qid.shape[0]) / 2.0
    return y, s, qid


def _nanmean(values):
    vals = [v for v in values if not math.isnan(v)]
    return sum(vals) / len(vals) if vals else float("nan")


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("convention", ["letor", "letor4", "exp-log2", "trec"])
def test_ndcg_matches_bruteforce(seed, convention):
    y, s, qid = _random_case(seed)
    ids = np.arange(y.shape[0]).astype(str)   # the generated ids of a call without docids
    qs = {q: (y[qid == q].tolist(), s[qid == q].tolist(), ids[qid == q].tolist())
          for q in dict.fromkeys(qid.tolist())}
    for k in (1, 3, 10):
        for ties in ("stable", "worst"):
            want = [_ndcg_bf(lab, sc, k, convention, ties, i) for lab, sc, i in qs.values()]
            got = ndcg_at_k(y, s, qid, k, convention=convention, per_query=True, ties=ties)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_map_mrr_precision_match_bruteforce(seed):
    y, s, qid = _random_case(seed, levels=4)
    qs = _queries(y, s, qid)
    for ties in ("stable", "worst"):
        want = [_ap_bf(lab, sc, ties) for lab, sc in qs.values()]
        np.testing.assert_allclose(
            mean_average_precision(y, s, qid, per_query=True, ties=ties), want, rtol=1e-12)
    np.testing.assert_allclose(mrr(y, s, qid, per_query=True),
                               [_rr_bf(lab, sc) for lab, sc in qs.values()], rtol=1e-12)
    for k in (1, 2, 5, 10):
        for average in ("micro", "macro"):
            want = [_prec_bf(lab, sc, k, average) for lab, sc in qs.values()]
            np.testing.assert_allclose(
                precision_at_k(y, s, qid, k, average=average, per_query=True), want, rtol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_auc_family_matches_bruteforce(seed):
    y, s, qid = _random_case(seed, levels=4)
    qs = _queries(y, s, qid)
    per_q = [_auc_bf([lab > 0 for lab in labs], sc) for labs, sc in qs.values()]
    np.testing.assert_allclose(auc(y, s, qid, per_query=True), per_q, rtol=1e-12)
    assert auc(y, s, qid) == pytest.approx(_nanmean(per_q), rel=1e-12)
    assert auc(y, s) == pytest.approx(_auc_bf(list(y > 0), list(s)), rel=1e-12)
    assert auc(y, s, positive=2) == pytest.approx(_auc_bf(list(y == 2), list(s)), rel=1e-12)

    for classes, cset in (("relevant", [1, 2, 3]), ("all", [0, 1, 2, 3]), ([2, 3], [2, 3])):
        for weights in ("prevalence", "uniform"):
            want = [_mauc_bf(labs, sc, cset, weights) for labs, sc in qs.values()]
            got = mauc(y, s, qid, classes=classes, weights=weights, per_query=True)
            np.testing.assert_allclose(got, want, rtol=1e-12)
            assert mauc(y, s, qid, classes=classes, weights=weights) == pytest.approx(
                _nanmean(want), rel=1e-12)
            assert mauc(y, s, None, classes=classes, weights=weights) == pytest.approx(
                _mauc_bf(list(y), list(s), cset, weights), rel=1e-12)
    ca = class_auc(y, s, qid, classes="all")
    for c in range(4):
        want = _nanmean([_auc_bf([lab == c for lab in labs], sc) for labs, sc in qs.values()])
        assert ca[c] == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_pairwise_accuracy_matches_bruteforce(seed):
    y, s, qid = _random_case(seed, levels=4)
    counts = [_pairs_bf(labs, sc) for labs, sc in _queries(y, s, qid).values()]
    per_q = [g / t if t else float("nan") for g, t in counts]
    np.testing.assert_allclose(pairwise_accuracy(y, s, qid, per_query=True), per_q, rtol=1e-12)
    pooled = sum(g for g, _ in counts) / sum(t for _, t in counts)
    assert pairwise_accuracy(y, s, qid) == pytest.approx(pooled, rel=1e-12)
    assert pairwise_accuracy(y, s, qid, average="queries") == pytest.approx(_nanmean(per_q))


# ----------------------------------------------------------------------------------------
# Properties and cross-checks.


@pytest.mark.parametrize("convention", ["letor", "letor4", "exp-log2", "trec"])
def test_ranking_by_labels_is_perfect(convention):
    y, _, qid = _random_case(11, levels=5)
    s = y + 0.0
    has_rel = np.array([max(labs) > 0 for labs, _ in _queries(y, s, qid).values()])
    nd = ndcg_at_k(y, s, qid, 10, convention=convention, per_query=True)
    ap = mean_average_precision(y, s, qid, per_query=True)
    sizes = np.array([len(labs) for labs, _ in _queries(y, s, qid).values()])
    full = has_rel & ((sizes >= 10) | (convention != "letor4"))
    np.testing.assert_allclose(nd[full], 1.0)
    np.testing.assert_allclose(ap[has_rel], 1.0)
    assert np.all(nd[~has_rel] == 0.0) and np.all(ap[~has_rel] == 0.0)
    assert auc(y, s, qid) == 1.0 and pairwise_accuracy(y, s, qid) == 1.0
    assert mauc(y, s, qid, classes=[y.max()]) == 1.0


def test_letor4_zeroes_ndcg_beyond_short_queries():
    y = np.array([1, 0, 2, 0, 1, 0, 0])
    s = np.array([3.0, 2.0, 1.0, 0.5, 0.4, 0.3, 0.2])
    qid = np.array([1, 1, 1, 2, 2, 2, 2])  # sizes 3 and 4
    letor = ndcg_at_k(y, s, qid, 4, per_query=True)
    letor4 = ndcg_at_k(y, s, qid, 4, convention="letor4", per_query=True)
    assert letor4[0] == 0.0 and letor[0] == ndcg_at_k(y[:3], s[:3], None, 3) > 0
    assert letor4[1] == letor[1] == 1.0


def test_auc_matches_sklearn():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 500)
    s = np.round(rng.normal(size=500) + y, 1)  # rounding creates many ties
    assert auc(y, s) == pytest.approx(roc_auc_score(y, s), rel=1e-12)
    assert auc(2 * y - 1, s) == pytest.approx(roc_auc_score(y, s), rel=1e-12)  # labels +-1


def test_ndcg_standard_matches_sklearn_without_ties():
    rng = np.random.default_rng(4)
    for _ in range(5):
        n = int(rng.integers(2, 40))
        y = rng.integers(0, 4, n)
        if y.max() == 0:
            continue
        s = rng.permutation(n).astype(float)
        for k in (1, 5, 10):
            want = ndcg_score([2.0**y - 1], [s], k=k)
            assert ndcg_at_k(y, s, None, k, convention="exp-log2") == pytest.approx(want, rel=1e-12)


def test_per_query_values_average_to_the_mean():
    y, s, qid = _random_case(21, levels=3)
    for fn, kw in ((ndcg_at_k, {"k": 5}), (mean_average_precision, {}), (mrr, {}),
                   (auc, {}), (mauc, {})):
        per_q = fn(y, s, qid, per_query=True, **kw)
        assert fn(y, s, qid, **kw) == pytest.approx(np.nanmean(per_q), rel=1e-12)
    per_q = precision_at_k(y, s, qid, 4, average="macro", per_query=True)
    assert precision_at_k(y, s, qid, 4, average="macro") == pytest.approx(per_q.mean())


def test_interleaved_queries_equal_grouped_queries():
    y, s, qid = _random_case(5)
    order = np.argsort(qid, kind="stable")
    a = evaluate(y, s, qid)
    b = evaluate(y[order], s[order], qid[order])
    assert a.keys() == b.keys()
    for key in a:
        assert a[key] == pytest.approx(b[key], rel=1e-12, nan_ok=True), key


def test_skip_no_relevant_excludes_queries():
    y = np.array([0, 0, 1, 0])
    s = np.array([1.0, 0.0, 0.0, 1.0])
    qid = np.array([1, 1, 2, 2])
    assert ndcg_at_k(y, s, qid, 2, convention="exp-log2") == pytest.approx(0.5 * (1 / np.log2(3)))
    assert ndcg_at_k(y, s, qid, 2, convention="exp-log2", skip_no_relevant=True) == pytest.approx(
        1 / np.log2(3))
    assert mean_average_precision(y, s, qid) == pytest.approx(0.25)
    assert mean_average_precision(y, s, qid, skip_no_relevant=True) == pytest.approx(0.5)
    per_q = auc(y, s, qid, per_query=True)
    assert np.isnan(per_q[0]) and per_q[1] == 0.0  # one-class query is undefined


def test_evaluate_keys_and_consistency():
    y, s, qid = _random_case(8, levels=3)
    res = evaluate(y, s, qid)
    assert list(res) == list(DEFAULT_METRICS)
    assert len(res) == 10 + 5 + 10 + 10
    for k in (1, 4, 10):
        assert res[f"ndcg@{k}"] == pytest.approx(ndcg_at_k(y, s, qid, k), rel=1e-12)
        assert res[f"p@{k}"] == pytest.approx(precision_at_k(y, s, qid, k), rel=1e-12)
        assert res[f"p@{k}_macro"] == pytest.approx(
            precision_at_k(y, s, qid, k, average="macro"), rel=1e-12)
    assert res["map"] == pytest.approx(mean_average_precision(y, s, qid), rel=1e-12)
    assert res["mrr"] == pytest.approx(mrr(y, s, qid), rel=1e-12)
    assert res["auc"] == pytest.approx(auc(y, s, qid), rel=1e-12)
    assert res["mauc"] == pytest.approx(mauc(y, s, qid), rel=1e-12)
    assert res["pairwise_accuracy"] == pytest.approx(pairwise_accuracy(y, s, qid), rel=1e-12)
    std = evaluate(y, s, qid, metrics=["ndcg@3"], convention="exp-log2")
    assert std == {"ndcg@3": pytest.approx(ndcg_at_k(y, s, qid, 3, convention="exp-log2"))}

    worst = evaluate(y, s, qid, metrics=["ndcg@5", "map", "mrr"], convention="exp-log2",
                     ties="worst", skip_no_relevant=True)
    assert worst["ndcg@5"] == pytest.approx(ndcg_at_k(
        y, s, qid, 5, convention="exp-log2", ties="worst", skip_no_relevant=True), rel=1e-12)
    assert worst["map"] == pytest.approx(
        mean_average_precision(y, s, qid, ties="worst", skip_no_relevant=True), rel=1e-12)
    assert worst["mrr"] == pytest.approx(
        mrr(y, s, qid, ties="worst", skip_no_relevant=True), rel=1e-12)
    stable = evaluate(y, s, qid, metrics=["map"], skip_no_relevant=True)
    assert worst["map"] < stable["map"]  # ties are frequent in this case: the worst order costs

    pq = evaluate_per_query(y, s, qid)
    assert list(pq) == ["qid", "ndcg@10", "map", "auc"]
    first_seen = list(dict.fromkeys(qid.tolist()))
    assert pq["qid"].tolist() == first_seen
    np.testing.assert_allclose(pq["ndcg@10"], ndcg_at_k(y, s, qid, 10, per_query=True))
    np.testing.assert_allclose(pq["auc"], auc(y, s, qid, per_query=True))


def test_no_relevant_document_anywhere():
    y = np.zeros(6, dtype=int)
    s = np.arange(6.0)
    qid = np.array([1, 1, 1, 2, 2, 2])
    res = evaluate(y, s, qid)
    assert res["ndcg@10"] == 0.0 and res["map"] == 0.0 and res["p@3"] == 0.0
    assert math.isnan(res["auc"]) and math.isnan(res["mauc"]) and math.isnan(res["pairwise_accuracy"])


# ----------------------------------------------------------------------------------------
# Validation: clear ValueErrors before any kernel runs.


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: ndcg_at_k([1, 0], [0.1, np.nan], None), "NaN"),
        (lambda: ndcg_at_k([1, 0, 1], [0.1, 0.2], None), "scores has 2 entries"),
        (lambda: ndcg_at_k([1, 0], [0.1, 0.2], [1, 1, 2]), "qid must be 1-D"),
        (lambda: ndcg_at_k([], [], None), "empty"),
        (lambda: ndcg_at_k([1.5, 0], [0.1, 0.2], None), "integers"),
        (lambda: ndcg_at_k([1, 0], [0.1, 0.2], None, k=0), "positive integer"),
        (lambda: ndcg_at_k([1, 0], [0.1, 0.2], None, convention="trec_eval"), "convention"),
        (lambda: ndcg_at_k([1, -1], [0.1, 0.2], None), "non-negative"),
        (lambda: ndcg_at_k([1, 0], [0.1, 0.2], None, ties="best"), "ties"),
        (lambda: precision_at_k([1, 0], [0.1, 0.2], None, 1, average="weighted"), "average"),
        (lambda: mauc([1, 0], [0.1, 0.2], classes=[3]), "class 3"),
        (lambda: mauc([1, 0], [0.1, 0.2], weights="size"), "weights"),
        (lambda: mauc([1, 2], [0.1, 0.2], weights={1: 1.0}), "no entry for class 2"),
        (lambda: pairwise_accuracy([1, 0], [0.1, 0.2], None, tie_credit=2), "tie_credit"),
        (lambda: evaluate([1, 0], [0.1, 0.2], None, metrics=["ndcg@0"]), "unknown metric"),
        (lambda: evaluate([1, 0], [0.1, 0.2], None, metrics=["recall"]), "unknown metric"),
        (lambda: auc([[1, 0]], [[0.1, 0.2]]), "1-D"),
    ],
)
def test_bad_input_raises_clear_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()
