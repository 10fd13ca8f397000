"""RankSVM oracle over query shards held by Ray actors, and a cost model of sharding.

f(w) = 1/2 ||w||^2 + C * sum_q L_q(X_q w) is a sum over queries, so the loss part of f, of its
gradient (X^T dL/dz), of a Hessian-vector product (X^T H_L X v) and of the Jacobi diagonal split
over any partition of the queries.  ``ShardedOracle`` starts one Ray actor per shard that builds
an ordinary in-process oracle (``rankbench.objective.make_oracle``) over its rows: either rows the
driver cuts from an in-memory (X, y, query_ptr) into contiguous shards (balanced by documents or
pairs, ``shard_queries``) and puts into the object store once, or -- ``ShardedOracle.from_dataset``
-- shards of a ``rankbench.data.sharded.ShardedDataset`` on a path every node sees, which each
actor maps from disk itself (the driver holds the manifest and d-sized vectors only).  Per call
only w or v (d floats) go out to each shard and d floats (or one number) come back; the driver
adds the shards' parts and the regularizer once: f = 1/2 ||w||^2 + C sum_s L_s,
grad = w + C sum_s g_s, Hv = v + C sum_s h_s, hess_diag = 1 + C sum_s D_s.  It has the oracle
interface the optimizers call (``fun`` before ``grad`` / ``hess_vec`` / ``hess_diag`` at the same
w, ``n_features``, ``n_docs``, ``n_pairs``, ``C``, ``loss``), so TRON, Newton-CG, L-BFGS and the
cutting plane run on it unchanged (``RankSVM(solver="tron_tree", n_shards=4)``,
``RankSVM(...).fit(ShardedDataset(path))``).  Ray is optional and imported only here, lazily.

**Placement.**  Actors are pinned to the cluster's alive nodes (``NodeAffinitySchedulingStrategy``),
the largest partition first onto the node with the least work per CPU, so shards spread over the
nodes in proportion to their CPUs.

**Faults, never a hang.**  Every call to the shards waits at most ``timeout_s`` (default
``CALL_TIMEOUT_S`` = 300 s, or the environment's ``RANKBENCH_SHARD_TIMEOUT_S``) per shard, in
slices of ``WAIT_SLICE_S`` so Python signal handlers (Ctrl-C, SIGALRM) run meanwhile; a shard
that does not answer ends the fit with ``ShardTimeout`` naming the shard, its node and the
call, within ``timeout_s`` + ``WAIT_SLICE_S`` (a new actor's first call -- the process starting
and loading its shards -- gets ``START_TIMEOUT_S`` = 600 s more).  A shard whose actor dies
(its process killed, its node lost) is restarted by the driver -- a new actor on another alive node when there is
one, which loads the partition again (from disk, or from the object store) -- and the
interrupted call is repeated there, after replaying ``fun`` at the current w when the call
needs that state: the optimizer sees the same numbers, so the fit ends with the same weights.
After ``max_restarts`` restarts of one shard the fit ends with ``ShardError`` naming it.

``sharding_model`` predicts the time of one Hessian-vector product on k shards (docs/scaling.md;
``python -m rankbench.distributed`` prints that document's table).
"""

from __future__ import annotations

import copy
import itertools
import math
import os
import time

import numpy as np
import scipy.sparse as sp

from rankbench.data.partition import shard_queries  # noqa: F401 (re-exported)
from rankbench.objective.base import check_C, check_problem

# optimizers that touch the oracle only through fun / grad / hess_vec / hess_diag (sgd_queries
# splits the oracle by query, sgd_pairs samples rows of X: neither runs on shards)
SHARDABLE_OPTIMIZERS = ("tron", "newton", "lbfgs", "cutting_plane")
BALANCES = ("docs", "pairs")
INLINE_BYTES = 100_000  # Ray inlines smaller arguments in the call; larger w / v are put once per call
CALL_TIMEOUT_S = 300.0  # default bound on one call to the shards (RANKBENCH_SHARD_TIMEOUT_S overrides)
START_TIMEOUT_S = 600.0  # added to the first call of a new actor: process start, loading its shards
WAIT_SLICE_S = 0.5  # longest uninterruptible wait: signal handlers run between slices
MAX_RESTARTS = 3  # restarts of one shard's actor within one fit before the fit fails


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


