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
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Iterable
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


def _ranksvm() -> None:
    from rankbench.estimators.ranksvm import RankSVM, warm_up_kernels

    warm_up_kernels()
    X, y, qid = _problem()
    RankSVM().fit(X, y, qid).predict(X)


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


def warm_up(parts: Iterable[str] | None = None) -> dict[str, float]:
    """Run the named parts (all by default); seconds spent per part (compiling on an empty
    cache, loading on a warm one).  ValueError for an unknown part."""
    names = list(PARTS) if parts is None else list(parts)
    unknown = [p for p in names if p not in PARTS]
    if unknown:
        raise ValueError(f"unknown warm-up part(s) {unknown}; known: {', '.join(PARTS)}")
    out = {}
    for name in names:
        t = time.perf_counter()
        PARTS[name]()
        out[name] = time.perf_counter() - t
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rankbench.warmup", description=__doc__.splitlines()[0])
    ap.add_argument("parts", nargs="*", help=f"subset of {', '.join(PARTS)} (default: all)")
    args = ap.parse_args(argv)
    try:
        seconds = warm_up(args.parts or None)
    except ValueError as exc:
        ap.error(str(exc))
    for name, s in seconds.items():
        print(f"rankbench.warmup: {name:<10} {s:6.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
