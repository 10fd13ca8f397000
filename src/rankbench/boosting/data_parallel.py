"""LambdaMART with our lambdas (Delta-AUC, Delta-MAUC, NDCG) on LightGBM's distributed learner.

LightGBM's socket-based data-parallel learner (``tree_learner="data"``) runs one process per
"machine", each holding whole queries (``shard_queries``: a query is never split, so each
process computes its documents' lambdas from its own data with ``LambdaObjective``); the
processes all-reduce their gradient histograms, so every one builds the same trees.

LightGBM's distributed learner is not its serial learner, so by default the model differs
from one process's (on MQ2008 Fold 1, from the first tree on; LightGBM's own ``lambdarank``
objective differs just as much).  Three causes, each removed here (``EXACT_PARAMS``,
``global_codes``, ``rank_forced_bins``) so that the model is the one-process model:

- each process finds the bins of its share of the features from its *own* documents: the
  features are first mapped to global quantile codes (``global_codes``: at most 31 levels
  per feature, cut on the whole training set), with a forced bin bound between every two
  codes, the same in every process;
- LightGBM 4 reads the forced bounds of the distributed branch by the *process-local*
  feature index (``forced_bin_bounds[i]`` instead of ``[start[rank] + i]`` in
  ``DatasetLoader::ConstructFromSampleData``): each process gets its file shifted by its
  first feature (``rank_forced_bins``);
- per-bin document counts are estimated from hessians, differently in the two learners, and
  ``min_data_in_leaf`` / ``min_sum_hessian_in_leaf`` then accept different splits: both are
  off (``EXACT_PARAMS``).

Measured on MQ2008 Fold 1 (tests/test_boosting_data_parallel.py): Delta-AUC lambdas on two
processes give test scores bit-identical to one process's for 100 rounds; Delta-MAUC for the
first 86 rounds (at round 87 one split is chosen differently, from there the models differ).
"""

from __future__ import annotations

import json
import multiprocessing as mp
import socket
import tempfile
import time
from pathlib import Path

import numpy as np

from rankbench.parallel import SIGNAL_WAKE_S

# what makes the distributed learner choose the serial learner's splits (module docstring)
EXACT_PARAMS = {"min_data_in_leaf": 1, "min_sum_hessian_in_leaf": 0.0, "min_data_in_bin": 1,
                "feature_pre_filter": False, "deterministic": True, "force_row_wise": True,
                "num_threads": 1, "verbosity": -1, "metric": "None", "seed": 0}
LEVELS = 32


def global_codes(X: np.ndarray, levels: int = LEVELS):
    """(a function mapping rows of features to integer codes by the quantile cuts of ``X``, the
    forced bin bounds of those codes): cuts at the ``levels``-quantiles of each column of ``X``."""
    X = np.asarray(X, dtype=np.float64)
    cuts = [np.unique(np.quantile(X[:, j], np.linspace(0, 1, levels)[1:-1])) for j in range(X.shape[1])]

    def codes(A) -> np.ndarray:
        A = np.asarray(A, dtype=np.float64)
        return np.column_stack([np.searchsorted(c, A[:, j], side="right")
                                for j, c in enumerate(cuts)]).astype(np.float64)

    bounds = [{"feature": j, "bin_upper_bound": [k + 0.5 for k in range(len(c))]}
              for j, c in enumerate(cuts)]
    return codes, bounds


