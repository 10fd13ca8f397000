"""Query shards in Ray actors (``rankbench.distributed``), two measurements:

1. **In memory** (``memory_rows``): seconds per Hessian-vector product and per f + gradient of
   the in-process tree oracle against ``ShardedOracle`` with 1, 2 and 4 shards that the driver
   puts into a local Ray cluster's object store (synthetic LETOR-like, d = 46), the bytes moved
   per Hv and the round trip of an empty call to every shard.
2. **On disk, on a multi-node local cluster** (``scale_rows``): an MSLR-WEB30K-shaped set
   (``mslr_like_blocks``: 31,531 queries, about 3.7 million documents x 136 dense features,
   4 GB; a tenth with ``quick``) sharded into 8 parts on disk (``shard_blocks``), a
   ``LocalRayCluster`` of a head and two worker nodes (separate ``ray start`` processes), and
   ``ShardedOracle.from_dataset`` with 1, 2, 4 and 8 actors: driver peak memory over its
   baseline during a TRON fit (goal: at most 5 % of the data's bytes), each node's actor
   memory, seconds per Hv against the in-process oracle on the same data, bytes moved per Hv,
   and ``sharding_model``'s prediction with this machine's measured memory bandwidth and round
   trip beside each.

BLAS runs one thread everywhere (as in ``RankSVM.fit`` and in the actors).  On one machine the
shards share its cores and memory bandwidth, so the times measure the overhead of sharding,
not a cluster's speed-up (docs/scaling.md).  Best of ``repeats`` per number; the machine is
shared.  ``python -m rankbench.bench.shards --scale --out /tmp/x`` runs part 2 alone and prints
its rows (the data set is deleted afterwards unless ``--keep``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from rankbench.bench import PARTS
from rankbench.bench.ranksvm import _time_min, fun_grad_call  # the one min-of-repeats timer

PART = "shards"
SHARDS = (1, 2, 4)
SCALE_ACTORS = (1, 2, 4, 8)
SCALE_DISK_SHARDS = 8
C = 1e-3
# MSLR-WEB30K: 31,531 queries, about 118 documents each, 136 features, labels 0-4 in these shares
MSLR_QUERIES = 31_531
MSLR_SHARES = (0.52, 0.32, 0.134, 0.017, 0.009)


def _measure(oracle, w, v, repeats: int) -> tuple[float, float, np.ndarray]:
    """(seconds per Hv at w, seconds per fun + grad, Hv)."""
    oracle.fun(w)
    hv = oracle.hess_vec(v)
    hv_s = _time_min(lambda: oracle.hess_vec(v), repeats)
    fg_s = _time_min(fun_grad_call(oracle, w), repeats)
    oracle.fun(w)
    return hv_s, fg_s, hv


def mslr_like_blocks(n_queries: int = MSLR_QUERIES, docs_per_query: int = 118, n_features: int = 136,
                     seed: int = 0, queries_per_block: int = 256):
    """A function giving, each time it is called, the same ``Block``s of an MSLR-WEB30K-shaped
    stand-in (bench.targets.make_mslr_like's model, made block by block: standard normal features
    plus a per-query shift, labels from a noisy linear score cut at MSLR's label shares of its
    normal distribution).  Each block is drawn from its own seeded generator, so no block needs
    another and the whole set never exists in memory."""
    from scipy.stats import norm

    from rankbench.data.sharded import Block

    rng = np.random.default_rng([seed, 0])
    sizes = rng.integers(docs_per_query // 2, 3 * docs_per_query // 2 + 1, size=n_queries)
    w = rng.standard_normal(n_features) / np.sqrt(n_features)
    # score = x.w with x = z + shift (z ~ N(0, 1), shift ~ N(0, 0.25) per query): variance
    # 1.25 |w|^2; plus noise of 0.5 times that standard deviation
    sd = np.sqrt(1.25 * float(w @ w) * 1.25)
    cuts = norm.ppf(np.cumsum(MSLR_SHARES)[:-1]) * sd
    starts = np.concatenate([[0], np.cumsum(sizes)])

    def blocks():
        for b, q0 in enumerate(range(0, n_queries, queries_per_block)):
            q1 = min(n_queries, q0 + queries_per_block)
            r = np.random.default_rng([seed, 1, b])
            n = int(starts[q1] - starts[q0])
            X = r.standard_normal((n, n_features))
            X += np.repeat(r.normal(0.0, 0.5, size=(q1 - q0, n_features)), sizes[q0:q1], axis=0)
            score = X @ w
            score += 0.5 * np.sqrt(1.25 * float(w @ w)) * r.standard_normal(n)
            y = np.searchsorted(cuts, score, side="right").astype(np.int64)
            qid = np.repeat(np.arange(q0, q1, dtype=np.int64), sizes[q0:q1])
            yield Block(X, y, qid, 0)

    blocks.n_docs = int(starts[-1])
    return blocks


def memory_rows(quick: bool) -> list[dict]:
    """Part 1: in-process tree oracle against shards put into a local Ray cluster's object store."""
    import ray
    from threadpoolctl import threadpool_limits

    from rankbench.data.synthetic import make_letor_like
    from rankbench.distributed import ShardedOracle
    from rankbench.estimators.ranksvm import warm_up_kernels
    from rankbench.objective import make_oracle

    n_queries, repeats = (1000, 5) if quick else (4000, 10)
    data = make_letor_like(n_queries=n_queries, docs_per_query=100, n_features=46, n_levels=3, seed=0)
    size = {"n_docs": data.n_docs, "n_features": data.n_features, "n_queries": n_queries}
    warm_up_kernels()
    rng = np.random.default_rng(0)
    w = 0.1 * rng.standard_normal(data.n_features)
    v = rng.standard_normal(data.n_features)
    ref = make_oracle("tree", data.X, data.y, data.query_ptr, C=C)
    with threadpool_limits(limits=1, user_api="blas"):  # as RankSVM.fit and the shards' actors
        hv_s, fg_s, hv_ref = _measure(ref, w, v, repeats)
    rows = [{"part": PART, "case": "in-process tree", "seconds": hv_s, **size, "n_shards": 0,
             "hv_s": hv_s, "fun_grad_s": fg_s, "bytes_per_hv": 0, "hv_vs_in_process": 1.0,
             "ping_s": None, "hv_rel_diff": 0.0}]
    own = not ray.is_initialized()
    if own:
        ray.init(address="local", num_cpus=os.cpu_count(), include_dashboard=False,
                 log_to_driver=False, configure_logging=False)
    try:
        for k in SHARDS:
            with ShardedOracle(data.X, data.y, data.query_ptr, C=C, oracle="tree", n_shards=k) as sh:
                s_hv, s_fg, hv = _measure(sh, w, v, repeats)
                sent, got = sh.bytes_sent, sh.bytes_received
                sh.hess_vec(v)
                moved = (sh.bytes_sent - sent) + (sh.bytes_received - got)
                ping = sh.ping_seconds()
            rows.append({"part": PART, "case": f"ray, {k} shard{'s' if k > 1 else ''}", "seconds": s_hv,
                         **size, "n_shards": k, "hv_s": s_hv, "fun_grad_s": s_fg,
                         "bytes_per_hv": moved, "hv_vs_in_process": s_hv / hv_s, "ping_s": ping,
                         "hv_rel_diff": float(np.abs(hv - hv_ref).max() / np.abs(hv_ref).max())})
    finally:
        if own:
            ray.shutdown()
    return rows


