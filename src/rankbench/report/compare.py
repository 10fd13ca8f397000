"""Paper against ours: differences, ratios, and how complete an artefact's runs are."""

from __future__ import annotations

from typing import Any

from rankbench.plan import ExperimentPlan
from rankbench.report.records import PlannedRun


def difference(ours: float | None, paper: float | None) -> float | None:
    """ours - paper, or None when either is missing."""
    if ours is None or paper is None:
        return None
    return float(ours) - float(paper)


def ratio(ours: float | None, paper: float | None) -> float | None:
    """ours / paper (for times, measured on different machines), or None."""
    if ours is None or paper is None or paper == 0:
        return None
    return float(ours) / float(paper)


def comparison_row(artefact: str, dataset: str, method: str, metric: str, paper: dict | None,
                   ours: float | None, kind: str = "difference", data: str = "real") -> dict[str, Any]:
    """One paper-vs-ours line for the index (``kind`` difference or ratio; ``data`` real or stand-in)."""
    pv = None if paper is None else float(paper["value"])
    return {
        "artefact": artefact, "dataset": dataset, "data": data, "method": method, "metric": metric,
        "paper": pv, "approximate": bool(paper and paper.get("approximate")),
        "reference": (paper or {}).get("reference"), "ours": ours,
        "difference": difference(ours, pv) if kind == "difference" and data == "real" else None,
        "ratio": ratio(ours, pv) if kind == "ratio" and data == "real" else None,
    }


def data_kind(res) -> str:
    """'real', 'stand-in' or 'absent' for a dataset resolution (comparison rows carry it)."""
    if not res.present:
        return "absent"
    return "stand-in" if res.substitution else "real"


def runs_status(runs: list[PlannedRun]) -> str:
    """ok (every run stored ok), partial (some), pending (none yet)."""
    if not runs:
        return "pending"
    done = sum(r.ok for r in runs)
    if done == len(runs):
        return "ok"
    return "partial" if done else "pending"


def plan_status(plan: ExperimentPlan, datasets: list[str] | None = None) -> str:
    """Status of an experiment (restricted to ``datasets``): data not present / pending / partial /
    stand-in (every run stored, some on a stand-in) / ok."""
    keys = datasets or list(plan.resolutions)
    present = [k for k in keys if k in plan.resolutions and plan.resolutions[k].present]
    if not present:
        return "data not present"
    runs = [r for r in plan.runs if r.dataset_key in present]
    st = runs_status(runs)
    if st == "ok" and (plan.pending_solvers or len(present) < len(keys)):
        return "partial"
    if st == "ok" and any(plan.resolutions[k].substitution for k in present):
        return "stand-in"  # complete, but on data standing in for an absent set
    return st
