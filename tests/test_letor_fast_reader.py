"""The streaming LETOR reader against the whole-buffer reference reader (tests/letor_reference.py)
and a plain-Python reader.

Random files (whitespace, comments, exponents, long mantissas, NULLs, CRLF, blank lines,
interleaved qids, unsorted indices) read in tiny blocks so lines cross block boundaries;
values bit-identical to Python's float(); every malformed line gives the same error as the
reference reader; peak memory near the CSR's size; OHSUMED / MQ2008 Fold1 (realdata).
"""

import lzma
import re
import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import require_dataset
from letor_reference import reference_parse_bytes, reference_read
from rankbench.data.letor import (
    parse_letor_bytes,
    parse_letor_file,
    read_letor,
    scanning,
    streaming,
)

_DOCID = re.compile(r"(?<![^ \t])docid[ \t]*=[ \t]*([^ \t]+)", re.IGNORECASE)


def reference_parse(text: bytes, null_fill: float | None = None):
    """Plain Python: (rows as {index: value}, labels, qids, lines, docids or None) of a valid file."""
    text = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n").decode()
    feats, labels, qids, lines, ids = [], [], [], [], []
    for no, line in enumerate(text.split("\n"), 1):
        body, _, comment = line.partition("#")
        tok = body.split()
        if not tok:
            continue
        labels.append(int(float(tok[0])))
        qids.append(int(tok[1][4:]))
        lines.append(no)
        row = {}
        for t in tok[2:]:
            k, _, v = t.partition(":")
            row[int(k)] = null_fill if v.upper() == "NULL" else float(v)
        feats.append(row)
        m = _DOCID.search(comment) if _ else None
        ids.append(m.group(1) if m else None)
    docids = None if all(i is None for i in ids) else [i or f"L{n}" for i, n in zip(ids, lines, strict=True)]
    return feats, labels, qids, lines, docids


def _value(rng) -> str:
    kind = rng.integers(12)
    if kind == 0:
        return repr(float(rng.normal() * 10.0 ** rng.integers(-30, 30)))  # up to 17 digits, exponents
    if kind == 1:
        return "".join(rng.choice(list("0123456789"), rng.integers(18, 26)))  # > 19 digits: Python float
    if kind == 2:
        return f"{rng.integers(1, 10**6)}e{rng.integers(-40, 40)}"
    if kind == 3:
        return f"{rng.choice(['', '+', '-'])}.{rng.integers(0, 999)}"
    if kind == 4:
        return f"{rng.integers(0, 99)}."
    if kind == 5:
        return f"-{rng.integers(0, 3)}.{rng.integers(0, 10**6):06d}E+{rng.integers(0, 5)}"
    if kind == 6:
        return "NULL" if rng.random() < 0.5 else "null"
    if kind == 7:
        return f"000{rng.integers(0, 100)}.50000"
    if kind == 8:
        return rng.choice(["-0", "0", "+0.0", "-0.0e5"])
    return f"{rng.uniform(-5, 5):.{rng.integers(0, 9)}f}"


def random_file(rng, n_lines: int = 60, nulls: bool = True, crlf: bool = False) -> bytes:
    """A valid LETOR file exercising the reader's rules (random layout, interleaved qids)."""
    out = []
    for _ in range(n_lines):
        r = rng.random()
        if r < 0.05:
            out.append(rng.choice(["", "   ", "\t", "# a comment: 1:2 qid:3", "  #docid = not-a-row"]))
            continue
        ws = lambda: "".join(rng.choice([" ", "\t"], rng.integers(1, 3)))  # noqa: E731
        label = rng.choice(["0", "1", "2", "1.0", "-1", "+2", "3e0"])
        parts = [label, f"qid:{rng.integers(1, 6)}"]
        k = rng.integers(0, 12)
        idx = np.sort(rng.choice(np.arange(1, 40), size=k, replace=False))
        if rng.random() < 0.2:
            rng.shuffle(idx)
        for j in idx:
            v = _value(rng)
            if not nulls and v.upper() == "NULL":
                v = "0.25"
            parts.append(f"{j}:{v}")
        line = (" " * int(rng.integers(0, 2))) + ws().join(parts) + (" " * int(rng.integers(0, 3)))
        c = rng.random()
        if c < 0.6:
            line += rng.choice(["#docid = ", "# docid=", " #DocId =\t", "#x docid = "]) + f"D{rng.integers(10**6)}"
            line += rng.choice(["", " inc = 1 prob = 0.5", " docid = second"])
        elif c < 0.7:
            line += " # no id here, 7:8"
        out.append(line)
    end = "\r\n" if crlf else "\n"
    text = end.join(out) + (end if rng.random() < 0.7 else "")
    return text.encode()


