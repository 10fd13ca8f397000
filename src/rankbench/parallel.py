"""``n_jobs`` of the estimators: how many numba threads a fit's kernels use.

``None`` (the default): numba's current thread count, which is every thread
(``NUMBA_NUM_THREADS``, by default one per core, as LightGBM uses every core by default) unless
the caller set fewer (``numba.set_num_threads``: the runner's parallel workers and Hydra's
joblib launcher give each run its share of the cores); ``-1``: every numba thread; a positive
integer: that many, at most ``NUMBA_NUM_THREADS``.  The kernels split their work into blocks fixed by the data, not by
the thread count, so a fit gives the same bits with any ``n_jobs``.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from numbers import Integral


def resolve_n_jobs(n_jobs) -> int:
    """The thread count ``n_jobs`` stands for; ValueError for 0, < -1 or a non-integer."""
    import numba

    top = int(numba.config.NUMBA_NUM_THREADS)
    if n_jobs is None:  # the caller's count: a runner worker's or a launcher job's share
        return int(numba.get_num_threads())
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, Integral) or n_jobs == 0 or n_jobs < -1:
        raise ValueError(f"n_jobs must be None, -1 (every core) or a positive integer, got {n_jobs!r}")
    if n_jobs == -1:
        return top
    return max(1, min(int(n_jobs), top))


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
