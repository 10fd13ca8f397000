"""Exit codes as documented (issue 26): docs/interfaces.md's "Exit codes" table, row by row.

Each row's situation is run here and its status compared with the table's, so the table and
the code cannot drift apart.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"


def documented() -> dict[str, int]:
    text = (ROOT / "docs" / "interfaces.md").read_text()
    table = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| ([a-z-]+) \| .* \| (\d+) \|$", table, flags=re.M)
    return {rid: int(code) for rid, code in rows}


def _env(**extra):
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    env.pop("TOY_HANG_AFTER", None)
    env.update(extra)
    return env


def _toy_conf(root: Path) -> list[str]:
    (root / "dataset").mkdir(parents=True)
    (root / "solver").mkdir(parents=True)
    (root / "dataset" / "toy.yaml").write_text(
        "name: toy\nvariant: null\nfolds: [1, 2, 3, 4, 5]\ndata_params: {}\neval_splits: null\n")
    (root / "solver" / "toy_lsq.yaml").write_text("name: toy_lsq\nalpha: 1.0\n")
    return [f"hydra.searchpath=[file://{root}]", "dataset=toy", "solver=toy_lsq",
            "solver_modules=[test_runner_toys]", "progress=false", "protocol.folds=[1]"]


def _rankbench(args, cwd, **env):
    return subprocess.run([sys.executable, "-m", "rankbench", *args], cwd=cwd, env=_env(**env),
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def codes():
    table = documented()
    assert len(table) >= 10, table
    return table


@pytest.mark.slow
def test_run_codes(tmp_path, codes):
    base = _toy_conf(tmp_path / "conf")
    store = f"store={tmp_path / 'store'}"
    assert _rankbench([*base, store], tmp_path).returncode == codes["run-ok"]
    p = _rankbench([*base, store, "solver.alpha=3"], tmp_path, TOY_FAIL_ALPHA="3")
    assert p.returncode == codes["run-failed"], p.stderr[-500:]
    p = _rankbench([*base, store, "solver.alpha=-1"], tmp_path)
    assert p.returncode == codes["config-value"] and "alpha must be" in p.stderr
    for args in ([base[0], "solver=nosuch"], ["-m", base[0], "solver=nosuch,toy_lsq"]):
        p = _rankbench([*args, "dataset=toy", store], tmp_path)
        assert p.returncode == codes["config-choice"], (args, p.stderr[-500:])
        assert "unknown solver 'nosuch'" in p.stderr
    p = _rankbench([*base, store, "solver.alphaa=1"], tmp_path)
    assert p.returncode == codes["config-key"] and "did you mean 'alpha'" in p.stderr
    blocker = tmp_path / "a-file"  # a store below a regular file cannot be created, even by root
    blocker.write_text("")
    p = _rankbench([*base, f"store={blocker / 'store'}"], tmp_path)
    assert p.returncode == codes["store-unwritable"], p.stderr[-500:]
    assert "is not writable" in p.stderr


def test_results_codes(tmp_path, codes):
    from rankbench.store import spec_digest

    store = tmp_path / "store"
    p = subprocess.run([sys.executable, "-m", "rankbench", "results", "--store", str(store)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == codes["results-ok"]
    (store / "x").mkdir(parents=True)
    spec = {"experiment": "x", "dataset": "synthetic", "fold": 1, "solver": "prsvm_plus"}
    rid = spec_digest(spec)
    (store / "x" / f"{rid}.json").write_text(json.dumps(
        {"run_id": rid, "status": "ok", "experiment": "x", "metrics": "abc", "spec": spec}))
    p = subprocess.run([sys.executable, "-m", "rankbench", "results", "--store", str(store)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == codes["results-corrupt"] and "field 'metrics'" in p.stderr
    f = tmp_path / "file"
    f.write_text("")
    p = subprocess.run([sys.executable, "-m", "rankbench", "results", "--store", str(f)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == codes["results-store-file"]


def test_sigterm_code(tmp_path, codes):
    base = _toy_conf(tmp_path / "conf")
    marker = tmp_path / "hang"
    proc = subprocess.Popen([sys.executable, "-m", "rankbench", *base, f"store={tmp_path / 's'}"],
                            cwd=tmp_path, env=_env(TOY_HANG_AFTER="0", TOY_HANG_MARKER=str(marker)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.monotonic()
    while not marker.exists() and time.monotonic() - t0 < 120:
        time.sleep(0.2)
    assert marker.exists(), "the toy fit never started"
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == codes["interrupted"]
