"""TRON's history per CG iteration (Lee & Lin suppl. Fig. (II)): one row per CG step, recorded at
run time, without changing the iterates."""

import numpy as np
import pytest

from rankbench.estimators.ranksvm import RankSVM
from rankbench.objective import make_oracle


def _data():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((120, 6))
    y = rng.integers(0, 3, size=120)
    qid = np.repeat(np.arange(4), 30)
    return X, y, qid


def test_one_row_per_cg_iteration_with_its_trial_point():
    X, y, qid = _data()
    plain = RankSVM(C=0.5, solver="tron_tree", tol=1e-8).fit(X, y, qid)
    m = RankSVM(C=0.5, solver="tron_tree", tol=1e-8, cg_history=True, keep_coef_history=True).fit(X, y, qid)
    # the same iterates and result as without the per-CG rows
    np.testing.assert_array_equal(m.coef_, plain.coef_)
    assert m.n_cg_iter_ == plain.n_cg_iter_
    cg = [h for h in m.history_ if h.get("cg_step")]
    outer = [h for h in m.history_ if not h.get("cg_step")]
    assert len(outer) == len(plain.history_)
    assert [h["cg_iter"] for h in cg] == list(range(1, m.n_cg_iter_ + 1))
    ref = make_oracle("brute", X, y, np.array([0, 30, 60, 90, 120]), C=0.5)
    for h in cg:
        assert h["objective"] == pytest.approx(ref.fun(h["coef"]), rel=1e-12)
    # an accepted outer iterate is the trial point of its last CG iteration
    for h in outer[1:]:
        last = [c for c in cg if c["cg_iter"] == h["cg_iter"]][-1]
        np.testing.assert_allclose(last["coef"], h["coef"], rtol=0, atol=1e-12)
