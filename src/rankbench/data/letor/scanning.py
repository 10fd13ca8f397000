"""The byte scanner: the reader's numba kernels, from one number, integer, label or docid in a
byte span to a whole block (``count_letor``: rows and tokens; ``fill_letor``: the CSR arrays).

Every kernel that calls another lives in this file: numba's cache checks only the file of the
function it compiled, so a kernel inlining or calling one from another file would keep stale
machine code after that file changed.

Numbers are parsed exactly: a decimal with at most 19 significant digits whose value is
``m * 10**e`` with ``m <= 2**53`` and ``|e| <= 22`` is converted with one correctly rounded
IEEE operation (Clinger's fast path), which equals ``float(text)``; any other number is
left to the caller, which converts it as Python's ``float`` does.  Kernels only *detect* a
malformed token (the ``ERR_*`` status codes); ``errors.explain_line`` says what is wrong.
"""

from __future__ import annotations

import numba
import numpy as np

# Kernel status codes (0 = ok); errors.explain_line turns a bad line into a message.
ERR_LABEL = 1
ERR_QID = 2
ERR_TOKEN = 3
ERR_INDEX = 4
ERR_VALUE = 5

POW10 = np.array([10.0**k for k in range(23)], dtype=np.float64)


@numba.njit(cache=True, inline="always")
def scan_number_from(buf, a, n):
    """Scan a decimal from buf[a] up to the first byte outside the number's grammar (or n).

    Returns (status, mantissa, exp10, negative, end).  status 0: ok; 1: not a number (no
    mantissa digit, or an exponent mark without digits); 2: a number with more than 19
    significant digits.  The caller checks that ``end`` ends the token.  Inlined into its
    callers (``scan_number`` and ``fill_letor``'s hot path) at numba IR level.
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
def scan_number(buf, a, b):
    """Parse buf[a:b] as a decimal; returns (status, mantissa, exp10, negative).

    status 0: ok; 1: not a number; 2: a number with more than 19 significant digits.
    """
    st, m, e, neg, end = scan_number_from(buf, a, b)
    if end != b:  # bytes after the number (st == 1 already has e == 0)
        return 1, m, 0, neg
    return st, m, e, neg


@numba.njit(cache=True)
def exact_float(m, e, neg, pow10):
    """(ok, value): m * 10**e when one correctly rounded operation gives it exactly."""
    if m == 0:
        return True, -0.0 if neg else 0.0
    if m > np.uint64(9007199254740992) or e > 22 or e < -22:
        return False, 0.0
    v = float(m)
    v = v * pow10[e] if e >= 0 else v / pow10[-e]
    return True, -v if neg else v


@numba.njit(cache=True)
def is_ws(c):
    return c == 32 or c == 9 or c == 13 or c == 11 or c == 12


@numba.njit(cache=True)
def is_stop(c):
    """Whether byte c ends a token: blank, LF or '#'."""
    return c == 32 or c == 10 or c == 35 or c == 9 or c == 13 or c == 11 or c == 12


@numba.njit(cache=True)
def docid_value(buf, a, b):
    """(start, end) of VALUE in a ``docid = VALUE`` key of the comment buf[a:b], or (-1, -1)."""
    i = a
    while i + 5 <= b:
        if ((buf[i] | 32) == 100 and (buf[i + 1] | 32) == 111 and (buf[i + 2] | 32) == 99
                and (buf[i + 3] | 32) == 105 and (buf[i + 4] | 32) == 100
                and (i == a or is_ws(buf[i - 1]))):  # 'docid' starting a word
            j = i + 5
            while j < b and is_ws(buf[j]):
                j += 1
            if j < b and buf[j] == 61:  # '='
                j += 1
                while j < b and is_ws(buf[j]):
                    j += 1
                k = j
                while k < b and not is_ws(buf[k]):
                    k += 1
                if k > j:
                    return j, k
        i += 1
    return -1, -1


@numba.njit(cache=True)
def plain_integer(buf, a, b, signed, max_digits):
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
def integer_label(buf, a, b):
    """(ok, label) for buf[a:b]: a decimal whose value is an integer ("2", "-1", "1.0")."""
    st, m, e, neg = scan_number(buf, a, b)
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


@numba.njit(cache=True)
def gather_spans(buf, span, out):
    """out[r, :len] = buf[span[r, 0]:span[r, 1]] for every row with a span (start >= 0). O(total length)."""
    for r in range(span.shape[0]):
        a = span[r, 0]
        if a >= 0:
            for j in range(span[r, 1] - a):
                out[r, j] = buf[a + j]

# A UTF-8 byte-order mark some editors write at the start of a file: skipped.
BOM = b"\xef\xbb\xbf"

# fill_letor's status codes beyond the ERR_* of a malformed line
_ERR_CHANGED = 6  # more rows or tokens than the counting pass found (the file changed)
_SLOW_FULL = 7  # slow_span is full: the caller gives a larger one and runs the block again


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

