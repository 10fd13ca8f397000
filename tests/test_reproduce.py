"""`python -m rankbench.reproduce --quick` end to end on small synthetic data (no real data needed).

It runs every paper artefact's experiment config through the command line (``rankbench -m
experiment=quick/<paper>/<artefact>``), so the records it stores are the ones the CLI
writes: their run ids must equal what the planner says each artefact reads.
"""

from __future__ import annotations

import csv
import re

import pytest

from rankbench.plan import experiment_names, hydra_context, plan_experiment
from rankbench.report.ledger import VERDICTS
from rankbench.reproduce import main
from rankbench.spec import run_id
from rankbench.store import ResultStore


@pytest.mark.long
def test_quick_reproduce_end_to_end_then_resume(tmp_path, capsys):
    out = tmp_path / "results"
    args = ["--quick", "--results", str(out), "--no-progress", "--data-root", str(tmp_path / "no_data")]
    assert main(args) == 0
    index = (out / "README.md").read_text()
    names = experiment_names(quick=True)
    assert len(names) >= 15
    statuses = dict(re.findall(r"^\| (.+?) \| (?:table|figure) \| ([a-z -]+) \|", index, flags=re.M))
    assert len(statuses) == len(names)
    assert "failed" not in statuses.values()
    # every paper opens with its claims ledger, each claim with a computed verdict (quick data:
    # stand-ins, so no claim may come out reproduced or not reproduced)
    assert index.count("**Verdicts: ") == 4
    for key in ("chapelle2010", "lee_lin2014", "sculley2009", "welleck2016"):
        with (out / key / f"{key}_claims.csv").open() as fh:
            rows = list(csv.DictReader(fh))
        assert rows and all(r["verdict"] in VERDICTS for r in rows), key
        on_runs = [r["verdict"] for r in rows if r["run_ids"]]
        assert set(on_runs) <= {"stand-in", "not testable here", "pending"}, key
    for png in out.glob("*/*.png"):
        assert png.stat().st_size > 5_000
        caption = png.with_suffix(".md").read_text()
        assert "QUICK MODE" in caption and "SUBSTITUTED" in caption
    assert len(list(out.glob("*/*.png"))) >= 6

    # the CLI stored exactly the runs the planner assigns to each artefact
    store = ResultStore(out / "store")
    stored = {r["run_id"]: r for r in store.records()}
    with hydra_context():
        plans = [plan_experiment(n, [f"data_root={tmp_path / 'no_data'}"]) for n in names]
    # the tier-peers experiments (SVM-light, sofia-ml) are trained only with --peers
    assert {p.tier for p in plans} == {"default", "peers"}
    assert statuses["Chapelle & Keerthi 2010, Fig. 2: NDCG@10 on OHSUMED, our RankSVM against "
                    "LETOR's SVMLight# and the LETOR 3.0 baselines"] == "pending"
    planned = {run_id(s) for p in plans if p.tier != "peers" for s in p.specs}
    assert planned == set(stored)
    assert all(r["status"] == "ok" for r in stored.values())

    # PRSVM and PRSVM+ solve the same problem with different oracles: same test NDCG@10
    with (out / "chapelle2010" / "chapelle2010_table3.csv").open() as fh:
        rows = {r["solver"]: r for r in csv.DictReader(fh)}
    a, b = float(rows["prsvm"]["ndcg@10 ours"]), float(rows["prsvm_plus"]["ndcg@10 ours"])
    assert abs(a - b) < 1e-3
    # the table's number is the mean of the stored records' numbers
    recs = [r for r in stored.values() if r["experiment"] == "chapelle_fixed_c"
            and r["solver"] == "prsvm"]
    assert len(recs) == 2
    assert a == pytest.approx(sum(r["metrics"]["test"]["ndcg@10"] for r in recs) / 2)

    # second invocation: everything ok is stored, nothing is retrained
    n_files = len(list(store.files()))
    ok_before = {k: r["env"]["finished"] for k, r in stored.items()}
    capsys.readouterr()
    assert main(args) == 0
    ok_after = {r["run_id"]: r["env"]["finished"] for r in store.records()}
    assert len(list(store.files())) == n_files
    assert ok_after == ok_before
    assert main([*args, "--report-only"]) == 0
    # --rerun (make reproduce RERUN=1) trains the chosen artefact's runs again, only those
    table4 = {k for k, r in stored.items() if r["experiment"] == "chapelle_msr_c"}
    assert main([*args, "--rerun", "--only", "chapelle2010/table4"]) == 0
    rerun = {r["run_id"]: r["env"]["finished"] for r in store.records()}
    assert len(list(store.files())) == n_files
    assert all(rerun[k] != ok_before[k] for k in table4)
    assert all(rerun[k] == ok_before[k] for k in set(ok_before) - table4)