def _same(a, b):
    """Outputs of parse_letor_bytes / parse_letor_file are identical (arrays bit for bit)."""
    Xa, ya, qa, ia = a
    Xb, yb, qb, ib = b
    assert type(Xa) is type(Xb)
    if sp.issparse(Xa):
        assert Xa.shape == Xb.shape and Xa.indices.dtype == Xb.indices.dtype
        assert np.array_equal(Xa.indptr, Xb.indptr) and np.array_equal(Xa.indices, Xb.indices)
        assert np.array_equal(Xa.data.view(np.uint64), Xb.data.view(np.uint64))
    else:
        assert Xa.shape == Xb.shape and np.array_equal(Xa.view(np.uint64), Xb.view(np.uint64))
    assert ya.dtype == yb.dtype == qa.dtype == qb.dtype == np.int64
    assert np.array_equal(ya, yb) and np.array_equal(qa, qb)
    assert set(ia) == set(ib)
    for key in ia:
        if isinstance(ia[key], np.ndarray) or isinstance(ib[key], np.ndarray):
            assert (ia[key] is None) == (ib[key] is None), key
            if ia[key] is not None:
                assert ia[key].tolist() == ib[key].tolist(), key
        else:
            assert ia[key] == ib[key], key


def _all_engines(raw: bytes, tmp_path, **kw):
    """(reference reader, stream on bytes in 61-byte blocks, stream on the file in 53-byte blocks)."""
    p = tmp_path / "f.txt"
    p.write_bytes(raw)
    old = reference_parse_bytes(raw, p, **kw)
    mp = pytest.MonkeyPatch()
    mp.setattr(streaming, "STREAM_BLOCK", 61)
    try:
        mem = parse_letor_bytes(raw, p, **kw)
    finally:
        mp.undo()
    return old, mem, parse_letor_file(p, block=53, **kw)


@pytest.mark.parametrize("seed", range(40))
def test_random_files_equal_the_reference_reader_and_plain_python(seed, tmp_path):
    rng = np.random.default_rng(seed)
    raw = random_file(rng, crlf=seed % 4 == 3)
    if seed % 10 == 7:
        raw = b"\xef\xbb\xbf" + raw
    policy = ("zero", "query_min")[seed % 2]
    for sparse in (None, True):
        old, mem, fil = _all_engines(raw, tmp_path, null_policy=policy, sparse=sparse)
        _same(old, mem)
        _same(old, fil)
    if policy == "zero":  # the plain-Python reading of the same bytes
        feats, labels, qids, lines, docids = reference_parse(raw.removeprefix(b"\xef\xbb\xbf"), 0.0)
        X, y, q, info = fil  # CSR (sparse=True): compare its entries, -0.0 included
        rows = [sorted(r.items()) for r in feats]
        assert X.indptr.tolist() == np.cumsum([0] + [len(r) for r in rows]).tolist()
        assert X.indices.tolist() == [k - 1 for r in rows for k, _ in r]
        expect = np.array([v for r in rows for _, v in r], dtype=np.float64)
        assert np.array_equal(X.data.view(np.uint64), expect.view(np.uint64))
        assert y.tolist() == labels and q.tolist() == qids and info["lines"].tolist() == lines
        assert (info["docids"] is None and docids is None) or info["docids"].tolist() == docids


def test_lone_cr_mixed_line_ends_and_no_final_newline(tmp_path):
    raw = b"1 qid:1 1:0.5 #docid = a\r2 qid:1 2:1e-3\r\n\n0 qid:2 1:-7 #docid = c\r0 qid:2 3:4"
    old, mem, fil = _all_engines(raw, tmp_path)
    _same(old, mem)
    _same(old, fil)
    assert fil[3]["lines"].tolist() == [1, 2, 4, 5]
    assert fil[3]["docids"].tolist() == ["a", "L2", "c", "L5"]


