"""RankSVM oracle over query shards held by Ray actors, and a cost model of sharding.

f(w) = 1/2 ||w||^2 + C * sum_q L_q(X_q w) is a sum over queries, so the loss part of f, of its
gradient (X^T dL/dz), of a Hessian-vector product (X^T H_L X v) and of the Jacobi diagonal split
over any partition of the queries.  ``ShardedOracle`` cuts the queries into contiguous shards
(balanced by documents or by pairs, ``shard_queries``), puts each shard's rows into the Ray
object store once and starts one actor per shard that builds an ordinary in-process oracle
(``rankbench.objective.make_oracle``) over them.  Per call only w or v (d floats) go out to each
shard and d floats (or one number) come back; the driver adds the shards' parts and the
regularizer once: f = 1/2 ||w||^2 + C sum_s L_s, grad = w + C sum_s g_s, Hv = v + C sum_s h_s,
hess_diag = 1 + C sum_s D_s.  It has the oracle interface the optimizers call (``fun`` before
``grad`` / ``hess_vec`` / ``hess_diag`` at the same w, ``n_features``, ``n_docs``, ``n_pairs``,
``C``, ``loss``), so TRON, Newton-CG, L-BFGS and the cutting plane run on it unchanged
(``RankSVM(solver="tron_tree", n_shards=4)``).  Ray is optional and imported only here, lazily.

``sharding_model`` predicts the time of one Hessian-vector product on k shards (docs/scaling.md;
``python -m rankbench.distributed`` prints that document's table).
"""

from __future__ import annotations

import copy
import itertools
import math

import numpy as np
import scipy.sparse as sp

from rankbench.objective.base import check_C, check_problem

# optimizers that touch the oracle only through fun / grad / hess_vec / hess_diag (sgd_queries
# splits the oracle by query, sgd_pairs samples rows of X: neither runs on shards)
SHARDABLE_OPTIMIZERS = ("tron", "newton", "lbfgs", "cutting_plane")
BALANCES = ("docs", "pairs")
INLINE_BYTES = 100_000  # Ray inlines smaller arguments in the call; larger w / v are put once per call


def _import_ray():
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("query shards need Ray: pip install 'ray[default]' (the cluster extra)") from exc
    return ray


