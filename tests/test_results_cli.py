"""`rankbench results` as an IR user needs it: one TREC run per system read by ir_measures,
metric conventions recomputed from the stored scores (trec = pytrec_eval), significance tests
and tables with marks, standard deviations over folds, unknown experiment tags listed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))

import test_runner_toys  # noqa: E402  (registers the toy data set and solver)
from rankbench.data.ranking_data import RankingData  # noqa: E402
from rankbench.data.registry import LOADERS, register_dataset  # noqa: E402
from rankbench.estimators.registry import SOLVERS, register_solver  # noqa: E402
from rankbench.results_cli import results_main  # noqa: E402
from rankbench.runner import load_split, run_many  # noqa: E402
from rankbench.selection import compare_selected, select_per_fold  # noqa: E402
from rankbench.store import ResultStore, decode_scores, flatten_record  # noqa: E402

FOLDS = (1, 2, 3)
ALPHAS = (0.01, 1.0, 100.0)


class ToyWithoutItsBestFeature(test_runner_toys.ToyLeastSquares):
    """The toy ridge scorer with its strongest feature dropped: a clearly worse system."""

    def fit(self, X, y, qid=None):
        super().fit(X, y, qid)
        self.coef_ = self.coef_ * np.array([1.0, 1.0, 1.0, 1.0, 0.0])
        return self


if "toy_weak" not in SOLVERS:
    register_solver("toy_weak")(lambda params: ToyWithoutItsBestFeature(**params))

if "toy_same_qids" not in LOADERS:
    @register_dataset("toy_same_qids")
    def _same_qids(fold: int, split: str, seed: int = 0, variant=None) -> RankingData:
        """The toy data with the same query ids in every fold's test split."""
        d = test_runner_toys.toy_split(fold, split, seed)
        return RankingData.from_arrays(d.X, d.y, d.qid - 1000 * fold, name="toy_same_qids",
                                       synthetic=True)


def _store(root: Path, convention: str | None = None, dataset: str = "toy",
           solvers=("toy_lsq", "toy_weak")) -> Path:
    extra = {"convention": convention} if convention else {}
    specs = [{"experiment": "irx", "dataset": dataset, "fold": f, "solver": s,
              "params": {"alpha": a}, **extra} for s in solvers for a in ALPHAS for f in FOLDS]
    recs = run_many(specs, root, progress=False)
    assert all(r["status"] == "ok" for r in recs)
    return root


@pytest.fixture(scope="module")
def trec_store(tmp_path_factory):
    """Runs whose metrics are recorded in the trec convention."""
    return _store(tmp_path_factory.mktemp("trec") / "store", "trec")


@pytest.fixture(scope="module")
def letor_store(tmp_path_factory):
    """Runs recorded in the default (LETOR) convention."""
    return _store(tmp_path_factory.mktemp("letor") / "store")


def _per_query(rec, measure):
    pq = rec["per_query"]["test"]
    return dict(zip(pq["qid"], pq[measure], strict=True))


# ---------------------------------------------------------------- --export-trec
def test_export_writes_one_run_per_system_that_ir_measures_scores_as_the_store(trec_store, tmp_path,
                                                                               capsys):
    ir_measures = pytest.importorskip("ir_measures")
    out = tmp_path / "trec"
    assert results_main(["--store", str(trec_store), "--export-trec", str(out)]) == 0
    index = json.loads((out / "index.json").read_text())
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["index.json", "toy.qrels", "irx__toy__toy_lsq.run", "irx__toy__toy_weak.run"])
    records = {r["run_id"]: r for r in ResultStore(trec_store).records()}
    sel = select_per_fold(ResultStore(trec_store).to_frame())
    assert index["selected_by"] == "vali.ndcg@10"
    for system in index["systems"]:
        assert (system["experiment"], system["dataset"], system["variant"]) == ("irx", "toy", None)
        chosen = sel[sel["solver"] == system["solver"]].sort_values("fold")
        # per fold: the model select_per_fold chooses, with its parameters and run id
        assert [f["run_id"] for f in system["folds"]] == list(chosen["run_id"])
        assert [f["params"] for f in system["folds"]] == [json.loads(p) for p in chosen["params"]]
        run = list(ir_measures.read_trec_run(str(out / system["file"])))
        qrels = list(ir_measures.read_trec_qrels(str(out / system["qrels"])))
        # every test query of the three folds, ranked once: one line per test document
        n_docs = sum(load_split(records[f["run_id"]]["spec"], "test").n_docs for f in system["folds"])
        assert len(run) == n_docs == len(qrels)
        assert len({(r.query_id, r.doc_id) for r in run}) == n_docs
        tags = {ln.split()[5] for ln in (out / system["file"]).read_text().splitlines()}
        assert tags == {system["tag"]}
        values = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(
            [ir_measures.nDCG @ 10, ir_measures.AP], qrels, run)}
        stored = {}
        for f in system["folds"]:
            rec = records[f["run_id"]]
            for measure, name in (("ndcg@10", "nDCG@10"), ("map", "AP")):
                for q, v in _per_query(rec, measure).items():
                    stored[(str(q), name)] = v
        assert len(stored) == 2 * 36 and set(stored) == set(values)
        for key, v in stored.items():  # the records' trec values are trec_eval's, query by query
            assert values[key] == pytest.approx(v, abs=1e-12), key
    assert "wrote 2 TREC run file(s)" in capsys.readouterr().out


