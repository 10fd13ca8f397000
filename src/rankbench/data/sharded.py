"""A data set sharded on disk: k query-balanced shards of binary columns, loaded without parsing.

``shard_letor(sources, out, n_shards)`` (``python -m rankbench.data shard SRC... OUT --shards k``)
streams LETOR / SVMlight-with-qid files (plain, .gz, .bz2, .xz) into ``out/``::

    manifest.json                sizes, documents, pairs, labels, feature count, checksums, sources
    shard-00000/X.npy            dense float64 (n_s, d)   -- or, for wide / sparse data (CSR):
               /indptr.npy /indices.npy /data.npy      int64 (n_s + 1), int32 (nnz_s), float64 (nnz_s)
               /y.npy                int64 labels (n_s)
               /query_ptr.npy        int64 (q_s + 1): query k owns rows query_ptr[k]:query_ptr[k+1]
               /qid.npy              int64 (q_s): each query's id
    shard-00001/...

Every array is a plain ``.npy`` file, memory-mapped when it is read (``np.load(mmap_mode="r")``),
so a shard loads in the time it takes to map (and checksum) its files.  Queries keep the order of
their first appearance in the sources and are cut into contiguous shards of near-equal documents
(``balance="docs"``) or pairs (``"pairs"``), as ``rankbench.data.partition.shard_queries`` balances
in-memory shards.

**Two passes, bounded memory.**  The sources are read twice in blocks of complete lines (the
public block parser ``parse_letor_bytes``): the first pass counts per query its documents,
labels and stored values, the second writes each document straight to its final row in its
shard's files (``os.pwrite`` at the row's offset, no temporary copy).  Memory is O(one block
+ n_queries) -- the per-query counts -- never the whole file; no shard is ever assembled in
memory.  A query whose lines are not contiguous (the same qid again after another query's
lines, within a file or in another file) is still never split: its rows are written to their
places by the same offsets, at the cost of one scattered write per run of its lines instead of
one per block (reported in the manifest as ``interleaved_runs``).  Qids are global: the same
qid in two sources is one query.

``ShardedDataset(path)`` reads the manifest and checks every shard file exists with its
recorded size; ``load(shards)`` verifies the sha256 of the files it maps (a corrupt file is a
``ShardFileError`` naming it) -- each Ray actor loads its own partition that way
(``rankbench.distributed.ShardedOracle.from_dataset``), the driver never holds X.
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import hashlib
import json
import lzma
import os
import re
import shutil
import sys
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

FORMAT = "rankbench-sharded"
VERSION = 1
MANIFEST = "manifest.json"
BALANCES = ("docs", "pairs")
BLOCK_BYTES = 16 << 20  # text read per parse: memory while sharding is about 10x this
# dense unless wide or mostly empty (read_letor's rule, without its in-memory size limit: the
# shards are on disk and each actor maps only its own)
SPARSE_MIN_WIDTH = 10_000
SPARSE_MAX_DENSITY = 0.25
HASH_CHUNK = 1 << 20
NULL_POLICIES = ("error", "zero")


class ShardFileError(ValueError):
    """A sharded data set's manifest or shard file is missing, truncated or corrupt (names the file)."""


# ---------------------------------------------------------------- reading the sources in blocks
@dataclass
class Block:
    """Documents of consecutive lines of one source: X (CSR or dense), labels, qids, and where."""

    X: Any
    y: np.ndarray
    qid: np.ndarray
    source: int  # index into the sources list


class _HashingReader:
    """A raw file object that feeds every byte read through sha256 (the source's checksum)."""

    def __init__(self, fh):
        self._fh = fh
        self.sha256 = hashlib.sha256()
        self.n_bytes = 0

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        data = self._fh.read(n)
        self.sha256.update(data)
        self.n_bytes += len(data)
        return data

    def readinto(self, buf) -> int:
        got = self._fh.readinto(buf)
        if got:
            self.sha256.update(memoryview(buf)[:got])
            self.n_bytes += got
        return got


def _open_source(path: Path, raw: _HashingReader):
    """A binary stream of ``path``'s text: decompressed when it starts with a gzip, bzip2 or xz header."""
    head = path.open("rb").read(6)
    if head[:2] == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if head[:3] == b"BZh":
        return bz2.BZ2File(raw, mode="rb")
    if head == b"\xfd7zXZ\x00":
        return lzma.LZMAFile(raw, mode="rb")
    return raw


