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
    m = RankSVM(C=0.5, solver="tron_tree", tol=1e-8, solver_options={"cg_history": True},
                keep_coef_history=True).fit(X, y, qid)
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


def _planned(solver, params, hist, objective):
    from rankbench.report.records import PlannedRun

    return PlannedRun(spec={"solver": solver, "params": params, "fold": 1}, resolution=None,
                      dataset_key="d", record={"status": "ok", "history": hist,
                                               "train": {"objective": objective}})


def test_fig2_f_star_is_the_best_of_every_run_of_the_same_problem():
    """Not each run's own last value: TRON's f* comes from the Newton reference at the same C;
    another C or another loss is another problem."""
    from rankbench.report.renderers.lee_lin import (
        best_objective_per_problem,
        iterate_scores,
        problem_key,
    )

    tron = _planned("tron_tree", {"C": 0.1}, [
        {"iter": 0, "objective": 10.0, "grad_norm": 5.0, "cg_iter": 0},
        {"iter": 1, "objective": 4.0, "grad_norm": float("nan"), "cg_iter": 1, "cg_step": True},
        {"iter": 1, "objective": 3.0, "grad_norm": float("nan"), "cg_iter": 2, "cg_step": True},
        {"iter": 1, "objective": 3.0, "grad_norm": 0.1, "cg_iter": 2}], 3.0)
    newton = _planned("newton_tree", {"C": 0.1, "tol": 1e-12}, [], 2.5)
    other_c = _planned("newton_tree", {"C": 1.0}, [], 1.0)
    cp = _planned("cutting_plane", {"C": 0.1}, [{"iter": 1, "objective": 7.0, "cg_iter": 1}], 7.0)
    best, src = best_objective_per_problem([tron, newton, other_c, cp])
    assert problem_key(tron) == ("squared_hinge", 0.1) and problem_key(cp) == ("hinge", 0.1)
    assert best[("squared_hinge", 0.1)] == 2.5 and src[("squared_hinge", 0.1)] == {"tron_tree", "newton_tree"}
    assert best[("hinge", 0.1)] == 7.0 and best[("squared_hinge", 1.0)] == 1.0
    # TRON's points: the start and one per CG iteration, at the CG count
    assert [(p["x"], p["objective"]) for p in iterate_scores(tron)] == [(0, 10.0), (1, 4.0), (2, 3.0)]
