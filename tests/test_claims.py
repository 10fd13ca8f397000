"""The claims ledger: every claim of each paper has a rule, every verdict is computed from records
(never typed), the rules turn when the records do, and the committed ledgers agree with the
committed store."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
import pytest

from rankbench.config import DataUse
from rankbench.plan import ExperimentPlan, conf_dir
from rankbench.report.claim_rules import CLAIM_RULES
from rankbench.report.ledger import CLAIM_COLUMNS, VERDICTS, ClaimContext, evaluate, load_claims
from rankbench.report.paper import Paper, load_paper
from rankbench.report.records import PlannedRun

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = ROOT / "experiments"
PAPERS_DIR = ROOT.parent / "shared" / "papers"
PAPERS = ("chapelle2010", "lee_lin2014", "sculley2009", "welleck2016")


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


# ------------------------------------------------------------------ the ledgers as data
@pytest.mark.parametrize("key", PAPERS)
def test_every_claim_names_a_registered_rule_and_real_experiments(key):
    paper = load_paper(EXPERIMENTS / key)
    assert len(paper.claims) >= 9, key
    for c in paper.claims:
        assert c["rule"] in CLAIM_RULES, (key, c["id"], c["rule"])
        for exp in c["experiments"]:
            assert (conf_dir() / "experiment" / f"{exp}.yaml").is_file(), (key, c["id"], exp)
        # every experiment an arm reads is declared in the row's experiments column
        arms = [v for v in c["args"].values() if isinstance(v, dict) and "exp" in v]
        arms += [v for v in c["args"].values() if isinstance(v, dict) and isinstance(v.get("exp"), str)]
        for a in arms:
            assert a["exp"] in c["experiments"] or a["exp"].split("/")[0] == key, (key, c["id"], a["exp"])


@pytest.mark.parametrize("key", PAPERS)
def test_every_quote_is_the_papers_own_words(key):
    paper = load_paper(EXPERIMENTS / key)
    path = PAPERS_DIR / (paper.file or "")
    if not path.is_file():
        pytest.skip(f"paper text {paper.file} not present under {PAPERS_DIR}")
    text = _squash(path.read_text())
    quoted = [c for c in paper.claims if c["quote"].strip()]
    assert quoted, key
    for c in quoted:
        assert _squash(c["quote"]) in text, (key, c["id"], c["quote"])


def test_a_ledger_with_a_typed_verdict_or_a_bad_row_is_refused(tmp_path):
    head = ",".join(CLAIM_COLUMNS)
    row = 'C1,Sect. 1,a claim,,numeric,,needs_program,"{program: x}",'
    (tmp_path / "claims.csv").write_text(head + ",verdict\n" + row + ",reproduced\n")
    with pytest.raises(ValueError, match=r"claims.csv:1: .*never typed"):
        load_claims(tmp_path)
    for bad, msg in ((row.replace("numeric", "loud"), r"claims.csv:2: kind"),
                     (row.replace('"{program: x}"', '"[1, 2]"'), r"claims.csv:2: args must be a mapping"),
                     (row.replace('"{program: x}"', '"{a: [}"'), r"claims.csv:2: args is not a YAML"),
                     (row.replace("a claim", ""), r"claims.csv:2: empty 'claim'"),
                     (row + "\n" + row, r"claims.csv:3: claim id 'C1' used twice")):
        (tmp_path / "claims.csv").write_text(head + "\n" + bad + "\n")
        with pytest.raises(ValueError, match=msg):
            load_claims(tmp_path)
    (tmp_path / "claims.csv").write_text(head + "\n" + row.replace('"{program: x}"', '"{C: 1e-4}"') + "\n")
    assert load_claims(tmp_path)[0]["args"] == {"C": 1e-4}  # YAML 1.1's string 1e-4 read as a number


# ------------------------------------------------------------------ rules on constructed records
def _record(fold, per_q, wall=1.0, converged=True, **metrics):
    vals = np.asarray(per_q, dtype=float)
    return {"run_id": f"r{abs(hash((fold, tuple(per_q), wall))):x}", "status": "ok",
            "experiment": "toy_tag",
            "metrics": {"test": {"ndcg@10": float(vals.mean()), **metrics}},
            "train": {"wall_s": wall, "converged": converged},
            "per_query": {"test": {"qid": list(range(len(vals))), "ndcg@10": list(vals)}},
            "extra": {}, "history": []}


def _plan(name, runs, present=True, substitution=None, solvers=("a", "b"), tier="default"):
    res = {"ohsumed": DataUse("ohsumed", "OHSUMED", present, "ohsumed", substitution=substitution)}
    plan = ExperimentPlan(name=name, tag="toy_tag", report={}, jobs=[], datasets=["ohsumed"],
                          solvers=list(solvers), resolutions=res, runs=list(runs))
    plan.tier = tier
    return plan


def _run(solver, fold, record, params=None):
    spec = {"experiment": "toy_tag", "dataset": "ohsumed", "fold": fold, "solver": solver,
            "params": dict(params or {"C": 1.0}), "seed": 0, "data_params": {}}
    return PlannedRun(spec, DataUse("ohsumed", "OHSUMED", True, "ohsumed"), "ohsumed", record)


def _claim(rule, args, values=()):
    paper = Paper("toy", "Toy et al.", None, EXPERIMENTS / "toy", list(values),
                  [{"id": "T1", "section": "Sect. 1", "claim": "c", "quote": "", "kind": "numeric",
                    "experiments": ["toy/x"], "rule": rule, "args": args, "note": "",
                    "where": "claims.csv:2"}])
    return paper


def _verdict(paper, plans):
    (res,) = evaluate(paper, plans)
    return res.verdict


RNG = np.random.default_rng(0)
BASE = RNG.uniform(0.2, 0.7, size=(5, 30))


def test_a_published_number_is_reproduced_only_when_ours_is_close():
    value = {"artefact": "t3", "dataset": "OHSUMED", "method": "M", "solver": "a",
             "metric": "test.ndcg@10", "value": 0.454, "approximate": False, "reference": "Table 3",
             "note": ""}
    args = {"value": {"artefact": "t3", "dataset": "OHSUMED", "solver": "a", "metric": "test.ndcg@10"},
            "ours": {"exp": "toy/x", "solver": "a", "dataset": "ohsumed"}}
    paper = _claim("metric_value", args, [value])
    for shift, want in ((0.0, "reproduced"), (0.03, "not reproduced")):
        q = BASE - BASE.mean() + 0.454 + shift
        runs = [_run("a", f + 1, _record(f + 1, q[f])) for f in range(5)]
        v = _verdict(paper, {"toy/x": _plan("toy/x", runs)})
        assert v.status == want, (shift, v)
        assert len(v.runs) == 5 and "0.454" in v.measured
    # the same numbers on a stand-in: reported, never compared
    v = _verdict(paper, {"toy/x": _plan("toy/x", runs, substitution="synthetic stand-in")})
    assert v.status == "stand-in" and "not compared" in v.measured
    # absent data: not testable; a run not stored yet: pending
    assert _verdict(paper, {"toy/x": _plan("toy/x", runs, present=False)}).status == "not testable here"
    runs[2] = _run("a", 3, None)
    v = _verdict(paper, {"toy/x": _plan("toy/x", runs)})
    assert v.status == "pending" and "4 of 5" in v.why


def test_a_paired_comparison_turns_with_the_per_query_values():
    args = {"a": {"exp": "toy/x", "solver": "a", "dataset": "ohsumed"},
            "b": {"exp": "toy/x", "solver": "b", "dataset": "ohsumed"}, "expect": "higher"}
    paper = _claim("paired_comparison", args)
    for lift, want in ((0.05, "reproduced"), (0.0, "not reproduced"), (-0.05, "not reproduced")):
        runs = [_run("b", f + 1, _record(f + 1, BASE[f])) for f in range(5)]
        runs += [_run("a", f + 1, _record(f + 1, BASE[f] + lift + RNG.normal(0, 0.01, 30)))
                 for f in range(5)]
        v = _verdict(paper, {"toy/x": _plan("toy/x", runs)})
        assert v.status == want, (lift, v)
        assert "paired randomization p" in v.test and "150 queries" in v.test
    paper = _claim("paired_comparison", {**args, "expect": "indistinguishable"})
    assert _verdict(paper, {"toy/x": _plan("toy/x", runs)}).status == "not reproduced"
    # 'almost the same': within the margin and not significantly different
    runs = [_run("b", f + 1, _record(f + 1, BASE[f])) for f in range(5)]
    runs += [_run("a", f + 1, _record(f + 1, BASE[f] + RNG.normal(0.002, 0.05, 30))) for f in range(5)]
    for margin, want in ((0.02, "reproduced"), (0.0001, "not reproduced")):
        paper = _claim("paired_comparison", {**args, "expect": "similar", "margin": margin})
        assert _verdict(paper, {"toy/x": _plan("toy/x", runs)}).status == want, margin
    # a label with an unquoted comma splits into a key: the arm says so
    bad = {**args, "a": {**args["a"], "our solver)": None}}
    v = _verdict(_claim("paired_comparison", bad), {"toy/x": _plan("toy/x", runs)})
    assert v.status == "rule failed" and "unknown keys" in v.why


def test_a_time_ratio_against_a_capped_run_is_only_a_lower_bound():
    args = {"fast": {"exp": "toy/x", "solver": "a", "dataset": "ohsumed"},
            "slow": {"exp": "toy/x", "solver": "b", "dataset": "ohsumed"}, "at_least": 100}
    paper = _claim("time_ratio", args)
    fast = [_run("a", 1, _record(1, BASE[0], wall=0.01))]
    assert _verdict(paper, {"toy/x": _plan("toy/x", fast + [_run("b", 1, _record(1, BASE[0], wall=5.0))])}
                    ).status == "reproduced"
    assert _verdict(paper, {"toy/x": _plan("toy/x", fast + [_run("b", 1, _record(1, BASE[0], wall=0.5))])}
                    ).status == "not reproduced"
    capped = _run("b", 1, _record(1, BASE[0], wall=0.5, converged=False))
    v = _verdict(paper, {"toy/x": _plan("toy/x", fast + [capped])})
    assert v.status == "not testable here" and "lower bound" in v.measured


def test_roc_area_against_the_binary_svm_counts_the_baseline_runs_that_did_not_converge():
    args = {"problems": [{"exp": "toy/x", "dataset": "ohsumed"}], "rankers": ["a"], "svm": "b"}
    paper = _claim("beats_binary_svm", args)
    runs = [_run("a", f + 1, _record(f + 1, BASE[f], auc=0.70 + 0.01 * f)) for f in range(5)]
    svm = [_run("b", f + 1, _record(f + 1, BASE[f] + 0.1, converged=f not in (0, 3), auc=0.69 + 0.01 * f))
           for f in range(5)]
    v = _verdict(paper, {"toy/x": _plan("toy/x", runs + svm)})
    assert v.status == "reproduced" and "a +0.0100" in v.measured
    assert "class-weighted SVM ROC area 0.7100 (2 of 5 runs not converged: folds 1, 4)" in v.measured
    assert "2 of the 5 class-weighted SVM runs read did not converge" in v.why
    svm = [_run("b", f + 1, _record(f + 1, BASE[f] + 0.1, auc=0.69 + 0.01 * f)) for f in range(5)]
    v = _verdict(paper, {"toy/x": _plan("toy/x", runs + svm)})
    assert "not converged" not in v.measured and "converge" not in v.why


def test_a_rule_that_raises_is_a_failed_row_not_a_crash():
    paper = _claim("metric_value", {"value": {"artefact": "nope"}, "ours": {}})
    v = _verdict(paper, {})
    assert v.status == "rule failed" and "claims.csv:2" in v.why


def test_published_only_rules_read_the_transcribed_letor_tables():
    paper = Paper("chapelle2010", "C&K", None, EXPERIMENTS / "chapelle2010", [], [])
    cx = ClaimContext(paper, {"id": "x"}, {})
    v = CLAIM_RULES.get("published_rank")(cx, algorithm="RankSVM", dataset="OHSUMED", within=3)
    assert v.status == "reproduced" and "RankSVM 0.4140 ranks 2 of 8" in v.measured and v.held is True
    v = CLAIM_RULES.get("published_rank")(cx, algorithm="SmoothRank", dataset="OHSUMED", group="later")
    assert v.status == "not reproduced" and "ranks 4 of 4" in v.measured and v.held is False


def test_an_absent_program_names_a_solver_only_when_the_claim_gives_one():
    paper = Paper("sculley2009", "Sculley", None, EXPERIMENTS / "sculley2009", [], [])
    rule = CLAIM_RULES.get("needs_program")
    cx = ClaimContext(paper, {"id": "x"}, {})
    v = rule(cx, program="a cross-product feature map (x -> x x^T) for SPD")
    assert v.status == "not testable here"
    assert v.why == ("a cross-product feature map (x -> x x^T) for SPD is not available here: "
                     "neither rankbench nor any of the peer programs implements it")
    v = rule(cx, program="SVM-perf (Joachims' svm_perf)", solver="svm_perf")
    assert v.status == "not testable here" and "no solver 'svm_perf' registered" in v.why
    v = rule(cx, program="PRSVM", solver="prsvm")  # registered: the claim waits for a config
    assert v.status == "pending" and "solver prsvm exists" in v.why


# ------------------------------------------------------------------ the discussion from the ledger
def test_the_discussion_states_every_claim_that_does_not_hold_with_its_numbers(tmp_path):
    from rankbench.report.discussion import fill

    (tmp_path / "p").mkdir()
    cols = ["id", "section", "claim", "verdict", "measured", "test", "why", "records", "rule", "run_ids",
            "held", "not_held_on_stand_in"]
    rows = [["C1", "Table 3", "A beats B", "not reproduced", "A 0.41 vs B 0.43", "p = 0.01", "", "", "r", "",
             "no", ""],
            ["C2", "Sect. 2", "B is fast", "reproduced", "3 times", "", "", "", "r", "", "yes", ""],
            ["C3", "Table 3", "X", "not testable here", "", "", "TD2004 not present", "", "r", "", "", ""],
            ["C4", "Table 3", "Y", "not testable here", "", "", "TD2004 not present", "", "r", "", "", ""],
            ["C5", "Fig. 3", "Z is n^2", "stand-in", "n^2.4", "", "RCV1 absent: stand-in", "", "r", "",
             "yes", ""],
            ["C6", "Fig. 3", "Z and W alike", "stand-in", "n^4.0 vs n^1.3", "exponents within 0.3",
             "RCV1 absent: stand-in", "", "r", "", "no", "n^4.0 vs n^1.3"],
            ["C7", "Sect. 5", "R beats S", "not reproduced", "MQ2008: +0.01; RCV1: -0.02", "", "", "", "r",
             "", "no", "RCV1: -0.02"]]
    with (tmp_path / "p" / "p_claims.csv").open("w", newline="") as fh:
        csv.writer(fh).writerows([cols, *rows])
    text, problems = fill("{{ claims p }}", tmp_path)
    assert problems == []
    assert "7 claims, 1 reproduced, 2 not reproduced, 2 stand-in, 2 not testable here, 0 pending" in text
    assert "**C1** (Table 3) A beats B. Measured: A 0.41 vs B 0.43. Test: p = 0.01." in text
    assert "Not testable here: C3, C4 (TD2004 not present)." in text and "C2" not in text
    # a stand-in whose effect failed there is stated with its numbers, not by id only
    assert ("- **C6** (Fig. 3) Z and W alike. Measured: n^4.0 vs n^1.3. Test: exponents within 0.3. "
            "Stand-in: RCV1 absent: stand-in.") in text
    assert ("- **C7** (Sect. 5) R beats S, its stand-in part (verdict of the whole claim: not "
            "reproduced). Measured: RCV1: -0.02.") in text
    assert "On a stand-in for absent data (holding there, or only reported): C5 (RCV1 absent" in text
    assert "C5" not in text.split("Does not hold on the stand-in")[1].split("On a stand-in")[0]
    _, problems = fill("{{ claims nope }}", tmp_path)
    assert "no ledger" in problems[0]
    # a ledger written before the held columns existed is refused, naming the file
    with (tmp_path / "p" / "p_claims.csv").open("w", newline="") as fh:
        csv.writer(fh).writerows([cols[:-2], *(r[:-2] for r in rows)])
    _, problems = fill("{{ claims p }}", tmp_path)
    assert "p_claims.csv:1: no column(s) ['held', 'not_held_on_stand_in']" in problems[0]


def test_a_sentence_about_a_claims_test_appears_only_once_the_claim_has_a_verdict(tmp_path):
    from rankbench.report.discussion import fill
    from rankbench.report.ledger import LEDGER_COLUMNS, LEDGER_CSV_EXTRA

    (tmp_path / "p").mkdir()
    sentence = "{{ claim p W23 | A paired test per k gives\n  the verdict per k ({verdict}). }}"
    for verdict, why, want in (
            ("not reproduced", "", "A paired test per k gives the verdict per k (not reproduced)."),
            ("stand-in", "RCV1 absent", "A paired test per k gives the verdict per k (stand-in)."),
            ("pending", "MQ2008: no per-query p@1 in the records",
             "Claim W23 has no verdict yet: it is pending: MQ2008: no per-query p@1 in the records."),
            ("not testable here", "Yahoo! V1 not present",
             "Claim W23 has no verdict yet: it is not testable here: Yahoo! V1 not present.")):
        row = {c: "" for c in (*LEDGER_COLUMNS, *LEDGER_CSV_EXTRA)}
        row.update(id="W23", section="Fig. 2", claim="c", verdict=verdict, why=why)
        with (tmp_path / "p" / "p_claims.csv").open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(row))
            w.writeheader()
            w.writerow(row)
        text, problems = fill(f"Fig. 2. {sentence} Next.", tmp_path)
        assert problems == [] and text == f"Fig. 2. {want} Next.", verdict
    _, problems = fill("{{ claim p W99 | x }}", tmp_path)
    assert "no claim 'W99'" in problems[0]
    # the committed template says Fig. 2 has a test per k only through claim W23's verdict
    template = (EXPERIMENTS / "discussion.md").read_text()
    outside = re.sub(r"\{\{\s*claim welleck2016 W23 \|.*?\}\}", "", template, flags=re.S)
    assert "{{ claim welleck2016 W23 |" in template and "test per k" not in outside


def test_the_template_labels_the_cause_of_the_fold1_gap_to_letor_as_our_inference():
    """The per-fold SVMLight# tables call the cause of the fold-1 gap to LETOR our inference
    (LETOR's run cannot be rebuilt); the discussion must not state it as a measured fact."""
    template = _squash((EXPERIMENTS / "discussion.md").read_text())
    causal = [s for s in re.split(r"(?<=\.)\s+(?=[A-Z(])", template)
              if "gap to LETOR" in s and re.search(r"comes? from|caused by|due to|explain", s)]
    assert causal and all("our inference" in s for s in causal), causal


def test_a_stand_in_verdict_keeps_whether_the_effect_held_through_the_ledger(tmp_path):
    """conclude records held / not held; merge keeps each failed stand-in part with its name;
    the ledger CSV carries both, and the discussion states a failed stand-in with its numbers."""
    from rankbench.report.claim_rules._common import merge
    from rankbench.report.discussion import fill
    from rankbench.report.ledger import Verdict, write_ledger

    args = {"a": {"exp": "toy/x", "solver": "a", "dataset": "ohsumed"},
            "b": {"exp": "toy/x", "solver": "b", "dataset": "ohsumed"}, "expect": "higher"}
    paper = _claim("paired_comparison", args)
    verdicts = {}
    for lift in (0.05, -0.05):
        runs = [_run("b", f + 1, _record(f + 1, BASE[f])) for f in range(5)]
        runs += [_run("a", f + 1, _record(f + 1, BASE[f] + lift + RNG.normal(0, 0.01, 30)))
                 for f in range(5)]
        plans = {"toy/x": _plan("toy/x", runs, substitution="synthetic stand-in")}
        (res,) = evaluate(paper, plans)
        verdicts[lift] = res
    held, failed = verdicts[0.05].verdict, verdicts[-0.05].verdict
    assert held.status == failed.status == "stand-in"
    assert held.held is True and held.not_held_on_stand_in == []
    assert failed.held is False and failed.not_held_on_stand_in == [failed.measured]
    assert "does not hold" in failed.measured
    # a number only reported on a stand-in: nothing compared, nothing said to hold
    value = {"artefact": "t3", "dataset": "OHSUMED", "method": "M", "solver": "a",
             "metric": "test.ndcg@10", "value": 0.454, "approximate": False, "reference": "Table 3",
             "note": ""}
    mv = _claim("metric_value", {"value": {"artefact": "t3", "dataset": "OHSUMED", "solver": "a",
                                           "metric": "test.ndcg@10"},
                                 "ours": {"exp": "toy/x", "solver": "a", "dataset": "ohsumed"}}, [value])
    v = _verdict(mv, plans)
    assert v.status == "stand-in" and v.held is None and "holds" not in v.measured
    # over several data sets: the real part fails, the stand-in part fails, each kept by name
    whole = merge([("OHSUMED", Verdict("not reproduced", measured="-0.01", held=False)),
                   ("RCV1", failed), ("MQ2008", held)])
    assert whole.status == "not reproduced" and whole.held is False
    assert whole.not_held_on_stand_in == [f"RCV1: {failed.measured}"]
    assert merge([("A", held), ("B", held)]).held is True
    # the ledger CSV carries the flag, and the discussion states the failed stand-in
    write_ledger(paper, [verdicts[-0.05]], tmp_path)
    with (tmp_path / "toy" / "toy_claims.csv").open(newline="") as fh:
        (row,) = csv.DictReader(fh)
    assert row["held"] == "no" and row["not_held_on_stand_in"] == failed.measured
    text, problems = fill("{{ claims toy }}", tmp_path)
    assert problems == [] and f"- **T1** (Sect. 1) c. Measured: {failed.measured}. Test: " in text


def test_the_committed_discussion_states_every_failed_claim_of_the_committed_ledgers():
    discussion = (ROOT / "results" / "DISCUSSION.md").read_text()
    for key in PAPERS:
        path = ROOT / "results" / key / f"{key}_claims.csv"
        if not path.is_file():
            pytest.skip(f"no committed ledger {path}")
        with path.open(newline="") as fh:
            rows = list(csv.DictReader(fh))
        assert rows and all(r["verdict"] in VERDICTS for r in rows), key
        for r in rows:
            if r["verdict"] == "not reproduced":
                assert f"**{r['id']}** ({r['section']}) {r['claim']}. Measured: {r['measured']}" in discussion


# ------------------------------------------------------------------ the committed ledgers = the records
@pytest.mark.slow
@pytest.mark.realdata
def test_the_committed_ledgers_are_what_the_rules_compute_from_the_committed_store(data_root):
    """Planned as the report plans them, the committed store gives exactly the committed verdicts,
    measured numbers and run ids; every cited run is in the store with status ok."""
    from rankbench.report import attach_records
    from rankbench.report.paper import load_papers
    from rankbench.reproduce import plan_all, select_names
    from rankbench.store import ResultStore

    store = ResultStore(ROOT / "results" / "store")
    names = select_names(False, None)
    plans, _ = plan_all(names, False, [f"store={store.root}", f"data_root={data_root}"])
    attach_records(plans, store)
    ok_ids = {r["run_id"] for r in store.scan()[0] if r.get("status") == "ok"}
    for key, paper in load_papers(EXPERIMENTS).items():
        if not paper.claims:
            continue
        with (ROOT / "results" / key / f"{key}_claims.csv").open(newline="") as fh:
            committed = {r["id"]: r for r in csv.DictReader(fh)}
        results = evaluate(paper, plans)
        assert [r.claim["id"] for r in results] == list(committed), key
        for r in results:
            row, old = r.row(), committed[r.claim["id"]]
            assert r.verdict.status in VERDICTS, (key, row["id"], r.verdict.why)
            assert (row["verdict"], row["measured"], row["test"], row["run_ids"]) == (
                old["verdict"], old["measured"], old["test"], old["run_ids"]), (key, row["id"])
            assert set(r.verdict.runs) <= ok_ids, (key, row["id"])


# ------------------------------------------------------------------ honest figures and tables
def test_the_leaderboard_ranks_an_objective_once_and_a_non_converged_solver_last():
    from rankbench.report.renderers.leaderboard import rank_rows

    def run(solver, converged=True, C=1.0):
        rec = _record(1, BASE[0], converged=converged)
        return _run(solver, 1, rec, {"C": C, "loss": "squared_hinge"})

    chosen = {("ohsumed", "sgd_queries"): [run("sgd_queries", converged=False)],
              ("ohsumed", "prsvm_plus"): [run("prsvm_plus")], ("ohsumed", "newton_tree"): [run("newton_tree")],
              ("ohsumed", "spd_pegasos"): [run("spd_pegasos")]}
    rows = [{"solver": "sgd_queries", "test ndcg@10": 0.46}, {"solver": "newton_tree", "test ndcg@10": 0.446},
            {"solver": "spd_pegasos", "test ndcg@10": 0.44}, {"solver": "prsvm_plus", "test ndcg@10": 0.43}]
    rank_rows(rows, chosen, "ohsumed", {"prsvm_plus": 7, "newton_tree": 5, "spd_pegasos": 5, "sgd_queries": 5})
    # PRSVM+ (the widest C grid) leads its objective; Newton-tree shares its rank beside it
    assert [(r["solver"], r["rank"]) for r in rows] == [
        ("spd_pegasos", 1), ("prsvm_plus", 2), ("newton_tree", 2), ("sgd_queries", "n.c.")]
    assert rows[1]["objective"] == rows[2]["objective"] == "RankSVM, squared_hinge"


def test_a_stand_in_is_named_in_the_title_with_what_it_stands_for():
    from rankbench.report.labels import data_title

    assert data_title(DataUse("ohsumed", "OHSUMED", True, "ohsumed")) == "OHSUMED"
    real = DataUse("hp2003", "HP2003", True, "ohsumed", "QueryLevelNorm", substitution="HP2003 absent")
    assert data_title(real) == "OHSUMED, standing in for HP2003"
    synth = DataUse("rcv1_ccat", "RCV1 CCAT", True, "synthetic", "rcv1_like", substitution="absent")
    assert data_title(synth) == "synthetic stand-in for RCV1 CCAT"


def test_the_class_weighted_svm_minimizes_its_weighted_hinge_objective():
    """Its weights are the optimum of 1/2 ||w||^2 + C sum c_y hinge (checked by a derivative-free
    search from the solution, an independent optimizer), and 'balanced' weighs the positives
    by negatives / positives."""
    from scipy.optimize import minimize

    from rankbench.estimators.binary_svm import ClassWeightedSVM

    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] + 0.5 * rng.normal(size=60) > 0.8).astype(int)  # about a fifth positive
    est = ClassWeightedSVM(C=0.5, tol=1e-8, max_iter=100000).fit(X, y, np.zeros(60))
    assert est.positive_weight_ == pytest.approx((y == 0).sum() / (y == 1).sum())
    cost = np.where(y == 1, est.positive_weight_, 1.0)
    sign = 2.0 * y - 1.0

    def objective(v):  # LIBLINEAR regularizes the bias too (it is a feature of value 1)
        w, b = v[:2], v[2]
        return 0.5 * (w @ w + b * b) + 0.5 * np.sum(cost * np.maximum(0.0, 1 - sign * (X @ w + b)))

    at = np.r_[est.coef_, est.intercept_]
    best = minimize(objective, at, method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12})
    assert objective(at) <= best.fun * (1 + 1e-5)
    s = est.decision_function(X)
    assert np.allclose(s, X @ est.coef_ + est.intercept_)
    with pytest.raises(ValueError, match="positive_weight"):
        ClassWeightedSVM(positive_weight=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="relevant"):
        ClassWeightedSVM().fit(X, np.zeros(60, dtype=int))


