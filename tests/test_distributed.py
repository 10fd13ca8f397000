"""Query shards in Ray actors (rankbench.distributed) against the in-process oracles; the cost model."""

import copy
import math
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from rankbench.distributed import (
    ShardedOracle,
    matrix_bytes,
    pairs_per_query,
    scaling_table,
    shard_queries,
    sharding_model,
)
from rankbench.estimators.ranksvm import RankSVM
from rankbench.objective import count_pairs, make_oracle
from rankbench.optim.accuracy import want_preconditioner
from rankbench.optim.tron import tron

DOCS = Path(__file__).resolve().parents[1] / "docs" / "scaling.md"


@pytest.fixture(scope="module")
def ray_cluster():
    """A real local Ray cluster (2 CPUs) for the module, shut down after."""
    ray = pytest.importorskip("ray", reason="ray not installed (the cluster extra: pip install 'ray[default]')")
    # address="local": a new cluster, never one another process started with `ray start`
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    yield ray
    ray.shutdown()


def _problem(n_queries=30, d=6, seed=0, sparse=False):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 25, size=n_queries)
    n = int(sizes.sum())
    X = rng.standard_normal((n, d)) * np.array([1.0, 0.1, 3.0, 1.0, 0.5, 2.0])[:d]
    y = rng.integers(0, 4, size=n)
    ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    if sparse:
        X = sp.csr_matrix(np.where(rng.random(X.shape) < 0.4, X, 0.0))
    return X, y, ptr


# shard splitting (no Ray) -------------------------------------------------------------

def test_shards_cut_at_query_boundaries_and_balance_documents():
    ptr = np.array([0, 3, 5, 10, 11, 20])  # query sizes 3, 2, 5, 1, 9
    # targets 10 docs: the boundary after query 2 (cum 10) exactly
    assert shard_queries(ptr, 2).tolist() == [0, 3, 5]
    # targets 6.67 and 13.33: nearest boundaries have 5 and 11 documents before them
    assert shard_queries(ptr, 3).tolist() == [0, 2, 4, 5]
    assert shard_queries(ptr, 5).tolist() == [0, 1, 2, 3, 4, 5]  # one query each
    assert shard_queries(ptr, 1).tolist() == [0, 5]
    # one huge query first: every later shard still gets a query
    assert shard_queries(np.array([0, 100, 101, 102]), 3).tolist() == [0, 1, 2, 3]
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 50, size=200)
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    assert shard_queries(ptr, 200).tolist() == list(range(201))
    for k in (2, 3, 7, 20):
        b = shard_queries(ptr, k)
        assert b[0] == 0 and b[-1] == 200 and np.all(np.diff(b) >= 1) and len(b) == k + 1
        docs = np.diff(ptr[b])
        # each cut is at the boundary nearest its ideal position: at most half a query (< 50 docs)
        assert np.all(np.abs(np.cumsum(docs)[:-1] - ptr[-1] * np.arange(1, k) / k) <= 24.5)


def test_more_shards_than_queries_is_refused():
    with pytest.raises(ValueError, match="n_shards=6 exceeds the number of queries \\(5\\)"):
        shard_queries(np.array([0, 3, 5, 10, 11, 20]), 6)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="n_shards must be a positive integer"):
            shard_queries(np.array([0, 3]), bad)


def test_pairs_per_query_matches_count_pairs():
    _, y, ptr = _problem(n_queries=40)
    per = pairs_per_query(y, ptr)
    for q in range(40):
        assert per[q] == count_pairs(y[ptr[q]:ptr[q + 1]], None)
    # balancing by pairs cuts the pair counts, not the document counts, near the middle
    b = shard_queries(ptr, 2, per)
    cum = np.cumsum(per)
    assert abs(cum[b[1] - 1] - cum[-1] / 2) <= per.max()


# the cost model -------------------------------------------------------------------------

