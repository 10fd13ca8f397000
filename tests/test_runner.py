"""Runner: run ids, one run's record against independent recomputation, resume, selection."""

from __future__ import annotations

import json
import os
import time

import numpy as np
import pytest

import bystander
import test_runner_toys as toys
from rankbench.runner import run_many, run_one
from rankbench.spec import RunSpec, run_id
from rankbench.store import ResultStore
from rankbench.sysinfo import PeakMemory


def spec(**over):
    s = {"experiment": "t", "dataset": "toy", "fold": 1, "solver": "toy_lsq",
         "params": {"alpha": 1.0}}
    s.update(over)
    return s


def test_run_id_identity_rules():
    base = run_id(spec())
    assert len(base) == 40 and base == run_id(spec())
    # presentation fields and 1 vs 1.0 do not change the identity
    assert run_id(spec(data_root="/somewhere", note="x")) == base
    assert run_id(spec(params={"alpha": 1})) == base
    assert run_id(spec(params={"alpha": 1.0, "verbose": True})) == base
    assert run_id(spec(params={"alpha": 1.0, "max_iter": None})) == base  # None = default
    # explicit defaults hash like omitted ones
    assert run_id(spec(seed=0, variant=None, eval_splits=["vali", "test"])) == base
    for changed in (spec(fold=2), spec(seed=1), spec(params={"alpha": 2.0}), spec(experiment="u"),
                    spec(data_params={"n_queries": 5}), spec(record_history=True)):
        assert run_id(changed) != base


@pytest.mark.parametrize(
    "bad, match",
    [
        (spec(fodl=1), "unknown run spec field"),
        (spec(fold=0), "fold"),
        (spec(seed=-1), "seed"),
        (spec(solver=""), "solver"),
        (spec(experiment="a/b"), "experiment tag"),
        (spec(eval_splits=["dev"]), "eval_splits"),
        (spec(params=[1]), "params"),
    ],
)
def test_bad_spec_is_refused(bad, match):
    with pytest.raises(ValueError, match=match):
        RunSpec.from_dict(bad)


def brute_auc(y, s):
    pos, neg = s[y > 0], s[y == 0]
    if len(pos) == 0 or len(neg) == 0:
        return None
    diff = pos[:, None] - neg[None, :]
    return float(np.mean((diff > 0) + 0.5 * (diff == 0)))


def test_run_one_record_matches_independent_computation():
    rec = run_one(spec(params={"alpha": 0.5}, eval_splits=["train", "vali", "test"],
                       record_history=True))
    assert rec["status"] == "ok", rec["error"]
    assert rec["run_id"] == run_id(spec(params={"alpha": 0.5}, eval_splits=["train", "vali", "test"],
                                        record_history=True))
    train, test = toys.toy_split(1, "train"), toys.toy_split(1, "test")
    est = toys.ToyLeastSquares(alpha=0.5).fit(train.X, train.y, train.qid)
    scores = est.decision_function(test.X)
    assert rec["train"]["objective"] == pytest.approx(est.objective_, rel=1e-12)
    assert rec["train"]["n_iter"] == 1 and rec["train"]["compile_s"] == 0.0
    assert rec["train"]["wall_s"] <= rec["train"]["wall_total_s"]  # fit_time_ excludes the rest
    assert rec["train"]["peak_mem_mb"] >= rec["train"]["mem_start_mb"] > 0
    assert set(rec["metrics"]) == {"train", "vali", "test"}
    assert {"ndcg@10", "map", "auc", "mauc", "p@10_macro"} <= set(rec["metrics"]["test"])
    # per-query values: one per test query in order of appearance, AUC against brute force
    pq = rec["per_query"]["test"]
    _, first = np.unique(test.qid, return_index=True)
    assert pq["qid"] == test.qid[np.sort(first)].tolist()
    for q, a in zip(pq["qid"], pq["auc"], strict=True):
        m = test.qid == q
        ref = brute_auc(test.y[m], scores[m])
        assert (a is None and ref is None) or a == pytest.approx(ref)
    # the aggregate is the mean of the per-query values
    assert rec["metrics"]["test"]["ndcg@10"] == pytest.approx(np.mean(pq["ndcg@10"]))
    assert rec["history"] == [{"iter": 1, "objective": pytest.approx(est.objective_)}]
    assert rec["extra"]["data"]["test"]["n_queries"] == test.n_queries
    assert rec["synthetic"] is True
    assert rec["env"]["versions"]["numpy"] == np.__version__
    assert rec["env"]["machine"]["cpu_count"] >= 1
    json.dumps(rec, allow_nan=False)  # strict JSON


