"""Query-level feature normalisation, as LETOR's ``QueryLevelNorm`` files are made.

Within each query every feature is mapped to ``(x - min) / (max - min)``, and to 0
when the feature is constant in that query.  Applied to OHSUMED ``Feature-min`` this
reproduces LETOR's ``QueryLevelNorm`` files to their 6 printed decimals (a real-data
test checks it), so raw-feature data sets can be brought to the form the published
LETOR baselines use.
"""

from __future__ import annotations

from dataclasses import replace

import numba
import numpy as np
import scipy.sparse as sp

from rankbench.data.ranking_data import RankingData


@numba.njit(cache=True)
def query_minmax_kernel(X, query_ptr, out):
    """Write the per-query min-max normalised X into ``out``. O(n d)."""
    d = X.shape[1]
    lo = np.empty(d)
    hi = np.empty(d)
    for q in range(query_ptr.shape[0] - 1):
        a, b = query_ptr[q], query_ptr[q + 1]
        for j in range(d):
            lo[j] = X[a, j]
            hi[j] = X[a, j]
        for i in range(a + 1, b):
            for j in range(d):
                v = X[i, j]
                if v < lo[j]:
                    lo[j] = v
                if v > hi[j]:
                    hi[j] = v
        for i in range(a, b):
            for j in range(d):
                r = hi[j] - lo[j]
                out[i, j] = (X[i, j] - lo[j]) / r if r > 0 else 0.0


def normalize_query_level(data: RankingData) -> RankingData:
    """A copy of ``data`` with each feature min-max scaled within each query (LETOR's QueryLevelNorm). O(n d)."""
    if sp.issparse(data.X):
        raise ValueError("query-level min-max normalisation shifts every value, so it would make "
                         "a sparse X dense; load the data with sparse=False first")
    out = np.empty_like(data.X)
    query_minmax_kernel(data.X, data.query_ptr, out)
    meta = dict(data.meta)
    meta["normalization"] = "query_minmax"
    return replace(data, X=out, meta=meta)
