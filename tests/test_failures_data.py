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
