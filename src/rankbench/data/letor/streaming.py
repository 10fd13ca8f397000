"""The streaming engine: two passes over a file in blocks, the CSR arrays allocated once.

``count_letor`` counts the rows and ``index:value`` tokens of each block of about 4 MiB
(each ends after a LF), the arrays (int32 0-based indices, float64 values) are allocated
once at that size, and ``fill_letor`` fills them reading each byte once on the common path;
an uncompressed file is read from disk twice and never held whole.  Numbers the scanner's
exact fast path cannot convert (very long mantissas such as the 17 digits of ``repr``,
large exponents) are converted per block by NumPy's correctly rounded bytes-to-float64
cast, which equals Python's ``float`` (the tests compare bit for bit).
"""

from __future__ import annotations

from pathlib import Path

import numba
import numpy as np

from rankbench.data.letor.docids import docid_finish, docid_raw
from rankbench.data.letor.errors import line_error
from rankbench.data.letor.parsed import Parsed, row_of
from rankbench.data.letor.scanning import (
    BOM,
    ERR_INDEX,
    ERR_LABEL,
    ERR_QID,
    ERR_TOKEN,
    ERR_VALUE,
    POW10,
    docid_value,
    exact_float,
    gather_spans,
    integer_label,
    is_stop,
    is_ws,
    plain_integer,
    scan_number,
    scan_number_from,
)

_ERR_CHANGED = 6  # more rows or tokens than the counting pass found (the file changed)
_SLOW_FULL = 7  # slow_span is full: the caller gives a larger one and runs the block again
_SLOW_SPANS = 4096  # room for numbers left to Python's rules in a block, before the first overflow
STREAM_BLOCK = 1 << 22  # bytes per block of the streaming engine (a block ends after a LF)


# count_letor's byte table: 1 for ':', 2 for the bytes that need a look (LF, '#', CR), 0 else
_COUNT_CLASS = np.zeros(256, dtype=np.uint8)
_COUNT_CLASS[58] = 1
_COUNT_CLASS[[10, 35, 13]] = 2