def test_a_line_longer_than_the_block(tmp_path):
    feats = " ".join(f"{j}:{j / 7!r}" for j in range(1, 400))
    raw = f"1 qid:1 {feats} #docid = long\n0 qid:1 5:1\n2 qid:2 {feats}".encode()
    old, mem, fil = _all_engines(raw, tmp_path)
    _same(old, fil)
    _same(old, mem)
    assert fil[0].shape == (3, 399) and fil[0][0, 398] == 399 / 7


def test_values_bit_identical_to_python_float(tmp_path):
    rng = np.random.default_rng(5)
    toks = []
    for _ in range(20000):
        digits = "".join(rng.choice(list("0123456789"), rng.integers(1, 24)))
        cut = int(rng.integers(0, len(digits) + 1))
        mant = digits[:cut] + ("." + digits[cut:] if rng.random() < 0.7 else digits[cut:])
        exp = f"{rng.choice(['e', 'E'])}{rng.choice(['', '+', '-'])}{rng.integers(0, 280)}" if rng.random() < 0.5 else ""
        toks.append(rng.choice(["", "-", "+"]) + mant + exp)
    toks += [repr(float(v)) for v in rng.normal(size=2000) * 10.0 ** rng.integers(-300, 300, 2000)]
    toks += ["9007199254740993", "9007199254740992", "1e22", "1e23", "4.9e-324", "2.2250738585072011e-308",
             "0.1", "0.30000000000000004", "123456789012345678901234567890e-10", "1e-22", "8.98846567431158e307"]
    lines = ["0 qid:1 " + " ".join(f"{j + 1}:{t}" for j, t in enumerate(toks[i:i + 100]))
             for i in range(0, len(toks), 100)]
    raw = ("\n".join(lines) + "\n").encode()
    p = tmp_path / "f.txt"
    p.write_bytes(raw)
    X = parse_letor_file(p, sparse=True, block=4096)[0]
    expect = np.array([float(t) for t in toks])
    assert np.array_equal(X.data.view(np.uint64), expect.view(np.uint64))
    _same(reference_parse_bytes(raw, p, sparse=True), parse_letor_file(p, sparse=True))


BAD_LINES = [
    "x qid:1 1:1", "1 1:1", "qid:1 1:1", "1.5 qid:1 1:1", "1 qid:a 1:1", "1 qid:1234567890123456789 1:1",
    "1 qid:1 junk", "1 qid:1 0:1", "1 qid:1 a:1", "1 qid:1 1:", "1 qid:1 :1", "1 qid:1 1:abc",
    "1 qid:1 1:nan", "1 qid:1 1:inf", "1 qid:1 1:1e400", "1 qid:1 1:1 1:2", "1 qid:1 2:1 1:2 2:3",
    "1 qid:1 1:NULL", "1 qid:1 99999999999:1", "1 qid:1 1:1.5.5", "1 qid:1 1:1e", "1 qid:1 1:1e+",
    "1 qid:1 1:--1", "1 qid:1 3:1 4:2:3", "1 qid:1 1:0x10", "1 qid:1 1:1,5", "1 qid:1 +1:2",
    "1 qid:1 30000000:1", "1 qid:1 00000000001:1", "1 qid:1 1:1e5x", "1 qid:1 1:.", "1 qid:1 1:-.e1",
    "1 qid:1 2147483648:1", "1 qid:1 1:" + "9" * 400 + "e400", "1 qid:1 1::2", "1 qid:1 1:1#x 2:2",
]


@pytest.mark.parametrize("bad", BAD_LINES)
def test_malformed_line_gives_the_reference_readers_error(bad, tmp_path):
    rng = np.random.default_rng(len(bad))
    good = random_file(rng, n_lines=40, nulls=False).decode().split("\n")
    for at in (0, 17, len(good) - 1):
        lines = list(good)
        lines.insert(at, bad)
        raw = "\n".join(lines).encode()
        p = tmp_path / "f.txt"
        p.write_bytes(raw)
        outcomes = []
        for run, kw in ((reference_parse_bytes, {"data": raw}),
                        (parse_letor_bytes, {"data": raw}),
                        (parse_letor_file, {"block": 57}),
                        (read_letor, {"cache": False})):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out = run(path=p, **kw)
                outcomes.append(("ok", out[0].shape if isinstance(out, tuple) else out.X.shape))
            except ValueError as exc:
                outcomes.append(("error", str(exc)))
        assert outcomes[0][0] == "error" or bad.endswith(("1:1#x 2:2",)), outcomes[0]
        assert outcomes[1] == outcomes[0] and outcomes[2] == outcomes[0], outcomes
        if outcomes[0][0] == "error":
            assert outcomes[3] == outcomes[0]
            assert f"{p}, line {at + 1}: " in outcomes[0][1] or "NULL" in outcomes[0][1]


