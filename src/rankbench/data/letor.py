"""Reader for LETOR / SVMlight-with-qid files: ``label qid:Q i:v ... # comment``.

Two engines, same output and errors.  "stream" (the default): numba kernels read the
bytes in blocks of about 4 MiB, each ending after a LF -- ``count_letor`` counts rows and
``index:value`` tokens, the CSR arrays (int32 0-based indices, float64 values) are
allocated once at that size, and ``fill_letor`` fills them reading each byte once on the
common path; an uncompressed file is read from disk twice and never held whole.
"buffer" (the earlier reader, kept as a reference): ``tokenize_letor`` over the whole
buffer with arrays sized by its LF and ':' counts.  A kernel only *detects* a malformed
line; the message (file, line, problem) is built in Python by re-reading that one line,
so the kernels stay small and the error text stays precise.

Numbers are parsed exactly: a decimal with at most 19 significant digits whose value
is ``m * 10**e`` with ``m <= 2**53`` and ``|e| <= 22`` is converted with one correctly
rounded IEEE operation (Clinger's fast path), which equals ``float(text)``.  Any other
number (very long mantissa such as the 17 digits of ``repr``, large exponent) is converted
by Python's ``float`` (buffer engine, one token at a time) or, in the stream engine, by
NumPy's correctly rounded bytes-to-float64 cast over all such numbers of a block at once
(tests compare both bit for bit with ``float``).
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

import numba
import numpy as np
import scipy.sparse as sp

from rankbench.data import cache as parse_cache
from rankbench.data import ranking_data
from rankbench.data.ranking_data import RankingData

NULL_POLICIES = ("error", "zero", "query_min")

# A file is stored as CSR when it is wide or mostly empty; dense otherwise.
SPARSE_MIN_WIDTH = 10_000
SPARSE_MAX_DENSITY = 0.25
DENSE_MAX_BYTES = 1 << 30
# Widest file read_letor accepts by default: 2**24 features keep one float64 weight
# vector at 128 MiB; a stray index such as 1000000000:0.5 would make every d-sized
# vector of a solver 8 GB.  Override with max_features=None or a larger limit.
MAX_FEATURES = 1 << 24

# Kernel status codes (0 = ok); the Python side turns them into messages.
_ERR_LABEL = 1
_ERR_QID = 2
_ERR_TOKEN = 3
_ERR_INDEX = 4
_ERR_VALUE = 5

_POW10 = np.array([10.0**k for k in range(23)], dtype=np.float64)


def decompress_file(path: str | Path) -> bytes:
    """The bytes of ``path``, transparently decompressing gzip, bzip2 or xz (detected by magic bytes)."""
    raw = Path(path).read_bytes()
    return decompress_bytes(raw, path)


def decompress_bytes(raw: bytes, path: str | Path = "<bytes>") -> bytes:
    """Decompress ``raw`` when it starts with a gzip, bzip2 or xz header; return it unchanged otherwise."""
    try:
        if raw[:2] == b"\x1f\x8b":
            return gzip.decompress(raw)
        if raw[:3] == b"BZh":
            return bz2.decompress(raw)
        if raw[:6] == b"\xfd7zXZ\x00":
            return lzma.decompress(raw)
    except (OSError, EOFError, lzma.LZMAError, ValueError) as exc:
        raise ValueError(f"{path}: cannot decompress ({exc})") from exc
    return raw


@numba.njit(cache=True, inline="always")
def _scan_number_from(buf, a, n):
    """Scan a decimal from buf[a] up to the first byte outside the number's grammar (or n).

    Returns (status, mantissa, exp10, negative, end).  status 0: ok; 1: not a number (no
    mantissa digit, or an exponent mark without digits); 2: a number with more than 19
    significant digits.  The caller checks that ``end`` ends the token.  Inlined into its
    callers (``_scan_number`` and ``fill_letor``'s hot path) at numba IR level.
    """
    neg = False
    i = a
    if i < n and (buf[i] == 45 or buf[i] == 43):  # '-' '+'
        neg = buf[i] == 45
        i += 1
    m = np.uint64(0)
    e = 0
    nd = 0  # significant digits in m
    seen = False
    too_long = False
    while i < n and 48 <= buf[i] <= 57:
        seen = True
        d = buf[i] - 48
        if nd < 19:
            if m != 0 or d != 0:
                m = m * np.uint64(10) + np.uint64(d)
                nd += 1
        else:
            too_long = True
        if too_long:
            e += 1
        i += 1
    if i < n and buf[i] == 46:  # '.'
        i += 1
        while i < n and 48 <= buf[i] <= 57:
            seen = True
            d = buf[i] - 48
            if nd < 19:
                if m != 0 or d != 0:
                    m = m * np.uint64(10) + np.uint64(d)
                    nd += 1
                e -= 1
            elif d != 0:
                too_long = True
            i += 1
    if not seen:
        return 1, m, 0, neg, i
    if i < n and (buf[i] == 101 or buf[i] == 69):  # 'e' 'E'
        i += 1
        eneg = False
        if i < n and (buf[i] == 45 or buf[i] == 43):
            eneg = buf[i] == 45
            i += 1
        x = 0
        xd = 0
        while i < n and 48 <= buf[i] <= 57:
            if x < 100000:
                x = x * 10 + (buf[i] - 48)
            xd += 1
            i += 1
        if xd == 0:
            return 1, m, 0, neg, i
        e += -x if eneg else x
    if too_long:
        return 2, m, e, neg, i
    return 0, m, e, neg, i


@numba.njit(cache=True)
def _scan_number(buf, a, b):
    """Parse buf[a:b] as a decimal; returns (status, mantissa, exp10, negative).

    status 0: ok; 1: not a number; 2: a number with more than 19 significant digits.
    """
    st, m, e, neg, end = _scan_number_from(buf, a, b)
    if end != b:  # bytes after the number (st == 1 already has e == 0)
        return 1, m, 0, neg
    return st, m, e, neg


@numba.njit(cache=True)
def _exact_float(m, e, neg, pow10):
    """(ok, value): m * 10**e when one correctly rounded operation gives it exactly."""
    if m == 0:
        return True, -0.0 if neg else 0.0
    if m > np.uint64(9007199254740992) or e > 22 or e < -22:
        return False, 0.0
    v = float(m)
    v = v * pow10[e] if e >= 0 else v / pow10[-e]
    return True, -v if neg else v


@numba.njit(cache=True)
def _is_ws(c):
    return c == 32 or c == 9 or c == 13 or c == 11 or c == 12


@numba.njit(cache=True)
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
        while i < cend and _is_ws(buf[i]):
            i += 1
        if i >= cend:
            continue  # blank or comment-only line
        a = i
        while i < cend and not _is_ws(buf[i]):
            i += 1
        lab_ok, lab = _integer_label(buf, a, i)
        if not lab_ok:
            return _ERR_LABEL, line, row, t, unsorted
        labels[row] = lab
        while i < cend and _is_ws(buf[i]):
            i += 1
        if not (i + 4 <= cend and buf[i] == 113 and buf[i + 1] == 105 and buf[i + 2] == 100
                and buf[i + 3] == 58):  # 'qid:'
            return _ERR_QID, line, row, t, unsorted
        i += 4
        a = i
        while i < cend and not _is_ws(buf[i]):
            i += 1
        q_ok, q = _plain_integer(buf, a, i, True, 18)
        if not q_ok:
            return _ERR_QID, line, row, t, unsorted
        qids[row] = q
        lines[row] = line
        if cend < end:
            docid_span[row, 0], docid_span[row, 1] = _docid_value(buf, cend + 1, end)
        else:
            docid_span[row, 0], docid_span[row, 1] = -1, -1
        prev = np.int64(0)
        while True:
            while i < cend and _is_ws(buf[i]):
                i += 1
            if i >= cend:
                break
            a = i
            colon = -1
            while i < cend and not _is_ws(buf[i]):
                if buf[i] == 58 and colon < 0:
                    colon = i
                i += 1
            if colon <= a or colon == i - 1:
                return _ERR_TOKEN, line, row, t, unsorted
            k_ok, k = _plain_integer(buf, a, colon, False, 10)
            if not k_ok or k <= 0 or k > 2147483647:
                return _ERR_INDEX, line, row, t, unsorted
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
                st, m, e, neg = _scan_number(buf, vb, i)
                if st == 1:
                    return _ERR_VALUE, line, row, t, unsorted
                ok = False
                v = 0.0
                if st == 0:
                    ok, v = _exact_float(m, e, neg, pow10)
                kind[t] = 0 if ok else 2
                val[t] = v
            t += 1
        row += 1
        row_ptr[row] = t
    return 0, 0, row, t, unsorted


# --- streaming engine: two passes over the file in blocks, the CSR arrays allocated once ---

_ERR_CHANGED = 6  # more rows or tokens than the counting pass found (the file changed)
_SLOW_FULL = 7  # slow_span is full: the caller gives a larger one and runs the block again
_SLOW_SPANS = 4096  # room for numbers left to Python's rules in a block, before the first overflow
STREAM_BLOCK = 1 << 22  # bytes per block of the streaming engine (a block ends after a LF)
ENGINES = ("stream", "buffer")

# count_letor's byte table: 1 for ':', 2 for the bytes that need a look (LF, '#', CR), 0 else
_COUNT_CLASS = np.zeros(256, dtype=np.uint8)
_COUNT_CLASS[58] = 1
_COUNT_CLASS[[10, 35, 13]] = 2


@numba.njit(cache=True)
def _has_content(buf, a, b):
    """Whether buf[a:b] holds a byte that is not blank."""
    for j in range(a, b):
        if not _is_ws(buf[j]):
            return True
    return False


@numba.njit(cache=True)
def count_letor(buf, cls):
    """(rows, tokens, lone_cr) of a LETOR byte block in one pass; ``cls`` is ``_COUNT_CLASS``. O(len(buf)).

    rows: lines with a non-blank byte before any ``#``; tokens: per such line the ``:``
    before the ``#`` minus one (the qid's), at least 0 -- exact for well-formed lines and
    never below what ``fill_letor`` writes for a line; lone_cr: a CR not followed by LF.
    The common byte costs one table look-up and an add; a line without ':' (blank,
    comment-only or malformed) is re-read to see whether it holds anything.
    """
    n = buf.shape[0]
    rows = 0
    toks = 0
    lone_cr = False
    colons = 0
    start = 0  # the current line's first byte
    i = 0
    while i < n:
        v = cls[buf[i]]
        if v != 2:
            colons += v
            i += 1
            continue
        c = buf[i]
        if c == 13:  # CR: blank unless alone
            if i + 1 >= n or buf[i + 1] != 10:
                lone_cr = True
            i += 1
            continue
        cend = i
        if c == 35:  # '#': skip the comment up to its LF
            while i + 1 < n and buf[i + 1] != 10:
                i += 1
                if buf[i] == 13 and (i + 1 >= n or buf[i + 1] != 10):
                    lone_cr = True
            i += 1
        if colons > 0:  # the line start:cend ends at buf[i] (LF) or at the end of the block
            rows += 1
            toks += colons - 1
        elif _has_content(buf, start, cend):
            rows += 1
        colons = 0
        i += 1
        start = i
    if start < n:  # a last line without LF
        if colons > 0:
            rows += 1
            toks += colons - 1
        elif _has_content(buf, start, n):
            rows += 1
    return rows, toks, lone_cr


@numba.njit(cache=True)
def _is_stop(c):
    """Whether byte c ends a token: blank, LF or '#'."""
    return c == 32 or c == 10 or c == 35 or c == 9 or c == 13 or c == 11 or c == 12


@numba.njit(cache=True)
def fill_letor(buf, pow10, line, row, t, labels, qids, lines, docid_span, row_ptr, idx, val, slow_span):
    """Tokenize one LETOR byte block into the preallocated CSR arrays, from row ``row`` and token ``t``.

    Accepts and rejects exactly the lines ``tokenize_letor`` does, reading each byte once
    on the common path (``index:value`` with a plain index and a plain decimal; any other
    token goes through ``tokenize_letor``'s checks).  Indices are stored 0-based (the
    CSR's), a NULL value as NaN and a number the exact fast path cannot convert as +inf
    with its byte span in ``slow_span`` (the caller converts those as Python's float
    does); ``line`` is the number of lines before the block and ``docid_span`` is
    indexed by the block's own rows.
    Returns (status, bad_line, row, t, line, unsorted, n_null, n_slow).  O(len(buf)).
    """
    n = buf.shape[0]
    r0 = row
    max_rows = labels.shape[0]
    max_tok = idx.shape[0]
    unsorted = False
    n_null = 0
    n_slow = 0
    i = 0
    while i < n:
        line += 1
        while i < n and _is_ws(buf[i]):
            i += 1
        if i >= n or buf[i] == 10 or buf[i] == 35:  # blank or comment-only line
            while i < n and buf[i] != 10:
                i += 1
            i += 1
            continue
        if row >= max_rows or row - r0 >= docid_span.shape[0]:
            return _ERR_CHANGED, line, row, t, line, unsorted, n_null, n_slow
        a = i
        while i < n and not _is_stop(buf[i]):
            i += 1
        lab_ok, lab = _integer_label(buf, a, i)
        if not lab_ok:
            return _ERR_LABEL, line, row, t, line, unsorted, n_null, n_slow
        labels[row] = lab
        while i < n and _is_ws(buf[i]):
            i += 1
        if not (i + 4 <= n and buf[i] == 113 and buf[i + 1] == 105 and buf[i + 2] == 100
                and buf[i + 3] == 58):  # 'qid:'
            return _ERR_QID, line, row, t, line, unsorted, n_null, n_slow
        i += 4
        a = i
        while i < n and not _is_stop(buf[i]):
            i += 1
        q_ok, q = _plain_integer(buf, a, i, True, 18)
        if not q_ok:
            return _ERR_QID, line, row, t, line, unsorted, n_null, n_slow
        qids[row] = q
        lines[row] = line
        prev = np.int64(0)
        while True:
            while i < n and _is_ws(buf[i]):
                i += 1
            if i >= n or buf[i] == 10 or buf[i] == 35:
                break
            a = i
            k = np.int64(0)
            v = 0.0
            while i < n and 48 <= buf[i] <= 57 and i - a < 11:
                k = k * 10 + (buf[i] - 48)
                i += 1
            done = False
            if 0 < i - a <= 10 and i < n and buf[i] == 58 and 0 < k <= 2147483647:
                st, m, e, neg, j = _scan_number_from(buf, i + 1, n)
                if st != 1 and (j >= n or _is_stop(buf[j])):
                    ok = False
                    if st == 0:
                        ok, v = _exact_float(m, e, neg, pow10)
                    if not ok:
                        if n_slow >= slow_span.shape[0]:
                            return _SLOW_FULL, line, row, t, line, unsorted, n_null, n_slow
                        slow_span[n_slow, 0], slow_span[n_slow, 1] = i + 1, j
                        v = np.inf
                        n_slow += 1
                    i = j
                    done = True
            if not done:  # the general rules of tokenize_letor
                i = a
                colon = -1
                while i < n and not _is_stop(buf[i]):
                    if buf[i] == 58 and colon < 0:
                        colon = i
                    i += 1
                if colon <= a or colon == i - 1:
                    return _ERR_TOKEN, line, row, t, line, unsorted, n_null, n_slow
                k_ok, k = _plain_integer(buf, a, colon, False, 10)
                if not k_ok or k <= 0 or k > 2147483647:
                    return _ERR_INDEX, line, row, t, line, unsorted, n_null, n_slow
                vb = colon + 1
                if (i - vb == 4 and (buf[vb] | 32) == 110 and (buf[vb + 1] | 32) == 117
                        and (buf[vb + 2] | 32) == 108 and (buf[vb + 3] | 32) == 108):  # NULL
                    v = np.nan
                    n_null += 1
                else:
                    st, m, e, neg = _scan_number(buf, vb, i)
                    if st == 1:
                        return _ERR_VALUE, line, row, t, line, unsorted, n_null, n_slow
                    ok = False
                    if st == 0:
                        ok, v = _exact_float(m, e, neg, pow10)
                    if not ok:
                        if n_slow >= slow_span.shape[0]:
                            return _SLOW_FULL, line, row, t, line, unsorted, n_null, n_slow
                        slow_span[n_slow, 0], slow_span[n_slow, 1] = vb, i
                        v = np.inf
                        n_slow += 1
            if t >= max_tok:
                return _ERR_CHANGED, line, row, t, line, unsorted, n_null, n_slow
            val[t] = v
            if k <= prev:
                unsorted = True
            prev = k
            idx[t] = k - 1
            t += 1
        a = i
        while i < n and buf[i] != 10:
            i += 1
        if a < i and buf[a] == 35:  # a comment: its docid
            docid_span[row - r0, 0], docid_span[row - r0, 1] = _docid_value(buf, a + 1, i)
        else:
            docid_span[row - r0, 0], docid_span[row - r0, 1] = -1, -1
        i += 1
        row += 1
        row_ptr[row] = t
    return 0, 0, row, t, line, unsorted, n_null, n_slow


@numba.njit(cache=True)
def _docid_value(buf, a, b):
    """(start, end) of VALUE in a ``docid = VALUE`` key of the comment buf[a:b], or (-1, -1)."""
    i = a
    while i + 5 <= b:
        if ((buf[i] | 32) == 100 and (buf[i + 1] | 32) == 111 and (buf[i + 2] | 32) == 99
                and (buf[i + 3] | 32) == 105 and (buf[i + 4] | 32) == 100
                and (i == a or _is_ws(buf[i - 1]))):  # 'docid' starting a word
            j = i + 5
            while j < b and _is_ws(buf[j]):
                j += 1
            if j < b and buf[j] == 61:  # '='
                j += 1
                while j < b and _is_ws(buf[j]):
                    j += 1
                k = j
                while k < b and not _is_ws(buf[k]):
                    k += 1
                if k > j:
                    return j, k
        i += 1
    return -1, -1


@numba.njit(cache=True)
def _plain_integer(buf, a, b, signed, max_digits):
    """(ok, value) of buf[a:b] as an optionally signed decimal integer of at most max_digits digits."""
    neg = False
    if signed and a < b and (buf[a] == 45 or buf[a] == 43):
        neg = buf[a] == 45
        a += 1
    if a >= b or b - a > max_digits:
        return False, np.int64(0)
    v = np.int64(0)
    for j in range(a, b):
        c = buf[j]
        if c < 48 or c > 57:
            return False, np.int64(0)
        v = v * 10 + (c - 48)
    return True, -v if neg else v


@numba.njit(cache=True)
def _integer_label(buf, a, b):
    """(ok, label) for buf[a:b]: a decimal whose value is an integer ("2", "-1", "1.0")."""
    st, m, e, neg = _scan_number(buf, a, b)
    if st != 0:
        return False, np.int64(0)
    if e >= 0:
        if e > 18 or (m != 0 and m > np.uint64(9223372036854775807) // np.uint64(10**e)):
            return False, np.int64(0)
        lab = np.int64(m * np.uint64(10**e))
    elif -e > 19:
        if m != 0:
            return False, np.int64(0)
        lab = np.int64(0)
    else:
        p = np.uint64(10) ** np.uint64(-e)
        if m % p != 0:
            return False, np.int64(0)
        lab = np.int64(m // p)
    return True, -lab if neg else lab


def _line_text(data: bytes, line_no: int) -> str:
    start = 0
    for _ in range(line_no - 1):
        start = data.index(b"\n", start) + 1
    end = data.find(b"\n", start)
    text = data[start:] if end < 0 else data[start:end]
    return text.decode("utf-8", errors="replace").rstrip("\r")


def _explain_line(text: str) -> str:
    """What is wrong with one data line (mirrors the kernel's rules, in plain Python)."""
    body = text.split("#", 1)[0].split()
    lab = body[0]
    if lab.startswith("qid:"):
        return f"line starts with {lab!r}: a document line needs a relevance label before the qid (a query with no documents?)"
    try:
        lv = float(lab)
    except ValueError:
        return f"label {lab!r} is not a number"
    if not np.isfinite(lv) or not lv.is_integer():
        return f"label {lab!r} is not an integer"
    if len(body) < 2 or not body[1].startswith("qid:"):
        return "missing 'qid:' after the label"
    q = body[1][4:]
    if not q.lstrip("+-").isdigit():
        return f"qid {q!r} is not an integer"
    if len(q.lstrip("+-")) > 18:
        return f"qid {q!r} is too large"
    for tok in body[2:]:
        k, sep, v = tok.partition(":")
        if not sep or not k or not v:
            return f"token {tok!r} is not of the form index:value"
        if not k.lstrip("+-").isdigit():
            return f"feature index {k!r} in {tok!r} is not an integer"
        if int(k) <= 0:
            return f"feature index {int(k)} in {tok!r}: indices start at 1"
        if int(k) > 2147483647 or len(k) > 10:
            return f"feature index {k!r} is too large"
        if not k.isdigit():
            return f"feature index {k!r} in {tok!r} is not a plain integer"
        if v.upper() == "NULL":
            continue
        try:
            fv = float(v)
        except ValueError:
            return f"value {v!r} of feature {k} is not a number"
        if not np.isfinite(fv):
            return f"value {v!r} of feature {k} is NaN or infinite"
        if not _plain_decimal(v):
            return f"value {v!r} of feature {k} is not a plain decimal number"
    return "malformed line"


def _plain_decimal(v: str) -> bool:
    s = v.lstrip("+-") if v[:1] in "+-" else v
    mant, _, exp = s.replace("E", "e").partition("e")
    whole, _, frac = mant.partition(".")
    if not (whole + frac) or not (whole + frac).isdigit() and (whole or frac):
        return False
    return not exp or exp.lstrip("+-").isdigit()


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


def _has_lone_cr(data: bytes, buf: np.ndarray) -> bool:
    """Whether a CR not followed by LF occurs (O(len) memchr when there is no CR at all)."""
    if data.find(b"\r") < 0:
        return False
    cr = np.flatnonzero(buf == 13)
    after = cr + 1
    return bool(after[-1] == buf.shape[0] or np.any(buf[after[after < buf.shape[0]]] != 10))


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
    status, bad_line, n, t, unsorted = tokenize_letor(buf, _POW10, labels, qids, lines, docid_span,
                                                      row_ptr, idx, val, kind)
    return _Tokens(status, bad_line, unsorted, labels[:n], qids[:n], lines[:n], docid_span[:n],
                   row_ptr[: n + 1], idx[:t], val[:t], kind[:t])


class _Parsed(NamedTuple):
    """A tokenized file: per document label, qid, line and row offset; per token 0-based index and value."""

    labels: np.ndarray
    qids: np.ndarray
    lines: np.ndarray
    row_ptr: np.ndarray
    idx: np.ndarray  # int32, 0-based (the CSR's indices)
    val: np.ndarray  # float64; NaN marks a NULL value
    n_null: int
    unsorted: bool
    docids: np.ndarray | None
    docids_missing: int


class _LoneCR(Exception):
    """The streaming engine met a CR that is not followed by LF: the caller normalises line ends."""


_BOM = b"\xef\xbb\xbf"


def _check_options(null_policy, n_features, max_features, engine) -> None:
    if null_policy not in NULL_POLICIES:
        raise ValueError(f"null_policy must be one of {NULL_POLICIES}, got {null_policy!r}")
    if n_features is not None and (int(n_features) != n_features or n_features < 1):
        raise ValueError(f"n_features must be a positive integer, got {n_features!r}")
    if max_features is not None and (int(max_features) != max_features or max_features < 1):
        raise ValueError(f"max_features must be a positive integer or None, got {max_features!r}")
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")


def parse_letor_bytes(
    data: bytes,
    path: str | Path = "<bytes>",
    *,
    null_policy: str = "error",
    sparse: bool | None = None,
    n_features: int | None = None,
    max_features: int | None = MAX_FEATURES,
    engine: str = "stream",
) -> tuple[Any, np.ndarray, np.ndarray, dict[str, Any]]:
    """Parse decompressed LETOR bytes into (X, y, qid, info) in file order. O(len(data)).

    ``info`` holds ``n_null`` (NULL values replaced), ``null_all_missing`` (NULLs whose
    query had no non-NULL value of that feature, filled with 0), ``lines`` (1-based
    line of each document) and ``docids`` (the ``#docid = ...`` values as a str array,
    None when no line has one).  LF, CRLF and lone CR all end a line.

    ``engine``: "stream" (default) counts rows and tokens in a first pass over blocks of
    the bytes and fills the CSR arrays, allocated once at their final size, in a second;
    "buffer" is the earlier single-pass reader (arrays sized by the file's LF and ``:``
    counts, then trimmed), kept as a reference.  Both give the same result and errors.
    """
    _check_options(null_policy, n_features, max_features, engine)
    if data[:3] == _BOM:  # a UTF-8 byte-order mark some editors write
        data = data[3:]
    buf = np.frombuffer(data, dtype=np.uint8)  # read-only: one kernel signature for every call
    if _has_lone_cr(data, buf):
        # a CR alone ends a line (classic Mac OS files, or mixed line ends): read every
        # CR, LF and CRLF as one line end, as Python's universal newlines do
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        buf = np.frombuffer(data, dtype=np.uint8)
    if engine == "buffer":
        parsed = _buffer_parse(data, buf, path)
    else:
        parsed = _stream_parse(lambda: _memory_blocks(data, STREAM_BLOCK), path,
                               lambda line: _line_text(data, line))
    return _build(parsed, path, null_policy, sparse, n_features, max_features)


def parse_letor_file(
    path: str | Path,
    *,
    null_policy: str = "error",
    sparse: bool | None = None,
    n_features: int | None = None,
    max_features: int | None = MAX_FEATURES,
    engine: str = "stream",
    block: int = STREAM_BLOCK,
) -> tuple[Any, np.ndarray, np.ndarray, dict[str, Any]]:
    """``parse_letor_bytes`` of an uncompressed file, read in blocks of ``block`` bytes. O(file size).

    The "stream" engine never holds the whole file: it reads it twice (count, then fill),
    so its peak memory is the result plus two blocks.  A file with lone-CR line ends is
    read whole and normalised as ``parse_letor_bytes`` does.
    """
    path = Path(path)
    _check_options(null_policy, n_features, max_features, engine)
    if engine == "buffer":
        return parse_letor_bytes(path.read_bytes(), path, null_policy=null_policy, sparse=sparse,
                                 n_features=n_features, max_features=max_features, engine="buffer")
    try:
        parsed = _stream_parse(lambda: _file_blocks(path, block), path,
                               lambda line: _file_line_text(path, line))
    except _LoneCR:
        return parse_letor_bytes(path.read_bytes(), path, null_policy=null_policy, sparse=sparse,
                                 n_features=n_features, max_features=max_features)
    return _build(parsed, path, null_policy, sparse, n_features, max_features)


def _file_blocks(path: Path, block: int):
    """(buffer, start, end) pieces of the file, each but the last ending just after a LF; a leading BOM skipped.

    One ``block``-byte buffer is refilled in place (a line longer than it grows it); the
    buffer is a read-only memoryview valid until the next piece is asked for."""
    with path.open("rb", buffering=0) as fh:
        buf = bytearray(block)
        have = 0  # bytes of an unfinished line carried to the front
        first = True
        while True:
            if have == len(buf):  # a line longer than the buffer: a larger one
                bigger = bytearray(2 * len(buf))
                bigger[:have] = buf
                buf = bigger
            got = fh.readinto(memoryview(buf)[have:])
            end = have + got
            if not got:
                if have:
                    yield memoryview(buf).toreadonly(), 3 if first and buf[:3] == _BOM else 0, have
                return
            cut = buf.rfind(b"\n", 0, end) + 1
            if cut == 0:
                have = end
                continue
            yield memoryview(buf).toreadonly(), 3 if first and buf[:3] == _BOM else 0, cut
            first = False
            buf[: end - cut] = buf[cut:end]
            have = end - cut


def _memory_blocks(data: bytes, block: int):
    """(data, start, end) pieces of ``data`` of about ``block`` bytes, each but the last ending just after a LF."""
    start, n = 0, len(data)
    while start < n:
        end = start + block
        if end >= n:
            end = n
        else:
            cut = data.rfind(b"\n", start, end) + 1
            if cut <= start:
                cut = data.find(b"\n", end) + 1
            end = cut if cut > 0 else n
        yield data, start, end
        start = end


def _file_line_text(path: Path, line_no: int) -> str:
    """Line ``line_no`` (1-based, LF-separated) of a file, as ``_line_text`` gives it. O(bytes up to it)."""
    text = b""
    with path.open("rb") as fh:
        for i, raw in enumerate(fh, 1):
            if i == line_no:
                text = raw[:-1] if raw.endswith(b"\n") else raw
                break
    if line_no == 1 and text[:3] == _BOM:
        text = text[3:]
    return text.decode("utf-8", errors="replace").rstrip("\r")


def _stream_parse(blocks, path, line_text) -> _Parsed:
    """Two passes over ``blocks()``: count rows and tokens, allocate once, fill. O(total bytes).

    Raises _LoneCR when a CR ends a line alone (the caller normalises and retries)."""
    counts = _count_blocks(blocks)
    n_rows = sum(c[0] for c in counts)
    n_tok = sum(c[1] for c in counts)
    labels = np.empty(n_rows, dtype=np.int64)
    qids = np.empty(n_rows, dtype=np.int64)
    lines = np.empty(n_rows, dtype=np.int64)
    row_ptr = np.empty(n_rows + 1, dtype=np.int64)
    row_ptr[0] = 0
    idx = np.empty(n_tok, dtype=np.int32)
    val = np.empty(n_tok, dtype=np.float64)
    row = t = line = n_null = 0
    unsorted = False
    slow_error = None
    slow_room = _SLOW_SPANS
    ids, has = [], []
    for k, (data, a, b) in enumerate(blocks()):
        buf = np.frombuffer(data, np.uint8, b - a, a)
        span = np.empty((counts[k][0] if k < len(counts) else 0, 2), dtype=np.int64)
        row0, t0, line0 = row, t, line
        while True:
            slow_span = np.empty((slow_room, 2), dtype=np.int64)
            status, bad_line, row, t, line, uns, nn, n_slow = fill_letor(
                buf, _POW10, line0, row0, t0, labels, qids, lines, span, row_ptr, idx, val, slow_span)
            if status != _SLOW_FULL:
                break
            # many numbers need Python's rules: room for every token of a block from now on
            slow_room = max(max(c[1] for c in counts), slow_room + 1)
        if status == _ERR_CHANGED:
            raise ValueError(f"{path}: the file changed while it was read (line {bad_line})")
        if status != 0:
            text = line_text(bad_line)
            raise ValueError(f"{path}, line {bad_line}: {_explain_line(text)}: {text[:120]!r}")
        unsorted |= uns
        n_null += nn
        if n_slow:
            err = _convert_slow_block(buf, slow_span[:n_slow], t0 + np.flatnonzero(np.isinf(val[t0:t])),
                                      row_ptr[: row + 1], lines, idx, val, path)
            slow_error = slow_error or err
        ids.append(_docid_raw(buf, span[: row - row0]))  # None: no id in this block
        has.append(span[: row - row0, 0] >= 0)
        del buf, data  # the block's buffer is refilled for the next one
    if row != n_rows or t != n_tok:
        raise ValueError(f"{path}: the file changed while it was read")
    if n_rows == 0:
        raise ValueError(f"{path}: no documents (empty file, or only blank and comment lines)")
    if slow_error:
        raise ValueError(slow_error)
    has_all = np.concatenate(has)
    docids = None
    if has_all.any():
        raw = [np.zeros(h.shape[0], "S1") if r is None else r for r, h in zip(ids, has, strict=True)]
        docids = _docid_finish(np.concatenate(raw), has_all, lines)
    return _Parsed(labels, qids, lines, row_ptr, idx, val, n_null, unsorted, docids,
                   int(np.count_nonzero(~has_all)))


def _count_blocks(blocks) -> list[tuple[int, int]]:
    """(rows, tokens) of each block (``count_letor``); _LoneCR when a CR ends a line alone.

    A function of its own so that no block buffer outlives the counting pass."""
    counts = []
    for data, a, b in blocks():
        rows, toks, lone_cr = count_letor(np.frombuffer(data, np.uint8, b - a, a), _COUNT_CLASS)
        if lone_cr:
            raise _LoneCR
        counts.append((rows, toks))
    return counts


def _convert_slow_block(buf, spans, slow, row_ptr, lines, idx, val, path) -> str | None:
    """Convert the numbers of one block the kernel's exact fast path could not, all at once.

    ``spans`` holds their byte spans in ``buf``, ``slow`` their token numbers.  NumPy's
    bytes-to-float64 cast rounds correctly, as Python's float does (the tests compare bit
    for bit).  Returns the first error (a NaN or infinite value), raised by the caller
    after every block is tokenized, so malformed lines are reported first.  O(total length).
    """
    width = int((spans[:, 1] - spans[:, 0]).max())
    out = np.zeros((spans.shape[0], width), dtype=np.uint8)
    gather_spans(buf, spans, out)
    text = out.view(f"S{width}").ravel()
    v = text.astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(v))
    val[slow] = v
    if not bad.size:
        return None
    j, t = int(bad[0]), int(slow[bad[0]])
    return (f"{path}, line {int(lines[_row_of(row_ptr, t)])}: value {text[j].decode()!r} "
            f"of feature {int(idx[t]) + 1} is NaN or infinite")


def _buffer_parse(data: bytes, buf: np.ndarray, path) -> _Parsed:
    """The earlier single-pass engine: ``tokenize_letor`` over the whole buffer."""
    tok = _tokenize(buf)
    if tok.status != 0:
        text = _line_text(data, tok.bad_line)
        raise ValueError(f"{path}, line {tok.bad_line}: {_explain_line(text)}: {text[:120]!r}")
    if tok.labels.shape[0] == 0:
        raise ValueError(f"{path}: no documents (empty file, or only blank and comment lines)")
    slow = np.flatnonzero(tok.kind == 2)
    if slow.size:
        _convert_slow_numbers(data, buf, slow, tok.row_ptr, tok.lines, tok.idx, tok.val, path)
    idx = tok.idx - 1
    raw = _docid_raw(buf, tok.docid_span)
    has = tok.docid_span[:, 0] >= 0
    docids = _docid_finish(raw, has, tok.lines) if has.any() else None
    return _Parsed(tok.labels, tok.qids, tok.lines, tok.row_ptr, idx, tok.val,
                   int(np.count_nonzero(tok.kind == 1)), tok.unsorted, docids,
                   int(np.count_nonzero(~has)))


def _build(p: _Parsed, path, null_policy, sparse, n_features, max_features):
    """(X, y, qid, info) from a tokenized file: NULL policy, width, duplicates, dense or CSR."""
    labels, qids, lines, row_ptr, idx, val = p.labels, p.qids, p.lines, p.row_ptr, p.idx, p.val
    n_rows = labels.shape[0]
    n_null = p.n_null
    null = np.isnan(val) if n_null else None
    if n_null and null_policy == "error":
        t = int(np.flatnonzero(null)[0])
        raise ValueError(
            f"{path}, line {int(lines[_row_of(row_ptr, t)])}: feature {int(idx[t]) + 1} is NULL "
            f"({n_null} NULL values in the file); pass null_policy='zero' or 'query_min'")
    width = max(_checked_width(idx, row_ptr, lines, path, n_features, max_features), 1)
    if p.unsorted:
        _check_no_duplicates(row_ptr, idx, lines, path)
    info: dict[str, Any] = {"n_null": n_null, "null_all_missing": 0, "lines": lines,
                            "docids": p.docids, "docids_missing": p.docids_missing}
    if n_null:
        info["null_all_missing"] = _fill_nulls(val, null, idx, row_ptr, qids, null_policy)
    nnz = idx.shape[0]
    if sparse is None:
        density = nnz / (n_rows * width)
        sparse = (width > SPARSE_MIN_WIDTH or density < SPARSE_MAX_DENSITY
                  or n_rows * width * 8 > DENSE_MAX_BYTES)
    if sparse:
        X = sp.csr_matrix((val, idx, row_ptr), shape=(n_rows, width))
        if p.unsorted:
            X.sort_indices()
        X.has_sorted_indices = True
    else:
        _check_dense_fits(n_rows, width, path)
        X = np.zeros((n_rows, width), dtype=np.float64)
        scatter_dense(X, row_ptr, idx, val)
    return X, labels, qids, info


def _checked_width(idx, row_ptr, lines, path, n_features, max_features) -> int:
    """The width of X: ``n_features`` when given (no index beyond it), else the largest index up to ``max_features``.

    ``idx`` holds 0-based indices; messages name the file's 1-based ones."""
    width = int(idx.max()) + 1 if idx.size else 0
    limit = n_features if n_features is not None else max_features
    if limit is not None and width > limit:
        line = int(lines[_row_of(row_ptr, int(np.argmax(idx)))])
        if n_features is not None:
            raise ValueError(f"{path}, line {line}: feature index {width} exceeds n_features={n_features}")
        raise ValueError(
            f"{path}, line {line}: feature index {width} is beyond max_features={max_features} "
            f"(a typo? one weight vector of that width alone takes {8 * width / 2**30:.1f} GiB, and "
            "training keeps several); if the data really has that many features, pass "
            "max_features=None or a larger limit to read_letor")
    return int(n_features) if n_features is not None else width


def _check_dense_fits(n_rows: int, width: int, path) -> None:
    """ValueError when a dense n_rows x width float64 X cannot fit in this machine's memory."""
    need = n_rows * width * 8
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # no sysconf (Windows): allocation decides
        return
    if need > total:
        raise ValueError(f"{path}: a dense X of {n_rows} x {width} needs {need / 2**30:.1f} GiB, more "
                         f"than this machine's {total / 2**30:.1f} GiB of memory; read it as CSR "
                         "(sparse=None or sparse=True)")


def _docid_raw(buf: np.ndarray, span: np.ndarray) -> np.ndarray | None:
    """The ``docid`` comment values of ``span``'s rows as a bytes (S) array, b"" where none; None when no row has one."""
    has = span[:, 0] >= 0
    if not has.any():
        return None
    length = np.where(has, span[:, 1] - span[:, 0], 0)
    width = int(length.max())
    out = np.zeros((span.shape[0], width), dtype=np.uint8)
    gather_spans(buf, span, out)
    return out.view(f"S{width}").ravel()


def _docid_finish(raw: np.ndarray, has: np.ndarray, lines: np.ndarray) -> np.ndarray:
    """The document ids as a str array: ``raw`` decoded, ``L<line>`` for the rows without one. O(n + total id length)."""
    width = raw.dtype.itemsize
    try:
        ids = raw.astype(f"U{width}")
    except UnicodeDecodeError:  # non-ASCII ids: kept distinct and whitespace-free
        ids = np.char.decode(raw, "utf-8", errors="backslashreplace")
    if not has.all():
        ids = np.where(has, ids, np.char.add("L", lines.astype(str)))
    return ids


@numba.njit(cache=True)
def gather_spans(buf, span, out):
    """out[r, :len] = buf[span[r, 0]:span[r, 1]] for every row with a span (start >= 0). O(total length)."""
    for r in range(span.shape[0]):
        a = span[r, 0]
        if a >= 0:
            for j in range(span[r, 1] - a):
                out[r, j] = buf[a + j]


def _row_of(row_ptr: np.ndarray, t):
    """The document (row) holding token(s) ``t``. O(log n) per token."""
    return np.searchsorted(row_ptr, t, side="right") - 1


@numba.njit(cache=True)
def scatter_dense(X, row_ptr, idx, val):
    """X[row, idx] = val for every token (0-based indices), rows given by ``row_ptr``. O(nnz)."""
    for r in range(row_ptr.shape[0] - 1):
        for t in range(row_ptr[r], row_ptr[r + 1]):
            X[r, idx[t]] = val[t]


def _convert_slow_numbers(data, buf, slow, row_ptr, lines, idx, val, path) -> None:
    """Convert with Python's float the numbers the kernel's exact fast path could not."""
    line_start = np.concatenate(([0], np.flatnonzero(buf == 10) + 1))
    for t in slow.tolist():
        r = int(_row_of(row_ptr, t))
        line = int(lines[r])
        end = data.find(b"\n", line_start[line - 1])
        text = data[line_start[line - 1]: None if end < 0 else end].split(b"#", 1)[0]
        token = text.split()[2 + t - int(row_ptr[r])]
        v = float(token.partition(b":")[2])
        if not np.isfinite(v):
            raise ValueError(f"{path}, line {line}: value {token.partition(b':')[2].decode()!r} "
                             f"of feature {int(idx[t])} is NaN or infinite")
        val[t] = v


def _check_no_duplicates(row_ptr, idx, lines, path) -> None:
    """ValueError naming the first line with a repeated feature index (``idx`` 0-based). O(T log T)."""
    tok_row = np.repeat(np.arange(row_ptr.shape[0] - 1), np.diff(row_ptr))
    order = np.lexsort((idx, tok_row))
    r, k = tok_row[order], idx[order]
    dup = np.flatnonzero((r[1:] == r[:-1]) & (k[1:] == k[:-1]))
    if dup.size:
        d = int(dup[0])
        raise ValueError(f"{path}, line {int(lines[r[d]])}: feature index {int(k[d]) + 1} appears twice")


def _fill_nulls(val, null, idx, row_ptr, qids, policy) -> int:
    """Replace NULL (NaN) values in place; returns how many fell back to 0 under query_min.

    query_min: the query's minimum of that feature over its non-NULL values, where a
    document that omits the feature (sparse files) counts with its implicit 0.
    O(T log T) over the T tokens of the columns that hold NULLs.
    """
    if policy == "zero":
        val[null] = 0.0
        return 0
    _, qindex = np.unique(qids, return_inverse=True)
    qindex = qindex.ravel().astype(np.int64)
    qsize = np.bincount(qindex)
    sel = np.flatnonzero(np.isin(idx, np.unique(idx[null])))
    width = int(idx.max()) + 1
    keys, inv, n_explicit = np.unique(qindex[_row_of(row_ptr, sel)] * width + idx[sel],
                                      return_inverse=True, return_counts=True)
    inv = inv.ravel()
    is_null = null[sel]
    mins = np.full(keys.size, np.inf)
    np.minimum.at(mins, inv[~is_null], val[sel[~is_null]])
    implicit_zero = n_explicit < qsize[keys // width]
    mins[implicit_zero] = np.minimum(mins[implicit_zero], 0.0)
    all_null = np.isinf(mins)  # every value of the feature in the query is NULL
    mins[all_null] = 0.0
    val[sel[is_null]] = mins[inv[is_null]]
    return int(np.count_nonzero(all_null[inv[is_null]]))


def read_letor(
    path: str | Path,
    null_policy: str = "error",
    sparse: bool | None = None,
    *,
    n_features: int | None = None,
    max_features: int | None = MAX_FEATURES,
    name: str | None = None,
    cache: bool | str | Path = True,
    engine: str = "stream",
) -> RankingData:
    """Read a LETOR / SVMlight-with-qid file (plain, .gz, .bz2 or .xz) into RankingData. O(file size).

    ``null_policy`` handles LETOR 3.0 ``NULL`` values: "error" (default) raises naming
    the line, "zero" writes 0, "query_min" writes the query's minimum of that feature
    over its non-NULL values (0 when the query has none: counted in
    ``meta["null_all_missing"]``).  LETOR's own Feature-min files are *not* reproduced
    by either rule: their filling differs between columns (0 in some, the query
    minimum in others), so use those files when you need LETOR's filled version.

    ``sparse``: None picks CSR for wide (> 10,000 features), sparse (< 25% of the
    cells present) or huge (> 1 GiB dense) files and a dense array otherwise;
    True/False forces it (a dense X larger than the machine's memory is refused).
    ``n_features`` fixes the width (an error if an index exceeds it), so splits of one
    data set share a width.  Without it the width is the largest index, which must
    not exceed ``max_features`` (default 2**24: a stray ``1000000000:0.5`` is an error
    naming its line instead of a model that exhausts memory; None lifts the limit).

    Documents keep their ``#docid = ...`` comment values in ``docids`` (lines without
    one get ``L<line>``, with a warning) and their line numbers in ``lines``.  LF, CRLF
    and lone CR (classic Mac OS) line ends are all read.  Documents of one query must be
    contiguous for learning; a file that interleaves queries is grouped stably by first
    appearance (``meta["order"]`` holds the permutation) with a warning naming the file.
    Parsed files are cached (see ``rankbench.data.cache``): ``cache=False`` disables
    it, a path selects the folder.  Errors (ValueError) name the file, the line and
    the problem.

    ``engine``: "stream" (default) reads an uncompressed file in blocks, twice (count,
    then fill the CSR arrays allocated once), so the whole file is never in memory;
    "buffer" is the earlier reader (the whole file in memory, arrays sized by its LF and
    ``:`` counts), kept as a reference: both give the same data and the same errors.
    Compressed files are decompressed in memory by either.
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory, not a LETOR file")
    if not path.is_file():
        raise FileNotFoundError(f"LETOR file not found: {path}")
    if null_policy not in NULL_POLICIES:
        raise ValueError(f"null_policy must be one of {NULL_POLICIES}, got {null_policy!r}")
    if sparse not in (None, True, False):
        raise ValueError(f"sparse must be None, True or False, got {sparse!r}")
    _check_options(null_policy, n_features, max_features, engine)
    with path.open("rb") as fh:
        head = fh.read(6)
    compressed = head[:2] == b"\x1f\x8b" or head[:3] == b"BZh" or head == b"\xfd7zXZ\x00"
    options = {"null_policy": null_policy, "sparse": sparse, "n_features": n_features,
               "max_features": max_features}
    store = parse_cache.ParseCache.from_setting(cache)
    key = parse_cache.cache_key(path, options, reader_fingerprint()) if store is not None else None
    data = store.load(key) if store is not None else None
    if data is None:
        kw = {"null_policy": null_policy, "sparse": sparse, "n_features": n_features,
              "max_features": max_features, "engine": engine}
        if compressed:
            X, y, qid, info = parse_letor_bytes(decompress_bytes(path.read_bytes(), path), path, **kw)
        else:
            X, y, qid, info = parse_letor_file(path, **kw)
        meta = {"path": str(path), "null_policy": null_policy, "n_null": info["n_null"],
                "null_all_missing": info["null_all_missing"]}
        if info["docids"] is not None and info["docids_missing"]:
            meta["docids_missing"] = info["docids_missing"]
        data = RankingData.from_arrays(X, y, qid, name=name or _stem(path), source=str(path),
                                       meta=meta, docids=info["docids"], lines=info["lines"])
        if store is not None:
            store.save(key, data)
    # the entry is keyed by content: another file with the same bytes may have made it
    data = replace(data, name=name or _stem(path), source=str(path),
                   meta={**data.meta, "path": str(path)})
    if data.meta.get("order") is not None:
        warnings.warn(f"{path}: documents of a query are not contiguous; grouped them by "
                      "query (stable, by first appearance)", stacklevel=2)
    if data.meta.get("docids_missing"):
        warnings.warn(f"{path}: {data.meta['docids_missing']} documents have no '#docid = ...' "
                      "comment while others have one; they get the generated ids L<line>",
                      stacklevel=2)
    return data


def reader_fingerprint() -> str:
    """sha256 of the modules that turn bytes into RankingData: an edit to them retires old cache entries."""
    return parse_cache.source_fingerprint(__file__, ranking_data.__file__, parse_cache.__file__)


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".xz", ".gz", ".bz2"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name.rsplit(".", 1)[0] if "." in name else name


def write_letor(data: RankingData, path: str | Path, *, comments: list[str] | None = None,
                precision: int | None = None) -> Path:
    """Write ``data`` as a LETOR / SVMlight-with-qid file (.gz/.bz2/.xz by suffix). O(nnz).

    Dense X writes every feature (as LETOR does), CSR only its stored entries; indices
    are 1-based.  Values use Python's shortest round-trip repr, so ``read_letor`` gives
    back the same numbers bit for bit, unless ``precision`` asks for that many decimals.
    Document ids (``data.docids``) are written as ``#docid = ...`` comments, LETOR's
    form, followed by ``comments[i]`` when given.  For external rankers (svm_rank,
    sofia-ml, RankLib) run on exactly our data.
    """
    path = Path(path)
    if comments is not None and len(comments) != data.n_docs:
        raise ValueError(f"comments must hold one string per document ({data.n_docs}), got {len(comments)}")
    if precision is not None and (int(precision) != precision or precision < 0):
        raise ValueError(f"precision must be a non-negative integer, got {precision!r}")
    fmt = repr if precision is None else (lambda v: f"{v:.{precision}f}")
    X = data.X
    out = []
    for i in range(data.n_docs):
        if sp.issparse(X):
            a, b = X.indptr[i], X.indptr[i + 1]
            cols, vals = X.indices[a:b], X.data[a:b]
        else:
            cols, vals = range(X.shape[1]), X[i]
        feats = " ".join(f"{int(c) + 1}:{fmt(float(v))}" for c, v in zip(cols, vals, strict=True))
        line = f"{int(data.y[i])} qid:{int(data.qid[i])}" + (f" {feats}" if feats else "")
        note = [f"docid = {data.docids[i]}"] if data.docids is not None else []
        if comments is not None:
            note.append(comments[i])
        if note:
            line += " #" + " ".join(note)
        out.append(line)
    raw = ("\n".join(out) + "\n").encode()
    name = path.name
    if name.endswith(".gz"):
        raw = gzip.compress(raw)
    elif name.endswith(".bz2"):
        raw = bz2.compress(raw)
    elif name.endswith(".xz"):
        raw = lzma.compress(raw)
    path.write_bytes(raw)
    return path
