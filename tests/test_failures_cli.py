"""Failure injection for the command line and the store (issue 11): every failure is said, with a
non-zero exit status, and no trained record is lost.

Each case runs the real ``rankbench`` command (a child process, as a user would) on the toy
dataset and solver of ``test_runner_toys``.
"""

from __future__ import annotations

import json
import os
import stat

import pytest

from rankbench.store import ResultStore
from test_cli import TESTS, rankbench, toy_conf


@pytest.fixture
def toy(tmp_path):
    return [*toy_conf(tmp_path / "conf"), f"store={tmp_path / 'store'}", "experiment_name=f"]


def records(tmp_path):
    return ResultStore(tmp_path / "store").records(on_corrupt="warn")


def test_a_failed_run_makes_the_sweep_exit_1_after_the_other_runs(tmp_path, toy):
    p = rankbench(["-m", *toy, "solver.alpha=0.5,1.0,2.0"], tmp_path, TOY_FAIL_ALPHA="1.0")
    assert p.returncode == 1, p.stderr
    recs = records(tmp_path)
    assert len(recs) == 15  # 3 jobs x 5 folds: the jobs after the failing one ran
    assert sum(r["status"] == "failed" for r in recs) == 5
    assert "5 run(s) failed" in p.stderr


def test_a_failed_single_run_exits_1(tmp_path, toy):
    p = rankbench([*toy, "solver.alpha=1.0"], tmp_path, TOY_FAIL_ALPHA="1.0")
    assert p.returncode == 1
    assert "run(s) failed; first: " in p.stderr


def test_an_empty_sweep_is_an_error(tmp_path, toy):
    p = rankbench(["-m", *toy, "solver.alpha=range(0,0)"], tmp_path)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "the sweep has no job" in p.stderr
    assert not (tmp_path / "store").exists()


def test_folds_outside_the_dataset_are_refused_before_any_run(tmp_path, toy):
    p = rankbench(["-m", *toy, "solver.alpha=1,2", "protocol.folds=[1,7]"], tmp_path)
    assert p.returncode == 2
    assert "protocol.folds [1, 7] not all among dataset 'toy' folds [1, 2, 3, 4, 5]" in p.stderr
    assert not (tmp_path / "store").exists()


def test_a_bad_value_in_a_sweep_aborts_before_any_run(tmp_path, toy):
    p = rankbench(["-m", *toy, "solver.log10_alpha=abc,-3"], tmp_path)
    assert p.returncode == 2, p.stderr
    assert "solver.log10_alpha must be a number" in p.stderr
    assert "Traceback" not in p.stderr and "UserWarning" not in p.stderr
    assert not (tmp_path / "store").exists()


def test_a_bad_value_in_one_run_is_one_line(tmp_path, toy):
    p = rankbench([*toy, "solver.log10_alpha=abc"], tmp_path)
    assert p.returncode == 2
    assert "solver.log10_alpha must be a number (the exponent of 10), got 'abc'" in p.stderr
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize("multirun", [False, True], ids=["run", "multirun"])
def test_an_unwritable_store_is_refused_before_training(tmp_path, toy, multirun):
    args = [a for a in toy if not a.startswith("store=")] + ["store=/proc/nope"]
    p = rankbench((["-m", "solver.alpha=1,2"] if multirun else []) + args, tmp_path)
    assert p.returncode == 3, p.stderr
    assert "results store /proc/nope is not writable" in p.stderr
    assert "Traceback" not in p.stderr


def test_a_write_failure_mid_sweep_keeps_the_record_and_exits_3(tmp_path, toy, monkeypatch):
    """Disk full at the 3rd record: the first two stay, the 3rd goes to the fallback file named."""
    shim = tmp_path / "shim"
    shim.mkdir()
    # a sitecustomize that makes the 3rd record write fail with ENOSPC in the child
    (shim / "sitecustomize.py").write_text(
        "import errno, rankbench.store as s\n"
        "_orig, _n = s.write_json_atomic, [0]\n"
        "def _w(path, obj):\n"
        "    if 'fallback' not in str(path) and str(path).endswith('.json'):\n"
        "        _n[0] += 1\n"
        "        if _n[0] == 3:\n"
        "            raise OSError(errno.ENOSPC, 'No space left on device', str(path))\n"
        "    return _orig(path, obj)\n"
        "s.write_json_atomic = _w\n")
    fallback = tmp_path / "fallback"
    env = {"PYTHONPATH": os.pathsep.join([str(shim), str(TESTS), os.environ.get("PYTHONPATH", "")]),
           "RANKBENCH_FALLBACK": str(fallback)}
    p = rankbench([*toy, "solver.alpha=1.0"], tmp_path, **env)
    assert p.returncode == 3, p.stdout + p.stderr
    assert "No space left on device" in p.stderr and str(fallback) in p.stderr
    kept = list(fallback.glob("f/*.json"))
    assert len(kept) == 1
    rec = json.loads(kept[0].read_text())
    assert rec["status"] == "ok" and rec["fold"] == 3  # the trained result is there
    assert sorted(r["fold"] for r in records(tmp_path)) == [1, 2]


def test_records_are_world_readable_whatever_the_umask(tmp_path, toy):
    old = os.umask(0o077)
    try:
        p = rankbench([*toy, "solver.alpha=1.0", "protocol.folds=[1]"], tmp_path)
    finally:
        os.umask(old)
    assert p.returncode == 0, p.stderr
    (path,) = ResultStore(tmp_path / "store").files()
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_ad_hoc_runs_do_not_go_to_the_committed_store(tmp_path, monkeypatch):
    monkeypatch.delenv("RANKBENCH_STORE", raising=False)
    args = [*toy_conf(tmp_path / "conf"), "solver.alpha=1.0", "protocol.folds=[1]"]
    p = rankbench(args, tmp_path)
    assert p.returncode == 0, p.stderr
    assert list((tmp_path / "results" / "local").glob("*/*.json"))
    assert not (tmp_path / "results" / "store").exists()


def test_report_only_says_corrupt_records_on_the_console(tmp_path, capsys):
    from rankbench.reproduce import main

    store = tmp_path / "store" / "chapelle_fixed_c"
    store.mkdir(parents=True)
    (store / ("0" * 40 + ".json")).write_text("{not json")
    code = main(["--report-only", "--quick", "--only", "chapelle2010/table3", "--results",
                 str(tmp_path / "out"), "--store", str(tmp_path / "store")])
    err = capsys.readouterr().err
    assert code == 1
    assert "corrupt record file skipped" in err and "invalid JSON" in err
