"""Objectives exact at any common feature offset (issue 26): every oracle x loss, dense and CSR.

The problems are dyadic (features k / 1024 plus an integer offset), so X + offset is exact in
float64 and the problem at every offset is the same one: f, its gradient, Hv, the optimum and
the stopping rules must not move.  References: f evaluated pair by pair in long double
(``np.longdouble``) from the offset matrix itself, and the brute-force oracle on the data
without offset.  Before the per-query centring (``objective/centring.py``) the counting, tree,
direct and joachims oracles were wrong from the 5th digit at offset 1e6 and prsvm_plus /
tron_tree stopped on a wrong f.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from rankbench import RankSVM
from rankbench.objective import ORACLES, make_oracle, pairs_with_margin
from rankbench.objective.products import XProducts

OFFSETS = [0.0, 1e3, 1e6, 1e8, 1e12]
LOSSES = ["squared_hinge", "huber", "hinge", "logistic"]
SIZES = [7, 12, 1, 9, 15, 2, 11, 10]
N_OFFSET_COLS = 3  # columns 0..2 carry the offset (always stored); the others are sparse in CSR


def _dyadic(seed: int = 0, d: int = 6, sparse: bool = False):
    """(X without offset, y, ptr): features k / 1024, |k| <= 2048, some columns sparse."""
    rng = np.random.default_rng(seed)
    ptr = np.concatenate([[0], np.cumsum(SIZES)]).astype(np.int64)
    n = int(ptr[-1])
    X0 = rng.integers(-2048, 2049, size=(n, d)) / 1024.0
    if sparse:
        X0[:, N_OFFSET_COLS:][rng.random((n, d - N_OFFSET_COLS)) < 0.5] = 0.0
    return X0, rng.integers(0, 3, size=n), ptr


def _shift(X0, offset: float, sparse: bool):
    """X0 with ``offset`` added to the first columns (exact: offsets are integers <= 1e12)."""
    X = X0.copy()
    X[:, :N_OFFSET_COLS] += offset
    assert np.array_equal(X[:, :N_OFFSET_COLS] - offset, X0[:, :N_OFFSET_COLS])
    return sp.csr_matrix(X) if sparse else X


def _reference_f(X, y, ptr, w, C: float, form) -> float:
    """f(w) of the loss ``form`` (what the oracle evaluates) over explicit pairs, in long double."""
    L = np.longdouble
    Xd = (X.toarray() if sp.issparse(X) else X).astype(L)
    wl = w.astype(L)
    total = L(0)
    for q in range(ptr.shape[0] - 1):
        a, b = int(ptr[q]), int(ptr[q + 1])
        i, j = np.nonzero(y[a:b, None] > y[None, a:b])
        t = (Xd[a + i] - Xd[a + j]) @ wl
        if form.family == "smooth":
            total += np.sum(np.logaddexp(L(0), -t))
        else:
            for piece in form.pieces:
                total += L(piece.weight) * np.sum(np.maximum(L(0), L(1) + L(piece.offset) - t)
                                                  ** int(piece.power))
    return float(L(0.5) * (wl @ wl) + L(C) * total)


def _w(d: int = 6) -> np.ndarray:
    return np.random.default_rng(42).standard_normal(d) * 0.7


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("offset", OFFSETS)
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("oracle", list(ORACLES))
def test_f_equals_the_long_double_pair_sum_at_every_offset(oracle, loss, offset, sparse):
    X0, y, ptr = _dyadic(sparse=sparse)
    X = _shift(X0, offset, sparse)
    o = make_oracle(oracle, X, y, ptr, C=0.37, loss=loss)
    w = _w()
    ref = _reference_f(X, y, ptr, w, 0.37, o.loss)
    assert o.fun(w) == pytest.approx(ref, rel=1e-10)
    # the same value as without the offset (the same problem)
    assert o.fun(w) == pytest.approx(make_oracle(oracle, X0, y, ptr, C=0.37, loss=loss).fun(w),
                                     rel=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("offset", OFFSETS[1:])
@pytest.mark.parametrize("loss", ["squared_hinge", "huber", "hinge"])
@pytest.mark.parametrize("oracle", list(ORACLES))
def test_gradient_hv_and_diagonal_equal_the_brute_force_on_centred_data(oracle, loss, offset, sparse):
    X0, y, ptr = _dyadic(1, sparse=sparse)
    X = _shift(X0, offset, sparse)
    got = make_oracle(oracle, X, y, ptr, C=0.37, loss=loss)
    ref = make_oracle("brute", X0, y, ptr, C=0.37, loss=loss)  # the data without offset
    w, v = _w(), np.random.default_rng(7).standard_normal(6)
    assert got.fun(w) == pytest.approx(ref.fun(w), rel=1e-12)
    g = ref.grad(w)
    np.testing.assert_allclose(got.grad(w), g, rtol=1e-10, atol=1e-10 * np.abs(g).max())
    if loss != "hinge":
        hv = ref.hess_vec(v)
        np.testing.assert_allclose(got.hess_vec(v), hv, rtol=1e-10, atol=1e-10 * np.abs(hv).max())
        np.testing.assert_allclose(got.hess_diag(), ref.hess_diag(), rtol=1e-10)


def test_many_queries_take_the_fused_pass_with_centred_rows():
    """The fused passes (tree, counting: >= 8 blocks of queries) centre as the separate products."""
    rng = np.random.default_rng(3)
    sizes = rng.integers(5, 40, 2000)
    ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(ptr[-1])
    X0 = rng.integers(-2048, 2049, size=(n, 8)) / 1024.0
    y = rng.integers(0, 4, size=n)
    w, v = _w(8), rng.standard_normal(8)
    for sparse in (False, True):
        X = _shift(X0, 1e8, sparse)
        for name in ("tree", "counting"):
            fused = make_oracle(name, X, y, ptr, C=0.1, loss="huber")
            ref = make_oracle(name, X0, y, ptr, C=0.1, loss="huber")
            assert fused._fused and fused._prod.centred_queries() == 2000
            assert fused.fun(w) == pytest.approx(ref.fun(w), rel=1e-12)
            np.testing.assert_allclose(fused.grad(w), ref.grad(w), rtol=1e-10, atol=1e-8)
            np.testing.assert_allclose(fused.hess_vec(v), ref.hess_vec(v), rtol=1e-10, atol=1e-8)


def test_one_large_query_is_centred_in_every_product():
    """An AUC problem (one query of > 32k rows): row blocks of X v, X^T z and the diagonal."""
    rng = np.random.default_rng(4)
    n = 40_000
    X0 = rng.integers(-2048, 2049, size=(n, 5)) / 1024.0
    y = rng.integers(0, 2, size=n)
    ptr = np.array([0, n], dtype=np.int64)
    w, v = _w(5), rng.standard_normal(5)
    for sparse in (False, True):
        X = _shift(X0, 1e12, sparse)
        got = make_oracle("tree", X, y, ptr, C=1e-3)
        ref = make_oracle("tree", X0, y, ptr, C=1e-3)
        assert got._prod.centred_queries() == 1
        assert got.fun(w) == pytest.approx(ref.fun(w), rel=1e-11)
        np.testing.assert_allclose(got.grad(w), ref.grad(w), rtol=1e-9, atol=1e-7)
        np.testing.assert_allclose(got.hess_vec(v), ref.hess_vec(v), rtol=1e-9, atol=1e-7)
        np.testing.assert_allclose(got.hess_diag(), ref.hess_diag(), rtol=1e-9)


def test_only_columns_with_an_offset_are_centred_and_sparsity_is_kept():
    X0, y, ptr = _dyadic(2, sparse=True)
    assert XProducts(sp.csr_matrix(X0), ptr, centre=True).refs is None  # no offset: the plain kernels
    X = _shift(X0, 1e6, True)
    refs = XProducts(X, ptr, centre=True).refs
    ref_ptr, cols, vals = refs
    multi = np.diff(ptr) > 1  # a query of one document has no pair: nothing to centre
    assert np.array_equal(np.diff(ref_ptr), np.where(multi, N_OFFSET_COLS, 0))
    assert set(cols.tolist()) == set(range(N_OFFSET_COLS))
    assert np.array_equal(vals, X.toarray()[np.repeat(ptr[:-1], np.diff(ref_ptr)), cols])


def test_a_feature_constant_within_each_query_is_removed_exactly():
    """Query-level features (a length, an IDF sum) are constant per query: centred to 0."""
    X0, y, ptr = _dyadic(3)
    const = np.repeat(np.random.default_rng(0).uniform(1e5, 1e9, len(SIZES)), SIZES)
    X = np.column_stack([X0, const])
    o = make_oracle("counting", X, y, ptr, C=0.37)
    w = np.append(_w(), 5.0)
    assert o.fun(w) == pytest.approx(make_oracle("counting", X0, y, ptr, C=0.37).fun(w[:-1])
                                     + 12.5, rel=1e-13)
    assert o.grad(w)[-1] == 5.0  # the loss part is exactly 0 for that column


SOLVERS = [("prsvm_plus", "squared_hinge"), ("tron_tree", "squared_hinge"), ("prsvm", "squared_hinge"),
           ("newton_direct", "huber"), ("newton_joachims", "squared_hinge"),
           ("lbfgs_counting", "huber"), ("cutting_plane", "hinge"), ("cutting_plane_tree", "hinge")]


@pytest.fixture(scope="module")
def optima():
    """The optimum of each (loss, layout) on the problem without offset, by tight brute-force fits."""
    qid = np.repeat(np.arange(len(SIZES)), SIZES)
    out = {}
    for sparse in (False, True):
        X0, y, ptr = _dyadic(5, sparse=sparse)
        for loss, solver, tol in (("squared_hinge", "newton_brute", 1e-12),
                                  ("huber", "newton_brute", 1e-12),
                                  ("hinge", "cutting_plane_brute", 1e-10)):
            m = RankSVM(C=0.8, solver=solver, loss=loss, tol=tol).fit(X0, y, qid)
            assert m.converged_
            out[loss, sparse] = _reference_f(X0, y, ptr, m.coef_, 0.8,
                                             ORACLES["brute"].loss_form(loss))
    return out


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("offset", OFFSETS)
@pytest.mark.parametrize("solver,loss", SOLVERS)
def test_objective_and_stopping_rule_are_exact_at_every_offset(solver, loss, offset, sparse, optima):
    X0, y, ptr = _dyadic(5, sparse=sparse)
    X = _shift(X0, offset, sparse)
    qid = np.repeat(np.arange(len(SIZES)), SIZES)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        m = RankSVM(C=0.8, solver=solver, loss=loss).fit(X, y, qid)
    assert m.converged_
    form = ORACLES[m.extra_["oracle"]].loss_form(loss)
    f_true = _reference_f(X, y, ptr, m.coef_, 0.8, form)
    assert m.objective_ == pytest.approx(f_true, rel=1e-10)  # the stored objective is f(coef_)
    # what the stopping rule certified (1e-6 relative) holds against the optimum
    f_star = optima[loss, sparse]
    assert f_star * (1 - 1e-9) <= f_true <= f_star * (1 + 1.0001e-6)
    # the margins counted for the record are the exact ones
    n_pairs, n_ge1 = pairs_with_margin(m.coef_, X, y, ptr)
    ref_pairs, ref_ge1 = pairs_with_margin(m.coef_, X0, y, ptr)
    assert (n_pairs, n_ge1) == (ref_pairs, ref_ge1)


@pytest.mark.parametrize("seed", [0, 3])
@pytest.mark.parametrize("offset", [1e6, 1e8])
def test_issue_reproducer_prsvm_plus_and_tron_tree_report_f_of_coef(seed, offset):
    """Issue 26's reproducer: Gaussian features + offset, f(coef_) with explicit pairs."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(96, 5)) + offset
    y = rng.integers(0, 3, 96)
    q = np.repeat(np.arange(8), 12)
    ptr = np.arange(0, 97, 12)
    for solver in ("prsvm_plus", "tron_tree", "prsvm"):
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            m = RankSVM(C=1.0, solver=solver).fit(X, y, q)
        assert m.converged_
        f_true = _reference_f(X, y, ptr, m.coef_, 1.0, ORACLES["brute"].loss_form("squared_hinge"))
        assert m.objective_ == pytest.approx(f_true, rel=1e-10), solver


