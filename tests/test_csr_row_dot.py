"""The row products' loops that keep their sums' order: ``products.csr_row_dot`` (X v of every CSR
path, and the fused passes' sparse scores), four partial sums over positions k mod 4, added as
(s0 + s1) + (s2 + s3); ``csr_rmatvec`` and ``dense_rmatvec``, two entries or rows a step."""

import numpy as np
import pytest
import scipy.sparse as sp

from rankbench.objective.products import csr_matvec


def _four_chains(row_vals, row_cols, v):
    s = [0.0, 0.0, 0.0, 0.0]
    for k, (x, j) in enumerate(zip(row_vals, row_cols, strict=True)):
        s[k % 4] += float(x) * float(v[j])
    return (s[0] + s[1]) + (s[2] + s[3])


def test_rows_of_every_length_mod_four_match_the_four_chain_sum_bit_for_bit():
    rng = np.random.default_rng(3)
    lengths = list(range(0, 13)) + [75, 1001]
    d = 2000
    rows = [np.sort(rng.choice(d, size=n, replace=False)) for n in lengths]
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    indices = np.concatenate(rows).astype(np.int32)
    data = rng.standard_normal(indices.size) * 10.0 ** rng.integers(-3, 4, indices.size)
    v = rng.standard_normal(d)
    out = np.empty(len(lengths))
    csr_matvec(indptr, indices, data, v, out)
    for i in range(len(lengths)):
        a, b = indptr[i], indptr[i + 1]
        assert out[i] == _four_chains(data[a:b], indices[a:b], v), (i, lengths[i])
    X = sp.csr_matrix((data, indices, indptr), shape=(len(lengths), d))
    np.testing.assert_allclose(out, X @ v, rtol=1e-12, atol=1e-9)
    assert out[0] == 0.0


def test_csr_rmatvec_two_entries_a_step_gives_the_one_a_step_sums_bit_for_bit():
    """``products.csr_rmatvec`` steps two entries at a time; its adds, in the same order as a
    plain loop over the entries, must give that loop's bits (rows of odd and even lengths,
    zero weights skipped, a repeated column inside a row)."""
    from rankbench.objective.products import csr_rmatvec

    rng = np.random.default_rng(1)
    X = sp.random(3000, 500, density=0.03, format="csr", random_state=2)
    X.data = rng.standard_normal(X.data.size)
    X.indices[X.indptr[5]:X.indptr[5] + 2] = X.indices[X.indptr[5]]  # a repeated column
    z = rng.standard_normal(3000)
    z[::7] = 0.0
    blocks = np.array([0, 1000, 3000], dtype=np.int64)
    acc = np.zeros((2, 500))
    csr_rmatvec(X.indptr, X.indices, X.data, z, blocks, acc)
    ref = np.zeros((2, 500))
    for b in range(2):
        for i in range(blocks[b], blocks[b + 1]):
            if z[i] != 0.0:
                for k in range(X.indptr[i], X.indptr[i + 1]):
                    ref[b, X.indices[k]] += z[i] * X.data[k]
    assert np.array_equal(acc, ref)
    assert np.diff(X.indptr).max() > 20 and (np.diff(X.indptr) % 2 == 1).any()


@pytest.mark.parametrize("zero_share", [0.0, 0.3, 0.9])
def test_dense_rmatvec_two_rows_a_step_gives_the_one_row_a_step_sums_bit_for_bit(zero_share):
    """``products.dense_rmatvec`` adds two rows a step and skips a pair only when both its z are
    0, so a single zero row of a pair adds 0 * x; the sums must still be those of a plain loop
    over the rows that skips every zero (blocks of odd and even lengths, negative zeros in X,
    runs of zeros in z)."""
    from rankbench.objective.products import dense_rmatvec

    rng = np.random.default_rng(3)
    n, d = 2001, 37
    X = rng.standard_normal((n, d)) * 10.0 ** rng.integers(-3, 4, size=(n, d))
    X[rng.random((n, d)) < 0.1] = -0.0
    z = rng.standard_normal(n)
    z[rng.random(n) < zero_share] = 0.0
    z[100:140] = 0.0
    blocks = np.array([0, 1, 998, 2001], dtype=np.int64)  # a block of one row, odd and even ones
    acc = np.full((3, d), np.nan)
    dense_rmatvec(X, z, blocks, acc)
    ref = np.zeros((3, d))
    for b in range(3):
        for i in range(blocks[b], blocks[b + 1]):
            if z[i] != 0.0:
                ref[b] += z[i] * X[i]  # elementwise: one add per column, rows in order
    assert np.array_equal(acc.view(np.int64), ref.view(np.int64))
