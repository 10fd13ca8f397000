"""convention="trec" equals trec_eval (pytrec_eval) and ir-measures per query, on real model runs.

A RankSVM trained on each dataset's Fold1 scores its test split; the run is scored by
rankbench and by the reference tools with the documents' own ids (LETOR's ``#docid``
comments, else generated ``L<line>`` ids), once as trained and once with the scores rounded
so that many tie (trec_eval breaks ties by descending document id).
"""

from __future__ import annotations

import math

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


# ---------------------------------------------------------------- letor / letor4 / exp-log2
#
# The LETOR scripts, transcribed: Eval-Score-3.0.pl and Eval-Score-4.0.pl (Jun Xu and Tie-Yan
# Liu; the LETOR 3.0 and 4.0 distributions) rank each query's documents by a stable sort on
# descending prediction (input order among ties), take the gain of labels 0/1/2 as 0/1/3 and
# "relevant" as label 1 or 2, leave ranks 1 and 2 undiscounted and divide rank r >= 3 by
# log2(r). They differ where a query has fewer than k documents: both compute NDCG only up to
# the query's size (an absent NDCG@k adds 0 to the average over all queries); 3.0 computes P@k
# only up to it too, 4.0 (modified 2009-4-24) counts the missing positions as irrelevant.
# The transcription below is checked against the scripts themselves where they are available
# (test_letor_transcription_equals_the_real_scripts).

_SCRIPT_GAIN = {0: 0.0, 1: 1.0, 2: 3.0}  # %hsNdcgRelScore
_SCRIPT_REL = {0: 0, 1: 1, 2: 1}  # %hsPrecisionRel


def _script_dcg(top: int, rates: list[int], version: int) -> list[float]:
    dcg = [_SCRIPT_GAIN[rates[0]]]
    stop = top if version == 4 else min(top, len(rates))  # 4.0 runs on into holes (gain 0)
    for pos in range(1, stop):
        g = _SCRIPT_GAIN[rates[pos]] if pos < len(rates) else 0.0
        dcg.append(dcg[-1] + (g if pos < 2 else g * math.log(2.0) / math.log(pos + 1.0)))
    return dcg


def _script_query(rates: list[int], version: int, top: int = 10) -> dict[str, list[float] | float]:
    """EvalQuery of Eval-Score-<version>.0.pl for one query's labels in ranked order; positions
    the script leaves undefined are 0, as its averaging counts them."""
    prec, hits = [], 0
    for pos in range(top if version == 4 else min(top, len(rates))):
        r = rates[pos] if pos < len(rates) else 0
        hits += _SCRIPT_REL[r] == 1
        prec.append(hits / (pos + 1))
    n_rel, ap = 0, 0.0
    for pos, r in enumerate(rates):
        if _SCRIPT_REL[r] == 1:
            n_rel += 1
            ap += n_rel / (pos + 1)
    top_ndcg = len(rates) if version == 4 else top  # 4.0: NDCG($#rates + 1, @rates)
    dcg = _script_dcg(top_ndcg, rates, version)
    best = _script_dcg(top_ndcg, sorted(rates, key=lambda r: -_SCRIPT_GAIN[r]), version)
    ndcg = [dcg[p] / best[p] if best[p] != 0 else 0.0 for p in range(min(top_ndcg, len(rates)))]
    pad = [0.0] * top
    return {"P": (prec + pad)[:top], "NDCG": (ndcg + pad)[:top], "MAP": ap / n_rel if n_rel else 0.0}


def _script_run(y, scores, qid, version: int) -> dict:
    """{qid: _script_query(...)}: each query's labels in the script's ranked order."""
    out = {}
    for q in dict.fromkeys(np.asarray(qid).tolist()):
        idx = np.flatnonzero(np.asarray(qid) == q)
        ranked = sorted(idx.tolist(), key=lambda i: -scores[i])  # stable: input order in ties
        out[q] = _script_query([int(y[i]) for i in ranked], version)
    return out


