"""MSLR-WEB10K/30K, Yahoo! LTR set 1/2 and Istella-S: each published layout as a tiny fixture, absent, stand-in."""

import gzip

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
from rankbench.data import synthetic as synthetic_mod
from rankbench.data.stand_in import STAND_IN_MAX_CELLS

NEW = ("mslr_web10k", "mslr_web30k", "yahoo_set1", "yahoo_set2", "istella_s")


@pytest.fixture(autouse=True)
def _private_env(tmp_path, monkeypatch):
    monkeypatch.setenv("RANKBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("RANKBENCH_DATA", raising=False)
    yield
    synthetic_mod._letor_like_cached.cache_clear()  # stand-ins are large: do not keep them


def _lines(qids, width, sparse_every=1, docid=False):
    """Two documents per query, labels 0..4 cycling, features k:value for every k (or every sparse_every-th)."""
    out = []
    for j, q in enumerate(qids):
        for i in range(2):
            label = (2 * j + i) % 5
            feats = " ".join(f"{k}:{(q + i + k) % 7 / 7:.6g}" for k in range(1, width + 1, sparse_every))
            out.append(f"{label} qid:{q} {feats}" + (f" #docid = q{q}d{i}" if docid else ""))
    return "\n".join(out) + "\n"


def _write(path, text, gz=False):
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        path = path.with_name(path.name + ".gz")
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def _mslr_tree(root, folder, width=136):
    for fold in range(1, 6):
        for k, split in enumerate(("train", "vali", "test")):
            _write(root / folder / f"Fold{fold}" / f"{split}.txt", _lines([100 * fold + k], width))


def test_registered_with_published_statistics():
    for name in NEW:
        assert name in list_datasets()
    web10k, web30k = dataset_info("mslr_web10k"), dataset_info("mslr_web30k")
    assert (web10k["n_features"], web10k["n_folds"], web10k["n_levels"]) == (136, 5, 5)
    assert web10k["stats"]["n_queries"] == 10000 and web30k["stats"]["n_queries"] == 31531
    assert web10k["layout"] == "MSLR-WEB10K/Fold{1..5}/{train,vali,test}.txt"
    y1, y2 = dataset_info("yahoo_set1"), dataset_info("yahoo_set2")
    assert (y1["n_features"], y1["n_folds"], y1["n_levels"]) == (700, 1, 5)
    assert y1["stats"]["split_queries"] == {"train": 19944, "vali": 2994, "test": 6983}
    assert y1["stats"]["n_docs"] == 473134 + 71083 + 165660 == 709877
    assert y2["stats"]["split_docs"] == {"train": 34815, "vali": 34881, "test": 103174}
    assert y1["layout"] == "ltrc_yahoo/set1.{train,valid,test}.txt"
    ist = dataset_info("istella_s")
    assert (ist["n_features"], ist["n_folds"], ist["stats"]["n_docs"]) == (220, 1, 3408630)
    assert ist["layout"] == "istella-s-letor/sample/{train,vali,test}.txt"
    assert "YAHOO LTRC set 2" in y2["paper_names"] and "MSLR-WEB10k" in web10k["paper_names"]


@pytest.mark.parametrize("name,folder", [("mslr_web10k", "MSLR-WEB10K"), ("mslr_web30k", "MSLR-WEB30K"),
                                         ("mslr_web10k", "mslr-web10k")])
def test_mslr_layout(tmp_path, name, folder):
    _mslr_tree(tmp_path, folder)
    assert dataset_available(name, root=tmp_path)
    d = load_fold(name, 3, "vali", root=tmp_path)
    assert isinstance(d.X, np.ndarray) and d.X.shape == (2, 136) and d.qid.tolist() == [301, 301]
    assert d.y.tolist() == [0, 1] and d.meta["fold"] == 3 and d.name == name and not d.synthetic
    assert np.allclose(d.X[1, :3], [(301 + 1 + k) % 7 / 7 for k in (1, 2, 3)], atol=1e-6)
    assert d.docids is None and d.doc_ids().tolist() == ["L1", "L2"]
    assert d.source.endswith(f"{folder}/Fold3/vali.txt")


@pytest.mark.parametrize("k", [1, 2])
def test_yahoo_layout_one_fold_csr_both_sets_side_by_side(tmp_path, k):
    for s in (1, 2):  # ltrc_yahoo.tar.bz2 unpacks both sets into one folder
        for j, (split, fname) in enumerate((("train", "train"), ("vali", "valid"), ("test", "test"))):
            _write(tmp_path / "ltrc_yahoo" / f"set{s}.{fname}.txt",
                   _lines([10 * s + j, 10 * s + j + 5], 699, sparse_every=3), gz=(split == "test"))
    assert dataset_available(f"yahoo_set{k}", root=tmp_path)
    d = load_fold(f"yahoo_set{k}", 1, "vali", root=tmp_path)
    assert sp.issparse(d.X) and d.X.shape == (4, 700) and d.X.has_sorted_indices
    assert d.query_ids().tolist() == [10 * k + 1, 10 * k + 6]
    assert set(d.X.indices.tolist()) == set(range(0, 699, 3))
    assert load_fold(f"yahoo_set{k}", 1, "test", root=tmp_path).source.endswith(f"set{k}.test.txt.gz")
    dense = load_fold(f"yahoo_set{k}", 1, "train", root=tmp_path, sparse=False)
    assert isinstance(dense.X, np.ndarray) and dense.X.shape == (4, 700)
    with pytest.raises(ValueError, match="fold must be an integer in 1..1"):
        load_fold(f"yahoo_set{k}", 2, "train", root=tmp_path)


def test_istella_s_layout(tmp_path):
    for j, split in enumerate(("train", "vali", "test")):
        _write(tmp_path / "istella-s-letor" / "sample" / f"{split}.txt", _lines([j + 1], 220, docid=True))
    assert dataset_available("istella_s", root=tmp_path)
    d = load_fold("istella_s", 1, "test", root=tmp_path)
    assert isinstance(d.X, np.ndarray) and d.X.shape == (2, 220) and d.qid.tolist() == [3, 3]
    assert d.docids.tolist() == ["q3d0", "q3d1"]


@pytest.mark.parametrize("name,where", [
    ("mslr_web10k", "MSLR-WEB10K/Fold{1..5}/{train,vali,test}.txt"),
    ("mslr_web30k", "MSLR-WEB30K/Fold{1..5}/{train,vali,test}.txt"),
    ("yahoo_set1", "ltrc_yahoo/set1.{train,valid,test}.txt"),
    ("yahoo_set2", "ltrc_yahoo/set2.{train,valid,test}.txt"),
    ("istella_s", "istella-s-letor/sample/{train,vali,test}.txt"),
])
def test_absent_data_set_says_which_files_to_put_where(tmp_path, name, where):
    assert not dataset_available(name, root=tmp_path)
    with pytest.raises(DatasetNotFound) as err:
        load_fold(name, 1, "train", root=tmp_path)
    msg = str(err.value)
    assert f"{tmp_path}/{where} (plain or .xz/.gz/.bz2)" in msg and "allow_synthetic=True" in msg
    assert f"dataset {name} not found under the data root {tmp_path}" in msg


def test_incomplete_tree_is_not_available_and_names_the_missing_split(tmp_path):
    _mslr_tree(tmp_path, "MSLR-WEB10K")
    (tmp_path / "MSLR-WEB10K" / "Fold5" / "test.txt").unlink()
    assert not dataset_available("mslr_web10k", root=tmp_path)
    assert load_fold("mslr_web10k", 4, "test", root=tmp_path).n_docs == 2
    with pytest.raises(DatasetNotFound, match="MSLR-WEB10K/Fold"):
        load_fold("mslr_web10k", 5, "test", root=tmp_path)


def _stand_in(name, tmp_path):
    return {s: load_fold(name, 1, s, root=tmp_path, allow_synthetic=True) for s in ("train", "vali", "test")}


@pytest.mark.parametrize("name", ["yahoo_set1", "yahoo_set2", "istella_s"])
def test_one_fold_stand_in_has_the_published_shape_and_split_shares(tmp_path, name):
    info = dataset_info(name)
    parts = _stand_in(name, tmp_path)
    qsets = {s: set(d.query_ids().tolist()) for s, d in parts.items()}
    assert not (qsets["train"] & qsets["vali"]) and not (qsets["train"] & qsets["test"])
    assert not (qsets["vali"] & qsets["test"])
    n_q = sum(len(q) for q in qsets.values())
    n_docs = sum(d.n_docs for d in parts.values())
    per_q = info["stats"]["n_docs"] / info["stats"]["n_queries"]
    assert n_docs * info["n_features"] <= 1.6 * STAND_IN_MAX_CELLS  # scaled down: cannot exhaust memory
    assert 0.5 * per_q < n_docs / n_q < 1.5 * per_q
    shares = {"yahoo_set1": {"train": 19944, "vali": 2994, "test": 6983},
              "yahoo_set2": {"train": 1266, "vali": 1266, "test": 3798},
              "istella_s": {"train": 60, "vali": 20, "test": 20}}[name]
    total = sum(shares.values())
    for s, d in parts.items():
        assert d.synthetic and d.meta["stand_in_for"] == name and d.name == f"synthetic stand-in for {name}"
        assert d.n_features == info["n_features"] and set(np.unique(d.y)) <= set(range(5))
        assert abs(len(qsets[s]) / n_q - shares[s] / total) < 2 / n_q + 1e-9
        assert d.meta["stand_in_scale"] == pytest.approx(n_q / info["stats"]["n_queries"])
        assert sp.issparse(d.X) == name.startswith("yahoo")  # the real set's layout
    assert len(np.unique(np.concatenate([d.y for d in parts.values()]))) == 5
    again = load_fold(name, 1, "test", root=tmp_path, allow_synthetic=True)
    a, b = again.X, parts["test"].X
    assert (a != b).nnz == 0 if sp.issparse(a) else np.array_equal(a, b)


def test_mslr_stand_in_rotates_five_folds_over_one_scaled_query_set(tmp_path):
    folds = {k: {s: load_fold("mslr_web10k", k, s, root=tmp_path, allow_synthetic=True)
                 for s in ("train", "vali", "test")} for k in (1, 2)}
    for parts in folds.values():
        d = parts["train"]
        assert d.synthetic and d.n_features == 136 and d.meta["stand_in_scale"] < 1
        assert isinstance(d.X, np.ndarray)
    union = [set().union(*(set(p.query_ids().tolist()) for p in parts.values())) for parts in folds.values()]
    assert union[0] == union[1]
    assert set(folds[1]["test"].query_ids().tolist()) == set(folds[2]["vali"].query_ids().tolist())
    n_docs = sum(p.n_docs for p in folds[1].values())
    assert n_docs * 136 <= 1.6 * STAND_IN_MAX_CELLS
