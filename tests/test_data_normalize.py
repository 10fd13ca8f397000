"""Query-level min-max normalisation: hand-worked example and a NumPy reference."""

import numpy as np
import pytest
import scipy.sparse as sp

from rankbench.data import RankingData
from rankbench.data.normalize import normalize_query_level


def test_hand_worked():
    X = np.array([[1.0, 5.0, -2.0], [3.0, 5.0, 0.0], [2.0, 5.0, 2.0], [7.0, 1.0, 4.0]])
    d = RankingData.from_arrays(X, [0, 1, 2, 0], [1, 1, 1, 2])
    n = normalize_query_level(d)
    assert n.X.tolist() == [[0.0, 0.0, 0.0], [1.0, 0.0, 0.5], [0.5, 0.0, 1.0], [0.0, 0.0, 0.0]]
    assert n.meta["normalization"] == "query_minmax" and np.array_equal(d.X, X)


def test_against_numpy_reference():
    rng = np.random.default_rng(0)
    qid = np.repeat(np.arange(30), rng.integers(1, 12, size=30))
    X = rng.standard_normal((qid.size, 6)) * rng.integers(1, 100, size=6)
    X[:, 2] = np.round(X[:, 2] / 50)  # ties and constant columns inside queries
    d = RankingData.from_arrays(X, np.zeros(qid.size, dtype=int), qid)
    got = normalize_query_level(d).X
    for k in range(d.n_queries):
        block = d.X[d.query_ptr[k]:d.query_ptr[k + 1]]
        lo, hi = block.min(axis=0), block.max(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            ref = np.where(hi > lo, (block - lo) / (hi - lo), 0.0)
        assert np.allclose(got[d.query_ptr[k]:d.query_ptr[k + 1]], ref, rtol=0, atol=1e-15)


def test_sparse_refused():
    d = RankingData.from_arrays(sp.csr_matrix(np.eye(3)), [0, 1, 0])
    with pytest.raises(ValueError, match="sparse=False"):
        normalize_query_level(d)
