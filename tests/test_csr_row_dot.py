"""``products.csr_row_dot`` (X v of every CSR path, and the fused passes' sparse scores): four
partial sums over positions k mod 4, added as (s0 + s1) + (s2 + s3)."""

import numpy as np
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
