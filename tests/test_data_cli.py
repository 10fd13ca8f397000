"""`python -m rankbench.data`: availability listing and per-split statistics."""

import pytest

from rankbench.data.__main__ import main


@pytest.fixture(autouse=True)
def _private_env(tmp_path, monkeypatch):
    monkeypatch.setenv("RANKBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SCIKIT_LEARN_DATA", str(tmp_path / "sklearn_home"))
    monkeypatch.delenv("RANKBENCH_DATA", raising=False)


def _tiny_td2003(root):
    for fold in range(1, 6):
        d = root / "TD2003" / "QueryLevelNorm" / f"Fold{fold}"
        d.mkdir(parents=True)
        for k, split in enumerate(("train", "vali", "test")):
            q = 10 * fold + k
            (d / f"{split}.txt").write_text(f"1 qid:{q} 1:0.5\n0 qid:{q} 2:0.25\n0 qid:{q} 3:1\n")


def test_status_lists_available_and_missing(tmp_path, capsys):
    _tiny_td2003(tmp_path)
    assert main(["--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "td2003 [QueryLevelNorm]        available" in out
    assert "td2004 [QueryLevelNorm]        missing: dataset td2004" in out
    assert "TD2004/QueryLevelNorm/Fold{1..5}" in out
    assert "synthetic" in out and "generated" in out


def test_stats_per_split(tmp_path, capsys):
    _tiny_td2003(tmp_path)
    assert main(["stats", "td2003", "--root", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 + 15
    assert lines[1].split() == ["fold", "1", "train", "queries", "1", "docs", "3", "features",
                                "64", "labels", "0:2", "1:1"]


def test_stats_of_a_missing_dataset_fails_with_the_message(tmp_path, capsys):
    assert main(["stats", "mq2007", "--root", str(tmp_path)]) == 1
    assert "MQ2007/Fold{1..5}" in capsys.readouterr().err


def test_status_reports_an_ambiguous_layout_and_goes_on(tmp_path, capsys):
    _tiny_td2003(tmp_path)
    fold = tmp_path / "TD2003" / "QueryLevelNorm" / "Fold2"
    (fold / "vali.txt.xz").write_bytes(b"")
    assert main(["--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"td2003 [QueryLevelNorm]        unusable: td2003 fold 2 vali: 2 files could hold it: {fold}/vali.txt" in out
    assert "td2004 [QueryLevelNorm]        missing" in out
