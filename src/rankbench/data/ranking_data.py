"""RankingData: one ranking data set (documents grouped by query) and its validation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from rankbench.data.row_order import canonical_order, group_by_query

ArrayOrCSR = np.ndarray | sp.csr_matrix

# Largest relevance label accepted by default (the reader, RankingData.from_arrays and so every
# estimator's fit).  Graded sets use 0-4, but LETOR 4.0's listwise sets (MQ2007-list,
# MQ2008-list, registered here) label each document by its place in a permutation of its
# query's documents, so their levels run into the thousands: 2**16 - 1 admits them with room
# and refuses a typo (``1e9 qid:1``) or a column of scores read as labels.  NDCG is defined
# for any label (rankbench.metrics scales large exponential gains).  docs/datasets.md.
MAX_LABEL = 65535


@dataclass(frozen=True, eq=False)
class RankingData:
    """Documents with integer relevance labels, grouped by query.

    Documents of one query are contiguous: query ``k`` owns rows
    ``query_ptr[k]:query_ptr[k+1]``.  ``X`` is a float64 dense array or a scipy CSR
    matrix; ``y`` is int64; ``qid`` holds one query id per document (int64).
    ``synthetic`` is True for generated data so reports can label stand-ins.
    ``docids`` holds the documents' own ids (str, no whitespace: valid TREC docnos)
    when the data has them, ``lines`` the 1-based line of each document in the file
    it was read from; both are None when absent and follow the rows of X.
    """

    X: ArrayOrCSR
    y: np.ndarray
    qid: np.ndarray
    query_ptr: np.ndarray
    name: str = ""
    source: str | None = None
    synthetic: bool = False
    meta: dict[str, Any] = field(default_factory=dict)
    docids: np.ndarray | None = None
    lines: np.ndarray | None = None

    @property
    def n_docs(self) -> int:
        return int(self.y.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def n_queries(self) -> int:
        return int(self.query_ptr.shape[0] - 1)

    def checked_stats(self, X: ArrayOrCSR) -> FeatureStats | None:
        """The FeatureStats of ``from_arrays``' check of this data's X when ``X`` is that very
        array (a pair oracle built on it then skips its own read of X); else None: data built
        otherwise, a gathered or permuted X, or another matrix (a kernel map's)."""
        checked = getattr(self, "_checked", None)
        return checked[1] if checked is not None and checked[0] is X else None

    @property
    def is_sparse(self) -> bool:
        return sp.issparse(self.X)

    def query_ids(self) -> np.ndarray:
        """The id of each query, in storage order."""
        return self.qid[self.query_ptr[:-1]]

    def doc_ids(self) -> np.ndarray:
        """Each document's id as a str array: ``docids`` when present, else a stable generated one. O(n).

        Generated ids are ``L<line>`` for data read from a file (the same file always
        gives the same ids) and ``D<row>`` (0-based row of this object) otherwise; none
        holds whitespace, so all are valid TREC docnos.
        """
        if self.docids is not None:
            return self.docids
        if self.lines is not None:
            return np.char.add("L", self.lines.astype(str))
        return np.char.add("D", np.arange(self.n_docs).astype(str))

    def subset_queries(self, query_index: np.ndarray) -> RankingData:
        """A new RankingData holding the queries at positions ``query_index`` (in that order)."""
        query_index = np.asarray(query_index, dtype=np.int64)
        starts = self.query_ptr[query_index]
        ends = self.query_ptr[query_index + 1]
        sizes = ends - starts
        rows = (
            np.concatenate([np.arange(s, e) for s, e in zip(starts, ends, strict=True)])
            if len(query_index)
            else np.zeros(0, dtype=np.int64)
        )
        ptr = np.zeros(len(query_index) + 1, dtype=np.int64)
        np.cumsum(sizes, out=ptr[1:])
        return RankingData(
            X=self.X[rows],
            y=self.y[rows],
            qid=self.qid[rows],
            query_ptr=ptr,
            name=self.name,
            source=self.source,
            synthetic=self.synthetic,
            meta=dict(self.meta),
            docids=None if self.docids is None else self.docids[rows],
            lines=None if self.lines is None else self.lines[rows],
        )

    def canonical(self) -> RankingData:
        """The same rows in the canonical order (qid value, label, feature vector); O(n log n).

        Learners whose result depends on row positions (SPD, LambdaMART) train on this, so
        any order of the same rows gives the same model (see ``rankbench.data.row_order``).
        Returns ``self`` when the rows are already in that order; otherwise
        ``meta["order"]`` maps each new row to its row in the original input.
        """
        order = canonical_order(self.X, self.y, self.qid)
        if order is None:
            return self
        qid = self.qid[order]
        _, ptr = group_by_query(qid)
        meta = dict(self.meta)
        prev = meta.get("order")
        meta["order"] = order if prev is None else np.asarray(prev)[order]
        return RankingData(
            X=take_rows(self.X, order), y=self.y[order], qid=qid, query_ptr=ptr, name=self.name,
            source=self.source, synthetic=self.synthetic, meta=meta,
            docids=None if self.docids is None else self.docids[order],
            lines=None if self.lines is None else self.lines[order],
        )

    def describe(self) -> dict[str, Any]:
        """Counts a report or a test checks: queries, documents, features, label histogram."""
        levels, counts = np.unique(self.y, return_counts=True)
        return {
            "name": self.name,
            "n_queries": self.n_queries,
            "n_docs": self.n_docs,
            "n_features": self.n_features,
            "labels": {int(k): int(v) for k, v in zip(levels, counts, strict=True)},
            "sparse": self.is_sparse,
            "synthetic": self.synthetic,
        }

    @classmethod
    def from_arrays(
        cls,
        X: Any,
        y: Any,
        qid: Any = None,
        *,
        name: str = "",
        source: str | None = None,
        synthetic: bool = False,
        meta: dict[str, Any] | None = None,
        copy: bool = False,
        docids: Any = None,
        lines: Any = None,
        canonical: bool = False,
        max_label: int | None = MAX_LABEL,
    ) -> RankingData:
        """Validate user arrays and group documents by query (stable).

        ``qid=None`` means one query holding every document (the AUC setting).
        Interleaved queries are grouped stably by first appearance; the permutation
        applied is kept in ``meta["order"]`` (None when the input was already grouped)
        and applied to ``docids`` and ``lines`` too.
        ``canonical=True`` puts the rows straight into the canonical order instead (the
        same data as ``from_arrays(...).canonical()`` when ``meta`` holds no "order", with one
        gather of X instead of two).
        Raises ValueError with the problem named: shape mismatch, NaN/inf in X,
        non-integer or non-finite labels, a label above ``max_label`` (None: no limit), a
        NaN, fractional or out-of-int64 float query id, empty input, a document id that is
        empty or holds whitespace.
        """
        X, y, qid, stats = _check_ranking_arrays(X, y, qid, copy=copy, max_label=max_label)
        n = X.shape[0]
        if docids is not None:
            docids = check_docids(docids, n)
        if lines is not None:
            lines = np.asarray(lines, dtype=np.int64)
            if lines.shape != (n,):
                raise ValueError(f"lines must be 1-D with one line number per row of X ({n}), "
                                 f"got shape {lines.shape}")
        if canonical:
            # canonical_order sorts by qid value, so no grouping pass (and copy) before it;
            # its stable ties keep input order, as the grouping's would: the same permutation.
            order = canonical_order(X, y, qid)
            _, ptr = group_by_query(qid if order is None else qid[order])
        else:
            order, ptr = group_by_query(qid)
        meta = dict(meta or {})
        if order is not None:
            X = take_rows(X, order)
            y = y[order]
            qid = qid[order]
            docids = None if docids is None else docids[order]
            lines = None if lines is None else lines[order]
            meta["order"] = order
        else:
            meta.setdefault("order", None)
        data = cls(X=X, y=y, qid=qid, query_ptr=ptr, name=name, source=source,
                   synthetic=synthetic, meta=meta, docids=docids, lines=lines)
        if order is None:  # X is the array checked (not a field: ``replace(data, X=...)`` drops it)
            object.__setattr__(data, "_checked", (X, stats))
        return data


def check_ranking_arrays(X: Any, y: Any, qid: Any = None, *, copy: bool = False,
                         max_label: int | None = MAX_LABEL
                         ) -> tuple[ArrayOrCSR, np.ndarray, np.ndarray]:
    """(X, y, qid) validated as ``RankingData.from_arrays`` does, rows left as given; O(nnz).

    X by ``check_feature_matrix`` (no copy of a float64 C-contiguous array or CSR unless
    ``copy``), y int64 labels at most ``max_label``, qid by ``check_qid`` (``None``: zeros,
    one query).  Every estimator's ``fit`` validates its input here.
    """
    return _check_ranking_arrays(X, y, qid, copy=copy, max_label=max_label)[:3]


def _check_ranking_arrays(X: Any, y: Any, qid: Any = None, *, copy: bool = False,
                          max_label: int | None = MAX_LABEL
                          ) -> tuple[ArrayOrCSR, np.ndarray, np.ndarray, FeatureStats]:
    """``check_ranking_arrays`` and the FeatureStats of its read of X."""
    X, stats = check_feature_matrix_stats(X, copy=copy)
    n = X.shape[0]
    if n == 0:
        raise ValueError("empty input: X has no rows")
    y = check_labels(y, n)
    if max_label is not None and int(y.max()) > max_label:
        row = int(np.argmax(y > max_label))
        raise ValueError(
            f"label {int(y[row])} (row {row}) is above the largest relevance level accepted, "
            f"{max_label} (rankbench.data.MAX_LABEL; LETOR-style sets use 0-4, the listwise sets "
            "a few thousand): a typo, or scores used as labels? Map them to levels first, e.g. "
            "np.unique(y, return_inverse=True)[1]")
    qid = np.zeros(n, dtype=np.int64) if qid is None else check_qid(qid, n)
    return X, y, qid, stats


def check_qid(qid: Any, n: int, what: str = "row of X") -> np.ndarray:
    """Query ids, one per ``what``; float ids must be whole numbers within int64 and become int64. O(n).

    ValueError naming the first NaN, infinite, fractional or out-of-range float id: casting
    those to int64 would merge distinct queries (1e19 and 1.5e19 both overflow) or invent one.
    Integer ids are returned as given; other dtypes (strings) are only compared for equality.
    """
    qid = np.asarray(qid)
    if qid.ndim != 1 or qid.shape[0] != n:
        raise ValueError(f"qid must be 1-D with one id per {what} ({n}), got shape {qid.shape}")
    if qid.dtype.kind == "c":
        raise ValueError(f"qid must hold integer query ids, got dtype {qid.dtype}")
    if qid.dtype.kind == "f":
        bad = ~((qid >= -(2.0**63)) & (qid < 2.0**63)) | (qid != np.floor(qid))  # NaN fails both
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"qid must hold integer query ids within int64: entry {i} is {float(qid[i])!r} "
                             "(NaN, infinite, a fraction or beyond +-2**63)")
        qid = qid.astype(np.int64)
    return qid


