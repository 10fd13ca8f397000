"""A results store from someone else (issue 26): records are data, never code.

Every hostile record here fails safe: it is named with its file and skipped like a corrupt
one, nothing in it is imported or called, and no path built from its fields leaves the folder
it is written to.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rankbench.store import CorruptRecordError, ResultStore, spec_digest

TESTS = Path(__file__).resolve().parent


def _record(**over):
    spec = {"experiment": "x", "dataset": "synthetic", "variant": None, "fold": 1,
            "solver": "prsvm_plus", "params": {"C": 1.0}, "seed": 0, "data_params": {},
            "record_history": False, "eval_splits": ["vali", "test"], "loader": None}
    spec.update(over.pop("spec", {}))
    rec = {"run_id": spec_digest(spec), "status": "ok", "error": None, "experiment": "x",
           "dataset": spec["dataset"], "variant": None, "synthetic": True, "fold": 1,
           "solver": spec["solver"], "params": spec["params"], "seed": 0, "spec": spec,
           "metrics": {"test": {"ndcg@10": 0.5}}, "per_query": {"test": {"qid": [1, 2],
                                                                          "ndcg@10": [0.4, 0.6]}},
           "scores": {}, "train": {"wall_s": 0.1}, "history": [], "extra": {}, "env": {}}
    rec.update(over)
    return rec


def _write(root: Path, rec, name: str | None = None) -> Path:
    d = root / "x"
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{name or rec['run_id']}.json"
    path.write_text(json.dumps(rec) if not isinstance(rec, str) else rec)
    return path


HOSTILE = {
    "metrics is a string": {"metrics": "abc"},
    "params is a list": {"params": [1, 2]},
    "fold is text": {"fold": "1"},
    "ragged per-query lists": {"per_query": {"test": {"qid": [1, 2, 3], "ndcg@10": [0.4]}}},
    "a huge value (1e400 reads as infinity)": {"metrics": {"test": {"ndcg@10": float("inf")}}},
    "history of numbers": {"history": [1, 2]},
    "a train value that is text": {"train": {"wall_s": "fast"}},
    "an experiment that climbs out": {"experiment": "../../escaped"},
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_record_of_the_wrong_shape_is_named_and_skipped(tmp_path, name):
    good = _record()
    _write(tmp_path, good)
    bad = _record(spec={"params": {"C": 2.0}})
    bad.update(HOSTILE[name])
    path = _write(tmp_path, bad)
    records, corrupt = ResultStore(tmp_path).scan()
    assert [r["run_id"] for r in records] == [good["run_id"]]
    assert [p for p, _ in corrupt] == [path], corrupt
    with pytest.raises(CorruptRecordError, match=path.name):
        ResultStore(tmp_path).records()


def test_a_spec_that_is_not_its_run_ids_is_refused(tmp_path):
    rec = _record()
    rec["spec"] = {**rec["spec"], "loader": "this:s"}  # code named in the spec, id unchanged
    path = _write(tmp_path, rec)
    (_, why), = ResultStore(tmp_path).scan()[1]
    assert "not the sha1 of its spec" in why and ResultStore(tmp_path).scan()[0] == []
    assert path.exists()


def test_a_spec_naming_code_or_an_unknown_dataset_never_loads_anything(tmp_path):
    from rankbench.runner import load_split

    # a record whose id matches its spec (anyone can compute a sha1): the spec itself is refused
    for spec, match in (({"loader": "this:s"}, "names an import path"),
                        ({"dataset": "../../escaped"}, "unknown dataset")):
        rec = _record(spec=spec)
        with pytest.raises(ValueError, match=match):
            load_split(rec["spec"], "test")


def test_results_cli_on_hostile_records_exits_cleanly(tmp_path):
    _write(tmp_path / "store", _record())
    bad = _record(spec={"params": {"C": 3.0}}, metrics="abc")
    _write(tmp_path / "store", bad)
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    for mode in ([], ["--select"], ["--mean"], ["--compare"], ["--errors"]):
        p = subprocess.run([sys.executable, "-m", "rankbench", "results", "--store",
                            str(tmp_path / "store"), "--skip-corrupt", *mode],
                           capture_output=True, text=True, env=env, timeout=120)
        assert "Traceback" not in p.stderr, (mode, p.stderr)
        assert f"{bad['run_id']}.json" in p.stderr and "field 'metrics' is a str" in p.stderr
        assert p.returncode in (0, 2), (mode, p.returncode, p.stderr)
    p = subprocess.run([sys.executable, "-m", "rankbench", "results", "--store",
                        str(tmp_path / "store")], capture_output=True, text=True, env=env,
                       timeout=120)
    assert p.returncode == 2 and "corrupt record file" in p.stderr and "Traceback" not in p.stderr


def test_store_that_is_a_regular_file_is_an_error(tmp_path):
    f = tmp_path / "records.json"
    f.write_text("{}")
    p = subprocess.run([sys.executable, "-m", "rankbench", "results", "--store", str(f)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "is a file, not a results store" in p.stderr


def test_a_symlinked_record_is_refused(tmp_path):
    outside = tmp_path / "outside.json"
    rec = _record()
    outside.write_text(json.dumps(rec))
    (tmp_path / "store" / "x").mkdir(parents=True)
    (tmp_path / "store" / "x" / f"{rec['run_id']}.json").symlink_to(outside)
    records, corrupt = ResultStore(tmp_path / "store").scan()
    assert records == [] and "symbolic link" in corrupt[0][1]


def test_an_experiment_name_too_long_for_a_file_name_is_refused_before_training():
    from rankbench.spec import RunSpec

    with pytest.raises(ValueError, match="too long for a directory name"):
        RunSpec.create(experiment="a" * 300, dataset="synthetic", fold=1, solver="prsvm_plus")
    RunSpec.create(experiment="a" * 128, dataset="synthetic", fold=1, solver="prsvm_plus")