def test_failed_run_is_a_record_not_an_exception(monkeypatch):
    monkeypatch.setenv("TOY_FAIL_ALPHA", "3")
    rec = run_one(spec(params={"alpha": 3.0}))
    assert rec["status"] == "failed"
    assert "ValueError: toy failure for alpha=3.0" in rec["error"]
    assert "Traceback" in rec["error"]
    monkeypatch.setattr(toys.ToyLeastSquares, "extra_", {"handle": object()}, raising=False)
    rec = run_one(spec(params={"alpha": 1.0}))
    assert rec["status"] == "failed" and "cannot be stored in a record" in rec["error"]
    assert rec["train"]["n_iter"] == 1  # what was measured before the failure is kept
    with pytest.raises(ValueError, match="unknown solver 'no_such_solver'"):  # before any data
        run_one(spec(solver="no_such_solver"))
    rec = run_one(spec(dataset="ohsumed", data_root="/nonexistent"))
    assert rec["status"] == "failed" and "DatasetNotFound" in rec["error"]


def test_run_many_resumes_and_redoes_failed(tmp_path, monkeypatch):
    store = ResultStore(tmp_path)
    specs = [spec(fold=f, params={"alpha": a}) for f in (1, 2, 3) for a in (1.0, 3.0)]
    monkeypatch.setenv("TOY_FAIL_ALPHA", "3")
    first = run_many(specs + specs[:2], store, progress=False)  # duplicates run once
    assert len(first) == 8 and first[6] == first[0]
    assert [r["status"] for r in first[:6]] == ["ok", "failed"] * 3
    assert len(list(store.files())) == 6
    stamps = {r["run_id"]: r["env"]["started"] for r in first}
    n_fits = toys._FITS["n"]
    monkeypatch.delenv("TOY_FAIL_ALPHA")
    second = run_many(specs, store, progress=False)
    assert toys._FITS["n"] - n_fits == 3  # only the three failed runs were redone
    assert all(r["status"] == "ok" for r in second)
    ok_before = [r for r in first[:6] if r["status"] == "ok"]
    assert all(store.get(r["run_id"])["env"]["started"] == stamps[r["run_id"]] for r in ok_before)
    assert sorted(p.stem for p in store.files()) == sorted({run_id(s) for s in specs})
    n_fits = toys._FITS["n"]
    third = run_many(specs[:2], store, progress=False, rerun=True)
    assert toys._FITS["n"] - n_fits == 2 and len(list(store.files())) == 6
    assert all(store.get(r["run_id"])["env"]["started"] == r["env"]["started"] for r in third)


