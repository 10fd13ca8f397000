"""``n_jobs`` of the estimators: how many numba threads a fit's kernels use.

``None`` (the default): numba's current thread count (``NUMBA_NUM_THREADS``, by default one per
core, unless the caller set fewer with ``numba.set_num_threads``: the runner's parallel workers
and Hydra's joblib launcher give each run its share of the cores), *reduced to the cores no other
process is using when the fit starts* (``idle_cores``).  A parallel region ends when its slowest
thread does: on a busy machine a worker thread that shares its core with another process waits
for a time slice in every region, which made fits 2x to 100x slower than one thread (issue 21;
bench part ``load``).  ``-1``: every numba thread, loaded or not; a positive integer: that many,
at most ``NUMBA_NUM_THREADS``.  The kernels split their work into blocks fixed by the data, not by
the thread count, so a fit gives the same bits with any ``n_jobs``.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from numbers import Integral

# The longest a wait for another process (a peer program, an isolated run, LightGBM's data-parallel
# workers) sleeps between looks at pending signals: the kernel may hand a signal to any thread of
# the process (numba's workers, BLAS's), which only sets Python's flag, and a main thread blocked in
# one long wait would run the handler (KeyboardInterrupt, SIGTERM's) only when the wait ends
SIGNAL_WAKE_S = 0.2
GOMP_SPINCOUNT = "30000"  # about 1 ms of spinning on this machine, against 9-10 ms at libgomp's 300000


def shorten_openmp_spin(environ=None) -> bool:
    """Shorten how long GNU OpenMP's idle worker threads spin before they sleep: sets
    ``GOMP_SPINCOUNT`` to 30000 unless the user set it or ``OMP_WAIT_POLICY``; True if it did.
    ``import rankbench`` calls it, before numba's ``omp`` threading layer loads libgomp, which
    reads the variable once, when it loads (no effect where an OpenMP runtime already started,
    or under the ``tbb`` and ``workqueue`` layers).

    Why (issue 21; the measurements are in its closing note): with libgomp's default of
    300,000 spins, the worker thread of a 2-thread fit burns 9-10 ms of the other core after the
    fit returns, about one more OHSUMED fit.  On a busy machine that time is taken from the other
    processes (a second sweep, a test run), and in the process itself from whatever runs next.
    At 30,000 it burns 0-3.7 ms; the gaps between the parallel regions of one fit (the optimizer's
    Python between kernels, tens of microseconds) are still spun through, and back-to-back fits were
    as fast (OHSUMED Fold1 min/median 4.8-7.3 / 5.6-9.1 ms at 300,000, 5.3-6.1 / 6.5-7.8 ms at
    30,000; the 480k problem within the run-to-run spread).  ``OMP_WAIT_POLICY=passive`` (no spin)
    and ``GOMP_SPINCOUNT=1000`` made the fit itself 1.2-2x slower: each region then wakes a
    sleeping thread."""
    env = os.environ if environ is None else environ
    if "GOMP_SPINCOUNT" in env or "OMP_WAIT_POLICY" in env:
        return False
    env["GOMP_SPINCOUNT"] = GOMP_SPINCOUNT
    return True


def resolve_n_jobs(n_jobs) -> int:
    """The thread count ``n_jobs`` stands for; ValueError for 0, < -1 or a non-integer."""
    import numba

    top = int(numba.config.NUMBA_NUM_THREADS)
    if n_jobs is None:  # the caller's count (a runner worker's or launcher job's share), less busy cores
        share = int(numba.get_num_threads())
        idle = idle_cores() if share > 1 else None
        return share if idle is None else max(1, min(share, idle))
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, Integral) or n_jobs == 0 or n_jobs < -1:
        raise ValueError(f"n_jobs must be None, -1 (every core) or a positive integer, got {n_jobs!r}")
    if n_jobs == -1:
        return top
    return max(1, min(int(n_jobs), top))


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity mask; ``os.cpu_count()`` where there is none)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _running_threads(task_dir: str) -> int:
    """Threads of one process in state R (running or runnable), from ``<task_dir>/*/stat``."""
    n = 0
    try:
        tids = os.listdir(task_dir)
    except OSError:
        return 0
    for tid in tids:
        try:
            with open(f"{task_dir}/{tid}/stat", "rb") as f:
                stat = f.read()
        except OSError:  # the thread ended meanwhile
            continue
        if stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3] == b"R":
            n += 1
    return n


def _other_running(proc: str) -> int | None:
    """Runnable tasks not of this process: ``procs_running`` of ``<proc>/stat`` less this
    process's own running threads (at least the caller); None where it cannot be read."""
    try:
        with open(f"{proc}/stat", "rb") as f:
            for line in f:
                if line.startswith(b"procs_running"):
                    running = int(line.split()[1])
                    break
            else:
                return None
    except (OSError, ValueError):
        return None
    return max(0, running - max(1, _running_threads(f"{proc}/self/task")))


def idle_cores(proc: str = "/proc") -> int | None:
    """Cores this process may use that no other process is running on right now: the CPUs of its
    affinity mask minus the runnable tasks of other processes (``procs_running`` of
    ``/proc/stat``, less this process's own running threads).  None where /proc is absent.
    An instant reading (~0.1 ms), taken when a fit starts: a busy loop or another fit counts,
    a process sleeping on I/O does not.

    A reading that finds another task is taken again after this thread yields its core once
    (``os.sched_yield``): right after a fit, a kernel task bound to the caller's core (a per-CPU
    worker woken while the fit ran) waits there for the caller to be preempted, for 2-5 ms, while
    the other core is idle; read as a busy core, it made back-to-back fits on an idle machine run
    on one thread 1-5 times in 40 (480k x 46: 0.47-0.60 s instead of 0.25-0.30 s); after the
    yield 0-1 in 40.  A busy process stays runnable through the yield and is counted."""
    others = _other_running(proc)
    if others is None:
        return None
    if others > 0:
        os.sched_yield()
        again = _other_running(proc)
        others = others if again is None else again
    return max(0, usable_cores() - others)


@contextmanager
def numba_threads(n_jobs):
    """Run the block with ``resolve_n_jobs(n_jobs)`` numba threads; the count is restored after."""
    import numba

    n = resolve_n_jobs(n_jobs)
    before = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        yield n
    finally:
        numba.set_num_threads(before)


def thread_share(n_at_once: int) -> int:
    """The numba threads of each of ``n_at_once`` workers running side by side (the runner's
    parallel runs, the jobs of Hydra's joblib launcher): the cores divided among them, at least 1."""
    cores = os.cpu_count() or 1
    return max(1, cores // max(1, min(int(n_at_once), cores)))


_BLAS: dict = {}  # pid -> threadpoolctl.ThreadpoolController of the BLAS libraries loaded


def one_blas_thread():
    """A context in which the BLAS libraries run on one thread (the optimizers' vectors have d
    entries: multithreaded BLAS only adds thread wake-ups, which cost 3x the whole fit on a loaded
    machine).  The libraries are looked up once per process (threadpoolctl scans the loaded
    shared objects: 1-2.5 ms, a tenth of an OHSUMED fit) and kept; one loaded later is not
    limited, which costs time, never a result."""
    from threadpoolctl import ThreadpoolController

    ctl = _BLAS.get(os.getpid())
    if ctl is None:
        ctl = _BLAS[os.getpid()] = ThreadpoolController()
    return ctl.limit(limits=1, user_api="blas")
