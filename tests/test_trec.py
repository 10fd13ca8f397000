"""TREC run and qrels files: round trip, trec_eval's order, and the export of a stored run."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rankbench.data.ranking_data import RankingData
from rankbench.trec import read_qrels, read_run, write_qrels, write_run


def _data():
    y = np.array([2, 0, 1, 0, 1, 0])
    qid = np.array([7, 7, 7, 3, 3, 3])
    X = np.zeros((6, 1))
    return RankingData.from_arrays(X, y, qid, docids=np.array(["d9", "d10", "d2", "a", "b", "c"]))


def test_run_and_qrels_round_trip_with_trec_eval_ranks(tmp_path):
    d = _data()
    rows = {str(q): {} for q in (7, 3)}
    # RankingData keeps each query contiguous in its own row order; read back by docno
    scores = np.array([0.5, 0.5, 0.1, 1.0, 1.0, 1.0])
    write_run(tmp_path / "r.run", d, scores, tag="t1")
    write_qrels(tmp_path / "q.qrels", d)
    run, qrels = read_run(tmp_path / "r.run"), read_qrels(tmp_path / "q.qrels")
    ids = d.doc_ids().tolist()
    for q, i, s, y in zip(d.qid.tolist(), ids, scores.tolist(), d.y.tolist(), strict=True):
        assert run[str(q)][i] == s and qrels[str(q)][i] == y
        rows[str(q)][i] = s
    lines = (tmp_path / "r.run").read_text().splitlines()
    # equal scores: descending docno by strcmp ("d9" > "d2" ... "d10" < "d9"), ranks 1..n per query
    assert [ln.split()[2:4] for ln in lines if ln.startswith("7 ")] == [["d9", "1"], ["d10", "2"],
                                                                       ["d2", "3"]]
    assert [ln.split()[2] for ln in lines if ln.startswith("3 ")] == ["c", "b", "a"]
    assert all(ln.split()[1] == "Q0" and ln.split()[5] == "t1" for ln in lines)


def test_bad_inputs_are_named(tmp_path):
    d = _data()
    with pytest.raises(ValueError, match="NaN"):
        write_run(tmp_path / "r", d, np.array([np.nan, 0, 0, 0, 0, 0]))
    with pytest.raises(ValueError, match="6 documents"):
        write_run(tmp_path / "r", d, np.zeros(3))
    with pytest.raises(ValueError, match="tag"):
        write_run(tmp_path / "r", d, np.zeros(6), tag="a b")
    (tmp_path / "bad.run").write_text("1 Q0 d 1 0.5\n")
    with pytest.raises(ValueError, match=r"bad.run:1: a run line has 6 fields"):
        read_run(tmp_path / "bad.run")
    with pytest.raises(ValueError, match="is a directory"):
        read_qrels(tmp_path)


def test_exported_stored_run_scores_as_the_record_says(data_root, tmp_path, capsys):
    """A stored run exported with `rankbench results --export-trec` and scored by trec_eval
    gives rankbench's trec-convention values of the stored scores, and the record's MAP."""
    pytrec_eval = pytest.importorskip("pytrec_eval", reason="pytrec-eval-terrier not installed")
    if not (data_root / "OHSUMED").is_dir():
        pytest.skip("OHSUMED not present")
    from rankbench.metrics import mean_average_precision, ndcg_at_k
    from rankbench.results_cli import results_main
    from rankbench.runner import load_split, run_many
    from rankbench.store import decode_scores

    spec = {"experiment": "trecx", "dataset": "ohsumed", "fold": 1, "solver": "prsvm_plus",
            "params": {"C": 1e-4}, "data_root": str(data_root)}
    (rec,) = run_many([spec], tmp_path / "store", progress=False)
    assert rec["status"] == "ok"
    out = tmp_path / "trec"
    assert results_main(["--store", str(tmp_path / "store"), "--export-trec", str(out),
                         "--data-root", str(data_root)]) == 0
    (system,) = json.loads((out / "index.json").read_text())["systems"]
    assert [f["run_id"] for f in system["folds"]] == [rec["run_id"]]
    assert system["file"] == "trecx__ohsumed__prsvm_plus.run"
    run = read_run(out / system["file"])
    qrels = read_qrels(out / system["qrels"])
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "map"}).evaluate(run)
    te = load_split(spec, "test")
    s = decode_scores(rec["scores"]["test"])
    ours = ndcg_at_k(te.y, s, te.qid, 10, convention="trec", docids=te.doc_ids(), per_query=True)
    qids = list(dict.fromkeys(te.qid.tolist()))
    np.testing.assert_allclose(ours, [ref[str(q)]["ndcg_cut_10"] for q in qids], atol=1e-12)
    trec_map = np.mean([ref[str(q)]["map"] for q in qids])
    assert trec_map == pytest.approx(mean_average_precision(te.y, s, te.qid, convention="trec",
                                                            docids=te.doc_ids()), abs=1e-12)
    # the record's MAP came from float64 scores; the stored float32 ones tie a few documents more
    assert trec_map == pytest.approx(rec["metrics"]["test"]["map"], abs=1e-3)
