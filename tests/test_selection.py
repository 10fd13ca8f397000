"""Model selection (rankbench.selection): the one rule, seeds, ties, paired comparisons, fold means."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from rankbench.selection import compare_selected, mean_over_folds, select_per_fold
from rankbench.store import ResultStore


def _frame(rows):
    recs = []
    for i, (fold, c, vali, test, status, *seed) in enumerate(rows):
        recs.append({
            "run_id": f"{i:040x}", "status": status, "experiment": "e", "dataset": "d",
            "variant": None, "fold": fold, "solver": "s", "params": {"C": c},
            "seed": seed[0] if seed else 0,
            "metrics": {"vali": {"ndcg@10": vali, "map": 1 - vali},
                        "test": {"ndcg@10": test, "map": test / 2}},
        })
    return ResultStore("unused").to_frame(records=recs)


def test_select_per_fold_hand_example():
    frame = _frame([
        (1, 1e-4, 0.50, 0.40, "ok"),
        (1, 1e-2, 0.60, 0.30, "ok"),     # fold 1: best vali -> C=1e-2
        (1, 1.0, 0.90, 0.99, "failed"),  # failed runs never win
        (2, 1e-2, 0.70, 0.20, "ok"),
        (2, 1e-4, 0.70, 0.10, "ok"),     # tie on fold 2 -> the smaller C
        (2, 1.0, 0.65, 0.50, "ok"),
    ])
    sel = select_per_fold(frame)
    assert list(sel["fold"]) == [1, 2]
    assert list(sel["params.C"]) == [1e-2, 1e-4]
    assert list(sel["test.ndcg@10"]) == [0.30, 0.10]
    assert list(sel["n_candidates"]) == [2, 3]
    assert list(sel["selected_value"]) == [0.60, 0.70]
    by_map = select_per_fold(frame, "vali.map")  # map = 1 - vali: the other end wins
    assert list(by_map["params.C"]) == [1e-4, 1.0]
    with pytest.raises(ValueError, match="vali.mrr"):
        select_per_fold(frame, "vali.mrr")


def test_selection_averages_seeds_before_choosing():
    rows = []
    # seed 0 alone would pick C=1 (0.9 > 0.7); over both seeds C=1e-2 is better (0.7 > 0.55)
    for seed, c, vali, test in [(0, 1.0, 0.9, 0.5), (1, 1.0, 0.2, 0.3),
                                (0, 1e-2, 0.7, 0.6), (1, 1e-2, 0.7, 0.4)]:
        rows.append((1, c, vali, test, "ok", seed))
    frame = _frame(rows)
    sel = select_per_fold(frame)
    assert list(sel["params.C"]) == [1e-2]
    assert sel["selected_value"].iloc[0] == pytest.approx(0.7)
    assert sel["test.ndcg@10"].iloc[0] == pytest.approx(0.5)
    assert list(sel["n_seeds"]) == [2] and list(sel["n_candidates"]) == [2]
    assert list(select_per_fold(frame[frame["seed"] == 0])["params.C"]) == [1.0]


def _pq_record(i, solver, fold, c, vali, qids, values):
    return {"run_id": f"{i:040x}", "status": "ok", "experiment": "e", "dataset": "d",
            "variant": None, "fold": fold, "solver": solver, "params": {"C": c}, "seed": 0,
            "metrics": {"vali": {"ndcg@10": vali},
                        "test": {"ndcg@10": float(np.nanmean(np.array(values, dtype=float)))}},
            "per_query": {"test": {"qid": qids, "ndcg@10": values}}}


def test_compare_selected_pairs_the_selected_runs_per_query():
    recs, i = [], 0
    for fold, qids in ((1, [1, 2, 3, 4, 5]), (2, [6, 7, 8, 9, 10])):
        base = [0.1 * q for q in qids]
        # solver a: the selected C (vali 0.9) is better by 0.05 on every query; the other C worse
        recs.append(_pq_record(i, "a", fold, 1.0, 0.9, qids, [v + 0.05 for v in base]))
        recs.append(_pq_record(i + 1, "a", fold, 2.0, 0.1, qids, [v - 0.5 for v in base]))
        recs.append(_pq_record(i + 2, "b", fold, 1.0, 0.5, qids, base))
        # solver c equals b except one undefined query (left out of the pair)
        recs.append(_pq_record(i + 3, "c", fold, 1.0, 0.5, qids, base[:-1] + [None]))
        i += 4
    out = compare_selected(recs).set_index(["solver_a", "solver_b"])
    ab = out.loc[("a", "b")]
    assert ab["n_queries"] == 10
    assert ab["a.ndcg@10"] == pytest.approx(np.mean([0.1 * q + 0.05 for q in range(1, 11)]))
    assert ab["difference"] == pytest.approx(0.05)
    # all ten differences equal: only the two all-same-sign flips are as extreme (2 / 2^10)
    assert ab["p_value"] == pytest.approx(2 / 1024, abs=0.004)
    bc = out.loc[("b", "c")]
    assert bc["n_queries"] == 8 and bc["difference"] == 0 and bc["p_value"] == 1.0
    # Holm over the data set's three comparisons: the smallest p times 3, never below the raw p
    assert ab["p_holm"] == pytest.approx(min(1.0, 3 * min(out["p_value"])))
    assert (out["p_holm"] >= out["p_value"] - 1e-15).all()
    assert ab["ci95_low"] == pytest.approx(0.05) and ab["ci95_high"] == pytest.approx(0.05)
    only = compare_selected(recs, baseline="b")
    assert sorted(zip(only["solver_a"], only["solver_b"], strict=True)) == [("b", "a"), ("b", "c")]


def test_mean_over_folds():
    frame = _frame([(1, 1e-4, 0.5, 0.4, "ok"), (2, 1e-4, 0.5, 0.2, "ok"), (1, 1.0, 0.5, 0.9, "ok"),
                    (2, 1.0, 0.5, 0.0, "failed")])
    m = mean_over_folds(frame, ["test.ndcg@10"])
    got = {json.loads(p)["C"]: (v, n) for p, v, n in zip(m["params"], m["test.ndcg@10"], m["n_folds"],
                                                           strict=True)}
    assert got == {1e-4: (pytest.approx(0.3), 2), 1.0: (pytest.approx(0.9), 1)}
    assert isinstance(m, pd.DataFrame)
