"""Report stage: experiment plans as data, the papers' transcribed numbers, renderers on
constructed records (test fixtures, never written to results/)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
import pytest

from rankbench.report import attach_records, render_all
from rankbench.report.context import RenderContext, get_renderer
from rankbench.report.plan import (
    ArtefactDef,
    DatasetEntry,
    ExperimentDef,
    Paper,
    PlannedRun,
    all_experiments,
    expand_experiment,
    load_datasets,
    load_paper,
    load_papers,
    same_dataset,
)
from rankbench.report.records import choose_per_fold, mean_of, per_query, value

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = ROOT / "experiments"
PAPERS_DIR = ROOT.parent / "shared" / "papers"


def _always(name, variant):
    return True


def _never(name, variant):
    return False


# ------------------------------------------------------------------ the experiments as data
def test_every_experiment_names_known_solvers_datasets_and_renderers():
    from rankbench.estimators.registry import solver_names

    papers = load_papers(EXPERIMENTS)
    datasets = load_datasets(EXPERIMENTS / "datasets.yaml")
    known = set(solver_names())
    assert {p.key for p in papers} >= {"chapelle2010", "lee_lin2014", "sculley2009", "welleck2016"}
    for tag, exp in all_experiments(papers).items():
        assert set(exp.datasets) <= set(datasets), tag
        # a typo in a solver name would silently turn an artefact "pending" forever
        assert set(exp.solvers) <= known, (tag, set(exp.solvers) - known)
        for mode in (False, True):
            plan = expand_experiment(exp, datasets, mode, _always, known)
            assert plan.runs, (tag, mode)
            from rankbench.runner import normalize_spec

            for r in plan.runs[:50]:
                normalize_spec(r.spec)  # the runner accepts every spec we produce
    for p in papers:
        for a in p.artefacts:
            get_renderer(a.renderer)


def test_table4_uses_chapelle_table2_c_per_fold():
    paper = load_paper(EXPERIMENTS / "chapelle2010")
    datasets = load_datasets(EXPERIMENTS / "datasets.yaml")
    plan = expand_experiment(paper.experiments["chapelle_msr_c"], datasets, False, _always, {"prsvm"})
    c = {(r.dataset_key, r.spec["fold"]): r.spec["params"]["C"]
         for r in plan.runs if r.spec["solver"] == "prsvm"}
    # Chapelle & Keerthi 2010, Table 2
    assert [c[("ohsumed", f)] for f in range(1, 6)] == [0.01, 0.001, 0.0001, 0.6, 0.1]
    assert [c[("td2004", f)] for f in range(1, 6)] == [0.05, 0.01, 4.0, 0.03, 0.9]


def _toy_exp(**kw) -> ExperimentDef:
    base = dict(tag="toy", paper="p", description="", datasets=["a", "b"], folds=[1, 2],
                solvers=["s1", "s2"], params={"C": [1.0, 2.0]})
    base.update(kw)
    return ExperimentDef(**base)


TOY_DATASETS = {
    "a": DatasetEntry("a", "A", None, (1, 2, 3)),
    "b": DatasetEntry("b", "B", None, (1, 2, 3)),
    "r": DatasetEntry("r", "R", None, (1,), stand_in={"dataset": "synthetic", "variant": "rcv1_like",
                                                      "data_params": {"d": 5}}),
}


def test_expansion_counts_limits_and_absent_datasets():
    exp = _toy_exp(solver_params={"s2": {"C": [3.0]}})
    plan = expand_experiment(exp, TOY_DATASETS, False, lambda n, v: n == "a", {"s1"})
    # b absent: no runs, reported; s2 has its own 1-value grid; s2 pending (not known)
    assert not plan.resolutions["b"].present
    assert len(plan.runs) == 2 * 2 + 1 * 2
    assert plan.pending_solvers == ["s2"]
    assert len(plan.runnable()) == 4
    grid = _toy_exp(datasets=["r"], folds=None, solvers=["s1", "s2"],
                    data_grid={"n": [10, 100, 1000]}, solver_limits={"s2": {"n_max": 100}})
    plan = expand_experiment(grid, TOY_DATASETS, False, _never, {"s1", "s2"})
    res = plan.resolutions["r"]
    assert res.present and res.dataset == "synthetic" and "absent" in res.substitution
    ns = sorted((r.spec["solver"], r.spec["data_params"]["n"]) for r in plan.runs)
    assert ns.count(("s1", 1000)) == 2 and ("s2", 1000) not in ns  # C grid of 2, n capped
    assert all(r.spec["data_params"]["d"] == 5 for r in plan.runs)


def test_first_present_and_quick_overrides():
    exp = _toy_exp(first_present=True, quick={"folds": [1], "params": {"C": [9.0]}})
    plan = expand_experiment(exp, TOY_DATASETS, False, _always, {"s1", "s2"})
    assert {r.dataset_key for r in plan.runs} == {"a"}
    q = expand_experiment(exp, TOY_DATASETS, True, _always, {"s1", "s2"})
    assert {(r.spec["fold"], r.spec["params"]["C"]) for r in q.runs} == {(1, 9.0)}


def test_bad_experiment_files_give_clear_errors(tmp_path):
    d = tmp_path / "p"
    d.mkdir()
    (d / "experiments.yaml").write_text(
        "experiments:\n  e:\n    datasets: [a]\n    solvers: [s]\n    sovlers: [x]\n")
    with pytest.raises(ValueError, match="unknown keys.*sovlers"):
        load_paper(d)
    (d / "experiments.yaml").write_text(
        "experiments:\n  e:\n    datasets: [a]\n    solvers: [s]\n    params: {C: 1}\n")
    with pytest.raises(ValueError, match="must be a list"):
        load_paper(d)
    (d / "experiments.yaml").write_text(
        "experiments:\n  e: {datasets: [a], solvers: [s]}\n"
        "artefacts:\n  - {id: x, kind: table, renderer: r, title: t, experiments: [nope]}\n")
    with pytest.raises(ValueError, match="unknown experiments"):
        load_papers(tmp_path)
    (d / "experiments.yaml").write_text("experiments:\n  e: {datasets: [a], solvers: [s]}\n")
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
    from rankbench.report.plan import Resolution

    spec = {"experiment": "toy", "dataset": ds, "variant": None, "fold": fold, "solver": solver,
            "params": params, "seed": 0, "data_params": {}, "record_history": False,
            "eval_splits": ["vali", "test"]}
    return PlannedRun(spec, Resolution(ds, ds.upper(), True, ds), ds, True, record)


def test_value_paths_and_selection_by_validation():
    r1 = _run("a", "s", 1, {"C": 1.0}, _record("s", 1, 0.5, 0.40, 1.0))
    r2 = _run("a", "s", 1, {"C": 2.0}, _record("s", 1, 0.6, 0.30, 2.0))
    r3 = _run("a", "s", 1, {"C": 3.0}, _record("s", 1, 0.6, 0.20, 3.0))  # tie: first (C=2) wins
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
def _ctx(tmp_path, renderer, runs, values=(), solvers=("prsvm", "prsvm_plus"), datasets=("ohsumed",),
         paper_artefact="table3", experiments=("toy",), options=None):
    from rankbench.report.plan import ExperimentPlan, Resolution

    exp = _toy_exp(datasets=list(datasets), solvers=list(solvers), params={})
    res = {d: Resolution(d, d.upper(), True, d) for d in datasets}
    plan = ExperimentPlan(exp, runs, res, [])
    art = ArtefactDef("toy_art", "toy", "table", renderer, "Toy table", list(experiments),
                      paper_artefact, dict(options or {}))
    paper = Paper("toy", "Toy et al.", None, EXPERIMENTS / "toy", {"toy": exp}, [art], list(values))
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


def test_dual_sparsity_recomputed_from_coefficients_matches_brute_force(tmp_path):
    """Table (I): the share of pairs with margin >= 1, from a history coef, vs an O(p) count."""
    from rankbench.report.plan import Resolution
    from rankbench.report.renderers.lee_lin import zero_dual_share
    from rankbench.runner import load_split

    spec = {"experiment": "toy", "dataset": "synthetic", "variant": "letor_like", "fold": 1,
            "solver": "tron_tree", "params": {}, "seed": 0,
            "data_params": {"n_queries": 12, "docs_per_query": 9, "n_features": 4, "seed": 3},
            "record_history": True, "eval_splits": ["test"]}
    w = np.array([0.8, -1.5, 2.0, 0.3])
    run = PlannedRun(spec, Resolution("x", "X", True, "synthetic"), "x", True,
                     {"status": "ok", "history": [{"objective": 1.0, "coef": w.tolist()}], "extra": {}})
    share, src = zero_dual_share(run)
    data = load_split(spec, "train")
    s = data.X @ w
    n_pairs = n_ge1 = 0
    for a, b in zip(data.query_ptr[:-1], data.query_ptr[1:], strict=True):
        for i in range(a, b):
            for j in range(a, b):
                if data.y[i] > data.y[j]:
                    n_pairs += 1
                    n_ge1 += s[i] - s[j] >= 1.0
    assert src.startswith("recomputed")
    assert share == pytest.approx(n_ge1 / n_pairs)
    run.record["extra"]["zero_dual_share"] = 0.25
    assert zero_dual_share(run) == (0.25, "record")


def test_render_all_turns_a_renderer_crash_into_a_failed_entry(tmp_path, monkeypatch):
    ctx = _ctx(tmp_path, "ranksvm_time_table", [])
    from rankbench.report import context

    def boom(ctx):
        raise RuntimeError("kaput")

    monkeypatch.setitem(context._RENDERERS, "boom", boom)
    ctx.artefact.renderer = "boom"
    arts = render_all([ctx.paper], ctx.plans, tmp_path)
    assert arts[0].status == "failed" and "kaput" in arts[0].caption


def test_attach_records_matches_by_run_id(tmp_path):
    from rankbench.runner import run_id
    from rankbench.store import ResultStore

    store = ResultStore(tmp_path / "store")
    run = _run("ohsumed", "prsvm", 1, {"C": 1.0}, None)
    other = _run("ohsumed", "prsvm", 2, {"C": 1.0}, None)
    rec = _record("prsvm", 1, 0.5, 0.4, 1.0)
    rec.update({"run_id": run_id(run.spec), "experiment": "toy"})
    store.append(rec)
    from rankbench.report.plan import ExperimentPlan

    plans = {"toy": ExperimentPlan(_toy_exp(), [run, other], {}, [])}
    counts = attach_records(plans, store)
    assert counts == {"found": 1, "missing": 1, "corrupt": 0}
    assert run.ok and other.record is None


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