def take_rows(X: ArrayOrCSR, order: np.ndarray) -> ArrayOrCSR:
    """``X[order]`` for row numbers ``order`` in 0..n-1 (the same values); O(len(order) * d) or O(nnz).

    A C-contiguous numeric X is gathered by a numba kernel on every core into memory numba
    allocates: numpy's own gathers of a large X spent most of their time in page faults of
    the new array (it asks for transparent huge pages, which can stall on compaction)."""
    if sp.issparse(X):
        return X[order]
    order = np.asarray(order)
    if (X.ndim == 2 and X.flags.c_contiguous and X.dtype in _GATHER_DTYPES
            and order.ndim == 1 and order.dtype.kind in "iu"):
        if order.shape[0] and (order.min() < 0 or order.max() >= X.shape[0]):
            raise IndexError(f"row index out of range for X with {X.shape[0]} rows")
        return _take_rows(X, order.astype(np.int64, copy=False))
    return X[order]


_GATHER_DTYPES = (np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.int64), np.dtype(np.int32))


@njit(cache=True, parallel=True)
def _take_rows(X, order):
    out = np.empty((order.shape[0], X.shape[1]), dtype=X.dtype)
    for i in prange(order.shape[0]):
        r = order[i]
        for j in range(X.shape[1]):
            out[i, j] = X[r, j]
    return out


