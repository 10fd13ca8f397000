"""ResultStore: atomic appends, concurrent writers, corrupt files reported, flattening."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
from pathlib import Path

import numpy as np
import pytest

from rankbench.store import CorruptRecordError, ResultStore, flatten_record, to_jsonable


def make_record(i: int, experiment: str = "exp", status: str = "ok", **over) -> dict:
    """A minimal record with a deterministic fake run_id."""
    rec = {
        "run_id": f"{i:040x}",
        "status": status,
        "error": None if status == "ok" else "boom",
        "experiment": experiment,
        "dataset": "toy",
        "variant": None,
        "synthetic": True,
        "fold": 1 + i % 5,
        "solver": "toy_lsq",
        "params": {"C": 10.0 ** -(i % 3)},
        "seed": 0,
        "metrics": {"vali": {"ndcg@10": 0.1 * (i % 7)}, "test": {"ndcg@10": 0.5, "map": 0.25}},
        "train": {"wall_s": 0.01 * i, "n_iter": i},
        "env": {"git_commit": "abc", "machine": {"hostname": "h"}},
    }
    rec.update(over)
    return rec


def test_append_get_roundtrip_and_flatten(tmp_path):
    store = ResultStore(tmp_path / "store")
    rec = make_record(7, params={"C": np.float64(1e-4), "loss": "hinge"},
                      train={"wall_s": np.float32(0.5), "n_iter": np.int64(3),
                             "objective": float("nan")})
    path = store.append(rec)
    assert path == tmp_path / "store" / "exp" / f"{7:040x}.json"
    got = store.get(f"{7:040x}")
    assert got["params"] == {"C": 1e-4, "loss": "hinge"}
    assert got["train"] == {"wall_s": 0.5, "n_iter": 3, "objective": None}  # NaN -> null
    assert store.has(f"{7:040x}") and store.has(f"{7:040x}", ok_only=True)
    assert not store.has(f"{8:040x}")
    with pytest.raises(KeyError):
        store.get(f"{8:040x}")
    row = flatten_record(got)
    assert row["params.C"] == 1e-4 and row["test.ndcg@10"] == 0.5 and row["train.n_iter"] == 3
    assert row["params"] == json.dumps({"C": 1e-4, "loss": "hinge"}, sort_keys=True)
    # no temporary file left behind
    assert [p.name for p in (tmp_path / "store" / "exp").iterdir()] == [f"{7:040x}.json"]


def test_replace_failed_record_keeps_one_file(tmp_path):
    store = ResultStore(tmp_path)
    store.append(make_record(1, status="failed"))
    assert store.has(f"{1:040x}") and not store.has(f"{1:040x}", ok_only=True)
    store.append(make_record(1))
    assert len(list(store.files())) == 1
    assert store.get(f"{1:040x}")["status"] == "ok"


def test_filters_and_frame(tmp_path):
    store = ResultStore(tmp_path)
    for i in range(10):
        store.append(make_record(i, experiment="a" if i < 6 else "b",
                                 status="failed" if i == 3 else "ok"))
    assert len(store.records()) == 10
    assert len(store.records(experiment="a")) == 6
    assert len(store.records(status="failed")) == 1
    assert {r["fold"] for r in store.records(fold="2")} == {2}  # CLI strings compare by value
    assert len(store.records(params__C=1.0)) == 4  # i % 3 == 0
    assert len(store.records(experiment=["a", "b"], status="ok")) == 9
    frame = store.to_frame(experiment="b")
    assert len(frame) == 4 and set(frame["experiment"]) == {"b"}
    assert {"test.ndcg@10", "vali.ndcg@10", "train.wall_s", "params.C", "env.hostname"} <= set(frame.columns)
    assert store.experiments() == ["a", "b"]
    empty = ResultStore(tmp_path / "nothing").to_frame()
    assert empty.empty and "params" in empty.columns


def test_bad_records_are_refused(tmp_path):
    store = ResultStore(tmp_path)
    with pytest.raises(ValueError, match="status"):
        store.append(make_record(1, status="done"))
    with pytest.raises(ValueError, match="experiment tag"):
        store.append(make_record(1, experiment="../escape"))
    with pytest.raises(ValueError, match="missing field 'run_id'"):
        store.append({"status": "ok", "experiment": "x"})
    with pytest.raises(TypeError, match="cannot be stored"):
        to_jsonable({"x": object()})


@pytest.mark.parametrize(
    "content, problem",
    [
        ('{"run_id": "', "invalid JSON at line 1"),
        ("[1, 2]", "top-level JSON value is a list"),
        ('{"status": "ok", "experiment": "exp"}', "missing field 'run_id'"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
    ],
)
def test_corrupt_file_is_reported_by_name(tmp_path, content, problem):
    store = ResultStore(tmp_path)
    store.append(make_record(1))
    bad = tmp_path / "exp" / f"{2:040x}.json"
    if isinstance(content, bytes):
        bad.write_bytes(content)
    else:
        bad.write_text(content)
    with pytest.raises(CorruptRecordError) as err:
        store.records()
    assert str(bad) in str(err.value) and problem in str(err.value)
    assert err.value.problems[0][0] == bad
    # the good record is still readable, and the corrupt one is never silently dropped
    with pytest.warns(UserWarning, match=str(bad.name)):
        assert len(store.records(on_corrupt="warn")) == 1
    records, corrupt = store.scan()
    assert len(records) == 1 and [p for p, _ in corrupt] == [bad]
    with pytest.raises(CorruptRecordError, match=bad.name):
        store.get(f"{2:040x}")


def test_record_under_wrong_name_is_corrupt(tmp_path):
    store = ResultStore(tmp_path)
    src = store.append(make_record(1))
    os.replace(src, src.with_name(f"{9:040x}.json"))
    with pytest.raises(CorruptRecordError, match="does not match its run_id"):
        store.records()


def _writer(root: str, worker: int, n: int, shared: int) -> None:
    store = ResultStore(root)
    for i in range(n):
        # every worker also rewrites the same `shared` run ids: last writer wins, file stays whole
        rid = i if i < shared else 1000 * (worker + 1) + i
        big = {"blob": list(range(2000)), "worker": worker}
        store.append(make_record(rid, extra=big))


def test_concurrent_writers_never_corrupt(tmp_path):
    root = str(tmp_path / "store")
    ctx = mp.get_context("spawn")
    n, shared, workers = 40, 10, 3
    procs = [ctx.Process(target=_writer, args=(root, w, n, shared)) for w in range(workers)]
    for p in procs:
        p.start()
    # read while they write: every file seen must parse whole
    store = ResultStore(root)
    seen = 0
    while any(p.is_alive() for p in procs):
        records, corrupt = store.scan()
        assert corrupt == []
        seen = max(seen, len(records))
    for p in procs:
        p.join()
        assert p.exitcode == 0
    records, corrupt = store.scan()
    assert corrupt == []
    ids = [r["run_id"] for r in records]
    assert len(ids) == len(set(ids)) == shared + workers * (n - shared)
    assert all(len(r["extra"]["blob"]) == 2000 for r in records)
    leftovers = [p for p in Path(root).rglob("*") if p.name.startswith(".")]
    assert leftovers == []


def test_a_record_with_a_non_finite_per_query_value_is_corrupt(tmp_path):
    """NaN (a non-strict writer), an int beyond float range (valid JSON: it made the check raise
    OverflowError, so a scan stopped instead of naming the file) and a bool are no metric values:
    the record is corrupt, by name; metrics the same."""
    from rankbench.store import _is_number

    assert not _is_number(10**400) and _is_number(10**300) and not _is_number(True)
    store = ResultStore(tmp_path)
    rec = make_record(1)
    rec["per_query"] = {"test": {"qid": ["a", "b", "c"], "ndcg@10": [0.5, None, 1.0]}}
    store.append(rec)
    assert store.get(rec["run_id"])["per_query"]["test"]["ndcg@10"] == [0.5, None, 1.0]
    (path,) = tmp_path.rglob(f"{rec['run_id']}.json")
    for bad in (float("nan"), 10**400, True):  # NaN from a non-strict writer, an int past float
        obj = json.loads(path.read_text())
        obj["per_query"]["test"]["ndcg@10"][1] = bad
        path.write_text(json.dumps(obj))
        with pytest.raises(CorruptRecordError, match="per_query.test.ndcg@10 holds a value"):
            store.get(rec["run_id"])
    obj = json.loads(path.read_text())
    obj["per_query"]["test"]["ndcg@10"][1] = None
    obj["metrics"]["test"]["map"] = 10**400
    path.write_text(json.dumps(obj))
    records, corrupt = store.scan()
    assert records == [] and corrupt[0][0] == path and "metrics.test.map" in corrupt[0][1]
