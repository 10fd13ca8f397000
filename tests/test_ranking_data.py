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


def test_check_feature_matrix_names_the_row_and_the_width():
    from rankbench.data.ranking_data import check_feature_matrix

    X = np.ones((3, 2))
    X[2, 1] = np.inf
    with pytest.raises(ValueError, match="first at row 2"):
        check_feature_matrix(X)
    with pytest.raises(ValueError, match="first at row 1"):
        check_feature_matrix(sp.csr_matrix(np.array([[1.0, 0], [0, np.nan]])))
    with pytest.raises(ValueError, match="3 features, the model was fitted with 2"):
        check_feature_matrix(np.ones((2, 3)), 2)


@pytest.mark.parametrize("name", ["RankSVM", "SPDRanker", "LambdaMART"])
def test_every_estimator_rejects_nan_at_predict_time(name):
    import rankbench

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    params = {"LambdaMART": {"n_estimators": 2, "min_data_in_leaf": 5},
              "SPDRanker": {"n_iter": 100}}.get(name, {})
    est = getattr(rankbench, name)(**params).fit(X, y)
    X[5, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or inf"):
        est.decision_function(X)


def test_lambdamart_too_little_data_is_a_clear_error_not_a_lightgbm_abort():
    import rankbench

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    with pytest.raises(ValueError, match="no feature can be split with 40 training documents"):
        rankbench.LambdaMART(n_estimators=2, min_data_in_leaf=20).fit(X, (X[:, 0] > 0).astype(int))


def test_docids_follow_the_stable_grouping_and_subsets():
    X = np.arange(10.0).reshape(5, 2)
    d = RankingData.from_arrays(X, [0, 1, 2, 0, 1], [7, 3, 7, 3, 9],
                                docids=["a", "b", "c", "d", "e"], lines=[2, 3, 5, 6, 9])
    # grouped by first appearance: qid 7 (rows 0, 2), qid 3 (rows 1, 3), qid 9 (row 4)
    assert d.docids.tolist() == ["a", "c", "b", "d", "e"] and d.lines.tolist() == [2, 5, 3, 6, 9]
    assert np.array_equal(d.X[:, 0], [0.0, 4.0, 2.0, 6.0, 8.0])
    assert d.doc_ids() is d.docids
    sub = d.subset_queries(np.array([2, 0]))
    assert sub.docids.tolist() == ["e", "a", "c"] and sub.lines.tolist() == [9, 2, 5]
    assert sub.qid.tolist() == [9, 7, 7]


def test_generated_doc_ids_are_valid_trec_docnos():
    d = RankingData.from_arrays(np.zeros((3, 1)), [0, 1, 0], [1, 1, 2])
    assert d.docids is None and d.doc_ids().tolist() == ["D0", "D1", "D2"]
    f = RankingData.from_arrays(np.zeros((3, 1)), [0, 1, 0], [2, 1, 2], lines=[4, 7, 12])
    assert f.doc_ids().tolist() == ["L4", "L12", "L7"]
    assert f.subset_queries(np.array([1])).doc_ids().tolist() == ["L7"]


@pytest.mark.parametrize("bad,msg", [
    (["a", "b c", "d"], r"document id 'b c' \(row 1\) is empty or holds whitespace"),
    (["a", "", "d"], r"document id '' \(row 1\)"),
    (["a", "b\td", "e"], "holds whitespace"),
    (["a", "b"], r"docids must be 1-D with one id per row of X \(3\)"),
])
def test_bad_docids_are_refused(bad, msg):
    with pytest.raises(ValueError, match=msg):
        RankingData.from_arrays(np.zeros((3, 1)), [0, 1, 0], docids=bad)


def test_numeric_docids_become_strings():
    d = RankingData.from_arrays(np.zeros((2, 1)), [0, 1], docids=np.array([57950, 331965]))
    assert d.docids.dtype.kind == "U" and d.docids.tolist() == ["57950", "331965"]


def test_take_rows_is_fancy_indexing():
    from rankbench.data.ranking_data import take_rows

    rng = np.random.default_rng(0)
    order = rng.integers(0, 50, 80)
    for X in (rng.normal(size=(50, 7)), rng.normal(size=(50, 7)).astype(np.float32),
              rng.integers(-9, 9, (50, 3)), np.asfortranarray(rng.normal(size=(50, 4))),
              rng.normal(size=(50, 0)), sp.random(50, 6, density=0.3, format="csr", random_state=1)):
        got = take_rows(X, order)
        want = X[order]
        if sp.issparse(X):
            got, want = got.toarray(), want.toarray()
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    X = rng.normal(size=(5, 2))
    assert take_rows(X, np.array([], dtype=np.int64)).shape == (0, 2)
    with pytest.raises(IndexError, match="out of range"):
        take_rows(X, np.array([0, 5]))