def test_what_float64_cannot_represent_is_refused_or_named():
    """Beyond float64: the representability error; a tol below f's resolution: a warning that
    says so, not "raise max_iter"."""
    X0, y, ptr = _dyadic(6)
    qid = np.repeat(np.arange(len(SIZES)), SIZES)
    with pytest.raises(ValueError, match="overflows float64 in the Hessian: scale the features"):
        RankSVM(C=1.0).fit(X0 * 1e155, y, qid)  # a spread, not an offset: nothing to centre
    with pytest.warns(ConvergenceWarning) as caught:
        m = RankSVM(C=0.8, solver="prsvm_plus", tol=1e-17, max_iter=20).fit(_shift(X0, 1e8, False),
                                                                           y, qid)
    msg = str(caught[0].message)
    assert not m.converged_ and "float64 resolves" in msg and "pass tol >= 1e-15" in msg
    assert "raise max_iter" not in msg


def _references_by_numpy(X, ptr, ratio=16.0):
    """(ref_ptr, cols, vals) of ``offset_references`` by the definition: per query of two or more
    documents, the columns whose values share one sign with min |x| >= ratio * (max - min)."""
    from rankbench.objective.centring import _centred

    counts, cols, vals = [], [], []
    for q in range(ptr.shape[0] - 1):
        a, e = int(ptr[q]), int(ptr[q + 1])
        c = 0
        if e - a >= 2:
            for j in range(X.shape[1]):
                if _centred(float(X[a:e, j].min()), float(X[a:e, j].max()), ratio):
                    cols.append(j)
                    vals.append(X[a, j])
                    c += 1
        counts.append(c)
    return np.concatenate([[0], np.cumsum(counts)]), np.array(cols, dtype=np.int64), np.array(vals)