def test_export_of_letor_records_agrees_where_the_conventions_agree(letor_store, tmp_path):
    """LETOR's NDCG is not trec_eval's (exponential gain): of a LETOR record, AP is compared
    (the conventions differ only in the order of equal scores, and the toy scores have none)."""
    ir_measures = pytest.importorskip("ir_measures")
    out = tmp_path / "trec"
    assert results_main(["--store", str(letor_store), "--export-trec", str(out)]) == 0
    index = json.loads((out / "index.json").read_text())
    records = {r["run_id"]: r for r in ResultStore(letor_store).records()}
    system = index["systems"][0]
    values = {m.query_id: m.value for m in ir_measures.iter_calc(
        [ir_measures.AP], ir_measures.read_trec_qrels(str(out / system["qrels"])),
        ir_measures.read_trec_run(str(out / system["file"])))}
    ndcg = {m.query_id: m.value for m in ir_measures.iter_calc(
        [ir_measures.nDCG @ 10], ir_measures.read_trec_qrels(str(out / system["qrels"])),
        ir_measures.read_trec_run(str(out / system["file"])))}
    differ = 0
    for f in system["folds"]:
        rec = records[f["run_id"]]
        for q, v in _per_query(rec, "map").items():
            assert values[str(q)] == pytest.approx(v, abs=1e-12)
        differ += sum(abs(ndcg[str(q)] - v) > 1e-9 for q, v in _per_query(rec, "ndcg@10").items())
    assert differ > 0  # LETOR's NDCG@10 is another number: the test compares like with like


def test_export_refuses_two_folds_sharing_a_test_query(tmp_path, capsys):
    store = _store(tmp_path / "store", dataset="toy_same_qids", solvers=("toy_lsq",))
    out = tmp_path / "trec"
    assert results_main(["--store", str(store), "--export-trec", str(out)]) == 1
    err = capsys.readouterr().err
    assert "folds 1 and 2 share test query" in err and "--fold K" in err
    assert not list(out.glob("*.run"))
    # one fold at a time is fine
    assert results_main(["--store", str(store), "--fold", "2", "--export-trec", str(out)]) == 0
    assert [p.name for p in out.glob("*.run")] == ["irx__toy_same_qids__toy_lsq.run"]


def test_export_without_the_data_says_once_per_data_set_where_it_looked(tmp_path, monkeypatch,
                                                                          capsys):
    """Records of a catalogued set whose files are absent: one line per data set (not per run),
    naming the option --data-root (not the Python keyword root=) and where it looked."""
    from rankbench.record import empty_record
    from rankbench.spec import RunSpec
    from rankbench.store import encode_scores

    store = ResultStore(tmp_path / "store")
    for fold in (1, 2, 3, 4, 5):
        for C in (1e-4, 1e-2):
            rec = empty_record(RunSpec.create(experiment="x", dataset="ohsumed", fold=fold,
                                              solver="prsvm_plus", params={"C": C}))
            rec["metrics"] = {"vali": {"ndcg@10": C}, "test": {"ndcg@10": 0.5}}
            rec["scores"] = {"test": encode_scores(np.zeros(3))}
            store.append(rec)
    monkeypatch.delenv("RANKBENCH_DATA", raising=False)
    out = tmp_path / "trec"
    assert results_main(["--store", str(store.root), "--export-trec", str(out)]) == 1
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "not exported" in ln]
    assert len(lines) == 1, lines
    assert "ohsumed: 5 selected run(s)" in lines[0]
    assert "--data-root DIR" in lines[0] and "root=" not in lines[0]
    assert "no data root is set" in lines[0] and "OHSUMED/QueryLevelNorm" in lines[0]
    assert results_main(["--store", str(store.root), "--export-trec", str(out),
                         "--data-root", str(tmp_path / "nowhere")]) == 1
    (line,) = [ln for ln in capsys.readouterr().err.splitlines() if "not exported" in ln]
    assert f"looked for {tmp_path / 'nowhere'}/OHSUMED/QueryLevelNorm" in line
    assert not out.exists() or not list(out.iterdir())