def test_sharding_model_hand_worked():
    # 1e6 dense documents x 100 features = 8e8 bytes; 4 shards; 1e9 B/s network, 1 ms round
    # trip, 1e10 B/s memory: compute 2 * 8e8 / 4 / 1e10 = 0.04 s; network 1e-3 + 2 * 800 * 4 / 1e9
    # = 0.0010064 s; reduce 800 * 4 / 1e10 = 3.2e-7 s; one node 2 * 8e8 / 1e10 = 0.16 s
    m = sharding_model(1e6, 100, 4, bandwidth=1e9, rtt=1e-3, mem_bandwidth=1e10)
    assert m["x_bytes"] == 8e8 and m["x_bytes_per_shard"] == 2e8
    assert m["bytes_moved_per_shard"] == 1600 and m["bytes_moved"] == 6400
    assert math.isclose(m["compute_s"], 0.04) and math.isclose(m["comm_s"], 0.0010064)
    assert math.isclose(m["reduce_s"], 3.2e-7)
    assert math.isclose(m["hv_s"], 0.04 + 0.0010064 + 3.2e-7)
    assert math.isclose(m["one_node_s"], 0.16) and math.isclose(m["speedup"], 0.16 / m["hv_s"])
    # best k minimises 2 X / (k M) + 16 d k / B: k* = sqrt(2 * 8e8 * 1e9 / (1600 * 1e10)) = sqrt(1e5)
    assert math.isclose(m["best_shards"], 316.22776601683796)
    # CSR: 10 documents x 3 nnz x (8 + 4) bytes + 11 row offsets x 8
    assert matrix_bytes(10, 1000, 3) == 10 * 3 * 12 + 11 * 8
    with pytest.raises(ValueError):
        sharding_model(1e6, 100, 0)


def test_docs_scaling_table_is_generated():
    """Every predicted number in docs/scaling.md is scaling_table()'s output (not hand-typed)."""
    from rankbench.distributed import MEASURED_MEM_BANDWIDTH, MEASURED_RTT

    text = DOCS.read_text()
    assert scaling_table() in text
    # and the table with the constants measured on this machine (bench.shards --scale)
    assert scaling_table(rtt=MEASURED_RTT, mem_bandwidth=MEASURED_MEM_BANDWIDTH) in text
    # the document's reading of the table
    for k in (10, 100, 1000):
        dense = sharding_model(1e9, 136, k)
        assert dense["compute_s"] > 10 * dense["comm_s"]
    sparse = sharding_model(1e9, 47_236, 1000, nnz_per_doc=75)
    assert sparse["comm_s"] > sparse["compute_s"] and sparse["best_shards"] < 1000
    assert sparse["bytes_moved_per_shard"] == 755_776 and "755,776" in text


# against the in-process oracle on a real Ray cluster ------------------------------------

_OWN_CLUSTER = """
import sys
import numpy as np
import rankbench.distributed, rankbench.estimators.ranksvm
assert "ray" not in sys.modules, "ray imported before n_shards was used"
from rankbench.estimators.ranksvm import RankSVM
rng = np.random.default_rng(0)
X = rng.standard_normal((200, 4)); y = rng.integers(0, 3, 200); qid = np.repeat(np.arange(10), 20)
a = RankSVM(C=0.5, solver="tron_tree", tol=1e-10).fit(X, y, qid)
b = RankSVM(C=0.5, solver="tron_tree", tol=1e-10, n_shards=2).fit(X, y, qid)
import ray
assert not ray.is_initialized(), "the fit left the Ray cluster it started running"
assert abs(b.objective_ - a.objective_) <= 1e-10 * abs(a.objective_), (a.objective_, b.objective_)
print("ok")
"""


@pytest.mark.slow
def test_fit_starts_and_stops_its_own_cluster():
    """Without ray.init, RankSVM(n_shards=) starts a local cluster and shuts it down after the fit;
    nothing imports Ray before (a fresh interpreter, before this module's cluster starts)."""
    import os
    import subprocess
    import sys

    pytest.importorskip("ray", reason="ray not installed (the cluster extra: pip install 'ray[default]')")
    out = subprocess.run([sys.executable, "-c", _OWN_CLUSTER], capture_output=True, text=True,
                         timeout=300, env=dict(os.environ))
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