def _text_blocks(path: Path, block_bytes: int, raw: _HashingReader) -> Iterator[tuple[bytes, int]]:
    """(bytes of whole lines, 1-based number of their first line) of ``path``, about ``block_bytes`` each.

    A block ends just after a LF (or, in a file of lone-CR line ends, after a CR that is not
    the last byte read, so a CRLF is never cut in two); a line longer than a block grows it."""
    stream = _open_source(path, raw)
    carry = b""
    line = 1
    try:
        while True:
            chunk = stream.read(block_bytes)
            data = carry + chunk if carry else chunk
            if not chunk:
                if data:
                    yield data, line
                return
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                cr = data.rfind(b"\r", 0, len(data) - 1)
                cut = cr + 1 if cr >= 0 else 0
            if cut == 0:
                carry = data  # no line end yet: read on
                continue
            block, carry = data[:cut], data[cut:]
            yield block, line
            line += _line_ends(block)
    except (OSError, EOFError, lzma.LZMAError, zlib.error) as exc:
        raise ValueError(f"{path}: cannot decompress ({type(exc).__name__}: {exc})") from None
    finally:
        if stream is not raw:
            stream.close()


def _line_ends(block: bytes) -> int:
    """Lines ended in ``block``: LF, CRLF and lone CR each end one (as the LETOR reader counts them)."""
    n = block.count(b"\n")
    if b"\r" in block:
        n += block.count(b"\r") - block.count(b"\r\n")
    return n


_LINE_IN_MESSAGE = re.compile(r", line (\d+)")


def _parse_block(text: bytes, first_line: int, path: Path, null_policy: str, max_features):
    """(X as CSR, y, qid) of one block, with errors naming the line in the whole file; None if the
    block holds no document (only blank or comment lines)."""
    from rankbench.data.letor import parse_letor_bytes

    try:
        X, y, qid, _ = parse_letor_bytes(text, path, null_policy=null_policy, sparse=True,
                                         max_features=max_features)
    except ValueError as exc:
        msg = str(exc)
        if msg.startswith(f"{path}: no documents"):
            return None
        # the parser numbers lines from the block's start: shift to the file's
        prefix = f"{path}, line "
        if msg.startswith(prefix):
            m = _LINE_IN_MESSAGE.match(msg, len(str(path)))
            if m:
                msg = f"{prefix}{int(m.group(1)) + first_line - 1}{msg[m.end():]}"
        raise ValueError(msg) from None
    return X, y, qid


def letor_blocks(sources: list[Path], block_bytes: int = BLOCK_BYTES, null_policy: str = "error",
                 max_features: int | None = None, digests: list | None = None) -> Iterator[Block]:
    """``Block``s of every source in order, parsed by ``parse_letor_bytes``; ``digests`` (a list)
    receives each source's (bytes read, sha256) once it is read to the end. O(total bytes)."""
    from rankbench.data.letor import MAX_FEATURES

    limit = MAX_FEATURES if max_features is None else max_features
    for k, path in enumerate(sources):
        with path.open("rb", buffering=0) as fh:
            raw = _HashingReader(fh)
            for text, first_line in _text_blocks(path, block_bytes, raw):
                parsed = _parse_block(text, first_line, path, null_policy, limit)
                if parsed is not None:
                    yield Block(parsed[0], parsed[1], parsed[2], k)
            if digests is not None:
                digests.append((raw.n_bytes, raw.sha256.hexdigest()))


# ---------------------------------------------------------------- pass 1: what each query holds
class _Grow:
    """An int64 array that grows by doubling (rows indexed by query)."""

    def __init__(self, cols: int = 0):
        self.a = np.zeros((1024, cols) if cols else 1024, dtype=np.int64)
        self.n = 0

    def reserve(self, n: int) -> None:
        if n > self.a.shape[0]:
            shape = (max(n, 2 * self.a.shape[0]),) + self.a.shape[1:]
            b = np.zeros(shape, dtype=np.int64)
            b[: self.a.shape[0]] = self.a
            self.a = b
        self.n = max(self.n, n)

    def add_cols(self, cols: int) -> None:
        b = np.zeros((self.a.shape[0], cols), dtype=np.int64)
        b[:, : self.a.shape[1]] = self.a
        self.a = b

    @property
    def view(self) -> np.ndarray:
        return self.a[: self.n]


