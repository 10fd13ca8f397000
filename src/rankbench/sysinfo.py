"""Machine and library facts stored with every record, and measurements of this process.

(benchopt's ``utils/sys_info.py``): timings mean little without the machine, the library
versions and the code version that produced them.
"""

from __future__ import annotations

import datetime as _dt
import functools
import os
import platform
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any


@functools.lru_cache(maxsize=1)
def git_commit() -> str | None:
    """HEAD of the source checkout (with -dirty for uncommitted changes), or RANKBENCH_GIT_COMMIT."""
    env = os.environ.get("RANKBENCH_GIT_COMMIT")
    if env:
        return env
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no", "--", "."],
            capture_output=True, text=True, timeout=20, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("-dirty" if dirty else "")


@functools.lru_cache(maxsize=1)
def library_versions() -> dict[str, str | None]:
    """Versions of the libraries that change numbers or timings."""
    from importlib import metadata

    out: dict[str, str | None] = {"python": platform.python_version()}
    for dist in ("rankbench", "numpy", "scipy", "numba", "scikit-learn", "lightgbm",
                 "xgboost", "pandas", "hydra-core"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


@functools.lru_cache(maxsize=1)
def machine_info() -> dict[str, Any]:
    """Host facts stored with every record (timings mean little without them)."""
    info: dict[str, Any] = {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
    }
    try:
        import psutil

        info["memory_gb"] = round(psutil.virtual_memory().total / 2**30, 1)
    except ImportError:
        pass
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info["jit_cpu"] = jit_cpu_name()
    return info


def jit_cpu_name() -> str | None:
    """The CPU numba compiles the kernels for: ``NUMBA_CPU_NAME`` where set, else the host's as
    LLVM names it (e.g. znver3).  A "model name" such as "AMD EPYC" covers several; kernels
    compiled for two of them gave results differing in the last bits (fits at tol 1e-6 ordering
    near-tied documents differently), so records say which.  None when it cannot be read."""
    try:
        from numba.core import config

        if config.CPU_NAME:
            return str(config.CPU_NAME)
        import llvmlite.binding as ll

        return str(ll.get_host_cpu_name())
    except Exception:  # numba / llvmlite absent or failing: a record without it is still a record
        return None


def machine_load() -> dict[str, Any]:
    """How busy the machine is right now: the 1-minute load average and the cores other processes
    are running on (``parallel.idle_cores``; None without /proc).  Records keep it at a run's
    start and finish, so a timing says whether it was taken on a loaded machine."""
    from rankbench.parallel import idle_cores, usable_cores

    try:
        load = round(float(os.getloadavg()[0]), 2)
    except OSError:
        load = None
    idle = idle_cores()
    return {"load_1min": load, "busy_cores": None if idle is None else int(usable_cores() - idle)}


def now() -> str:
    """UTC time stamp, seconds."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _maxrss_mb() -> float:
    try:
        import resource
    except ImportError:  # not POSIX
        return float("nan")
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024.0 if sys.platform != "darwin" else kb / 2**20  # macOS reports bytes


class PeakMemory:
    """Context manager: peak resident memory (MB) of this process while the block runs.

    Sampled every ``interval`` seconds by a daemon thread (RSS, so numba / LightGBM
    allocations count too); the start and end values are always included.  A numba
    kernel holding the GIL hides its transient peak from the sampler, so when the
    kernel-tracked lifetime maximum (``ru_maxrss``) rose during the block, that exact
    value is the peak.
    """

    def __init__(self, interval: float = 0.01):
        self.interval = interval
        self.peak_mb = float("nan")
        self.start_mb = float("nan")

    def _rss(self) -> float:
        return self._proc.memory_info().rss / 2**20

    def __enter__(self) -> PeakMemory:
        import psutil

        self._proc = psutil.Process()
        self._maxrss0 = _maxrss_mb()
        self.start_mb = self.peak_mb = self._rss()
        self._stop = threading.Event()

        def sample() -> None:
            while not self._stop.wait(self.interval):
                self.peak_mb = max(self.peak_mb, self._rss())

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self.peak_mb = max(self.peak_mb, self._rss())
        maxrss = _maxrss_mb()
        if maxrss > self._maxrss0:
            self.peak_mb = max(self.peak_mb, maxrss)