@pytest.mark.slow
def test_quick_reproduce_through_the_joblib_launcher(tmp_path):
    """`make reproduce LAUNCHER=joblib`: the same runs, in joblib worker processes."""
    out = tmp_path / "results"
    only = ["chapelle2010/table4", "sculley2009/table1"]
    args = ["--quick", "--results", str(out), "--no-progress", "--data-root", str(tmp_path / "none"),
            "--launcher", "joblib", "--only", *only]
    assert main(args) == 0
    stored = {r["run_id"]: r for r in ResultStore(out / "store").records()}
    with hydra_context():
        planned = {run_id(s) for n in only
                   for s in plan_experiment(f"quick/{n}", [f"data_root={tmp_path / 'none'}"]).specs}
    assert planned == set(stored) and len(planned) == 12 + 7  # with the hinge optimum and the binary SVM
    # joblib runs jobs in worker processes: more than one process wrote the records
    assert len({r["env"]["pid"] for r in stored.values()}) > 1


def test_unknown_only_names_and_a_read_only_store_are_refused(tmp_path, capsys):
    assert main(["--quick", "--only", "chapelle2010/table9", "--results", str(tmp_path)]) == 2
    assert "unknown artefacts ['chapelle2010/table9']" in capsys.readouterr().err
    # /proc refuses new folders, even to root
    code = main(["--quick", "--only", "chapelle2010/table3", "--results", str(tmp_path / "r"),
                 "--store", "/proc/nope/store"])
    assert code == 2
    assert "/proc/nope/store is not writable" in capsys.readouterr().err


def test_quick_configs_give_every_run_to_one_job_and_say_what_they_train_on(tmp_path):
    """reproduce-quick's own configs raise no "run(s) appear in more than one job" warning (two
    data sets served by one stand-in did), and a job's log names the stand-in it trains on."""
    from rankbench.sweep_callback import duplicate_runs

    with hydra_context():
        plans = {n: plan_experiment(n, [f"data_root={tmp_path / 'none'}"])
                 for n in experiment_names(quick=True)}
    for name, plan in plans.items():
        ids = [s.run_id for s in plan.specs]
        assert len(ids) == len(set(ids)), (name, duplicate_runs(plan.jobs))
    use = next(j.use for j in plans["quick/lee_lin2014/fig2"].jobs if j.use.label == "MQ2008")
    assert use.served == "synthetic/letor_like (stand-in for MQ2008)"


def test_reproduce_echoes_a_command_to_paste_and_explains_its_budget(tmp_path, monkeypatch):
    import os
    import shlex
    import sys

    from rankbench.reproduce import BUDGET_NOTE, describe, shell_command

    cmd = [sys.executable, "-m", "rankbench", "-m", "experiment=chapelle2010/table3",
           f"store={tmp_path / 'a store'}", "progress=false"]
    line = shell_command(cmd)
    assert shlex.split(line)[1:] == cmd[1:] and not line.startswith("-m")
    assert os.path.samefile(shlex.split(line)[0], sys.executable)
    with hydra_context():
        plans = {"chapelle2010/table3": plan_experiment("chapelle2010/table3",
                                                        [f"data_root={tmp_path / 'none'}"])}
    text = describe(plans, ["chapelle2010/table3"])
    assert "budget 60 s" in text and BUDGET_NOTE in text
    assert "budget" not in describe(plans, ["chapelle2010/table3"], quick=True)
