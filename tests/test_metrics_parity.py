"""convention="trec" equals trec_eval (pytrec_eval) and ir-measures per query, on real model runs.

A RankSVM trained on each dataset's Fold1 scores its test split; the run is scored by
rankbench and by the reference tools with the documents' own ids (LETOR's ``#docid``
comments, else generated ``L<line>`` ids), once as trained and once with the scores rounded
so that many tie (trec_eval breaks ties by descending document id).
"""

from __future__ import annotations

import numpy as np
import pytest

pytrec_eval = pytest.importorskip("pytrec_eval", reason="pytrec-eval-terrier (dev extra) not installed")
ir_measures = pytest.importorskip("ir_measures", reason="ir-measures (dev extra) not installed")

from rankbench.metrics import (  # noqa: E402
    evaluate_per_query,
    mean_average_precision,
    mrr,
    ndcg_at_k,
    precision_at_k,
    r_precision,
)

TREC_MEASURES = {"ndcg_cut_5", "ndcg_cut_10", "map", "P_5", "P_10", "recip_rank", "Rprec"}


def _runs(data_dir, name):
    from rankbench import RankSVM
    from rankbench.data import load_fold

    tr = load_fold(name, 1, "train", root=data_dir)
    te = load_fold(name, 1, "test", root=data_dir)
    s = RankSVM(C=1e-3, solver="tron_tree").fit(tr.X, tr.y, tr.qid).decision_function(te.X)
    # tied: many exact ties; tied32: ties only in float32 (trec_eval stores scores as C float,
    # so 1.0 and 1.0 + 1e-12 are tied there)
    noise = 1e-12 * np.random.default_rng(0).random(s.shape[0])
    return te, {"trained": s, "tied": np.round(s, 1), "tied32": np.round(s, 2) + noise}


def _qrels_run(te, scores):
    ids = te.doc_ids()
    qrels, run = {}, {}
    for q, d, lab, sc in zip(te.qid.tolist(), ids.tolist(), te.y.tolist(), scores.tolist(), strict=True):
        qrels.setdefault(str(q), {})[d] = int(lab)
        run.setdefault(str(q), {})[d] = float(sc)
    return qrels, run


def _ours(te, scores):
    ids = te.doc_ids()
    kw = {"per_query": True, "docids": ids}
    return {
        "ndcg_cut_5": ndcg_at_k(te.y, scores, te.qid, 5, convention="trec", **kw),
        "ndcg_cut_10": ndcg_at_k(te.y, scores, te.qid, 10, convention="trec", **kw),
        "map": mean_average_precision(te.y, scores, te.qid, convention="trec", **kw),
        "P_5": precision_at_k(te.y, scores, te.qid, 5, ties="docid", **kw),
        "P_10": precision_at_k(te.y, scores, te.qid, 10, ties="docid", **kw),
        "recip_rank": mrr(te.y, scores, te.qid, ties="docid", **kw),
        "Rprec": r_precision(te.y, scores, te.qid, ties="docid", **kw),
    }


@pytest.mark.parametrize("name, folder", [("ohsumed", "OHSUMED"), ("mq2008", "MQ2008")])
def test_trec_convention_equals_trec_eval_per_query(data_root, name, folder):
    if not (data_root / folder).is_dir():
        pytest.skip(f"{folder} not present under {data_root}")
    te, runs = _runs(data_root, name)
    qids = list(dict.fromkeys(te.qid.tolist()))
    for label, scores in runs.items():
        assert label != "tied" or len(np.unique(scores)) < 0.2 * scores.size  # many ties
        qrels, run = _qrels_run(te, scores)
        ref = pytrec_eval.RelevanceEvaluator(qrels, TREC_MEASURES).evaluate(run)
        ours = _ours(te, scores)
        for measure, values in ours.items():
            want = np.array([ref[str(q)][measure] for q in qids])
            np.testing.assert_allclose(values, want, rtol=0, atol=1e-12,
                                       err_msg=f"{name} {label} {measure}")


@pytest.mark.parametrize("name, folder", [("ohsumed", "OHSUMED"), ("mq2008", "MQ2008")])
def test_trec_convention_equals_ir_measures_per_query(data_root, name, folder):
    if not (data_root / folder).is_dir():
        pytest.skip(f"{folder} not present under {data_root}")
    from ir_measures import AP, RR, P, Rprec, nDCG

    te, runs = _runs(data_root, name)
    names = {nDCG @ 10: "ndcg_cut_10", nDCG @ 5: "ndcg_cut_5", AP: "map", P @ 10: "P_10",
             P @ 5: "P_5", RR: "recip_rank", Rprec: "Rprec"}
    qids = list(dict.fromkeys(te.qid.tolist()))
    for label, scores in runs.items():
        qrels, run = _qrels_run(te, scores)
        ref = {(m.query_id, str(m.measure)): m.value
               for m in ir_measures.iter_calc(list(names), qrels, run)}
        ours = _ours(te, scores)
        for measure, key in names.items():
            want = np.array([ref[(str(q), str(measure))] for q in qids])
            np.testing.assert_allclose(ours[key], want, rtol=0, atol=1e-12,
                                       err_msg=f"{name} {label} {measure}")


def test_letor_and_trec_differ_where_the_issue_says(data_root):
    """trec_eval's linear gain is not LETOR's 2^r - 1: the two conventions differ on OHSUMED."""
    if not (data_root / "OHSUMED").is_dir():
        pytest.skip("OHSUMED not present")
    te, runs = _runs(data_root, "ohsumed")
    s = runs["trained"]
    trec = ndcg_at_k(te.y, s, te.qid, 10, convention="trec", docids=te.doc_ids())
    exp = ndcg_at_k(te.y, s, te.qid, 10, convention="exp-log2")
    assert abs(trec - exp) > 1e-3
    table = evaluate_per_query(te.y, s, te.qid, ["ndcg@10", "rprec"], convention="trec",
                               docids=te.doc_ids())
    np.testing.assert_allclose(table["ndcg@10"], _ours(te, s)["ndcg_cut_10"], atol=1e-15)
