"""read_letor on small hand-written files: formats, compression, NULL policies, errors, cache."""

import bz2
import gzip
import io
import lzma

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

from rankbench.data import read_letor
from rankbench.data.cache import ParseCache, cache_key
from rankbench.data.letor import decompress_file, parse_letor_bytes, reader_fingerprint

SAMPLE = (
    "2 qid:10 1:0.5 2:1.25 3:-3 # docid = a inc = 1 prob = 0.5\n"
    "0 qid:10 1:0.000000 2:7e-3 3:1E2\n"
    "\n"
    "# a comment line\n"
    "1 qid:7 1:.5 2:5. 3:+0.125 #docid = GX008-86-4444840 inc = 1 prob = 0.086622\n"
)
SAMPLE_X = np.array([[0.5, 1.25, -3.0], [0.0, 7e-3, 100.0], [0.5, 5.0, 0.125]])


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RANKBENCH_CACHE", str(tmp_path / "cache"))


def write(path, text, compress=None, crlf=False):
    data = text.replace("\n", "\r\n") if crlf else text
    raw = data.encode()
    if compress == "gz":
        raw = gzip.compress(raw)
    elif compress == "bz2":
        raw = bz2.compress(raw)
    elif compress == "xz":
        raw = lzma.compress(raw)
    path.write_bytes(raw)
    return path


@pytest.mark.parametrize("compress", [None, "gz", "bz2", "xz"])
@pytest.mark.parametrize("crlf", [False, True])
def test_hand_worked_file_every_compression_and_line_ending(tmp_path, compress, crlf):
    p = write(tmp_path / f"f.txt{'.' + compress if compress else ''}", SAMPLE, compress, crlf)
    d = read_letor(p, cache=False)
    assert d.y.tolist() == [2, 0, 1] and d.y.dtype == np.int64
    assert d.qid.tolist() == [10, 10, 7] and d.qid.dtype == np.int64
    assert d.query_ptr.tolist() == [0, 2, 3]
    assert isinstance(d.X, np.ndarray) and d.X.dtype == np.float64
    assert np.array_equal(d.X, SAMPLE_X)
    assert d.meta["order"] is None


def test_values_equal_python_float_including_slow_path_numbers(tmp_path):
    vals = ["0.1", "0.941842", "-36.717226", "123456789012345678901234", "1.7976931348623157e308",
            "2.2250738585072014e-308", "4.9e-324", "0.30000000000000004441", "1e22", "1e23",
            "-0", "9007199254740993", "0.000000000000000000000000000001", "12345.6789e-3"]
    line = "1 qid:1 " + " ".join(f"{k + 1}:{v}" for k, v in enumerate(vals)) + "\n"
    d = read_letor(write(tmp_path / "f.txt", line), cache=False)
    expect = np.array([float(v) for v in vals])
    assert np.array_equal(d.X[0], expect)
    assert np.signbit(d.X[0, 10])