class ShardError(RuntimeError):
    """A shard failed, died more than ``max_restarts`` times or did not answer; names shard and node."""


class ShardTimeout(ShardError, TimeoutError):
    """A shard did not answer a call within the timeout (a hung, stopped or overloaded actor)."""


def call_timeout_s() -> float:
    """The default bound on one call to the shards: RANKBENCH_SHARD_TIMEOUT_S, else ``CALL_TIMEOUT_S``."""
    raw = os.environ.get("RANKBENCH_SHARD_TIMEOUT_S")
    if raw is None:
        return CALL_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"RANKBENCH_SHARD_TIMEOUT_S must be a positive number of seconds, got {raw!r}")
    return value


class DiskPartition:
    """What an actor loads: shards ``shards`` of the sharded data set at ``path`` (picklable, small)."""

    def __init__(self, path: str, shards: list[int], verify: bool = True):
        self.path, self.shards, self.verify = str(path), list(shards), verify

    def load(self):
        from rankbench.data.sharded import ShardedDataset

        return ShardedDataset(self.path).load(self.shards, verify=self.verify)

    def __repr__(self) -> str:
        return f"shards {self.shards} of {self.path}"


class ShardWorker:
    """One query shard: an in-process oracle over its rows, answering loss parts (run as a Ray actor).

    ``source``: (X, y, query_ptr) or a ``DiskPartition`` read here.  Holds one oracle state per
    ``slot`` (a copy of the driver's oracle: TRON's ``cg_history`` probe), tagged with the
    ``epoch`` of the w it was last evaluated at; a call for another epoch returns None (stale:
    the driver replays ``loss`` at its w first -- after a restart, every slot is stale)."""

    def __init__(self, source, oracle: str, C: float, loss, rescaling, delta):
        from threadpoolctl import threadpool_limits

        from rankbench.objective import make_oracle
        from rankbench.objective.readiness import warm_up_kernels

        threadpool_limits(limits=1, user_api="blas")  # the vectors are short; no thread wake-ups
        self._threads_from_cpus()
        X, y, ptr = source.load() if isinstance(source, DiskPartition) else source
        warm_up_kernels((oracle,), sparse=sp.issparse(X))
        self._base = make_oracle(oracle, X, np.asarray(y), np.asarray(ptr), C=C, loss=loss,
                                 rescaling=rescaling, delta=delta)
        self._slots: dict[int, tuple[int, object]] = {}

    @staticmethod
    def _threads_from_cpus() -> None:
        """numba threads = the CPUs Ray gave this actor (at least 1): shards on one node share its cores."""
        import numba
        import ray

        cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 0)
        numba.set_num_threads(max(1, min(int(cpus), numba.config.NUMBA_NUM_THREADS)))

    def info(self) -> dict:
        """Documents, pairs, squared column norms, sparse?, max |x|, and where this actor runs."""
        import ray

        o = self._base
        X = o.X
        # dense column norms and max |x| from the oracle's check of X (one read)
        col_sq = (np.asarray(X.multiply(X).sum(axis=0)).ravel() if sp.issparse(X)
                  else o.col_sq_norms)
        return {"n_docs": o.n_docs, "n_pairs": o.n_pairs(), "col_sq": col_sq, "sparse": sp.issparse(X),
                "max_abs": o.max_abs_x, "node_id": ray.get_runtime_context().get_node_id(),
                "pid": os.getpid(), "rss": _rss_bytes()}

    def ping(self) -> int:
        return 0

    def memory(self) -> int:
        return _rss_bytes()

    def _at(self, slot: int, epoch: int):
        state = self._slots.get(slot)
        return state[1] if state is not None and state[0] == epoch else None

    def loss(self, slot: int, epoch: int, w: np.ndarray) -> float:
        o = self._slots[slot][1] if slot in self._slots else copy.copy(self._base)
        value = o.loss_at_scores(o.scores(w))
        self._slots[slot] = (epoch, o)
        return value

    def loss_grad(self, slot: int, epoch: int):
        o = self._at(slot, epoch)
        return None if o is None else o.loss_grad()

    def loss_hess_vec(self, slot: int, epoch: int, v: np.ndarray):
        o = self._at(slot, epoch)
        return None if o is None else o.loss_hess_vec(v)

    def loss_hess_diag(self, slot: int, epoch: int):
        o = self._at(slot, epoch)
        return None if o is None else o.loss_hess_diag()

    def margins(self, w: np.ndarray) -> tuple[int, int]:
        """(pairs, pairs with w.x_i - w.x_j >= 1) of this shard."""
        from rankbench.objective import margin_pairs

        return margin_pairs(self._base, w)

    def drop(self, slot: int) -> None:
        self._slots.pop(slot, None)


