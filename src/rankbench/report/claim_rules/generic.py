"""Rules every paper's ledger uses: a published number against ours, a paired comparison over
queries, speed ratios, trends over a grid, published-table facts, absent programs."""

from __future__ import annotations

import csv
import math

import numpy as np

from rankbench.report.claim_rules import CLAIM_RULES
from rankbench.report.claim_rules._common import (
    ALPHA,
    arm,
    compare,
    conclude,
    fold_mean_ci,
    gate,
    merge,
    paired,
    per_fold_queries,
    printed_half_unit,
    runs_by_param,
    test_text,
)
from rankbench.report.ledger import ClaimContext, Verdict


@CLAIM_RULES.register()
def metric_value(cx: ClaimContext, value: dict, ours: dict, metric: str = "test.ndcg@10",
                 scale: float = 1.0, tol: float = 0.005) -> Verdict:
    """A published number against ours (mean over the folds read): reproduced when they differ
    by at most ``tol`` plus half a unit of the paper's last printed digit.

    Both numbers come from the same test queries, so the sampling spread over queries is no
    tolerance for them; it is stated beside (queries resampled within folds when the
    records keep per-query values, else a t-interval over folds) as context.  On a stand-in
    for absent data our number is reported, never compared.
    """
    p = cx.paper_value(**value)
    a = arm(cx, ours)
    g = gate(a)
    if g:
        return g
    vals = [v for v in (_scaled(r, metric, scale) for r in a.chosen) if v is not None]
    if not vals:
        return Verdict("pending", why=f"{metric} is not in the stored records of {a.experiment} "
                                      "(recorded by a newer runner: rerun)", runs=a.run_ids, tags=a.tags)
    ours_v = float(np.mean(vals))
    n = len(vals)
    if a.substitution:
        return conclude(None, [a], f"ours {_num(ours_v)} on the stand-in ({n} fold{'s' * (n != 1)}), "
                        f"not compared with the paper's {_num(p['value'])}")
    half = printed_half_unit(p["value"], p.get("approximate", False))
    name = metric.split(".", 1)[1]
    groups = per_fold_queries(a.chosen, name) if metric.startswith("test.") and scale == 1.0 else None
    if groups and len(groups) == n:
        lo, hi = fold_mean_ci(groups)
        spread = f"; sampling spread over queries: 95% CI [{lo:.4f}, {hi:.4f}]"
    elif n >= 2:
        from scipy.stats import t as student

        w = float(student.ppf(0.975, n - 1) * np.std(vals, ddof=1) / math.sqrt(n))
        spread = f"; spread over {n} folds: 95% t-interval [{ours_v - w:.4f}, {ours_v + w:.4f}]"
    else:
        spread = ""
    ok = abs(ours_v - p["value"]) <= tol + half
    measured = (f"ours {_num(ours_v)} ({n} fold{'s' * (n != 1)}) against the paper's "
                f"{_num(p['value'])}{' (approx.)' if p.get('approximate') else ''}, "
                f"difference {ours_v - p['value']:+.4g}")
    return conclude(ok, [a], measured, f"criterion |difference| <= {tol:g} + {half:g} (the paper's "
                    f"rounding){spread}")


def _scaled(run, metric: str, scale: float) -> float | None:
    from rankbench.report.records import value as rec_value

    v = rec_value(run.record, metric)
    return None if v is None else v * scale