@pytest.mark.parametrize("oracle,sparse,n_shards", [("tree", False, 3), ("counting", True, 2)])
def test_sharded_oracle_equals_in_process(ray_cluster, oracle, sparse, n_shards):
    X, y, ptr = _problem(sparse=sparse)
    C = 0.7
    ref = make_oracle(oracle, X, y, ptr, C=C)
    rng = np.random.default_rng(1)
    with ShardedOracle(X, y, ptr, C=C, oracle=oracle, n_shards=n_shards) as sh:
        assert sh.n_shards == n_shards and sh.n_docs == ref.n_docs and sh.n_pairs() == ref.n_pairs()
        assert sh.n_features == X.shape[1] and sh.C == C
        assert want_preconditioner(sh, "auto") == want_preconditioner(ref, "auto") == sparse
        with pytest.raises(RuntimeError, match="call fun"):
            sh.grad(np.zeros(X.shape[1]))
        for _ in range(3):
            w = rng.standard_normal(X.shape[1])
            v = rng.standard_normal(X.shape[1])
            assert math.isclose(sh.fun(w), ref.fun(w), rel_tol=1e-12)
            for a, b in ((sh.grad(w), ref.grad(w)), (sh.hess_vec(v), ref.hess_vec(v)),
                         (sh.hess_diag(), ref.hess_diag())):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * np.abs(b).max())
        # a shallow copy keeps its own state at w (TRON's cg_history probe)
        w = rng.standard_normal(X.shape[1])
        sh.fun(w)
        probe = copy.copy(sh)
        probe.fun(3 * w)
        ref.fun(w)
        g1 = ref.grad(w)
        ref.fun(3 * w)
        g3 = ref.grad(3 * w)
        np.testing.assert_allclose(sh.grad(w), g1, rtol=1e-12)
        np.testing.assert_allclose(probe.grad(3 * w), g3, rtol=1e-12)
        # per call: d floats out and d floats back per shard
        sent, got = sh.bytes_sent, sh.bytes_received
        sh.hess_vec(v)
        assert sh.bytes_sent - sent == n_shards * 8 * X.shape[1]
        assert sh.bytes_received - got == n_shards * 8 * X.shape[1]
        with pytest.raises(ValueError, match="one entry per feature"):
            sh.fun(np.zeros(X.shape[1] + 1))
    with pytest.raises(RuntimeError, match="closed"):
        sh.fun(np.zeros(X.shape[1]))


def test_tron_on_shards_equals_in_process(ray_cluster):
    X, y, ptr = _problem(n_queries=60, seed=5)
    X[:, 1] *= 1e4  # column norms 1e3 apart and more: "auto" preconditions (want_preconditioner)
    C = 2.0
    inproc = make_oracle("tree", X, y, ptr, C=C)
    assert want_preconditioner(inproc, "auto")
    ref = tron(inproc, tol=1e-10)
    with ShardedOracle(X, y, ptr, C=C, oracle="tree", n_shards=3, balance="pairs") as sh:
        assert want_preconditioner(sh, "auto")  # decided from the shards' column norms
        res = tron(sh, tol=1e-10)
    assert res.converged and ref.converged
    assert math.isclose(res.f, ref.f, rel_tol=1e-10)
    np.testing.assert_allclose(res.w, ref.w, rtol=1e-10, atol=1e-10 * np.abs(ref.w).max())
    assert res.n_iter == ref.n_iter and res.n_cg_iter == ref.n_cg_iter


def test_ranksvm_n_shards_equals_in_process(ray_cluster):
    X, y, ptr = _problem(n_queries=50, seed=7, sparse=True)
    qid = np.repeat(np.arange(50), np.diff(ptr))
    a = RankSVM(C=0.3, solver="newton_counting", tol=1e-10).fit(X, y, qid)
    b = RankSVM(C=0.3, solver="newton_counting", tol=1e-10, n_shards=2).fit(X, y, qid)
    assert math.isclose(b.objective_, a.objective_, rel_tol=1e-10)
    np.testing.assert_allclose(b.coef_, a.coef_, rtol=1e-10, atol=1e-10 * np.abs(a.coef_).max())
    assert b.n_pairs_ == a.n_pairs_ and b.extra_["n_shards"] == 2 and b.extra_["oracle"] == "counting"
    with pytest.raises(ValueError, match="does not run on query shards"):
        RankSVM(solver="sgd_queries", n_shards=2).fit(X, y, qid)
    with pytest.raises(ValueError, match="n_shards must be a positive integer"):
        RankSVM(solver="tron_tree", n_shards=0).fit(X, y, qid)
    with pytest.raises(ValueError, match="exceeds the number of queries"):
        RankSVM(solver="tron_tree", n_shards=51).fit(X, y, qid)


