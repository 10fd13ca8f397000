"""CG steps are non-increasing in tol (issue 21): the Newton path of every optimizer is the same
for every tol where the decrement's certified bound settles the stop, so a looser tol ends it on
the same path, never later.  Before, prsvm_plus on OHSUMED Fold1 took 23, 8, 30, 16, 26 CG steps
at tol 1e-2, 1e-3, 1e-4, 1e-6, 1e-8 (a confirming solve at candidate stops of a loose tol)."""

from __future__ import annotations

import os

import pytest

from rankbench import RankSVM

TOLS = (1e-2, 1e-3, 1e-4, 1e-6, 1e-8)


def _fold(name):
    from rankbench.data import dataset_available, load_fold

    if not os.environ.get("RANKBENCH_DATA") or not dataset_available(name):
        pytest.skip(f"{name} not under RANKBENCH_DATA")
    return load_fold(name, 1, "train")


@pytest.mark.parametrize("name, C", [("ohsumed", 1e-4), ("mq2008", 1e-3)])
@pytest.mark.parametrize("solver", ["prsvm_plus", "prsvm", "newton_tree", "tron_tree", "tron_counting"])
def test_cg_steps_do_not_grow_when_tol_loosens(name, C, solver):
    d = _fold(name)
    fits = [RankSVM(C=C, solver=solver, tol=tol).fit(d.X, d.y, qid=d.qid) for tol in TOLS]
    assert all(m.converged_ for m in fits)
    steps = [m.n_cg_iter_ for m in fits]
    assert steps == sorted(steps), dict(zip(TOLS, steps, strict=True))
    # and each stops where its tol says: f within tol of the tightest fit's f
    f_best = fits[-1].objective_
    for tol, m in zip(TOLS, fits, strict=True):
        assert m.objective_ - f_best <= 10 * tol * abs(f_best)
