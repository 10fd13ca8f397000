"""X from a tokenized file: the label and width limits, duplicate indices, dense or CSR."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numba
import numpy as np
import scipy.sparse as sp

from rankbench.data.letor.nulls import apply_null_policy
from rankbench.data.letor.parsed import Parsed, row_of

# A file is stored as CSR when it is wide or mostly empty; dense otherwise.
SPARSE_MIN_WIDTH = 10_000
SPARSE_MAX_DENSITY = 0.25
DENSE_MAX_BYTES = 1 << 30
# Widest file read_letor accepts by default: 2**24 features keep one float64 weight
# vector at 128 MiB; a stray index such as 1000000000:0.5 would make every d-sized
# vector of a solver 8 GB.  Override with max_features=None or a larger limit.
MAX_FEATURES = 1 << 24


def assemble(p: Parsed, path: str | Path, null_policy: str, sparse: bool | None,
             n_features: int | None, max_features: int | None, max_label: int | None):
    """(X, y, qid, info) from a tokenized file: label limit, NULL policy, width, duplicates, dense or CSR."""
    labels, qids, lines, row_ptr, idx, val = p.labels, p.qids, p.lines, p.row_ptr, p.idx, p.val
    n_rows = labels.shape[0]
    _check_label_limit(labels, lines, path, max_label)
    null_all_missing = apply_null_policy(p, path, null_policy)
    width = max(_checked_width(idx, row_ptr, lines, path, n_features, max_features), 1)
    if p.unsorted:
        _check_no_duplicates(row_ptr, idx, lines, path)
    info: dict[str, Any] = {"n_null": p.n_null, "null_all_missing": null_all_missing, "lines": lines,
                            "docids": p.docids, "docids_missing": p.docids_missing}
    nnz = idx.shape[0]
    if sparse is None:
        density = nnz / (n_rows * width)
        sparse = (width > SPARSE_MIN_WIDTH or density < SPARSE_MAX_DENSITY
                  or n_rows * width * 8 > DENSE_MAX_BYTES)
    if sparse:
        X = sp.csr_matrix((val, idx, row_ptr), shape=(n_rows, width))
        if p.unsorted:
            X.sort_indices()
        X.has_sorted_indices = True
    else:
        _check_dense_fits(n_rows, width, path)
        X = np.zeros((n_rows, width), dtype=np.float64)
        scatter_dense(X, row_ptr, idx, val)
    return X, labels, qids, info


def _check_label_limit(labels: np.ndarray, lines: np.ndarray, path, max_label: int | None) -> None:
    """ValueError naming the first line whose label exceeds ``max_label`` (None: no limit). O(n)."""
    if max_label is None or not labels.shape[0] or int(labels.max()) <= max_label:
        return
    row = int(np.argmax(labels > max_label))
    raise ValueError(
        f"{path}, line {int(lines[row])}: label {int(labels[row])} is above max_label={max_label} "
        "(relevance levels of LETOR-style data are 0-4, the listwise sets' permutation ranks "
        "a few thousand; a typo, or a column of scores?); if the "
        "data really has such levels, pass max_label=None or a larger limit to read_letor / load_fold")


def _checked_width(idx, row_ptr, lines, path, n_features, max_features) -> int:
    """The width of X: ``n_features`` when given (no index beyond it), else the largest index up to ``max_features``.

    ``idx`` holds 0-based indices; messages name the file's 1-based ones."""
    width = int(idx.max()) + 1 if idx.size else 0
    limit = n_features if n_features is not None else max_features
    if limit is not None and width > limit:
        line = int(lines[row_of(row_ptr, int(np.argmax(idx)))])
        if n_features is not None:
            raise ValueError(f"{path}, line {line}: feature index {width} exceeds n_features={n_features}")
        raise ValueError(
            f"{path}, line {line}: feature index {width} is beyond max_features={max_features} "
            f"(a typo? one weight vector of that width alone takes {8 * width / 2**30:.1f} GiB, and "
            "training keeps several); if the data really has that many features, pass "
            "max_features=None or a larger limit to read_letor")
    return int(n_features) if n_features is not None else width


def _check_dense_fits(n_rows: int, width: int, path) -> None:
    """ValueError when a dense n_rows x width float64 X cannot fit in this machine's memory."""
    need = n_rows * width * 8
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # no sysconf (Windows): allocation decides
        return
    if need > total:
        raise ValueError(f"{path}: a dense X of {n_rows} x {width} needs {need / 2**30:.1f} GiB, more "
                         f"than this machine's {total / 2**30:.1f} GiB of memory; read it as CSR "
                         "(sparse=None or sparse=True)")


@numba.njit(cache=True)
def scatter_dense(X, row_ptr, idx, val):
    """X[row, idx] = val for every token (0-based indices), rows given by ``row_ptr``. O(nnz)."""
    for r in range(row_ptr.shape[0] - 1):
        for t in range(row_ptr[r], row_ptr[r + 1]):
            X[r, idx[t]] = val[t]


def _check_no_duplicates(row_ptr, idx, lines, path) -> None:
    """ValueError naming the first line with a repeated feature index (``idx`` 0-based). O(T log T)."""
    tok_row = np.repeat(np.arange(row_ptr.shape[0] - 1), np.diff(row_ptr))
    order = np.lexsort((idx, tok_row))
    r, k = tok_row[order], idx[order]
    dup = np.flatnonzero((r[1:] == r[:-1]) & (k[1:] == k[:-1]))
    if dup.size:
        d = int(dup[0])
        raise ValueError(f"{path}, line {int(lines[r[d]])}: feature index {int(k[d]) + 1} appears twice")