def test_a_bad_number_is_reported_after_an_earlier_line_would_be(tmp_path):
    # the reference reader converts long numbers after tokenizing: a malformed later line wins
    raw = b"1 qid:1 1:1e400\n" + b"1 qid:1 1:0.5\n" * 50 + b"1 qid:1 1:x\n"
    p = tmp_path / "f.txt"
    p.write_bytes(raw)
    with pytest.raises(ValueError, match=r"line 52: value 'x' of feature 1 is not a number"):
        parse_letor_file(p, block=64)
    with pytest.raises(ValueError, match=r"line 52: value 'x' of feature 1 is not a number"):
        reference_parse_bytes(raw, p)


@pytest.mark.parametrize("token", list(np.random.default_rng(11).choice(
    list("0123456789.eE+-x:N "), size=(600, 6)).tolist()))
def test_fuzzed_value_tokens_accepted_and_rejected_alike(token, tmp_path):
    raw = ("1 qid:1 3:" + "".join(token) + "\n").encode()
    res = []
    for parse in (reference_parse_bytes, parse_letor_bytes):
        try:
            X = parse(raw, null_policy="zero", sparse=True)[0]
            res.append(X.data.view(np.uint64).tolist() + X.indices.tolist())
        except ValueError as exc:
            res.append(str(exc))
    assert res[0] == res[1]


def _peak(fn):
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_peak_memory_near_the_csr(tmp_path):
    rng = np.random.default_rng(0)
    n, k = 6000, 75
    lines = []
    for i in range(n):
        idx = np.sort(rng.choice(20000, size=k, replace=False)) + 1
        vals = rng.uniform(-10, 10, k).round(6)
        lines.append(f"{i % 5} qid:{i // 50} " + " ".join(f"{j}:{v}" for j, v in zip(idx, vals, strict=True)))
    p = tmp_path / "big.txt"
    p.write_text("\n".join(lines) + "\n")
    tiny = tmp_path / "tiny.txt"
    tiny.write_text("1 qid:1 1:1 #docid = a\n")
    read_letor(tiny, cache=False)  # load the kernels first: compilation is not the reader's memory
    reference_read(tiny)
    d, peak_stream = _peak(lambda: read_letor(p, cache=False))
    X = d.X
    csr = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    # the CSR, one 4 MiB block, and O(n) per-document arrays: far below the whole-buffer reader
    assert peak_stream <= csr + (1 << 22) + 64 * n + (1 << 20), (peak_stream, csr)
    ref, peak_buffer = _peak(lambda: reference_read(p))
    assert peak_buffer > 2.5 * csr, (peak_buffer, csr)  # the file, the trimmed arrays, the 0-based copy
    assert np.array_equal(X.data, ref[0].data) and np.array_equal(X.indices, ref[0].indices)


@pytest.mark.realdata
@pytest.mark.parametrize(("name", "sub", "fname"), [
    ("ohsumed", "OHSUMED/QueryLevelNorm/Fold1", "train.txt.xz"),
    ("ohsumed_null", "OHSUMED/Feature-null/Fold1", "trainingset.txt.xz"),
    ("mq2008", "MQ2008/Fold1", "train.txt.xz"),
    ("mq2008_test", "MQ2008/Fold1", "test.txt.xz"),
])
def test_real_fold1_equal_to_the_reference_reader(name, sub, fname, data_root, tmp_path):
    src = require_dataset(data_root, sub) / fname
    if not src.is_file():
        pytest.skip(f"{src} not present")
    raw = lzma.decompress(src.read_bytes())
    kw = {"null_policy": "query_min"} if "null" in name else {}
    old, mem, fil = _all_engines(raw, tmp_path, **kw) if len(raw) < 400_000 else (
        reference_parse_bytes(raw, src, **kw), parse_letor_bytes(raw, src, **kw),
        parse_letor_file(_write(tmp_path, raw), block=1 << 16, **kw))
    _same(old, mem)
    _same(old, fil)
    if name.startswith("mq2008"):
        assert fil[3]["docids"] is not None and fil[3]["docids_missing"] == 0
    a = read_letor(src, cache=False, **kw)  # the compressed file through read_letor
    Xb, yb, qb, ib = reference_read(src, **kw)
    assert a.meta["order"] is None  # LETOR's files keep a query's documents together
    assert np.array_equal(a.X, Xb) and np.array_equal(a.y, yb) and np.array_equal(a.qid, qb)
    assert (a.docids is None) == (ib["docids"] is None)
    assert a.docids is None or a.docids.tolist() == ib["docids"].tolist()


