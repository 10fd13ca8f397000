"""Query shards on a real multi-node Ray cluster on this machine (``make test-cluster``; marker
``cluster``, not part of ``make test``): a head and two worker nodes, each a separate ``ray start``
process with its own raylet and a custom resource naming it (rankbench.local_cluster), started
once for the module and killed with every process it started afterwards.

On it: a sharded data set's oracle (actors loading their own shards from disk) equals the
in-process oracle, its actors run on every node, TRON returns the same weights; a killed actor
and a lost node (its raylet killed) mid-fit give the same weights (the shard restarted on a live
node, reading its partition again) or, without restarts left, an error naming shard and node
within a bounded time; ``rankbench dataset=sharded`` runs from Hydra; the quick profile through
the ``ray_cluster`` and ``submitit_local`` launchers stores the same records as the basic
launcher; and an MSLR-WEB30K-shaped 3.7-million-document set sharded into 8 parts is fitted with
a driver whose memory stays under 5 % of the data's bytes.  Times on this 2-core machine (shared)
are noted on each test.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.cluster
ray = pytest.importorskip("ray", reason="ray not installed (the cluster extra: pip install 'ray[default]')")

from rankbench.data import make_letor_like, write_letor  # noqa: E402
from rankbench.data.sharded import ShardedDataset, shard_letor  # noqa: E402
from rankbench.distributed import ShardedOracle, ShardError  # noqa: E402
from rankbench.estimators.ranksvm import RankSVM  # noqa: E402
from rankbench.local_cluster import LocalRayCluster, ray_executable  # noqa: E402
from rankbench.objective import make_oracle  # noqa: E402
from rankbench.optim.tron import tron  # noqa: E402
from rankbench.store import ResultStore  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
NODES = {"rb_head", "rb_w1", "rb_w2"}


def _child_env(**extra) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "src"), env.get("PYTHONPATH")) if p)
    env.update(RAY_USAGE_STATS_ENABLED="0", **extra)
    return env


@pytest.fixture(scope="module")
def cluster():
    """Head + 2 workers, 1 CPU each (about 30 s to start here), quick node-loss detection."""
    if ray_executable() is None:
        pytest.skip("the ray command is not installed next to this python")
    if ray.is_initialized():
        ray.shutdown()
    c = LocalRayCluster(n_workers=2, cpus=1, env=_child_env(), fast_failure_detection=True)
    c.start()
    try:
        ray.init(address=c.address, include_dashboard=False, log_to_driver=False, configure_logging=False)
        deadline = time.monotonic() + 60
        while sum(bool(n["Alive"]) for n in ray.nodes()) < 3:
            assert time.monotonic() < deadline, "the worker nodes did not join"
            time.sleep(0.5)
        yield c
    finally:
        ray.shutdown()
        folder = str(c.folder)
        c.stop()
        import psutil

        left = [p.pid for p in psutil.process_iter(["cmdline"])
                if any(folder in a for a in (p.info["cmdline"] or []))]
        assert left == [], f"processes of the cluster left running: {left}"


def _node_names() -> dict[str, str]:
    return {n["NodeID"]: next(k for k in n["Resources"] if k.startswith("rb_")) for n in ray.nodes()
            if n["Alive"]}


@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    """A LETOR file of 60 queries and its 6 shards on disk (dense) and 3 (CSR)."""
    root = tmp_path_factory.mktemp("sharded")
    data = make_letor_like(n_queries=60, docs_per_query=14, n_features=6, seed=21)
    data.X[:, 2] *= 1e3  # columns far apart: "auto" preconditions, decided from the shards' norms
    write_letor(data, root / "train.txt")
    shard_letor(root / "train.txt", root / "dense", 6)
    shard_letor(root / "train.txt", root / "csr", 3, sparse=True)
    return root, ShardedDataset(root / "dense"), ShardedDataset(root / "csr")


def test_oracle_on_three_nodes_equals_in_process(cluster, sharded):
    """f, gradient, Hv and Jacobi diagonal to 1e-12; 6 actors, 2 on each node. (~20 s)"""
    _, dense, csr = sharded
    names = _node_names()
    for ds, oracle in ((dense, "tree"), (csr, "counting")):
        data = ds.to_ranking_data()
        ref = make_oracle(oracle, data.X, data.y, data.query_ptr, C=0.05)
        rng = np.random.default_rng(3)
        with ShardedOracle.from_dataset(ds, C=0.05, oracle=oracle) as sh:
            where = [names[n] for n in sh.actor_nodes]
            assert set(where) == NODES  # placed on every node ...
            if ds is dense:
                assert sorted(where) == sorted(list(NODES) * 2)  # ... in proportion to their CPUs
            # and running there: each actor reports the node it runs on
            assert [i["node_id"] for i in sh.actor_info] == sh.actor_nodes
            for _ in range(3):
                w, v = rng.standard_normal(6) * 1e-3, rng.standard_normal(6)
                assert math.isclose(sh.fun(w), ref.fun(w), rel_tol=1e-12)
                for a, b in ((sh.grad(w), ref.grad(w)), (sh.hess_vec(v), ref.hess_vec(v)),
                             (sh.hess_diag(), ref.hess_diag())):
                    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * np.abs(b).max())


def test_tron_on_three_nodes_equals_in_process(cluster, sharded):
    """TRON's weights to 1e-10, same iterations; RankSVM.fit(ShardedDataset) too. (~25 s)"""
    _, dense, _ = sharded
    data = dense.to_ranking_data()
    ref = tron(make_oracle("tree", data.X, data.y, data.query_ptr, C=0.05), tol=1e-10)
    with ShardedOracle.from_dataset(dense, C=0.05, n_shards=3) as sh:
        assert set(_node_names()[n] for n in sh.actor_nodes) == NODES
        res = tron(sh, tol=1e-10)
    # the shards sum f, g and Hv in another order: CG may stop one step apart at its tolerance
    assert res.converged and res.n_iter == ref.n_iter and abs(res.n_cg_iter - ref.n_cg_iter) <= 1
    np.testing.assert_allclose(res.w, ref.w, rtol=1e-10, atol=1e-10 * np.abs(ref.w).max())
    m = RankSVM(C=0.05, solver="tron_tree", tol=1e-10).fit(dense)
    np.testing.assert_allclose(m.coef_, ref.w, rtol=1e-10, atol=1e-10 * np.abs(ref.w).max())


