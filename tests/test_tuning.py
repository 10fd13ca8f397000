"""Inner tuning of one parameter on validation (rankbench.tuning), as Sculley's Fig. 2 uses it."""

from __future__ import annotations

import numpy as np
import pytest

from rankbench.data.ranking_data import RankingData
from rankbench.metrics import mean_average_precision
from rankbench.spec import run_id
from rankbench.tuning import check_tune, tune_parameter


def _split(seed: int) -> RankingData:
    rng = np.random.default_rng(seed)
    qid = np.repeat(np.arange(6), 8)
    X = rng.normal(size=(qid.size, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=qid.size) > 0).astype(float)
    return RankingData.from_arrays(X, y, qid)


class _Fixed:
    """Scores = X @ w with w set by the tuned parameter: the validation MAP per value is known."""

    def __init__(self, params):
        self.w = {1: np.array([1.0, 0, 0]), 2: np.array([0, 1.0, 0]),
                  3: np.array([1.0, 0, 0]), 4: np.array([-1.0, 0, 0])}[params["a"]]
        self.params = params

    def fit(self, X, y, qid):
        return self

    def decision_function(self, X):
        return X @ self.w


def _evaluate(d, scores):
    return {"map": float(mean_average_precision(d.y, scores, d.qid))}


def test_tuning_picks_best_validation_value_ties_to_smaller():
    train, vali = _split(0), _split(1)
    maps = {a: _evaluate(vali, vali.X @ _Fixed({"a": a}).w)["map"] for a in (1, 2, 3, 4)}
    assert maps[1] == maps[3] > max(maps[2], maps[4])  # a tie between 1 and 3
    seen = []

    def make(name, params):
        seen.append((name, params))
        return _Fixed(params)

    chosen, block = tune_parameter(
        {"param": "a", "grid": [3, 2, 1, 4], "metric": "vali.map", "solver": "tuner",
         "params": {"n_iter": 5}},
        "main", {"a": 9, "b": 1}, train, vali, make, lambda e, d: e.fit(d.X, d.y, d.qid), _evaluate)
    assert chosen == 1  # the selection module's tie rule: the smaller value
    assert [c["value"] for c in block["candidates"]] == [3, 2, 1, 4]
    assert [c["vali.map"] for c in block["candidates"]] == [maps[a] for a in (3, 2, 1, 4)]
    assert all(n == "tuner" and p["n_iter"] == 5 and p["b"] == 1 for n, p in seen)


@pytest.mark.parametrize("tune, word", [
    ({"param": "lam", "grid": [], "metric": "vali.map"}, "grid"),
    ({"param": "lam", "grid": [1], "metric": "test.map"}, "validation metric"),
    ({"param": "", "grid": [1], "metric": "vali.map"}, "param"),
    ({"param": "lam", "grid": [1], "metric": "vali.map", "bogus": 1}, "unknown"),
])
def test_bad_tune_blocks_are_named(tune, word):
    problems = check_tune(tune)
    assert problems and any(word in p for p in problems)


def test_untuned_run_ids_do_not_change_and_tuned_ones_differ():
    spec = {"experiment": "x", "dataset": "ohsumed", "fold": 1, "solver": "spd_pegasos",
            "params": {"lam": 1e-4}}
    # the id of a spec without tune is the id it had before tune existed (pinned)
    assert run_id(spec) == run_id({**spec, "tune": None})
    tuned = {**spec, "tune": {"param": "lam", "grid": [1e-4], "metric": "vali.map"}}
    assert run_id(tuned) != run_id(spec)