def _num(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


EXPECT = ("higher", "lower", "indistinguishable", "similar", "equivalent", "not_lower")


@CLAIM_RULES.register()
def paired_comparison(cx: ClaimContext, a: dict, b: dict, metric: str = "ndcg@10",
                      expect: str = "higher", margin: float | None = None,
                      datasets: list[str] | None = None, alpha: float = ALPHA) -> Verdict:
    """System a against system b on the same test queries (paired randomization test, Holm
    over the claim's datasets): ``expect`` higher / lower (p < alpha in that direction),
    indistinguishable (p >= alpha), similar (|difference| <= margin and p >= alpha), equivalent
    (the 95% interval of the difference within +-margin), not_lower (not significantly
    lower).  Every dataset present must agree."""
    if expect not in EXPECT:
        raise ValueError(f"expect must be one of {EXPECT}, got {expect!r}")
    if expect in ("similar", "equivalent") and margin is None:
        raise ValueError(f"expect: {expect} needs a margin")
    names = datasets or [a["dataset"]]
    arms = {ds: (arm(cx, a, ds), arm(cx, b, ds)) for ds in names}
    parts: list[tuple[str, Verdict]] = []
    family = []
    for ds, (aa, bb) in arms.items():
        g = gate(aa, bb)
        if g:
            parts.append((aa.dataset_label or ds, g))
            continue
        pv = paired(aa.chosen, bb.chosen, metric)
        if pv is None:
            parts.append((aa.dataset_label, Verdict(
                "pending", why=f"no per-query {metric} shared by the two sides' records",
                runs=aa.run_ids + bb.run_ids, tags=aa.tags + bb.tags)))
            continue
        family.append((ds, *pv))
    tests = {row["comparison"]: row for row in compare(family)}
    for ds, *_ in family:
        aa, bb = arms[ds]
        t = tests[ds]
        sig = t["p_adjusted"] < alpha
        ok = {"higher": sig and t["diff"] > 0, "lower": sig and t["diff"] < 0,
              "indistinguishable": not sig, "not_lower": not (sig and t["diff"] < 0),
              "equivalent": margin is not None and -margin <= t["ci_low"] and t["ci_high"] <= margin,
              "similar": margin is not None and abs(t["diff"]) <= margin and not sig,
              }[expect]
        measured = (f"{aa.label} {t['mean_a']:.4f} vs {bb.label} {t['mean_b']:.4f} ({metric}, "
                    f"{len(aa.folds())} fold{'s' * (len(aa.folds()) != 1)})")
        crit = {"equivalent": f"; equivalence margin +-{margin}",
                "similar": f"; criterion |difference| <= {margin} and p >= {alpha:g}"}.get(expect, "")
        parts.append((aa.dataset_label, conclude(ok, [aa, bb], measured, test_text(t) + crit)))
    if len(parts) == 1:
        return parts[0][1]
    return merge(parts)


@CLAIM_RULES.register()
def time_ratio(cx: ClaimContext, fast: dict, slow: dict, at_least: float,
               metric: str = "train.wall_s", at_most: float | None = None) -> Verdict:
    """Training time of ``slow`` over ``fast`` on the folds both ran (sums over folds):
    reproduced when the ratio is at least ``at_least`` (and at most ``at_most``).  A slow side
    that stopped short of its optimum (not converged) makes the ratio a lower bound."""
    fa, sa = arm(cx, fast), arm(cx, slow)
    g = gate(fa, sa)
    folds = sorted(set(fa.folds()) & set(sa.folds()))
    if g:  # say what the folds stored so far give, labelled as partial
        if folds and g.status == "pending":
            g.measured = "partial: " + _ratio_text(fa, sa, folds, metric)[0]
        return g
    if not folds:
        return Verdict("pending", why="no fold timed by both sides")
    text, ratio, capped = _ratio_text(fa, sa, folds, metric)
    ok = ratio >= at_least and (at_most is None or ratio <= at_most)
    measured = text + f"; the claim: at least {at_least:g}" + (f" and at most {at_most:g}" if at_most else "")
    if capped and not ok:  # a lower bound below the claim decides nothing
        v = conclude(ok, [fa, sa], measured)
        return Verdict("not testable here", measured=measured, runs=v.runs, tags=v.tags,
                       why="the slower side stopped before its optimum (SVM-light's -# cap) and "
                           "its uncapped run is not made here: the ratio is only a lower bound")
    return conclude(ok, [fa, sa], measured, "timings on this shared 2-core machine (rough)")


def _ratio_text(fa, sa, folds: list[int], metric: str) -> tuple[str, float, bool]:
    tf = sum(_t(r, metric) for r in fa.chosen if r.spec["fold"] in folds)
    ts = sum(_t(r, metric) for r in sa.chosen if r.spec["fold"] in folds)
    ratio = ts / tf if tf > 0 else float("nan")
    capped = any((r.record.get("train") or {}).get("converged") is False for r in sa.chosen)
    bound = " (a lower bound: the slower side stopped before its optimum)" if capped else ""
    return (f"{sa.label} {ts:,.3g} s vs {fa.label} {tf:,.3g} s on fold{'s' * (len(folds) > 1)} "
            f"{', '.join(map(str, folds))}: {ratio:,.3g} times{bound}", ratio, capped)


def _t(run, metric: str) -> float:
    from rankbench.report.records import value as rec_value

    return rec_value(run.record, metric) or 0.0


@CLAIM_RULES.register()
def grows_with(cx: ClaimContext, ours: dict, param: str = "C", metric: str = "train.wall_s",
               min_rho: float = 0.8) -> Verdict:
    """A quantity (summed over folds) increasing along a grid of ``param``: reproduced when the
    Spearman correlation over the grid is at least ``min_rho``."""
    from scipy.stats import spearmanr

    a = arm(cx, ours)
    g = gate(a)
    if g:
        return g
    by = {x: sum(_t(r, metric) for r in rs) for x, rs in runs_by_param(a, param).items()}
    xs = sorted(by)
    rho = float(spearmanr(xs, [by[x] for x in xs]).statistic) if len(xs) > 2 else float("nan")
    measured = (f"{a.label}: {metric} summed over folds from {by[xs[0]]:.3g} at {param} = {xs[0]:g} "
                f"to {by[xs[-1]]:.3g} at {param} = {xs[-1]:g}; Spearman rho {rho:.2f} over "
                f"{len(xs)} values")
    return conclude(rho >= min_rho, [a], measured, f"criterion rho >= {min_rho:g}")


@CLAIM_RULES.register()
def best_parameter(cx: ClaimContext, ours: dict, claimed: float, param: str = "C",
                   metric: str = "ndcg@10", alpha: float = ALPHA) -> Verdict:
    """'The best C is X': reproduced when the claimed value has the best mean test metric over
    the grid, or is not significantly worse than the best (paired test over queries)."""
    a = arm(cx, ours)
    g = gate(a)
    if g:
        return g
    by = runs_by_param(a, param)
    means = {x: float(np.mean([_t(r, f"test.{metric}") for r in rs])) for x, rs in by.items()}
    best = max(means, key=means.get)
    near = [x for x in means if math.isclose(x, claimed, rel_tol=1e-9)]
    if not near:
        return Verdict("pending", why=f"{param} = {claimed:g} is not among the runs' grid")
    c = near[0]
    measured = (f"best {param} = {best:g} (mean test {metric} {means[best]:.4f}); at {param} = "
                f"{c:g}: {means[c]:.4f}")
    if c == best:
        return conclude(True, [a], measured)
    pv = paired(by[c], by[best], metric)
    t = compare([("x", *pv)])[0] if pv else None
    ok = t is not None and t["p"] >= alpha
    return conclude(ok, [a], measured, test_text(t) if t else "no per-query values")


# ---------------------------------------------------------------- published tables
LETOR3_BASELINES = ("letor_baselines", "letor3_baselines.csv")
LETOR_RANKSVM = ("letor_baselines", "ranksvm_letor.csv")
BASELINE_GROUPS = ("letor_baselines", "letor3_baseline_groups.csv")


def published_table(cx: ClaimContext, source: tuple[str, str], dataset: str, metric: str,
                    split: str = "test") -> dict[str, dict[str, float]]:
    """{algorithm: {fold or 'avg': value}} from a transcribed LETOR baseline table."""
    from rankbench.report.paper import same_dataset

    out: dict[str, dict[str, float]] = {}
    with cx.experiments_dir.joinpath(*source).open(newline="") as fh:
        for r in csv.DictReader(fh):
            if same_dataset(r["dataset"], dataset) and r["metric"] == metric and r["split"] == split:
                out.setdefault(r["algorithm"], {})[r["fold"]] = float(r["value"])
    return out


def baseline_groups(cx: ClaimContext) -> dict[str, dict[str, str]]:
    """{algorithm: {group, reason}}: which LETOR 3.0 baselines the paper could compare with."""
    with cx.experiments_dir.joinpath(*BASELINE_GROUPS).open(newline="") as fh:
        return {r["algorithm"]: r for r in csv.DictReader(fh)}


@CLAIM_RULES.register()
def published_rank(cx: ClaimContext, algorithm: str, dataset: str, metric: str = "ndcg@10",
                   group: str = "paper", within: int = 3) -> Verdict:
    """'X is one of the worst': ``algorithm`` among the ``within`` lowest of a group of LETOR
    3.0's published baselines (5-fold means), from the transcribed tables alone."""
    table = published_table(cx, LETOR3_BASELINES, dataset, metric)
    groups = baseline_groups(cx)
    members = {k: v["avg"] for k, v in table.items() if groups.get(k, {}).get("group") == group}
    order = sorted(members, key=members.get)
    pos = order.index(algorithm) + 1
    measured = (f"{algorithm} {members[algorithm]:.4f} ranks {pos} of {len(order)} from the bottom "
                f"among LETOR 3.0's {dataset} baselines ({group} group); lowest: "
                + ", ".join(f"{k} {members[k]:.4f}" for k in order[:within]))
    return Verdict("reproduced" if pos <= within else "not reproduced", measured=measured,
                   test=f"criterion: among the {within} lowest (published 5-fold means)",
                   held=pos <= within)


@CLAIM_RULES.register()
def best_against_published(cx: ClaimContext, ours: dict, metric: str = "ndcg@10",
                           group: str = "paper") -> Verdict:
    """Ours (5-fold mean) against every published LETOR 3.0 baseline of a group: reproduced when
    ours is the highest; the test: exact sign-flip over the five folds against the strongest."""
    from rankbench.significance import exact_randomization_p_value

    a = arm(cx, ours)
    g = gate(a)
    if g:
        return g
    table = published_table(cx, LETOR3_BASELINES, a.dataset, metric)
    groups = baseline_groups(cx)
    members = {k: v for k, v in table.items()
               if group == "all" or groups.get(k, {}).get("group") == group}
    mean = a.mean(f"test.{metric}")
    top = max(members, key=lambda k: members[k]["avg"])
    ok = mean > members[top]["avg"]
    per_fold = {r.spec["fold"]: _t(r, f"test.{metric}") for r in a.chosen}
    folds = sorted(set(per_fold) & {int(f) for f in members[top] if f != "avg"})
    p = exact_randomization_p_value([per_fold[f] for f in folds], [members[top][str(f)] for f in folds])
    measured = (f"ours {mean:.4f} against the best {group}-group baseline {top} "
                f"{members[top]['avg']:.4f} ({mean - members[top]['avg']:+.4f}); "
                f"{sum(v['avg'] > mean for v in members.values())} of {len(members)} above ours")
    return conclude(ok, [a], measured, f"exact sign-flip test over {len(folds)} folds against "
                    f"{top}: p = {p:.3g} (published values are per fold only)")


@CLAIM_RULES.register()
def published_value(cx: ClaimContext, value: dict, algorithm: str, dataset: str,
                    metric: str = "ndcg@10", source: str = "ranksvm") -> Verdict:
    """A number the paper attributes to a published table, against that table's transcription."""
    p = cx.paper_value(**value)
    src = LETOR_RANKSVM if source == "ranksvm" else LETOR3_BASELINES
    got = published_table(cx, src, dataset, metric).get(algorithm, {}).get("avg")
    if got is None:
        return Verdict("not testable here", why=f"no {algorithm} {dataset} {metric} in {'/'.join(src)}")
    tol = printed_half_unit(p["value"])
    ok = abs(got - p["value"]) <= tol
    return Verdict("reproduced" if ok else "not reproduced",
                   measured=f"LETOR's published {algorithm} {dataset} {metric}: {got:.4f} "
                            f"({'/'.join(src)}) against the paper's {p['value']:g}",
                   test=f"equal within the paper's rounding (+-{tol:g})", held=ok)


# ---------------------------------------------------------------- what is absent here
@CLAIM_RULES.register()
def needs_program(cx: ClaimContext, program: str, solver: str | None = None) -> Verdict:
    """A claim about a program rankbench does not have: not testable here while no solver of
    that name is registered; pending once one is (an experiment config must then run it).
    Without ``solver`` the claim is about a variant no solver could be named for (a feature
    map, a sampler): the verdict says in words that neither rankbench nor a peer has it."""
    from rankbench.estimators.registry import solver_names

    if solver and solver in solver_names():
        return Verdict("pending", why=f"solver {solver} exists, but no experiment config of this "
                                      "claim runs it yet")
    if solver:
        return Verdict("not testable here",
                       why=f"{program} is not available here (no solver {solver!r} registered, "
                           "not among the peer programs)")
    return Verdict("not testable here",
                   why=f"{program} is not available here: neither rankbench nor any of the peer "
                       "programs implements it")


@CLAIM_RULES.register()
def needs_data(cx: ClaimContext, experiment: str, datasets: list[str]) -> Verdict:
    """A claim about data sets only: not testable while none of them is present (the verdict
    of the claim's own rules takes over once they are)."""
    plan = cx.plan(experiment)
    if plan is None:
        return Verdict("pending", why=f"experiment {experiment} is not in this report")
    present = [plan.resolutions[d].label for d in datasets
               if d in plan.resolutions and plan.resolutions[d].present
               and not plan.resolutions[d].substitution]
    labels = [plan.resolutions[d].label if d in plan.resolutions else d for d in datasets]
    if not present:
        return Verdict("not testable here",
                       why=f"{', '.join(labels)} not present under the data root")
    return Verdict("pending", why=f"{', '.join(present)} present: a rule comparing the runs of "
                                  f"{experiment} is still to be named for this claim")


@CLAIM_RULES.register()
def time_at_most(cx: ClaimContext, ours: dict, seconds: float, metric: str = "train.wall_s",
                 what: str = "") -> Verdict:
    """'Trains in under N seconds': the sum over the folds read of ``metric`` at most ``seconds``."""
    a = arm(cx, ours)
    g = gate(a)
    if g:
        return g
    total = sum(_t(r, metric) for r in a.chosen)
    measured = (f"{a.label}: {total:,.3g} s over {len(a.chosen)} fold{'s' * (len(a.chosen) != 1)}"
                f"{' ' + what if what else ''}; the claim: at most {seconds:,.0f} s")
    return conclude(total <= seconds, [a], measured, "timings on this shared 2-core machine (rough)")