def _rss_bytes() -> int:
    """Resident memory of this process (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _last_line(exc: BaseException) -> str:
    """The last line of a Ray error's text: the remote exception's type and message."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return lines[-1] if lines else type(exc).__name__


def node_label(node: dict | None) -> str:
    """'node 1a2b3c4d (10.0.0.5, resources rb_w1)': how errors name a Ray node."""
    if not node:
        return "node unknown"
    custom = sorted(k for k in node.get("Resources", {})
                    if k not in ("CPU", "GPU", "memory", "object_store_memory")
                    and not k.startswith("node:") and not k.startswith("accelerator_type"))
    return (f"node {node['NodeID'][:8]} ({node.get('NodeManagerAddress', '?')}"
            + (f", resources {', '.join(custom)}" if custom else "") + ")")


def place_partitions(weights, capacities) -> list[int]:
    """Node index of each partition: the largest first, each onto the node whose work per unit of
    capacity (CPUs) is smallest after taking it (LPT), so nodes get work in proportion to capacity."""
    weights = np.asarray(weights, dtype=np.float64)
    cap = np.maximum(np.asarray(capacities, dtype=np.float64), 1e-9)
    load = np.zeros(cap.shape[0])
    out = [0] * weights.shape[0]
    for i in np.argsort(-weights, kind="stable"):
        j = int(np.argmin((load + weights[i]) / cap))
        out[int(i)] = j
        load[j] += weights[i]
    return out