# ---------------------------------------------------------------- conventions
def test_results_convention_trec_recomputes_pytrec_evals_values(letor_store, trec_store, capsys):
    """`rankbench results --convention trec` on LETOR records: every test metric recomputed from
    the stored scores; per query equal to pytrec_eval on the exported run, and to the records
    of the same runs trained in the trec convention."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from rankbench.stored_scores import recompute_convention
    from rankbench.trec import qrels_lines, run_lines

    letor = ResultStore(letor_store).records()
    trec = {(r["solver"], r["fold"], r["params"]["alpha"]): r for r in ResultStore(trec_store).records()}
    again = recompute_convention(letor, "trec", None)
    assert len(again) == len(letor)
    for old, new in zip(letor, again, strict=True):
        assert new["convention"] == "trec" and flatten_record(new)["convention"] == "trec"
        data = load_split(old["spec"], "test")
        scores = decode_scores(old["scores"]["test"])
        run, qrels = {}, {}
        for ln in run_lines(data, scores):
            q, _, d, _, s, _ = ln.split()
            run.setdefault(q, {})[d] = float(s)
        for ln in qrels_lines(data):
            q, _, d, y = ln.split()
            qrels.setdefault(q, {})[d] = int(y)
        ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "map", "P_5"}).evaluate(run)
        for measure, key in (("ndcg@10", "ndcg_cut_10"), ("map", "map")):
            for q, v in _per_query(new, measure).items():
                assert v == pytest.approx(ref[str(q)][key], abs=1e-12)
        assert new["metrics"]["test"]["p@5"] == pytest.approx(
            np.mean([ref[q]["P_5"] for q in ref]), abs=1e-12)
        twin = trec[(old["solver"], old["fold"], old["params"]["alpha"])]
        assert _per_query(new, "ndcg@10") == pytest.approx(_per_query(twin, "ndcg@10"), abs=1e-9)
        assert new["metrics"]["vali"] == old["metrics"]["vali"]  # what selection reads: as recorded
    # the command shows the recomputed means
    assert results_main(["--store", str(letor_store), "--convention", "trec", "--format", "json",
                         "-c", "fold,solver,params.alpha,test.ndcg@10"]) == 0
    rows = json.loads(capsys.readouterr().out)
    by_key = {(r["solver"], r["fold"], r["params"]["alpha"]): r for r in again}
    for row in rows:
        want = by_key[(row["solver"], row["fold"], row["params.alpha"])]["metrics"]["test"]["ndcg@10"]
        assert row["test.ndcg@10"] == pytest.approx(want, abs=1e-9)  # JSON keeps 10 digits


def test_metrics_convention_is_a_config_option_recorded_in_the_run():
    from hydra import compose

    from rankbench.config import ConfigError
    from rankbench.plan import hydra_context, prepare

    with hydra_context():
        base = ["dataset=synthetic", "solver=prsvm_plus", "protocol.folds=[1]"]
        _, (letor,) = prepare(compose(config_name="config", overrides=base))
        _, (trec,) = prepare(compose(config_name="config", overrides=[*base, "metrics.convention=trec"]))
        with pytest.raises(ConfigError, match="metrics.convention must be one of"):
            prepare(compose(config_name="config", overrides=[*base, "metrics.convention=ndcg"]))
    assert letor.convention == "letor" and "convention" not in letor.hashed()  # run ids as before
    assert trec.hashed()["convention"] == "trec" and trec.run_id != letor.run_id
    assert {k: v for k, v in trec.hashed().items() if k != "convention"} == letor.hashed()


# ---------------------------------------------------------------- --compare and its tables
def test_compare_any_measure_with_each_test_and_correction(letor_store, tmp_path, capsys):
    md, tex = tmp_path / "t.md", tmp_path / "t.tex"
    assert results_main(["--store", str(letor_store), "--compare", "--query-metric", "mauc",
                         "--test", "wilcoxon", "--correction", "bonferroni", "--resamples", "2000",
                         "--seed", "3", "--markdown", str(md), "--latex", str(tex)]) == 0
    out = capsys.readouterr().out
    assert "Wilcoxon signed-rank test (bootstrap intervals of 2000 resamples, seed 3)" in out
    assert "Bonferroni-corrected" in out and "p_bonferroni" in out
    records = ResultStore(letor_store).records()
    rows = compare_selected(records, query_metric="mauc", test="wilcoxon", correction="bonferroni",
                            n_resamples=2000, seed=3)
    (row,) = rows.to_dict("records")
    assert (row["solver_a"], row["solver_b"]) == ("toy_lsq", "toy_weak")
    assert row["difference"] > 0 and row["p_bonferroni"] < 0.05  # the strong scorer wins
    # the table: the mean per system, the winner marked with the loser's letter, best in bold
    text = md.read_text()
    means = {s: np.mean([v for r in records for v in _per_query(r, "mauc").values()
                         if r["solver"] == s and r["run_id"] in set(select_per_fold(
                             ResultStore(letor_store).to_frame())["run_id"])])
             for s in ("toy_lsq", "toy_weak")}
    assert f"| a: toy_lsq | **{means['toy_lsq']:.4f}**<sup>b</sup> |" in text
    assert f"| b: toy_weak | {means['toy_weak']:.4f} |" in text
    assert "level 0.05" in text and "Bonferroni-corrected" in text
    latex = tex.read_text()
    assert rf"a: toy\_lsq & \textbf{{{means['toy_lsq']:.4f}}}$^{{b}}$ \\" in latex
    assert r"\begin{tabular}{lc}" in latex and "toy_weak" not in latex  # escaped
    # the randomization test prints its resamples and seed; every test is accepted
    for test in ("randomization", "t"):
        assert results_main(["--store", str(letor_store), "--compare", "--test", test,
                             "--correction", "none", "--baseline", "toy_weak"]) == 0
        out = capsys.readouterr().out
        assert "uncorrected" in out


def test_compare_names_the_stored_measures_when_one_is_unknown(letor_store, capsys):
    assert results_main(["--store", str(letor_store), "--compare", "--query-metric", "err@10"]) == 2
    err = capsys.readouterr().err
    assert "no per-query test 'err@10'" in err and "'mauc'" in err and "'ndcg@10'" in err


def test_randomization_compare_prints_resamples_and_seed(letor_store, capsys):
    assert results_main(["--store", str(letor_store), "--compare"]) == 0
    assert ("two-sided paired randomization test (10000 resamples, seed 0), p-values "
            "Holm-corrected" in capsys.readouterr().out)


def test_significance_table_marks_by_hand():
    from rankbench.results_cli import significance_table

    groups = {("e", "d1", None): {"x": {1: 0.5, 2: 0.7}, "y": {1: 0.1, 2: 0.3}, "z": {1: 0.2}},
              ("e", "d2", "v"): {"x": {3: 0.4}, "y": {3: 0.9}}}
    comparisons = pd.DataFrame([
        {"experiment": "e", "dataset": "d1", "variant": None, "solver_a": "x", "solver_b": "y",
         "difference": 0.4, "p_holm": 0.01},
        {"experiment": "e", "dataset": "d1", "variant": None, "solver_a": "x", "solver_b": "z",
         "difference": 0.3, "p_holm": 0.2},          # not significant: no mark
        {"experiment": "e", "dataset": "d2", "variant": "v", "solver_a": "x", "solver_b": "y",
         "difference": -0.5, "p_holm": 0.05}])       # y better, at exactly alpha: marked
    text = significance_table(groups, comparisons, "ndcg@10", "holm", 0.05, "note", "markdown")
    assert text.splitlines()[:5] == [
        "| system | d1 | d2 (v) |", "|---|---|---|",
        "| a: x | **0.6000**<sup>b</sup> | 0.4000 |",
        "| b: y | 0.2000 | **0.9000**<sup>a</sup> |",
        "| c: z | 0.2000 | — |"]


# ---------------------------------------------------------------- tables of means, tags
def test_tables_of_means_show_the_standard_deviation_over_folds(letor_store, capsys):
    assert results_main(["--store", str(letor_store), "--mean", "--format", "csv"]) == 0
    frame = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    recs = ResultStore(letor_store).records()
    for row in frame.to_dict("records"):
        vals = [r["metrics"]["test"]["ndcg@10"] for r in recs if r["solver"] == row["solver"]
                and json.dumps(r["params"], sort_keys=True) == row["params"]]
        assert len(vals) == 3
        assert row["test.ndcg@10.sd"] == pytest.approx(np.std(vals, ddof=1), rel=1e-9)
        assert row["test.ndcg@10"] == pytest.approx(np.mean(vals), rel=1e-12)
    assert results_main(["--store", str(letor_store), "--select"]) == 0
    out = capsys.readouterr().out
    assert "selected models, mean and standard deviation over folds:" in out
    assert "test.ndcg@10.sd" in out.split("selected models")[1]


def test_an_unknown_experiment_lists_the_tags_present(letor_store, capsys):
    assert results_main(["--store", str(letor_store), "-e", "nosuch"]) == 0
    err = capsys.readouterr().err
    assert "no experiment tag nosuch there. Tags present: irx" in err
    # an experiment config's name stands for the tag its runs are stored under
    assert results_main(["--store", str(letor_store), "-e", "chapelle2010/table3"]) == 0
    err = capsys.readouterr().err
    assert "the experiment config chapelle2010/table3 stores its runs under the tag " \
           "chapelle_fixed_c" in err
    assert "Tags present: irx" in err