def _rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def scale_rows(quick: bool, folder: str | Path | None = None, keep: bool = False,
               repeats: int = 5) -> list[dict]:
    """Part 2 (module docstring): rows of the disk-sharded MSLR-shaped set on a 3-node local cluster."""
    import ray
    from threadpoolctl import threadpool_limits

    from rankbench.data.sharded import ShardedDataset, shard_blocks
    from rankbench.distributed import ShardedOracle, matrix_bytes, sharding_model
    from rankbench.estimators.ranksvm import warm_up_kernels
    from rankbench.local_cluster import LocalRayCluster
    from rankbench.objective import make_oracle
    from rankbench.optim.tron import tron
    from rankbench.sysinfo import PeakMemory

    n_queries = MSLR_QUERIES // 10 if quick else MSLR_QUERIES
    base = Path(folder) if folder else Path(tempfile.mkdtemp(prefix="rbshards", dir="/tmp"))
    base.mkdir(parents=True, exist_ok=True)
    out = base / "mslr_like_8"
    blocks = mslr_like_blocks(n_queries)
    rows: list[dict] = []
    cluster = None
    try:
        t = time.perf_counter()
        rss0 = _rss_mb()
        with PeakMemory() as mem:
            shard_blocks(blocks, out, SCALE_DISK_SHARDS, synthetic=True, overwrite=True)
        ds = ShardedDataset(out)
        x_bytes = matrix_bytes(ds.n_docs, ds.n_features)
        data_bytes = ds.data_bytes()
        size = {"n_docs": ds.n_docs, "n_features": ds.n_features, "n_queries": ds.n_queries,
                "data_bytes": data_bytes}
        rows.append({"part": PART, "case": f"shard to disk ({SCALE_DISK_SHARDS} parts)",
                     "seconds": time.perf_counter() - t, **size,
                     "peak_mb_over_start": mem.peak_mb - rss0})
        warm_up_kernels(("tree",), sparse=False)
        cluster = LocalRayCluster(n_workers=2, cpus=1, env={"PYTHONPATH": os.environ.get("PYTHONPATH", ""),
                                                             "NUMBA_CACHE_DIR": os.environ.get(
                                                                 "NUMBA_CACHE_DIR", "")}).start()
        ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
        _wait_nodes(ray, 3)
        names = {n["NodeID"]: next((k for k in n["Resources"] if k.startswith("rb_")), "?")
                 for n in ray.nodes()}
        rng = np.random.default_rng(0)
        w = 0.01 * rng.standard_normal(ds.n_features)
        v = rng.standard_normal(ds.n_features)
        hv_by_k = {}
        for k in SCALE_ACTORS:
            gc_base = _rss_mb()
            with PeakMemory() as mem:
                t = time.perf_counter()
                sh = ShardedOracle.from_dataset(ds, C=C, oracle="tree", n_shards=k)
                start_s = time.perf_counter() - t
                try:
                    res = tron(sh, tol=1e-6, max_iter=3) if k == SCALE_DISK_SHARDS else None
                    s_hv, s_fg, hv = _measure(sh, w, v, repeats)
                    sent, got = sh.bytes_sent, sh.bytes_received
                    sh.hess_vec(v)
                    moved = (sh.bytes_sent - sent) + (sh.bytes_received - got)
                    ping = sh.ping_seconds(10)
                    actor_mem = sh.actor_memory()
                    nodes = [names.get(n, "?") for n in sh.actor_nodes]
                finally:
                    sh.close()
            per_node: dict[str, float] = {}
            for n, m in zip(nodes, actor_mem, strict=True):
                per_node[n] = per_node.get(n, 0.0) + m / 2**20
            hv_by_k[k] = hv
            row = {"part": PART, "case": f"disk shards, {k} actor{'s' if k > 1 else ''} on 3 nodes",
                   "seconds": s_hv, **size, "n_shards": k, "hv_s": s_hv, "fun_grad_s": s_fg,
                   "start_s": start_s, "bytes_per_hv": moved, "ping_s": ping,
                   "driver_peak_mb_over_start": mem.peak_mb - gc_base, "driver_peak_mb": mem.peak_mb,
                   "actor_rss_mb_per_node": json.dumps({n: round(m) for n, m in sorted(per_node.items())})}
            if res is not None:
                over = (mem.peak_mb - gc_base) * 2**20
                row.update({"target": "driver memory of a sharded fit, share of the data's bytes",
                            "measured": over, "reference": "data bytes", "reference_value": data_bytes,
                            "ratio": over / data_bytes, "goal": 0.05, "met": over / data_bytes <= 0.05,
                            "tron_iter": int(res.n_iter)})
            rows.append(row)
        ray.shutdown()
        cluster.stop()
        cluster = None
        # in process, on the same data (the whole X in this process's memory)
        X, y, ptr = ds.load(verify=False, mmap=False)
        ref = make_oracle("tree", np.asarray(X), np.asarray(y), np.asarray(ptr), C=C)
        with threadpool_limits(limits=1, user_api="blas"):
            hv_s, fg_s, hv_ref = _measure(ref, w, v, repeats)
        del ref, X, y, ptr
        mem_bandwidth = 2.0 * x_bytes / hv_s  # what one in-process Hv reads, per second
        rows.append({"part": PART, "case": "in-process tree, same data", "seconds": hv_s, **size,
                     "n_shards": 0, "hv_s": hv_s, "fun_grad_s": fg_s, "bytes_per_hv": 0,
                     "mem_bandwidth_measured": mem_bandwidth})
        for r in rows:
            k = r.get("n_shards")
            if not k:
                continue
            model = sharding_model(ds.n_docs, ds.n_features, k, rtt=r["ping_s"],
                                   mem_bandwidth=mem_bandwidth / k)  # the k actors share one machine
            r.update({"hv_vs_in_process": r["hv_s"] / hv_s, "model_hv_s": model["hv_s"],
                      "measured_vs_model": r["hv_s"] / model["hv_s"],
                      "hv_rel_diff": float(np.abs(hv_by_k[k] - hv_ref).max() / np.abs(hv_ref).max())})
    finally:
        if cluster is not None:
            try:
                ray.shutdown()
            finally:
                cluster.stop()
        if not keep:
            shutil.rmtree(out, ignore_errors=True)
            if not folder:
                shutil.rmtree(base, ignore_errors=True)
    return rows


def _wait_nodes(ray, n: int, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while sum(bool(x["Alive"]) for x in ray.nodes()) < n:
        if time.monotonic() > deadline:
            raise RuntimeError(f"fewer than {n} Ray nodes alive after {timeout_s:g} s")
        time.sleep(0.5)


@PARTS.register("shards")
def run(quick: bool = False) -> list[dict]:
    """Rows of both measurements (module docstring); skipped rows when Ray is absent."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return [{"part": PART, "case": "ray", "seconds": None,
                 "note": "ray not installed (pip install 'ray[default]'): skipped"}]
    return memory_rows(quick) + scale_rows(quick)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rankbench.bench.shards")
    ap.add_argument("--scale", action="store_true", help="only the disk-sharded MSLR-shaped measurement")
    ap.add_argument("--quick", action="store_true", help="a tenth of the MSLR-shaped set")
    ap.add_argument("--out", help="folder for the sharded data set (default: a new one under /tmp)")
    ap.add_argument("--keep", action="store_true", help="keep the sharded data set")
    args = ap.parse_args(argv)
    rows = scale_rows(args.quick, args.out, args.keep) if args.scale else run(args.quick)
    print(json.dumps(rows, indent=1, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
