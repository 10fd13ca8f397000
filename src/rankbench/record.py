"""A run's record: its skeleton, its ``train`` block from a ``FitReport``, and what it keeps of
the fitted model's scores (metrics of each evaluated split, the test split's per-query values
and scores, the scored history).  The record's schema is docs/interfaces.md's."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from rankbench.estimators.fit_report import FitReport
from rankbench.spec import RunSpec
from rankbench.store import encode_scores, to_jsonable
from rankbench.sysinfo import (
    PeakMemory,
    git_commit,
    library_versions,
    machine_info,
    machine_load,
    now,
)

# Per-query test values kept in every record (paired significance tests after the fact;
# P@k micro and macro for every k: Welleck's Fig. 2 claim is tested per k).
PER_QUERY_METRICS = ("ndcg@10", "map", "auc", "mauc", *(f"p@{k}" for k in range(1, 11)),
                     *(f"p@{k}_macro" for k in range(1, 11)))
# Test scores of splits larger than this many documents stay out of the record (the
# committed store must stay small; such records say so in ``scores.test.omitted``).
MAX_STORED_SCORES = 100_000


def evaluate_split(data, scores: np.ndarray, convention: str = "letor") -> dict[str, float]:
    """Every metric name (``metrics.names.METRIC_KEYS``: evaluate's defaults, R-precision, pooled
    MAUC) plus ``auc_class<c>`` (class c against the rest, Welleck Table 3: the mean over
    queries) and ``auc_class<c>_pooled`` (the same over the pooled set, MAUC's pooled reading),
    the position metrics in ``convention``."""
    from rankbench.metrics import METRIC_KEYS, class_auc, evaluate

    out = {k: float(v) for k, v in evaluate(data.y, scores, data.qid, METRIC_KEYS, convention,
                                            docids=_docids(data, convention)).items()}
    if np.unique(data.y).shape[0] > 2:  # graded labels: binary data has only auc itself
        out.update({f"auc_class{c}": float(v) for c, v in class_auc(data.y, scores, data.qid).items()})
        out.update({f"auc_class{c}_pooled": float(v) for c, v in class_auc(data.y, scores).items()})
    return out


def _docids(data, convention: str):
    """Document ids where the convention orders equal scores by them (trec_eval's rule)."""
    return data.doc_ids() if convention == "trec" else None


def per_query_test(data, scores: np.ndarray, convention: str = "letor") -> dict[str, list]:
    """A record's ``per_query.test``: ``qid`` and each of ``PER_QUERY_METRICS`` per query."""
    from rankbench.metrics import evaluate_per_query

    table = evaluate_per_query(data.y, scores, data.qid, metrics=PER_QUERY_METRICS,
                               convention=convention, docids=_docids(data, convention))
    return {k: np.asarray(v).tolist() for k, v in table.items()}


def data_facts(data) -> dict[str, Any]:
    """What a split is (Chapelle Table 1): queries, documents, features, label counts, pairs; O(n log n)."""
    from rankbench.data.sharded import ShardedDataset
    from rankbench.objective import count_pairs

    if isinstance(data, ShardedDataset):  # its manifest says (the driver never loads it)
        return data.facts()

    labels, counts = np.unique(data.y, return_counts=True)
    return {"n_queries": data.n_queries, "n_docs": data.n_docs, "n_features": data.n_features,
            "labels": {str(int(lab)): int(c) for lab, c in zip(labels, counts, strict=True)},
            "n_pairs": int(count_pairs(data.y, data.query_ptr))}


def train_block(rep: FitReport, wall: float, cpu: float, mem: PeakMemory) -> dict[str, Any]:
    """A record's ``train`` block: timings (numba compilation excluded where the fit reports
    it) and what the fit reports of its iterations and convergence."""
    compile_s = rep.compile_time
    cpu_s = rep.cpu_time if rep.cpu_time is not None else max(0.0, cpu - compile_s)
    block = {
        "wall_s": rep.fit_time if rep.fit_time is not None else wall,
        "cpu_s": cpu_s,
        "compile_s": compile_s,
        "wall_total_s": rep.wall_total or wall,
        "cpu_total_s": cpu_s + compile_s if rep.cpu_time is not None else cpu,
        "n_iter": rep.n_iter,
        "n_cg_iter": rep.n_cg_iter,
        "objective": rep.objective,
        "converged": rep.converged,
        "peak_mem_mb": mem.peak_mb,
        "mem_start_mb": mem.start_mb,
    }
    if isinstance(rep.convergence, dict):  # the achieved accuracy, as the solver states it
        block["convergence"] = to_jsonable(rep.convergence)
    block.update(rep.train_extra)
    return block


def _score_history(rows: list[dict], data) -> list[dict]:
    """History rows with test metrics of each iterate that kept its coefficients (coef dropped)."""
    from rankbench.metrics import ndcg_at_k, pairwise_accuracy

    out = []
    for h in rows:
        h = dict(h)
        coef = h.pop("coef", None)
        if coef is not None and data is not None:
            s = np.asarray(data.X @ np.asarray(coef, dtype=float)).ravel()
            h["test_pairwise_accuracy"] = float(pairwise_accuracy(data.y, s, data.qid))
            h["test_ndcg@10"] = float(ndcg_at_k(data.y, s, data.qid, k=10))
        out.append(h)
    return out


def score_into(record: dict[str, Any], est: Any, rep: FitReport, data: dict[str, Any],
                s: RunSpec) -> None:
    """Each evaluated split's metrics, the test split's per-query values and scores, the history
    (record_history) and the fit's facts, written into ``record``."""
    for split in s.eval_splits:
        d = data[split]
        scores = np.asarray(est.decision_function(d.X), dtype=float)
        if scores.shape != (d.n_docs,):
            raise ValueError(f"{s.solver}.decision_function returned shape {scores.shape} "
                             f"for {d.n_docs} documents")
        if not np.all(np.isfinite(scores)):
            raise ValueError(f"{s.solver} produced non-finite scores on {split}")
        record["metrics"][split] = evaluate_split(d, scores, s.convention)
        if split == "test":
            record["per_query"]["test"] = per_query_test(d, scores, s.convention)
            record["scores"]["test"] = (encode_scores(scores) if d.n_docs <= MAX_STORED_SCORES
                                        else {"n": d.n_docs, "omitted": f"more than "
                                              f"{MAX_STORED_SCORES:,} documents: not stored"})
    if s.record_history:
        # converted here so a value JSON cannot hold fails this run, not the sweep
        record["history"] = to_jsonable(_score_history(rep.history, data.get("test")))
    record["extra"].update(to_jsonable(rep.extra))


def env_block(started: str, pid: int | None, load_start: dict | None = None) -> dict[str, Any]:
    import numba

    # numba_threads: the kernels' thread cap during the run (a timing means little without it;
    # train.threads is what a fit took); load: how busy the machine was at the start and finish
    return {"versions": library_versions(), "git_commit": git_commit(), "machine": machine_info(),
            "pid": pid, "argv": list(sys.argv), "started": started, "finished": now(),
            "numba_threads": int(numba.get_num_threads()),
            "load": {"start": load_start, "finish": machine_load()}}


def empty_record(spec: RunSpec, status: str = "ok", error: str | None = None) -> dict[str, Any]:
    """The record skeleton of a spec (identity fields filled, results empty)."""
    s = RunSpec.from_dict(spec)
    return {"run_id": s.run_id, "status": status, "error": error, "experiment": s.experiment,
            "dataset": s.dataset, "variant": s.variant, "synthetic": None, "fold": s.fold,
            "solver": s.solver, "params": dict(s.params), "seed": s.seed, "spec": s.hashed(),
            "metrics": {}, "per_query": {}, "scores": {}, "train": {}, "history": [], "extra": {}}


def crash_record(spec: RunSpec, reason: str, started: str) -> dict[str, Any]:
    """The failed record of a run whose process died or overran (no record of its own)."""
    record = empty_record(spec, "failed", reason)
    record["env"] = env_block(started, None)
    return to_jsonable(record)
