"""Chapelle & Keerthi 2010's own claim rules: Table 1's statistics, the detectable difference
behind Fig. 2's caption, Fig. 3's growth rates and memory limit, uncapped SVM-light."""

from __future__ import annotations

import numpy as np

from rankbench.report.claim_rules import CLAIM_RULES
from rankbench.report.claim_rules._common import (
    arm,
    conclude,
    gate,
    min_detectable_difference,
    paired,
    printed_half_unit,
)
from rankbench.report.ledger import ClaimContext, Verdict
from rankbench.report.records import value

TABLE1_STATISTICS = ("n_queries", "n_levels", "n_features", "docs_per_query", "relevant_pct")


@CLAIM_RULES.register()
def dataset_statistics_match(cx: ClaimContext, ours: dict, artefact: str = "table1",
                             statistics: list[str] | None = None) -> Verdict:
    """Table 1's statistics of a data set against ours, counted from the data facts the runs
    record (no data read): each equal to the paper's within its printed rounding."""
    from rankbench.report.renderers.chapelle import dataset_statistics

    a = arm(cx, ours)
    g = gate(a)
    if g:
        return g
    stats = dataset_statistics(a.chosen)
    if not stats:
        return Verdict("pending", why="the records hold no data facts (a newer runner records them)")
    parts, bad = [], []
    for key in statistics or TABLE1_STATISTICS:
        p = cx.paper_value(artefact, dataset=a.dataset, metric=key)
        ours_v = stats.get(key)
        tol = printed_half_unit(p["value"], p.get("approximate", False))
        ok = ours_v is not None and abs(ours_v - p["value"]) <= tol
        parts.append(f"{key} {ours_v:,.4g} (paper {p['value']:,.4g})")
        if not ok:
            bad.append(key)
    measured = "; ".join(parts) + (f"; off: {', '.join(bad)}" if bad else "")
    return conclude(not bad, [a], measured, "each within the paper's printed rounding")


@CLAIM_RULES.register()
def detectable_difference(cx: ClaimContext, a: dict, b: dict, claimed: float, n_queries: int,
                          metric: str = "ndcg@10", alpha: float = 0.05, power: float = 0.8) -> Verdict:
    """'A difference of 0.1 is typically not significant': the smallest difference a paired test
    over all ``n_queries`` queries detects (two-sided ``alpha``, ``power``), from the per-query
    differences of the two systems of the claim on every fold; reproduced when that
    detectable difference is at least ``claimed``.  Computed over all queries, never
    extrapolated from one fold: pending until both systems ran on every fold."""
    aa, bb = arm(cx, a), arm(cx, b)
    pv = paired(aa.chosen, bb.chosen, metric) if aa.chosen and bb.chosen else None
    g = gate(aa, bb)
    if g:
        if pv is not None:  # say what the folds stored so far give, labelled as partial
            d = pv[0] - pv[1]
            g.measured = (f"partial: {d.shape[0]} of {n_queries} queries paired so far "
                          f"(folds {', '.join(map(str, sorted(set(aa.folds()) & set(bb.folds()))))}); "
                          "the verdict waits for every fold")
        return g
    if pv is None or pv[0].shape[0] < n_queries:
        n = 0 if pv is None else pv[0].shape[0]
        return Verdict("pending", why=f"{n} of {n_queries} queries paired: per-query values missing")
    d = pv[0] - pv[1]
    mdd = min_detectable_difference(d, n_queries, alpha, power)
    measured = (f"{aa.label} - {bb.label}: mean {d.mean():+.4f} over {d.shape[0]} queries, sd "
                f"{np.std(d, ddof=1):.4f}; a paired test over {n_queries} queries detects "
                f"{mdd:.3f} ({alpha:g} level, {power:.0%} power) against the claim's {claimed:g}")
    return conclude(mdd >= claimed, [aa, bb], measured,
                    "normal approximation: (z_{1-alpha/2} + z_power) sd(d) / sqrt(n)")


def _slope(points: list[tuple[float, float]]) -> float:
    x, y = np.log([p[0] for p in points]), np.log([p[1] for p in points])
    return float(np.polyfit(x, y, 1)[0])


@CLAIM_RULES.register()
def growth_exponent(cx: ClaimContext, ours: dict, low: float | None = None,
                    high: float | None = None, n_min: int = 1, n_max: int | None = None,
                    metric: str = "train.wall_s") -> Verdict:
    """Training time against n on log-log axes: the fitted exponent within [low, high]
    (O(n^2): about 2; O(n log n): a little above 1) over n_min..n_max."""
    a = arm(cx, ours)
    g = gate(a)
    if g:
        return g
    pts = sorted((r.spec["data_params"].get("n"), value(r.record, metric)) for r in a.chosen)
    pts = [(n, t) for n, t in pts if n and t and n >= n_min and (n_max is None or n <= n_max)]
    if len(pts) < 3:
        return Verdict("pending", why=f"{len(pts)} sizes timed (need 3)")
    e = _slope(pts)
    ok = (low is None or e >= low) and (high is None or e <= high)
    measured = (f"{a.label}: time ~ n^{e:.2f} over n = {pts[0][0]:,} .. {pts[-1][0]:,} "
                f"({len(pts)} sizes; {pts[0][1]:.3g} s to {pts[-1][1]:.3g} s)")
    crit = f"criterion exponent in [{low if low is not None else '-inf'}, {high if high is not None else 'inf'}]"
    return conclude(ok, [a], measured, crit)


