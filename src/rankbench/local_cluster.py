"""A multi-node Ray cluster on one machine: a head and worker nodes, each its own ``ray start`` process.

Each node is a separate ``ray start --block`` process (its own raylet, object store and worker
processes) in its own process session, on its own free ports, with a custom resource naming it
(``rb_head``, ``rb_w1``, ``rb_w2``, ...: one unit each) so a test can check where actors run;
the dashboard and usage statistics are off, nothing leaves the machine.  Ray's token
authentication is off on every node (``RAY_AUTH_MODE=disabled``): ``ray start --head`` turns it
on when ``~/.ray/auth_token`` exists (any local ``ray.init`` writes one) while ``ray start
--address`` does not, so a cluster left to Ray's defaults can refuse its own workers; a driver
joins as it is (a driver with token mode on is accepted too).  Nodes start one after
another (two raylets starting at once can race for a socket name).  ``stop()`` kills every
node's process group and any process still naming the cluster's temporary folder (Ray's
workers), so nothing is left behind; ``kill_raylet(i)`` kills worker node i's raylet (a node
lost).  Used by the cluster tests (tests/test_cluster.py), ``python -m rankbench.bench shards``
and, from the shell::

    python -m rankbench.local_cluster start --workers 2 --dir /tmp/rbc   # prints RAY_ADDRESS=...
    python -m rankbench.local_cluster stop --dir /tmp/rbc

On a real cluster use ``ray start --head`` on one machine and ``ray start --address=HEAD:PORT``
on the others instead (docs/scaling.md).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STARTED = "Ray runtime started"
# quick loss detection for tests: a node whose raylet stops answering is declared dead after
# about 1 s + 3 x 1 s instead of Ray's default of about 30 s
FAST_FAILURE_DETECTION = {"health_check_initial_delay_ms": 1000, "health_check_period_ms": 1000,
                          "health_check_timeout_ms": 1000, "health_check_failure_threshold": 3}


NODE_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def node_ip() -> str:
    """This machine's address on its default route (no packet is sent), as Ray would pick it."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 1))
            return s.getsockname()[0]
        except OSError:
            return "127.0.0.1"


def ray_executable() -> Path | None:
    exe = Path(sys.executable).with_name("ray")
    if exe.exists():
        return exe
    found = shutil.which("ray")
    return Path(found) if found else None


