"""``python -m rankbench.warmup [part ...]``: fill numba's cache ahead of the first real run.

Every kernel is ``@njit(cache=True)``: compiled on its first call, then loaded from numba's
cache by every later process.  Without this step the first run after a fresh install pays
that compilation (seconds per kernel family).  ``make install`` runs it once; after
``pip install rankbench`` run it yourself.  Each part runs the public entry points on a tiny
problem, so the kernels compiled are the ones those calls use (the dense and CSR layouts):

- ``parse``: ``read_letor`` (docids, a NULL, dense and CSR), ``normalize_query_level``;
- ``ranksvm``: every oracle's kernels (``warm_up_kernels``) and a default ``RankSVM`` fit;
- ``spd``: ``SPDRanker`` fits on dense and CSR data;
- ``metrics``: ``evaluate`` with every standard measure;
- ``lambdamart``: the lambda-gradient and per-query metric kernels;
- ``synthetic``: the synthetic data generators.

Compilation is single-threaded, so ``--jobs N`` (default: the cores, at most 4) runs the work
in N processes, the ranksvm part split by oracle, the longest units first: on an empty cache
on the 2-core VM, 226 s in one process, 129 s in two.  Then every part runs once more in the
calling process: it loads what the workers compiled (3-4 s) and compiles any entry that two
workers' unlocked saves of one cache index lost.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np


def _parse() -> None:
    from rankbench.data.letor import read_letor
    from rankbench.data.normalize import normalize_query_level

    lines = [f"{i % 3} qid:{i // 4} 1:{i % 5}.25 2:{(i * 7) % 3} 3:{'NULL' if i == 5 else i}"
             f" #docid = D{i}\n" for i in range(12)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "warmup.txt"
        path.write_text("".join(lines))
        for sparse in (False, True):
            data = read_letor(path, null_policy="query_min", sparse=sparse, cache=False)
        normalize_query_level(read_letor(path, null_policy="zero", cache=False))
    del data


def _problem(sparse: bool = False):
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    X = rng.random((24, 3))
    y = rng.integers(0, 3, 24)
    qid = np.repeat(np.arange(4), 6)
    return (sp.csr_matrix(X) if sparse else X), y, qid


def _ranksvm_oracle(name: str) -> None:
    from rankbench.estimators.ranksvm import warm_up_kernels

    warm_up_kernels((name,), sparse=True if name == "tree" else None)


def _ranksvm_fit() -> None:
    from rankbench.estimators.ranksvm import RankSVM

    X, y, qid = _problem()
    RankSVM().fit(X, y, qid).predict(X)


def _ranksvm() -> None:
    from rankbench.estimators.ranksvm import warm_up_kernels

    warm_up_kernels()
    _ranksvm_fit()


def _spd() -> None:
    from rankbench.estimators.spd import SPDRanker

    for sparse in (False, True):
        X, y, qid = _problem(sparse)
        SPDRanker(n_iter=50).fit(X, y, qid).predict(X)


def _metrics() -> None:
    from rankbench.metrics import evaluate

    _, y, qid = _problem()
    evaluate(y, np.linspace(0.0, 1.0, y.size), qid)


def _lambdamart() -> None:
    from rankbench.estimators.lambdamart import _compile_seconds

    _compile_seconds()


def _synthetic() -> None:
    from rankbench.data.synthetic import make_letor_like, make_rcv1_like

    make_letor_like(n_queries=2, docs_per_query=3, n_features=2)
    make_rcv1_like(n=10, d=10, nnz_per_row=2)


PARTS: dict[str, Callable[[], None]] = {
    "parse": _parse, "ranksvm": _ranksvm, "spd": _spd, "metrics": _metrics,
    "lambdamart": _lambdamart, "synthetic": _synthetic,
}


def _units(name: str) -> list[tuple[str, tuple]]:
    """The part ``name`` as (function name, args) units that may run in separate processes:
    the ranksvm part one unit per oracle with numba kernels, then the default fit."""
    if name != "ranksvm":
        return [(name, ())]
    from rankbench.objective.base import ORACLES

    return [("_ranksvm_oracle", (o,)) for o, cls in ORACLES.items() if cls.numba_kernels] + [
        ("_ranksvm_fit", ())]


def _run_unit(func: str, args: tuple) -> float:
    """Run one unit (in a worker process); its seconds."""
    t = time.perf_counter()
    (PARTS.get(func) or globals()[func])(*args)
    return time.perf_counter() - t


def default_jobs() -> int:
    """Worker processes of the warm-up: the cores this process may use, at most 4."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(4, cores))


def warm_up(parts: Iterable[str] | None = None, jobs: int = 1) -> dict[str, float]:
    """Run the named parts (all by default); seconds spent per part (compiling on an empty
    cache, loading on a warm one; with ``jobs`` > 1, the sum of its units' seconds in the
    worker processes and of its check in this process).  ValueError for an unknown part or jobs < 1."""
    names = list(PARTS) if parts is None else list(parts)
    unknown = [p for p in names if p not in PARTS]
    if unknown:
        raise ValueError(f"unknown warm-up part(s) {unknown}; known: {', '.join(PARTS)}")
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    out = {}
    if jobs == 1:
        for name in names:
            out[name] = _run_unit(name, ())
        return out
    if not names:
        return out
    # the ranksvm units first (the longest: about two thirds of an empty cache's compilation)
    order = sorted(names, key=lambda n: n != "ranksvm")
    units = [(name, unit) for name in order for unit in _units(name)]
    import multiprocessing

    # spawn: a fresh interpreter per worker, no fork of a process that may hold numba threads
    with ProcessPoolExecutor(max_workers=min(jobs, len(units)),
                             mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [(name, pool.submit(_run_unit, *unit)) for name, unit in units]
        for name, fut in futures:
            out[name] = out.get(name, 0.0) + fut.result()
    # then every part once more in this process: numba saves a cache index without a lock, so
    # two workers saving signatures of one function at once can lose an entry; this pass loads
    # what the workers left (3-4 s on a warm cache) and compiles anything lost
    for name in names:
        out[name] += _run_unit(name, ())
    return {name: out[name] for name in names}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rankbench.warmup", description=__doc__.splitlines()[0])
    ap.add_argument("parts", nargs="*", help=f"subset of {', '.join(PARTS)} (default: all)")
    ap.add_argument("--jobs", "-j", type=int, default=default_jobs(),
                    help="worker processes (default: the cores, at most 4; 1: this process)")
    args = ap.parse_args(argv)
    try:
        seconds = warm_up(args.parts or None, jobs=args.jobs)
    except ValueError as exc:
        ap.error(str(exc))
    for name, s in seconds.items():
        print(f"rankbench.warmup: {name:<10} {s:6.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
