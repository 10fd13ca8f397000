"""The byte scanner: numba kernels that read one number, integer, label or docid from a byte span.

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
