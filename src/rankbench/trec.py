"""TREC formats: a run (``qid Q0 docno rank score tag``) and qrels (``qid 0 docno rel``).

So that anyone can score a rankbench model with trec_eval, ir-measures or ranx: write the
test ranking of a ``RankingData`` and its scores as a run, its labels as qrels, and read
both back.  Document numbers are ``RankingData.doc_ids()`` (LETOR's ``#docid = ...``
comments, else ``L<line>``); ranks follow trec_eval's order (descending score, equal scores
by descending docno), so the rank column says what trec_eval will compute.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

_TAG_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-+")


def _check_token(value: str, what: str) -> str:
    if not value or any(c.isspace() for c in value):
        raise ValueError(f"{what} must be a non-empty token without whitespace, got {value!r}")
    return value


def _write(path: str | os.PathLike, lines: list[str]) -> Path:
    p = Path(path)
    tmp = p.with_name(f".{p.name}.tmp")
    tmp.write_text("".join(lines))
    os.replace(tmp, p)
    return p


def write_run(path: str | os.PathLike, data: Any, scores: Any, tag: str = "rankbench") -> Path:
    """Write ``scores`` of ``data``'s documents as a TREC run file; returns the path."""
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
    return _write(path, lines)


def write_qrels(path: str | os.PathLike, data: Any) -> Path:
    """Write ``data``'s relevance labels as TREC qrels (every document judged); returns the path."""
    ids = np.asarray(data.doc_ids()).astype(str)
    lines = [f"{int(q)} 0 {d} {int(y)}\n" for q, d, y in zip(np.asarray(data.qid), ids,
                                                              np.asarray(data.y), strict=True)]
    return _write(path, lines)


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
