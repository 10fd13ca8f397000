"""Query shards in Ray actors (``rankbench.distributed``): seconds per Hessian-vector product and
per f + gradient of the in-process tree oracle against ``ShardedOracle`` with 1, 2 and 4 shards on a
local Ray cluster, the bytes moved per Hv (v out and X_s^T H X_s v back, d floats each way per
shard) and the round trip of an empty call to every shard.  BLAS runs one thread everywhere
(as in ``RankSVM.fit`` and in the actors).  On one machine the shards share its
cores and memory bandwidth, so this measures the overhead of sharding, not a cluster's speedup
(docs/scaling.md models that).  Best of ``repeats`` per number; the machine is shared."""

from __future__ import annotations

import os

import numpy as np

from rankbench.bench import PARTS
from rankbench.bench.ranksvm import _time_min  # the one min-of-repeats timer

PART = "shards"
SHARDS = (1, 2, 4)
C = 1e-3


def _measure(oracle, w, v, repeats: int) -> tuple[float, float, np.ndarray]:
    """(seconds per Hv at w, seconds per fun + grad, Hv)."""
    oracle.fun(w)
    hv = oracle.hess_vec(v)
    hv_s = _time_min(lambda: oracle.hess_vec(v), repeats)
    fg_s = _time_min(lambda: (oracle.fun(w), oracle.grad(w)), repeats)
    oracle.fun(w)
    return hv_s, fg_s, hv


@PARTS.register("shards")
def run(quick: bool = False) -> list[dict]:
    """Rows: one for the in-process tree oracle, one per shard count (module docstring)."""
    from threadpoolctl import threadpool_limits

    from rankbench.data.synthetic import make_letor_like
    from rankbench.estimators.ranksvm import warm_up_kernels
    from rankbench.objective import make_oracle

    n_queries, repeats = (1000, 5) if quick else (4000, 10)
    data = make_letor_like(n_queries=n_queries, docs_per_query=100, n_features=46, n_levels=3, seed=0)
    size = {"n_docs": data.n_docs, "n_features": data.n_features, "n_queries": n_queries}
    try:
        import ray
    except ImportError:
        return [{"part": PART, "case": "ray", "seconds": None, **size,
                 "note": "ray not installed (pip install 'ray[default]'): skipped"}]
    from rankbench.distributed import ShardedOracle

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
