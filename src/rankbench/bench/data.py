"""Data-layer benchmark: LETOR parse times (no cache / cached) against scikit-learn's reader, a
generated ~1 GB sparse file against LIBLINEAR's reader (time and peak memory), synthetic generation."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numba
import numpy as np

from rankbench.bench import PARTS
from rankbench.data.letor import decompress_file, parse_letor_bytes, read_letor
from rankbench.data.registry import DatasetNotFound, data_root, letor_split_path
from rankbench.data.synthetic import RCV1_N_BIG, make_letor_like, make_rcv1_like

PART = "data"


def _best_of(fn, repeat: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def _row(case: str, seconds: float | None, **extra: Any) -> dict[str, Any]:
    return {"part": PART, "case": case, "seconds": seconds, **extra}


def _letor_rows(name: str, root: Path | None, repeat: int) -> list[dict[str, Any]]:
    try:
        path = letor_split_path(name, 1, "train", root=root)
    except DatasetNotFound:
        return [_row(f"{name} fold1 train: parse", None,
                     note=f"skipped: {name} not under RANKBENCH_DATA ({root})")]
    rows = []
    secs, data = _best_of(lambda: read_letor(path, cache=False), repeat)
    size = {"n_docs": data.n_docs, "n_features": data.n_features, "file": path.name}
    rows.append(_row(f"{name} fold1 train: read, no cache", secs, **size,
                     note=f"best of {repeat}; decompress + tokenize + build"))
    secs, raw = _best_of(lambda: decompress_file(path), repeat)
    rows.append(_row(f"{name} fold1 train: decompress only", secs, **size))
    parse_s, _ = _best_of(lambda: parse_letor_bytes(raw, path), repeat)
    rows.append(_row(f"{name} fold1 train: tokenize + build only", parse_s, **size))
    with tempfile.TemporaryDirectory() as tmp:
        read_letor(path, cache=tmp)
        secs, _ = _best_of(lambda: read_letor(path, cache=tmp), repeat)
    rows.append(_row(f"{name} fold1 train: read, cached", secs, **size,
                     note="sha256 of the file + npz load"))
    from sklearn.datasets import load_svmlight_file

    secs, _ = _best_of(lambda: load_svmlight_file(io.BytesIO(raw), query_id=True), 1)
    rows.append(_row(f"{name} fold1 train: sklearn load_svmlight_file", secs, **size,
                     ratio=parse_s / secs, note="reference, already decompressed; ratio: our "
                                                "tokenize + build / sklearn's"))
    return rows


@numba.njit(cache=True)
def _sparse_lines(out, start, n_docs, nnz, n_features, docs_per_query, seed, decimals):
    """Write documents start..start+n_docs-1 as LETOR lines into ``out``; returns the bytes used.

    Document r: label uniform in 0..4, qid r // docs_per_query + 1, ``nnz`` sorted distinct
    indices (one uniform in each of nnz equal slices of 1..n_features), values -?d.ddd with
    ``decimals`` random decimals."""
    if start == 0:
        np.random.seed(seed)
    digits = np.empty(20, dtype=np.uint8)
    step = n_features // nnz
    p = 0
    for r in range(start, start + n_docs):
        out[p] = 48 + np.random.randint(0, 5)
        p += 1
        for c in (32, 113, 105, 100, 58):  # " qid:"
            out[p] = c
            p += 1
        for j in range(-1, nnz):
            v = r // docs_per_query + 1 if j < 0 else j * step + np.random.randint(0, step) + 1
            if j >= 0:
                out[p] = 32
                p += 1
            nd = 0
            while True:
                digits[nd] = 48 + v % 10
                nd += 1
                v //= 10
                if v == 0:
                    break
            for k in range(nd):
                out[p] = digits[nd - 1 - k]
                p += 1
            if j < 0:
                continue
            out[p] = 58
            p += 1
            if np.random.random() < 0.3:
                out[p] = 45
                p += 1
            out[p] = 48 + np.random.randint(0, 10)
            out[p + 1] = 46
            p += 2
            for _ in range(decimals):
                out[p] = 48 + np.random.randint(0, 10)
                p += 1
        out[p] = 10
        p += 1
    return p


def write_sparse_letor(path: str | Path, n_docs: int, nnz: int = 75, n_features: int = 100_000,
                       docs_per_query: int = 100, seed: int = 0, decimals: int = 6) -> Path:
    """A LETOR file of ``n_docs`` sparse documents (``nnz`` features each, values with
    ``decimals`` decimals: 16 gives repr-like 17-digit numbers), about
    ``n_docs * nnz * (9 + decimals)`` bytes, written 10,000 documents at a time. O(file size)."""
    path = Path(path)
    chunk = 10_000
    out = np.empty(chunk * (nnz * (len(str(n_features)) + 5 + decimals) + 40), dtype=np.uint8)
    with path.open("wb") as fh:
        for start in range(0, n_docs, chunk):
            used = _sparse_lines(out, start, min(chunk, n_docs - start), nnz, n_features,
                                 docs_per_query, seed, decimals)
            fh.write(out[:used].tobytes())
    return path


_PEAK_SCRIPT = """
import json, sys, tempfile, time, pathlib
from rankbench.data.letor import read_letor