def _write(tmp_path, raw):
    p = tmp_path / "plain.txt"
    p.write_bytes(raw)
    return p


def test_bench_sparse_file_generator_and_subprocess_peak(tmp_path):
    from rankbench.bench.data import read_in_subprocess, write_sparse_letor

    small = write_sparse_letor(tmp_path / "small.txt", 250, nnz=7, n_features=70, docs_per_query=10)
    feats, labels, qids, lines, docids = reference_parse(small.read_bytes())
    d = read_letor(small, cache=False)
    assert d.n_docs == 250 and d.X.nnz == 250 * 7 and docids is None
    assert d.y.tolist() == labels and d.qid.tolist() == qids == [i // 10 + 1 for i in range(250)]
    assert d.X.indices.tolist() == [k - 1 for r in feats for k in sorted(r)]
    assert np.array_equal(d.X.data, [r[k] for r in feats for k in sorted(r)])
    big = write_sparse_letor(tmp_path / "big.txt", 20_000)
    stream = read_in_subprocess(big)
    assert stream["csr_bytes"] == 20_000 * 75 * 12 + 20_001 * 4
    # peak RSS growth: the CSR plus one 4 MiB block (the whole-buffer reader's is above 2.5 x
    # the CSR: test_peak_memory_near_the_csr)
    assert 0.9 < stream["peak_bytes"] / stream["csr_bytes"] < 1.5, stream


@pytest.mark.parametrize("raw", [b"\xef\xbb\xbfx qid:1 1:1\r\n1 qid:1 1:2\r\n",
                                 b"1 qid:1 1:2\r\n1 qid:1 1:\xff\xfe\r\n",
                                 b"\xef\xbb\xbf1 qid:1 1:1e400\r\n",
                                 b"1 qid:1 1:2\r\n\r\n  \t\r\n#c\r\n1 qid:1 5:1 5:2\r\n"])
def test_errors_with_bom_crlf_and_bytes_that_are_not_utf8(raw, tmp_path):
    p = tmp_path / "e.txt"
    p.write_bytes(raw)
    with pytest.raises(ValueError) as old:
        reference_parse_bytes(raw, p)
    with pytest.raises(ValueError) as new:
        parse_letor_file(p, block=8)
    assert str(new.value) == str(old.value) and f"{p}, line " in str(old.value)


@pytest.mark.parametrize("seed", range(30))
def test_count_pass_gives_the_rows_and_tokens_of_plain_python(seed):
    rng = np.random.default_rng(100 + seed)
    raw = random_file(rng, n_lines=int(rng.integers(0, 30)), crlf=seed % 3 == 0)
    feats = reference_parse(raw)[0]
    rows, toks, lone_cr = scanning.count_letor(np.frombuffer(raw, np.uint8), scanning._COUNT_CLASS)
    assert (rows, toks, lone_cr) == (len(feats), sum(len(r) for r in feats), False)
    cr = raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r", 1)
    assert scanning.count_letor(np.frombuffer(cr, np.uint8), scanning._COUNT_CLASS)[2] == (b"\r" in cr)


@pytest.mark.parametrize("room", [1, 2, 50])
def test_many_long_numbers_in_a_block_run_it_again_with_more_room(room, tmp_path, monkeypatch):
    rng = np.random.default_rng(room)
    lines = [f"{i % 3} qid:{i // 4} " + " ".join(f"{j}:{v!r}" for j, v in enumerate((rng.normal(size=9) / 3).tolist(), 1))
             + " #docid = d" + str(i) for i in range(60)]
    raw = ("\n".join(lines) + "\n").encode()
    monkeypatch.setattr(streaming, "_SLOW_SPANS", room)
    old, mem, fil = _all_engines(raw, tmp_path, sparse=True)
    _same(old, mem)
    _same(old, fil)
    expect = [float(t.partition(":")[2]) for ln in lines for t in ln.split("#")[0].split()[2:]]
    assert np.array_equal(fil[0].data, expect) and fil[3]["docids"][-1] == "d59"
