"""Writing RankingData as a LETOR / SVMlight-with-qid file (the inverse of read_letor)."""

from __future__ import annotations

import bz2
import gzip
import lzma
from pathlib import Path

import scipy.sparse as sp

from rankbench.data.ranking_data import RankingData


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