@pytest.mark.parametrize("n_blocks", [1, 3, 8])
@pytest.mark.parametrize("seed", range(4))
def test_references_equal_their_definition_when_a_column_fails_late(seed, n_blocks):
    """The dense pass stops reading a query once no column can qualify (after rows 1, 2, 4 and
    every 8th): columns that fail only at the query's last row, at a row between two checks, by a
    sign change, a zero or a growing spread, and queries where one column keeps qualifying to the
    end, against the definition computed by numpy."""
    from rankbench.objective.centring import offset_references
    from rankbench.objective.products import query_blocks

    rng = np.random.default_rng(seed)
    sizes = rng.choice([1, 2, 3, 5, 8, 9, 16, 17, 33, 70], size=40)
    ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n, d = int(ptr[-1]), 5
    X = rng.integers(-2048, 2049, size=(n, d)) / 1024.0  # column 4: ordinary, never centred
    n_centred = 0
    for q in range(40):
        a, e = int(ptr[q]), int(ptr[q + 1])
        m = e - a
        X[a:e, 0] = 1e6 + rng.integers(0, 100, m)  # columns 0-3 qualify (spread < min / 16) ...
        X[a:e, 1] = -1e6 - rng.integers(0, 100, m)  # ... also with negative values
        X[a:e, 2] = 1e6 + rng.integers(0, 100, m)
        X[a:e, 3] = 5e5 + rng.integers(0, 100, m)
        # ... unless spoiled at a row of their own: none, some or all of them (a query where
        # every column fails early stops reading; one where the last to fail is any of the four
        # catches a check that looks at some columns only)
        keep = rng.random(4) < 0.3
        for j in np.flatnonzero(~keep):
            row = a + int(rng.integers(0, min(m, 6)) if rng.random() < 0.6 else rng.integers(0, m))
            X[row, j] = rng.choice([0.0, -X[row, j], 3 * X[row, j]])  # a zero, a sign, a spread
        n_centred += int(keep.sum()) if m >= 2 else 0
    assert n_centred > 0
    want = _references_by_numpy(X, ptr)
    got = offset_references(X, ptr, query_blocks(ptr, n_blocks))
    if want[1].size == 0:
        assert got is None
        return
    for g, w in zip(got, want, strict=True):
        assert np.array_equal(g, w)
    # the CSR pass (no early stop) agrees
    got_csr = offset_references(sp.csr_matrix(X), ptr, query_blocks(ptr, n_blocks))
    for g, w in zip(got_csr, want, strict=True):
        assert np.array_equal(g, w)
