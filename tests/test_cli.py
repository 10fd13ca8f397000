"""Command line end to end: Hydra multirun sweeps, preflight, kill-and-resume, `rankbench results`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rankbench.cli import results_main
from rankbench.selection import select_per_fold
from rankbench.store import ResultStore

TESTS = Path(__file__).resolve().parent


def toy_conf(root: Path) -> list[str]:
    """Write the toy dataset / solver configs under ``root``; return the overrides that use them."""
    (root / "dataset").mkdir(parents=True)
    (root / "solver").mkdir(parents=True)
    (root / "dataset" / "toy.yaml").write_text(
        "name: toy\nvariant: null\nfolds: [1, 2, 3, 4, 5]\ndata_params: {}\n"
        "eval_splits: null\n")
    (root / "solver" / "toy_lsq.yaml").write_text("name: toy_lsq\nalpha: 1.0\nlog10_alpha: null\n")
    return [f"hydra.searchpath=[file://{root}]", "dataset=toy", "solver=toy_lsq",
            "solver_modules=[test_runner_toys]", "progress=false"]


def child_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("TOY_HANG_AFTER", None)
    env.pop("TOY_FAIL_ALPHA", None)
    env.update(extra)
    return env


def rankbench(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rankbench", *args], cwd=cwd, env=child_env(**env),
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def sweep(tmp_path):
    store = tmp_path / "store"
    args = ["-m", *toy_conf(tmp_path / "conf"), f"store={store}", "experiment_name=sweep",
            "solver.log10_alpha=range(-1,2)"]
    return args, store


def run_in_process(args: list[str], monkeypatch) -> int:
    """``rankbench ARGS`` in this process (Hydra included); the exit code."""
    from rankbench.__main__ import main

    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setattr(sys, "argv", ["rankbench"])
    try:
        return main(args) or 0
    except SystemExit as exc:
        return int(exc.code or 0)


def test_preflight_refuses_a_bad_sweep_before_any_run(tmp_path, sweep, monkeypatch, capsys):
    args, store = sweep
    args = [a for a in args if not a.startswith("solver.log10_alpha")] + ["solver.alpha=1,-1,2"]
    monkeypatch.chdir(tmp_path)
    assert run_in_process(args, monkeypatch) == 2
    err = capsys.readouterr().err
    assert "alpha must be a positive finite number, got -1" in err
    assert "3 sweep jobs checked" in err
    assert not store.exists()  # not one run started


def test_single_run_config_error_exits_2(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = run_in_process([*toy_conf(tmp_path / "conf"), "protocol.selection_metric=vali.bogus"],
                          monkeypatch)
    assert code == 2
    err = capsys.readouterr().err
    assert "protocol.selection_metric 'vali.bogus'" in err
    assert "Traceback" not in err


def test_sweep_killed_halfway_resumes_with_every_record_once(tmp_path, sweep):
    """A 3-job x 5-fold multirun, SIGKILLed mid-fit of its 8th run, then re-run to completion."""
    args, store = sweep
    marker = tmp_path / "hanging"
    proc = subprocess.Popen([sys.executable, "-m", "rankbench", *args], cwd=tmp_path,
                            env=child_env(TOY_HANG_AFTER="7", TOY_HANG_MARKER=str(marker)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        while not marker.exists():
            assert proc.poll() is None, "sweep ended before reaching the hang point"
            assert time.monotonic() < deadline, "sweep never reached the hang point"
            time.sleep(0.05)
        worker = int(marker.read_text())
        os.kill(worker, signal.SIGKILL)  # the process running the jobs (basic launcher)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0
    st = ResultStore(store)
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in st.files()}
    assert len(before) == 7 and st.scan()[1] == []

    res = rankbench(args, tmp_path)
    assert res.returncode == 0, res.stderr
    records, corrupt = st.scan()
    assert corrupt == [] and len(records) == 15
    assert all(r["status"] == "ok" for r in records)
    assert len({r["run_id"] for r in records}) == 15
    combos = {(r["fold"], round(r["params"]["alpha"], 12)) for r in records}
    assert combos == {(f, a) for f in range(1, 6) for a in (0.1, 1.0, 10.0)}
    after = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in st.files()}
    assert all(after[name] == val for name, val in before.items())  # finished runs not redone
    assert not list(store.rglob(".*"))  # no temporary file left

    # the end-of-sweep summary shows the per-fold selection the store implies
    assert "sweep of 3 job(s), 15 run(s)" in res.stderr
    out = res.stdout
    assert "15 ok / 0 failed runs" in out
    sel = select_per_fold(st.to_frame())
    block = out.split("model selection on vali.ndcg@10 (per fold):")[1].splitlines()[2:7]
    for line, fold, alpha in zip(block, sel["fold"], sel["params.alpha"], strict=True):
        assert line.split()[:2] == ["toy", "[synthetic]"]  # generated data is labelled
        cells = line.replace(" [synthetic]", "").split()
        assert cells[1] == str(fold) and cells[3] == f"alpha={alpha:g}"


# ---------------------------------------------------------------- rankbench results
@pytest.fixture
def filled_store(tmp_path, monkeypatch):
    from rankbench.runner import run_many

    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setenv("TOY_FAIL_ALPHA", "100")
    specs = [{"experiment": "e1" if a < 50 else "e2", "dataset": "toy", "fold": f,
              "solver": "toy_lsq", "params": {"alpha": a}}
             for a in (1e-2, 1.0, 100.0) for f in (1, 2)]
    run_many(specs, tmp_path / "store", progress=False)
    return tmp_path / "store"


def test_results_table_filters_and_formats(filled_store, capsys):
    assert results_main(["--store", str(filled_store)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:4] == ["experiment", "dataset", "fold", "solver"]
    assert len(out) == 7
    assert results_main(["--store", str(filled_store), "--status", "failed", "--errors"]) == 0
    out = capsys.readouterr().out
    assert "toy failure for alpha=100.0" in out and out.count("e2") == 2
    assert results_main(["--store", str(filled_store), "-e", "e1", "-p", "alpha=0.01",
                         "--format", "json", "-c", "fold,params.alpha,test.ndcg@10"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["fold"], r["params.alpha"]) for r in rows] == [(1, 0.01), (2, 0.01)]
    assert all(0 <= r["test.ndcg@10"] <= 1 for r in rows)
    assert results_main(["--store", str(filled_store), "-c", "nope"]) == 2
    assert "unknown column" in capsys.readouterr().err
    # toy data is generated: tables say so, machine formats keep the plain name
    assert results_main(["--store", str(filled_store), "--mean"]) == 0
    assert "toy [synthetic]" in capsys.readouterr().out
    assert results_main(["--store", str(filled_store), "--format", "csv", "-c", "dataset"]) == 0
    assert set(capsys.readouterr().out.split()) == {"dataset", "toy"}


def test_results_select_matches_select_per_fold(filled_store, capsys):
    assert results_main(["--store", str(filled_store), "--select", "--format", "csv",
                         "-c", "fold,params.alpha,test.ndcg@10"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    sel = select_per_fold(ResultStore(filled_store).to_frame())
    expected = [f"{f},{a},{t}" for f, a, t in zip(sel["fold"], sel["params.alpha"],
                                                   sel["test.ndcg@10"], strict=True)]
    assert lines[1:] == expected


def test_results_compare_needs_two_solvers(filled_store, capsys):
    assert results_main(["--store", str(filled_store), "--compare"]) == 0
    assert "nothing to compare" in capsys.readouterr().err


def test_results_reports_a_corrupt_file_by_name(filled_store, capsys):
    bad = next(ResultStore(filled_store).files())
    bad.write_text(bad.read_text()[:100])  # truncated
    assert results_main(["--store", str(filled_store)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "invalid JSON" in err
    assert results_main(["--store", str(filled_store), "--skip-corrupt"]) == 0
    cap = capsys.readouterr()
    assert str(bad) in cap.err and len(cap.out.strip().splitlines()) == 6  # header + 5 good


def test_results_subcommand_through_python_m(filled_store, tmp_path):
    res = rankbench(["results", "--store", str(filled_store), "--mean"], tmp_path)
    assert res.returncode == 0, res.stderr
    assert "n_folds" in res.stdout.splitlines()[0]


def test_grid_job_runs_the_grid_and_prints_the_selection(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    conf = toy_conf(tmp_path / "conf")
    (tmp_path / "conf" / "solver" / "toy_lsq.yaml").write_text(
        "name: toy_lsq\nalpha: 1.0\nlog10_alpha: null\ngrid:\n  alpha: [0.01, 100.0]\n")
    store = tmp_path / "store"
    assert run_in_process([*conf, "use_grid=true", "protocol.folds=[2,3]", f"store={store}"],
                          monkeypatch) == 0
    out = capsys.readouterr().out
    records = ResultStore(store).records()
    assert sorted((r["fold"], r["params"]["alpha"]) for r in records) == [
        (2, 0.01), (2, 100.0), (3, 0.01), (3, 100.0)]
    sel = select_per_fold(ResultStore(store).to_frame())
    block = out.split("model selection on vali.ndcg@10 (per fold):")[1].splitlines()[2:4]
    for line, fold, alpha in zip(block, sel["fold"], sel["params.alpha"], strict=True):
        cells = line.replace(" [synthetic]", "").split()
        assert cells[1] == str(fold) and cells[3] == f"alpha={alpha:g}"
