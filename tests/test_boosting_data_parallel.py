"""LambdaMART with our Delta-AUC / Delta-MAUC lambdas on LightGBM's socket-based data-parallel
learner (two local processes, queries split between them) against one process, on MQ2008 Fold 1
(rankbench.boosting.data_parallel; skipped without the data)."""

from __future__ import annotations

import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")

from rankbench.boosting.data_parallel import (  # noqa: E402
    global_codes,
    lambdamart_data_parallel,
    lambdamart_one_process,
    rank_forced_bins,
)


def test_forced_bins_are_shifted_to_the_features_a_process_bins():
    bounds = [{"feature": j, "bin_upper_bound": [float(j)]} for j in range(5)]
    assert rank_forced_bins(bounds, 0, 2) == bounds
    # 5 features on 2 processes: process 1 bins features 3 and 4, read as its entries 0 and 1
    assert [b["bin_upper_bound"] for b in rank_forced_bins(bounds, 1, 2)] == [[3.0], [4.0], [2.0], [3.0], [4.0]]
    codes, cuts = global_codes(np.arange(100.0).reshape(50, 2), levels=5)
    assert codes(np.array([[0.0, 1.0], [99.0, 99.0]])).tolist() == [[0, 0], [3, 3]]  # 3 cuts, 4 codes
    assert cuts[0]["bin_upper_bound"] == [0.5, 1.5, 2.5]


@pytest.mark.realdata
@pytest.mark.cluster  # two LightGBM processes talking over sockets: make test-cluster
@pytest.mark.parametrize("metric,rounds", [("auc", 100), ("mauc", 60)])
def test_two_processes_build_the_one_process_model_on_mq2008(data_root, metric, rounds):
    """Bit-identical test scores (tolerance 0) for 100 rounds of Delta-AUC, 60 of Delta-MAUC (its
    models part at round 87 on this fold: see the module docstring). (~30 s)"""
    from rankbench.data import dataset_available, load_fold

    if not dataset_available("MQ2008"):
        pytest.skip("MQ2008 not present under RANKBENCH_DATA")
    tr, te = load_fold("mq2008", 1, "train"), load_fold("mq2008", 1, "test")
    codes, bins = global_codes(tr.X)
    X = codes(tr.X)
    one = lgb.Booster(model_str=lambdamart_one_process(X, tr.y, tr.query_ptr, metric, rounds, bins=bins))
    two = lgb.Booster(model_str=lambdamart_data_parallel(X, tr.y, tr.query_ptr, metric, 2, rounds, bins=bins))
    assert one.num_trees() == two.num_trees() == rounds
    s1, s2 = one.predict(codes(te.X), raw_score=True), two.predict(codes(te.X), raw_score=True)
    assert np.abs(s1).max() > 0.5  # a model, not a constant
    np.testing.assert_array_equal(s1, s2)


def test_a_data_parallel_process_that_dies_without_a_model_is_an_error_at_once():
    """``_next_result``: a process that ended without putting its model (killed, a crash in
    LightGBM's C++; here os._exit(3)) is reported within DEAD_GRACE_S, not after timeout_s (600 s
    by default); and the wait ends at its deadline with a clear error."""
    import multiprocessing as mp
    import os
    import time

    import pytest

    from rankbench.boosting import data_parallel as dp

    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=os._exit, args=(3,), daemon=True)]
    procs[0].start()
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="process 0 of 1 exited with status 3 without"):
        dp._next_result(queue, procs, {}, t0 + 600.0, 600.0)
    assert time.monotonic() - t0 < 60
    procs[0].join()
    queue.put((0, "model", None))  # a result already there is taken, dead process or not
    assert dp._next_result(queue, procs, {}, time.monotonic() + 600.0, 600.0) == (0, "model", None)
    with pytest.raises(RuntimeError, match="did not finish within timeout_s=0.3 s"):
        dp._next_result(ctx.Queue(), [], {}, time.monotonic() + 0.3, 0.3)