def pairs_per_query(y, query_ptr) -> np.ndarray:
    """Number of preference pairs (y_i > y_j, same query) of each query; O(n log n)."""
    y = np.asarray(y)
    query_ptr = np.asarray(query_ptr, dtype=np.int64)
    sizes = np.diff(query_ptr)
    q_of = np.repeat(np.arange(sizes.shape[0]), sizes)
    _, label = np.unique(y, return_inverse=True)
    key = q_of * (int(label.max(initial=0)) + 1) + label.ravel()
    keys, counts = np.unique(key, return_counts=True)
    same = np.bincount(keys // (int(label.max(initial=0)) + 1), weights=counts.astype(np.float64) ** 2,
                       minlength=sizes.shape[0])
    return ((sizes.astype(np.float64) ** 2 - same) // 2).astype(np.int64)


def shard_queries(query_ptr, n_shards: int, weights=None) -> np.ndarray:
    """Query indices 0 = b_0 < b_1 < ... < b_k = n_queries cutting the queries into ``n_shards``
    contiguous shards of near-equal total ``weights`` (one per query; None = documents): each cut
    at the query boundary nearest to its share of the total.  Every shard holds at least one
    query; ValueError when ``n_shards`` exceeds the number of queries (a query is never split: its
    pairs would cross shards)."""
    query_ptr = np.asarray(query_ptr, dtype=np.int64)
    n_queries = query_ptr.shape[0] - 1
    if isinstance(n_shards, bool) or not isinstance(n_shards, int | np.integer) or n_shards < 1:
        raise ValueError(f"n_shards must be a positive integer, got {n_shards!r}")
    n_shards = int(n_shards)
    if n_shards > n_queries:
        raise ValueError(f"n_shards={n_shards} exceeds the number of queries ({n_queries}): a query "
                         "is never split across shards; use at most one shard per query")
    w = np.diff(query_ptr).astype(np.float64) if weights is None else np.asarray(weights, np.float64)
    if w.shape != (n_queries,) or np.any(w < 0) or not np.all(np.isfinite(w)):
        raise ValueError(f"weights must be {n_queries} finite non-negative numbers (one per query)")
    cum = np.concatenate([[0.0], np.cumsum(w)])  # cum[b] = weight of queries before boundary b
    bounds = np.zeros(n_shards + 1, dtype=np.int64)
    bounds[-1] = n_queries
    for k in range(1, n_shards):
        target = k * cum[-1] / n_shards
        b = int(np.searchsorted(cum, target))  # cum[b-1] < target <= cum[b]
        if b > 0 and target - cum[b - 1] <= cum[b] - target:
            b -= 1
        # at least one query in this shard and in each one after it
        bounds[k] = min(max(b, bounds[k - 1] + 1), n_queries - (n_shards - k))
    return bounds


class ShardWorker:
    """One query shard: an in-process oracle over its rows, answering loss parts (run as a Ray actor).

    Holds one oracle per ``slot`` (a shallow copy shares the data, not the cached state at w, as
    ``copy.copy`` of an in-process oracle does)."""

    def __init__(self, data, oracle: str, C: float, loss, rescaling, delta):
        from threadpoolctl import threadpool_limits

        from rankbench.objective import make_oracle

        threadpool_limits(limits=1, user_api="blas")  # the vectors are short; no thread wake-ups
        X, y, ptr = data
        self._oracles = {0: make_oracle(oracle, X, np.array(y), np.array(ptr), C=C, loss=loss,
                                        rescaling=rescaling, delta=delta)}

    def info(self) -> tuple[int, int, np.ndarray, bool]:
        """(documents, pairs, squared column norms, sparse?)."""
        o = self._oracles[0]
        X = o.X
        col_sq = (np.asarray(X.multiply(X).sum(axis=0)).ravel() if sp.issparse(X)
                  else np.einsum("ij,ij->j", X, X))
        return o.n_docs, o.n_pairs(), col_sq, sp.issparse(X)

    def ping(self) -> int:
        return 0

    def loss(self, slot: int, w: np.ndarray) -> float:
        o = self._oracles[slot]
        return o.loss_at_scores(o.scores(w))

    def loss_grad(self, slot: int) -> np.ndarray:
        return self._oracles[slot].loss_grad()

    def loss_hess_vec(self, slot: int, v: np.ndarray) -> np.ndarray:
        return self._oracles[slot].loss_hess_vec(v)

    def loss_hess_diag(self, slot: int) -> np.ndarray:
        return self._oracles[slot].loss_hess_diag()

    def clone(self, slot: int, new: int) -> None:
        self._oracles[new] = copy.copy(self._oracles[slot])

    def drop(self, slot: int) -> None:
        if slot:
            self._oracles.pop(slot, None)


class ShardedOracle:
    """The pair oracle of (X, y, query_ptr) summed over ``n_shards`` Ray actors (module docstring).

    ``oracle``: the in-process oracle each shard runs (tree, counting, ...); ``balance``: "docs"
    (default: the tree / counting cost is O(nd + n log n)) or "pairs" (the explicit-pairs oracle);
    ``address``: when Ray is not initialized yet, the cluster to join ("auto": the running one,
    "host:6379", "ray://host:10001"; None: a new local cluster, never a running one), left again
    by ``close`` (``ray.shutdown``); ``num_cpus``: CPUs each actor reserves (None = Ray's default
    for actors, so more shards than CPUs still start).  Call ``close()`` (or use ``with``) to stop
    the actors."""

    def __init__(self, X, y, query_ptr=None, C: float = 1.0, loss="squared_hinge", oracle: str = "tree",
                 n_shards: int = 2, balance: str = "docs", address: str | None = None,
                 rescaling: str | None = None, delta=None, num_cpus: float | None = None):
        from rankbench.objective import ORACLES, get_loss

        X, y, query_ptr = check_problem(X, y, query_ptr)
        self.C = check_C(C)
        if oracle not in ORACLES:
            raise ValueError(f"unknown oracle {oracle!r}; expected one of {', '.join(ORACLES)}")
        cls = ORACLES[oracle]
        cls.check_rescaling(rescaling, delta)
        if delta is not None and not (isinstance(delta, str) or callable(delta)):
            raise ValueError("query shards take a named or callable pair cost delta, not a matrix "
                             "(a shard missing a label would index the matrix by its own levels)")
        if balance not in BALANCES:
            raise ValueError(f"balance must be one of {', '.join(BALANCES)}, got {balance!r}")
        self.requested_loss = get_loss(loss)
        self.loss = cls.loss_form(self.requested_loss)
        self.name = cls.name
        weights = pairs_per_query(y, query_ptr) if balance == "pairs" else None
        self.query_bounds = shard_queries(query_ptr, n_shards, weights)
        self.doc_bounds = query_ptr[self.query_bounds]
        ray = _import_ray()
        self._ray = ray
        self._own_ray = not ray.is_initialized()
        if self._own_ray:
            ray.init(address="local" if address is None else address, include_dashboard=False,
                     log_to_driver=False)
        worker = ray.remote(ShardWorker)
        if num_cpus is not None:
            worker = worker.options(num_cpus=num_cpus)
        self._data, self._actors = [], []
        try:
            for k in range(len(self.query_bounds) - 1):
                qa, qb = int(self.query_bounds[k]), int(self.query_bounds[k + 1])
                a, b = int(query_ptr[qa]), int(query_ptr[qb])
                ref = ray.put((X[a:b], y[a:b], query_ptr[qa:qb + 1] - a))  # once, not per call
                self._data.append(ref)
                self._actors.append(worker.remote(ref, oracle, self.C, loss, rescaling, delta))
            infos = ray.get([s.info.remote() for s in self._actors])
        except BaseException:
            self.close()
            raise
        self.n_shards = len(self._actors)
        self.n_features = int(X.shape[1])
        self.n_docs = int(sum(i[0] for i in infos))
        self._n_pairs = int(sum(i[1] for i in infos))
        from rankbench.optim.accuracy import columns_apart

        # what want_preconditioner's "auto" decides from X, from the shards' column norms
        self.auto_precondition = bool(infos[0][3]) or columns_apart(sum(i[2] for i in infos))
        self._slot = 0
        self._slots = itertools.count(1)
        self._at_w = False
        self.bytes_sent = 0
        self.bytes_received = 0

    # the oracle interface -------------------------------------------------------------
    def n_pairs(self) -> int:
        """|P| summed over the shards (no pair crosses a shard)."""
        return self._n_pairs

    def fun(self, w: np.ndarray) -> float:
        """f(w) = 1/2 ||w||^2 + C sum_s L_s(X_s w); the shards cache what grad and hess_vec reuse."""
        w = self._vector(w, "w")
        parts = self._call("loss", w)
        self._at_w = True
        return 0.5 * float(w @ w) + self.C * float(sum(parts))

    def grad(self, w: np.ndarray) -> np.ndarray:
        """w + C sum_s X_s^T dL_s/dz at the w of the last ``fun`` call."""
        self._need_fun("grad(w)")
        return self._vector(w, "w") + self.C * self._sum(self._call("loss_grad"))

    def hess_vec(self, v: np.ndarray) -> np.ndarray:
        """v + C sum_s X_s^T H_s X_s v at the last ``fun`` point."""
        self._need_fun("hess_vec(v)")
        v = self._vector(v, "v")
        return v + self.C * self._sum(self._call("loss_hess_vec", v))

    def hess_diag(self) -> np.ndarray:
        """1 + C sum_s D_s, D_s the loss part of shard s's Jacobi diagonal (PairOracle.hess_diag)."""
        self._need_fun("hess_diag()")
        return 1.0 + self.C * self._sum(self._call("loss_hess_diag"))

    def ping_seconds(self, repeats: int = 20) -> float:
        """Best round-trip time of an empty call to every shard at once (the latency of one step)."""
        import time

        best = math.inf
        for _ in range(repeats):
            t = time.perf_counter()
            self._ray.get([s.ping.remote() for s in self._actors])
            best = min(best, time.perf_counter() - t)
        return best

    # plumbing -------------------------------------------------------------------------
    def _vector(self, v, name: str) -> np.ndarray:
        v = np.asarray(v, dtype=np.float64)
        if v.shape != (self.n_features,):
            raise ValueError(f"{name} must be 1-D with one entry per feature ({self.n_features}), "
                             f"got shape {v.shape}")
        return v

    def _need_fun(self, what: str) -> None:
        if not self._at_w:
            raise RuntimeError(f"call fun(w) before {what}")

    def _call(self, method: str, vec: np.ndarray | None = None) -> list:
        if not self._actors:
            raise RuntimeError("this ShardedOracle is closed")
        args: tuple = (self._slot,)
        if vec is not None:
            # one object for every shard: a large vector is stored once, not once per shard
            args += (self._ray.put(vec) if vec.nbytes >= INLINE_BYTES else vec,)
            self.bytes_sent += vec.nbytes * len(self._actors)
        out = self._ray.get([getattr(s, method).remote(*args) for s in self._actors])
        self.bytes_received += sum(np.asarray(p).nbytes for p in out)
        return out

    @staticmethod
    def _sum(parts: list) -> np.ndarray:
        total = np.array(parts[0], dtype=np.float64)
        for p in parts[1:]:
            total += p
        return total

    def __copy__(self) -> ShardedOracle:
        """Same actors and data, own cached state at w (a new slot in every shard): what TRON's
        ``cg_history`` probe does with an in-process oracle."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._slot = next(self._slots)
        new._own_ray = False
        new._at_w = False
        self._ray.get([s.clone.remote(self._slot, new._slot) for s in self._actors])
        return new

    def close(self) -> None:
        """Stop the actors, release the shards' data, and shut Ray down if this oracle started it."""
        for s in self._actors:
            self._ray.kill(s)
        self._actors, self._data = [], []
        if self._own_ray and self._ray.is_initialized():
            self._ray.shutdown()
        self._own_ray = False

    def __enter__(self) -> ShardedOracle:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# the cost model of docs/scaling.md -------------------------------------------------------

def matrix_bytes(n_docs: float, d: int, nnz_per_doc: float | None = None) -> float:
    """Bytes of X: dense float64 n*d*8, or CSR with float64 values, int32 column ids and int64
    row offsets, n*nnz*(8 + 4) + (n + 1)*8."""
    if nnz_per_doc is None:
        return float(n_docs) * d * 8.0
    return float(n_docs) * nnz_per_doc * 12.0 + (float(n_docs) + 1.0) * 8.0


def sharding_model(n_docs: float, d: int, n_shards: int, nnz_per_doc: float | None = None,
                   bandwidth: float = 1.25e9, rtt: float = 1e-4, mem_bandwidth: float = 20e9) -> dict:
    """Predicted seconds of one Hessian-vector product on ``n_shards`` nodes driven as
    ``ShardedOracle`` does (one driver, a star):

    - compute: each shard reads its part of X twice (X_s v, then X_s^T H X_s v):
      2 * bytes(X) / n_shards / mem_bandwidth;
    - communication: the driver sends v (8d bytes) to every shard and receives 8d bytes from
      every shard over its one link: rtt + 2 * 8d * n_shards / bandwidth;
    - reduction: the driver reads the n_shards returned vectors: 8d * n_shards / mem_bandwidth.

    ``bandwidth`` and ``mem_bandwidth`` in bytes/s (10 GbE = 1.25e9), ``rtt`` the round trip of
    one call in seconds.  Also: the one-node time 2 * bytes(X) / mem_bandwidth (for the speedup;
    hypothetical when X does not fit one node), X's bytes per shard, and the shard count that
    minimises compute + communication, sqrt(2 bytes(X) * bandwidth / (16 d * mem_bandwidth))."""
    if n_shards < 1 or d < 1 or n_docs < 1 or bandwidth <= 0 or mem_bandwidth <= 0 or rtt < 0:
        raise ValueError("sharding_model needs n_docs, d, n_shards >= 1 and positive bandwidths")
    x_bytes = matrix_bytes(n_docs, d, nnz_per_doc)
    vec = 8.0 * d
    compute = 2.0 * x_bytes / n_shards / mem_bandwidth
    comm = rtt + 2.0 * vec * n_shards / bandwidth
    reduce = vec * n_shards / mem_bandwidth
    one_node = 2.0 * x_bytes / mem_bandwidth
    hv = compute + comm + reduce
    return {"x_bytes": x_bytes, "x_bytes_per_shard": x_bytes / n_shards,
            "bytes_moved_per_shard": 2.0 * vec, "bytes_moved": 2.0 * vec * n_shards,
            "compute_s": compute, "comm_s": comm, "reduce_s": reduce, "hv_s": hv,
            "one_node_s": one_node, "speedup": one_node / hv,
            "best_shards": math.sqrt(2.0 * x_bytes * bandwidth / (2.0 * vec * mem_bandwidth))}


SCALING_CASES = (("dense, d = 136", 136, None), ("sparse, d = 47,236, 75 nnz/doc", 47_236, 75))


def scaling_table(n_docs: float = 1e9, shards=(10, 100, 1000), bandwidth: float = 1.25e9,
                  rtt: float = 1e-4, mem_bandwidth: float = 20e9) -> str:
    """The Markdown table of docs/scaling.md: ``sharding_model`` for each case and shard count."""
    lines = [f"n = {n_docs:.3g} documents; network {bandwidth:.4g} bytes/s per link "
             f"({bandwidth * 8 / 1e9:.4g} Gbit/s), round trip {rtt * 1e6:.4g} us per call; memory "
             f"bandwidth {mem_bandwidth / 1e9:.4g} GB/s per node.", "",
             "| X | shards | X per shard (GB) | compute (ms) | network (ms) | reduce (ms) | "
             "Hv (ms) | one node (s) | speedup | best shards |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for label, d, nnz in SCALING_CASES:
        for k in shards:
            m = sharding_model(n_docs, d, k, nnz, bandwidth, rtt, mem_bandwidth)
            lines.append(f"| {label} | {k} | {m['x_bytes_per_shard'] / 1e9:.4g} | "
                         f"{m['compute_s'] * 1e3:.4g} | {m['comm_s'] * 1e3:.4g} | "
                         f"{m['reduce_s'] * 1e3:.4g} | {m['hv_s'] * 1e3:.4g} | "
                         f"{m['one_node_s']:.4g} | {m['speedup']:.4g} | {m['best_shards']:.4g} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(scaling_table())
