"""Failure injection for the reader and the data registry: never silently wrong, never take the machine down.

Each case is a file or a data-root layout a user really produces by accident; each
test asserts the exception type and that the message names what to fix.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from rankbench.data import DatasetNotFound, dataset_available, load_fold, read_letor
from rankbench.data.letor import MAX_FEATURES

LF_TEXT = ("# written by hand\n"
           "2 qid:1 1:0.5 2:1 #docid = a1\n"
           "0 qid:1 1:0.25 2:0 #docid = a2\n"
           "1 qid:2 1:1 2:0.75 #docid = b1\n"
           "0 qid:2 1:0 2:0.5 #docid = b2\n")


@pytest.fixture(autouse=True)
def _private_env(tmp_path, monkeypatch):
    monkeypatch.setenv("RANKBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("RANKBENCH_DATA", raising=False)


def _write(path, raw: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(raw)
    return path


# -- line endings -------------------------------------------------------------------------

def test_cr_only_file_with_a_comment_on_line_1_reads_every_document(tmp_path):
    # before: the comment on line 1 swallowed the whole CR-only file: 1 document of 4
    ref = read_letor(_write(tmp_path / "lf.txt", LF_TEXT.encode()), cache=False)
    cr = read_letor(_write(tmp_path / "cr.txt", LF_TEXT.replace("\n", "\r").encode()), cache=False)
    assert cr.n_docs == 4 and cr.n_queries == 2
    assert np.array_equal(cr.X, ref.X) and np.array_equal(cr.y, [2, 0, 1, 0])
    assert cr.docids.tolist() == ["a1", "a2", "b1", "b2"]
    assert cr.lines.tolist() == ref.lines.tolist() == [2, 3, 4, 5]


def test_mixed_line_endings_read_as_an_editor_shows_them(tmp_path):
    lines = LF_TEXT.splitlines()
    raw = (lines[0] + "\r" + lines[1] + "\r\n" + lines[2] + "\n" + lines[3] + "\r" + lines[4]
           + "\r\n").encode()
    d = read_letor(_write(tmp_path / "mixed.txt", raw), cache=False)
    ref = read_letor(_write(tmp_path / "lf.txt", LF_TEXT.encode()), cache=False)
    assert d.n_docs == 4 and np.array_equal(d.X, ref.X) and np.array_equal(d.y, ref.y)
    assert d.lines.tolist() == [2, 3, 4, 5] and d.docids.tolist() == ["a1", "a2", "b1", "b2"]


def test_an_error_in_a_cr_only_file_names_the_right_line(tmp_path):
    raw = b"# c\r1 qid:1 1:1\r0 qid:1 1:x\r"
    with pytest.raises(ValueError, match=r"bad\.txt, line 3: value 'x' of feature 1 is not a number"):
        read_letor(_write(tmp_path / "bad.txt", raw), cache=False)


def test_a_lone_cr_at_the_end_of_a_crlf_file_is_a_line_end(tmp_path):
    raw = b"1 qid:1 1:1\r\n0 qid:1 1:2\r"
    assert read_letor(_write(tmp_path / "end.txt", raw), cache=False).X[:, 0].tolist() == [1.0, 2.0]


# -- a feature index far beyond the data -------------------------------------------------

def test_a_typo_index_is_refused_with_file_line_index_and_the_override(tmp_path):
    p = _write(tmp_path / "typo.txt", b"1 qid:1 1:0.2 2:0.5\n0 qid:1 1:0.1 1000000000:0.5\n")
    with pytest.raises(ValueError) as err:
        read_letor(p, cache=False)
    msg = str(err.value)
    assert msg.startswith(f"{p}, line 2: feature index 1000000000 is beyond max_features=16777216")
    assert "7.5 GiB" in msg and "max_features=None" in msg
    assert MAX_FEATURES == 2**24


def test_the_limit_can_be_lifted_and_then_no_dense_d_sized_array_is_made(tmp_path):
    p = _write(tmp_path / "wide.txt", b"1 qid:1 1:0.2 2:0.5\n0 qid:1 1:0.1 1000000000:0.5\n")
    d = read_letor(p, max_features=None, cache=False)  # width 1e9: CSR of 4 stored values
    assert sp.issparse(d.X) and d.X.shape == (2, 1_000_000_000) and d.X.nnz == 4
    assert read_letor(p, max_features=10**9, cache=False).n_features == 10**9


def test_a_cached_entry_does_not_bypass_the_limit(tmp_path):
    p = _write(tmp_path / "wide.txt", b"1 qid:1 1:0.2\n0 qid:1 99999999:0.5\n")
    cache = tmp_path / "c"
    assert read_letor(p, max_features=None, cache=cache).n_features == 99999999
    with pytest.raises(ValueError, match="line 2: feature index 99999999 is beyond max_features"):
        read_letor(p, cache=cache)


def test_forced_dense_x_larger_than_memory_is_refused_before_allocating(tmp_path):
    p = _write(tmp_path / "wide.txt", b"1 qid:1 1:0.2\n0 qid:1 16000000:0.5\n" * 20000)
    with pytest.raises(ValueError, match=r"wide\.txt: a dense X of 40000 x 16000000 needs 4768\.4 GiB, "
                                         r"more than this machine's .* GiB .*sparse=None or sparse=True"):
        read_letor(p, sparse=False, cache=False)


def test_the_registered_width_still_wins_over_the_limit(tmp_path):
    _write(tmp_path / "OHSUMED/QueryLevelNorm/Fold1/train.txt", b"1 qid:1 1:0.2\n0 qid:1 4500:0.5\n")
    with pytest.raises(ValueError, match=r"train\.txt, line 2: feature index 4500 exceeds n_features=45"):
        load_fold("ohsumed", 1, "train", root=tmp_path)


# -- two candidate files, a directory where a file is expected ---------------------------

def _fold1(root, files):
    d = root / "MQ2008" / "Fold1"
    for name in files:
        _write(d / name, b"1 qid:1 1:0.5\n0 qid:1 1:0.25\n")
    return d


def test_vali_txt_and_vali_txt_xz_both_present_is_refused_naming_both(tmp_path):
    d = _fold1(tmp_path, ["train.txt", "vali.txt", "vali.txt.xz", "test.txt"])
    with pytest.raises(ValueError) as err:
        load_fold("mq2008", 1, "vali", root=tmp_path)
    msg = str(err.value)
    assert f"{d / 'vali.txt'}, {d / 'vali.txt.xz'}" in msg and "never picks one silently" in msg
    assert load_fold("mq2008", 1, "train", root=tmp_path).n_docs == 2  # the others still load
    with pytest.raises(ValueError, match="vali.txt.xz"):
        dataset_available("mq2008", root=tmp_path)


def test_the_two_letor3_names_of_one_split_are_refused_too(tmp_path):
    root = tmp_path
    d = root / "OHSUMED" / "Feature-min" / "Fold2"
    _write(d / "testset.txt", b"1 qid:1 1:0.5\n")
    _write(d / "test.txt.gz", b"")
    with pytest.raises(ValueError, match=r"ohsumed fold 2 test: 2 files could hold it: .*/test\.txt\.gz, .*/testset\.txt;"):
        load_fold("ohsumed", 2, "test", variant="Feature-min", root=root)


def test_a_directory_named_like_the_split_file_says_is_a_directory(tmp_path):
    d = _fold1(tmp_path, ["train.txt", "test.txt"])
    (d / "vali.txt").mkdir()
    with pytest.raises(IsADirectoryError, match=rf"{d / 'vali.txt'} is a directory, not the vali file"):
        load_fold("mq2008", 1, "vali", root=tmp_path, allow_synthetic=True)
    with pytest.raises(IsADirectoryError, match=rf"{d / 'vali.txt'} is a directory, not a LETOR file"):
        read_letor(d / "vali.txt")


def test_an_absent_split_is_still_dataset_not_found(tmp_path):
    _fold1(tmp_path, ["train.txt", "test.txt"])
    with pytest.raises(DatasetNotFound, match=r"MQ2008/Fold\{1\.\.5\}/\{train,vali,test\}\.txt"):
        load_fold("mq2008", 1, "vali", root=tmp_path)


# -- labels and qids (issue 26) -----------------------------------------------------------

def test_a_label_above_max_label_is_refused_naming_file_line_and_the_override(tmp_path):
    # before: "1e9 qid:1" was read as a label of 10**9 without a word
    p = _write(tmp_path / "big.txt", b"0 qid:1 1:0.5\n1e9 qid:1 1:0.25\n2 qid:2 1:1\n")
    with pytest.raises(ValueError) as err:
        read_letor(p, cache=False)
    msg = str(err.value)
    assert msg.startswith(f"{p}, line 2: label 1000000000 is above max_label=65535")
    assert "max_label=None" in msg and "load_fold" in msg
    assert read_letor(p, max_label=None, cache=False).y.tolist() == [0, 10**9, 2]
    assert read_letor(p, max_label=10**9, cache=False).n_docs == 3
    top = _write(tmp_path / "top.txt", b"65535 qid:1 1:1\n0 qid:1 1:0\n")  # the limit itself is a level
    assert read_letor(top, cache=False).y[0] == 65535
    with pytest.raises(ValueError, match="line 1: label 65535 is above max_label=1023"):
        read_letor(top, max_label=1023, cache=False)
    with pytest.raises(ValueError, match="max_label must be a non-negative integer or None"):
        read_letor(p, max_label=-1, cache=False)


def test_a_cached_entry_does_not_bypass_the_label_limit(tmp_path):
    p = _write(tmp_path / "big.txt", b"70000 qid:1 1:0.5\n0 qid:1 1:0.25\n")
    cache = tmp_path / "c"
    assert read_letor(p, max_label=None, cache=cache).y[0] == 70000
    with pytest.raises(ValueError, match="line 1: label 70000 is above max_label=65535"):
        read_letor(p, cache=cache)


def test_load_fold_refuses_a_label_above_max_label_and_takes_the_override(tmp_path):
    d = tmp_path / "MQ2008" / "Fold1"
    for split in ("train", "vali", "test"):
        _write(d / f"{split}.txt", b"1 qid:1 1:0.5\n0 qid:1 1:0.25\n1e6 qid:2 2:1\n0 qid:2 2:0\n")
    with pytest.raises(ValueError, match=r"train\.txt, line 3: label 1000000 is above max_label=65535"):
        load_fold("mq2008", 1, "train", root=tmp_path)
    assert load_fold("mq2008", 1, "train", root=tmp_path, max_label=None).y.max() == 10**6


def _toy(n_queries=3, per=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * per, 3))
    y = np.tile(np.arange(per) % 3, n_queries)
    qid = np.repeat(np.arange(n_queries), per)
    return X, y, qid


def _estimators():
    from rankbench.estimators.auc_svm import AUCSVM
    from rankbench.estimators.lambdamart import LambdaMART
    from rankbench.estimators.ranksvm import RankSVM
    from rankbench.estimators.spd import SPDRanker

    out = [RankSVM(C=1.0), SPDRanker(n_iter=50), LambdaMART(n_estimators=2, min_data_in_leaf=1),
           AUCSVM(C=1.0)]
    try:
        from rankbench.estimators.lambdamart import LightGBMLambdaRank

        out.append(LightGBMLambdaRank(n_estimators=2, min_data_in_leaf=1))
    except ImportError:  # pragma: no cover - lightgbm is a dependency
        pass
    try:
        import xgboost  # noqa: F401

        from rankbench.estimators.lambdamart import XGBoostRanker

        out.append(XGBoostRanker(n_estimators=2))
    except ImportError:
        pass
    return out


@pytest.mark.parametrize("bad", [np.nan, 1.5, np.inf, 1e19])
def test_nan_fractional_and_huge_float_qids_are_refused_by_every_fit(bad):
    # before: RankSVM, SPDRanker and LambdaMART fitted with a NaN qid (score refused it)
    X, y, qid = _toy()
    q = qid.astype(np.float64)
    q[5] = bad
    for est in _estimators():
        with pytest.raises(ValueError, match="qid must hold integer query ids within int64: entry 5"):
            est.fit(X, y, q)
    assert all(est.fit(X, y, qid.astype(np.float64)) is est for est in _estimators())  # whole floats


def test_labels_above_the_maximum_are_refused_by_fit():
    from rankbench.estimators.auc_svm import AUCSVM
    from rankbench.estimators.ranksvm import RankSVM
    from rankbench.estimators.spd import SPDRanker

    X, y, qid = _toy()
    y = y.copy()
    y[4] = 10**9
    for est in (RankSVM(C=1.0), SPDRanker(n_iter=50), AUCSVM(C=1.0)):
        with pytest.raises(ValueError, match=r"label 1000000000 \(row 4\) is above the largest relevance "
                                             r"level accepted, 65535 .*np\.unique\(y, return_inverse=True\)"):
            est.fit(X, y, qid)


@pytest.mark.parametrize(("y", "qid", "metric"), [
    ([1, 1, 1, 1, 1, 1], [0, 0, 0, 1, 1, 1], "ndcg"),         # one label everywhere
    ([2, 0, 1, 0, 2, 1], [0, 1, 2, 3, 4, 5], "auc"),          # one document per query
    ([0, 0, 0, 3, 3, 3], [0, 0, 0, 1, 1, 1], "mauc"),         # one label per query
])
def test_lambdamart_without_a_pair_raises_like_spd(y, qid, metric):
    # before: one tree predicting 0.0 for everything, silently
    from rankbench.estimators.lambdamart import LambdaMART

    X = np.random.default_rng(0).normal(size=(6, 2))
    with pytest.raises(ValueError, match="no valid pairs: every query has a single relevance label"):
        LambdaMART(n_estimators=2, metric=metric, min_data_in_leaf=1).fit(X, y, qid)
    y2, q2 = list(y), list(qid)
    q2[-1], y2[-1] = q2[-2], y2[-2] + 1  # one pair in the last query is enough
    assert LambdaMART(n_estimators=2, metric=metric, min_data_in_leaf=1).fit(X, y2, q2).n_features_in_ == 2


def test_ndcg_of_a_query_with_a_huge_label_is_defined_not_dropped():
    # before: evaluate(y=[1100,0,1,0,2,0,1,0], ...) reported ndcg@10 0.9077, query 2 alone
    from fractions import Fraction

    from rankbench.metrics import evaluate, ndcg_at_k

    y = [1100, 0, 1, 0, 2, 0, 1, 0]
    s = [0.1, 0.9, 0.8, 0.2, 0.9, 0.1, 0.5, 0.3]
    q = [1] * 4 + [2] * 4

    def letor_ndcg(labels, scores):  # exact gains (Python integers), LETOR's discount
        ranked = [lab for _, lab in sorted(zip(scores, labels, strict=True), key=lambda t: -t[0])]
        disc = [Fraction(1) if r < 2 else Fraction(1 / np.log2(r + 1)) for r in range(len(ranked))]
        dcg = sum((2**lab - 1) * d for lab, d in zip(ranked, disc, strict=True))
        idcg = sum((2**lab - 1) * d for lab, d in zip(sorted(labels, reverse=True), disc, strict=True))
        return float(dcg / idcg)

    expect = [letor_ndcg(y[:4], s[:4]), letor_ndcg(y[4:], s[4:])]
    assert np.allclose(ndcg_at_k(y, s, q, per_query=True), expect, rtol=1e-12, atol=0)
    assert evaluate(y, s, q, ["ndcg@10"])["ndcg@10"] == pytest.approx(np.mean(expect), rel=1e-12)
    # a query whose top labels sum beyond float64 (2 x 2^1023) too
    y2 = [1023, 1023, 0, 1022]
    assert ndcg_at_k(y2, [4.0, 3.0, 2.0, 1.0], None) == pytest.approx(
        letor_ndcg(y2, [4.0, 3.0, 2.0, 1.0]), rel=1e-12)


def test_undefined_auc_queries_are_counted_in_a_warning():
    from rankbench.metrics import UndefinedMetricWarning, auc, evaluate, pairwise_accuracy

    y = [1, 0, 0, 0, 1, 1, 1, 1, 2, 0, 1, 0]
    s = [0.5, 0.4, 0.3, 0.2, 0.1, 0.2, 0.3, 0.4, 0.9, 0.1, 0.2, 0.3]
    q = [1] * 4 + [2] * 4 + [3] * 4
    with pytest.warns(UndefinedMetricWarning, match=r"auc: 1 of 3 queries left out of the mean"):
        assert auc(y, s, q) == pytest.approx((1.0 + 3 / 4) / 2)  # query 3: 0.2 < 0.3 is one miss of 4
    with pytest.warns(UndefinedMetricWarning, match=r"mauc: 1 of 3 queries"):
        evaluate(y, s, q, ["mauc"])
    with pytest.warns(UndefinedMetricWarning, match=r"pairwise_accuracy: 1 of 3 queries"):
        pairwise_accuracy(y, s, q, average="queries")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # defined everywhere, or per query: no warning
        auc(y[:4] + y[8:], s[:4] + s[8:], q[:4] + q[8:])
        assert np.isnan(auc(y, s, q, per_query=True)[1])


def test_float_qids_beyond_int64_are_refused_by_the_metrics():
    # before: both ids overflowed to the same int64 and the two queries were merged
    from rankbench.metrics import ndcg_at_k

    y = [1, 0, 2, 0, 1, 0, 2, 1]
    s = np.arange(8.0)
    with pytest.raises(ValueError, match=r"qid must hold integer query ids within int64: entry 0 is 1e\+19"):
        ndcg_at_k(y, s, [1e19] * 4 + [1.5e19] * 4, per_query=True)
    big = np.array([2**63 + 5] * 4 + [2**63 + 9] * 4, dtype=np.uint64)  # exact integers: kept apart
    assert ndcg_at_k(y, s, big, per_query=True).shape == (2,)


# -- compressed files ---------------------------------------------------------------------

@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
def test_a_bit_flipped_compressed_file_is_a_value_error_naming_it(suffix, tmp_path):
    # before: a flip inside a gzip deflate stream raised zlib.error naming no file
    import bz2
    import gzip
    import lzma

    text = "".join(f"{i % 3} qid:{i // 10} 1:{i * 0.37:.4f} 2:{i % 7} #docid = d{i}\n" for i in range(400))
    raw = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}[suffix](text.encode())
    for pos in range(20, len(raw) - 20, (len(raw) - 40) // 12):
        flipped = bytearray(raw)
        flipped[pos] ^= 0x10
        p = _write(tmp_path / f"f{pos}.txt{suffix}", bytes(flipped))
        with pytest.raises(ValueError, match=rf"{p}: cannot decompress .*truncated or corrupted"):
            read_letor(p, cache=False)
