"""For the tests that send a signal to a thread other than the main one (the kernel may hand a
process's signal to any of its threads; Python then only sets a flag for the main thread)."""

from __future__ import annotations

import ctypes
from pathlib import Path

# the start of a ``python -c`` script: Python's own SIGINT handler (a session that inherited
# SIGINT ignored would pass that on), and a daemon thread that writes its native id to
# sys.argv[1] and sleeps
SCRIPT = """
import signal, sys, threading, time
signal.signal(signal.SIGINT, signal.default_int_handler)
def bystander():
    with open(sys.argv[1], "w") as fh:
        fh.write(str(threading.get_native_id()))
    time.sleep(3600)
threading.Thread(target=bystander, daemon=True).start()
"""


def signal_bystander(pid: int, tid_file: Path, sig: int) -> None:
    """Send ``sig`` to the bystander thread of process ``pid`` (tgkill), not to its main thread."""
    tid = int(tid_file.read_text())
    assert tid != pid
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.tgkill(pid, tid, int(sig)) == 0, ctypes.get_errno()
