"""Warm-started C paths in the harness: warm_start=true with use_grid=true (issue 14).

One job fits each fold's solver.grid.C values with ranksvm_path and stores one record per C,
marked train.warm_start; the reference is the cold per-C run of the same spec without
warm_start (run_one), which must reach the same objective within the stopping rule's tol.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from rankbench.runner import run_many, run_one, run_unit
from rankbench.spec import RunSpec, run_id
from rankbench.store import ResultStore

TESTS = Path(__file__).resolve().parent
DATA = {"n_queries": 30, "docs_per_query": 20, "n_features": 8}
PATH = [1e-3, 1e-2, 1e-1, 1.0]


def spec(C=1e-2, warm_start=PATH, **kw):
    s = {"experiment": "path", "dataset": "synthetic", "variant": "letor_like", "fold": 1,
         "solver": "prsvm_plus", "params": {"C": C}, "data_params": dict(DATA),
         "eval_splits": ["vali", "test"], "warm_start": warm_start}
    s.update(kw)
    return s


def test_warm_start_spec_field_is_checked_and_hashed():
    assert RunSpec.from_dict(spec(warm_start=[1.0, 1e-3, 1e-2, 1e-1])).path == tuple(PATH)  # sorted
    assert run_id(spec()) != run_id(spec(warm_start=None))  # warm times never pose as cold ones
    assert run_id(spec(warm_start=None)) == run_id({k: v for k, v in spec().items() if k != "warm_start"})
    with pytest.raises(ValueError, match="params.C .* must be one of the path's C values"):
        RunSpec.from_dict(spec(C=5.0))
    with pytest.raises(ValueError, match="'warm_start'.*finite and > 0"):
        RunSpec.from_dict(spec(warm_start=[1e-3, -1.0]))
    with pytest.raises(ValueError, match="'warm_start'.*non-empty"):
        RunSpec.from_dict(spec(warm_start=[]))
    with pytest.raises(ValueError, match="exclude each other"):
        RunSpec.from_dict(spec(tune={"param": "C", "grid": [1.0, 2.0], "metric": "vali.ndcg@10"}))
    members = RunSpec.from_dict(spec(C=1.0)).path_members()
    assert [m.params["C"] for m in members] == PATH
    assert run_id(members[-1]) == run_id(spec(C=1.0))


def test_run_path_records_match_cold_runs():
    records = run_unit(spec())
    assert [r["params"]["C"] for r in records] == PATH
    assert [r["run_id"] for r in records] == [run_id(m) for m in RunSpec.from_dict(spec()).path_members()]
    for k, (rec, C) in enumerate(zip(records, PATH, strict=True)):
        assert rec["status"] == "ok", rec["error"]
        t = rec["train"]
        assert t["warm_start"] is True
        assert t["warm_start_from_C"] == (PATH[k - 1] if k else None)
        assert 0 < t["wall_s"] <= t["path_wall_s"]
        cold = run_one(spec(C=C, warm_start=None))
        assert "warm_start" not in cold["train"]
        tol = cold["train"]["convergence"]["tol"]
        assert t["converged"] and cold["train"]["converged"]
        assert t["convergence"]["stopping_rule"] == cold["train"]["convergence"]["stopping_rule"]
        assert t["objective"] == pytest.approx(cold["train"]["objective"], rel=tol)
        # the same data, the same metrics keys; the scores of two tol-accurate optima agree closely
        assert rec["extra"]["data"] == cold["extra"]["data"]
        assert rec["metrics"].keys() == cold["metrics"].keys()
        assert rec["metrics"]["test"]["ndcg@10"] == pytest.approx(cold["metrics"]["test"]["ndcg@10"],
                                                                  abs=0.02)
    assert sum(r["train"]["wall_s"] for r in records) <= records[0]["train"]["path_wall_s"]
    # run_one of a warm-start spec runs its path and returns its own point's record
    one = run_one(spec(C=1e-1))
    assert one["run_id"] == records[2]["run_id"] and one["train"]["warm_start_from_C"] == 1e-2


def test_run_path_refusals_and_failures():
    with pytest.raises(ValueError, match="takes no starting point"):  # refused before any data
        run_unit(spec(solver="sgd_queries"))
    recs = run_unit(spec(dataset="ohsumed", variant=None, data_root="/nonexistent"))
    assert {r["status"] for r in recs} == {"failed"}


def test_run_many_runs_each_path_once_and_resumes(tmp_path):
    store = ResultStore(tmp_path / "store")
    specs = [spec(C=C, fold=f) for f in (1, 2) for C in PATH]
    recs = run_many(specs, store, progress=False)
    assert [r["run_id"] for r in recs] == [run_id(s) for s in specs]
    assert all(r["status"] == "ok" and r["train"]["warm_start"] for r in recs)
    # one path per fold: every record of a fold carries that path's total time
    for f in (1, 2):
        assert len({r["train"]["path_wall_s"] for r in recs if r["fold"] == f}) == 1
    assert len(store.records()) == 8
    # one record lost: its whole path runs again (the warm times depend on the path)
    lost = recs[2]
    store.path_for(lost["run_id"], "path").unlink()
    again = run_many(specs, store, progress=False)
    fold1 = [r for r in again if r["fold"] == 1]
    assert len({r["train"]["path_wall_s"] for r in fold1}) == 1
    assert fold1[0]["train"]["path_wall_s"] != recs[0]["train"]["path_wall_s"]
    assert [r["train"]["path_wall_s"] for r in again if r["fold"] == 2] == \
        [r["train"]["path_wall_s"] for r in recs if r["fold"] == 2]  # fold 2 stayed stored


def test_run_many_isolated_path(tmp_path):
    store = ResultStore(tmp_path / "store")
    specs = [spec(C=C) for C in PATH[:2]]
    recs = run_many(specs, store, progress=False, isolate=True)
    assert [r["params"]["C"] for r in recs] == PATH[:2]
    assert all(r["status"] == "ok" for r in recs)
    assert len(store.records()) == len(PATH)  # the whole path is stored


# ---------------------------------------------------------------- config and CLI
def run_cli(args: list[str], monkeypatch) -> int:
    from rankbench.__main__ import main

    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setattr(sys, "argv", ["rankbench"])
    try:
        return main(args) or 0
    except SystemExit as exc:
        return int(exc.code or 0)


BASE = ["dataset=synthetic", "solver=prsvm_plus", "progress=false", "protocol.folds=[1,2]",
        "+dataset.data_params.n_queries=30", "+dataset.data_params.docs_per_query=20",
        "+dataset.data_params.n_features=8", "solver.grid.C=[1.0,0.001,0.1]"]


def test_cli_grid_job_with_warm_start_stores_one_record_per_C(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "store"
    assert run_cli([*BASE, "use_grid=true", "warm_start=true", f"store={store}"], monkeypatch) == 0
    recs = ResultStore(store).records()
    assert sorted((r["fold"], r["params"]["C"]) for r in recs) == [
        (f, C) for f in (1, 2) for C in (0.001, 0.1, 1.0)]
    for r in recs:
        assert r["status"] == "ok" and r["train"]["warm_start"] is True
        assert r["spec"]["warm_start"] == [0.001, 0.1, 1.0]
    # the default stays cold per-C runs, other run ids
    cold = tmp_path / "cold"
    assert run_cli([*BASE, "use_grid=true", f"store={cold}"], monkeypatch) == 0
    crecs = ResultStore(cold).records()
    assert len(crecs) == 6 and not any("warm_start" in r["train"] for r in crecs)
    assert not {r["run_id"] for r in crecs} & {r["run_id"] for r in recs}
    w = {(r["fold"], r["params"]["C"]): r["train"]["objective"] for r in recs}
    for r in crecs:
        assert w[(r["fold"], r["params"]["C"])] == pytest.approx(r["train"]["objective"], rel=1e-6)


@pytest.mark.parametrize("extra,message", [
    (["warm_start=true"], "warm_start=true needs use_grid=true"),
    (["use_grid=true", "warm_start=true", "solver=sgd_queries"], "takes no starting point"),
    (["use_grid=true", "warm_start=true", "solver.grid.C=[0.1,0.1]"], "more than once"),
    (["use_grid=true", "warm_start=true", "~solver.grid.C", "+solver.grid.tol=[0.1]"],
     "needs solver.grid.C"),
])
def test_cli_refuses_bad_warm_start_configs(tmp_path, monkeypatch, capsys, extra, message):
    monkeypatch.chdir(tmp_path)
    assert run_cli([*BASE, *extra, f"store={tmp_path / 's'}"], monkeypatch) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def test_path_objectives_are_the_path_functions(tmp_path):
    """The runner's records hold what ranksvm_path itself returns for the same data."""
    from rankbench import ranksvm_path
    from rankbench.runner import load_split

    recs = run_unit(spec())
    tr = load_split(spec(), "train")
    p = ranksvm_path(tr.X, tr.y, tr.qid, PATH, solver="prsvm_plus")
    np.testing.assert_allclose([r["train"]["objective"] for r in recs], p.objective, rtol=1e-12)
    np.testing.assert_array_equal([r["train"]["n_iter"] for r in recs], p.n_iter)
    np.testing.assert_array_equal([r["train"]["n_cg_iter"] for r in recs], p.n_cg_iter)
    # the warm-started C values (all but the first) ran newton_cg's warm-start options
    assert [r["extra"].get("warm_newton", False) for r in recs] == [False] + [True] * (len(PATH) - 1)