def check_feature_matrix(X: Any, n_features: int | None = None, *, copy: bool = False,
                         owner: str | None = None) -> ArrayOrCSR:
    """X as float64 C-contiguous ndarray or CSR (sorted indices); ValueError for bad shape, NaN/inf, width. O(nnz).

    ``owner``: the fitted estimator's name, for scikit-learn's wording of a width mismatch."""
    return check_feature_matrix_stats(X, n_features, copy=copy, owner=owner)[0]


def check_feature_matrix_stats(X: Any, n_features: int | None = None, *, copy: bool = False,
                               owner: str | None = None, known: FeatureStats | None = None
                               ) -> tuple[ArrayOrCSR, FeatureStats]:
    """``check_feature_matrix`` and the FeatureStats of the same read of X.  ``known``: the
    FeatureStats of an earlier check of this very X (``RankingData.checked_stats``); when X
    needs no conversion they are taken, and X is not read again."""
    given = X
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64, copy=copy)
        X.sum_duplicates()
        X.sort_indices()
    else:
        X = np.array(X, dtype=np.float64, copy=copy or None, order="C")
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (documents x features), got {X.ndim}-D")
    stats = known if known is not None and X is given else _check_finite_X(X)
    if n_features is not None and X.shape[1] != n_features:
        if owner is not None:
            raise ValueError(f"X has {X.shape[1]} features, but {owner} is expecting {n_features} "
                             "features as input")
        raise ValueError(f"X has {X.shape[1]} features, the model was fitted with {n_features}")
    return X, stats


