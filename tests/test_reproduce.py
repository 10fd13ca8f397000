"""`python -m rankbench.reproduce --quick` end to end on small synthetic data (no real data needed)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from rankbench.reproduce import main
from rankbench.store import ResultStore

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = ROOT / "experiments"


@pytest.mark.slow
def test_quick_reproduce_end_to_end_then_resume(tmp_path, capsys):
    out = tmp_path / "results"
    args = ["--quick", "--experiments", str(EXPERIMENTS), "--results", str(out), "--no-progress",
            "--data-root", str(tmp_path / "no_data")]
    assert main(args) == 0
    index = (out / "README.md").read_text()
    papers_yaml = "".join(p.read_text() for p in EXPERIMENTS.glob("*/experiments.yaml"))
    ids = re.findall(r"^  - id: (\S+)", papers_yaml, flags=re.M)
    assert len(ids) >= 15
    statuses = dict(re.findall(r"^\| (.+?) \| (?:table|figure) \| ([a-z ]+) \|", index, flags=re.M))
    assert len(statuses) == len(ids)
    assert "failed" not in statuses.values()
    for png in out.glob("*/*.png"):
        assert png.stat().st_size > 5_000
        caption = png.with_suffix(".md").read_text()
        assert "QUICK MODE" in caption and "SUBSTITUTED" in caption
    assert len(list(out.glob("*/*.png"))) >= 6

    # PRSVM and PRSVM+ solve the same problem with different oracles: same test NDCG@10
    with (out / "chapelle2010" / "chapelle2010_table3.csv").open() as fh:
        rows = {r["solver"]: r for r in csv.DictReader(fh)}
    a, b = float(rows["prsvm"]["ndcg@10 ours"]), float(rows["prsvm_plus"]["ndcg@10 ours"])
    assert abs(a - b) < 1e-3

    # the table's number is the mean of the stored records' numbers
    store = ResultStore(out / "store")
    recs = [r for r in store.records() if r["experiment"] == "chapelle_fixed_c"
            and r["solver"] == "prsvm" and r["status"] == "ok"]
    assert len(recs) == 2
    assert a == pytest.approx(sum(r["metrics"]["test"]["ndcg@10"] for r in recs) / 2)

    # second invocation: everything ok is stored, nothing is retrained
    n_files = len(list(store.files()))
    ok_before = {r["run_id"]: r["env"]["finished"] for r in store.records() if r["status"] == "ok"}
    capsys.readouterr()
    assert main(args) == 0
    ok_after = {r["run_id"]: r["env"]["finished"] for r in store.records() if r["status"] == "ok"}
    assert len(list(store.files())) == n_files
    assert all(ok_after[k] == v for k, v in ok_before.items())
    assert main([*args, "--report-only"]) == 0