def test_random_numbers_round_trip_bit_exact(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((50, 8)) * 10.0 ** rng.integers(-12, 12, size=(50, 8))
    lines = []
    for i, row in enumerate(x):
        toks = " ".join(f"{k + 1}:{float(v)!r}" if k % 2 else f"{k + 1}:{v:.6f}" for k, v in enumerate(row))
        lines.append(f"{i % 3} qid:{i // 5} {toks}")
    text = "\n".join(lines) + "\n"
    d = read_letor(write(tmp_path / "r.txt", text), cache=False)
    Xs, ys, qs = load_svmlight_file(io.BytesIO(text.encode()), query_id=True)
    assert np.array_equal(d.X, Xs.toarray())
    assert np.array_equal(d.y, ys) and np.array_equal(d.qid, qs)


def test_sparse_indices_and_forced_layouts(tmp_path):
    text = "1 qid:1 3:2.0 20000:1.5\n0 qid:1 5:1\n1 qid:2\n"
    p = write(tmp_path / "s.txt", text)
    d = read_letor(p, cache=False)
    assert sp.issparse(d.X) and d.X.shape == (3, 20000) and d.X.has_sorted_indices
    assert d.X[0, 2] == 2.0 and d.X[0, 19999] == 1.5 and d.X[1, 4] == 1.0 and d.X[2].nnz == 0
    dense = read_letor(p, sparse=False, cache=False)
    assert isinstance(dense.X, np.ndarray) and np.array_equal(dense.X, d.X.toarray())
    forced = read_letor(write(tmp_path / "f.txt", SAMPLE), sparse=True, cache=False)
    assert sp.issparse(forced.X) and np.array_equal(forced.X.toarray(), SAMPLE_X)


def test_n_features_fixes_width_and_rejects_larger_index(tmp_path):
    p = write(tmp_path / "f.txt", SAMPLE)
    assert read_letor(p, n_features=5, cache=False).X.shape == (3, 5)
    with pytest.raises(ValueError, match=r"line 1: feature index 3 exceeds n_features=2"):
        read_letor(p, n_features=2, cache=False)


def test_unsorted_indices_are_sorted_and_duplicates_rejected(tmp_path):
    d = read_letor(write(tmp_path / "u.txt", "1 qid:1 3:3 1:1\n"), sparse=True, cache=False)
    assert d.X.indices.tolist() == [0, 2] and d.X.data.tolist() == [1.0, 3.0]
    with pytest.raises(ValueError, match=r"line 2: feature index 2 appears twice"):
        read_letor(write(tmp_path / "d.txt", "1 qid:1 1:1\n0 qid:1 2:1 1:0 2:5\n"), cache=False)


def test_interleaved_queries_grouped_stably_with_warning(tmp_path):
    text = "0 qid:3 1:1\n1 qid:1 1:2\n2 qid:3 1:3\n0 qid:1 1:4\n"
    p = write(tmp_path / "inter.txt", text)
    with pytest.warns(UserWarning, match=r"inter\.txt.*not contiguous"):
        d = read_letor(p)
    assert d.qid.tolist() == [3, 3, 1, 1]
    assert d.X[:, 0].tolist() == [1.0, 3.0, 2.0, 4.0]
    assert d.meta["order"].tolist() == [0, 2, 1, 3]
    with pytest.warns(UserWarning, match="not contiguous"):  # the cached copy warns too
        again = read_letor(p)
    assert again.meta["order"].tolist() == [0, 2, 1, 3]


NULL_TEXT = (
    "0 qid:1 1:NULL 2:4\n"
    "1 qid:1 1:-2 2:NULL\n"
    "0 qid:1 1:3 2:6\n"
    "1 qid:2 1:NULL 2:1\n"
    "2 qid:2 1:5 2:2\n"
    "0 qid:3 1:NULL 2:1\n"
)


def test_null_policies(tmp_path):
    p = write(tmp_path / "n.txt", NULL_TEXT)
    with pytest.raises(ValueError, match=r"n\.txt, line 1: feature 1 is NULL \(4 NULL values"):
        read_letor(p, cache=False)
    z = read_letor(p, null_policy="zero", cache=False)
    assert z.X[:, 0].tolist() == [0.0, -2.0, 3.0, 0.0, 5.0, 0.0]
    assert z.X[:, 1].tolist() == [4.0, 0.0, 6.0, 1.0, 2.0, 1.0]
    q = read_letor(p, null_policy="query_min", cache=False)
    # query 1: feature 1 min(-2, 3) = -2, feature 2 min(4, 6) = 4; query 2: min(5) = 5;
    # query 3 has no non-NULL value of feature 1: 0, and counted
    assert q.X[:, 0].tolist() == [-2.0, -2.0, 3.0, 5.0, 5.0, 0.0]
    assert q.X[:, 1].tolist() == [4.0, 4.0, 6.0, 1.0, 2.0, 1.0]
    assert q.meta["n_null"] == 4 and q.meta["null_all_missing"] == 1


def test_query_min_counts_implicit_zero_in_sparse_files(tmp_path):
    # document 2 omits feature 1: its value is 0, which is below the explicit 4
    p = write(tmp_path / "n.txt", "0 qid:1 1:NULL 2:1\n1 qid:1 2:1\n0 qid:1 1:4 2:1\n")
    q = read_letor(p, null_policy="query_min", sparse=True, cache=False)
    assert q.X.toarray()[:, 0].tolist() == [0.0, 0.0, 4.0]
    p2 = write(tmp_path / "m.txt", "0 qid:1 1:NULL 2:1\n1 qid:1 1:7 2:1\n0 qid:1 1:4 2:1\n")
    assert read_letor(p2, null_policy="query_min", cache=False).X[:, 0].tolist() == [4.0, 7.0, 4.0]


@pytest.mark.parametrize(
    "text,line,msg",
    [
        ("1 qid:1 1:1\n0 1:2 2:3\n", 2, "missing 'qid:'"),
        ("1 qid:1 1:1\n1 qid:x 1:2\n", 2, "qid 'x' is not an integer"),
        ("1 qid:1 1:abc\n", 1, "value 'abc' of feature 1 is not a number"),
        ("1 qid:1 1:1 2:1\n\n0 qid:1 0:1\n", 3, "feature index 0 .* indices start at 1"),
        ("1 qid:1 -1:1\n", 1, "feature index -1 .* indices start at 1"),
        ("1 qid:1 1:nan\n", 1, "value 'nan' of feature 1 is NaN or infinite"),
        ("1 qid:1 1:1\n1 qid:1 1:inf\n", 2, "value 'inf' of feature 1 is NaN or infinite"),
        ("1 qid:1 1:1e999\n", 1, "value '1e999' of feature 1 is NaN or infinite"),
        ("0.5 qid:1 1:1\n", 1, "label '0.5' is not an integer"),
        ("high qid:1 1:1\n", 1, "label 'high' is not a number"),
        ("1 qid:1 1:1\nqid:2 1:1\n", 2, "line starts with 'qid:2'.* needs a relevance label before the qid"),
        ("1 qid:1 1:1 junk\n", 1, "token 'junk' is not of the form index:value"),
        ("1 qid:1 1:\n", 1, "token '1:' is not of the form index:value"),
        ("1 qid:1 a:1\n", 1, "feature index 'a'"),
    ],
)
def test_malformed_lines_name_file_line_and_problem(tmp_path, text, line, msg):
    p = write(tmp_path / "bad.txt", text)
    with pytest.raises(ValueError, match=rf"bad\.txt, line {line}: {msg}"):
        read_letor(p, cache=False)


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n  \n"])
def test_empty_file(tmp_path, text):
    with pytest.raises(ValueError, match=r"empty\.txt: no documents"):
        read_letor(write(tmp_path / "empty.txt", text), cache=False)


def test_integer_valued_labels_and_negative_labels_accepted(tmp_path):
    d = read_letor(write(tmp_path / "f.txt", "1.0 qid:1 1:1\n-1 qid:1 1:2\n+2 qid:1 1:3\n"),
                   cache=False)
    assert d.y.tolist() == [1, -1, 2]


def test_bad_options_and_missing_file(tmp_path):
    p = write(tmp_path / "f.txt", SAMPLE)
    with pytest.raises(ValueError, match="null_policy"):
        read_letor(p, null_policy="mean")
    with pytest.raises(ValueError, match="sparse"):
        read_letor(p, sparse="yes")
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        read_letor(tmp_path / "nope.txt")
    with pytest.raises(ValueError, match="cannot decompress"):
        read_letor(_truncated_xz(tmp_path), cache=False)


def _truncated_xz(tmp_path):
    raw = lzma.compress(SAMPLE.encode() * 100)
    p = tmp_path / "trunc.txt.xz"
    p.write_bytes(raw[: len(raw) // 2])
    return p


def test_cache_round_trip_dense_and_sparse(tmp_path):
    cache_dir = tmp_path / "c"
    for text, sparse in ((SAMPLE, None), ("1 qid:1 3:2.0 20000:1.5\n0 qid:2 5:1\n", None)):
        p = write(tmp_path / "f.txt", text)
        first = read_letor(p, sparse=sparse, cache=cache_dir)
        key = cache_key(p.read_bytes(), {"null_policy": "error", "sparse": sparse,
                                         "n_features": None, "max_features": 2**24,
                                         "max_label": 65535},
                        reader_fingerprint())
        assert ParseCache(cache_dir).path(key).is_file()
        second = read_letor(p, sparse=sparse, cache=cache_dir)
        a = first.X.toarray() if sp.issparse(first.X) else first.X
        b = second.X.toarray() if sp.issparse(second.X) else second.X
        assert type(first.X) is type(second.X) and np.array_equal(a, b)
        assert np.array_equal(first.y, second.y) and np.array_equal(first.qid, second.qid)
        assert np.array_equal(first.query_ptr, second.query_ptr)


def test_cache_keyed_by_content_and_options(tmp_path):
    cache_dir = tmp_path / "c"
    p = write(tmp_path / "f.txt", NULL_TEXT)
    assert read_letor(p, null_policy="zero", cache=cache_dir).X[0, 0] == 0.0
    assert read_letor(p, null_policy="query_min", cache=cache_dir).X[0, 0] == -2.0
    write(p, NULL_TEXT.replace("1:-2", "1:-9"))
    assert read_letor(p, null_policy="query_min", cache=cache_dir).X[0, 0] == -9.0


@pytest.mark.parametrize("damage", ["truncate", "garbage", "bitflip", "wrong_arrays"])
def test_corrupt_cache_entry_is_ignored_and_rebuilt(tmp_path, damage):
    cache_dir = tmp_path / "c"
    p = write(tmp_path / "f.txt", SAMPLE)
    read_letor(p, cache=cache_dir)
    entry = next((cache_dir / "parsed").glob("*.npz"))
    raw = entry.read_bytes()
    if damage == "truncate":
        entry.write_bytes(raw[: len(raw) // 2])
    elif damage == "garbage":
        entry.write_bytes(b"\x00" * len(raw))
    elif damage == "bitflip":  # one bit of a stored X value: the zip CRC catches it
        pos = raw.find(np.float64(1.25).tobytes())
        assert pos > 0
        entry.write_bytes(raw[:pos + 7] + bytes([raw[pos + 7] ^ 1]) + raw[pos + 8:])
    else:  # a readable npz whose content contradicts itself
        with np.load(entry) as z:
            arrays = {k: z[k] for k in z.files}
        arrays["query_ptr"] = np.array([0, 1, 3], dtype=np.int64)
        with open(entry, "wb") as fh:
            np.savez(fh, **arrays)
    d = read_letor(p, cache=cache_dir)
    assert np.array_equal(d.X, SAMPLE_X) and d.query_ptr.tolist() == [0, 2, 3]
    assert ParseCache(cache_dir).load(entry.stem) is not None  # rebuilt


def test_cache_env_var_off_disables(tmp_path, monkeypatch):
    monkeypatch.setenv("RANKBENCH_CACHE", "off")
    assert ParseCache.from_setting(True) is None
    monkeypatch.setenv("RANKBENCH_CACHE", str(tmp_path / "x"))
    read_letor(write(tmp_path / "f.txt", SAMPLE))
    assert list((tmp_path / "x" / "parsed").glob("*.npz"))


def test_parse_bytes_directly_and_decompress_file(tmp_path):
    p = write(tmp_path / "f.txt.gz", SAMPLE, "gz")
    X, y, qid, info = parse_letor_bytes(decompress_file(p), p)
    assert np.array_equal(X, SAMPLE_X) and info["lines"].tolist() == [1, 2, 5]


@pytest.mark.parametrize("seed", range(6))
def test_random_sparse_files_equal_sklearn_reader(tmp_path, seed):
    """Fuzz: random formatting (signs, exponents, tabs, comments, blank lines, CRLF) vs sklearn."""
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(int(rng.integers(5, 60))):
        cols = np.sort(rng.choice(np.arange(1, 300), size=int(rng.integers(0, 12)), replace=False))
        toks = []
        for c in cols:
            v = rng.standard_normal() * 10.0 ** int(rng.integers(-8, 8))
            style = int(rng.integers(0, 5))
            text = [f"{v:.6f}", repr(float(v)), f"{v:.3e}", f"{v:+.4E}", str(int(v))][style]
            toks.append(f"{c}:{text}")
        sep = "\t" if rng.random() < 0.2 else " " * int(rng.integers(1, 3))
        line = f"{int(rng.integers(0, 5))}{sep}qid:{i // 4 + 1}{sep}" + sep.join(toks)
        if rng.random() < 0.3:
            line += f" # docid = {i} inc = 1 prob = 0.5"
        lines.append(line)
        if rng.random() < 0.1:
            lines.append("# comment line" if rng.random() < 0.5 else "")
    text = ("\r\n" if seed % 2 else "\n").join(lines) + "\n"
    p = write(tmp_path / "fuzz.txt", text)
    d = read_letor(p, sparse=True, n_features=300, cache=False)
    Xs, ys, qs = load_svmlight_file(io.BytesIO(text.encode()), query_id=True, n_features=300)
    assert (d.X != Xs).nnz == 0
    assert np.array_equal(d.y, ys) and np.array_equal(d.qid, qs)


def test_utf8_byte_order_mark_is_ignored(tmp_path):
    p = tmp_path / "bom.txt"
    p.write_bytes(b"\xef\xbb\xbf" + SAMPLE.encode())
    assert np.array_equal(read_letor(p, cache=False).X, SAMPLE_X)


@pytest.mark.parametrize("compress", ["gz", "bz2", "xz"])
def test_errors_in_compressed_crlf_files_name_the_line(tmp_path, compress):
    p = write(tmp_path / f"bad.txt.{compress}", "1 qid:1 1:1\n# c\n2 qid:1 1:oops\n", compress,
              crlf=True)
    with pytest.raises(ValueError, match=rf"bad\.txt\.{compress}, line 3: value 'oops' of feature 1 "
                                         r"is not a number: '2 qid:1 1:oops'$"):
        read_letor(p, cache=False)


def test_cache_entries_are_retired_when_the_reader_changes(tmp_path, monkeypatch):
    from pathlib import Path

    from rankbench.data import cache as cache_mod
    from rankbench.data.letor import reader as letor_reader

    # every module of the reader package is fingerprinted, whichever job it does
    seen = []
    monkeypatch.setattr(cache_mod, "source_fingerprint", lambda *paths: seen.extend(paths) or "x")
    letor_reader.reader_fingerprint()
    package = Path(letor_reader.__file__).parent
    assert len(list(package.glob("*.py"))) >= 10
    assert {Path(p) for p in seen} >= set(package.glob("*.py"))
    monkeypatch.undo()
    cache_dir = tmp_path / "c"
    p = write(tmp_path / "f.txt", SAMPLE)
    read_letor(p, cache=cache_dir)
    monkeypatch.setattr(letor_reader, "reader_fingerprint", lambda: "an edited parser")
    read_letor(p, cache=cache_dir)
    assert len(list((cache_dir / "parsed").glob("*.npz"))) == 2


@pytest.mark.parametrize("suffix", ["", ".gz", ".xz"])
def test_write_then_read_is_bit_exact(tmp_path, suffix):
    from rankbench.data import RankingData
    from rankbench.data.letor import write_letor

    rng = np.random.default_rng(1)
    X = rng.standard_normal((40, 5)) * 10.0 ** rng.integers(-20, 20, size=(40, 5))
    X[3, 2] = 0.0
    dense = RankingData.from_arrays(X, rng.integers(0, 3, 40), np.repeat([4, 9, 2, 7], 10))
    p = write_letor(dense, tmp_path / f"d.txt{suffix}", comments=[f"docid = {i}" for i in range(40)])
    back = read_letor(p, cache=False)
    assert np.array_equal(back.X, dense.X) and np.array_equal(back.y, dense.y)
    assert np.array_equal(back.qid, dense.qid)
    S = sp.random(30, 500, density=0.02, format="csr", random_state=2)
    sparse = RankingData.from_arrays(S, np.arange(30) % 2, np.arange(30) // 3)
    back = read_letor(write_letor(sparse, tmp_path / f"s.txt{suffix}"), sparse=True,
                      n_features=500, cache=False)
    assert (back.X != sparse.X).nnz == 0 and np.array_equal(back.y, sparse.y)
    assert "1 qid:0 1:0.500" in write_letor(
        RankingData.from_arrays([[0.5]], [1]), tmp_path / "p.txt", precision=3).read_text()


def test_docids_from_letor3_and_letor4_comments(tmp_path):
    text = ("0 qid:1 1:1 #docid = 57950\n"                                     # OHSUMED
            "2 qid:1 1:2 #docid = GX004-93-7097963 inc = 0.0408663831194 prob = 0.0565936\n"  # MQ2008
            "1 qid:1 1:3 #docid=tight\n"
            "1 qid:1 1:4 # other = 1 DocId = upper-case\n")
    d = read_letor(write(tmp_path / "ids.txt", text, crlf=True), cache=False)
    assert d.docids.tolist() == ["57950", "GX004-93-7097963", "tight", "upper-case"]
    assert d.docids.dtype.kind == "U" and d.lines.tolist() == [1, 2, 3, 4]


def test_docids_follow_grouping_of_interleaved_queries(tmp_path):
    text = "1 qid:5 1:1 #docid = a\n0 qid:3 1:2 #docid = b\n2 qid:5 1:3 #docid = c\n"
    with pytest.warns(UserWarning, match="not contiguous"):
        d = read_letor(write(tmp_path / "i.txt", text), cache=False)
    assert d.qid.tolist() == [5, 5, 3] and d.docids.tolist() == ["a", "c", "b"]
    assert d.lines.tolist() == [1, 3, 2] and d.X[:, 0].tolist() == [1.0, 3.0, 2.0]


def test_files_without_docids_get_stable_line_ids(tmp_path):
    text = "# header\n1 qid:1 1:1\n\n0 qid:1 1:2 # a comment without an id\n"
    p = write(tmp_path / "n.txt", text)
    d = read_letor(p, cache=False)
    assert d.docids is None and d.doc_ids().tolist() == ["L2", "L4"]
    assert read_letor(p, cache=tmp_path / "c").doc_ids().tolist() == ["L2", "L4"]
    assert read_letor(p, cache=tmp_path / "c").doc_ids().tolist() == ["L2", "L4"]  # from the cache


def test_partial_docids_are_filled_with_line_ids_and_warned(tmp_path):
    p = write(tmp_path / "p.txt", SAMPLE)
    for cache in (False, tmp_path / "c", tmp_path / "c"):  # parsed, stored, then from the cache
        with pytest.warns(UserWarning, match=r"p\.txt: 1 documents have no '#docid = \.\.\.' comment"):
            d = read_letor(p, cache=cache)
        assert d.docids.tolist() == ["a", "L2", "GX008-86-4444840"]


def test_cache_keeps_docids_and_lines_and_old_format_entries_are_not_used(tmp_path, monkeypatch):
    from rankbench.data import cache as cache_mod

    p = write(tmp_path / "f.txt", "0 qid:2 1:1 #docid = x\n1 qid:1 1:2 #docid = y\n0 qid:2 1:3 #docid = z\n")
    with pytest.warns(UserWarning, match="not contiguous"):
        first = read_letor(p, cache=tmp_path / "c")
    with pytest.warns(UserWarning, match="not contiguous"):
        again = read_letor(p, cache=tmp_path / "c")
    assert again.docids.tolist() == first.docids.tolist() == ["x", "z", "y"]
    assert again.lines.tolist() == [1, 3, 2]
    options = {"null_policy": "error", "sparse": None, "n_features": None, "max_features": 2**24}
    new_key = cache_key(p.read_bytes(), options, reader_fingerprint())
    monkeypatch.setattr(cache_mod, "CACHE_FORMAT", 1)
    assert cache_key(p.read_bytes(), options, reader_fingerprint()) != new_key


def test_write_letor_writes_docids_back_as_letor_comments(tmp_path):
    from rankbench.data.letor import write_letor

    text = "2 qid:1 1:0.5 #docid = GX004-93-7097963 inc = 1\n0 qid:1 1:0.25 #docid = 57950\n"
    d = read_letor(write(tmp_path / "in.txt", text), cache=False)
    out = write_letor(d, tmp_path / "out.txt", comments=["inc = 1", "inc = 0"])
    assert out.read_text().splitlines() == [
        "2 qid:1 1:0.5 #docid = GX004-93-7097963 inc = 1",
        "0 qid:1 1:0.25 #docid = 57950 inc = 0"]
    back = read_letor(out, cache=False)
    assert back.docids.tolist() == d.docids.tolist() and np.array_equal(back.X, d.X)