class _Survey:
    """Per-query documents, stored values and label counts, in order of first appearance. O(n_queries)."""

    def __init__(self):
        self.index: dict[int, int] = {}  # qid -> query number (first appearance)
        self.qids = _Grow()
        self.docs = _Grow()
        self.nnz = _Grow()
        self.levels: dict[int, int] = {}  # label -> column of label_counts
        self.label_counts = _Grow(cols=1)
        self.width = 0
        self.last_query = -1
        self.interleaved_runs = 0
        self.source_docs: dict[int, int] = {}

    def query_numbers(self, qid: np.ndarray) -> np.ndarray:
        """Each row's query number; new qids are numbered in order of first appearance."""
        uniq, first, inv = np.unique(qid, return_index=True, return_inverse=True)
        numbers = np.empty(uniq.shape[0], dtype=np.int64)
        for j in np.argsort(first, kind="stable"):
            q = int(uniq[j])
            k = self.index.get(q)
            if k is None:
                k = self.index[q] = len(self.index)
            numbers[j] = k
        self.qids.reserve(len(self.index))
        self.qids.a[numbers] = uniq
        return numbers[inv.ravel()]

    def add(self, block: Block) -> None:
        y = np.asarray(block.y, dtype=np.int64)
        q = self.query_numbers(np.asarray(block.qid, dtype=np.int64))
        n_q = len(self.index)
        for g in (self.docs, self.nnz, self.label_counts):
            g.reserve(n_q)
        # a run of lines of one query that is not the continuation of the previous run but of an
        # earlier query's: the query's lines are not contiguous in the sources
        starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
        run_q = q[starts]
        seen_before = self.docs.a[run_q] > 0
        seen_before[0] &= run_q[0] != self.last_query
        _, first_run = np.unique(run_q, return_index=True)
        again = np.ones(run_q.shape[0], dtype=bool)
        again[first_run] = False
        self.interleaved_runs += int(np.count_nonzero(seen_before | again))
        self.last_query = int(q[-1])
        np.add.at(self.docs.a, q, 1)
        if sp.issparse(block.X):
            row_nnz = np.diff(block.X.indptr)
            if block.X.indices.size:
                self.width = max(self.width, int(block.X.indices.max()) + 1)
        else:
            row_nnz = np.count_nonzero(block.X, axis=1).astype(np.int64)  # as CSR would store it
            self.width = max(self.width, int(block.X.shape[1]))
        np.add.at(self.nnz.a, q, row_nnz)
        uy = np.unique(y)
        for lab in uy:
            if int(lab) not in self.levels:
                self.levels[int(lab)] = len(self.levels)
                if len(self.levels) > self.label_counts.a.shape[1]:
                    self.label_counts.add_cols(len(self.levels))
        cols = np.array([self.levels[int(v)] for v in uy], dtype=np.int64)
        np.add.at(self.label_counts.a, (q, cols[np.searchsorted(uy, y)]), 1)
        self.source_docs[block.source] = self.source_docs.get(block.source, 0) + q.shape[0]

    def pairs(self) -> np.ndarray:
        """Preference pairs of each query: (n_q^2 - sum over labels of count^2) / 2."""
        docs = self.docs.view
        same = (self.label_counts.view ** 2).sum(axis=1)
        return (docs * docs - same) // 2


