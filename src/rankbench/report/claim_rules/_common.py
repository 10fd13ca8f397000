"""What the claim rules share: an "arm" (the runs one side of a claim reads), gates that turn
absent data or missing runs into their verdicts, paired tests and confidence intervals."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rankbench.report.ledger import ClaimContext, Verdict
from rankbench.report.records import (
    PlannedRun,
    choose_per_fold,
    mean_of,
    per_query,
    skipped_reason,
)

ALPHA = 0.05
ARM_KEYS = frozenset({"exp", "solver", "dataset", "params", "select_on", "folds", "label"})


@dataclass
class Arm:
    """One side of a claim: the planned runs of one solver on one dataset of an experiment,
    and the runs it reads (per fold: the selected run with ``select_on``, else every stored
    run matching ``params``).  ``state``: ok, pending, absent, not planned."""

    label: str
    experiment: str
    dataset: str
    solver: str
    planned: list[PlannedRun] = field(default_factory=list)
    chosen: list[PlannedRun] = field(default_factory=list)
    state: str = "ok"
    why: str = ""
    substitution: str | None = None
    dataset_label: str = ""

    @property
    def run_ids(self) -> list[str]:
        """Run ids of the runs the arm reads."""
        return [r.record["run_id"] for r in self.chosen]

    @property
    def tags(self) -> list[str]:
        """Store tags (experiment names in the store) of the runs read."""
        return [str(r.record.get("experiment")) for r in self.chosen]

    def folds(self) -> list[int]:
        """Folds of the runs read, sorted."""
        return sorted({int(r.spec["fold"]) for r in self.chosen})

    def mean(self, metric: str) -> float | None:
        """Mean over the runs read (folds) of ``metric`` (a record path: test.ndcg@10)."""
        return mean_of(self.chosen, metric) if self.chosen else None


def _matches(params: dict[str, Any], want: dict[str, Any]) -> bool:
    for k, v in want.items():
        got = params.get(k)
        if isinstance(v, float | int) and isinstance(got, float | int) and not isinstance(v, bool):
            if not math.isclose(float(got), float(v), rel_tol=1e-9):
                return False
        elif got != v:
            return False
    return True


def arm(cx: ClaimContext, spec: dict[str, Any], dataset: str | None = None) -> Arm:
    """The arm a claim's args describe: ``{exp, solver, dataset, params, select_on, folds, label}``.

    ``dataset`` overrides the spec's (a claim over several datasets).  A run stored as
    skipped (a peer not built) leaves the arm pending with its reason.
    """
    unknown = sorted(set(spec) - ARM_KEYS)
    if unknown:  # e.g. an unquoted comma in a YAML flow mapping splits a label into a key
        raise ValueError(f"arm {spec} has unknown keys {unknown}; known: {sorted(ARM_KEYS)}")
    exp = spec["exp"]
    ds = dataset or spec["dataset"]
    solver = spec["solver"]
    a = Arm(spec.get("label") or solver, exp, ds, solver)
    plan = cx.plan(exp)
    if plan is None:
        a.state, a.why = "not planned", f"experiment {exp} is not in this report"
        return a
    res = plan.resolutions.get(ds)
    if res is None:
        a.state, a.why = "not planned", f"experiment {exp} plans no dataset {ds!r}"
        return a
    a.dataset_label = res.label
    if not res.present:
        a.state, a.why = "absent", f"{res.label} not present under the data root"
        return a
    a.substitution = res.substitution
    want = dict(spec.get("params") or {})
    folds = spec.get("folds")
    a.planned = [r for r in plan.runs if r.dataset_key == ds and r.spec["solver"] == solver
                 and _matches(r.spec["params"], want) and (folds is None or r.spec["fold"] in folds)]
    if not a.planned:
        a.state, a.why = "not planned", f"experiment {exp} plans no {solver} run matching {want}"
        return a
    missing = [r for r in a.planned if not r.ok]
    if missing:
        skipped = skipped_reason(missing)
        a.state = "pending"
        a.why = (f"{exp}: {len(a.planned) - len(missing)} of {len(a.planned)} {solver} runs on "
                 f"{res.label} stored" + (f" ({skipped})" if skipped else "")
                 + ("; make reproduce-peers" if plan.tier == "peers" else "; make reproduce"))
    ok = [r for r in a.planned if r.ok]
    if spec.get("select_on"):
        a.chosen = choose_per_fold(ok, spec["select_on"]).get((ds, solver), [])
    else:
        a.chosen = sorted(ok, key=lambda r: r.spec["fold"])
    return a


def gate(*arms: Arm) -> Verdict | None:
    """The verdict when an arm cannot be read: not testable (data absent), pending (runs not
    stored or not planned); None when every arm is readable."""
    absent = [a for a in arms if a.state == "absent"]
    if absent:
        return Verdict("not testable here", why="; ".join(sorted({a.why for a in absent})))
    waiting = [a for a in arms if a.state in ("pending", "not planned")]
    if waiting:
        return Verdict("pending", why="; ".join(dict.fromkeys(a.why for a in waiting)),
                       runs=[i for a in arms for i in a.run_ids],
                       tags=[t for a in arms for t in a.tags])
    return None


def short_substitution(a: Arm) -> str:
    """'RCV1 CCAT absent: synthetic RCV1-CCAT-shaped stand-in' (the data layer's parameters,
    in the captions, left out)."""
    import re

    text = re.sub(r" \([\w.-]+/[^()]*\{.*\}\)$", "", str(a.substitution))
    return text if text.startswith(a.dataset_label) else f"{a.dataset_label}: {text}"


def conclude(ok: bool | None, arms: list[Arm], measured: str, test: str = "", why: str = "") -> Verdict:
    """reproduced / not reproduced, or stand-in when an arm ran on a stand-in for absent data;
    ``ok`` (the measured effect is the claimed one) is kept as the verdict's ``held``.
    ``ok`` None: nothing was compared (a number only reported on a stand-in)."""
    subs = sorted({short_substitution(a) for a in arms if a.substitution})
    runs = list(dict.fromkeys(i for a in arms for i in a.run_ids))
    tags = [t for a in arms for t in a.tags]
    if subs:
        if ok is not None:
            measured += f" (on the stand-in the claim {'holds' if ok else 'does not hold'})"
        return Verdict("stand-in", measured=measured, test=test,
                       why="; ".join(subs) + (f"; {why}" if why else ""), runs=runs, tags=tags,
                       held=ok, not_held_on_stand_in=[measured] if ok is False else [])
    if ok is None:
        raise ValueError("conclude: ok None (nothing compared) is only for a stand-in")
    return Verdict("reproduced" if ok else "not reproduced", measured=measured, test=test, why=why,
                   runs=runs, tags=tags, held=ok)


def over_datasets(datasets: list[str], arms_of, judge) -> Verdict:
    """One claim over several datasets: ``arms_of(ds)`` gives a dataset's arms, ``judge(*arms)``
    its verdict when they are readable (``gate`` otherwise); the parts merged (``merge``)."""
    parts = []
    for ds in datasets:
        arms = arms_of(ds)
        parts.append((arms[0].dataset_label or ds, gate(*arms) or judge(*arms)))
    return merge(parts) if len(parts) > 1 else parts[0][1]


def runs_by_param(a: Arm, param: str) -> dict[float, list[PlannedRun]]:
    """The arm's runs grouped by the value of one parameter (a grid of C, say)."""
    by: dict[float, list[PlannedRun]] = {}
    for r in a.chosen:
        by.setdefault(float(r.spec["params"][param]), []).append(r)
    return by


