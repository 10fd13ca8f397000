"""Products with X on every core: z = X v, g = X^T z and the Jacobi diagonal, dense or CSR.

Every oracle's f, gradient and Hessian-vector product reads X twice (X v, then X^T z); these
kernels read it once each, in numba threads (``prange``).  X v runs row by row; X^T z and the
diagonal add per *block* of rows into a block-private row of an accumulator, and the rows are
summed in block order.  The blocks are fixed by the data (``row_blocks``), not by the number of
threads, so the result is bit-for-bit the same with 1 thread or many.  The accumulator holds
``n_blocks x d`` floats, kept below a quarter of X's non-zeros (``max_blocks``).

Columns with a large common offset within a query are centred on the fly by their query's first
row (``objective/centring.py``); ``XProducts.matvec`` then returns X v minus a constant per
query, which no pairwise loss sees.  Data without such columns runs the plain kernels.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from rankbench.objective.centring import (
    NO_REFS,
    centred_hess_diag,
    centred_matvec,
    centred_rmatvec,
    offset_references,
)

# reassociation lets LLVM vectorize the per-row dot products (several partial sums); the
# order is still fixed by the code, so results do not depend on the thread count
_FAST = {"reassoc", "contract"}
MAX_BLOCKS = 32
ROWS_PER_BLOCK = 4096
# a query of more rows than this has its Jacobi diagonal summed by blocks of its rows
BIG_QUERY_ROWS = 8 * ROWS_PER_BLOCK


def max_blocks(n: int, d: int, nnz: int) -> int:
    """Blocks of rows for X^T z: at most MAX_BLOCKS, at least ROWS_PER_BLOCK rows each, and an
    accumulator (blocks x d floats) of at most a quarter of X's stored values.  Each block sums
    into a row of its own (allocated by the thread) and copies it to acc[b] once: summing into
    acc[b] itself, whose neighbouring rows share cache lines when d is small, made the threads
    invalidate each other's lines on every update (false sharing; OHSUMED's X^T z, 9219 x 45 in
    2 blocks: 114 us against 43 us, and 69 us on one thread)."""
    by_rows = max(1, n // ROWS_PER_BLOCK)
    by_memory = max(1, nnz // (4 * max(d, 1)))
    return int(min(MAX_BLOCKS, by_rows, by_memory))


def row_blocks(n: int, n_blocks: int) -> np.ndarray:
    """Block boundaries 0 = b_0 < ... < b_B = n of (nearly) equal row counts."""
    n_blocks = max(1, min(int(n_blocks), max(n, 1)))
    return np.linspace(0, n, n_blocks + 1).round().astype(np.int64)


def query_blocks(query_ptr: np.ndarray, n_blocks: int) -> np.ndarray:
    """Indices into the queries, 0 = q_0 <= ... <= q_B = n_queries, cutting at the query boundary
    nearest to each equal share of the rows (a block holds whole queries)."""
    n = int(query_ptr[-1])
    nq = query_ptr.shape[0] - 1
    targets = row_blocks(n, n_blocks)[1:-1]
    cuts = np.searchsorted(query_ptr, targets, side="left")
    return np.unique(np.concatenate(([0], np.clip(cuts, 0, nq), [nq]))).astype(np.int64)


# dense X (C order) ------------------------------------------------------------------------
@njit(cache=True, parallel=True, fastmath=_FAST)
def dense_matvec(X, v, out):
    """out = X v, one row per iteration."""
    n, d = X.shape
    for i in prange(n):
        s = 0.0
        for j in range(d):
            s += X[i, j] * v[j]
        out[i] = s


@njit(cache=True, parallel=True)
def dense_rmatvec(X, z, blocks, acc):
    """X^T z by blocks: block b puts sum_{i in b} z_i x_i into acc[b] (``sum_rows`` adds them).
    Two rows a step, a pair skipped when both its z are 0: each row[j] is loaded and stored once
    per two rows, in the same adds in the same order as one row a step (a skipped row adds
    0 * x = +-0, which changes no sum that starts at +0), so the same bits for finite X.
    MQ2008 Fold1 (9630 x 46, 2 blocks) on one thread, min of 1000 alternating calls: 73-74 us
    against 81-95 (no zeros, 30 % zeros); with 90 % zeros 36 against 31."""
    d = X.shape[1]
    nb = blocks.shape[0] - 1
    for b in prange(nb):
        row = np.zeros(acc.shape[1])  # the block's own row, copied to acc[b] at the end (products.max_blocks)
        i = blocks[b]
        e = blocks[b + 1]
        while i + 1 < e:
            z0 = z[i]
            z1 = z[i + 1]
            if z0 != 0.0 or z1 != 0.0:
                for j in range(d):
                    row[j] = (row[j] + z0 * X[i, j]) + z1 * X[i + 1, j]
            i += 2
        if i < e:
            zi = z[i]
            if zi != 0.0:
                for j in range(d):
                    row[j] += zi * X[i, j]
        acc[b, :] = row


@njit(cache=True, parallel=True)
def dense_hess_diag(X, w, query_ptr, qblocks, acc):
    """acc[b, j] = sum over the queries of block b of sum_i w_i x_ij^2 - (sum_i w_i x_ij)^2 / sum_i w_i."""
    d = X.shape[1]
    nb = qblocks.shape[0] - 1
    for b in prange(nb):
        row = np.zeros(acc.shape[1])  # the block's own row, copied to acc[b] at the end (products.max_blocks)
        m = np.zeros(d)
        for q in range(qblocks[b], qblocks[b + 1]):
            tot = 0.0
            for i in range(query_ptr[q], query_ptr[q + 1]):
                wi = w[i]
                if wi != 0.0:
                    tot += wi
                    for j in range(d):
                        x = X[i, j]
                        row[j] += wi * x * x
                        m[j] += wi * x
            if tot > 0.0:
                inv = 1.0 / tot
                for j in range(d):
                    row[j] -= m[j] * m[j] * inv
                    m[j] = 0.0
        acc[b, :] = row


# CSR X --------------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def csr_row_dot(indptr, indices, data, v, i):
    """x_i . v for row i of a CSR matrix: four partial sums (positions k mod 4 of the row),
    added pairwise at the end.  Scalar code on purpose: vectorising the gather v[indices[k]]
    (fastmath reassociation) made X v 1.7x slower here, and unsigned indices spare numba's
    negative-index test.  Four sums, not two: each add waits for the one before in its chain
    (3-4 cycles), and with two chains that wait, not the loads, set the pace (one-query CSR
    1e6 x 47236, 75 entries a row: X v 84-94 ms against 90-100 with two)."""
    a = indptr[i]
    b = indptr[i + 1]
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    k = a
    while k + 3 < b:
        s0 += data[k] * v[np.uint64(indices[k])]
        s1 += data[k + 1] * v[np.uint64(indices[k + 1])]
        s2 += data[k + 2] * v[np.uint64(indices[k + 2])]
        s3 += data[k + 3] * v[np.uint64(indices[k + 3])]
        k += 4
    if k < b:
        s0 += data[k] * v[np.uint64(indices[k])]
        if k + 1 < b:
            s1 += data[k + 1] * v[np.uint64(indices[k + 1])]
            if k + 2 < b:
                s2 += data[k + 2] * v[np.uint64(indices[k + 2])]
    return (s0 + s1) + (s2 + s3)


@njit(cache=True, parallel=True)
def csr_matvec(indptr, indices, data, v, out):
    """out = X v for X in CSR."""
    n = indptr.shape[0] - 1
    for i in prange(n):
        out[i] = csr_row_dot(indptr, indices, data, v, i)


@njit(cache=True, parallel=True)
def csr_rmatvec(indptr, indices, data, z, blocks, acc):
    """X^T z for X in CSR, by blocks of rows into block-private rows of acc."""
    nb = blocks.shape[0] - 1
    for b in prange(nb):
        row = np.zeros(acc.shape[1])  # the block's own row, copied to acc[b] at the end (products.max_blocks)
        for i in range(blocks[b], blocks[b + 1]):
            zi = z[i]
            if zi != 0.0:
                # two entries a step: the same adds in the same order as one a step (the same
                # bits); one-query CSR 1e6 x 47236, min of 9-15 in five runs: 83-101 ms against
                # 79-103, lower in 4 of the 5
                k = indptr[i]
                e = indptr[i + 1]
                while k + 1 < e:
                    j0 = np.uint64(indices[k])
                    j1 = np.uint64(indices[k + 1])
                    x0 = zi * data[k]
                    x1 = zi * data[k + 1]
                    row[j0] += x0
                    row[j1] += x1
                    k += 2
                if k < e:
                    row[np.uint64(indices[k])] += zi * data[k]
        acc[b, :] = row


@njit(cache=True, parallel=True)
def csr_hess_diag(indptr, indices, data, w, query_ptr, qblocks, acc):
    """The CSR form of ``dense_hess_diag``: per query, the columns it touches are summed in a
    block-private dense row and cleared after (O(nnz) in all, no copy of X)."""
    d = acc.shape[1]
    nb = qblocks.shape[0] - 1
    for b in prange(nb):
        row = np.zeros(acc.shape[1])  # the block's own row, copied to acc[b] at the end (products.max_blocks)
        m = np.zeros(d)
        seen = np.zeros(d, dtype=np.bool_)
        touched = np.empty(d, dtype=np.int64)
        for q in range(qblocks[b], qblocks[b + 1]):
            tot = 0.0
            nt = 0
            for i in range(query_ptr[q], query_ptr[q + 1]):
                wi = w[i]
                if wi != 0.0:
                    tot += wi
                    for k in range(indptr[i], indptr[i + 1]):
                        j = indices[k]
                        x = data[k]
                        row[j] += wi * x * x
                        m[j] += wi * x
                        if not seen[j]:
                            seen[j] = True
                            touched[nt] = j
                            nt += 1
            inv = 1.0 / tot if tot > 0.0 else 0.0
            for t in range(nt):
                j = touched[t]
                row[j] -= m[j] * m[j] * inv
                m[j] = 0.0
                seen[j] = False
        acc[b, :] = row


@njit(cache=True, parallel=True)
def rows_weighted_sums(dense, Xd, indptr, indices, data, w, lo, blocks, ref, acc_sq, acc_m):
    """For the rows lo + blocks[0] .. lo + blocks[-1] (one large query), block b puts
    sum_i w_i x_ij^2 into acc_sq[b] and sum_i w_i x_ij into acc_m[b], x_ij centred by ``ref``
    (the query's references as a row of d floats; empty: none); the rows of a query too large
    for one thread are shared by all of them (``XProducts.hess_diag_sum``)."""
    nb = blocks.shape[0] - 1
    centred = ref.shape[0] > 0
    for b in prange(nb):
        rsq = acc_sq[b]
        rm = acc_m[b]
        rsq[:] = 0.0
        rm[:] = 0.0
        for i in range(lo + blocks[b], lo + blocks[b + 1]):
            wi = w[i]
            if wi != 0.0:
                if dense:
                    for j in range(Xd.shape[1]):
                        x = Xd[i, j] - ref[j] if centred else Xd[i, j]
                        rsq[j] += wi * x * x
                        rm[j] += wi * x
                else:
                    for k in range(indptr[i], indptr[i + 1]):
                        j = indices[k]
                        x = data[k] - ref[j] if centred else data[k]
                        rsq[j] += wi * x * x
                        rm[j] += wi * x


@njit(cache=True, parallel=True)
def sum_rows(acc, out):
    """out[j] = sum_b acc[b, j], b in order (the same sum whatever the thread count)."""
    d = acc.shape[1]
    for j in prange(d):
        s = 0.0
        for b in range(acc.shape[0]):
            s += acc[b, j]
        out[j] = s


class XProducts:
    """X v, X^T z and the Jacobi diagonal of one X (dense C-order float64 or CSR), multithreaded.

    Holds the block layout and one accumulator of ``n_blocks x d`` floats, reused by every call.
    ``centre``: the rows of each query centred where a column has a large offset in it
    (``objective/centring.py``), so X v is then X v minus a constant per query."""

    def __init__(self, X, query_ptr: np.ndarray, centre: bool = False):
        self.X = X
        self.sparse = sp.issparse(X)
        n, d = X.shape
        nnz = X.nnz if self.sparse else n * d
        nb = max_blocks(n, d, nnz)
        self.blocks = row_blocks(n, nb)
        self.qblocks = query_blocks(np.asarray(query_ptr, dtype=np.int64), nb)
        self.query_ptr = np.asarray(query_ptr, dtype=np.int64)
        # the queries of more than BIG_QUERY_ROWS rows (their diagonal is summed by row blocks)
        self._big_queries = np.flatnonzero(np.diff(self.query_ptr) > BIG_QUERY_ROWS)
        self._acc_shape = (max(self.blocks.shape[0], self.qblocks.shape[0]) - 1, d)
        self._acc = None
        self._acc2 = None  # second accumulator of the large-query diagonal (hess_diag_sum)
        if self.sparse:
            self._csr = (X.indptr, X.indices, X.data)
            self._rows = (False, np.empty((0, 0)), *self._csr)
        else:
            self._rows = (True, X, np.empty(0, np.int32), np.empty(0, np.int32), np.empty(0))
        # with ``centre``, the columns centred per query (objective/centring.py: what the pair
        # oracles use); None: the plain kernels, X v and X^T z as they are
        self.refs = offset_references(X, self.query_ptr, self.qblocks) if centre else None

    @property
    def kernel_refs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ref_ptr, ref_cols, ref_vals) as the kernels take them (empty arrays: no centring)."""
        return NO_REFS if self.refs is None else self.refs

    def centred_queries(self) -> int:
        """Number of queries with at least one centred column."""
        return 0 if self.refs is None else int(np.count_nonzero(np.diff(self.refs[0])))

    @property
    def acc(self) -> np.ndarray:
        """The accumulator, made on first use (an oracle of one small query, e.g. the per-query
        oracles of SGD on queries, may never need it)."""
        if self._acc is None:
            self._acc = np.zeros(self._acc_shape)
        return self._acc

    @property
    def nbytes(self) -> int:
        acc = 0 if self._acc is None else self._acc.nbytes
        acc += 0 if self._acc2 is None else self._acc2.nbytes
        refs = 0 if self.refs is None else sum(a.nbytes for a in self.refs)
        return int(acc + refs + self.blocks.nbytes + self.qblocks.nbytes)

    def matvec(self, v: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """X v, each query's rows centred (module docstring); O(nnz(X)).  ``out``: a float64
        array of n entries to write it into (None: a new one)."""
        v = np.ascontiguousarray(v, dtype=np.float64)
        if out is None:
            out = np.empty(self.X.shape[0])
        if self.refs is not None:
            centred_matvec(*self._rows, self.query_ptr, self.blocks, *self.refs, v, out)
        elif self.sparse:
            csr_matvec(*self._csr, v, out)
        else:
            dense_matvec(self.X, v, out)
        return out

    def rmatvec(self, z: np.ndarray) -> np.ndarray:
        """X^T z, each query's rows centred (the same in exact arithmetic when z sums to zero
        over every query, as any dL/dz does); O(nnz(X))."""
        z = np.ascontiguousarray(z, dtype=np.float64)
        if self.blocks.shape[0] == 2 and self.refs is None:  # one block: scipy / BLAS directly
            return np.asarray(self.X.T @ z, dtype=np.float64).ravel()
        out = np.empty(self.X.shape[1])
        acc = self.acc[: self.blocks.shape[0] - 1]
        if self.refs is not None:
            centred_rmatvec(*self._rows, self.query_ptr, self.blocks, *self.refs, z, acc)
        elif self.sparse:
            csr_rmatvec(*self._csr, z, self.blocks, acc)
        else:
            dense_rmatvec(self.X, z, self.blocks, acc)
        sum_rows(acc, out)
        return out

    def hess_diag_sum(self, w: np.ndarray) -> np.ndarray:
        """sum over queries of sum_i w_i x_ij^2 - (sum_i w_i x_ij)^2 / sum_i w_i, per feature j.

        Queries run in parallel, one block of whole queries per task.  A query longer than
        ``BIG_QUERY_ROWS`` is left out of those blocks (its weights zeroed) and summed on its
        own by blocks of its rows over all threads (``rows_weighted_sums``), so one large AUC
        query is not summed by one thread."""
        w = np.ascontiguousarray(w, dtype=np.float64)
        d = self.X.shape[1]
        big = self._big_queries
        w_small = w
        if big.shape[0]:
            w_small = w.copy()
            for q in big:
                w_small[self.query_ptr[q]:self.query_ptr[q + 1]] = 0.0
        acc = self.acc[: self.qblocks.shape[0] - 1]
        if self.refs is not None:
            centred_hess_diag(*self._rows, w_small, self.query_ptr, self.qblocks, *self.refs, acc)
        elif self.sparse:
            csr_hess_diag(*self._csr, w_small, self.query_ptr, self.qblocks, acc)
        else:
            dense_hess_diag(self.X, w_small, self.query_ptr, self.qblocks, acc)
        out = np.empty(d)
        sum_rows(acc, out)
        for q in big:
            self.add_query_diag(w, int(self.query_ptr[q]), int(self.query_ptr[q + 1]), out)
        return out

    def add_query_diag(self, w: np.ndarray, lo: int, hi: int, out: np.ndarray) -> None:
        """out += the diagonal sum of the one query of rows lo..hi-1, by blocks of its rows on
        every thread (blocks fixed by the query's size: the same bits with any thread count)."""
        tot = float(np.sum(w[lo:hi]))
        if tot <= 0.0:
            return
        d = self.X.shape[1]
        blocks = row_blocks(hi - lo, min(self._acc_shape[0], (hi - lo) // ROWS_PER_BLOCK))
        acc_sq = self.acc[: blocks.shape[0] - 1]
        acc_m = self._second_acc(blocks.shape[0] - 1)
        rows_weighted_sums(*self._rows, w, lo, blocks, self._query_ref_row(lo), acc_sq, acc_m)
        sq = np.empty(d)
        m = np.empty(d)
        sum_rows(acc_sq, sq)
        sum_rows(acc_m, m)
        out += sq - m * m / tot

    def _query_ref_row(self, lo: int) -> np.ndarray:
        """The references of the query starting at row ``lo`` as a row of d floats (empty: none)."""
        if self.refs is None:
            return np.empty(0)
        ref_ptr, cols, vals = self.refs
        q = int(np.searchsorted(self.query_ptr, lo, side="right") - 1)
        row = np.zeros(self.X.shape[1])
        row[cols[ref_ptr[q]:ref_ptr[q + 1]]] = vals[ref_ptr[q]:ref_ptr[q + 1]]
        return row

    @classmethod
    def warm_up(cls, X) -> None:
        """Compile (or load from numba's cache) the kernels that only data of many rows or with
        offsets reaches: X^T z by two blocks of rows and the diagonal of one large query, on
        ``X`` (a toy) as given and with a column shifted by 1e6 (centred per query)."""
        n = X.shape[0]
        shifted = X.copy()
        if sp.issparse(X):
            shifted.data[shifted.indices == shifted.indices[0]] += 1e6
        else:
            shifted[:, 0] += 1e6
        for M in (X, shifted):
            prod = cls(M, np.array([0, n], dtype=np.int64), centre=True)
            prod.blocks = row_blocks(n, 2)
            prod._acc_shape = (2, M.shape[1])
            prod.matvec(np.ones(M.shape[1]))
            prod.rmatvec(np.ones(n))
            prod.hess_diag_sum(np.ones(n))
            prod.add_query_diag(np.ones(n), 0, n, np.zeros(M.shape[1]))

    def _second_acc(self, n_blocks: int) -> np.ndarray:
        if self._acc2 is None or self._acc2.shape[0] < n_blocks:
            self._acc2 = np.zeros((n_blocks, self.X.shape[1]))
        return self._acc2[:n_blocks]
