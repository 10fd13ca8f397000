"""What a reading engine hands on: the tokenized file, before X is assembled."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Parsed(NamedTuple):
    """A tokenized file: per document label, qid, line and row offset; per token 0-based index and value."""

    labels: np.ndarray
    qids: np.ndarray
    lines: np.ndarray
    row_ptr: np.ndarray
    idx: np.ndarray  # int32, 0-based (the CSR's indices)
    val: np.ndarray  # float64; NaN marks a NULL value
    n_null: int
    unsorted: bool
    docids: np.ndarray | None
    docids_missing: int


def row_of(row_ptr: np.ndarray, t):
    """The document (row) holding token(s) ``t``. O(log n) per token."""
    return np.searchsorted(row_ptr, t, side="right") - 1