class _ShardPool:
    """The actors of one ShardedOracle (shared by its copies): placement, calls, restarts."""

    def __init__(self, ray, sources: list, weights, oracle: str, C, loss, rescaling, delta,
                 num_cpus, timeout_s: float, max_restarts: int, start_timeout_s: float = START_TIMEOUT_S):
        self.ray = ray
        self.start_timeout_s = start_timeout_s
        self.starting: set[int] = set()  # shards whose actor has not answered yet
        self.sources = sources
        self.args = (oracle, C, loss, rescaling, delta)
        self.num_cpus = num_cpus
        self.timeout_s = timeout_s
        self.max_restarts = max_restarts
        self.restarts = [0] * len(sources)
        self.bytes_sent = 0
        self.bytes_received = 0
        self.nodes: dict[str, dict] = {}
        alive = self._alive_nodes()
        where = place_partitions(weights, [n["Resources"].get("CPU", 1.0) for n in alive])
        self.node_of = [alive[j]["NodeID"] for j in where]
        self.actors = [self._create(k, self.node_of[k]) for k in range(len(sources))]
        self.starting = set(range(len(sources)))

    def _alive_nodes(self) -> list[dict]:
        nodes = [n for n in self.ray.nodes() if n.get("Alive")]
        self.nodes.update({n["NodeID"]: n for n in nodes})
        with_cpu = [n for n in nodes if n["Resources"].get("CPU", 0) > 0]
        return with_cpu or nodes

    def _create(self, k: int, node_id: str):
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        # no CPU reserved unless asked: a pinned actor waiting for a CPU that a running job holds
        # (a Hydra launcher's task on a 1-CPU node) would never start
        options = {"scheduling_strategy": NodeAffinitySchedulingStrategy(node_id, soft=False),
                   "max_restarts": 0, "max_task_retries": 0,
                   "num_cpus": 0 if self.num_cpus is None else self.num_cpus}
        return self.ray.remote(ShardWorker).options(**options).remote(self.sources[k], *self.args)

    def label(self, k: int) -> str:
        return f"shard {k} ({self.sources[k]!r}) on {node_label(self.nodes.get(self.node_of[k]))}" \
            if not isinstance(self.sources[k], self.ray.ObjectRef) else \
            f"shard {k} on {node_label(self.nodes.get(self.node_of[k]))}"

    def _restart(self, k: int, exc: BaseException, method: str) -> None:
        """A new actor for shard ``k`` on an alive node (another than the one it died on if any)."""
        self.restarts[k] += 1
        lost = self.label(k)
        if self.restarts[k] > self.max_restarts:
            raise ShardError(f"{lost}: its actor died {self.restarts[k]} times (max_restarts="
                             f"{self.max_restarts}), last during {method}: {exc}") from exc
        try:
            self.ray.kill(self.actors[k])
        except Exception:  # noqa: BLE001 - already gone
            pass
        alive = self._alive_nodes()
        others = [n for n in alive if n["NodeID"] != self.node_of[k]] or alive
        if not others:
            raise ShardError(f"{lost}: its actor died during {method} and no node is alive to "
                             f"restart it: {exc}") from exc
        count = {n["NodeID"]: 0.0 for n in others}
        for node in self.node_of:
            if node in count:
                count[node] += 1.0
        node = min(others, key=lambda n: count[n["NodeID"]] / max(n["Resources"].get("CPU", 1.0), 1e-9))
        self.node_of[k] = node["NodeID"]
        self.actors[k] = self._create(k, node["NodeID"])
        self.starting.add(k)

    def run(self, method: str, args_of, prime=None, shards=None) -> list:
        """``method(*args_of(k))`` on every shard (or ``shards``), each within ``timeout_s``; a stale
        answer (None) is retried after ``prime`` = (method, args_of) replays the state; a dead actor
        is restarted and the call repeated.  Returns the answers in shard order."""
        ray = self.ray
        from ray.exceptions import (
            ActorUnschedulableError,
            GetTimeoutError,
            NodeDiedError,
            RayActorError,
            RayTaskError,
            WorkerCrashedError,
        )

        todo = list(range(len(self.actors)) if shards is None else shards)
        refs: dict = {}
        deadline: dict[int, float] = {}
        out: dict[int, object] = {}

        def submit(k: int, replay: bool) -> None:
            if replay and prime is not None:
                getattr(self.actors[k], prime[0]).remote(*prime[1](k))  # ordered before the call
            refs[k] = getattr(self.actors[k], method).remote(*args_of(k))
            deadline[k] = time.monotonic() + self.timeout_s + (
                self.start_timeout_s if k in self.starting else 0.0)

        for k in todo:
            submit(k, False)
        while refs:
            pending = {r: k for k, r in refs.items()}
            try:
                ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=WAIT_SLICE_S)
            except SystemError as exc:
                # Ray runs Python signal handlers inside wait; an exception one raises (SIGALRM's
                # timeout, say) comes out wrapped in a SystemError: let the caller see it
                if exc.__cause__ is not None:
                    raise exc.__cause__ from None
                raise
            for r in ready:
                k = pending[r]
                del refs[k]
                try:
                    value = ray.get(r, timeout=self.timeout_s)
                except (RayActorError, ActorUnschedulableError, WorkerCrashedError, NodeDiedError) as exc:
                    if getattr(exc, "actor_init_failed", False):  # e.g. a corrupt shard file
                        raise ShardError(f"{self.label(k)} could not start: {_last_line(exc)}") from None
                    self._restart(k, exc, method)
                    submit(k, True)
                    continue
                except GetTimeoutError:  # ready, so not expected: a result too large to fetch in time
                    raise ShardTimeout(f"{self.label(k)} did not return the result of {method} within "
                                       f"{self.timeout_s:g} s") from None
                except RayTaskError as exc:
                    raise ShardError(f"{self.label(k)} failed in {method}: {_last_line(exc)}") from exc
                if value is None and prime is not None:
                    submit(k, True)  # the actor's state is not at this w (it was restarted)
                    continue
                out[k] = value
                self.starting.discard(k)
            now = time.monotonic()
            late = sorted(k for k in refs if now > deadline[k])
            if late:
                names = "; ".join(self.label(k) + (" (starting)" if k in self.starting else "")
                                  for k in late)
                extra = f" (+ {self.start_timeout_s:g} s to start)" if set(late) & self.starting else ""
                raise ShardTimeout(f"{names} did not answer {method} within {self.timeout_s:g} s{extra} "
                                   "(a hung, stopped or overloaded actor: the fit stops; raise "
                                   "timeout_s or RANKBENCH_SHARD_TIMEOUT_S if a call legitimately "
                                   "takes longer)")
        return [out[k] for k in todo]

    def close(self) -> None:
        for a in self.actors:
            try:
                self.ray.kill(a)
            except Exception:  # noqa: BLE001 - a dead actor or a disconnected driver
                pass
        self.actors, self.sources = [], []