# ---------------------------------------------------------------- pass 2: rows to their places
def _npy_file(path: Path, shape: tuple, dtype) -> tuple[int, int]:
    """Create ``path`` as an .npy of ``shape`` (a sparse file of zeros); (fd open for writing, data offset)."""
    dtype = np.dtype(dtype)
    with path.open("wb") as fh:
        np.lib.format.write_array_header_1_0(
            fh, {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": shape})
        offset = fh.tell()
        fh.truncate(offset + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize)
    return os.open(path, os.O_WRONLY), offset


def _pwrite_all(fd: int, data: bytes | memoryview, offset: int) -> None:
    view = memoryview(data).cast("B")
    while view.nbytes:
        n = os.pwrite(fd, view, offset)
        view, offset = view[n:], offset + n


class _ShardFiles:
    """The open .npy files of one shard and their data offsets."""

    def __init__(self, folder: Path, n_docs: int, nnz: int, width: int, dense: bool):
        folder.mkdir()
        self.fd: dict[str, tuple[int, int]] = {}
        self.dense = dense
        self.width = width
        if dense:
            self.fd["X"] = _npy_file(folder / "X.npy", (n_docs, width), np.float64)
        else:
            self.fd["indptr"] = _npy_file(folder / "indptr.npy", (n_docs + 1,), np.int64)
            self.fd["indices"] = _npy_file(folder / "indices.npy", (nnz,), np.int32)
            self.fd["data"] = _npy_file(folder / "data.npy", (nnz,), np.float64)
            _pwrite_all(self.fd["indptr"][0], np.array([nnz], np.int64).tobytes(),
                        self.fd["indptr"][1] + 8 * n_docs)
        self.fd["y"] = _npy_file(folder / "y.npy", (n_docs,), np.int64)

    def write(self, name: str, first: int, values: np.ndarray) -> None:
        fd, offset = self.fd[name]
        values = np.ascontiguousarray(values)
        row_bytes = values.itemsize * (values.shape[1] if values.ndim == 2 else 1)
        _pwrite_all(fd, values.data, offset + first * row_bytes)

    def close(self) -> None:
        for fd, _ in self.fd.values():
            os.close(fd)
        self.fd = {}


class _Writer:
    """Pass 2: each row to its shard and row, each query's rows in source order."""

    def __init__(self, survey: _Survey, bounds: np.ndarray, folder: Path, dense: bool):
        docs, nnz = survey.docs.view, survey.nnz.view
        n_q = docs.shape[0]
        self.shard_of = np.repeat(np.arange(len(bounds) - 1), np.diff(bounds))
        doc_ptr = np.concatenate([[0], np.cumsum(docs)])
        nnz_ptr = np.concatenate([[0], np.cumsum(nnz)])
        first = bounds[self.shard_of]
        self.row_at = doc_ptr[:-1] - doc_ptr[first]  # the query's first row within its shard
        self.nnz_at = nnz_ptr[:-1] - nnz_ptr[first]
        self.rows_done = np.zeros(n_q, dtype=np.int64)
        self.nnz_done = np.zeros(n_q, dtype=np.int64)
        self.dense = dense
        self.width = survey.width
        self.files = [_ShardFiles(folder / shard_dir(s), int(doc_ptr[bounds[s + 1]] - doc_ptr[bounds[s]]),
                                  int(nnz_ptr[bounds[s + 1]] - nnz_ptr[bounds[s]]), survey.width, dense)
                      for s in range(len(bounds) - 1)]
        self.index = survey.index

    def add(self, block: Block) -> None:
        q = self._numbers(block.qid)
        n = q.shape[0]
        order = np.argsort(q, kind="stable")
        sq = q[order]
        new = np.r_[True, sq[1:] != sq[:-1]]
        group_start = np.maximum.accumulate(np.where(new, np.arange(n), 0))
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n) - group_start
        row = self.row_at[q] + self.rows_done[q] + rank
        X = block.X
        if sp.issparse(X):
            row_nnz = np.diff(X.indptr).astype(np.int64)
        else:
            row_nnz = np.count_nonzero(X, axis=1).astype(np.int64)
        csum = np.cumsum(row_nnz[order])
        before = np.empty(n, dtype=np.int64)
        before[order] = csum - row_nnz[order] - (csum - row_nnz[order])[group_start]
        at = self.nnz_at[q] + self.nnz_done[q] + before
        uq, counts = np.unique(q, return_counts=True)
        self.rows_done[uq] += counts
        np.add.at(self.nnz_done, q, row_nnz)
        # rows in (shard, row) order: runs of consecutive rows of one shard are one write each
        shard = self.shard_of[q]
        perm = np.lexsort((row, shard))
        shard, row, at = shard[perm], row[perm], at[perm]
        y = np.asarray(block.y, dtype=np.int64)[perm]
        if self.dense:
            Xp = (X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64))
            if Xp.shape[1] < self.width:
                Xp = np.hstack([Xp, np.zeros((n, self.width - Xp.shape[1]))])
            Xp = Xp[perm]
        else:
            Xp = sp.csr_matrix(X)[perm]
            Xp.sort_indices()
        cut = np.flatnonzero((np.diff(shard) != 0) | (np.diff(row) != 1)) + 1
        for a, b in zip(np.r_[0, cut], np.r_[cut, n], strict=True):
            f = self.files[int(shard[a])]
            r0 = int(row[a])
            f.write("y", r0, y[a:b])
            if self.dense:
                f.write("X", r0, Xp[a:b])
            else:
                p0, p1 = int(Xp.indptr[a]), int(Xp.indptr[b])
                f.write("indptr", r0, at[a:b])
                f.write("indices", int(at[a]), Xp.indices[p0:p1].astype(np.int32))
                f.write("data", int(at[a]), Xp.data[p0:p1])

    def _numbers(self, qid: np.ndarray) -> np.ndarray:
        uniq, inv = np.unique(qid, return_inverse=True)
        return np.array([self.index[int(v)] for v in uniq], dtype=np.int64)[inv.ravel()]

    def check_complete(self, survey: _Survey) -> None:
        if not (np.array_equal(self.rows_done, survey.docs.view)
                and np.array_equal(self.nnz_done, survey.nnz.view)):
            raise ValueError("the sources changed between the two passes of sharding "
                             "(the second read gave other documents than the first)")

    def close(self) -> None:
        for f in self.files:
            f.close()


def shard_dir(s: int) -> str:
    return f"shard-{s:05d}"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb", buffering=0) as fh:
        buf = bytearray(HASH_CHUNK)
        view = memoryview(buf)
        while True:
            got = fh.readinto(buf)
            if not got:
                break
            h.update(view[:got])
    return h.hexdigest()