@pytest.mark.realdata
def test_a_letor_split_as_one_binary_query(data_root):
    """ohsumed_one_query is a data set registered by name: every document of a split in one
    query, relevant = label > 0; present exactly when OHSUMED is."""
    from rankbench.data import load_fold
    from rankbench.data.registry import dataset_names, load_split, loader_available

    assert {"ohsumed_one_query", "mq2008_one_query"} <= set(dataset_names())
    whole = load_fold("ohsumed", 1, "test", variant="QueryLevelNorm", root=data_root)
    one = load_split("ohsumed_one_query", 1, "test", variant="QueryLevelNorm", root=data_root)
    assert one.n_queries == 1 and one.n_docs == whole.n_docs
    assert sorted(np.unique(one.y)) == [0, 1] and one.y.sum() == (np.asarray(whole.y) > 0).sum()
    assert loader_available("ohsumed_one_query", "QueryLevelNorm", data_root)


def test_a_one_query_set_whose_source_is_absent_is_not_present(tmp_path):
    """Without OHSUMED under the data root, ohsumed_one_query is reported absent (so a sweep with
    missing_data=skip runs nothing on it) naming what it reads."""
    from rankbench.config import _check_dataset
    from rankbench.data.registry import loader_available

    assert not loader_available("ohsumed_one_query", "QueryLevelNorm", tmp_path)
    (problem,) = _check_dataset({"name": "ohsumed_one_query", "variant": "QueryLevelNorm",
                                 "data_params": {}}, str(tmp_path))
    assert "not present" in problem and "'ohsumed'" in problem
