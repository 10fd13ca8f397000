"""Benchmark: rankbench.metrics.evaluate (all standard keys) on synthetic scores; median of 5."""

from __future__ import annotations

import time

import numpy as np

from rankbench.bench import PARTS
from rankbench.metrics import evaluate


@PARTS.register("metrics")
def run(quick: bool = False) -> list[dict]:
    """Time evaluate() on one big query, a LETOR-sized set, and many interleaved queries."""
    rng = np.random.default_rng(0)
    cases = [(16_140, 106), (800_000, 1), (800_000, 8000)]
    if quick:
        cases = [(16_140, 106), (80_000, 1)]
    rows = []
    for n, nq in cases:
        y = rng.integers(0, 3, n)
        s = rng.normal(size=n) + 0.5 * y
        qid = None if nq == 1 else rng.integers(0, nq, n)
        evaluate(y, s, qid)  # compile / warm
        times = []
        for _ in range(5):
            t = time.perf_counter()
            evaluate(y, s, qid)
            times.append(time.perf_counter() - t)
        rows.append({"part": "metrics", "case": f"evaluate n={n} queries={nq}",
                     "seconds": float(np.median(times))})
    return rows
