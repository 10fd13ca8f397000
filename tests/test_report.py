"""Report stage: the papers' experiment configs planned, their transcribed numbers, renderers on
constructed records (test fixtures, never written to results/)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
import pytest

from rankbench.config import ConfigError, DataUse
from rankbench.plan import (
    ExperimentPlan,
    conf_dir,
    experiment_names,
    hydra_context,
    plan_experiment,
)
from rankbench.report import artefact_of, attach_records, render_all
from rankbench.report.context import ArtefactDef, RenderContext
from rankbench.report.paper import Paper, load_paper, load_papers, same_dataset
from rankbench.report.records import PlannedRun, choose_per_fold, mean_of, per_query, value
from rankbench.report.renderers import get_renderer
from rankbench.spec import RunSpec, run_id

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = ROOT / "experiments"
PAPERS_DIR = ROOT.parent / "shared" / "papers"


@pytest.fixture(scope="module")
def hydra():
    with hydra_context():
        yield


# ------------------------------------------------------------------ the experiment configs
@pytest.mark.parametrize("quick", [pytest.param(False, marks=pytest.mark.long), True],
                         ids=["full", "quick"])
def test_every_artefact_config_plans_and_names_a_paper_and_renderer(hydra, quick):
    papers = load_papers(EXPERIMENTS)
    assert set(papers) >= {"chapelle2010", "lee_lin2014", "sculley2009", "welleck2016", "leaderboard"}
    names = experiment_names(quick)
    assert len(names) >= 15
    for name in names:
        # every dataset taken as present: the whole grid of the artefact
        plan = plan_experiment(name, check_data=False)
        assert plan.specs, name
        for spec in plan.specs[:50]:
            RunSpec.from_dict(spec)  # the runner accepts every spec the plan produces
        reads = plan.report.get("reads") or []
        art = artefact_of(plan, reads)
        assert art.paper in papers, name
        get_renderer(art.renderer)
        for r in reads:
            assert (conf_dir() / "experiment" / f"{r}.yaml").is_file(), (name, r)
        assert {s.experiment for s in plan.specs} == {plan.tag}


@pytest.mark.slow
def test_quick_variants_shrink_their_artefact(hydra):
    for name in experiment_names(quick=True):
        if not name.startswith("quick/"):
            continue
        full = plan_experiment(name[len("quick/"):], check_data=False)
        quick = plan_experiment(name, check_data=False)
        assert quick.tag == full.tag
        assert len(quick.specs) <= len(full.specs), name


def test_table4_uses_chapelle_table2_c_per_fold(hydra):
    plan = plan_experiment("chapelle2010/table4", check_data=False)
    c = {(s.dataset, s.fold): s.params["C"] for s in plan.specs if s.solver == "prsvm"}
    # Chapelle & Keerthi 2010, Table 2
    assert [c[("ohsumed", f)] for f in range(1, 6)] == [0.01, 0.001, 0.0001, 0.6, 0.1]
    assert [c[("td2004", f)] for f in range(1, 6)] == [0.05, 0.01, 4.0, 0.03, 0.9]


def test_cached_composition_equals_hydra_composing_each_job(hydra):
    """The planner composes each set of group choices once; Hydra's launchers compose every job."""
    from hydra.core.global_hydra import GlobalHydra

    from rankbench.plan import compose_multirun, expand_sweep, prepare

    loader = GlobalHydra.instance().config_loader()
    for name in ("chapelle2010/fig1", "chapelle2010/fig3", "leaderboard/letor", "sculley2009/fig2",
                 "welleck2016/table2", "quick/lee_lin2014/fig2"):
        plan = plan_experiment(name, check_data=False)
        master, _ = compose_multirun([f"experiment={name}"])
        jobs = expand_sweep(master)
        for k in sorted({0, len(jobs) // 3, len(jobs) // 2, len(jobs) - 1}):
            cfg = loader.load_sweep_config(master, jobs[k])  # exactly what a launcher does
            _, specs = prepare(cfg, check_data=False)
            assert [run_id(s) for s in specs] == [run_id(s) for s in plan.jobs[k].specs], (name, k)


TOY_CONF = """# @package _global_
defaults:
  - override /protocol: fixed
  - _self_
experiment_name: toy
missing_data: stand_in
solver_modules: [test_runner_toys]
lookup: {alpha: {rcv1_ccat: 3.0, ohsumed: 2.0}}
per_solver:
  prsvm: {C: 0.5}
limits:
  prsvm: {n_max: 100, reason: too big}
hydra:
  sweeper:
    params:
      dataset: ohsumed,rcv1_ccat
      +dataset.data_params.n: 10,100,1000
      solver: prsvm,prsvm_plus
report: {paper: toy, kind: table, renderer: ranksvm_time_table, title: Toy}
"""


def test_absent_data_stand_ins_limits_and_per_solver_values(tmp_path, hydra):
    exp = tmp_path / "conf" / "experiment" / "toy"
    exp.mkdir(parents=True)
    (exp / "e.yaml").write_text(TOY_CONF)
    extra = [f"hydra.searchpath=[file://{tmp_path / 'conf'}]", f"data_root={tmp_path / 'no_data'}"]
    plan = plan_experiment("toy/e", extra)
    # ohsumed absent and without a stand-in: data not present, no runs
    assert not plan.resolutions["ohsumed"].present
    use = plan.resolutions["rcv1_ccat"]
    assert use.present and use.dataset == "synthetic" and "absent" in use.substitution
    runs = sorted((s.solver, s.data_params["n"], s.params["C"]) for s in plan.specs)
    # prsvm gets its own C and stops at n = 100 (limits); prsvm_plus keeps the config's C
    assert runs == [("prsvm", 10, 0.5), ("prsvm", 100, 0.5),
                    ("prsvm_plus", 10, 1e-4), ("prsvm_plus", 100, 1e-4), ("prsvm_plus", 1000, 1e-4)]
    assert all(s.data_params["d"] == 47236 for s in plan.specs)  # the stand-in's own params
    skipped = [j.skip for j in plan.jobs if j.skip]
    assert any("data not present" in s for s in skipped) and any("too big" in s for s in skipped)
    # without missing_data=stand_in absent data is an error naming what goes where
    with pytest.raises(ConfigError, match="not found|put"):
        plan_experiment("toy/e", [*extra, "missing_data=error"])


def test_bad_report_blocks_and_paper_files_give_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown keys.*tilte"):
        ArtefactDef.from_report("p/a", {"paper": "p", "kind": "table", "renderer": "r", "title": "t",
                                        "tilte": "x"}, [])
    with pytest.raises(ValueError, match="lacks"):
        ArtefactDef.from_report("p/a", {"paper": "p", "kind": "table"}, [])
    d = tmp_path / "p"
    d.mkdir()
    with pytest.raises(ValueError, match="no paper.yaml"):
        load_paper(d)
    (d / "paper.yaml").write_text("key: p\ncitation: c\nfiel: x\n")
    with pytest.raises(ValueError, match="unknown keys"):
        load_paper(d)
    (d / "paper.yaml").write_text("key: p\ncitation: c\nfile: null\n")
    (d / "paper_values.csv").write_text("artefact,dataset,method,solver,metric,value\nt,a,m,s,x,abc\n")
    with pytest.raises(ValueError, match="paper_values.csv:2"):
        load_paper(d)


# ------------------------------------------------------------------ transcribed numbers
def _paper_text(paper: Paper) -> str:
    path = PAPERS_DIR / (paper.file or "")
    if not paper.file or not path.is_file():
        pytest.skip(f"paper text {paper.file} not present under {PAPERS_DIR}")
    return path.read_text()


def _spellings(v: float) -> set[str]:
    out = {f"{v:g}", f"{v:,.0f}", f"{v:,.2f}", f"{v:.2f}", f"{v:.3f}", f"{v:.4f}"}
    if v < 1:
        out |= {s.lstrip("0") for s in list(out)}  # ".22s" in Sculley's Table 1
    return out


@pytest.mark.parametrize("folder", ["chapelle2010", "lee_lin2014", "sculley2009", "welleck2016"])
def test_every_exact_paper_number_occurs_in_the_paper_text(folder):
    """Each non-approximate published number is literally in the paper (catches typos)."""
    paper = load_paper(EXPERIMENTS / folder)
    text = _paper_text(paper)
    numbers = set(re.findall(r"\d[\d,]*\.?\d*|\.\d+", text))
    exact = [r for r in paper.values if not r["approximate"] and r["reference"].startswith(("Table", "Supplement"))]
    assert exact, folder
    for r in exact:
        assert _spellings(r["value"]) & numbers, (folder, r["artefact"], r["method"], r["metric"], r["value"])


def test_letor_baseline_transcription_matches_the_letor4_text(data_root):
    src = data_root / "baselines" / "LETOR4.0" / "RankSVM-Struct.MQ2008.txt"
    if not src.is_file():
        pytest.skip("LETOR 4.0 baseline files not present")
    lines = src.read_text().splitlines()
    avg_rows = [ln.split("\t") for ln in lines if ln.startswith("Avg")]
    map_avg_test = float(avg_rows[1][11])  # second block of the test section: P@k .. MAP
    with (EXPERIMENTS / "letor_baselines" / "ranksvm_letor.csv").open() as fh:
        rows = [r for r in csv.DictReader(fh) if r["dataset"] == "MQ2008" and r["split"] == "test"
                and r["fold"] == "avg" and r["metric"] == "map"]
    assert float(rows[0]["value"]) == map_avg_test == 0.46956


def test_same_dataset_spellings():
    assert same_dataset("mq2007_list", "MQ2007-list")
    assert same_dataset("rcv1_ccat", "RCV1-CCAT")
    assert not same_dataset("mq2007", "mq2008")


# ------------------------------------------------------------------ records -> numbers
def _record(solver, fold, vali, test, wall, per_q=None, status="ok", **extra):
    rec = {"run_id": f"{abs(hash((solver, fold, vali, test))):040x}"[:40], "status": status,
           "metrics": {"vali": {"ndcg@10": vali}, "test": {"ndcg@10": test, "map": test / 2}},
           "train": {"wall_s": wall, "cpu_s": wall}, "per_query": {}, "history": [],
           "extra": {}, "env": {"machine": {"node": "testbox"}, "git_commit": "abc123"}}
    if per_q is not None:
        rec["per_query"]["test"] = {"qid": list(range(len(per_q))), "ndcg@10": list(per_q),
                                    "map": list(per_q)}
    rec.update(extra)
    return rec


def _run(ds, solver, fold, params, record):
    spec = {"experiment": "toy", "dataset": ds, "variant": None, "fold": fold, "solver": solver,
            "params": params, "seed": 0, "data_params": {}, "record_history": False,
            "eval_splits": ["vali", "test"]}
    return PlannedRun(spec, DataUse(ds, ds.upper(), True, ds), ds, record)


def test_value_paths_and_selection_by_validation():
    r1 = _run("a", "s", 1, {"C": 1.0}, _record("s", 1, 0.5, 0.40, 1.0))
    r2 = _run("a", "s", 1, {"C": 2.0}, _record("s", 1, 0.6, 0.30, 2.0))
    r3 = _run("a", "s", 1, {"C": 3.0}, _record("s", 1, 0.6, 0.20, 3.0))  # tie: the smaller C wins
    r4 = _run("a", "s", 2, {"C": 1.0}, _record("s", 2, 0.1, 0.50, 4.0))
    bad = _run("a", "s", 2, {"C": 2.0}, _record("s", 2, 0.9, 0.99, 5.0, status="failed"))
    assert value(r1.record, "test.ndcg@10") == 0.40
    assert value(r1.record, "train.wall_s") == 1.0
    assert value(r1.record, "extra.nothing") is None
    chosen = choose_per_fold([r1, r2, r3, r4, bad], "vali.ndcg@10")
    assert [r.spec["params"]["C"] for r in chosen[("a", "s")]] == [2.0, 1.0]
    assert mean_of(chosen[("a", "s")], "test.ndcg@10") == pytest.approx((0.30 + 0.50) / 2)


def test_per_query_pairs_queries_across_folds():
    a = _run("a", "s", 1, {}, _record("s", 1, 0, 0, 0, per_q=[0.1, 0.2]))
    b = _run("a", "s", 2, {}, _record("s", 2, 0, 0, 0, per_q=[0.3]))
    keys, vals = per_query([b, a], "ndcg@10")
    assert list(keys) == ["1:0", "1:1", "2:0"]
    assert list(vals) == [0.1, 0.2, 0.3]


# ------------------------------------------------------------------ renderers on fixtures
def _plan(runs, solvers=("prsvm", "prsvm_plus"), datasets=("ohsumed",)):
    return ExperimentPlan(name="toy", tag="toy", report={}, jobs=[], datasets=list(datasets),
                          solvers=list(solvers),
                          resolutions={d: DataUse(d, d.upper(), True, d) for d in datasets},
                          runs=list(runs))


def _ctx(tmp_path, renderer, runs, values=(), solvers=("prsvm", "prsvm_plus"), datasets=("ohsumed",),
         paper_artefact="table3", experiments=("toy",), options=None):
    plan = _plan(runs, solvers, datasets)
    art = ArtefactDef("toy_art", "toy", "table", renderer, "Toy table", list(experiments),
                      paper_artefact, dict(options or {}))
    paper = Paper("toy", "Toy et al.", None, EXPERIMENTS / "toy", list(values))
    return RenderContext(paper, art, {t: plan for t in experiments}, tmp_path, False)


def test_time_table_means_sums_and_differences(tmp_path):
    runs = [_run("ohsumed", "prsvm", f, {"C": 1e-4}, _record("prsvm", f, 0.5, t, w))
            for f, t, w in ((1, 0.40, 1.0), (2, 0.50, 2.5))]
    runs += [_run("ohsumed", "prsvm_plus", 1, {"C": 1e-4}, None)]
    values = [
        {"artefact": "table3", "dataset": "OHSUMED", "method": "PRSVM", "solver": "prsvm",
         "metric": "test.ndcg@10", "value": 0.454, "approximate": False, "reference": "Table 3", "note": ""},
        {"artefact": "table3", "dataset": "OHSUMED", "method": "PRSVM", "solver": "prsvm",
         "metric": "train.wall_s_total", "value": 7.0, "approximate": False, "reference": "Table 3", "note": ""},
        {"artefact": "table3", "dataset": "OHSUMED", "method": "SVMLight", "solver": "",
         "metric": "test.ndcg@10", "value": 0.454, "approximate": False, "reference": "Table 3", "note": "ref"},
    ]
    ctx = _ctx(tmp_path, "ranksvm_time_table", runs, values)
    art = get_renderer("ranksvm_time_table")(ctx)
    with (tmp_path / "toy" / "toy_art.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    prsvm = next(r for r in rows if r["solver"] == "prsvm")
    assert float(prsvm["ndcg@10 ours"]) == pytest.approx(0.45)
    assert float(prsvm["ndcg@10 diff"]) == pytest.approx(0.45 - 0.454)
    assert float(prsvm["time ours (s, all folds)"]) == pytest.approx(3.5)
    assert float(prsvm["time ratio ours/paper"]) == pytest.approx(0.5)
    plus = next(r for r in rows if r["solver"] == "prsvm_plus")
    assert plus["ndcg@10 ours"] == "" and "0 of 1" in plus["note"]
    assert any(r["method"] == "SVMLight" and r["solver"] == "(published only)" for r in rows)
    assert art.status == "partial"
    md = (tmp_path / "toy" / "toy_art.md").read_text()
    assert "testbox" in md and "abc123" in md  # machine and commit in the caption


def test_leaderboard_marks_a_real_difference_only(tmp_path):
    rng = np.random.default_rng(0)
    base = rng.uniform(0.3, 0.6, size=60)
    runs = [
        _run("ohsumed", "prsvm_plus", 1, {"C": 1.0}, _record("x", 1, 0.5, 0.45, 1.0, per_q=base)),
        _run("ohsumed", "tron_tree", 1, {"C": 1.0},
             _record("y", 1, 0.5, 0.45, 1.0, per_q=base + rng.normal(0, 1e-3, 60))),
        _run("ohsumed", "spd_pegasos", 1, {"lam": 1e-4},
             _record("z", 1, 0.5, 0.35, 1.0, per_q=base - 0.1 + rng.normal(0, 0.01, 60))),
    ]
    ctx = _ctx(tmp_path, "leaderboard_table", runs, solvers=("prsvm_plus", "tron_tree", "spd_pegasos"),
               paper_artefact=None, options={"reference_solver": "prsvm_plus"})
    get_renderer("leaderboard_table")(ctx)
    with (tmp_path / "toy" / "toy_art.csv").open() as fh:
        rows = {r["solver"]: r for r in csv.DictReader(fh) if r["solver"]}
    assert float(rows["spd_pegasos"]["p ndcg@10 vs ref"]) < 0.01
    assert rows["spd_pegasos"]["method"].endswith("*") or "*" in rows["spd_pegasos"]["method"]
    assert float(rows["tron_tree"]["p ndcg@10 vs ref"]) > 0.05
    assert "*" not in rows["tron_tree"]["method"]


def test_runner_records_the_dual_sparsity_the_report_reads(tmp_path):
    """Table (I): the share of pairs with margin >= 1 in the record equals an O(p) count."""
    from rankbench.report.renderers.lee_lin import zero_dual_share
    from rankbench.runner import load_split, run_one

    spec = {"experiment": "toy", "dataset": "synthetic", "variant": "letor_like", "fold": 1,
            "solver": "tron_tree", "params": {"C": 10.0}, "seed": 0,
            "data_params": {"n_queries": 12, "docs_per_query": 9, "n_features": 4, "seed": 3},
            "record_history": False, "eval_splits": ["test"]}
    rec = run_one(spec)
    assert rec["status"] == "ok", rec["error"]
    run = PlannedRun(spec, DataUse("x", "X", True, "synthetic"), "x", rec)
    share, src = zero_dual_share(run)
    from rankbench.estimators.registry import make_solver

    data = load_split(spec, "train")
    w = make_solver("tron_tree", spec["params"]).fit(data.X, data.y, data.qid).coef_
    s = data.X @ w
    n_pairs = n_ge1 = 0
    for a, b in zip(data.query_ptr[:-1], data.query_ptr[1:], strict=True):
        for i in range(a, b):
            for j in range(a, b):
                if data.y[i] > data.y[j]:
                    n_pairs += 1
                    n_ge1 += s[i] - s[j] >= 1.0
    assert src == "record"
    assert share == pytest.approx(n_ge1 / n_pairs)


def test_runner_scores_every_kept_iterate_on_the_test_split():
    """Lee & Lin Fig. (II): per-iterate test metrics are recorded at run time, the report reads them."""
    from rankbench.estimators.registry import make_solver
    from rankbench.metrics import ndcg_at_k, pairwise_accuracy
    from rankbench.report.renderers.lee_lin import iterate_scores
    from rankbench.runner import load_split, run_one

    spec = {"experiment": "toy", "dataset": "synthetic", "variant": "letor_like", "fold": 1,
            "solver": "tron_tree", "params": {"C": 1.0, "tol": 1e-8, "keep_coef_history": True},
            "seed": 0, "data_params": {"n_queries": 12, "docs_per_query": 9, "n_features": 4, "seed": 3},
            "record_history": True, "eval_splits": ["test"]}
    rec = run_one(spec)
    assert rec["status"] == "ok", rec["error"]
    assert rec["history"] and all("coef" not in h for h in rec["history"])  # scored, then dropped
    train, test = load_split(spec, "train"), load_split(spec, "test")
    est = make_solver("tron_tree", spec["params"]).fit(train.X, train.y, train.qid)
    for h, row in zip(est.history_, iterate_scores(PlannedRun(spec, None, "x", rec)), strict=True):
        s = test.X @ np.asarray(h["coef"])
        assert row["pairwise_accuracy"] == pytest.approx(pairwise_accuracy(test.y, s, test.qid), abs=1e-12)
        assert row["ndcg@10"] == pytest.approx(ndcg_at_k(test.y, s, test.qid, k=10), abs=1e-12)


def test_render_all_turns_a_renderer_crash_into_a_failed_entry(tmp_path, monkeypatch):
    from rankbench.report import renderers

    def boom(ctx):
        raise RuntimeError("kaput")

    monkeypatch.setitem(renderers.RENDERERS._items, "boom", boom)
    plan = _plan([])
    plan.report = {"paper": "toy", "kind": "table", "renderer": "boom", "title": "t"}
    paper = Paper("toy", "Toy et al.", None, EXPERIMENTS / "toy", [])
    arts = render_all({"toy": paper}, {"toy": plan}, ["toy"], {}, tmp_path)
    assert arts[0].status == "failed" and "kaput" in arts[0].caption


def test_attach_records_matches_by_run_id(tmp_path):
    from rankbench.plan import JobPlan
    from rankbench.store import ResultStore

    store = ResultStore(tmp_path / "store")
    from types import SimpleNamespace

    specs = [RunSpec.from_dict(_run("ohsumed", "prsvm", f, {"C": 1.0}, None).spec) for f in (1, 2)]
    rec = _record("prsvm", 1, 0.5, 0.4, 1.0)
    rec.update({"run_id": specs[0].run_id, "experiment": "toy"})
    store.append(rec)
    use = DataUse("ohsumed", "OHSUMED", True, "ohsumed")
    plan = _plan([])
    plan.jobs = [JobPlan([], SimpleNamespace(data_use=use, skip=None), specs)]
    counts = attach_records({"toy": plan}, store)
    assert (counts["found"], counts["missing"], counts["corrupt"]) == (1, 1, 0)
    assert plan.runs[0].ok and plan.runs[1].record is None


def test_c_sweep_figure_aggregates_folds_and_skips_incomplete_points(tmp_path):
    runs = []
    for c, folds in ((1e-4, (1, 2)), (1e-2, (1, 2))):
        for f in folds:
            rec = None if (c == 1e-2 and f == 2) else _record("prsvm", f, 0.5, 0.4 + f / 100, 1.5 * f)
            runs.append(_run("ohsumed", "prsvm", f, {"C": c}, rec))
    ctx = _ctx(tmp_path, "c_sweep_figure", runs, solvers=("prsvm",), paper_artefact="fig1")
    art = get_renderer("c_sweep_figure")(ctx)
    with (tmp_path / "toy" / "toy_art.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    # C = 1e-2 lacks fold 2: a point averaged over fewer folds would not be comparable
    assert [float(r["C"]) for r in rows] == [1e-4]
    assert float(rows[0]["time_total_s"]) == pytest.approx(1.5 + 3.0)
    assert float(rows[0]["test_ndcg@10"]) == pytest.approx(0.415)
    assert (tmp_path / "toy" / "toy_art.png").stat().st_size > 5_000
    assert art.status == "partial"


def test_stand_in_numbers_are_never_differenced_against_the_paper(tmp_path):
    from rankbench.report.compare import comparison_row

    row = comparison_row("t", "RCV1", "m", "auc", {"value": 0.99}, 0.95, data="stand-in")
    assert row["difference"] is None and row["ours"] == 0.95
    row = comparison_row("t", "RCV1", "m", "auc", {"value": 0.99}, 0.95)
    assert row["difference"] == pytest.approx(-0.04)


def test_a_run_that_did_not_converge_is_flagged_in_its_cell_and_caption(tmp_path):
    runs = [_run("ohsumed", "prsvm", f, {"C": 1e-4},
                 _record("prsvm", f, 0.5, 0.4, 1.0, train={"wall_s": 1.0, "converged": f != 2}))
            for f in (1, 2)]
    runs += [_run("ohsumed", "prsvm_plus", f, {"C": 1e-4},
                  _record("prsvm_plus", f, 0.5, 0.4, 1.0, train={"wall_s": 1.0, "converged": True}))
             for f in (1, 2)]
    get_renderer("ranksvm_time_table")(_ctx(tmp_path, "ranksvm_time_table", runs))
    md = (tmp_path / "toy" / "toy_art.md").read_text()
    prsvm_line = next(ln for ln in md.splitlines() if "| prsvm |" in ln)
    plus_line = next(ln for ln in md.splitlines() if "| prsvm_plus |" in ln)
    assert "0.4 †" in prsvm_line and "1 of 2 runs did not converge" in prsvm_line
    assert "†" not in plus_line
    assert "NOT CONVERGED: 1 run(s)" in md and "prsvm (OHSUMED fold 2)" in md
    with (tmp_path / "toy" / "toy_art.csv").open() as fh:
        rows = {r["solver"]: r for r in csv.DictReader(fh)}
    assert "did not converge" in rows["prsvm"]["note"] and float(rows["prsvm"]["ndcg@10 ours"]) == 0.4


CHROMIUM = next((p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser") if Path(p).exists()), None)


def _two_artefacts(tmp_path):
    runs = []
    for c in (1e-4, 1e-2):
        for f in (1, 2):
            runs.append(_run("ohsumed", "prsvm", f, {"C": c}, _record("prsvm", f, 0.5, 0.4 + f / 100, 1.5)))
    ctx = _ctx(tmp_path, "c_sweep_figure", runs, solvers=("prsvm",), paper_artefact="fig1")
    ctx.artefact.id = "toy_fig"  # its own files, beside the table's
    fig = get_renderer("c_sweep_figure")(ctx)
    table = get_renderer("ranksvm_time_table")(_ctx(tmp_path, "ranksvm_time_table", runs[:2]))
    return [fig, table]


def test_html_report_is_one_self_contained_page(tmp_path):
    from rankbench.report.index import write_index

    arts = _two_artefacts(tmp_path)
    write_index(tmp_path, arts, ["header line"])
    page = (tmp_path / "index.html").read_text()
    assert page.count("data:image/png;base64,") == 1  # the figure, embedded
    assert "<table>" in page and "Paper against ours" in page
    assert "http://" not in page and "https://" not in page and 'src="toy' not in page
    assert "[index.html](index.html)" in (tmp_path / "README.md").read_text()


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium not installed (Debian package chromium): "
                                              "the report's browser test needs it")
def test_html_report_opens_in_a_real_browser_with_every_image(tmp_path):
    import subprocess

    from rankbench.report.index import write_index

    write_index(tmp_path, _two_artefacts(tmp_path), ["header line"])
    url = (tmp_path / "index.html").as_uri()
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*flags, "--virtual-time-budget=10000", "--dump-dom", url],
                         capture_output=True, text=True, timeout=120).stdout
    assert 'data-images-loaded="1/1"' in dom
    shot = tmp_path / "screenshot.png"
    subprocess.run([*flags, "--window-size=1200,1800", f"--screenshot={shot}", url],
                   capture_output=True, text=True, timeout=120)
    assert shot.stat().st_size > 20_000


def test_discussion_numbers_come_from_the_csvs(tmp_path):
    from rankbench.report.discussion import fill

    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "t.csv").write_text("solver,k,ours\na,1,0.45123\nb,1,0.5\nb,2,0.4\n")
    text, problems = fill("A is {{ p/t.csv | solver=a,k=1 | ours | .3f }}, "
                          "{{ p/t.csv | solver=a,k=1 | ours | vs solver=b,k=1 }} B.", tmp_path)
    assert text == "A is 0.451, below B." and problems == []
    text, problems = fill("{{ p/t.csv | solver=b | ours }} {{ p/t.csv | solver=c | ours }}", tmp_path)
    assert text.count("[?") == 2 and len(problems) == 2
    assert "2 rows match" in problems[0] and "0 rows match" in problems[1]
    text, problems = fill("{{ p/t.csv | solver=b,k=1 | ours | minus solver=a,k=1 }} "
                          "{{ p/t.csv | solver=b,k=2 | ours | minus solver=b,k=1 | .2f }}", tmp_path)
    assert text == "+0.0488 -0.10" and problems == []
    (tmp_path / "p" / "s.csv").write_text('series,k,v\n"RankSVM, ours (PRSVM+)",1,0.5\n')
    text, problems = fill("{{ p/s.csv | series=RankSVM, ours (PRSVM+),k=1 | v }}", tmp_path)
    assert text == "0.5" and problems == []


def test_the_committed_discussion_is_its_template_filled_from_the_committed_csvs():
    from rankbench.report.discussion import fill

    template = EXPERIMENTS / "discussion.md"
    committed = ROOT / "results" / "DISCUSSION.md"
    if not template.is_file():
        pytest.skip("no experiments/discussion.md template")
    text, problems = fill(template.read_text(), ROOT / "results")
    assert problems == []
    assert committed.read_text().split("-->\n", 1)[1] == text