def test_run_many_parallel_stores_each_once(tmp_path):
    specs = [spec(fold=f, params={"alpha": a}) for f in (1, 2) for a in (0.5, 2.0)]
    recs = run_many(specs, tmp_path, n_jobs=2, progress=False)
    assert [r["run_id"] for r in recs] == [run_id(s) for s in specs]
    assert all(r["status"] == "ok" for r in recs)
    assert sorted(p.stem for p in ResultStore(tmp_path).files()) == sorted(r["run_id"] for r in recs)
    # two workers on this machine's cores: each run's kernels got half of them (recorded)
    assert {r["env"]["numba_threads"] for r in recs} == {max(1, (os.cpu_count() or 1) // 2)}
    (serial,) = run_many([spec(fold=3)], tmp_path, progress=False)
    import numba

    assert serial["env"]["numba_threads"] == numba.get_num_threads()


def test_isolated_runs_turn_crashes_and_overruns_into_failed_records(tmp_path, monkeypatch):
    monkeypatch.setenv("TOY_KILL_ALPHA", "2.0")
    monkeypatch.setenv("TOY_HANG_ALPHA", "3.0")
    store = ResultStore(tmp_path)
    ok, killed = run_many([spec(params={"alpha": 1.0}), spec(params={"alpha": 2.0})], store,
                          progress=False, isolate=True)
    assert ok["status"] == "ok" and ok["env"]["pid"] != os.getpid()
    assert killed["status"] == "failed" and "killed by SIGKILL" in killed["error"]
    (hung,) = run_many([spec(params={"alpha": 3.0})], store, progress=False, timeout_s=3)
    assert hung["status"] == "failed" and "exceeded timeout_s=3 s" in hung["error"]
    stored = {r["run_id"]: r["status"] for r in store.records()}
    assert stored == {ok["run_id"]: "ok", killed["run_id"]: "failed", hung["run_id"]: "failed"}
    assert killed["spec"] == ok["spec"] | {"params": {"alpha": 2.0}}
    with pytest.raises(ValueError, match="timeout_s"):
        run_many([spec()], store, timeout_s=0)


def test_peak_memory_sees_a_peak_the_sampler_cannot():
    import psutil

    from rankbench.sysinfo import _maxrss_mb

    # enough to set a new lifetime maximum of this process, freed before the block ends
    rss = psutil.Process().memory_info().rss / 2**20
    extra_mb = max(0.0, _maxrss_mb() - rss) + 150
    with PeakMemory(interval=60.0) as mem:  # the sampler never fires
        block = np.ones(int(extra_mb * 2**20 // 8))
        del block
    assert mem.peak_mb - mem.start_mb >= extra_mb - 10


def test_peak_memory_sees_a_large_allocation():
    import mmap

    with PeakMemory(interval=0.001) as mem:
        # 40 MB of fresh anonymous pages, touched: malloc could hand back pages this process
        # already holds (after a long test session), which would not raise the RSS
        buf = mmap.mmap(-1, 40 * 2**20)
        block = np.frombuffer(buf, dtype=np.uint8)
        block[:] = 1
        # hold it across several sampling intervals: a block freed within one GIL slice
        # is below what any sampler can see (the ru_maxrss test covers that case)
        time.sleep(0.05)
        del block
        buf.close()
    assert mem.peak_mb - mem.start_mb >= 30


def test_history_runs_get_a_test_curve_and_graded_data_class_aucs():
    from rankbench.data import load_fold

    s = {"experiment": "t", "dataset": "synthetic", "fold": 1, "solver": "spd_pegasos",
         "params": {"lam": 1e-2, "n_iter": 2000, "checkpoints": [100, 1000, 2000]},
         "data_params": {"n_queries": 30, "n_levels": 3}, "record_history": True}
    rec = run_one(s)
    assert rec["status"] == "ok", rec["error"]
    # the test split fed the SPD convergence curve (evaluation only)
    assert [h["iteration"] for h in rec["history"]] == [100, 1000, 2000]
    assert all(np.isfinite(h["eval_objective"]) for h in rec["history"])
    # class-reference AUC: per query, class c against the rest, mean over defined queries
    from rankbench.estimators.registry import make_solver

    train, test = (load_fold("synthetic", 1, split, n_queries=30, n_levels=3)
                   for split in ("train", "test"))
    est = make_solver("spd_pegasos", s["params"]).fit(train.X, train.y, train.qid)
    scores = est.decision_function(test.X)
    for c in (1, 2):
        per_q = [brute_auc((test.y[a:b] == c).astype(int), scores[a:b])
                 for a, b in zip(test.query_ptr[:-1], test.query_ptr[1:], strict=True)]
        per_q = [v for v in per_q if v is not None]
        assert rec["metrics"]["test"][f"auc_class{c}"] == pytest.approx(np.mean(per_q), abs=1e-12)


def test_a_spec_is_normalized_once_per_run(tmp_path, monkeypatch):
    """RunSpec is built (validated, normalized, hashed) once; the runner never re-normalizes it."""
    from rankbench.spec import RunSpec

    specs = [RunSpec.from_dict(spec(fold=f)) for f in (1, 2, 3)]
    calls = []
    original = RunSpec._normalized.__func__

    def counting(cls, fields, problems):
        calls.append(fields.get("fold"))
        return original(cls, fields, problems)

    monkeypatch.setattr(RunSpec, "_normalized", classmethod(counting))
    recs = run_many(specs, ResultStore(tmp_path), progress=False)
    assert [r["status"] for r in recs] == ["ok"] * 3
    assert calls == []


ISOLATED_RUN_THREAD = bystander.SCRIPT + """
import test_runner_toys  # registers the toy solver and data set
from rankbench.runner import run_isolated
run_isolated({"experiment": "t", "dataset": "toy", "fold": 1, "solver": "toy_lsq",
              "params": {"alpha": 1.0}}, sys.argv[2])
"""


def test_an_isolated_run_ends_when_a_signal_reaches_another_thread_of_its_parent(tmp_path):
    """``run_isolated`` waits for its run in slices (``runner._join_awake``): a SIGINT that the
    kernel hands to another thread of the parent (here on purpose, by tgkill) is handled within
    one, and the hanging run is stopped with it.  Before, the parent slept in its join until the
    run ended (the toy run hangs for 600 s)."""
    import signal
    import subprocess
    import sys
    from pathlib import Path

    tid_file, marker = tmp_path / "tid.txt", tmp_path / "hang"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent), "TOY_HANG_AFTER": "0",
           "TOY_HANG_MARKER": str(marker)}
    proc = subprocess.Popen([sys.executable, "-c", ISOLATED_RUN_THREAD, str(tid_file),
                             str(tmp_path / "store")], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        t0 = time.monotonic()
        while not (marker.exists() and tid_file.exists()) and time.monotonic() - t0 < 120:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        assert marker.exists(), "the isolated toy run never started"
        time.sleep(0.2)  # the pid is written before the sleep starts
        child = int(marker.read_text())
        bystander.signal_bystander(proc.pid, tid_file, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        try:  # the run's process, still there and not a zombie
            left = open(f"/proc/{child}/stat").read().split()[2] != "Z"
        except FileNotFoundError:
            left = False
    finally:
        if marker.exists():  # a run the parent left behind (it holds the parent's pipes too)
            import contextlib

            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(marker.read_text()), signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert "KeyboardInterrupt" in err, err
    assert not left, "the parent ended and left its run running"
