"""Running a peer program: a time limit, its own process group, nothing left behind.

Every peer (LIBLINEAR ``train``, ``sofia-ml``, ``svm_learn``) starts in a new session, so its
process group holds it and anything it starts.  The group is killed (SIGKILL) when the time
limit passes, when rankbench is interrupted (SIGINT raises KeyboardInterrupt; SIGTERM, while a
peer runs in the main thread, kills the group and then exits with status 143 as the default
action would, after the callers' ``finally`` blocks and temporary folders are cleaned up), and
after the program exits, in case it left a child behind.  ``peer_folder`` is the temporary
folder a wrapper writes the data and model into: removed in every case.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from numbers import Real
from pathlib import Path

from rankbench.parallel import SIGNAL_WAKE_S

# A peer's time limit when none is given (the solver configs keep ``timeout_s: null``, which
# means this, so changing it changes no run id): generous against the papers' runs (SVM-light
# on OHSUMED at C = 1e-2 takes minutes; the chapelle2010 configs allow 7200 s), finite so a
# hanging program ends as a failed run.
DEFAULT_TIMEOUT_S = 4 * 3600.0

_running: set[int] = set()  # process groups (= their leader's pid) of the peers running now


def resolve_timeout(timeout_s: float | None, owner: str) -> float:
    """``timeout_s`` checked (a positive finite number of seconds); None means DEFAULT_TIMEOUT_S."""
    if timeout_s is None:
        return DEFAULT_TIMEOUT_S
    if (isinstance(timeout_s, bool) or not isinstance(timeout_s, Real)
            or not math.isfinite(timeout_s) or timeout_s <= 0):
        raise ValueError(f"{owner}: timeout_s must be a positive finite number of seconds (None: "
                         f"the default, {DEFAULT_TIMEOUT_S:g} s), got {timeout_s!r}")
    return float(timeout_s)


@contextlib.contextmanager
def peer_folder(peer: str) -> Iterator[Path]:
    """A fresh temporary folder ``rankbench-<peer>-*`` for the data and model files; removed on
    exit, whatever ends the block (success, error, timeout, KeyboardInterrupt, SIGTERM)."""
    with tempfile.TemporaryDirectory(prefix=f"rankbench-{peer}-") as tmp:
        yield Path(tmp)


def run_peer(cmd: list[str], timeout_s: float) -> tuple[str, str, float]:
    """Run ``cmd`` in its own process group within ``timeout_s`` seconds; (stdout, stderr, wall s).

    TimeoutError past the limit, RuntimeError on a non-zero exit; the group is killed in
    every case but a clean exit of all its members."""
    name = Path(cmd[0]).name
    t0 = time.perf_counter()
    with _kill_peers_on_sigterm():
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                errors="replace", start_new_session=True)
        _running.add(proc.pid)
        try:
            out, err = _communicate(proc, t0 + timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise TimeoutError(f"{name} did not finish within {timeout_s:g} s (time limit "
                               "timeout_s; killed with its process group)") from None
        except BaseException:  # KeyboardInterrupt, SystemExit from SIGTERM, anything
            _kill_group(proc)
            raise
        finally:
            _running.discard(proc.pid)
            _kill_group(proc)  # a child the program left running
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        how = (f"was killed by {signal.Signals(-proc.returncode).name}" if proc.returncode < 0
               else f"exited with status {proc.returncode}")
        raise RuntimeError(f"{' '.join(cmd)} {how}: {(err or out)[-500:]}")
    return out, err, wall


def _communicate(proc: subprocess.Popen, deadline: float) -> tuple[str, str]:
    """``proc.communicate()`` until ``deadline`` (``time.perf_counter``; TimeoutExpired after
    it), in slices of SIGNAL_WAKE_S seconds so that a pending signal is handled within one (a
    communicate that timed out can be called again: the output read so far is kept)."""
    while True:
        left = deadline - time.perf_counter()
        try:
            return proc.communicate(timeout=max(0.0, min(SIGNAL_WAKE_S, left)))
        except subprocess.TimeoutExpired:
            if left <= SIGNAL_WAKE_S:
                raise


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the process group led by ``proc`` and reap ``proc``; quiet when it is gone already."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    if proc.returncode is None:
        with contextlib.suppress(Exception):
            proc.communicate()  # reap it and close the pipes


@contextlib.contextmanager
def _kill_peers_on_sigterm() -> Iterator[None]:
    """While the block runs in the main thread, SIGTERM kills the running peers' groups first.

    Then the previous handler runs if it is a function; under the default action SystemExit(143)
    unwinds the stack (temporary folders removed) instead of ending the process at once.
    rankbench ignoring SIGTERM (SIG_IGN) is left as it is; in other threads signals cannot be
    handled, and the time limit still holds."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous is signal.SIG_IGN:
        yield
        return

    def on_sigterm(signum, frame):
        for group in list(_running):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
        if callable(previous):
            previous(signum, frame)
            return
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