@numba.njit(cache=True)
def _has_content(buf, a, b):
    """Whether buf[a:b] holds a byte that is not blank."""
    for j in range(a, b):
        if not is_ws(buf[j]):
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
def fill_letor(buf, pow10, line, row, t, labels, qids, lines, docid_span, row_ptr, idx, val, slow_span):
    """Tokenize one LETOR byte block into the preallocated CSR arrays, from row ``row`` and token ``t``.

    Reads each byte once on the common path (``index:value`` with a plain index and a plain
    decimal); any other token goes through the general token rules (the reference reader
    of the tests, tests/letor_reference.py, applies the same rules to a whole buffer).
    Indices are stored 0-based (the CSR's), a NULL value as NaN and a number the exact fast path cannot convert as +inf
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
        while i < n and is_ws(buf[i]):
            i += 1
        if i >= n or buf[i] == 10 or buf[i] == 35:  # blank or comment-only line
            while i < n and buf[i] != 10:
                i += 1
            i += 1
            continue
        if row >= max_rows or row - r0 >= docid_span.shape[0]:
            return _ERR_CHANGED, line, row, t, line, unsorted, n_null, n_slow
        a = i
        while i < n and not is_stop(buf[i]):
            i += 1
        lab_ok, lab = integer_label(buf, a, i)
        if not lab_ok:
            return ERR_LABEL, line, row, t, line, unsorted, n_null, n_slow
        labels[row] = lab
        while i < n and is_ws(buf[i]):
            i += 1
        if not (i + 4 <= n and buf[i] == 113 and buf[i + 1] == 105 and buf[i + 2] == 100
                and buf[i + 3] == 58):  # 'qid:'
            return ERR_QID, line, row, t, line, unsorted, n_null, n_slow
        i += 4
        a = i
        while i < n and not is_stop(buf[i]):
            i += 1
        q_ok, q = plain_integer(buf, a, i, True, 18)
        if not q_ok:
            return ERR_QID, line, row, t, line, unsorted, n_null, n_slow
        qids[row] = q
        lines[row] = line
        prev = np.int64(0)
        while True:
            while i < n and is_ws(buf[i]):
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
                st, m, e, neg, j = scan_number_from(buf, i + 1, n)
                if st != 1 and (j >= n or is_stop(buf[j])):
                    ok = False
                    if st == 0:
                        ok, v = exact_float(m, e, neg, pow10)
                    if not ok:
                        if n_slow >= slow_span.shape[0]:
                            return _SLOW_FULL, line, row, t, line, unsorted, n_null, n_slow
                        slow_span[n_slow, 0], slow_span[n_slow, 1] = i + 1, j
                        v = np.inf
                        n_slow += 1
                    i = j
                    done = True
            if not done:  # the general token rules
                i = a
                colon = -1
                while i < n and not is_stop(buf[i]):
                    if buf[i] == 58 and colon < 0:
                        colon = i
                    i += 1
                if colon <= a or colon == i - 1:
                    return ERR_TOKEN, line, row, t, line, unsorted, n_null, n_slow
                k_ok, k = plain_integer(buf, a, colon, False, 10)
                if not k_ok or k <= 0 or k > 2147483647:
                    return ERR_INDEX, line, row, t, line, unsorted, n_null, n_slow
                vb = colon + 1
                if (i - vb == 4 and (buf[vb] | 32) == 110 and (buf[vb + 1] | 32) == 117
                        and (buf[vb + 2] | 32) == 108 and (buf[vb + 3] | 32) == 108):  # NULL
                    v = np.nan
                    n_null += 1
                else:
                    st, m, e, neg = scan_number(buf, vb, i)
                    if st == 1:
                        return ERR_VALUE, line, row, t, line, unsorted, n_null, n_slow
                    ok = False
                    if st == 0:
                        ok, v = exact_float(m, e, neg, pow10)
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
            docid_span[row - r0, 0], docid_span[row - r0, 1] = docid_value(buf, a + 1, i)
        else:
            docid_span[row - r0, 0], docid_span[row - r0, 1] = -1, -1
        i += 1
        row += 1
        row_ptr[row] = t
    return 0, 0, row, t, line, unsorted, n_null, n_slow


class LoneCR(Exception):
    """The streaming engine met a CR that is not followed by LF: the caller normalises line ends."""


def file_blocks(path: Path, block: int):
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
                    yield memoryview(buf).toreadonly(), 3 if first and buf[:3] == BOM else 0, have
                return
            cut = buf.rfind(b"\n", 0, end) + 1
            if cut == 0:
                have = end
                continue
            yield memoryview(buf).toreadonly(), 3 if first and buf[:3] == BOM else 0, cut
            first = False
            buf[: end - cut] = buf[cut:end]
            have = end - cut


def memory_blocks(data: bytes, block: int | None = None):
    """(data, start, end) pieces of ``data`` of about ``block`` bytes (default STREAM_BLOCK), each
    but the last ending just after a LF."""
    block = STREAM_BLOCK if block is None else block
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


def stream_parse(blocks, path, line_text) -> Parsed:
    """Two passes over ``blocks()``: count rows and tokens, allocate once, fill. O(total bytes).

    Raises LoneCR when a CR ends a line alone (the caller normalises and retries)."""
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
                buf, POW10, line0, row0, t0, labels, qids, lines, span, row_ptr, idx, val, slow_span)
            if status != _SLOW_FULL:
                break
            # many numbers need Python's rules: room for every token of a block from now on
            slow_room = max(max(c[1] for c in counts), slow_room + 1)
        if status == _ERR_CHANGED:
            raise ValueError(f"{path}: the file changed while it was read (line {bad_line})")
        if status != 0:
            raise line_error(path, bad_line, line_text(bad_line))
        unsorted |= uns
        n_null += nn
        if n_slow:
            err = _convert_slow_block(buf, slow_span[:n_slow], t0 + np.flatnonzero(np.isinf(val[t0:t])),
                                      row_ptr[: row + 1], lines, idx, val, path)
            slow_error = slow_error or err
        ids.append(docid_raw(buf, span[: row - row0]))  # None: no id in this block
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
        docids = docid_finish(np.concatenate(raw), has_all, lines)
    return Parsed(labels, qids, lines, row_ptr, idx, val, n_null, unsorted, docids,
                   int(np.count_nonzero(~has_all)))


def _count_blocks(blocks) -> list[tuple[int, int]]:
    """(rows, tokens) of each block (``count_letor``); LoneCR when a CR ends a line alone.

    A function of its own so that no block buffer outlives the counting pass."""
    counts = []
    for data, a, b in blocks():
        rows, toks, lone_cr = count_letor(np.frombuffer(data, np.uint8, b - a, a), _COUNT_CLASS)
        if lone_cr:
            raise LoneCR
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
    return (f"{path}, line {int(lines[row_of(row_ptr, t)])}: value {text[j].decode()!r} "
            f"of feature {int(idx[t]) + 1} is NaN or infinite")