def merge(parts: list[tuple[str, Verdict]]) -> Verdict:
    """One verdict for a claim made over several datasets (or settings): not testable only when
    every part is; pending when a testable part is pending; otherwise reproduced only when
    every tested part is, stand-in when every tested part is a stand-in.  Held when every
    tested part held, not held when one did not; each stand-in part that did not hold keeps
    its measured text, prefixed with the part's name."""
    tested = [(k, v) for k, v in parts if v.status != "not testable here"]
    untested = [v.why if v.why.startswith(k) else f"{k}: {v.why}" for k, v in parts
                if v.status == "not testable here"]
    runs = [i for _, v in parts for i in v.runs]
    tags = [t for _, v in parts for t in v.tags]
    measured = "; ".join(f"{k}: {v.measured}" for k, v in tested if v.measured)
    test = "; ".join(f"{k}: {v.test}" for k, v in tested if v.test)
    why = "; ".join([*(v.why if v.why.startswith(k) else f"{k}: {v.why}" for k, v in tested if v.why),
                     *untested])
    if not tested:
        return Verdict("not testable here", why=why)
    statuses = {v.status for _, v in tested}
    if "pending" in statuses:
        status = "pending"
    elif "not reproduced" in statuses:
        status = "not reproduced"
    elif statuses == {"stand-in"}:
        status = "stand-in"
    elif "stand-in" in statuses and "reproduced" not in statuses:
        status = "stand-in"
    else:
        status = "reproduced"
    helds = [v.held for _, v in tested]
    held = False if False in helds else True if all(h is True for h in helds) else None
    not_held = [t if t.startswith(k) else f"{k}: {t}" for k, v in tested for t in v.not_held_on_stand_in]
    return Verdict(status, measured=measured, test=test, why=why, runs=runs, tags=tags, held=held,
                   not_held_on_stand_in=not_held)