def _kill_at_call(sh, call: int, kill) -> list:
    """Run ``kill()`` just before the oracle's ``call``-th call to its shards; returns what it gave."""
    pool, done, seen = sh._pool, [], {"n": 0}
    run = pool.run

    def counted(*args, **kwargs):
        seen["n"] += 1
        if seen["n"] == call:
            done.append(kill())
        return run(*args, **kwargs)

    pool.run = counted
    return done


def test_killed_actor_mid_fit_restarts_with_the_same_weights(cluster, sharded):
    """SIGKILL one shard's actor process in the middle of TRON: the shard is restarted on another
    node, reads its shards again and the interrupted call is repeated. (~30 s)"""
    _, dense, _ = sharded
    data = dense.to_ranking_data()
    ref = tron(make_oracle("tree", data.X, data.y, data.query_ptr, C=0.05), tol=1e-10)
    with ShardedOracle.from_dataset(dense, C=0.05, n_shards=3) as sh:
        victim = sh.actor_info[1]
        killed = _kill_at_call(sh, 7, lambda: os.kill(victim["pid"], signal.SIGKILL) or victim["pid"])
        res = tron(sh, tol=1e-10)
        assert killed == [victim["pid"]] and sh.restarts == [0, 1, 0]
        assert sh.actor_nodes[1] != victim["node_id"]  # moved to another node
        assert sh.actor_memory()[1] > 0  # a live actor answers for shard 1 again
    np.testing.assert_allclose(res.w, ref.w, rtol=1e-10, atol=1e-10 * np.abs(ref.w).max())
    assert res.n_iter == ref.n_iter and res.f == pytest.approx(ref.f, rel=1e-12)