_ASCII_SPACE = np.array([9, 10, 11, 12, 13, 32], dtype=np.uint32)


def check_docids(docids: Any, n: int) -> np.ndarray:
    """Document ids as a str array of length n; ValueError naming the first empty one or one with whitespace. O(total length)."""
    d = np.ascontiguousarray(docids)
    if d.ndim != 1 or d.shape[0] != n:
        raise ValueError(f"docids must be 1-D with one id per row of X ({n}), got shape {d.shape}")
    if d.dtype.kind != "U":
        d = d.astype(str)
    if n == 0:
        return d
    codes = d.view(np.uint32).reshape(n, -1) if d.dtype.itemsize else np.zeros((n, 1), np.uint32)
    bad = (codes[:, 0] == 0) | np.isin(codes, _ASCII_SPACE).any(axis=1)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(f"document id {str(d[row])!r} (row {row}) is empty or holds whitespace; "
                         "ids must be valid TREC docnos")
    return d


def check_labels(y: Any, n: int) -> np.ndarray:
    """Relevance labels as int64, one per document; ValueError for NaN, non-integers, wrong length."""
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"y must be 1-D with one label per row of X ({n}), got shape {y.shape}")
    return integer_labels(y)


def integer_labels(y: np.ndarray, where: str = "row") -> np.ndarray:
    """1-D labels as int64; ValueError naming the first NaN/inf or fractional label (its ``where`` index)."""
    if y.dtype.kind == "f":
        if not np.all(np.isfinite(y)):
            raise ValueError(f"y contains NaN or inf (first at {where} {_first_bad(y)})")
        if not np.all(y == np.round(y)):
            bad = int(np.flatnonzero(y != np.round(y))[0])
            raise ValueError(f"labels must be integers (relevance levels); {where} {bad} has {y[bad]!r}")
    elif y.dtype.kind not in "iub":
        raise ValueError(f"labels must be integers, got dtype {y.dtype}")
    return y.astype(np.int64, copy=False)


@njit(cache=True, parallel=True)
def _n_nonfinite(a):
    """Number of NaN / inf entries of a 1-D float array: one read, no temporary, every core."""
    c = 0
    for i in prange(a.shape[0]):
        if not np.isfinite(a[i]):
            c += 1
    return c


# rows (dense) or stored values (CSR) per block of the statistics pass: blocks fixed by the
# size, not the thread count, so the sums are the same on any number of threads
_STATS_BLOCK = 1 << 14


