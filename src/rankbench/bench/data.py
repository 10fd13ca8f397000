"""Data-layer benchmark: LETOR parse times (no cache / cached), sklearn's reader, synthetic generation."""

from __future__ import annotations

import io
import tempfile
import time
from pathlib import Path
from typing import Any

from rankbench.data.letor import decompress_file, parse_letor_bytes, read_letor
from rankbench.data.registry import DatasetNotFound, data_root, letor_split_path
from rankbench.data.synthetic import RCV1_N_BIG, make_letor_like, make_rcv1_like

PART = "data"


def _best_of(fn, repeat: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def _row(case: str, seconds: float | None, **extra: Any) -> dict[str, Any]:
    return {"part": PART, "case": case, "seconds": seconds, **extra}


def _letor_rows(name: str, root: Path | None, repeat: int) -> list[dict[str, Any]]:
    try:
        path = letor_split_path(name, 1, "train", root=root)
    except DatasetNotFound:
        return [_row(f"{name} fold1 train: parse", None,
                     note=f"skipped: {name} not under RANKBENCH_DATA ({root})")]
    rows = []
    secs, data = _best_of(lambda: read_letor(path, cache=False), repeat)
    size = {"n_docs": data.n_docs, "n_features": data.n_features, "file": path.name}
    rows.append(_row(f"{name} fold1 train: read, no cache", secs, **size,
                     note=f"best of {repeat}; decompress + tokenize + build"))
    secs, raw = _best_of(lambda: decompress_file(path), repeat)
    rows.append(_row(f"{name} fold1 train: decompress only", secs, **size))
    secs, _ = _best_of(lambda: parse_letor_bytes(raw, path), repeat)
    rows.append(_row(f"{name} fold1 train: tokenize + build only", secs, **size))
    with tempfile.TemporaryDirectory() as tmp:
        read_letor(path, cache=tmp)
        secs, _ = _best_of(lambda: read_letor(path, cache=tmp), repeat)
    rows.append(_row(f"{name} fold1 train: read, cached", secs, **size,
                     note="sha256 of the file + npz load"))
    from sklearn.datasets import load_svmlight_file

    secs, _ = _best_of(lambda: load_svmlight_file(io.BytesIO(raw), query_id=True), 1)
    rows.append(_row(f"{name} fold1 train: sklearn load_svmlight_file", secs, **size,
                     note="reference, already decompressed"))
    return rows


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Parse times of OHSUMED / MQ2008 Fold1 train (no cache and cached) and generator times."""
    repeat = 3 if quick else 7
    rows: list[dict[str, Any]] = []
    t = time.perf_counter()
    make_letor_like(n_queries=2, docs_per_query=2, n_features=2)
    make_rcv1_like(n=10, d=10, nnz_per_row=2)
    parse_letor_bytes(b"1 qid:1 1:0.5\n")
    rows.append(_row("first calls (numba load or compile)", time.perf_counter() - t))
    root = data_root()
    rows += _letor_rows("ohsumed", root, repeat)
    rows += _letor_rows("mq2008", root, repeat)
    n = 100_000 if quick else RCV1_N_BIG
    secs, d = _best_of(lambda: make_rcv1_like(n=n), 1 if not quick else 2)
    rows.append(_row("make_rcv1_like", secs, n_docs=n, n_features=d.n_features,
                     nnz=int(d.X.nnz)))
    secs, d = _best_of(lambda: make_letor_like(n_queries=1000, docs_per_query=100, n_features=46), 2)
    rows.append(_row("make_letor_like", secs, n_docs=d.n_docs, n_features=d.n_features))
    return rows
