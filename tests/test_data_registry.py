"""Dataset registry: layouts, missing-data messages, stand-ins, RCV1 conversion (no download)."""

import bz2
import gzip
import lzma
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp

from rankbench.data import (
    DatasetNotFound,
    dataset_available,
    dataset_info,
    list_datasets,
    load_fold,
)
from rankbench.data import rcv1 as rcv1_mod
from rankbench.data import synthetic as synthetic_mod
from rankbench.data.rcv1 import rcv1_split_from_bunch


@pytest.fixture(autouse=True)
def _private_env(tmp_path, monkeypatch):
    monkeypatch.setenv("RANKBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("RANKBENCH_DATA", raising=False)
    monkeypatch.setenv("SCIKIT_LEARN_DATA", str(tmp_path / "sklearn_home"))


def _letor_lines(fold, split, n_features, qid_base):
    q = qid_base + 10 * fold + {"train": 0, "vali": 1, "test": 2}[split]
    return "".join(f"{i % 2} qid:{q} " + " ".join(f"{k}:{(i + k) / 10}" for k in range(1, n_features + 1))
                   + f" #docid = d{i}\n" for i in range(3))


def _make_tree(folder, names, n_features, suffix="", qid_base=0):
    compress = {"": lambda b: b, ".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}[suffix]
    for fold in range(1, 6):
        d = folder / f"Fold{fold}"
        d.mkdir(parents=True)
        for split, fname in zip(("train", "vali", "test"), names, strict=True):
            text = _letor_lines(fold, split, n_features, qid_base)
            (d / f"{fname}{suffix}").write_bytes(compress(text.encode()))


def test_list_and_info():
    names = list_datasets()
    for n in ("ohsumed", "td2003", "td2004", "np2003", "np2004", "hp2003", "hp2004", "mq2007",
              "mq2008", "rcv1_ccat", "rcv1_e311", "synthetic"):
        assert n in names
    info = dataset_info("ohsumed")
    assert info["graded"] and info["n_folds"] == 5 and info["n_features"] == 45
    assert info["variants"] == ["QueryLevelNorm", "Feature-min", "Feature-null"]
    assert dataset_info("td2003")["labels"] == "binary" and "TD2003" in dataset_info("td2003")["paper_names"]
    assert dataset_info("rcv1_e311")["n_folds"] == 1
    with pytest.raises(ValueError, match="unknown dataset 'letor9'"):
        dataset_info("letor9")


def test_gov_original_layout_found(tmp_path):
    _make_tree(tmp_path / "Gov/QueryLevelNorm/2003_td_dataset", ("train.txt", "vali.txt", "test.txt"), 64)
    assert dataset_available("td2003", root=tmp_path)
    assert not dataset_available("td2004", root=tmp_path)
    d = load_fold("td2003", 3, "vali", root=tmp_path)
    assert d.n_features == 64 and d.qid.tolist() == [31, 31, 31] and d.name == "td2003"
    assert d.meta["fold"] == 3 and d.meta["variant"] == "QueryLevelNorm" and not d.synthetic
    assert np.allclose(d.X[1, :3], [0.2, 0.3, 0.4])


def test_feature_min_names_compressed_and_env_root(tmp_path, monkeypatch):
    _make_tree(tmp_path / "NP2004/Feature-min", ("trainingset.txt", "validationset.txt", "testset.txt"),
               64, suffix=".gz")
    monkeypatch.setenv("RANKBENCH_DATA", str(tmp_path))
    d = load_fold("np2004", 5, "test", variant="feature-min")
    assert d.qid.tolist() == [52] * 3 and d.source.endswith("Fold5/testset.txt.gz")
    with pytest.raises(DatasetNotFound):
        load_fold("np2004", 5, "test")  # QueryLevelNorm is not there


def test_narrower_file_is_widened_to_the_dataset_width(tmp_path):
    _make_tree(tmp_path / "MQ2007", ("train.txt", "vali.txt", "test.txt"), 3, suffix=".bz2")
    d = load_fold("mq2007", 1, "train", root=tmp_path)
    assert d.X.shape == (3, 46) and np.all(d.X[:, 3:] == 0)


def test_missing_dataset_message_says_what_to_put_where(tmp_path):
    with pytest.raises(DatasetNotFound) as err:
        load_fold("td2003", 1, "train", root=tmp_path)
    msg = str(err.value)
    assert isinstance(err.value, FileNotFoundError)
    assert f"{tmp_path}/TD2003/QueryLevelNorm/Fold{{1..5}}/{{train,vali,test}}.txt" in msg
    assert "Gov/QueryLevelNorm/2003_td_dataset" in msg and "allow_synthetic" in msg
    with pytest.raises(DatasetNotFound, match="no data root is set.*RANKBENCH_DATA"):
        load_fold("mq2008", 1, "train")
    with pytest.raises(DatasetNotFound, match=r"sklearn_home.*fetch_rcv1\(data_home='.*/rcv1'\)"):
        load_fold("rcv1_ccat", 1, "train", root=tmp_path)
    assert not dataset_available("rcv1_ccat", root=tmp_path)
    assert not dataset_available("ohsumed")


@pytest.mark.parametrize(
    "args,msg",
    [(("ohsumed", 6, "train"), "fold must be an integer in 1..5"),
     (("ohsumed", 1, "validation"), "split must be one of"),
     (("rcv1_ccat", 2, "train"), r"fold must be an integer in 1..1"),
     (("ohsumed", 1, "train", "Raw"), "has no variant 'Raw'")],
)
def test_bad_arguments(args, msg):
    with pytest.raises(ValueError, match=msg):
        load_fold(*args)


def test_letor_stand_in_is_labelled_and_shaped_like_the_dataset(tmp_path):
    parts = {s: load_fold("td2003", 2, s, root=tmp_path, allow_synthetic=True)
             for s in ("train", "vali", "test")}
    for p in parts.values():
        assert p.synthetic and p.meta["stand_in_for"] == "td2003" and "synthetic" in p.name
        assert p.n_features == 64 and set(np.unique(p.y)) <= {0, 1}
    assert sum(p.n_queries for p in parts.values()) == 50
    n_docs = sum(p.n_docs for p in parts.values())
    assert 0.5 * 49058 < n_docs < 1.5 * 49058
    rate = sum(int(p.y.sum()) for p in parts.values()) / n_docs
    assert abs(rate - dataset_info("td2003")["stats"]["approx_relevant_rate"]) < 1e-3
    again = load_fold("td2003", 2, "test", root=tmp_path, allow_synthetic=True)
    assert np.array_equal(again.X, parts["test"].X)


@pytest.mark.slow
def test_rcv1_stand_in(tmp_path):
    try:
        d = load_fold("rcv1_e311", 1, "test", root=tmp_path, allow_synthetic=True)
        assert d.synthetic and d.meta["stand_in_for"] == "rcv1_e311"
        assert d.X.shape == (23149, 47236) and sp.issparse(d.X) and d.n_queries == 1
        assert int(d.y.sum()) > 0 and d.y.mean() < 0.01
        assert "synthetic" in d.name and d.meta["vali_in_train"] is False
        lewis = load_fold("rcv1_e311", 1, "train", variant="lewis", root=tmp_path,
                          allow_synthetic=True)
        assert lewis.n_docs == 23149 and (lewis.X != d.X).nnz == 0  # the same rows, swapped role
        vali = load_fold("rcv1_e311", 1, "vali", root=tmp_path, allow_synthetic=True,
                         vali_fraction=0.01)
        assert vali.n_docs == round(0.01 * 781265) and vali.meta["vali_in_train"]
    finally:
        synthetic_mod._rcv1_like_cached.cache_clear()


def _fake_bunch(n, seed=0):
    rng = np.random.default_rng(seed)
    data = sp.random(n, 30, density=0.1, format="csr", random_state=seed, dtype=np.float64)
    names = np.array(["C15", "CCAT", "E311", "GCAT"], dtype=object)
    target = sp.csr_matrix((rng.random((n, 4)) < [0.2, 0.5, 0.05, 0.3]).astype(np.uint8))
    return SimpleNamespace(data=data, target=target, target_names=names)


def test_rcv1_conversion_from_a_fake_bunch():
    b = _fake_bunch(60)
    ccat = b.target[:, 1].toarray().ravel()
    train = rcv1_split_from_bunch(b, "rcv1_ccat", "train", "papers", n_lewis_train=20)
    test = rcv1_split_from_bunch(b, "rcv1_ccat", "test", "papers", n_lewis_train=20)
    assert train.n_docs == 40 and test.n_docs == 20
    assert np.array_equal(train.y, ccat[20:]) and np.array_equal(test.y, ccat[:20])
    assert (train.X != b.data[20:]).nnz == 0 and (test.X != b.data[:20]).nnz == 0
    assert train.qid.tolist() == [0] * 40 and train.query_ptr.tolist() == [0, 40]
    assert sp.isspmatrix_csr(train.X) and train.X.has_sorted_indices and not train.synthetic
    lewis = rcv1_split_from_bunch(b, "rcv1_e311", "train", "lewis", n_lewis_train=20)
    assert np.array_equal(lewis.y, b.target[:20, 2].toarray().ravel())
    vali = rcv1_split_from_bunch(b, "rcv1_ccat", "vali", "papers", n_lewis_train=20,
                                 vali_fraction=0.25)
    assert vali.n_docs == 10 and vali.meta["vali_in_train"]
    rows = {tuple(r) for r in train.X.toarray()}
    assert all(tuple(r) in rows for r in vali.X.toarray())
    held = rcv1_split_from_bunch(b, "rcv1_ccat", "train", "papers", n_lewis_train=20,
                                 vali_fraction=0.25, holdout=True)
    assert held.n_docs == 30 and held.n_docs + vali.n_docs == 40
    with pytest.raises(ValueError, match="orientation"):
        rcv1_split_from_bunch(b, "rcv1_ccat", "train", "sideways", n_lewis_train=20)
    small = rcv1_split_from_bunch(b, "rcv1_ccat", "train", "papers", n_lewis_train=20,
                                  train_size=15, seed=3)
    assert small.n_docs == 15 and small.meta["train_size"] == 15
    full_rows = [tuple(r) for r in train.X.toarray()]
    picked = [full_rows.index(tuple(r)) for r in small.X.toarray()]
    assert picked == sorted(picked) and np.array_equal(small.y, train.y[picked])
    again = rcv1_split_from_bunch(b, "rcv1_ccat", "train", "papers", n_lewis_train=20,
                                  train_size=15, seed=3)
    assert (again.X != small.X).nnz == 0
    with pytest.raises(ValueError, match=r"train_size must be an integer in 1..40"):
        rcv1_split_from_bunch(b, "rcv1_ccat", "train", "papers", n_lewis_train=20, train_size=41)


def _fake_sklearn_rcv1(monkeypatch, n_extra=25):
    bunch = _fake_bunch(rcv1_mod.LEWIS_N_TRAIN + n_extra, seed=1)
    calls = []

    def fake_fetch(data_home=None, subset="all", download_if_missing=True, **kw):
        calls.append((data_home, subset, download_if_missing))
        return bunch

    import sklearn.datasets

    monkeypatch.setattr(sklearn.datasets, "fetch_rcv1", fake_fetch)
    rcv1_mod._task.cache_clear()
    return calls


def _fake_cache_files(home):
    folder = home / "RCV1"
    folder.mkdir(parents=True)
    for f in ("samples_py3.pkl", "sample_id_py3.pkl", "sample_topics_py3.pkl"):
        (folder / f).write_bytes(b"")


def test_load_fold_rcv1_through_sklearn_cache_layout(tmp_path, monkeypatch):
    """load_fold finds <root>/rcv1/RCV1/*.pkl and calls fetch_rcv1 there without downloading."""
    calls = _fake_sklearn_rcv1(monkeypatch)
    _fake_cache_files(tmp_path / "rcv1")
    try:
        assert dataset_available("rcv1_ccat", root=tmp_path)
        train = load_fold("rcv1_ccat", 1, "train", root=tmp_path)
        test = load_fold("rcv1_ccat", 1, "test", root=tmp_path)
        assert (train.n_docs, test.n_docs) == (25, rcv1_mod.LEWIS_N_TRAIN)
        assert calls[0] == (str(tmp_path / "rcv1"), "all", False)
        lewis = load_fold("rcv1_ccat", 1, "train", variant="lewis", root=tmp_path)
        assert lewis.n_docs == rcv1_mod.LEWIS_N_TRAIN and lewis.meta["orientation"] == "lewis"
    finally:
        rcv1_mod._task.cache_clear()


def test_rcv1_other_homes_and_download_only_when_asked(tmp_path, monkeypatch):
    calls = _fake_sklearn_rcv1(monkeypatch)
    try:
        _fake_cache_files(tmp_path / "sklearn_home")  # sklearn's own default data home
        assert dataset_available("rcv1_e311")
        d = load_fold("rcv1_e311", 1, "test")
        assert d.source == str(tmp_path / "sklearn_home") and calls[-1][2] is False
        rcv1_mod._task.cache_clear()
        load_fold("rcv1_e311", 1, "test", root=tmp_path / "ro", download=True,
                  data_home=tmp_path / "mine")
        assert calls[-1] == (str(tmp_path / "sklearn_home"), "all", True)  # an existing cache wins
        import shutil

        shutil.rmtree(tmp_path / "sklearn_home")
        rcv1_mod._task.cache_clear()
        with pytest.raises(DatasetNotFound):
            load_fold("rcv1_e311", 1, "test", root=tmp_path / "ro", data_home=tmp_path / "mine")
        load_fold("rcv1_e311", 1, "test", root=tmp_path / "ro", download=True,
                  data_home=tmp_path / "mine")
        assert calls[-1] == (str(tmp_path / "mine"), "all", True)
    finally:
        rcv1_mod._task.cache_clear()
