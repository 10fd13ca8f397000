"""Real LETOR files: every fold of OHSUMED (3 variants) and MQ2008 against the published statistics."""

import io
import lzma

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file

from conftest import require_dataset
from rankbench.data import dataset_available, load_fold, read_letor

pytestmark = pytest.mark.realdata

OHSUMED = {"n_queries": 106, "n_docs": 16140, "n_features": 45,
           "labels": {0: 11303, 1: 2585, 2: 2252}}
MQ2008 = {"n_queries": 784, "n_docs": 15211, "n_features": 46,
          "labels": {0: 12279, 1: 2001, 2: 931}}
# Feature-min fills OHSUMED's NULLs with 0 in these columns (1-based) and with the
# query's minimum in the others: not one rule, which is why no null_policy reproduces it.
FEATURE_MIN_ZERO_COLS = (11, 12, 26, 27, 41, 42)
FEATURE_MIN_QMIN_COLS = (13, 14, 15, 28, 29, 30, 43, 44, 45)


@pytest.fixture(scope="module", autouse=True)
def _session_cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RANKBENCH_CACHE", str(tmp_path_factory.mktemp("rankbench_cache")))
        yield


def _check_folds(name, variant, root, stats, **kw):
    queries = {}
    test_union = []
    for fold in range(1, 6):
        parts = {s: load_fold(name, fold, s, variant, root=root, **kw) for s in ("train", "vali", "test")}
        sets = {s: set(d.query_ids().tolist()) for s, d in parts.items()}
        assert not sets["train"] & sets["vali"] and not sets["train"] & sets["test"]
        assert not sets["vali"] & sets["test"]
        union = sets["train"] | sets["vali"] | sets["test"]
        assert len(union) == stats["n_queries"]
        assert sum(d.n_docs for d in parts.values()) == stats["n_docs"]
        for d in parts.values():
            assert d.n_features == stats["n_features"] and isinstance(d.X, np.ndarray)
            assert d.meta["order"] is None  # LETOR files are grouped by query
            assert np.all(np.diff(d.query_ptr) > 0)
        queries[fold] = union
        test_union.append(parts["test"])
    assert all(q == queries[1] for q in queries.values())
    # the five test splits partition the whole data set
    assert sum(d.n_queries for d in test_union) == stats["n_queries"]
    labels = np.concatenate([d.y for d in test_union])
    levels, counts = np.unique(labels, return_counts=True)
    assert dict(zip(levels.tolist(), counts.tolist(), strict=True)) == stats["labels"]
    return test_union


@pytest.mark.parametrize("variant", ["QueryLevelNorm", "Feature-min"])
def test_ohsumed_folds_match_published_statistics(data_root, variant):
    require_dataset(data_root, f"OHSUMED/{variant}")
    _check_folds("ohsumed", variant, data_root, OHSUMED)


def test_ohsumed_query_level_norm_is_min_max_normalised(data_root):
    require_dataset(data_root, "OHSUMED/QueryLevelNorm")
    d = load_fold("ohsumed", 1, "train", root=data_root)
    assert d.X.min() == 0.0 and d.X.max() == 1.0


def test_ohsumed_feature_null_policies(data_root):
    require_dataset(data_root, "OHSUMED/Feature-null")
    with pytest.raises(ValueError, match=r"Fold1/trainingset\.txt\.xz, line 5: feature 11 is NULL"):
        load_fold("ohsumed", 1, "train", "Feature-null", root=data_root)
    for policy in ("zero", "query_min"):
        tests = _check_folds("ohsumed", "Feature-null", data_root, OHSUMED, null_policy=policy)
        assert sum(d.meta["n_null"] for d in tests) == 51490
        assert all(np.all(np.isfinite(d.X)) for d in tests)


def test_feature_null_against_feature_min_column_by_column(data_root):
    """Non-NULL cells equal Feature-min; NULL cells equal Feature-min under 0 or the query minimum per column."""
    require_dataset(data_root, "OHSUMED/Feature-null/ALL")
    base = data_root / "OHSUMED"
    fmin = read_letor(base / "Feature-min/ALL/OHSUMED.txt.xz")
    zero = read_letor(base / "Feature-null/ALL/OHSUMED.txt.xz", null_policy="zero")
    qmin = read_letor(base / "Feature-null/ALL/OHSUMED.txt.xz", null_policy="query_min")
    assert fmin.describe()["labels"] == OHSUMED["labels"] and fmin.n_queries == 106
    text = lzma.decompress((base / "Feature-null/ALL/OHSUMED.txt.xz").read_bytes()).decode()
    null = np.zeros(fmin.X.shape, dtype=bool)
    for i, line in enumerate(text.splitlines()):
        for tok in line.split("#")[0].split()[2:]:
            k, v = tok.split(":")
            null[i, int(k) - 1] = v == "NULL"
    assert null.sum() == zero.meta["n_null"] == 51490
    assert np.array_equal(fmin.X[~null], zero.X[~null])
    assert np.array_equal(zero.X[null], np.zeros(null.sum()))
    null_cols = {c + 1 for c in np.flatnonzero(null.any(axis=0))}
    assert null_cols == set(FEATURE_MIN_ZERO_COLS) | set(FEATURE_MIN_QMIN_COLS)
    for c in FEATURE_MIN_ZERO_COLS:
        rows = null[:, c - 1]
        assert np.all(fmin.X[rows, c - 1] == 0.0)
    for c in FEATURE_MIN_QMIN_COLS:
        rows = null[:, c - 1]
        assert np.array_equal(fmin.X[rows, c - 1], qmin.X[rows, c - 1])
        assert not np.all(qmin.X[rows, c - 1] == 0.0)
    # an independent computation of the query minimum for one column
    c = FEATURE_MIN_QMIN_COLS[0] - 1
    for k in range(qmin.n_queries):
        a, b = qmin.query_ptr[k], qmin.query_ptr[k + 1]
        obs = zero.X[a:b, c][~null[a:b, c]]
        if null[a:b, c].any():
            assert np.all(qmin.X[a:b, c][null[a:b, c]] == obs.min())