@CLAIM_RULES.register()
def similar_growth(cx: ClaimContext, a: dict, b: dict, within: float = 0.3,
                   n_max: int | None = None, metric: str = "train.wall_s") -> Verdict:
    """Two methods 'very near in terms of time complexity': their log-log exponents over the
    sizes both ran differ by at most ``within``."""
    aa, bb = arm(cx, a), arm(cx, b)
    g = gate(aa, bb)
    if g:
        return g
    ta = {r.spec["data_params"].get("n"): value(r.record, metric) for r in aa.chosen}
    tb = {r.spec["data_params"].get("n"): value(r.record, metric) for r in bb.chosen}
    ns = sorted(n for n in set(ta) & set(tb) if n and ta[n] and tb[n] and (n_max is None or n <= n_max))
    if len(ns) < 2:
        return Verdict("pending", why=f"{len(ns)} sizes run by both (need 2)",
                       runs=aa.run_ids + bb.run_ids, tags=aa.tags + bb.tags)
    ea, eb = _slope([(n, ta[n]) for n in ns]), _slope([(n, tb[n]) for n in ns])
    measured = (f"{aa.label} ~ n^{ea:.2f}, {bb.label} ~ n^{eb:.2f} over n = {ns[0]:,} .. {ns[-1]:,}; "
                f"time ratio at n = {ns[-1]:,}: {ta[ns[-1]] / tb[ns[-1]]:.3g}")
    return conclude(abs(ea - eb) <= within, [aa, bb], measured,
                    f"criterion |exponent difference| <= {within:g}")


@CLAIM_RULES.register()
def out_of_memory_at(cx: ClaimContext, ours: dict, n: int) -> Verdict:
    """'We could not train X at n (memory)': whether our run at n trained, with its peak memory
    (a statement about the authors' 2009 machine: ours trains it or not on this one)."""
    a = arm(cx, ours)
    g = gate(a)
    if g:
        return g
    at = [r for r in a.chosen if r.spec["data_params"].get("n") == n]
    if not at:
        return Verdict("pending", why=f"no stored {a.solver} run at n = {n:,}")
    mem = value(at[0].record, "train.peak_mem_mb")
    wall = value(at[0].record, "train.wall_s")
    measured = (f"{a.label} trained at n = {n:,} here in {wall:.1f} s, peak memory {mem:,.0f} MB "
                f"(on a {((at[0].record.get('env') or {}).get('machine') or {}).get('memory_gb', '?')} GB machine)")
    return conclude(False, [a], measured, why="the limit was the authors' machine's memory")


@CLAIM_RULES.register()
def uncapped_svmlight(cx: ClaimContext, capped: dict, hours: float, budget_s: float,
                      uncapped: dict | None = None) -> Verdict:
    """'Almost a day as required by SVMLight': uncapped SVM-light's training time.  Measured when
    an uncapped run finished within its budget; otherwise not testable here, with the time per
    SVM-light iteration of the capped runs (what an uncapped run would pay per iteration)."""
    if uncapped:
        u = arm(cx, uncapped)
        if u.state == "ok" and u.chosen:
            t = sum(value(r.record, "train.wall_s") or 0 for r in u.chosen)
            return conclude(t >= 0.5 * hours * 3600, [u], f"uncapped SVM-light: {t:,.0f} s on "
                            f"{len(u.chosen)} fold(s)")
    c = arm(cx, capped)
    runs = c.chosen
    if not runs:
        return gate(c) or Verdict("pending", why="no capped SVM-light run stored")
    per_it = [value(r.record, "train.wall_s") / value(r.record, "train.n_iter") for r in runs
              if value(r.record, "train.n_iter")]
    its = [value(r.record, "train.n_iter") for r in runs]
    ms = f"{1e3 * float(np.mean(per_it)):.0f} ms" if per_it else "n/a"
    return Verdict("not testable here",
                   measured=(f"SVM-light with -# 5000 (capped) on {len(runs)} fold(s): "
                             f"{ms} per iteration, {int(min(its)):,} to {int(max(its)):,} iterations "
                             "before the cap stopped it short of the optimum"),
                   why=f"uncapped SVM-light is not run here: a budget of {budget_s:,.0f} s per fold "
                       f"on this shared 2-core machine, against the paper's {hours:g} h",
                   runs=c.run_ids, tags=c.tags)