def rank_forced_bins(bounds: list[dict], rank: int, n_machines: int) -> list[dict]:
    """The forced bins one process must be given for LightGBM to apply ``bounds`` to the features it
    bins: entry i holds feature ``start + i``'s bounds, ``start`` its first feature (LightGBM 4 reads
    the distributed branch's forced bounds by the process-local index)."""
    d = len(bounds)
    start = min(rank * ((d + n_machines - 1) // n_machines), d)
    by = {b["feature"]: b["bin_upper_bound"] for b in bounds}
    out = [{"feature": i, "bin_upper_bound": by[start + i]} for i in range(d - start)]
    return out + [{"feature": i, "bin_upper_bound": by[i]} for i in range(d - start, d)]


def _train(X, y, query_ptr, metric: str, params: dict, rounds: int, bins_file: str, network: dict):
    import lightgbm as lgb

    from rankbench.boosting.lightgbm_hook import LambdaObjective

    objective = LambdaObjective(y, query_ptr, metric, int(params.pop("ndcg_at", 10)),
                                float(params.pop("sigma", 1.0)), True, "exact")
    p = {**params, "max_bin": max(LEVELS + 1, int(params.get("max_bin", 63))),
         "forcedbins_filename": bins_file, **network}
    data = lgb.Dataset(X, label=y, group=np.diff(query_ptr), params=p)
    return lgb.train({**p, "objective": objective}, data, num_boost_round=rounds).model_to_string()


def _worker(rank, n_machines, ports, part, metric, params, rounds, bins, folder, queue) -> None:
    try:
        path = str(Path(folder) / f"bins.rank{rank}.json")
        Path(path).write_text(json.dumps(rank_forced_bins(bins, rank, n_machines)))
        network = {"tree_learner": "data", "num_machines": n_machines, "pre_partition": True,
                   "machines": ",".join(f"127.0.0.1:{p}" for p in ports),
                   "local_listen_port": ports[rank], "time_out": 2}
        queue.put((rank, _train(*part, metric, dict(params), rounds, path, network), None))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which raises
        queue.put((rank, None, f"{type(exc).__name__}: {exc}"))


def _free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def lambdamart_one_process(X, y, query_ptr, metric: str = "auc", rounds: int = 100,
                           params: dict | None = None, bins: list[dict] | None = None) -> str:
    """LightGBM's model (text) of our ``metric`` lambdas trained in this process, with the settings
    of ``lambdamart_data_parallel`` (``bins``: forced bounds of ``global_codes``); X holds codes."""
    with tempfile.TemporaryDirectory(prefix="rblgb") as folder:
        path = str(Path(folder) / "bins.json")
        Path(path).write_text(json.dumps(bins or []))
        return _train(np.asarray(X), np.asarray(y), np.asarray(query_ptr), metric,
                      {**EXACT_PARAMS, **(params or {})}, rounds, path, {})


DEAD_GRACE_S = 2.0  # a process that ended: how long its result may still be on the way


def _next_result(queue, procs, models: dict, deadline: float, timeout_s: float) -> tuple:
    """The next (rank, model, error) of the queue, waited for in slices of SIGNAL_WAKE_S seconds:
    a pending signal is handled within one (``parallel.SIGNAL_WAKE_S``), and a process that died
    without a result (killed, out of memory, a crash in LightGBM's C++) is an error within
    DEAD_GRACE_S seconds, not after ``timeout_s``."""
    import queue as queue_mod

    dead_since: dict[int, float] = {}
    while True:
        try:
            return queue.get(timeout=max(0.0, min(SIGNAL_WAKE_S, deadline - time.monotonic())))
        except queue_mod.Empty:
            pass
        now = time.monotonic()
        if now >= deadline:
            raise RuntimeError(f"LightGBM's data-parallel processes did not finish within "
                               f"timeout_s={timeout_s:g} s")
        for rank, p in enumerate(procs):
            if rank in models or p.exitcode is None:
                continue
            if now - dead_since.setdefault(rank, now) >= DEAD_GRACE_S:
                how = (f"was killed by signal {-p.exitcode}" if p.exitcode < 0
                       else f"exited with status {p.exitcode}")
                raise RuntimeError(f"LightGBM process {rank} of {len(procs)} {how} "
                                   "without returning a model")


def lambdamart_data_parallel(X, y, query_ptr, metric: str = "auc", n_machines: int = 2,
                             rounds: int = 100, params: dict | None = None,
                             bins: list[dict] | None = None, timeout_s: float = 600.0) -> str:
    """The model (text) LightGBM's data-parallel learner builds on ``n_machines`` local processes,
    each holding a contiguous, document-balanced part of the queries (module docstring).  Every
    process must return the same model (checked); a process that fails or does not finish within
    ``timeout_s`` is an error (every process is stopped)."""
    from rankbench.data.partition import shard_queries

    X, y, query_ptr = np.asarray(X), np.asarray(y), np.asarray(query_ptr, dtype=np.int64)
    b = shard_queries(query_ptr, n_machines)
    parts = []
    for k in range(n_machines):
        qa, qb = int(b[k]), int(b[k + 1])
        a, e = int(query_ptr[qa]), int(query_ptr[qb])
        parts.append((X[a:e], y[a:e], query_ptr[qa:qb + 1] - a))
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    ports = _free_ports(n_machines)
    full = {**EXACT_PARAMS, **(params or {})}
    with tempfile.TemporaryDirectory(prefix="rblgb") as folder:
        procs = [ctx.Process(target=_worker, args=(r, n_machines, ports, parts[r], metric, full, rounds,
                                                   bins or [], folder, queue), daemon=True)
                 for r in range(n_machines)]
        try:
            for p in procs:
                p.start()
            models = {}
            deadline = time.monotonic() + timeout_s
            while len(models) < n_machines:
                rank, model, error = _next_result(queue, procs, models, deadline, timeout_s)
                if error:
                    raise RuntimeError(f"LightGBM process {rank} of {n_machines} failed: {error}")
                models[rank] = model
        finally:
            for p in procs:
                p.join(timeout=5)
                if p.is_alive():
                    p.kill()
                    p.join()
    # the trees, not the parameters block (each process has its own port and bins file)
    if len({m.split("\nparameters:")[0] for m in models.values()}) != 1:
        raise RuntimeError("the LightGBM processes built different models")
    return models[0]