def test_ohsumed_all_file(data_root):
    require_dataset(data_root, "OHSUMED/Feature-min/ALL")
    d = read_letor(data_root / "OHSUMED/Feature-min/ALL/OHSUMED.txt.xz")
    assert d.describe()["labels"] == OHSUMED["labels"]
    assert (d.n_queries, d.n_docs, d.n_features) == (106, 16140, 45)


def test_mq2008_folds_match_published_statistics(data_root):
    require_dataset(data_root, "MQ2008")
    assert dataset_available("mq2008", root=data_root)
    _check_folds("mq2008", None, data_root, MQ2008)


@pytest.mark.parametrize("sub", ["MQ2008/Fold1/vali.txt.xz",
                                 "OHSUMED/Feature-min/Fold1/validationset.txt.xz"])
def test_parser_equals_sklearn_svmlight_reader(data_root, sub):
    p = require_dataset(data_root, sub)
    d = read_letor(p, cache=False)
    Xs, ys, qs = load_svmlight_file(io.BytesIO(lzma.decompress(p.read_bytes())), query_id=True)
    assert np.array_equal(d.X, Xs.toarray())
    assert np.array_equal(d.y, ys.astype(np.int64)) and np.array_equal(d.qid, qs)


def test_query_level_norm_of_feature_min_reproduces_letor_files(data_root):
    """LETOR's QueryLevelNorm = per-query min-max of Feature-min, to the files' 6 decimals."""
    from rankbench.data.normalize import normalize_query_level

    require_dataset(data_root, "OHSUMED/Feature-min")
    require_dataset(data_root, "OHSUMED/QueryLevelNorm")
    for split in ("train", "vali", "test"):
        raw = load_fold("ohsumed", 1, split, "Feature-min", root=data_root)
        norm = load_fold("ohsumed", 1, split, root=data_root)
        assert np.array_equal(raw.qid, norm.qid) and np.array_equal(raw.y, norm.y)
        assert np.max(np.abs(normalize_query_level(raw).X - norm.X)) <= 5e-7 + 1e-12


def test_real_file_write_read_round_trip(data_root, tmp_path):
    from rankbench.data.letor import write_letor

    require_dataset(data_root, "MQ2008")
    d = load_fold("mq2008", 2, "test", root=data_root)
    back = read_letor(write_letor(d, tmp_path / "mq.txt.gz"), cache=False)
    assert np.array_equal(back.X, d.X) and np.array_equal(back.y, d.y)
    assert np.array_equal(back.qid, d.qid) and np.array_equal(back.docids, d.docids)


def test_mq2008_whole_set_file(data_root):
    p = require_dataset(data_root, "MQ2008/Querylevelnorm.txt.xz")
    d = read_letor(p)
    assert (d.n_queries, d.n_docs, d.n_features) == (784, 15211, 46)
    assert d.describe()["labels"] == MQ2008["labels"]
    folds = [load_fold("mq2008", k, "test", root=data_root) for k in range(1, 6)]
    assert set(d.query_ids().tolist()) == set(np.concatenate([f.query_ids() for f in folds]).tolist())


@pytest.mark.parametrize("name,variant,sub", [
    ("ohsumed", "QueryLevelNorm", "OHSUMED/QueryLevelNorm"),
    ("ohsumed", "Feature-null", "OHSUMED/Feature-null"),
    ("mq2008", None, "MQ2008"),
])
def test_docids_equal_the_files_comments_and_are_unique_per_query(data_root, name, variant, sub):
    require_dataset(data_root, sub)
    for fold in range(1, 6):
        for split in ("train", "vali", "test"):
            d = load_fold(name, fold, split, variant, root=data_root, null_policy="zero")
            text = lzma.decompress(open(d.source, "rb").read()).decode()
            # an independent reading: the token after "docid =" on each line, in file order
            expected = [ln.split("#docid = ", 1)[1].split()[0] for ln in text.splitlines()]
            assert d.docids.tolist() == expected  # LETOR files are grouped: file order = row order
            assert d.lines.tolist() == list(range(1, len(expected) + 1))
            pairs = set(zip(d.qid.tolist(), d.docids.tolist(), strict=True))
            assert len(pairs) == d.n_docs  # a valid TREC run: no docno twice in a query
