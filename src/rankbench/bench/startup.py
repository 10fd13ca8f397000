"""Start-up benchmark: whole-process wall times of short commands, each in a fresh interpreter.

- ``import rankbench; rankbench.RankSVM`` against its target (``IMPORT_TARGET_S``);
- a one-shot script that parses OHSUMED Fold1 train (no parse cache) and fits the default
  RankSVM, against ``ONE_SHOT_TARGET_S``;
- for scale: an empty interpreter, ``import numba, scipy.sparse`` (what the kernels need) and
  ``import sklearn.base`` (what the estimators no longer import);
- (full run only) the one-shot script on an empty numba cache, i.e. the first run after a fresh
  install, before and after ``python -m rankbench.warmup`` filled the cache.

Each time is the minimum over ``repeat`` runs (the cores are shared: read the ratios).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from typing import Any

from rankbench.bench import PARTS
from rankbench.data.registry import DatasetNotFound, data_root, letor_split_path

PART = "startup"
IMPORT_TARGET_S = 0.6
ONE_SHOT_TARGET_S = 1.0

ONE_SHOT = """\
import rankbench
d = rankbench.read_letor({path!r}, cache=False)
rankbench.RankSVM().fit(d.X, d.y, d.qid)
"""


def process_seconds(code: str, repeat: int, env: dict[str, str] | None = None) -> float:
    """Minimum wall time of ``python -c code`` in a fresh interpreter over ``repeat`` runs."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                       env={**os.environ, **(env or {})}, timeout=600)
        best = min(best, time.perf_counter() - t)
    return best


def _row(case: str, seconds: float | None, target: float | None = None, **extra: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"part": PART, "case": case, "seconds": seconds}
    if target is not None:
        row.update(target_s=target, ratio_to_target=None if seconds is None else seconds / target)
    return {**row, **extra}


@PARTS.register("startup")
def run(quick: bool = False) -> list[dict[str, Any]]:
    """Rows of the start-up benchmark (module docstring)."""
    repeat = 3 if quick else 7
    rows = [_row("python -c pass", process_seconds("pass", repeat), n=repeat),
            _row("import numba, scipy.sparse", process_seconds("import numba, scipy.sparse", repeat),
                 n=repeat, note="the floor: what the kernels need"),
            _row("import sklearn.base", process_seconds("import sklearn.base", repeat), n=repeat,
                 note="reference: not imported by the estimators"),
            _row("import rankbench; rankbench.RankSVM",
                 process_seconds("import rankbench; rankbench.RankSVM", repeat), IMPORT_TARGET_S,
                 n=repeat)]
    try:
        path = letor_split_path("ohsumed", 1, "train", root=data_root())
    except DatasetNotFound:
        rows.append(_row("one-shot: parse OHSUMED Fold1 train + RankSVM fit", None, ONE_SHOT_TARGET_S,
                         note="skipped: OHSUMED not under RANKBENCH_DATA"))
        return rows
    code = ONE_SHOT.format(path=str(path))
    process_seconds(code, 1)  # numba's cache filled for this checkout
    rows.append(_row("one-shot: parse OHSUMED Fold1 train + RankSVM fit", process_seconds(code, repeat),
                     ONE_SHOT_TARGET_S, n=repeat, note="whole process, numba cache warm"))
    if not quick:
        with tempfile.TemporaryDirectory() as cold:
            env = {"NUMBA_CACHE_DIR": cold}
            rows.append(_row("one-shot, empty numba cache (first run after install)",
                             process_seconds(code, 1, env), n=1, note="compiles what it uses"))
            with tempfile.TemporaryDirectory() as cold2:
                env = {"NUMBA_CACHE_DIR": cold2}
                t = process_seconds("from rankbench.warmup import main; main([])", 1, env)
                rows.append(_row("python -m rankbench.warmup, empty numba cache", t, n=1,
                                 note="once, at install (make install runs it)"))
                rows.append(_row("one-shot after rankbench.warmup (first run after make install)",
                                 process_seconds(code, 1, env), ONE_SHOT_TARGET_S, n=1))
    return rows
