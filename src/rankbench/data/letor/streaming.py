"""The streaming engine: two passes over a file in blocks, the CSR arrays allocated once.

The scanner's ``count_letor`` counts the rows and ``index:value`` tokens of each block of
about 4 MiB (each ends after a LF), the arrays (int32 0-based indices, float64 values) are
allocated once at that size, and its ``fill_letor`` fills them reading each byte once on the
common path; an uncompressed file is read from disk twice and never held whole.  Numbers the scanner's
exact fast path cannot convert (very long mantissas such as the 17 digits of ``repr``,
large exponents) are converted per block by NumPy's correctly rounded bytes-to-float64
cast, which equals Python's ``float`` (the tests compare bit for bit).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rankbench.data.letor.docids import docid_finish, docid_raw
from rankbench.data.letor.errors import line_error
from rankbench.data.letor.parsed import Parsed, row_of
from rankbench.data.letor.scanning import (
    _COUNT_CLASS,
    _ERR_CHANGED,
    _SLOW_FULL,
    BOM,
    POW10,
    count_letor,
    fill_letor,
    gather_spans,
)

_SLOW_SPANS = 4096  # room for numbers left to Python's rules in a block, before the first overflow
STREAM_BLOCK = 1 << 22  # bytes per block of the streaming engine (a block ends after a LF)


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