def test_rankbench_dataset_sharded_from_hydra(cluster, sharded, tmp_path):
    """`rankbench dataset=sharded dataset.path=...` with RAY_ADDRESS: a stored record whose objective
    is the in-process fit's. (~40 s)"""
    root, dense, _ = sharded
    data = dense.to_ranking_data()
    ref = RankSVM(C=0.05, solver="tron_tree", tol=1e-10).fit(data.X, data.y, data.qid)
    store = tmp_path / "store"
    cmd = [sys.executable, "-m", "rankbench", f"dataset.path={root / 'dense'}", "dataset=sharded",
           f"dataset.data_params.test={root / 'train.txt'}", "solver=tron_tree", "solver.C=0.05",
           "solver.tol=1e-10", "protocol=fixed", f"store={store}", "progress=false"]
    out = subprocess.run(cmd, cwd=tmp_path, env=_child_env(RAY_ADDRESS=cluster.address),
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    (rec,) = ResultStore(store).records()
    assert rec["status"] == "ok" and rec["dataset"] == "sharded"
    assert rec["train"]["objective"] == pytest.approx(ref.objective_, rel=1e-10)
    assert rec["extra"]["n_shards"] == 6 and rec["extra"]["data"]["train"]["n_docs"] == data.n_docs
    assert rec["metrics"]["test"]["ndcg@10"] > 0


@pytest.mark.parametrize("launcher", ["ray_cluster", "submitit_local"])
def test_quick_reproduce_through_a_cluster_launcher_stores_the_basic_records(cluster, tmp_path, launcher):
    """`make reproduce-quick LAUNCHER=ray_cluster` (the jobs as Ray tasks on the 3-node cluster) and
    LAUNCHER=submitit_local (standing in for Slurm) store the records of the basic launcher: same
    runs, same numbers.  Two artefacts of the quick profile (16 runs) to stay in time. (~3 min each)"""
    if launcher == "submitit_local":
        pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    else:
        pytest.importorskip("hydra_plugins.hydra_ray_launcher")
    only = ["chapelle2010/table4", "sculley2009/table1"]
    stores = {}
    for name in ("basic", launcher):
        out = tmp_path / name
        cmd = [sys.executable, "-m", "rankbench.reproduce", "--quick", "--results", str(out),
               "--no-progress", "--data-root", str(tmp_path / "none"), "--launcher", name, "--only", *only]
        env = _child_env(RAY_ADDRESS=cluster.address)
        done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=1500)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
        stores[name] = {r["run_id"]: r for r in ResultStore(out / "store").records()}
    basic, other = stores["basic"], stores[launcher]
    assert set(basic) == set(other) and len(basic) == 12 + 7  # with the hinge optimum and the binary SVM
    for rid, r in basic.items():
        o = other[rid]
        assert o["status"] == r["status"] == "ok"
        assert set(o["metrics"]) == set(r["metrics"])
        for split, values in r["metrics"].items():
            assert o["metrics"][split] == pytest.approx(values, rel=1e-9, nan_ok=True)
        if r["train"]["objective"] is None:  # SPD reports none
            assert o["train"]["objective"] is None
        else:
            assert o["train"]["objective"] == pytest.approx(r["train"]["objective"], rel=1e-9)
    # the jobs ran in worker processes, not in the process that launched them
    assert {r["env"]["pid"] for r in other.values()}.isdisjoint({r["env"]["pid"] for r in basic.values()})