@pytest.mark.realdata
def test_ohsumed_fold1_on_shards(ray_cluster, data_root):
    from rankbench.data import dataset_available, load_fold

    if not dataset_available("OHSUMED"):
        pytest.skip("OHSUMED not present under RANKBENCH_DATA")
    tr = load_fold("ohsumed", 1, "train")
    a = RankSVM(C=1e-4, solver="tron_tree", tol=1e-10).fit(tr.X, tr.y, tr.qid)
    b = RankSVM(C=1e-4, solver="tron_tree", tol=1e-10, n_shards=2).fit(tr.X, tr.y, tr.qid)
    assert math.isclose(b.objective_, a.objective_, rel_tol=1e-10)
    np.testing.assert_allclose(b.coef_, a.coef_, rtol=1e-10, atol=1e-10 * np.abs(a.coef_).max())


# a sharded data set on disk (rankbench.data.sharded), on the module's local cluster ---------

def _sharded(tmp_path, n_queries=40, n_shards=4, sparse=False, seed=11):
    from rankbench.data import make_letor_like, write_letor
    from rankbench.data.sharded import ShardedDataset, shard_letor

    data = make_letor_like(n_queries=n_queries, docs_per_query=12, n_features=5, seed=seed)
    write_letor(data, tmp_path / "train.txt")
    shard_letor(tmp_path / "train.txt", tmp_path / "shards", n_shards, sparse=sparse)
    ds = ShardedDataset(tmp_path / "shards")
    return ds, ds.to_ranking_data()


@pytest.mark.parametrize("oracle,sparse,n_shards", [("tree", False, None), ("counting", True, 2)])
def test_sharded_dataset_oracle_equals_in_process(ray_cluster, tmp_path, oracle, sparse, n_shards):
    """Actors that load their own shards from disk answer as the in-process oracle on the same
    documents; n_shards=2 groups the 4 shards on disk two by two."""
    ds, data = _sharded(tmp_path, sparse=sparse)
    C = 0.3
    ref = make_oracle(oracle, data.X, data.y, data.query_ptr, C=C)
    rng = np.random.default_rng(2)
    with ShardedOracle.from_dataset(ds, C=C, oracle=oracle, n_shards=n_shards) as sh:
        assert sh.n_shards == (4 if n_shards is None else 2)
        assert (sh.n_docs, sh.n_pairs(), sh.n_features) == (ref.n_docs, ref.n_pairs(), 5)
        assert want_preconditioner(sh, "auto") == want_preconditioner(ref, "auto")
        for _ in range(3):
            w, v = rng.standard_normal(5), rng.standard_normal(5)
            assert math.isclose(sh.fun(w), ref.fun(w), rel_tol=1e-12)
            for a, b in ((sh.grad(w), ref.grad(w)), (sh.hess_vec(v), ref.hess_vec(v)),
                         (sh.hess_diag(), ref.hess_diag())):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * np.abs(b).max())
        probe = copy.copy(sh)  # its own state at w, filled by its first fun
        with pytest.raises(RuntimeError, match="call fun"):
            probe.hess_vec(v)
        probe.fun(2 * w)
        ref.fun(2 * w)
        np.testing.assert_allclose(probe.grad(2 * w), ref.grad(2 * w), rtol=1e-12)
        assert sh.restarts == [0] * sh.n_shards


