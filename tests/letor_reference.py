"""The whole-buffer LETOR reader: the reference the streaming reader (rankbench.data.letor) is checked against.

This was the package's first engine ("buffer"): ``tokenize_letor`` tokenizes the whole
decompressed buffer in one pass into arrays sized by its LF and ':' counts, then trimmed;
numbers the scanner's exact fast path cannot convert go through Python's ``float`` one
token at a time.  It shares only the byte scanner (rankbench.data.letor.scanning) and the
assembly of X (NULLs, width, CSR or dense) with the streaming reader; the line, row and
token bookkeeping, the block handling and the conversion of long numbers are its own.
Both must give the same arrays bit for bit and the same errors
(tests/test_letor_fast_reader.py); a plain-Python reader there checks both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import numba
import numpy as np

from rankbench.data.letor.assemble import MAX_FEATURES, assemble
from rankbench.data.letor.compression import decompress_file
from rankbench.data.letor.docids import docid_finish, docid_raw
from rankbench.data.letor.errors import line_error, line_text
from rankbench.data.letor.parsed import Parsed, row_of
from rankbench.data.letor.reader import check_options, plain_line_ends
from rankbench.data.letor.scanning import (
    ERR_INDEX,
    ERR_LABEL,
    ERR_QID,
    ERR_TOKEN,
    ERR_VALUE,
    POW10,
    docid_value,
    exact_float,
    integer_label,
    is_ws,
    plain_integer,
    scan_number,
)
from rankbench.data.ranking_data import MAX_LABEL


def reference_parse_bytes(data: bytes, path: str | Path = "<bytes>", *, null_policy: str = "error",
                          sparse: bool | None = None, n_features: int | None = None,
                          max_features: int | None = MAX_FEATURES,
                          max_label: int | None = MAX_LABEL) -> tuple[Any, np.ndarray, np.ndarray, dict]:
    """``parse_letor_bytes`` by the whole-buffer engine: (X, y, qid, info) in file order. O(len(data))."""
    check_options(null_policy, n_features, max_features, max_label)
    data = plain_line_ends(data)
    buf = np.frombuffer(data, dtype=np.uint8)
    return assemble(_buffer_parse(data, buf, path), path, null_policy, sparse, n_features,
                    max_features, max_label)


def reference_read(path: str | Path, **kw) -> tuple[Any, np.ndarray, np.ndarray, dict]:
    """``reference_parse_bytes`` of a (possibly compressed) file."""
    return reference_parse_bytes(decompress_file(path), Path(path), **kw)


# not cached: numba's cache would not see an edit of the scanner kernels this one calls
@numba.njit(cache=False)
def tokenize_letor(buf, pow10, labels, qids, lines, docid_span, row_ptr, idx, val, kind):
    """Tokenize a LETOR/SVMlight byte buffer in one O(len(buf)) pass into the given arrays.

    Per document: label, qid, 1-based line number, the byte span of the value of a
    ``docid = VALUE`` comment (-1, -1 when none) and ``row_ptr`` offsets into the
    token arrays; per feature token: 1-based index, value, and ``kind`` (0 a number,
    1 NULL, 2 a number Python must convert).  Arrays must hold one entry per line
    and per ':' of the buffer.  Returns (status, bad_line, n_rows, n_tokens, unsorted):
    status 0 or an _ERR_* code for the first malformed line; unsorted says whether a
    line has non-increasing indices.  Lines end at LF only (the caller normalises
    lone CRs first).
    """
    n = buf.shape[0]
    unsorted = False
    row = 0
    t = 0
    line = 0
    pos = 0
    row_ptr[0] = 0
    while pos < n:
        line += 1
        end = pos
        while end < n and buf[end] != 10:
            end += 1
        cend = pos
        while cend < end and buf[cend] != 35:  # '#' starts a comment
            cend += 1
        i = pos
        pos = end + 1
        while i < cend and is_ws(buf[i]):
            i += 1
        if i >= cend:
            continue  # blank or comment-only line
        a = i
        while i < cend and not is_ws(buf[i]):
            i += 1
        lab_ok, lab = integer_label(buf, a, i)
        if not lab_ok:
            return ERR_LABEL, line, row, t, unsorted
        labels[row] = lab
        while i < cend and is_ws(buf[i]):
            i += 1
        if not (i + 4 <= cend and buf[i] == 113 and buf[i + 1] == 105 and buf[i + 2] == 100
                and buf[i + 3] == 58):  # 'qid:'
            return ERR_QID, line, row, t, unsorted
        i += 4
        a = i
        while i < cend and not is_ws(buf[i]):
            i += 1
        q_ok, q = plain_integer(buf, a, i, True, 18)
        if not q_ok:
            return ERR_QID, line, row, t, unsorted
        qids[row] = q
        lines[row] = line
        if cend < end:
            docid_span[row, 0], docid_span[row, 1] = docid_value(buf, cend + 1, end)
        else:
            docid_span[row, 0], docid_span[row, 1] = -1, -1
        prev = np.int64(0)
        while True:
            while i < cend and is_ws(buf[i]):
                i += 1
            if i >= cend:
                break
            a = i
            colon = -1
            while i < cend and not is_ws(buf[i]):
                if buf[i] == 58 and colon < 0:
                    colon = i
                i += 1
            if colon <= a or colon == i - 1:
                return ERR_TOKEN, line, row, t, unsorted
            k_ok, k = plain_integer(buf, a, colon, False, 10)
            if not k_ok or k <= 0 or k > 2147483647:
                return ERR_INDEX, line, row, t, unsorted
            if k <= prev:
                unsorted = True
            prev = k
            idx[t] = k
            vb = colon + 1
            if (i - vb == 4 and (buf[vb] | 32) == 110 and (buf[vb + 1] | 32) == 117
                    and (buf[vb + 2] | 32) == 108 and (buf[vb + 3] | 32) == 108):  # NULL
                kind[t] = 1
                val[t] = np.nan
            else:
                st, m, e, neg = scan_number(buf, vb, i)
                if st == 1:
                    return ERR_VALUE, line, row, t, unsorted
                ok = False
                v = 0.0
                if st == 0:
                    ok, v = exact_float(m, e, neg, pow10)
                kind[t] = 0 if ok else 2
                val[t] = v
            t += 1
        row += 1
        row_ptr[row] = t
    return 0, 0, row, t, unsorted


class _Tokens(NamedTuple):
    """The tokenizer's output arrays, trimmed to the rows and tokens found."""

    status: int
    bad_line: int
    unsorted: bool
    labels: np.ndarray
    qids: np.ndarray
    lines: np.ndarray
    docid_span: np.ndarray
    row_ptr: np.ndarray
    idx: np.ndarray
    val: np.ndarray
    kind: np.ndarray