def _compare_to_script(y, scores, qid, convention: str, version: int, min_size: int = 0,
                       atol: float = 1e-12) -> int:
    """Assert our per-query NDCG@1..10, P@1..10 and MAP under ``convention`` equal the script's
    on every query with at least ``min_size`` documents; returns the queries compared."""
    keys = [f"ndcg@{k}" for k in range(1, 11)] + [f"p@{k}" for k in range(1, 11)] + ["map"]
    ours = evaluate_per_query(y, scores, qid, keys, convention=convention)
    ref = _script_run(y, np.asarray(scores, dtype=float), qid, version)
    sizes = dict(zip(*np.unique(np.asarray(qid), return_counts=True), strict=True))
    compared = 0
    for j, q in enumerate(ours["qid"].tolist()):
        if sizes[q] < min_size:
            continue
        compared += 1
        r = ref[q]
        for k in range(1, 11):
            assert abs(ours[f"ndcg@{k}"][j] - r["NDCG"][k - 1]) <= atol, (convention, q, k)
            assert abs(ours[f"p@{k}"][j] - r["P"][k - 1]) <= atol, (convention, q, k, "P")
        assert abs(ours["map"][j] - r["MAP"]) <= atol, (convention, q)
    return compared


def _random_run(seed: int):
    """Queries of 1..25 documents (many shorter than 10), labels 0..2 with some queries all 0,
    scores rounded so that many tie."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 26, size=60)
    qid = np.repeat(np.arange(60) * 7 + 1, sizes)
    y = rng.integers(0, 3, size=qid.size)
    y[np.isin(qid, qid[:: max(1, qid.size // 5)])] = 0
    scores = np.round(rng.normal(size=qid.size), 1)
    return y, scores, qid


@pytest.mark.parametrize("seed", range(4))
def test_letor4_equals_eval_score_4_per_query(seed):
    y, s, q = _random_run(seed)
    assert _compare_to_script(y, s, q, "letor4", 4) == 60


@pytest.mark.parametrize("seed", range(4))
def test_letor_equals_eval_score_3_per_query_wherever_a_query_has_k_documents(seed):
    """On a query of at least 10 documents (every query of LETOR 3.0's data) 'letor' is
    Eval-Score-3.0.pl; on a shorter one the script adds 0 for NDCG@k and P@k beyond its size,
    where 'letor' takes NDCG over the query's documents and P@k with the missing positions
    irrelevant (docs/metrics.md)."""
    y, s, q = _random_run(seed)
    assert _compare_to_script(y, s, q, "letor", 3, min_size=10) > 10
    with pytest.raises(AssertionError):
        _compare_to_script(y, s, q, "letor", 3)  # the short queries do differ


@pytest.mark.parametrize("name, folder, convention, version", [
    ("ohsumed", "OHSUMED", "letor", 3), ("ohsumed", "OHSUMED", "letor4", 4),
    ("mq2008", "MQ2008", "letor4", 4)])
def test_letor_conventions_equal_the_scripts_on_real_runs(data_root, name, folder, convention, version):
    if not (data_root / folder).is_dir():
        pytest.skip(f"{folder} not present under {data_root}")
    te, runs = _runs(data_root, name)
    for scores in runs.values():
        assert _compare_to_script(te.y, scores, te.qid, convention, version) == te.n_queries


def test_letor_transcription_equals_the_real_scripts(data_root, tmp_path):
    """Runs Eval-Score-3.0.pl (OHSUMED) and Eval-Score-4.0.pl (MQ2008) themselves when
    RANKBENCH_LETOR_EVAL names a folder holding them (they are not shipped: third-party
    sources) and perl is installed; 4.0's per-query output is printed with %.17g instead of
    its %.4f so the comparison is exact."""
    import lzma
    import os
    import shutil
    import subprocess
    from pathlib import Path

    from rankbench.data.registry import letor_split_path

    folder = os.environ.get("RANKBENCH_LETOR_EVAL")
    if not folder or shutil.which("perl") is None:
        pytest.skip("set RANKBENCH_LETOR_EVAL to a folder with Eval-Score-3.0.pl and "
                    "Eval-Score-4.0.pl (LETOR's evaluation scripts) and install perl")
    for name, script, version in (("ohsumed", "Eval-Score-3.0.pl", 3), ("mq2008", "Eval-Score-4.0.pl", 4)):
        te, runs = _runs(data_root, name)
        path = letor_split_path(name, 1, "test", root=data_root)
        feats = tmp_path / f"{name}.txt"
        feats.write_bytes(lzma.open(path).read() if path.suffix == ".xz" else path.read_bytes())
        code = (Path(folder) / script).read_text(errors="replace").replace('"%.4f', '"%.17g')
        (tmp_path / script).write_text(code)
        for label, scores in runs.items():
            pred = tmp_path / "pred.txt"
            pred.write_text("".join(f"{v!r}\n" for v in scores.tolist()))
            out = tmp_path / "out.txt"
            subprocess.run(["perl", str(tmp_path / script), str(feats), str(pred), str(out), "1"],
                           check=True, capture_output=True)
            got = _parse_script_output(out.read_text(), version)
            want = _script_run(te.y, scores, te.qid, version)
            qids = sorted(want)  # the scripts print queries in numeric order of qid
            for j, q in enumerate(qids):
                g = got[j] if version == 3 else got[str(q)]
                for key in ("P", "NDCG"):
                    vals = (g[key] + [0.0] * 10)[:10]
                    np.testing.assert_allclose(vals, want[q][key], rtol=0, atol=1e-12,
                                               err_msg=f"{name} {label} {q} {key}")
                assert abs(g["MAP"] - want[q]["MAP"]) <= 1e-12


def _parse_script_output(text: str, version: int) -> dict:
    """Per-query P@1.., NDCG@1.. and MAP from the scripts' flag-1 output."""
    import re

    out: dict = {}
    if version == 3:  # "precision of query<i>:\t...", "Map of query<i>:\t...", "NDCG of query<i>:\t..."
        for kind, key in (("precision", "P"), ("NDCG", "NDCG")):
            for m in re.finditer(rf"^{kind} of query(\d+):\t(.*)$", text, re.M):
                out.setdefault(int(m.group(1)), {})[key] = [float(x) for x in m.group(2).split("\t") if x.strip()]
        for m in re.finditer(r"^Map of query(\d+):\t(.*)$", text, re.M):
            out[int(m.group(1))]["MAP"] = float(m.group(2))
        return out
    for block in text.split("\n\n"):  # two tables: qid, P@1..10, MAP / qid, NDCG@1..10, MeanNDCG
        lines = block.strip().splitlines()
        if not lines:
            continue
        key = "P" if lines[0].startswith("qid\tP@1") else "NDCG"
        for line in lines[1:]:
            cells = [c for c in line.split("\t") if c.strip()]
            if cells[0] != "Average":
                vals = [float(x) for x in cells[1:]]
                out.setdefault(cells[0], {})[key] = vals[:10]
                if key == "P":
                    out[cells[0]]["MAP"] = vals[10]
    return out


@pytest.mark.parametrize("name, folder", [("ohsumed", "OHSUMED"), ("mq2008", "MQ2008")])
def test_exp_log2_equals_ir_measures_ndcg_with_exponential_gains(data_root, name, folder):
    """'exp-log2' (gain 2^r - 1, discount 1/log2(r + 1), ties in input order) is ir-measures'
    nDCG@k with gains {r: 2^r - 1}; document ids that fall as the input order makes
    trec_eval's tie order (descending id) the input order."""
    if not (data_root / folder).is_dir():
        pytest.skip(f"{folder} not present under {data_root}")
    from ir_measures import nDCG

    te, runs = _runs(data_root, name)
    n = te.n_docs
    docids = np.array([f"d{n - i:08d}" for i in range(n)])  # descending id = input order
    gains = {int(r): 2 ** int(r) - 1 for r in np.unique(te.y)}
    qids = list(dict.fromkeys(te.qid.tolist()))
    for label, scores in runs.items():
        if label == "tied32":  # float32 ties are trec_eval's, not the input order's
            continue
        qrels = [ir_measures.Qrel(str(q), d, int(r)) for q, d, r in zip(te.qid.tolist(), docids, te.y.tolist(), strict=True)]
        run = [ir_measures.ScoredDoc(str(q), d, float(s)) for q, d, s in zip(te.qid.tolist(), docids, scores.tolist(), strict=True)]
        for k in (1, 5, 10):
            ref = {m.query_id: m.value for m in ir_measures.iter_calc([nDCG(gains=gains) @ k], qrels, run)}
            ours = ndcg_at_k(te.y, scores, te.qid, k, convention="exp-log2", per_query=True)
            np.testing.assert_allclose(ours, [ref[str(q)] for q in qids], rtol=0, atol=1e-12,
                                       err_msg=f"{name} {label} k={k}")
