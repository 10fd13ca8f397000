"""LETOR 3.0's ``NULL`` feature values: refused, or filled with 0 or the query's minimum."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rankbench.data.letor.parsed import Parsed, row_of

NULL_POLICIES = ("error", "zero", "query_min")


def apply_null_policy(p: Parsed, path: str | Path, policy: str) -> int:
    """Fill the NULL (NaN) values of ``p.val`` in place by ``policy``; returns how many fell back to 0.

    "error" raises naming the first NULL's line and feature."""
    if not p.n_null:
        return 0
    null = np.isnan(p.val)
    if policy == "error":
        t = int(np.flatnonzero(null)[0])
        raise ValueError(
            f"{path}, line {int(p.lines[row_of(p.row_ptr, t)])}: feature {int(p.idx[t]) + 1} is NULL "
            f"({p.n_null} NULL values in the file); pass null_policy='zero' or 'query_min'")
    return fill_nulls(p.val, null, p.idx, p.row_ptr, p.qids, policy)


def fill_nulls(val, null, idx, row_ptr, qids, policy) -> int:
    """Replace NULL (NaN) values in place; returns how many fell back to 0 under query_min.

    query_min: the query's minimum of that feature over its non-NULL values, where a
    document that omits the feature (sparse files) counts with its implicit 0.
    O(T log T) over the T tokens of the columns that hold NULLs.
    """
    if policy == "zero":
        val[null] = 0.0
        return 0
    _, qindex = np.unique(qids, return_inverse=True)
    qindex = qindex.ravel().astype(np.int64)
    qsize = np.bincount(qindex)
    sel = np.flatnonzero(np.isin(idx, np.unique(idx[null])))
    width = int(idx.max()) + 1
    keys, inv, n_explicit = np.unique(qindex[row_of(row_ptr, sel)] * width + idx[sel],
                                      return_inverse=True, return_counts=True)
    inv = inv.ravel()
    is_null = null[sel]
    mins = np.full(keys.size, np.inf)
    np.minimum.at(mins, inv[~is_null], val[sel[~is_null]])
    implicit_zero = n_explicit < qsize[keys // width]
    mins[implicit_zero] = np.minimum(mins[implicit_zero], 0.0)
    all_null = np.isinf(mins)  # every value of the feature in the query is NULL
    mins[all_null] = 0.0
    val[sel[is_null]] = mins[inv[is_null]]
    return int(np.count_nonzero(all_null[inv[is_null]]))