# ---------------------------------------------------------------- the two passes
def shard_blocks(blocks: Callable[[], Iterable[Block]], out: str | Path, n_shards: int, *,
                 balance: str = "docs", sparse: bool | None = None, n_features: int | None = None,
                 sources: list[dict] | None = None, overwrite: bool = False,
                 synthetic: bool = False, progress: Callable[[str], None] | None = None) -> Path:
    """Write the documents of ``blocks()`` (called twice, giving the same blocks each time) as
    ``n_shards`` query-balanced shards under ``out``; returns the manifest's path.

    ``sparse``: None = CSR when wider than 10,000 features or under 25 % of the cells stored,
    dense otherwise; ``n_features`` fixes the width (an error if a feature index exceeds it);
    ``sources``: what the manifest records about where the documents came from.  ``out`` is
    written to a temporary folder beside it and renamed when complete; an existing ``out`` is
    an error unless ``overwrite``.  Memory: one block plus O(n_queries). O(total size)."""
    from rankbench.data.partition import shard_queries

    out = Path(out)
    if balance not in BALANCES:
        raise ValueError(f"balance must be one of {', '.join(BALANCES)}, got {balance!r}")
    if isinstance(n_shards, bool) or not isinstance(n_shards, int | np.integer) or n_shards < 1:
        raise ValueError(f"n_shards must be a positive integer, got {n_shards!r}")
    if out.exists() and not overwrite:
        raise FileExistsError(f"{out} exists; pass overwrite=True (--overwrite) to replace it")
    say = progress or (lambda msg: None)
    t0 = time.perf_counter()
    survey = _Survey()
    for block in blocks():
        survey.add(block)
    if not survey.index:
        raise ValueError("no documents in the sources")
    if n_features is not None:
        if survey.width > n_features:
            raise ValueError(f"a feature index {survey.width} exceeds n_features={n_features}")
        survey.width = int(n_features)
    width = max(survey.width, 1)
    survey.width = width
    docs, nnz, pairs = survey.docs.view, survey.nnz.view, survey.pairs()
    n_docs, n_nnz = int(docs.sum()), int(nnz.sum())
    if sparse is None:
        sparse = width > SPARSE_MIN_WIDTH or n_nnz < SPARSE_MAX_DENSITY * n_docs * width
    dense = not sparse
    doc_ptr = np.concatenate([[0], np.cumsum(docs)])
    bounds = shard_queries(doc_ptr, int(n_shards), pairs if balance == "pairs" else None)
    say(f"pass 1: {n_docs} documents in {len(survey.index)} queries "
        f"({survey.interleaved_runs} interleaved runs), {time.perf_counter() - t0:.1f} s")

    tmp = out.with_name(f".{out.name}.partial-{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    try:
        writer = _Writer(survey, bounds, tmp, dense)
        try:
            for block in blocks():
                writer.add(block)
            writer.check_complete(survey)
        finally:
            writer.close()
        say(f"pass 2: written, {time.perf_counter() - t0:.1f} s")
        qids = survey.qids.view
        shards = []
        labels = {v: int(survey.label_counts.view[:, c].sum()) for v, c in sorted(survey.levels.items())}
        for s in range(len(bounds) - 1):
            qa, qb = int(bounds[s]), int(bounds[s + 1])
            folder = tmp / shard_dir(s)
            np.save(folder / "query_ptr.npy", doc_ptr[qa:qb + 1] - doc_ptr[qa])
            np.save(folder / "qid.npy", qids[qa:qb])
            files = {}
            for f in sorted(folder.iterdir()):
                files[f.name] = {"bytes": f.stat().st_size, "sha256": _sha256(f)}
            shards.append({"dir": shard_dir(s), "n_docs": int(doc_ptr[qb] - doc_ptr[qa]),
                           "n_queries": qb - qa, "n_pairs": int(pairs[qa:qb].sum()),
                           "nnz": int(nnz[qa:qb].sum()), "files": files})
        manifest = {
            "format": FORMAT, "version": VERSION, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "n_shards": len(shards), "n_docs": n_docs, "n_queries": len(survey.index),
            "n_pairs": int(pairs.sum()), "n_features": width, "nnz": n_nnz,
            "storage": "dense" if dense else "csr", "balance": balance,
            "labels": {str(k): v for k, v in labels.items()},
            "interleaved_runs": survey.interleaved_runs, "synthetic": bool(synthetic),
            "sources": sources or [], "shards": shards,
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    say(f"done: {out} ({len(shards)} shards), {time.perf_counter() - t0:.1f} s")
    return out / MANIFEST


def shard_letor(sources: str | Path | list, out: str | Path, n_shards: int, *, balance: str = "docs",
                null_policy: str = "error", n_features: int | None = None,
                max_features: int | None = None, sparse: bool | None = None,
                block_bytes: int = BLOCK_BYTES, overwrite: bool = False,
                progress: Callable[[str], None] | None = None) -> Path:
    """Shard LETOR / SVMlight-with-qid files (plain or compressed) into ``n_shards`` shards under
    ``out`` (module docstring); returns the manifest's path.  ``null_policy``: "error" or "zero"
    for LETOR 3.0 NULL values ("query_min" needs a whole query at once: read the file with
    ``read_letor`` and use ``shard_blocks``).  Errors name the file and line.  Reads each source
    twice; memory O(block_bytes + n_queries)."""
    paths = [Path(p) for p in ([sources] if isinstance(sources, str | Path) else sources)]
    if not paths:
        raise ValueError("no source files given")
    if null_policy not in NULL_POLICIES:
        raise ValueError(f"null_policy must be one of {NULL_POLICIES} when sharding, got "
                         f"{null_policy!r} ('query_min' fills from a whole query, which a block "
                         "may not hold)")
    for p in paths:
        if p.is_dir():
            raise IsADirectoryError(f"{p} is a directory, not a LETOR file")
        if not p.is_file():
            raise FileNotFoundError(f"LETOR file not found: {p}")
    records = [{"path": str(p.resolve()), "bytes": p.stat().st_size} for p in paths]
    first_pass: list[tuple[int, str]] = []
    passes = 0

    def blocks():
        # pass 1 records each source's (bytes, sha256); pass 2 must read the same bytes
        nonlocal passes
        passes += 1
        digests: list[tuple[int, str]] = first_pass if passes == 1 else []
        yield from letor_blocks(paths, block_bytes, null_policy, max_features, digests)
        if passes > 1:
            for rec, a, b in zip(records, first_pass, digests, strict=True):
                if a != b:
                    raise ValueError(f"{rec['path']}: the file changed while it was sharded "
                                     "(its two reads differ)")
        for rec, (n_bytes, digest) in zip(records, digests, strict=True):
            rec.update({"read_bytes": n_bytes, "sha256": digest})

    return shard_blocks(blocks, out, n_shards, balance=balance, sparse=sparse, n_features=n_features,
                        sources=records, overwrite=overwrite, progress=progress)


# ---------------------------------------------------------------- reading the shards back
class ShardedDataset:
    """A data set sharded on disk by ``shard_letor`` / ``shard_blocks`` (module docstring).

    Holds only the manifest (O(n_shards) numbers): documents, queries, pairs, features and labels
    of the whole set and of each shard.  The constructor checks that every shard file exists
    with its recorded size (``ShardFileError`` naming the file otherwise); ``load`` maps one or
    more shards' arrays after verifying their checksums; ``verify`` checks every file.  Pass it
    to ``RankSVM.fit``: each Ray actor loads its own shards (``rankbench.distributed``).
    ``path`` must be visible to every node of the cluster under the same name."""

    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser().resolve()
        mf = self.path / MANIFEST
        if self.path.is_file() and self.path.name == MANIFEST:
            self.path, mf = self.path.parent, self.path
        if not mf.is_file():
            raise ShardFileError(f"{mf}: no manifest (not a sharded data set: make one with "
                                 "`rankbench data shard SRC... OUT --shards k`)")
        try:
            self.manifest = json.loads(mf.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ShardFileError(f"{mf}: not valid JSON ({exc})") from None
        m = self.manifest
        if not isinstance(m, dict) or m.get("format") != FORMAT:
            raise ShardFileError(f"{mf}: not a {FORMAT} manifest")
        if m.get("version") != VERSION:
            raise ShardFileError(f"{mf}: format version {m.get('version')!r}, this rankbench reads {VERSION}")
        needed = ("n_shards", "n_docs", "n_queries", "n_pairs", "n_features", "storage", "shards", "labels")
        missing = [k for k in needed if k not in m]
        if missing or len(m["shards"]) != m["n_shards"] or m["storage"] not in ("dense", "csr"):
            raise ShardFileError(f"{mf}: incomplete manifest (missing {missing or 'consistent shards'})")
        self.check_files()

    # what the manifest says
    n_shards = property(lambda self: int(self.manifest["n_shards"]))
    n_docs = property(lambda self: int(self.manifest["n_docs"]))
    n_queries = property(lambda self: int(self.manifest["n_queries"]))
    n_features = property(lambda self: int(self.manifest["n_features"]))
    storage = property(lambda self: self.manifest["storage"])
    synthetic = property(lambda self: bool(self.manifest.get("synthetic", False)))

    def n_pairs(self) -> int:
        return int(self.manifest["n_pairs"])

    def shard_docs(self) -> np.ndarray:
        return np.array([s["n_docs"] for s in self.manifest["shards"]], dtype=np.int64)

    def shard_pairs(self) -> np.ndarray:
        return np.array([s["n_pairs"] for s in self.manifest["shards"]], dtype=np.int64)

    def data_bytes(self) -> int:
        """Bytes of every shard's arrays on disk (X, y, query pointers)."""
        return sum(f["bytes"] for s in self.manifest["shards"] for f in s["files"].values())

    def facts(self) -> dict[str, Any]:
        """What the data set is (as the runner records a split): queries, documents, features, labels, pairs."""
        return {"n_queries": self.n_queries, "n_docs": self.n_docs, "n_features": self.n_features,
                "labels": dict(self.manifest["labels"]), "n_pairs": self.n_pairs(),
                "n_shards": self.n_shards, "sharded": str(self.path)}

    def __repr__(self) -> str:
        return (f"ShardedDataset({str(self.path)!r}: {self.n_shards} shards, {self.n_docs} documents, "
                f"{self.n_queries} queries, {self.n_features} features, {self.storage})")

    # files
    def _files(self, s: int) -> dict[str, dict]:
        return self.manifest["shards"][s]["files"]

    def check_files(self, shards: Iterable[int] | None = None) -> None:
        """ShardFileError naming the first missing shard file or one of the wrong size. O(files)."""
        for s in range(self.n_shards) if shards is None else shards:
            folder = self.path / self.manifest["shards"][s]["dir"]
            for name, rec in self._files(s).items():
                f = folder / name
                try:
                    size = f.stat().st_size
                except FileNotFoundError:
                    raise ShardFileError(f"{f}: shard {s} file missing (the data set at {self.path} "
                                         "is incomplete: shard it again)") from None
                if size != rec["bytes"]:
                    raise ShardFileError(f"{f}: shard {s} file has {size} bytes, the manifest "
                                         f"records {rec['bytes']} (truncated or replaced: shard it again)")

    def verify(self, shards: Iterable[int] | None = None) -> None:
        """ShardFileError naming the first file whose sha256 differs from the manifest's. O(bytes)."""
        shards = list(range(self.n_shards) if shards is None else shards)
        self.check_files(shards)
        for s in shards:
            folder = self.path / self.manifest["shards"][s]["dir"]
            for name, rec in self._files(s).items():
                f = folder / name
                if _sha256(f) != rec["sha256"]:
                    raise ShardFileError(f"{f}: shard {s} file is corrupt (sha256 differs from the "
                                         "manifest's: shard the data again)")

    def load(self, shards: Iterable[int] | None = None, verify: bool = True, mmap: bool = True):
        """(X, y, query_ptr) of ``shards`` (default all), concatenated in shard order: memory-mapped,
        read-only arrays for one shard (``mmap``), in-memory copies for several; ``verify``
        checks the files' sha256 first. O(bytes) with ``verify``, else O(1) for one shard."""
        shards = list(range(self.n_shards) if shards is None else shards)
        if verify:
            self.verify(shards)
        else:
            self.check_files(shards)
        # several shards are concatenated (one copy): read them through their maps
        parts = [self._load_one(s, mmap or len(shards) > 1) for s in shards]
        if len(parts) == 1:
            return parts[0]
        Xs, ys, ptrs = zip(*parts, strict=True)
        X = sp.vstack(Xs, format="csr") if sp.issparse(Xs[0]) else np.concatenate(Xs)
        offsets = np.cumsum([0] + [p[-1] for p in ptrs[:-1]])
        ptr = np.concatenate([ptrs[0]] + [p[1:] + o for p, o in zip(ptrs[1:], offsets[1:], strict=True)])
        return X, np.concatenate(ys), ptr

    def _load_one(self, s: int, mmap: bool):
        folder = self.path / self.manifest["shards"][s]["dir"]
        mode = "r" if mmap else None

        def arr(name):
            try:
                return np.load(folder / name, mmap_mode=mode, allow_pickle=False)
            except (ValueError, OSError) as exc:
                raise ShardFileError(f"{folder / name}: shard {s} file unreadable ({exc})") from None

        y, ptr = arr("y.npy"), np.asarray(arr("query_ptr.npy"))
        if self.storage == "dense":
            X = arr("X.npy")
        else:
            X = sp.csr_matrix((arr("data.npy"), arr("indices.npy"), arr("indptr.npy")),
                              shape=(y.shape[0], self.n_features))
        rec = self.manifest["shards"][s]
        if X.shape != (rec["n_docs"], self.n_features) or ptr.shape != (rec["n_queries"] + 1,):
            raise ShardFileError(f"{folder}: shard {s} arrays have shapes {X.shape} / {ptr.shape}, "
                                 "not the manifest's")
        return X, y, ptr

    def query_ids(self, shards: Iterable[int] | None = None) -> np.ndarray:
        """The id of every query of ``shards`` (default all), in storage order. O(n_queries)."""
        shards = range(self.n_shards) if shards is None else shards
        return np.concatenate([np.load(self.path / self.manifest["shards"][s]["dir"] / "qid.npy")
                               for s in shards])

    def to_ranking_data(self, shards: Iterable[int] | None = None, verify: bool = True):
        """The shards as one in-memory RankingData (for small sets and checks: holds all of X)."""
        from rankbench.data.ranking_data import RankingData

        shards = list(range(self.n_shards) if shards is None else shards)
        X, y, ptr = self.load(shards, verify=verify, mmap=False)
        qid = np.repeat(self.query_ids(shards), np.diff(ptr))
        return RankingData.from_arrays(X if sp.issparse(X) else np.array(X), np.array(y), qid,
                                       name=self.path.name, source=str(self.path),
                                       synthetic=self.synthetic)

    def partition(self, n_groups: int | None = None, balance: str = "docs") -> list[list[int]]:
        """Contiguous groups of shards, near-equal in documents (or pairs), one per actor; None = one
        shard each.  ValueError when asking for more groups than shards."""
        from rankbench.data.partition import shard_queries

        if n_groups is None:
            return [[s] for s in range(self.n_shards)]
        if isinstance(n_groups, bool) or not isinstance(n_groups, int | np.integer) or n_groups < 1:
            raise ValueError(f"n_shards must be a positive integer or None, got {n_groups!r}")
        if n_groups > self.n_shards:
            raise ValueError(f"n_shards={n_groups} exceeds the {self.n_shards} shards of {self.path} "
                             "(an actor holds whole shards: shard the data into more parts)")
        w = self.shard_pairs() if balance == "pairs" else self.shard_docs()
        ptr = np.concatenate([[0], np.cumsum(self.shard_docs())])
        b = shard_queries(ptr, int(n_groups), w.astype(np.float64))
        return [list(range(int(b[k]), int(b[k + 1]))) for k in range(len(b) - 1)]


def load_sharded_split(fold: int = 1, split: str = "train", *, path: str | None = None,
                       vali: str | None = None, test: str | None = None):
    """``load_fold("sharded", 1, split, path=DIR, vali=FILE, test=FILE)`` (Hydra: ``dataset=sharded
    dataset.path=DIR``): the train split is the ``ShardedDataset`` at ``path`` (fitted by the
    shards' actors), vali and test the files (LETOR or another sharded folder, read whole) given
    as ``vali`` / ``test``."""
    if fold != 1:
        raise ValueError(f"a sharded data set has one fold, got fold {fold}")
    if not path:
        raise ValueError("dataset=sharded needs dataset.path=<folder made by `rankbench data shard`>")
    if split == "train":
        return ShardedDataset(path)
    where = {"vali": vali, "test": test}.get(split)
    if not where:
        raise ValueError(f"dataset=sharded has no {split} split: pass dataset.data_params.{split}=FILE "
                         "(a LETOR file or a sharded folder), or evaluate fewer splits "
                         "(dataset.eval_splits=[...])")
    p = Path(where).expanduser()
    if (p / MANIFEST).is_file():
        return ShardedDataset(p).to_ranking_data()
    from rankbench.data.letor import read_letor

    return read_letor(p)


# ---------------------------------------------------------------- command line
def add_shard_arguments(ap: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of ``rankbench data shard``."""
    ap.add_argument("paths", nargs="+", metavar="PATH",
                    help="source LETOR / SVMlight files (plain, .gz, .bz2, .xz), then the output folder")
    ap.add_argument("--shards", type=int, required=True, help="number of shards")
    ap.add_argument("--balance", choices=BALANCES, default="docs",
                    help="balance the shards by documents (default) or by pairs")
    ap.add_argument("--null-policy", choices=NULL_POLICIES, default="error",
                    help="LETOR 3.0 NULL values: error (default) or zero")
    ap.add_argument("--n-features", type=int, help="fix the width (an error if an index exceeds it)")
    ap.add_argument("--max-features", type=int, help="largest feature index accepted (default 2^24)")
    ap.add_argument("--storage", choices=("auto", "dense", "csr"), default="auto",
                    help="column layout of X (auto: CSR when wide or mostly empty)")
    ap.add_argument("--block-mb", type=float, default=BLOCK_BYTES / 2**20,
                    help="text parsed at a time, MiB (memory is about ten times this)")
    ap.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    ap.add_argument("--quiet", action="store_true")
    return ap


def shard_main(argv: list[str] | None = None, prog: str = "python -m rankbench.data shard") -> int:
    """``rankbench data shard SRC... OUT --shards k``: exit 0, 1 on a data error, 2 on a usage error."""
    ap = add_shard_arguments(argparse.ArgumentParser(
        prog=prog, description="Shard LETOR files into a folder of query-balanced binary shards."))
    args = ap.parse_args(argv)
    if len(args.paths) < 2:
        ap.error("give one or more source files and then the output folder")
    *sources, out = args.paths
    if args.shards < 1:
        ap.error(f"--shards must be >= 1, got {args.shards}")
    say = None if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    try:
        mf = shard_letor(sources, out, args.shards, balance=args.balance, null_policy=args.null_policy,
                         n_features=args.n_features, max_features=args.max_features,
                         sparse={"auto": None, "dense": False, "csr": True}[args.storage],
                         block_bytes=max(1, int(args.block_mb * 2**20)), overwrite=args.overwrite,
                         progress=say)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    ds = ShardedDataset(mf.parent)
    print(f"{ds}; manifest {mf}")
    return 0