def status(key):  # kB lines of /proc/self/status
    return next(int(x.split()[1]) * 1024 for x in open("/proc/self/status") if x.startswith(key + ":"))

with tempfile.TemporaryDirectory() as tmp:
    p = pathlib.Path(tmp) / "warm.txt"
    p.write_bytes(b"1 qid:1 1:0.5 #docid = a\\n")
    read_letor(p, cache=False)
with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")  # reset the peak RSS (VmHWM) to the current RSS
base = status("VmRSS")
t = time.perf_counter()
X = read_letor(sys.argv[1], cache=False).X
secs = time.perf_counter() - t
print(json.dumps({"seconds": secs, "peak_bytes": status("VmHWM") - base,
                  "csr_bytes": X.data.nbytes + X.indices.nbytes + X.indptr.nbytes}))
"""


def read_in_subprocess(path: str | Path) -> dict[str, float]:
    """``read_letor(path, cache=False)`` in a fresh Python: its seconds, its peak
    memory (the process's peak RSS during the read, reset before it through /proc/self/clear_refs,
    minus its RSS before) and the CSR's bytes.  Linux only."""
    import rankbench

    env = dict(os.environ)
    src = str(Path(rankbench.__file__).resolve().parents[1])
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    out = subprocess.run([sys.executable, "-c", _PEAK_SCRIPT, str(path)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def sparse_read_rows(n_docs: int, nnz: int = 75, repeat: int = 3, decimals: int = 6) -> list[dict[str, Any]]:
    """A generated sparse LETOR file read by our reader and by LIBLINEAR ranksvm (parse and stop).

    Times are the best of ``repeat`` fresh processes each; ``ratio`` is ours / LIBLINEAR's
    read time; ``peak_ratio`` the read's peak memory over the final CSR's bytes.
    ``decimals=16`` writes 17-digit values, which our exact fast path leaves to NumPy's cast."""
    from rankbench.peers import built
    from rankbench.peers.solvers import liblinear_read_time

    rows = []
    with tempfile.TemporaryDirectory(prefix="rankbench-sparse-") as tmp:
        t = time.perf_counter()
        path = write_sparse_letor(Path(tmp) / "sparse.txt", n_docs, nnz, decimals=decimals)
        mb = path.stat().st_size / 1e6
        label = f"sparse {n_docs} docs x {nnz} nnz, {decimals + 1}-digit values ({mb:.0f} MB)"
        size = {"n_docs": n_docs, "nnz_per_doc": nnz, "file_mb": mb}
        rows.append(_row(f"{label}: generate file", time.perf_counter() - t, **size))
        peer = None
        if built("liblinear"):
            peer = min(liblinear_read_time(path) for _ in range(repeat))
            rows.append(_row(f"{label}: LIBLINEAR ranksvm read (train -s 8 -e 1e30)", peer, **size,
                             note=f"best of {repeat}; parse-and-stop run, as peers' peer_read_s"))
        else:
            rows.append(_row(f"{label}: LIBLINEAR ranksvm read", None, **size,
                             note="skipped: peer liblinear not built (make peers)"))
        runs = [read_in_subprocess(path) for _ in range(repeat)]
        secs = min(r["seconds"] for r in runs)
        peak, csr = runs[0]["peak_bytes"], runs[0]["csr_bytes"]
        rows.append(_row(f"{label}: read, stream engine", secs, **size, peak_mb=peak / 1e6,
                         csr_mb=csr / 1e6, peak_ratio=peak / csr, peer_read_s=peer,
                         ratio=secs / peer if peer else None,
                         note=f"best of {repeat} fresh processes; ratio: ours / LIBLINEAR's read; "
                              "peak_ratio: peak RSS growth during the read / CSR bytes"))
    return rows


@PARTS.register("data")
def run(quick: bool = False) -> list[dict[str, Any]]:
    """Parse times of OHSUMED / MQ2008 Fold1 train (no cache and cached), a generated sparse file
    against LIBLINEAR's reader (1e5 documents quick, 1e6 full: ~1 GB), and generator times."""
    repeat = 3 if quick else 7
    rows: list[dict[str, Any]] = []
    t = time.perf_counter()
    make_letor_like(n_queries=2, docs_per_query=2, n_features=2)
    make_rcv1_like(n=10, d=10, nnz_per_row=2)
    parse_letor_bytes(b"1 qid:1 1:0.5\n")
    rows.append(_row("first calls (numba load or compile)", time.perf_counter() - t))
    root = data_root()
    rows += _letor_rows("ohsumed", root, repeat)
    rows += _letor_rows("mq2008", root, repeat)
    rows += sparse_read_rows(100_000 if quick else 1_000_000, repeat=2 if quick else 3)
    rows += sparse_read_rows(20_000 if quick else 200_000, repeat=2 if quick else 3, decimals=16)
    n = 100_000 if quick else RCV1_N_BIG
    secs, d = _best_of(lambda: make_rcv1_like(n=n), 1 if not quick else 2)
    rows.append(_row("make_rcv1_like", secs, n_docs=n, n_features=d.n_features,
                     nnz=int(d.X.nnz)))
    secs, d = _best_of(lambda: make_letor_like(n_queries=1000, docs_per_query=100, n_features=46), 2)
    rows.append(_row("make_letor_like", secs, n_docs=d.n_docs, n_features=d.n_features))
    return rows