def test_mslr_shaped_3_7m_documents_driver_memory(cluster, tmp_path_factory):
    """3.7 million x 136 dense documents (4 GB) sharded into 8 parts under /tmp; TRON's first
    iterations with 8 actors over the 3 nodes: the driver's memory rises by at most 5 % of the
    data's bytes (it holds the manifest and d-sized vectors); the shards are deleted after.
    (~4 min: about 1 min to shard, the rest loading and the fit)"""
    from rankbench.bench.shards import mslr_like_blocks
    from rankbench.data.sharded import shard_blocks
    from rankbench.sysinfo import PeakMemory

    out = tmp_path_factory.mktemp("mslr", numbered=True) / "mslr8"
    try:
        blocks = mslr_like_blocks()
        assert 3.6e6 < blocks.n_docs < 3.9e6
        shard_blocks(blocks, out, 8, synthetic=True)
        ds = ShardedDataset(out)
        data_bytes = ds.data_bytes()
        assert ds.n_docs == blocks.n_docs and ds.n_features == 136 and data_bytes > 4e9
        with PeakMemory() as mem, pytest.warns(UserWarning, match="max_iter reached"):
            m = RankSVM(C=1e-3, solver="tron_tree", max_iter=2).fit(ds)
        over = (mem.peak_mb - mem.start_mb) * 2**20
        assert over <= 0.05 * data_bytes, f"driver rose by {over / 2**20:.0f} MiB"
        assert m.extra_["n_shards"] == 8 and np.all(np.isfinite(m.coef_)) and m.n_iter_ == 2
    finally:
        import shutil

        shutil.rmtree(out, ignore_errors=True)


def _lose_node(cluster, i: int) -> int:
    """Kill node i's raylet and wait (at most 30 s) until Ray declares the node dead: its actors may
    answer a little longer (they talk to the driver directly), until then nothing has failed."""
    name = cluster.resource(i)
    pid = cluster.kill_raylet(i)
    deadline = time.monotonic() + 30
    while name in _node_names().values():
        assert time.monotonic() < deadline, f"Ray did not declare node {name} dead"
        time.sleep(0.2)
    return pid


def test_lost_node_mid_fit(cluster, sharded):
    """Kill worker node 2's raylet in the middle of TRON: its shards restart on the live nodes and
    the weights are the same.  Then, with max_restarts=0, kill worker node 1's: the fit ends with an
    error naming the shard and the node, within the bound.  (Runs last: it takes nodes away; ~60 s)"""
    _, dense, _ = sharded
    data = dense.to_ranking_data()
    ref = tron(make_oracle("tree", data.X, data.y, data.query_ptr, C=0.05), tol=1e-10)
    names = _node_names()
    with ShardedOracle.from_dataset(dense, C=0.05, n_shards=3) as sh:
        on_w2 = [k for k, n in enumerate(sh.actor_nodes) if names[n] == "rb_w2"]
        assert on_w2
        _kill_at_call(sh, 5, lambda: _lose_node(cluster, 2))
        t = time.monotonic()
        res = tron(sh, tol=1e-10)
        assert time.monotonic() - t < 120
        assert all(sh.restarts[k] >= 1 for k in on_w2)
        assert "rb_w2" not in {names[n] for n in sh.actor_nodes}
    np.testing.assert_allclose(res.w, ref.w, rtol=1e-10, atol=1e-10 * np.abs(ref.w).max())

    with ShardedOracle.from_dataset(dense, C=0.05, n_shards=2, max_restarts=0, timeout_s=30) as sh:
        names = _node_names()
        on_w1 = [k for k, n in enumerate(sh.actor_nodes) if names.get(n) == "rb_w1"]
        assert on_w1
        _kill_at_call(sh, 3, lambda: _lose_node(cluster, 1))
        t = time.monotonic()
        with pytest.raises(ShardError, match=rf"shard {on_w1[0]} .* on node [0-9a-f]{{8}} \(.*rb_w1\).*"
                                             r"died 1 times \(max_restarts=0\)"):
            tron(sh, tol=1e-10)
        assert time.monotonic() - t < 30 + 5
