"""Error messages: what is wrong with a line, in words, with the file and the line number.

The kernels only report the status code and the line of the first malformed line; this
module re-reads that one line and explains it (plain Python mirroring the kernels' rules),
so the kernels stay small and the message stays precise.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rankbench.data.letor.scanning import BOM


def line_error(path: str | Path, line_no: int, text: str) -> ValueError:
    """The ValueError for malformed line ``line_no`` of ``path`` holding ``text``."""
    return ValueError(f"{path}, line {line_no}: {explain_line(text)}: {text[:120]!r}")


def line_text(data: bytes, line_no: int) -> str:
    """Line ``line_no`` (1-based, LF-separated) of decompressed bytes, as text. O(bytes up to it)."""
    start = 0
    for _ in range(line_no - 1):
        start = data.index(b"\n", start) + 1
    end = data.find(b"\n", start)
    text = data[start:] if end < 0 else data[start:end]
    return text.decode("utf-8", errors="replace").rstrip("\r")


def explain_line(text: str) -> str:
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


def file_line_text(path: Path, line_no: int) -> str:
    """Line ``line_no`` (1-based, LF-separated) of a file, as ``line_text`` gives it. O(bytes up to it)."""
    text = b""
    with path.open("rb") as fh:
        for i, raw in enumerate(fh, 1):
            if i == line_no:
                text = raw[:-1] if raw.endswith(b"\n") else raw
                break
    if line_no == 1 and text[:3] == BOM:
        text = text[3:]
    return text.decode("utf-8", errors="replace").rstrip("\r")