def test_ranksvm_fits_a_sharded_dataset(ray_cluster, tmp_path):
    ds, data = _sharded(tmp_path, n_queries=30, n_shards=3)
    a = RankSVM(C=0.2, solver="tron_tree", tol=1e-10).fit(data.X, data.y, data.qid)
    b = RankSVM(C=0.2, solver="tron_tree", tol=1e-10).fit(ds)
    assert math.isclose(b.objective_, a.objective_, rel_tol=1e-10)
    np.testing.assert_allclose(b.coef_, a.coef_, rtol=1e-10, atol=1e-10 * np.abs(a.coef_).max())
    assert (b.n_pairs_, b.n_features_in_, b.n_iter_) == (a.n_pairs_, a.n_features_in_, a.n_iter_)
    assert b.extra_["n_pairs_margin_ge_1"] == a.extra_["n_pairs_margin_ge_1"]
    assert b.extra_["n_shards"] == 3 and b.extra_["sharded_dataset"] == str(ds.path)
    np.testing.assert_allclose(b.decision_function(data.X), a.decision_function(data.X), rtol=1e-9)
    with pytest.raises(ValueError, match="takes no y"):
        RankSVM(solver="tron_tree").fit(ds, data.y)
    with pytest.raises(ValueError, match="runs on query shards"):
        RankSVM(solver="sgd_queries").fit(ds)


def test_corrupt_or_missing_shard_file_fails_before_the_fit(ray_cluster, tmp_path):
    from rankbench.data.sharded import ShardFileError
    from rankbench.distributed import ShardError

    ds, _ = _sharded(tmp_path, n_shards=3)
    y1 = ds.path / "shard-00001" / "y.npy"
    raw = bytearray(y1.read_bytes())
    raw[-1] ^= 0x01
    y1.write_bytes(bytes(raw))
    model = RankSVM(C=0.2, solver="tron_tree")
    with pytest.raises(ShardError, match=r"shard 1 .*could not start: .*shard-00001/y\.npy: shard 1 "
                                         r"file is corrupt"):
        model.fit(ds)
    assert not hasattr(model, "coef_")
    y1.unlink()
    with pytest.raises(ShardFileError, match=r"shard-00001/y\.npy: shard 1 file missing"):
        model.fit(ds)


def _stop(pid):
    import os
    import signal

    os.kill(pid, signal.SIGSTOP)
    return lambda: os.kill(pid, signal.SIGCONT)


def test_a_hung_shard_ends_the_call_within_its_timeout(ray_cluster, tmp_path, monkeypatch):
    """A shard that never answers (its actor process stopped) ends the call with an error naming
    the shard and its node within timeout_s + WAIT_SLICE_S, instead of hanging (issue 26)."""
    import time

    from rankbench.distributed import WAIT_SLICE_S, ShardTimeout, call_timeout_s

    ds, _ = _sharded(tmp_path, n_shards=3)
    with ShardedOracle.from_dataset(ds, C=0.2, timeout_s=2.0) as sh:
        sh.fun(np.zeros(5))
        resume = _stop(sh.actor_info[2]["pid"])
        try:
            t = time.monotonic()
            with pytest.raises(ShardTimeout, match=r"shard 2 \(shards \[2\] of .*\) on node [0-9a-f]{8} "
                                                   r"\(.*\) did not answer loss_hess_vec within 2 s"):
                sh.hess_vec(np.ones(5))
            assert time.monotonic() - t < 2.0 + WAIT_SLICE_S + 1.0
        finally:
            resume()
    monkeypatch.setenv("RANKBENCH_SHARD_TIMEOUT_S", "7.5")
    assert call_timeout_s() == 7.5
    monkeypatch.setenv("RANKBENCH_SHARD_TIMEOUT_S", "soon")
    with pytest.raises(ValueError, match="RANKBENCH_SHARD_TIMEOUT_S must be a positive number"):
        call_timeout_s()


def test_sigalrm_interrupts_a_wait_on_the_shards(ray_cluster, tmp_path):
    """A signal handler runs while the driver waits for the shards: SIGALRM's exception ends the call."""
    import signal
    import time

    class Alarm(Exception):
        pass

    def on_alarm(*_):
        raise Alarm

    ds, _ = _sharded(tmp_path, n_shards=2)
    with ShardedOracle.from_dataset(ds, C=0.2, timeout_s=300) as sh:
        sh.fun(np.zeros(5))
        resume = _stop(sh.actor_info[0]["pid"])
        old = signal.signal(signal.SIGALRM, on_alarm)
        try:
            t = time.monotonic()
            signal.alarm(1)
            with pytest.raises(Alarm):
                sh.hess_vec(np.ones(5))
            assert time.monotonic() - t < 3.0
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
            resume()