class LocalRayCluster:
    """A head plus ``n_workers`` worker nodes of ``cpus`` CPUs each, started by ``start()``.

    ``env``: extra environment of every node (its workers inherit it: PYTHONPATH, NUMBA_CACHE_DIR);
    ``folder``: where logs and Ray's session go (default: a new short folder under /tmp: Ray's
    socket paths must stay under about 100 characters); ``fast_failure_detection``: Ray declares
    a silent node dead within seconds (``FAST_FAILURE_DETECTION``)."""

    def __init__(self, n_workers: int = 2, cpus: int = 1, env: dict | None = None,
                 folder: str | Path | None = None, fast_failure_detection: bool = False,
                 start_timeout_s: float = 120.0, object_store_bytes: int | None = None):
        self.n_workers = n_workers
        self.cpus = cpus
        self.env = {**os.environ, **NODE_ENV, **(env or {})}
        self.env.pop("RAY_ADDRESS", None)
        self.env.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)  # would pin the head to loopback
        self._own_folder = folder is None
        self.folder = Path(folder or tempfile.mkdtemp(prefix="rbc", dir="/tmp"))
        self.fast_failure_detection = fast_failure_detection
        self.start_timeout_s = start_timeout_s
        self.object_store_bytes = object_store_bytes
        self.ip = node_ip()
        self.port = None
        self.procs: list[subprocess.Popen] = []
        self.names: list[str] = []

    @property
    def address(self) -> str:
        return f"{self.ip}:{self.port}"

    def resource(self, i: int) -> str:
        """The custom resource of node i (0 = head)."""
        return "rb_head" if i == 0 else f"rb_w{i}"

    def _ports(self) -> list[str]:
        return [f"--node-manager-port={free_port()}", f"--object-manager-port={free_port()}",
                f"--dashboard-agent-listen-port={free_port()}",
                f"--dashboard-agent-grpc-port={free_port()}",
                f"--runtime-env-agent-port={free_port()}", f"--metrics-export-port={free_port()}"]

    def _launch(self, i: int, args: list[str]) -> None:
        exe = ray_executable()
        if exe is None:
            raise RuntimeError("the ray command is not installed (pip install 'ray[default]')")
        name = self.resource(i)
        log = (self.folder / f"{name}.log").open("w")
        cmd = [str(exe), "start", "--block", f"--node-ip-address={self.ip}", f"--num-cpus={self.cpus}",
               f"--resources={json.dumps({name: 1})}", "--disable-usage-stats", *self._ports(), *args]
        if self.object_store_bytes:
            cmd.append(f"--object-store-memory={int(self.object_store_bytes)}")
        # own session: the node and every process it starts die with its process group
        proc = subprocess.Popen(cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd=self.folder)
        log.close()
        self.procs.append(proc)
        self.names.append(name)
        deadline = time.monotonic() + self.start_timeout_s
        path = self.folder / f"{name}.log"
        while STARTED not in path.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                text = path.read_text(errors="replace")[-3000:]
                self.stop()
                raise RuntimeError(f"Ray node {name} did not start within {self.start_timeout_s:g} s:\n{text}")
            time.sleep(0.2)

    def start(self) -> LocalRayCluster:
        """Start the head, then each worker; RuntimeError (everything stopped) if one does not start."""
        if ray_executable() is None:
            raise RuntimeError("the ray command is not installed (pip install 'ray[default]')")
        self.folder.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        head = ["--head", f"--port={self.port}", "--include-dashboard=false",
                f"--ray-client-server-port={free_port()}", f"--temp-dir={self.folder / 'ray'}"]
        if self.fast_failure_detection:
            head.append(f"--system-config={json.dumps(FAST_FAILURE_DETECTION)}")
        try:
            self._launch(0, head)
            for i in range(1, self.n_workers + 1):
                self._launch(i, [f"--address={self.address}"])
        except BaseException:
            self.stop()
            raise
        self._save()
        return self

    def _save(self) -> None:
        (self.folder / "cluster.json").write_text(json.dumps(
            {"address": self.address, "pids": [p.pid for p in self.procs], "names": self.names,
             "folder": str(self.folder)}, indent=1))

    def raylet_pid(self, i: int) -> int:
        """PID of node i's raylet process (a child of its ``ray start``)."""
        import psutil

        for child in psutil.Process(self.procs[i].pid).children(recursive=True):
            try:
                if child.name() == "raylet" or "raylet" in " ".join(child.cmdline()[:1]):
                    return child.pid
            except psutil.NoSuchProcess:
                continue
        raise RuntimeError(f"no raylet process under node {self.names[i]}")

    def kill_raylet(self, i: int) -> int:
        """SIGKILL node i's raylet (the node is lost: its workers exit, Ray declares it dead)."""
        pid = self.raylet_pid(i)
        os.kill(pid, signal.SIGKILL)
        return pid

    def stop(self) -> None:
        """Kill every node's process group and any process still naming this cluster's folder."""
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)  # SIGTERM would make each node drain for 30 s
            except (ProcessLookupError, PermissionError):
                pass
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        stop_stragglers(str(self.folder))
        self.procs = []
        if self._own_folder:
            shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> LocalRayCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def stop_stragglers(marker: str) -> list[int]:
    """SIGKILL processes of this user whose command line names ``marker`` (a cluster's own folder)."""
    try:
        import psutil
    except ImportError:
        return []
    killed = []
    me = os.getpid()
    for p in psutil.process_iter(["pid", "cmdline", "uids"]):
        try:
            if p.info["pid"] != me and any(marker in part for part in (p.info["cmdline"] or [])):
                p.kill()
                killed.append(p.info["pid"])
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return killed


def main(argv: list[str] | None = None) -> int:
    """``start`` (prints the address; the nodes keep running) or ``stop`` a cluster in ``--dir``."""
    ap = argparse.ArgumentParser(prog="python -m rankbench.local_cluster", description=__doc__.split("\n")[0])
    ap.add_argument("command", choices=("start", "stop"))
    ap.add_argument("--dir", required=True, help="folder of the cluster's logs and state (short path)")
    ap.add_argument("--workers", type=int, default=2, help="worker nodes besides the head")
    ap.add_argument("--cpus", type=int, default=1, help="CPUs each node declares")
    args = ap.parse_args(argv)
    folder = Path(args.dir)
    if args.command == "start":
        if (folder / "cluster.json").exists():
            print(f"error: {folder} already holds a cluster (stop it first)", file=sys.stderr)
            return 1
        c = LocalRayCluster(args.workers, args.cpus, folder=folder)
        c._own_folder = False
        try:
            c.start()
        except RuntimeError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"export RAY_ADDRESS={c.address}")
        print(f"nodes: {', '.join(c.names)} (resources), logs in {folder}")
        print(f"stop with: python -m rankbench.local_cluster stop --dir {folder}")
        return 0
    state = folder / "cluster.json"
    if not state.exists():
        print(f"error: no cluster state in {folder}", file=sys.stderr)
        return 1
    info = json.loads(state.read_text())
    for pid in info["pids"]:
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    stop_stragglers(info["folder"])
    state.unlink()
    print(f"stopped {len(info['pids'])} nodes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
