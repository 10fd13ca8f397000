"""Figure and table honesty fixes of issue 24's review: ties share a rank on the leaderboard."""

from __future__ import annotations

from rankbench.report.records import PlannedRun


def _run(solver, converged=True):
    rec = {"status": "ok", "train": {"converged": converged}, "metrics": {},
           "params": {"C": 1.0}}
    return PlannedRun(spec={"solver": solver, "fold": 1, "params": {"C": 1.0}, "dataset": "mq2008"},
                      resolution=None, dataset_key="mq2008", record=rec)


def test_equal_scores_share_a_rank_and_the_next_rank_skips():
    from rankbench.report.renderers.leaderboard import rank_rows

    solvers = ["lambdamart_ndcg", "lgbm_lambdarank", "spd_pegasos", "xgb_ndcg"]
    chosen = {("mq2008", s): [_run(s)] for s in solvers}
    rows = [{"solver": "xgb_ndcg", "test ndcg@10": 0.40}, {"solver": "lambdamart_ndcg", "test ndcg@10": 0.45},
            {"solver": "spd_pegasos", "test ndcg@10": 0.47}, {"solver": "lgbm_lambdarank", "test ndcg@10": 0.45}]
    rank_rows(rows, chosen, "mq2008", {s: 1 for s in solvers})
    ranks = {r["solver"]: r["rank"] for r in rows}
    assert ranks["spd_pegasos"] == 1
    assert ranks["lambdamart_ndcg"] == ranks["lgbm_lambdarank"] == 2
    assert ranks["xgb_ndcg"] == 4


def test_a_table_on_stand_in_data_names_it_in_its_title(tmp_path):
    from types import SimpleNamespace

    from rankbench.config import DataUse
    from rankbench.report.output import stand_in_title

    real = DataUse("ohsumed", "OHSUMED", True, "ohsumed")
    synth = DataUse("rcv1_e311", "RCV1 E311", True, "synthetic", "rcv1_like", substitution="absent")
    absent = DataUse("mslr", "MSLR-WEB10K", False, "mslr")

    def ctx(*uses):
        plan = SimpleNamespace(resolutions={u.key: u for u in uses})
        art = SimpleNamespace(title="Sculley 2009, Table 1", experiments=["x"])
        return SimpleNamespace(artefact=art, plans={"x": plan})

    assert stand_in_title(ctx(real)) == "Sculley 2009, Table 1"
    assert stand_in_title(ctx(real, absent)) == "Sculley 2009, Table 1"  # absent: said in the caption
    assert stand_in_title(ctx(real, synth)) == (
        "Sculley 2009, Table 1 [stand-in data: synthetic stand-in for RCV1 E311]")
