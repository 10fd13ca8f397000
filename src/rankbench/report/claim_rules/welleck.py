"""Welleck 2016's own claim rules: precision@k at every k, pooled MAUC over folds, and the
per-dataset signs of Sect. 5.2.1."""

from __future__ import annotations

from rankbench.report.claim_rules import CLAIM_RULES
from rankbench.report.claim_rules._common import (
    ALPHA,
    arm,
    compare,
    conclude,
    gate,
    merge,
    over_datasets,
    paired,
)
from rankbench.report.ledger import ClaimContext, Verdict
from rankbench.report.records import value


@CLAIM_RULES.register()
def precision_every_k(cx: ClaimContext, a: dict, b: dict, datasets: list[str],
                      ks: list[int] | None = None, alpha: float = ALPHA) -> Verdict:
    """'A had higher micro and macro P@k on all datasets, for every k': a paired randomization
    test per k and averaging (Holm over the 2 x len(ks) tests of a dataset); reproduced only
    when A is significantly higher at every k; the measured text gives the verdict per k."""
    ks = ks or list(range(1, 11))

    def judge(aa, bb):
        family, missing = [], []
        for avg in ("micro", "macro"):
            for k in ks:
                key = f"p@{k}" + ("_macro" if avg == "macro" else "")
                pv = paired(aa.chosen, bb.chosen, key)
                if pv is None:
                    missing.append(key)
                else:
                    family.append((f"{avg} P@{k}", *pv))
        if missing:
            return Verdict("pending", why=f"no per-query {', '.join(missing[:3])}... in the records "
                                          "(the runner keeps per-query P@k from this change on: rerun)",
                           runs=aa.run_ids + bb.run_ids, tags=aa.tags + bb.tags)
        rows = compare(family)
        word = {True: "higher", False: "lower"}
        per = []
        for r in rows:
            sig = r["p_adjusted"] < alpha
            per.append((r["comparison"], word[r["diff"] > 0] if sig else "no significant difference",
                        r["diff"], r["p"]))
        higher = [c for c, v, _, _ in per if v == "higher"]
        lower_pt = [c for c, _, d, _ in per if d < 0]
        measured = (f"{aa.label} significantly higher at {len(higher)} of {len(per)} (micro and "
                    f"macro, k = {ks[0]}..{ks[-1]}); point estimate lower at: "
                    f"{', '.join(lower_pt) or 'none'}; per k: "
                    + ", ".join(f"{c} {d:+.4f} (p {p:.2g}, {v})" for c, v, d, p in per))
        return conclude(len(higher) == len(per), [aa, bb], measured,
                        f"paired randomization test per k over {rows[0]['n_queries']} queries, "
                        f"Holm over the {len(per)} tests")

    return over_datasets(datasets, lambda ds: [arm(cx, a, ds), arm(cx, b, ds)], judge)


@CLAIM_RULES.register()
def pooled_comparison(cx: ClaimContext, a: dict, b: dict, datasets: list[str], margin: float,
                      metric: str = "mauc_pooled", expect: str = "indistinguishable",
                      per_query_metric: str | None = "mauc", alpha: float = ALPHA) -> Verdict:
    """A metric with one value per fold (pooled MAUC: no per-query values): ``expect``
    indistinguishable (the mean difference within +-``margin``) or higher (above ``margin``).
    Five folds cannot make a sign-flip test significant (its smallest p is 2/32), so the
    verdict rests on the stated margin; the exact sign-flip p over folds and the per-query
    reading's paired test are given beside it, labelled."""
    from rankbench.significance import exact_randomization_p_value

    def judge(aa, bb):
        va = {r.spec["fold"]: value(r.record, f"test.{metric}") for r in aa.chosen}
        vb = {r.spec["fold"]: value(r.record, f"test.{metric}") for r in bb.chosen}
        folds = sorted(f for f in set(va) & set(vb) if va[f] is not None and vb[f] is not None)
        xa, xb = [va[f] for f in folds], [vb[f] for f in folds]
        p = exact_randomization_p_value(xa, xb)
        d = sum(xa) / len(xa) - sum(xb) / len(xb)
        ok = abs(d) <= margin if expect == "indistinguishable" else d > margin
        measured = (f"{metric}: {aa.label} {sum(xa) / len(xa):.4f} vs {bb.label} "
                    f"{sum(xb) / len(xb):.4f} ({d:+.4f}, mean over {len(folds)} folds)")
        test = (f"criterion: {'|difference| <=' if expect == 'indistinguishable' else 'difference >'} "
                f"{margin:g}; exact sign-flip over {len(folds)} folds: p = {p:.3g} (smallest "
                f"attainable {2 / 2 ** len(folds):.3g})")
        if per_query_metric:
            pv = paired(aa.chosen, bb.chosen, per_query_metric)
            if pv is not None:
                t = compare([("pq", *pv)])[0]
                test += (f"; the per-query reading ({per_query_metric}, mean over queries): diff "
                         f"{t['diff']:+.4f}, paired randomization p = {t['p']:.3g} over "
                         f"{t['n_queries']} queries")
        return conclude(ok, [aa, bb], measured, test)

    return over_datasets(datasets, lambda ds: [arm(cx, a, ds), arm(cx, b, ds)], judge)


SIGN_WORD = {1.0: "higher", 0.0: "similar", -1.0: "lower"}


@CLAIM_RULES.register()
def signs_per_dataset(cx: ClaimContext, a: dict, b: dict, metric: str, artefact: str = "binary",
                      alpha: float = ALPHA) -> Verdict:
    """Sect. 5.2.1's per-dataset statements (A higher / similar / lower than B), each the
    published sign of paper_values.csv, against a paired test per dataset present."""
    signs = cx.paper.paper_values(artefact, metric=f"test.{metric}_sign")
    parts = []
    for row in signs:
        ds = row["dataset"].lower()
        aa, bb = arm(cx, a, ds), arm(cx, b, ds)
        g = gate(aa, bb)
        if g:
            parts.append((row["dataset"], g))
            continue
        pv = paired(aa.chosen, bb.chosen, metric)
        if pv is None:
            parts.append((row["dataset"], Verdict("pending", why="no per-query values")))
            continue
        t = compare([("x", *pv)])[0]
        got = ("higher" if t["diff"] > 0 else "lower") if t["p"] < alpha else "similar"
        want = SIGN_WORD[row["value"]]
        parts.append((row["dataset"], conclude(got == want, [aa, bb],
                                               f"paper: {want}; ours: {got} ({t['diff']:+.4f})",
                                               f"p = {t['p']:.3g}")))
    return merge(parts)