def _tokenize(buf: np.ndarray) -> _Tokens:
    """Run ``tokenize_letor`` on ``buf`` with arrays sized by its LF and ':' counts. O(len(buf))."""
    max_rows = int(np.count_nonzero(buf == 10)) + 1
    max_tok = int(np.count_nonzero(buf == 58))
    labels = np.empty(max_rows, dtype=np.int64)
    qids = np.empty(max_rows, dtype=np.int64)
    lines = np.empty(max_rows, dtype=np.int64)
    docid_span = np.empty((max_rows, 2), dtype=np.int64)
    row_ptr = np.empty(max_rows + 1, dtype=np.int64)
    idx = np.empty(max_tok, dtype=np.int32)
    val = np.empty(max_tok, dtype=np.float64)
    kind = np.empty(max_tok, dtype=np.uint8)
    status, bad_line, n, t, unsorted = tokenize_letor(buf, POW10, labels, qids, lines, docid_span,
                                                      row_ptr, idx, val, kind)
    return _Tokens(status, bad_line, unsorted, labels[:n], qids[:n], lines[:n], docid_span[:n],
                   row_ptr[: n + 1], idx[:t], val[:t], kind[:t])


def _buffer_parse(data: bytes, buf: np.ndarray, path) -> Parsed:
    """The single-pass engine: ``tokenize_letor`` over the whole buffer."""
    tok = _tokenize(buf)
    if tok.status != 0:
        raise line_error(path, tok.bad_line, line_text(data, tok.bad_line))
    if tok.labels.shape[0] == 0:
        raise ValueError(f"{path}: no documents (empty file, or only blank and comment lines)")
    slow = np.flatnonzero(tok.kind == 2)
    if slow.size:
        _convert_slow_numbers(data, buf, slow, tok.row_ptr, tok.lines, tok.idx, tok.val, path)
    idx = tok.idx - 1
    raw = docid_raw(buf, tok.docid_span)
    has = tok.docid_span[:, 0] >= 0
    docids = docid_finish(raw, has, tok.lines) if has.any() else None
    return Parsed(tok.labels, tok.qids, tok.lines, tok.row_ptr, idx, tok.val,
                   int(np.count_nonzero(tok.kind == 1)), tok.unsorted, docids,
                   int(np.count_nonzero(~has)))


def _convert_slow_numbers(data, buf, slow, row_ptr, lines, idx, val, path) -> None:
    """Convert with Python's float the numbers the kernel's exact fast path could not."""
    line_start = np.concatenate(([0], np.flatnonzero(buf == 10) + 1))
    for t in slow.tolist():
        r = int(row_of(row_ptr, t))
        line = int(lines[r])
        end = data.find(b"\n", line_start[line - 1])
        text = data[line_start[line - 1]: None if end < 0 else end].split(b"#", 1)[0]
        token = text.split()[2 + t - int(row_ptr[r])]
        v = float(token.partition(b":")[2])
        if not np.isfinite(v):
            raise ValueError(f"{path}, line {line}: value {token.partition(b':')[2].decode()!r} "
                             f"of feature {int(idx[t])} is NaN or infinite")
        val[t] = v
