"""Start-up cost guards without timing: what ``import rankbench; rankbench.RankSVM`` (and a one-shot
parse-and-fit) import.  The timings themselves are a benchmark (``rankbench.bench.startup``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")
# packages a RankSVM user does not need at start-up (each costs 0.1-1 s to import)
HEAVY = ["sklearn", "pandas", "matplotlib", "hydra", "omegaconf", "lightgbm", "xgboost", "ray"]
HEAVY_SCIPY = ["scipy.optimize", "scipy.stats", "scipy.special"]


def _imported(code: str) -> list[str]:
    probe = (f"{code}\nimport json, sys\n"
             f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules if m.split('.')[0] in {HEAVY!r}}}"
             f" | {{m for m in {HEAVY_SCIPY!r} if m in sys.modules}})))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env,
                         timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_probe_sees_an_import():
    # the probe itself can fail: importing scikit-learn shows up
    assert "sklearn" in _imported("import sklearn.base")


def test_estimators_import_no_heavy_package():
    # every top-level export but KernelMap (a scikit-learn transformer)
    assert _imported("import rankbench\n"
                     "for n in set(rankbench.__all__) - {'KernelMap'}: getattr(rankbench, n)") == []


def test_parse_fit_predict_score_import_no_heavy_package(tmp_path):
    f = tmp_path / "toy.txt"
    f.write_text("".join(f"{(i * 7) % 3} qid:{i // 5} 1:{i % 4}.5 2:{(i * 3) % 5} 3:{i % 2}\n"
                         for i in range(30)))
    code = (f"import rankbench\nd = rankbench.read_letor({str(f)!r}, cache=False)\n"
            "m = rankbench.RankSVM(C=0.1).fit(d.X, d.y, d.qid)\n"
            "m.predict(d.X); m.score(d.X, d.y, d.qid)")
    assert _imported(code) == []


def test_kernel_map_imports_scikit_learn_only_when_used():
    assert _imported("import rankbench.estimators.ranksvm") == []
    assert "sklearn" in _imported("import rankbench\nrankbench.KernelMap")


@pytest.mark.parametrize("code", ["rankbench.RankSVM().fit([[1.0], [2.0]], [0, 1]).__sklearn_tags__()"])
def test_scikit_learn_arrives_when_its_classes_are_needed(code):
    assert "sklearn" in _imported(f"import rankbench\n{code}")


def test_startup_bench_rows_state_ratios_to_their_targets(monkeypatch, tmp_path):
    from rankbench.bench import PARTS, startup

    assert "startup" in PARTS
    assert startup.process_seconds("pass", 2) > 0
    seen = []
    monkeypatch.setattr(startup, "process_seconds",
                        lambda code, repeat, env=None: seen.append(code) or 0.3)
    monkeypatch.setenv("RANKBENCH_DATA", str(tmp_path))  # no OHSUMED there: its row says so
    rows = {r["case"]: r for r in startup.run(quick=True)}
    imp = rows["import rankbench; rankbench.RankSVM"]
    assert imp["target_s"] == startup.IMPORT_TARGET_S == 0.6
    assert imp["ratio_to_target"] == pytest.approx(0.3 / 0.6)
    one = rows["one-shot: parse OHSUMED Fold1 train + RankSVM fit"]
    assert one["seconds"] is None and "skipped" in one["note"] and one["target_s"] == 1.0
    assert "import rankbench; rankbench.RankSVM" in seen


def test_one_shot_script_parses_and_fits(tmp_path):
    from rankbench.bench.startup import ONE_SHOT

    f = tmp_path / "toy.txt"
    f.write_text("".join(f"{i % 3} qid:{i // 5} 1:{i % 4}.5 2:{(i * 3) % 5}\n" for i in range(20)))
    assert _imported(ONE_SHOT.format(path=str(f))) == []


def test_results_command_does_not_import_hydra():
    # `rankbench results` browses the store: no Hydra (the multirun callback lives apart)
    code = ("import contextlib, io\nfrom rankbench.__main__ import main\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
            "    main(['results', '--help'])")
    assert "hydra" not in _imported(code)
    assert "hydra" in _imported("import rankbench.sweep_callback")  # the probe sees it there
