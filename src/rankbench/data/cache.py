"""Binary cache of parsed data files, keyed by the sha256 of the source bytes, the reader options and code.

The folder is ``RANKBENCH_CACHE`` (``off``/``0``/``none`` disables caching) or
``~/.cache/rankbench``; files live in ``<folder>/parsed/<key>.npz``.  A cache file that
cannot be read or does not hold a consistent data set is ignored and rebuilt: the
cache can make a load faster, never different.  Entries are written to a temporary
file and renamed, so concurrent writers never expose a half-written entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
import zipfile
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from rankbench.data.ranking_data import RankingData, check_docids

# Bump when the parser's output for the same bytes could change (2: document ids and lines).
CACHE_FORMAT = 2
_DISABLED = {"", "0", "off", "none", "false", "no"}


def default_cache_dir() -> Path | None:
    """``RANKBENCH_CACHE`` if set (None when it says off), else ``~/.cache/rankbench``."""
    env = os.environ.get("RANKBENCH_CACHE")
    if env is not None:
        return None if env.strip().lower() in _DISABLED else Path(env).expanduser()
    return Path.home() / ".cache" / "rankbench"


def cache_key(raw: bytes | Path, options: dict[str, Any], code: str) -> str:
    """sha256 over the source file's bytes, the reader options and ``code`` (the reader's fingerprint). O(len(raw)).

    ``raw`` may be the bytes or the file's path (hashed in 16 MiB blocks, never held whole)."""
    if isinstance(raw, Path):
        h = hashlib.sha256()
        with raw.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 24), b""):
                h.update(block)
    else:
        h = hashlib.sha256(raw)
    h.update(json.dumps({"options": options, "format": CACHE_FORMAT, "code": code},
                        sort_keys=True).encode())
    return h.hexdigest()


@lru_cache(maxsize=8)
def source_fingerprint(*paths: str) -> str:
    """sha256 of the given source files (a reader passes its own modules: an edit retires old entries)."""
    h = hashlib.sha256()
    for p in paths:
        h.update(Path(p).read_bytes())
    return h.hexdigest()


class ParseCache:
    """A folder of parsed data sets, one ``.npz`` per key."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder) / "parsed"

    @classmethod
    def from_setting(cls, setting: bool | str | Path | None) -> ParseCache | None:
        """True: the default folder; False/None: no cache; a path: that folder."""
        if setting is True:
            folder = default_cache_dir()
            return None if folder is None else cls(folder)
        if setting is False or setting is None:
            return None
        return cls(setting)

    def path(self, key: str) -> Path:
        """Where the entry ``key`` lives."""
        return self.folder / f"{key}.npz"

    def load(self, key: str) -> RankingData | None:
        """The cached data set for ``key``, or None when absent, unreadable or inconsistent."""
        p = self.path(key)
        if not p.is_file():
            return None
        try:
            with np.load(p, allow_pickle=False) as z:
                return _from_arrays({k: z[k] for k in z.files})
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, TypeError,
                json.JSONDecodeError):
            return None

    def save(self, key: str, data: RankingData) -> None:
        """Store ``data`` under ``key`` (atomic rename); warns and goes on when the folder is not writable."""
        arrays = _to_arrays(data)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as fh:
                    np.savez(fh, **arrays)
                os.replace(tmp, self.path(key))
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            warnings.warn(f"parse cache not written ({self.folder}: {exc})", stacklevel=3)


def _to_arrays(data: RankingData) -> dict[str, np.ndarray]:
    meta = {k: v for k, v in data.meta.items() if k != "order"}
    out = {"y": data.y, "qid": data.qid, "query_ptr": data.query_ptr,
           "meta": np.array(json.dumps(meta)),
           "header": np.array([CACHE_FORMAT, data.n_docs, data.n_features], dtype=np.int64)}
    order = data.meta.get("order")
    if order is not None:
        out["order"] = np.asarray(order, dtype=np.int64)
    if data.docids is not None:
        out["docids"] = data.docids
    if data.lines is not None:
        out["lines"] = data.lines
    if sp.issparse(data.X):
        out["X_data"] = data.X.data
        out["X_indices"] = data.X.indices
        out["X_indptr"] = data.X.indptr
    else:
        out["X"] = data.X
    return out


def _from_arrays(z: dict[str, np.ndarray]) -> RankingData | None:
    fmt, n, d = (int(v) for v in z["header"])
    if fmt != CACHE_FORMAT:
        return None
    y, qid, ptr = z["y"], z["qid"], z["query_ptr"]
    if "X" in z:
        X = np.ascontiguousarray(z["X"], dtype=np.float64)
        if X.shape != (n, d):
            return None
    else:
        indptr, indices, values = z["X_indptr"], z["X_indices"], z["X_data"]
        if (indptr.shape != (n + 1,) or indptr[0] != 0 or indptr[-1] != values.shape[0]
                or indices.shape != values.shape or np.any(np.diff(indptr) < 0)
                or (indices.size and (indices.min() < 0 or indices.max() >= d))):
            return None
        X = sp.csr_matrix((values, indices, indptr), shape=(n, d))
        X.has_sorted_indices = True
    if (y.dtype != np.int64 or qid.dtype != np.int64 or y.shape != (n,) or qid.shape != (n,)
            or ptr.dtype != np.int64 or ptr.ndim != 1 or ptr.size < 2 or ptr[0] != 0
            or ptr[-1] != n or np.any(np.diff(ptr) <= 0)):
        return None
    # every query's block must hold a single qid, and no qid may own two blocks
    starts = ptr[:-1]
    block = np.repeat(np.arange(starts.size), np.diff(ptr))
    if np.any(qid != qid[starts][block]) or np.unique(qid[starts]).size != starts.size:
        return None
    if not np.all(np.isfinite(X.data if sp.issparse(X) else X)):
        return None
    docids, lines = z.get("docids"), z.get("lines")
    if docids is not None:
        if docids.dtype.kind != "U":
            return None
        docids = check_docids(docids, n)  # ValueError: the caller treats the entry as unreadable
    if lines is not None and (lines.dtype != np.int64 or lines.shape != (n,)):
        return None
    meta = json.loads(str(z["meta"]))
    meta["order"] = z["order"] if "order" in z else None
    return RankingData(X=X, y=y, qid=qid, query_ptr=ptr, meta=meta, docids=docids, lines=lines)