@njit(cache=True, parallel=True)
def _dense_stats(X):
    """Per column of a C-order 2-D array, (sum of squares, max |x|), in one read on every core.
    Branch-free (vectorized over the columns): a NaN or inf leaves its column's sum non-finite,
    which the caller then counts exactly (the max alone would drop a NaN)."""
    n, d = X.shape
    nb = max(1, (n + _STATS_BLOCK - 1) // _STATS_BLOCK)
    sq = np.zeros((nb, d))
    mx = np.zeros((nb, d))
    for b in prange(nb):
        s = np.zeros(d)  # the block's own rows (no false sharing), copied at the end
        m = np.zeros(d)
        for i in range(b * _STATS_BLOCK, min(n, (b + 1) * _STATS_BLOCK)):
            for j in range(d):
                x = X[i, j]
                s[j] += x * x
                m[j] = max(m[j], abs(x))
        sq[b, :] = s
        mx[b, :] = m
    col_sq = np.zeros(d)
    col_max = np.zeros(d)
    for b in range(nb):  # in block order: the same sums on any number of threads
        for j in range(d):
            col_sq[j] += sq[b, j]
            col_max[j] = max(col_max[j], mx[b, j])
    return col_sq, col_max


@njit(cache=True, parallel=True)
def _values_stats(a):
    """(number of NaN / inf entries, max |x| over the finite ones) of a 1-D array in one read."""
    n = a.shape[0]
    nb = max(1, (n + _STATS_BLOCK - 1) // _STATS_BLOCK)
    bad = np.zeros(nb, dtype=np.int64)
    mx = np.zeros(nb)
    for b in prange(nb):
        c = 0
        m = 0.0
        for i in range(b * _STATS_BLOCK, min(n, (b + 1) * _STATS_BLOCK)):
            x = abs(a[i])
            if x <= np.inf:  # finite or inf (NaN compares false)
                if x == np.inf:
                    c += 1
                else:
                    m = max(m, x)
            else:
                c += 1
        bad[b] = c
        mx[b] = m
    return bad.sum(), mx.max()


@dataclass(frozen=True)
class FeatureStats:
    """What one read of a checked X gives beside its finiteness: max |x_ij| (the overflow check
    of ``objective/readiness.py``) and, for dense X, the squared column norms (the CG
    preconditioner's choice, ``optim/accuracy.want_preconditioner``; None for CSR)."""

    max_abs: float
    col_sq_norms: np.ndarray | None


def feature_stats(X: ArrayOrCSR) -> tuple[int, FeatureStats]:
    """(number of NaN / inf entries, FeatureStats) of a float64 C-order array or CSR, in one
    read of the stored values and without a copy."""
    if sp.issparse(X):
        if X.data.shape[0] == 0:
            return 0, FeatureStats(0.0, None)
        bad, mx = _values_stats(X.data)
        return int(bad), FeatureStats(float(mx), None)
    if X.size == 0:
        return 0, FeatureStats(0.0, np.zeros(X.shape[1]))
    col_sq, col_max = _dense_stats(X)
    bad = 0
    if not np.all(np.isfinite(col_sq)):  # a NaN / inf, or squares beyond float64: count exactly
        bad = int(_n_nonfinite(X.reshape(-1)))
    return bad, FeatureStats(float(col_max.max()), col_sq)


def max_abs(X: ArrayOrCSR) -> float:
    """max |x_ij| of a float64 C-order array or CSR, in one read and without a copy (0 if empty)."""
    return feature_stats(X)[1].max_abs


def _check_finite_X(X: ArrayOrCSR) -> FeatureStats:
    """ValueError naming the first row with a NaN or inf; else X's FeatureStats (same read)."""
    bad, stats = feature_stats(X)
    if bad:
        if sp.issparse(X):
            first = int(np.flatnonzero(~np.isfinite(X.data))[0])
            row = int(np.searchsorted(X.indptr, first, side="right") - 1)
        else:
            row = int(np.flatnonzero(~np.all(np.isfinite(X), axis=1))[0])
        raise ValueError(f"X contains NaN or inf (first at row {row})")
    return stats


def _first_bad(a: np.ndarray) -> int:
    return int(np.flatnonzero(~np.isfinite(a))[0])