class ShardedOracle:
    """The pair oracle of (X, y, query_ptr) summed over ``n_shards`` Ray actors (module docstring).

    ``oracle``: the in-process oracle each shard runs (tree, counting, ...); ``balance``: "docs"
    (default: the tree / counting cost is O(nd + n log n)) or "pairs" (the explicit-pairs oracle);
    ``address``: when Ray is not initialized yet, the cluster to join ("auto": the running one,
    "host:6379", "ray://host:10001"; None: RAY_ADDRESS when set, else a new local cluster, never
    a running one), left again by ``close`` (``ray.shutdown``); ``num_cpus``: CPUs each actor
    reserves and runs numba threads on (None = none reserved, so more shards than CPUs still
    start, and one thread each); ``timeout_s``: bound on each call (None =
    ``call_timeout_s()``); ``max_restarts``: restarts of one shard's actor before the fit fails.
    Call ``close()`` (or use ``with``) to stop the actors."""

    def __init__(self, X, y, query_ptr=None, C: float = 1.0, loss="squared_hinge", oracle: str = "tree",
                 n_shards: int = 2, balance: str = "docs", address: str | None = None,
                 rescaling: str | None = None, delta=None, num_cpus: float | None = None,
                 timeout_s: float | None = None, max_restarts: int = MAX_RESTARTS):
        X, y, query_ptr = check_problem(X, y, query_ptr)
        self._check(C, oracle, rescaling, delta, balance, loss)
        weights = pairs_per_query(y, query_ptr) if balance == "pairs" else None
        self.query_bounds = shard_queries(query_ptr, n_shards, weights)
        self.doc_bounds = query_ptr[self.query_bounds]
        ray = self._connect(address)
        try:
            sources, sizes = [], []
            for k in range(len(self.query_bounds) - 1):
                qa, qb = int(self.query_bounds[k]), int(self.query_bounds[k + 1])
                a, b = int(query_ptr[qa]), int(query_ptr[qb])
                # once, not per call; kept, so a restarted actor reads it again
                sources.append(ray.put((X[a:b], y[a:b], query_ptr[qa:qb + 1] - a)))
                sizes.append(b - a if weights is None else int(weights[qa:qb].sum()))
            self._start(sources, sizes, oracle, rescaling, delta, num_cpus, timeout_s, max_restarts)
        except BaseException:
            self.close()
            raise

    @classmethod
    def from_dataset(cls, dataset, C: float = 1.0, loss="squared_hinge", oracle: str = "tree",
                     n_shards: int | None = None, balance: str = "docs", address: str | None = None,
                     rescaling: str | None = None, delta=None, num_cpus: float | None = None,
                     timeout_s: float | None = None, max_restarts: int = MAX_RESTARTS,
                     verify: bool = True) -> ShardedOracle:
        """The oracle of a ``ShardedDataset`` (or its path): ``n_shards`` actors (None = one per shard on
        disk) each load a contiguous group of the data set's shards from its path -- which every
        node must see -- after checking their sha256 (``verify``); the driver reads the manifest
        only.  A missing or corrupt shard file fails here, before any fit, naming the file."""
        from rankbench.data.sharded import ShardedDataset

        ds = dataset if isinstance(dataset, ShardedDataset) else ShardedDataset(dataset)
        self = object.__new__(cls)
        self._check(C, oracle, rescaling, delta, balance, loss)
        groups = ds.partition(n_shards, balance)
        ds.check_files()  # every file present with its size, before any actor starts
        docs, pairs = ds.shard_docs(), ds.shard_pairs()
        self.query_bounds = None
        self.doc_bounds = np.concatenate([[0], np.cumsum([docs[g].sum() for g in groups])])
        self.dataset = ds
        self._connect(address)
        try:
            sizes = [int((pairs if balance == "pairs" else docs)[g].sum()) for g in groups]
            self._start([DiskPartition(str(ds.path), g, verify) for g in groups], sizes, oracle,
                        rescaling, delta, num_cpus, timeout_s, max_restarts)
        except BaseException:
            self.close()
            raise
        if self.n_features != ds.n_features or self.n_docs != ds.n_docs or self._n_pairs != ds.n_pairs():
            self.close()
            raise ValueError(f"{ds.path}: the shards hold {self.n_docs} documents / {self._n_pairs} "
                             f"pairs, the manifest {ds.n_docs} / {ds.n_pairs()}")
        return self

    def _check(self, C, oracle, rescaling, delta, balance, loss) -> None:
        from rankbench.objective import ORACLES, get_loss

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
        self._loss_arg = loss
        self._pool = None
        self._own_ray = False

    def _connect(self, address):
        ray = _import_ray()
        self._ray = ray
        self._own_ray = not ray.is_initialized()
        if self._own_ray:
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # nothing needs the network
            if address is None:
                address = os.environ.get("RAY_ADDRESS") or "local"
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        return ray

    def _start(self, sources, sizes, oracle, rescaling, delta, num_cpus, timeout_s, max_restarts) -> None:
        if isinstance(max_restarts, bool) or not isinstance(max_restarts, int) or max_restarts < 0:
            raise ValueError(f"max_restarts must be an integer >= 0, got {max_restarts!r}")
        timeout_s = call_timeout_s() if timeout_s is None else float(timeout_s)
        if not (math.isfinite(timeout_s) and timeout_s > 0):
            raise ValueError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}")
        self._pool = _ShardPool(self._ray, sources, sizes, oracle, self.C, self._loss_arg, rescaling,
                                delta, num_cpus, timeout_s, max_restarts)
        infos = self._pool.run("info", lambda k: ())
        self.n_shards = len(infos)
        self.n_features = int(infos[0]["col_sq"].shape[0])
        self.n_docs = int(sum(i["n_docs"] for i in infos))
        self._n_pairs = int(sum(i["n_pairs"] for i in infos))
        self.max_abs_x = max(i["max_abs"] for i in infos)
        self.actor_info = [{"node_id": i["node_id"], "pid": i["pid"], "rss": i["rss"]} for i in infos]
        from rankbench.optim.accuracy import columns_apart

        # what want_preconditioner's "auto" decides from X, from the shards' column norms
        self.auto_precondition = bool(infos[0]["sparse"]) or columns_apart(sum(i["col_sq"] for i in infos))
        self._slot = 0
        self._slots = itertools.count(1)
        self._epoch = 0
        self._epochs = itertools.count(1)
        self._w = None

    # the oracle interface -------------------------------------------------------------
    def n_pairs(self) -> int:
        """|P| summed over the shards (no pair crosses a shard)."""
        return self._n_pairs

    def fun(self, w: np.ndarray) -> float:
        """f(w) = 1/2 ||w||^2 + C sum_s L_s(X_s w); the shards cache what grad and hess_vec reuse."""
        w = self._vector(w, "w").copy()
        self._epoch = next(self._epochs)
        self._w = None
        arg = self._arg(w)
        parts = self._call("loss", lambda k: (self._slot, self._epoch, arg), w.nbytes, prime=False)
        self._w = (w, arg)
        return 0.5 * float(w @ w) + self.C * float(sum(parts))

    def grad(self, w: np.ndarray) -> np.ndarray:
        """w + C sum_s X_s^T dL_s/dz at the w of the last ``fun`` call."""
        self._need_fun("grad(w)")
        return self._vector(w, "w") + self.C * self._sum(
            self._call("loss_grad", lambda k: (self._slot, self._epoch)))

    def hess_vec(self, v: np.ndarray) -> np.ndarray:
        """v + C sum_s X_s^T H_s X_s v at the last ``fun`` point."""
        self._need_fun("hess_vec(v)")
        v = self._vector(v, "v")
        arg = self._arg(v)
        return v + self.C * self._sum(self._call("loss_hess_vec", lambda k: (self._slot, self._epoch, arg),
                                                 v.nbytes))

    def hess_diag(self) -> np.ndarray:
        """1 + C sum_s D_s, D_s the loss part of shard s's Jacobi diagonal (PairOracle.hess_diag)."""
        self._need_fun("hess_diag()")
        return 1.0 + self.C * self._sum(self._call("loss_hess_diag", lambda k: (self._slot, self._epoch)))

    def pairs_with_margin(self, w: np.ndarray) -> tuple[int, int]:
        """(|P|, pairs with w.x_i - w.x_j >= 1) summed over the shards (``objective.pairs_with_margin``)."""
        w = self._vector(w, "w")
        parts = self._pool.run("margins", lambda k: (w,))
        return int(sum(p[0] for p in parts)), int(sum(p[1] for p in parts))

    def ping_seconds(self, repeats: int = 20) -> float:
        """Best round-trip time of an empty call to every shard at once (the latency of one step)."""
        best = math.inf
        for _ in range(repeats):
            t = time.perf_counter()
            self._pool.run("ping", lambda k: ())
            best = min(best, time.perf_counter() - t)
        return best

    def actor_memory(self) -> list[int]:
        """Resident bytes of each shard's actor process now."""
        return self._pool.run("memory", lambda k: ())

    @property
    def bytes_sent(self) -> int:
        return self._pool.bytes_sent if self._pool is not None else 0

    @property
    def bytes_received(self) -> int:
        return self._pool.bytes_received if self._pool is not None else 0

    @property
    def restarts(self) -> list[int]:
        """Restarts of each shard's actor so far (a dead actor replaced, its call repeated)."""
        return list(self._pool.restarts)

    @property
    def actor_nodes(self) -> list[str]:
        """The Ray node id each shard's actor runs on now."""
        return list(self._pool.node_of)

    # plumbing -------------------------------------------------------------------------
    def _vector(self, v, name: str) -> np.ndarray:
        v = np.asarray(v, dtype=np.float64)
        if v.shape != (self.n_features,):
            raise ValueError(f"{name} must be 1-D with one entry per feature ({self.n_features}), "
                             f"got shape {v.shape}")
        return v

    def _arg(self, vec: np.ndarray):
        # one object for every shard: a large vector is stored once, not once per shard
        return self._ray.put(vec) if vec.nbytes >= INLINE_BYTES else vec

    def _need_fun(self, what: str) -> None:
        if self._w is None:
            raise RuntimeError(f"call fun(w) before {what}")

    def _call(self, method: str, args_of, sent_bytes: int = 0, prime: bool = True) -> list:
        if self._pool is None or not self._pool.actors:
            raise RuntimeError("this ShardedOracle is closed")
        replay = None
        if prime and self._w is not None:
            w_arg = self._w[1]
            replay = ("loss", lambda k: (self._slot, self._epoch, w_arg))
        pool = self._pool
        out = pool.run(method, args_of, replay)
        pool.bytes_sent += sent_bytes * len(out)
        pool.bytes_received += sum(np.asarray(p).nbytes for p in out)
        return out

    @staticmethod
    def _sum(parts: list) -> np.ndarray:
        total = np.array(parts[0], dtype=np.float64)
        for p in parts[1:]:
            total += p
        return total

    def __copy__(self) -> ShardedOracle:
        """Same actors and data, own cached state at w (a new slot in every shard, filled by its
        first ``fun``): what TRON's ``cg_history`` probe does with an in-process oracle."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._slot = next(self._slots)
        new._own_ray = False
        new._w = None
        return new

    def close(self) -> None:
        """Stop the actors, release the shards' data, and shut Ray down if this oracle started it."""
        if getattr(self, "_pool", None) is not None:
            self._pool.close()
        if getattr(self, "_own_ray", False) and self._ray.is_initialized():
            self._ray.shutdown()
        self._own_ray = False

    def __enter__(self) -> ShardedOracle:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def fit_sharded(estimator, dataset, n_shards: int | None = None):
    """Fit ``estimator`` (a RankSVM) on a ``ShardedDataset``: its actors load the shards, the driver
    runs the optimizer on d-sized vectors (memory O(d + n_shards)); sets the fitted attributes
    a fit on arrays sets (``extra_["n_shards"]``, ``extra_["sharded_dataset"]``)."""
    from threadpoolctl import threadpool_limits

    from rankbench.objective.readiness import check_representable

    optimizer, oracle_cls, _ = estimator._resolve()
    if optimizer.name not in SHARDABLE_OPTIMIZERS:
        raise ValueError(f"a sharded data set needs an optimizer that runs on query shards "
                         f"({', '.join(SHARDABLE_OPTIMIZERS)}), not {optimizer.name!r}")
    if estimator.kernel is not None:
        raise ValueError("kernel maps need X on the driver: fit a sharded data set without kernel")
    t0 = time.perf_counter()
    oracle = ShardedOracle.from_dataset(dataset, C=estimator.C, loss=estimator.loss,
                                        oracle=oracle_cls.name, n_shards=n_shards,
                                        address=estimator.ray_address, rescaling=estimator.rescaling,
                                        delta=estimator.delta)
    try:
        check_representable(oracle)
        kwargs = estimator._optimizer_kwargs(optimizer)
        with threadpool_limits(limits=1, user_api="blas"):
            res = optimizer.function(oracle, **kwargs)
        estimator.fit_time_ = time.perf_counter() - t0
        estimator.compile_time_ = 0.0  # the actors compile (or load) their kernels while loading
        estimator.kernel_map_ = None
        estimator._finish(res, oracle, None, optimizer.name)
        estimator.extra_["n_shards"] = int(oracle.n_shards)
        estimator.extra_["sharded_dataset"] = str(oracle.dataset.path)
        estimator.extra_["shard_restarts"] = int(sum(oracle.restarts))
    finally:
        oracle.close()
    return estimator


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
# Constants measured on the team's 2-core machine by `python -m rankbench.bench.shards --scale`
# (docs/scaling.md, under other load): one in-process tree Hv on 3.7M x 136 read X twice at
# 7.2 GB/s; the round trip of one call to one shard actor was 0.6 ms (loopback, not a network)
MEASURED_MEM_BANDWIDTH = 7.2e9
MEASURED_RTT = 6e-4


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
    print()
    print(scaling_table(rtt=MEASURED_RTT, mem_bandwidth=MEASURED_MEM_BANDWIDTH))
