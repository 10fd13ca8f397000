"""TREC formats: a run (``qid Q0 docno rank score tag``) and qrels (``qid 0 docno rel``).

So that anyone can score a rankbench model with trec_eval, ir-measures or ranx: write the
test ranking of a ``RankingData`` and its scores as a run, its labels as qrels, and read
both back.  Document numbers are ``RankingData.doc_ids()`` (LETOR's ``#docid = ...``
comments, else ``L<line>``); ranks follow trec_eval's order (descending score, equal scores
by descending docno), so the rank column says what trec_eval will compute.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

_TAG_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-+")


def _check_token(value: str, what: str) -> str:
    if not value or any(c.isspace() for c in value):
        raise ValueError(f"{what} must be a non-empty token without whitespace, got {value!r}")
    return value


def write_lines(path: str | os.PathLike, lines: list[str]) -> Path:
    """Write ``lines`` to ``path`` whole or not at all (a new temporary file in the same folder,
    then ``os.replace``: an existing symbolic link at ``path`` is replaced, never followed)."""
    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name[:64]}.", suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write("".join(lines))
        os.chmod(tmp, 0o644)  # mkstemp makes 0600 files; a run is for others to score
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return p


def write_run(path: str | os.PathLike, data: Any, scores: Any, tag: str = "rankbench") -> Path:
    """Write ``scores`` of ``data``'s documents as a TREC run file; returns the path."""
    return write_lines(path, run_lines(data, scores, tag))


def run_lines(data: Any, scores: Any, tag: str = "rankbench") -> list[str]:
    """The TREC run lines of ``scores`` of ``data``'s documents: queries by id, each ranked by
    descending score (equal scores by descending docno, trec_eval's order); O(n log n)."""
    from rankbench.metrics.ranked_lists import doc_keys

    _check_token(tag, "tag")
    scores = np.asarray(scores, dtype=float)
    if scores.shape != (data.n_docs,):
        raise ValueError(f"scores has shape {scores.shape}, the data holds {data.n_docs} documents")
    if not np.all(np.isfinite(scores)):
        raise ValueError("scores hold NaN or infinite values; a TREC run cannot carry them")
    ids = np.asarray(data.doc_ids()).astype(str)
    key = doc_keys(ids, ids.shape[0])
    qid = np.asarray(data.qid)
    order = np.lexsort((-key, -scores, qid))
    lines, prev, rank = [], None, 0
    for i in order:
        q = int(qid[i])
        rank = rank + 1 if q == prev else 1
        prev = q
        lines.append(f"{q} Q0 {_check_token(ids[i], 'docno')} {rank} {float(scores[i])!r} {tag}\n")
    return lines


def write_qrels(path: str | os.PathLike, data: Any) -> Path:
    """Write ``data``'s relevance labels as TREC qrels (every document judged); returns the path."""
    return write_lines(path, qrels_lines(data))


def qrels_lines(data: Any) -> list[str]:
    """The TREC qrels lines of ``data``'s relevance labels (every document judged); O(n)."""
    ids = np.asarray(data.doc_ids()).astype(str)
    return [f"{int(q)} 0 {d} {int(y)}\n" for q, d, y in zip(np.asarray(data.qid), ids,
                                                            np.asarray(data.y), strict=True)]


def _rows(path: str | os.PathLike, n_fields: int, what: str):
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{p} is a directory, not a {what} file")
    with p.open() as fh:
        for lineno, line in enumerate(fh, start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != n_fields:
                raise ValueError(f"{p}:{lineno}: a {what} line has {n_fields} fields, got "
                                 f"{len(parts)}: {line.rstrip()!r}")
            yield lineno, parts


def read_run(path: str | os.PathLike) -> dict[str, dict[str, float]]:
    """A TREC run as ``{qid: {docno: score}}`` (the shape pytrec_eval and ir-measures take)."""
    out: dict[str, dict[str, float]] = {}
    for lineno, (q, _, d, _rank, score, _tag) in _rows(path, 6, "run"):
        try:
            out.setdefault(q, {})[d] = float(score)
        except ValueError:
            raise ValueError(f"{path}:{lineno}: score {score!r} is not a number") from None
    return out


def read_qrels(path: str | os.PathLike) -> dict[str, dict[str, int]]:
    """TREC qrels as ``{qid: {docno: relevance}}``."""
    out: dict[str, dict[str, int]] = {}
    for lineno, (q, _, d, rel) in _rows(path, 4, "qrels"):
        try:
            out.setdefault(q, {})[d] = int(rel)
        except ValueError:
            raise ValueError(f"{path}:{lineno}: relevance {rel!r} is not an integer") from None
    return out