# ---------------------------------------------------------------- numbers and tests
def per_fold_queries(runs: list[PlannedRun], metric: str) -> list[np.ndarray] | None:
    """Per fold, the per-query test values of ``metric`` (None when a run lacks them)."""
    out = []
    for r in runs:
        pq = per_query([r], metric)
        if pq is None:
            return None
        out.append(pq[1][~np.isnan(pq[1])])
    return out


def fold_mean_ci(groups: list[np.ndarray], level: float = 0.95, n_resamples: int = 4000,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean over folds of per-fold query means, queries
    resampled within their fold (the LETOR number: mean over folds)."""
    rng = np.random.default_rng(seed)
    means = np.zeros(n_resamples)
    for g in groups:
        idx = rng.integers(0, g.shape[0], size=(n_resamples, g.shape[0]))
        means += g[idx].mean(axis=1)
    means /= len(groups)
    lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def printed_half_unit(v: float, approximate: bool = False) -> float:
    """Half a unit of the last digit the paper printed (0.454 -> 0.0005; 350,000 with
    ``approximate`` -> 5,000, its two significant digits)."""
    if approximate or (float(v).is_integer() and abs(v) >= 10):
        digits = len(f"{abs(v):.0f}".rstrip("0")) or 1
        return 0.5 * 10 ** (len(f"{abs(v):.0f}") - digits)
    text = repr(float(v))
    if "e" in text:
        return 0.5 * abs(v) * 1e-3
    decimals = len(text.split(".")[1].rstrip("0")) if "." in text else 0
    return 0.5 * 10 ** (-decimals)


def paired(a_runs: list[PlannedRun], b_runs: list[PlannedRun], metric: str):
    """Per-query values of two arms on the same test queries (matched by fold and query id),
    or None when either lacks per-query values or they share no query."""
    a, b = per_query(a_runs, metric), per_query(b_runs, metric)
    if a is None or b is None:
        return None
    common, ia, ib = np.intersect1d(a[0], b[0], return_indices=True)
    if common.shape[0] < 2:
        return None
    va, vb = a[1][ia], b[1][ib]
    keep = ~(np.isnan(va) | np.isnan(vb))
    return va[keep], vb[keep]


def compare(pairs: list[tuple[str, np.ndarray, np.ndarray]]) -> list[dict]:
    """``significance.compare_systems`` over one claim's family (Holm-Bonferroni)."""
    from rankbench.significance import compare_systems

    return compare_systems(pairs) if pairs else []


def test_text(t: dict) -> str:
    """'diff +0.0123 [95% CI -0.01, +0.03], paired randomization p = 0.12 (Holm 0.24), 106 queries'."""
    holm = (f" (Holm {t['p_adjusted']:.3g})" if not math.isclose(t["p_adjusted"], t["p"]) else "")
    return (f"diff {t['diff']:+.4f} [95% CI {t['ci_low']:+.4f}, {t['ci_high']:+.4f}], paired "
            f"randomization p = {t['p']:.3g}{holm}, {t['n_queries']} queries")


def min_detectable_difference(d: np.ndarray, n: int, alpha: float = ALPHA, power: float = 0.8) -> float:
    """Smallest mean difference a two-sided paired test at ``alpha`` detects with ``power`` over
    ``n`` queries whose per-query differences have the spread of ``d`` (normal approximation)."""
    from scipy.stats import norm

    return float((norm.ppf(1 - alpha / 2) + norm.ppf(power)) * np.std(d, ddof=1) / np.sqrt(n))
