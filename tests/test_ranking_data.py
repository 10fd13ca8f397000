import numpy as np
import pytest
import scipy.sparse as sp

from rankbench.data import RankingData, group_by_query


def test_contiguous_queries_keep_order():
    qid = np.array([5, 5, 2, 2, 2, 9])
    order, ptr = group_by_query(qid)
    assert order is None
    assert ptr.tolist() == [0, 2, 5, 6]


def test_interleaved_queries_grouped_stably_by_first_appearance():
    qid = np.array([3, 1, 3, 2, 1])
    order, ptr = group_by_query(qid)
    assert order.tolist() == [0, 2, 1, 4, 3]
    assert ptr.tolist() == [0, 2, 4, 5]


def test_from_arrays_dense_and_sparse():
    X = np.arange(12, dtype=float).reshape(4, 3)
    d = RankingData.from_arrays(X, [0, 1, 2, 0], [1, 2, 1, 2])
    assert d.qid.tolist() == [1, 1, 2, 2]
    assert d.y.tolist() == [0, 2, 1, 0]
    assert np.array_equal(d.X[1], X[2])
    s = RankingData.from_arrays(sp.csr_matrix(X), [0, 1, 2, 0])
    assert s.is_sparse and s.n_queries == 1


@pytest.mark.parametrize(
    "X,y,qid,msg",
    [
        (np.zeros((0, 2)), [], None, "empty"),
        (np.ones((2, 2)), [0, 1, 1], None, "one label per row"),
        (np.array([[1.0, np.nan], [0, 0]]), [0, 1], None, "NaN"),
        (np.ones((2, 2)), [0.5, 1], None, "integers"),
        (np.ones((2, 2)), [0, 1], [1], "one id per row"),
    ],
)
def test_from_arrays_errors(X, y, qid, msg):
    with pytest.raises(ValueError, match=msg):
        RankingData.from_arrays(X, y, qid)


def test_subset_queries():
    X = np.arange(10, dtype=float).reshape(5, 2)
    d = RankingData.from_arrays(X, [0, 1, 0, 1, 2], [1, 1, 2, 3, 3])
    s = d.subset_queries(np.array([2, 0]))
    assert s.qid.tolist() == [3, 3, 1, 1]
    assert s.query_ptr.tolist() == [0, 2, 4]
