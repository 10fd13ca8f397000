"""Launchers: a sweep through a real (loopback) Ray cluster and through submitit's local executor.

Hydra's joblib launcher takes the same path as these (pickled task function, summary
callback in the driver); its test checks the numba threads each job's runs get.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from rankbench.store import ResultStore
from test_cli import child_env, toy_conf


def run_sweep(tmp_path: Path, launcher: list[str], store: Path, **env: str):
    args = ["-m", *toy_conf(tmp_path / "conf"), f"store={store}", "experiment_name=launch",
            "protocol.folds=[1,2]", "solver.alpha=0.1,1,10", *launcher]
    proc = subprocess.Popen([sys.executable, "-m", "rankbench", *args], cwd=tmp_path,
                            env=child_env(**env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    out, err = proc.communicate(timeout=240)
    return proc.pid, proc.returncode, out, err


def check_every_record_once(store: Path, driver_pid: int) -> list[dict]:
    records, corrupt = ResultStore(store).scan()
    assert corrupt == []
    assert len(records) == 6 and len({r["run_id"] for r in records}) == 6
    assert {(r["fold"], r["params"]["alpha"]) for r in records} == {
        (f, a) for f in (1, 2) for a in (0.1, 1.0, 10.0)}
    assert all(r["status"] == "ok" for r in records)
    # written by worker processes, not by the process that launched the sweep
    assert driver_pid not in {r["env"]["pid"] for r in records}
    return records


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def ray_head():
    """A Ray head node on loopback only, in its own session; killed (with every child) afterwards."""
    pytest.importorskip("ray")
    pytest.importorskip("hydra_plugins.hydra_ray_launcher")
    ray_exe = Path(sys.executable).with_name("ray")
    if not ray_exe.exists():
        pytest.skip("the ray command is not installed next to this python")
    # short path: Ray's unix socket paths must stay under ~107 characters
    tmp = tempfile.mkdtemp(prefix="rbray", dir="/tmp")
    port = _free_port()
    # RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 makes Ray resolve "this node" to 127.0.0.1, so
    # every Ray process listens on, and talks to, loopback only.
    # RAY_AUTH_MODE=disabled (local_cluster.NODE_ENV): with a token in ~/.ray (left by any earlier
    # `ray start`), the head would turn token authentication on and refuse the launcher's driver
    from rankbench.local_cluster import NODE_ENV

    env = child_env(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", **NODE_ENV)
    log = open(Path(tmp) / "head.log", "w")  # noqa: SIM115 - closed in teardown
    cmd = [str(ray_exe), "start", "--head", "--block", "--node-ip-address=127.0.0.1",
           f"--port={port}", "--num-cpus=2", "--include-dashboard=false",
           f"--dashboard-agent-listen-port={_free_port()}",
           f"--ray-client-server-port={_free_port()}", f"--temp-dir={tmp}",
           "--disable-usage-stats"]
    # cwd: Ray workers inherit it; nothing of theirs should land in the repository
    head = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True, cwd=tmp)
    try:
        deadline = time.monotonic() + 90
        while "Ray runtime started" not in (Path(tmp) / "head.log").read_text():
            if head.poll() is not None or time.monotonic() > deadline:
                pytest.fail("ray head did not start:\n" + (Path(tmp) / "head.log").read_text()[-3000:])
            time.sleep(0.2)
        yield f"127.0.0.1:{port}", env
    finally:
        _kill_session(head.pid, tmp)
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


def _kill_session(pgid: int, tmp: str) -> None:
    # SIGTERM makes a Ray node drain for 30 s; this node only ever ran our test jobs
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        import psutil
    except ImportError:
        return
    for p in psutil.process_iter(["pid", "cmdline"]):
        try:
            if any(tmp in part for part in (p.info["cmdline"] or [])):
                p.kill()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass


@pytest.mark.slow
def test_ray_cluster_sweep_delivers_every_record_once(tmp_path, ray_head):
    address, env = ray_head
    store = tmp_path / "store"
    pid, rc, out, err = run_sweep(
        tmp_path, ["hydra/launcher=ray_cluster", f"hydra.launcher.ray.init.address={address}"],
        store, RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", RAY_USAGE_STATS_ENABLED="0")
    assert rc == 0, err[-3000:]
    assert f"Connecting to existing Ray cluster at address: {address}" in err
    check_every_record_once(store, pid)
    assert "6 ok / 0 failed runs" in out
    # Hydra's job folders land under the submitting directory, whatever the worker's cwd
    assert len(list((tmp_path / "results" / "_scratch" / "hydra" / "multirun").glob("*/*/[0-9]"))) == 3


@pytest.mark.slow
def test_submitit_launcher_local_executor(tmp_path):
    """The Slurm launcher's machinery (hydra-submitit-launcher, pickled jobs) on the local executor."""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    store = tmp_path / "store"
    pid, rc, out, err = run_sweep(tmp_path, ["hydra/launcher=submitit_local",
                                             "hydra.launcher.timeout_min=5"], store)
    assert rc == 0, err[-3000:]
    check_every_record_once(store, pid)
    assert "6 ok / 0 failed runs" in out
    # Hydra's job folders land under the submitting directory, whatever the worker's cwd
    assert len(list((tmp_path / "results" / "_scratch" / "hydra" / "multirun").glob("*/*/[0-9]"))) == 3


def test_joblib_launcher_jobs_share_the_cores(tmp_path):
    """hydra/launcher=joblib with n_jobs=2: each job's runs use cores // 2 numba threads (recorded),
    not every thread each (which would oversubscribe the cores)."""
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    store = tmp_path / "store"
    pid, rc, out, err = run_sweep(tmp_path, ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"],
                                  store)
    assert rc == 0, err[-3000:]
    records = check_every_record_once(store, pid)
    assert {r["env"]["numba_threads"] for r in records} == {max(1, (os.cpu_count() or 1) // 2)}


@pytest.mark.parametrize(("launcher", "share"), [
    ({"_target_": "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher",
      "n_jobs": 2}, lambda c: max(1, c // 2)),
    ({"_target_": "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher",
      "n_jobs": -1}, lambda c: 1),
    ({"_target_": "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher",
      "n_jobs": 10**4}, lambda c: 1),
    ({"_target_": "hydra._internal.core_plugins.basic_launcher.BasicLauncher"}, lambda c: None),
])
def test_launcher_thread_share(launcher, share):
    from rankbench.cli import launcher_thread_share

    assert launcher_thread_share(launcher) == share(os.cpu_count() or 1)
    assert launcher_thread_share() is None  # outside a Hydra job: every thread
