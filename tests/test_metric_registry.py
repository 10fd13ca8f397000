"""The metric registry: every key defined once (rankbench.metrics.definitions), DEFAULT_METRICS /
METRIC_KEYS read from it without numba, and a new metric is one decorated function."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from rankbench.metrics import evaluate, evaluate_per_query, registry
from rankbench.metrics.names import DEFAULT_METRICS, EXTRA_METRICS, METRIC_KEYS


def test_the_record_keys_are_unchanged_and_in_their_order():
    """Records store every key: the registry gives exactly the keys (and order) the store used."""
    want = (*(f"ndcg@{k}" for k in range(1, 11)), "map", "mrr", "auc", "mauc", "pairwise_accuracy",
            *(f"p@{k}" for k in range(1, 11)), *(f"p@{k}_macro" for k in range(1, 11)))
    assert DEFAULT_METRICS == want
    assert EXTRA_METRICS == ("rprec", "mauc_pooled")
    assert METRIC_KEYS == want + EXTRA_METRICS


def test_naming_metrics_does_not_import_numba():
    code = ("import sys, json; from rankbench.metrics.names import METRIC_KEYS; "
            "print(json.dumps(['numba' in sys.modules, 'rankbench.metrics.kernels' in sys.modules, "
            "len(METRIC_KEYS)]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [False, False, len(METRIC_KEYS)]


def test_a_new_metric_is_one_decorated_function():
    """Register DCG@k (gain 2^r - 1, discount 1/log2(r + 1)) in a test: evaluate and
    evaluate_per_query compute it, with any cutoff, beside the built-in keys."""
    key = "dcg_test@{k}"

    @registry.register_metric(key, "DCG@k (test)", default=False)
    def _dcg(t, k):
        out = np.zeros(t.r.n_queries)
        for q in range(t.r.n_queries):
            y = t.r.y[t.r.ptr[q]:t.r.ptr[q + 1]][:k]
            out[q] = np.sum((2.0 ** y - 1) / np.log2(np.arange(2, y.size + 2)))
        return out

    try:
        y = np.array([2, 0, 1, 0, 1])
        s = np.array([0.1, 0.9, 0.5, 0.3, 0.2])
        qid = np.array([1, 1, 1, 2, 2])
        got = evaluate(y, s, qid, ["dcg_test@2", "map"])
        q1 = (2 ** 0 - 1) / np.log2(2) + (2 ** 1 - 1) / np.log2(3)  # ranked labels 0, 1, 2
        q2 = 0.0 + 1 / np.log2(3)  # ranked labels 0, 1
        assert got["dcg_test@2"] == pytest.approx((q1 + q2) / 2, abs=1e-15)
        per_q = evaluate_per_query(y, s, qid, ["dcg_test@3"])
        assert per_q["dcg_test@3"][0] == pytest.approx(q1 + 3 / np.log2(4), abs=1e-15)
        assert key not in (m.key for m in registry.metrics() if m.default)  # on request only
        with pytest.raises(ValueError, match="registered twice"):
            registry.register_metric(key, "again", default=False)(lambda t, k: None)
    finally:
        registry.METRICS._items.pop(key, None)
    with pytest.raises(ValueError, match="unknown metric 'dcg_test@2'; known: ndcg@K, map"):
        evaluate(y, s, qid, ["dcg_test@2"])


def test_every_registered_metric_has_a_description_and_computes():
    rng = np.random.default_rng(0)
    qid = np.repeat(np.arange(6), 12)
    y = rng.integers(0, 3, qid.size)
    s = rng.normal(size=qid.size)
    values = evaluate(y, s, qid, METRIC_KEYS)
    assert set(values) == set(METRIC_KEYS) and all(np.isfinite(v) for v in values.values())
    for m in registry.metrics():
        assert m.description, m.key
    with pytest.raises(ValueError, match="no per-query values"):
        evaluate_per_query(y, s, qid, ["mauc_pooled"])
